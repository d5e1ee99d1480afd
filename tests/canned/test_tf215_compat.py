"""Canned estimators' model_dirs move between tf.estimator 2.15 and estimator_lite.

The cases (DNN, Linear, DNNLinearCombined and Baseline classifiers and
regressors, two v1 variants) are tests/reference/canned_cases.py's, built the
same way on both sides.

* tf.estimator -> estimator_lite: tests/data/canned/tf215/<case>/ are model_dirs
  tf.estimator 2.15 trained 6 steps; tests/data/canned/tf215/expected.json what
  tf.estimator did with them (evaluate, predict, the checkpoint's variables, the
  exported signatures). Both come from tests/reference/make_canned_fixtures.py
  (its docstring has the command). estimator_lite evaluates and predicts from a
  copy without training first, resumes training it, and exports it.
* estimator_lite -> tf.estimator: estimator_lite trains every case into a fresh
  model_dir; tests/reference/read_canned_model_dir.py, run once for all cases
  in the reference venv (TensorFlow 2.15 + tf.estimator, created when missing,
  see tests/reference/ref_env.py; the test fails, never skips, when it cannot
  be), evaluates, predicts and resumes training there.

Numbers agree within 1e-4 (relative above 1); keys, names and shapes exactly.

Beyond reading each other's files, the same program gives the same model: with
RunConfig(tf_random_seed=17) estimator_lite's own 6 training steps end where
tf.estimator 2.15's did (the fixtures' metrics and predictions), as a
tf.estimator user with a fixed seed expects.
"""
import json
import os
import shutil
import subprocess
import sys
import traceback

import numpy as np
import pytest

TESTS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REFERENCE_DIR = os.path.join(TESTS_DIR, "reference")
FIXTURE_DIR = os.path.join(TESTS_DIR, "data", "canned", "tf215")
READ_SCRIPT = os.path.join(REFERENCE_DIR, "read_canned_model_dir.py")
sys.path.insert(0, REFERENCE_DIR)

import canned_cases as cc  # pylint: disable=g-import-not-at-top,wrong-import-position
import estimator_lite as est  # pylint: disable=g-import-not-at-top,wrong-import-position
import ref_env  # pylint: disable=g-import-not-at-top,wrong-import-position
import tensorflow as tf  # pylint: disable=g-import-not-at-top,wrong-import-position

TOL = 1e-4
RESUME_STEPS = 2
REF_TIMEOUT_S = 300
CASES = sorted(cc.CASES)

@pytest.fixture(scope="module")
def expected():
  with open(os.path.join(FIXTURE_DIR, "expected.json")) as f:
    return json.load(f)


def _build(case, model_dir):
  return cc.make_estimator(case, est, est.compat.v1, tf.feature_column,
                           str(model_dir))


def _attempt(failures, aspect, check):
  """Runs `check()` (-> list of differences); a raise is a difference too."""
  try:
    diffs = check()
  except Exception:  # pylint: disable=broad-except
    diffs = [traceback.format_exc(limit=-6)]
  if diffs:
    failures[aspect] = diffs


def _report(failures):
  return "\n".join(f"[{aspect}]\n  " + "\n  ".join(diffs)
                   for aspect, diffs in failures.items())


def _finite_checkpoint(model_dir):
  reader = tf.train.load_checkpoint(str(model_dir))
  return [name for name, dtype in reader.get_variable_to_dtype_map().items()
          if dtype.is_floating and
          not np.all(np.isfinite(reader.get_tensor(name)))]


def test_fixtures_are_tf215_model_dirs(expected):
  assert expected["tensorflow_version"].startswith("2.15.")
  assert sorted(expected["cases"]) == CASES
  for case in CASES:
    model_dir = os.path.join(FIXTURE_DIR, case)
    # Relative paths (tf.estimator's Saver): the directories can move.
    with open(os.path.join(model_dir, "checkpoint")) as f:
      assert f"model_checkpoint_path: \"model.ckpt-{cc.TRAIN_STEPS}\"" in f.read()
    assert cc.checkpoint_variables(model_dir) == expected["cases"][case]["variables"]


@pytest.mark.parametrize("case", CASES)
def test_estimator_lite_reads_and_resumes_tf215_model_dir(case, expected, tmp_path):
  want = expected["cases"][case]
  model_dir = tmp_path / case
  shutil.copytree(os.path.join(FIXTURE_DIR, case), model_dir)
  failures = {}
  estimator = _build(case, model_dir)

  # From tf.estimator's checkpoint, no training first: same metrics, same
  # predictions (keys and values).
  _attempt(failures, "evaluate", lambda: cc.compare(
      want["evaluate"], cc.to_json(estimator.evaluate(cc.eval_input_fn(case))),
      TOL, "evaluate"))
  _attempt(failures, "predict", lambda: cc.compare(
      want["predict"],
      cc.to_json(list(estimator.predict(cc.predict_input_fn(case)))),
      TOL, "predict"))

  def resume():
    estimator.train(cc.train_input_fn(case), steps=RESUME_STEPS)
    diffs = cc.compare(want["variables"], cc.checkpoint_variables(model_dir),
                       0, "variables after resume")
    step = estimator.get_variable_value("global_step")
    if step != cc.TRAIN_STEPS + RESUME_STEPS:
      diffs.append(f"global_step after resume: {step}, expected "
                   f"{cc.TRAIN_STEPS + RESUME_STEPS}")
    not_finite = _finite_checkpoint(model_dir)
    if not_finite:
      diffs.append(f"variables not finite after resume: {not_finite}")
    return diffs
  _attempt(failures, "resume", resume)

  def export():
    export_dir = estimator.export_saved_model(
        str(tmp_path / "export"),
        cc.serving_input_receiver_fn(case, est, tf.feature_column))
    return cc.compare(want["export"], cc.export_signatures(export_dir), 0,
                      "export")
  _attempt(failures, "export", export)

  assert not failures, f"{case}:\n{_report(failures)}"


