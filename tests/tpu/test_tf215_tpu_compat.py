"""TPUEstimator(use_tpu=False) does what tf.estimator 2.15's did, and their model_dirs move both ways.

The program is tests/reference/tpu_cases.py's (TPUEstimatorSpec with
eval_metrics, host_call, scaffold_fn and export_outputs; Adam; a fixed seed).
tests/data/tpu/ holds what tf.estimator 2.15 did with it and the model_dir it
wrote (tests/reference/make_tpu_fixture.py; its docstring has the command).

* Same program, same results: estimator_lite runs it in a fresh model_dir and
  gets 2.15's variables, metrics, predictions and export predictions (1e-5),
  the same event tags at the same steps (the step rate of
  ExamplesPerSecondHook, the host_call's scalar every step, the evaluation),
  the same files, and the export's 'serve' MetaGraph with 2.15's signatures.
* 2.15 -> estimator_lite: a copy of 2.15's model_dir evaluates, predicts and
  resumes here as it did in 2.15.
* estimator_lite -> 2.15: the reference venv (TensorFlow 2.15 + tf.estimator,
  created when missing, see tests/reference/ref_env.py; the test fails, never
  skips, when it cannot be) evaluates, predicts and resumes estimator_lite's
  model_dir, and gets what it got from its own.
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

TESTS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REFERENCE_DIR = os.path.join(TESTS_DIR, "reference")
FIXTURE_DIR = os.path.join(TESTS_DIR, "data", "tpu")
sys.path.insert(0, REFERENCE_DIR)

import estimator_lite as est  # pylint: disable=g-import-not-at-top,wrong-import-position
import ref_env  # pylint: disable=g-import-not-at-top,wrong-import-position
import tensorflow as tf  # pylint: disable=g-import-not-at-top,wrong-import-position
import tpu_cases  # pylint: disable=g-import-not-at-top,wrong-import-position

TOL = 1e-5
REF_TIMEOUT_S = 300


@pytest.fixture(scope="module")
def expected():
  with open(os.path.join(FIXTURE_DIR, "expected.json")) as f:
    return json.load(f)


def _assert_close(want, got, where):
  """Equal structure and keys; numbers within TOL (relative above 1)."""
  if isinstance(want, dict):
    assert isinstance(got, dict) and sorted(want) == sorted(got), (where, want, got)
    for key in want:
      _assert_close(want[key], got[key], f"{where}.{key}")
  elif isinstance(want, list) and want and isinstance(want[0], (dict, str)):
    assert len(want) == len(got), (where, want, got)
    for index, (w, g) in enumerate(zip(want, got)):
      _assert_close(w, g, f"{where}[{index}]")
  elif isinstance(want, str):
    assert want == got, (where, want, got)
  else:
    want_array, got_array = np.asarray(want, np.float64), np.asarray(got, np.float64)
    assert want_array.shape == got_array.shape, (where, want, got)
    scale = np.maximum(1.0, np.abs(want_array))
    assert np.all(np.abs(want_array - got_array) <= TOL * scale), (where, want, got)


@pytest.fixture(scope="module")
def lite_run(tmp_path_factory):
  model_dir = str(tmp_path_factory.mktemp("lite") / "model_dir")
  record = tpu_cases.run_program(tf, est.tpu, est.export, model_dir)
  return model_dir, record


def test_same_program_gives_tf215_results_events_files_and_export(lite_run, expected):
  model_dir, record = lite_run
  want = expected["run"]
  for key in ("variables", "evaluate", "predict", "export_predictions"):
    _assert_close(want[key], record[key], key)
  # ExamplesPerSecondHook's rate every ceil(4 / 2) = 2 steps (from step 3: the
  # first trigger only starts the clock), the `loss` summary at step 1, the
  # evaluation at the checkpoint's step, the host_call's scalar at every
  # training step and every evaluation batch.
  for key in ("events", "eval_events", "host_call_events"):
    assert record[key] == want[key], (key, want[key], record[key])
  # 2.15 also wrote a MetaGraph for serving on a TPU ('serve,tpu'), which
  # estimator_lite does not build: the CPU MetaGraph is 2.15's.
  assert sorted(want["export_signatures"]) == ["serve", "serve,tpu"]
  assert record["export_signatures"] == {"serve": want["export_signatures"]["serve"]}
  assert [name for name in tpu_cases.listing(model_dir) if not name.startswith("export")] == \
      expected["listing"]


def test_estimator_lite_reads_and_resumes_tf215_model_dir(tmp_path, expected):
  model_dir = str(tmp_path / "from_tf215")
  shutil.copytree(os.path.join(FIXTURE_DIR, "tf215_model_dir"), model_dir)
  record = tpu_cases.read_model_dir(tf, est.tpu, est.export, model_dir)
  for key in ("evaluate", "predict", "resumed_variables", "resumed_evaluate"):
    _assert_close(expected["read"][key], record[key], key)


def test_tf215_reads_and_resumes_estimator_lite_model_dir(lite_run, expected, tmp_path,
                                                          reference_python):
  python = reference_python
  model_dir, _ = lite_run
  copy = str(tmp_path / "from_lite")
  shutil.copytree(model_dir, copy, ignore=shutil.ignore_patterns("export"))
  try:
    proc = subprocess.run(
        [python, os.path.join(REFERENCE_DIR, "tpu_cases.py"), "read", copy],
        capture_output=True, text=True, timeout=REF_TIMEOUT_S,
        env=ref_env.subprocess_env(TF_CPP_MIN_LOG_LEVEL="3"))
  except subprocess.TimeoutExpired as e:
    pytest.fail(f"tpu_cases.py read ran past {REF_TIMEOUT_S} s:\n{e.stderr}", pytrace=False)
  assert proc.returncode == 0, proc.stderr[-5000:]
  out = json.loads(proc.stdout.strip().splitlines()[-1])
  assert out["tensorflow_version"].startswith("2.15."), out["tensorflow_version"]
  for key in ("evaluate", "predict", "resumed_variables", "resumed_evaluate"):
    _assert_close(expected["read"][key], out["record"][key], key)
