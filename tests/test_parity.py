"""estimator_lite computes what tf.estimator 2.15 computed: runs tests/reference/parity.py.

The parity script needs the reference venv (TensorFlow 2.15.1 +
tensorflow-estimator 2.15.0 on Python 3.11). This test creates it when it is
missing (about 300 MB from PyPI, about a minute with a fast connection) and
fails, with pip's output, when it cannot: it never skips.
"""
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REFERENCE_DIR = os.path.join(HERE, "reference")
PARITY_SCRIPT = os.path.join(REFERENCE_DIR, "parity.py")
sys.path.insert(0, REFERENCE_DIR)

import parity  # pylint: disable=g-import-not-at-top,wrong-import-position

PARITY_TIMEOUT_S = 900

# Rows that must be in the table: guards against a comparison that silently
# compares nothing.
REQUIRED_ROWS = (
    "linear/losses", "linear/eval/loss", "linear/eval/mse", "linear/variables/w",
    "linear/variables/b", "linear/variables/global_step",
    "linear/predictions/predictions", "linear/checkpoint/all_model_checkpoint_paths",
    "linear/files", "linear/resume_of_ref_dir/losses",
    "linear/resume_of_lite_dir/variables/w",
    "mlp/losses", "mlp/eval/accuracy", "mlp/eval/loss", "mlp/variables/hidden/kernel",
    "mlp/variables/logits/kernel/Adam", "mlp/variables/beta1_power",
    "mlp/predictions/probabilities", "mlp/predictions/class_ids",
    "mlp/resume_of_ref_dir/variables/hidden/kernel",
    "mlp/resume_of_lite_dir/losses",
    "mlp/more/evaluate(steps=2,name=partial)/accuracy",
    "mlp/more/evaluate(checkpoint_path=ckpt-10)/loss",
    "mlp/more/predict(yield_single_examples=False)[0]/probabilities",
    "mlp/events/eval/accuracy", "linear/events/model_dir/loss",
)


def test_compare_flags_differences_beyond_tolerance():
  ref = {"p": {"losses": [1.0, 2.0], "eval": {"loss": 0.5, "global_step": 10},
               "variable_names": ["b", "w"], "w": [[1.0], [2.0]]}}
  close = {"p": {"losses": [1.00005, 2.0], "eval": {"loss": 0.5, "global_step": 10},
                 "variable_names": ["b", "w"], "w": [[1.0], [2.00009]]}}
  rows, ok = parity.compare(ref, close, 1e-4)
  assert ok, rows
  assert {r[0] for r in rows} == {"p/losses", "p/eval/loss", "p/eval/global_step",
                                  "p/variable_names", "p/w"}

  far = json.loads(json.dumps(close))
  far["p"]["w"] = [[1.0], [2.0002]]
  rows, ok = parity.compare(ref, far, 1e-4)
  assert not ok
  assert [r[0] for r in rows if r[4] == "DIFF"] == ["p/w"]

  for mutate, bad_row, status in (
      (lambda d: d["p"]["eval"].pop("loss"), "p/eval/loss", "MISSING"),
      (lambda d: d["p"].__setitem__("variable_names", ["b", "w", "x"]),
       "p/variable_names", "DIFF"),
      (lambda d: d["p"].__setitem__("losses", [1.0]), "p/losses", "DIFF"),
      (lambda d: d["p"]["eval"].__setitem__("global_step", 11),
       "p/eval/global_step", "DIFF"),
  ):
    other = json.loads(json.dumps(ref))
    mutate(other)
    rows, ok = parity.compare(ref, other, 1e-4)
    assert not ok
    assert [(r[0], r[4]) for r in rows if r[4] != "ok" and r[4] != "same"] == [
        (bad_row, status)]


def test_compare_applies_the_tolerance_inside_lists_of_dicts():
  ref = {"predict": [{"p": [0.5, 1.0]}, {"p": [2.0, 3.0]}]}
  rows, ok = parity.compare(ref, {"predict": [{"p": [0.50005, 1.0]},
                                              {"p": [2.0, 3.0]}]}, 1e-4)
  assert ok, rows
  assert [r[0] for r in rows] == ["predict/length", "predict[0]/p", "predict[1]/p"]
  rows, ok = parity.compare(ref, {"predict": [{"p": [0.5, 1.0]}]}, 1e-4)
  assert not ok


def test_estimator_lite_matches_tf_estimator_215(tmp_path, reference_python):

  workdir = tmp_path / "work"
  report = tmp_path / "parity.json"
  try:
    proc = subprocess.run(
        [sys.executable, PARITY_SCRIPT, "--workdir", str(workdir),
         "--json", str(report)],
        capture_output=True, text=True, timeout=PARITY_TIMEOUT_S)
  except subprocess.TimeoutExpired as e:
    pytest.fail(f"parity.py ran past {PARITY_TIMEOUT_S} s:\n{e.stdout}\n{e.stderr}")
  output = proc.stdout + proc.stderr
  print(output)
  assert proc.returncode == 0, f"parity.py failed (exit {proc.returncode}):\n{output}"

  with open(report) as f:
    result = json.load(f)
  assert result["ok"]
  assert result["ref"]["tensorflow"].startswith("2.15.")
  assert result["ref"]["module"] == "tf.estimator"
  assert result["lite"]["module"] == "estimator_lite"
  names = {row[0] for row in result["rows"]}
  missing = [name for name in REQUIRED_ROWS if name not in names]
  assert not missing, f"parity table lacks {missing}"
  assert all(row[4] in ("ok", "same") for row in result["rows"])
  # Every step recorded on both sides: 15 + 10 steps, 10 more on resume.
  for program in ("linear", "mlp"):
    for side in ("ref", "lite"):
      entry = result[side]["programs"][program]
      assert len(entry["losses"]) == 25
      assert len(entry["resume"]["ref"]["losses"]) == 10
      assert len(entry["resume"]["lite"]["losses"]) == 10