@pytest.fixture(scope="module")
def reverse_runs(tmp_path_factory, reference_python):
  """estimator_lite trains every case; tf.estimator 2.15 then reads the dirs.

  Returns:
    (lite, ref): per case, estimator_lite's own evaluate/predict on its dir
    (or {"error"}) and what read_canned_model_dir.py printed for it.
  """
  python = reference_python
  root = tmp_path_factory.mktemp("lite_dirs")
  lite = {}
  request = {"resume_steps": RESUME_STEPS, "cases": {}}
  for case in CASES:
    model_dir = root / case
    try:
      estimator = _build(case, model_dir)
      estimator.train(cc.train_input_fn(case), steps=cc.TRAIN_STEPS)
      lite[case] = {
          "variables": cc.checkpoint_variables(model_dir),
          "evaluate": cc.to_json(estimator.evaluate(cc.eval_input_fn(case))),
          "predict": cc.to_json(
              list(estimator.predict(cc.predict_input_fn(case)))),
      }
      request["cases"][case] = str(model_dir)
    except Exception:  # pylint: disable=broad-except
      lite[case] = {"error": traceback.format_exc(limit=-6)}
  request_path = root / "request.json"
  request_path.write_text(json.dumps(request))
  try:
    proc = subprocess.run([python, READ_SCRIPT, str(request_path)],
                          capture_output=True, text=True, timeout=REF_TIMEOUT_S,
                          env=ref_env.subprocess_env(TF_CPP_MIN_LOG_LEVEL="3"))
  except subprocess.TimeoutExpired as e:
    pytest.fail(f"read_canned_model_dir.py ran past {REF_TIMEOUT_S} s:\n"
                f"{e.stderr}", pytrace=False)
  if proc.returncode != 0:
    pytest.fail(f"read_canned_model_dir.py failed (exit {proc.returncode}):\n"
                f"{proc.stderr[-5000:]}", pytrace=False)
  ref = json.loads(proc.stdout)
  assert ref["tensorflow_version"].startswith("2.15.")
  return lite, ref["cases"]


@pytest.mark.parametrize("case", CASES)
def test_tf215_reads_and_resumes_estimator_lite_model_dir(case, expected,
                                                          reverse_runs):
  lite, ref = reverse_runs
  assert "error" not in lite[case], (
      f"estimator_lite could not train/evaluate/predict {case}:\n"
      f"{lite[case]['error']}")
  assert "error" not in ref[case], (
      f"tf.estimator 2.15 could not read estimator_lite's {case} model_dir:\n"
      f"{ref[case]['error']}")
  failures = {}
  want_variables = expected["cases"][case]["variables"]
  _attempt(failures, "variables", lambda: cc.compare(
      want_variables, lite[case]["variables"], 0, "estimator_lite wrote"))
  _attempt(failures, "evaluate", lambda: cc.compare(
      ref[case]["evaluate"], lite[case]["evaluate"], TOL, "evaluate"))
  _attempt(failures, "predict", lambda: cc.compare(
      ref[case]["predict"], lite[case]["predict"], TOL, "predict"))
  resumed = ref[case]["resume"]
  diffs = cc.compare(lite[case]["variables"], resumed["variables"], 0,
                     "tf.estimator resumed")
  if resumed["global_step"] != cc.TRAIN_STEPS + RESUME_STEPS:
    diffs.append(f"global_step after tf.estimator resumed: "
                 f"{resumed['global_step']}")
  if not resumed["finite"]:
    diffs.append("variables not finite after tf.estimator resumed")
  if diffs:
    failures["resume"] = diffs
  assert not failures, f"{case}:\n{_report(failures)}"


@pytest.mark.parametrize("case", CASES)
def test_estimator_lite_trains_as_tf215_did(case, expected, reverse_runs):
  lite, _ = reverse_runs
  assert "error" not in lite[case], lite[case].get("error")
  want = expected["cases"][case]
  diffs = (cc.compare(want["evaluate"], lite[case]["evaluate"], TOL, "evaluate") +
           cc.compare(want["predict"], lite[case]["predict"], TOL, "predict"))
  assert not diffs, (f"{case}: estimator_lite trained from the same seed, "
                     f"tf.estimator 2.15's fixture differs:\n  " + "\n  ".join(diffs))
