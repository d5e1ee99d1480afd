"""README's "Porting a program": a tf.estimator 2.15 program, never edited, runs here.

examples/tf_estimator_program.py is written against `tf.estimator`. Each test
runs it as a user would, in its own process: under `python -m
estimator_lite.run`, and with plain `python` after `python -m
estimator_lite.migrate` rewrote a copy; the reference tier also runs it on
tf.estimator 2.15 and checks both give its loss.
"""
import os
import re
import shutil
import subprocess
import sys

import pytest
import ref_env  # tests/reference, on the path through conftest.py
import tensorflow as tf

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PROGRAM = os.path.join(_ROOT, "examples", "tf_estimator_program.py")
# Bounds every process a test starts: the program trains 300 linear steps.
_TIMEOUT_SECS = 300


def _run(argv, env=None):
  """Runs argv from the repository root; returns its stdout, failing on a non-zero exit."""
  completed = subprocess.run(argv, cwd=_ROOT, env=env, capture_output=True, text=True,
                             timeout=_TIMEOUT_SECS, check=False)
  assert completed.returncode == 0, f"{argv}\n{completed.stdout}\n{completed.stderr[-6000:]}"
  return completed.stdout


def _loss_and_export(out):
  """The program's final average_loss and export directory, from its stdout."""
  loss = re.search(r"^average_loss: (\S+) at step 300$", out, re.M)
  export = re.search(r"^Exported SavedModel: (.+)$", out, re.M)
  assert loss and export, out
  return float(loss.group(1)), export.group(1)


def test_the_unedited_program_trains_and_exports_under_estimator_lite_run(tmp_path):
  out = _run([sys.executable, "-m", "estimator_lite.run", _PROGRAM,
              "--model_dir", str(tmp_path / "model")])
  loss, export_dir = _loss_and_export(out)
  # y = 2x + 1 is learned exactly: a program that did not train stays near 5.
  assert loss < 1e-6, out
  assert tf.saved_model.contains_saved_model(export_dir)


def test_the_migrated_copy_runs_with_plain_python(tmp_path):
  copy = tmp_path / "ported.py"
  shutil.copy(_PROGRAM, copy)
  _run([sys.executable, "-m", "estimator_lite.migrate", str(copy)])
  source = copy.read_text()
  # The code now names estimator_lite (the docstring still says what it was written for).
  assert "tf.estimator.LinearRegressor(" not in source
  assert "estimator_lite.LinearRegressor(" in source
  loss, _ = _loss_and_export(_run([sys.executable, str(copy),
                                   "--model_dir", str(tmp_path / "model")]))
  assert loss < 1e-6


def test_the_program_gives_tf_estimator_2_15s_loss(tmp_path, reference_python):
  reference, _ = _loss_and_export(_run(
      [reference_python, _PROGRAM, "--model_dir", str(tmp_path / "ref")],
      env=ref_env.subprocess_env()))
  ours, _ = _loss_and_export(_run(
      [sys.executable, "-m", "estimator_lite.run", _PROGRAM,
       "--model_dir", str(tmp_path / "lite")]))
  assert ours == pytest.approx(reference, rel=1e-2)
