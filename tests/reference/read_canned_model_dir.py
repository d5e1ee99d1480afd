"""tf.estimator 2.15 reads canned-estimator model_dirs written by estimator_lite.

Runs ONLY under the reference environment (TensorFlow 2.15 + tensorflow-estimator
2.15); tests/canned/test_tf215_compat.py calls it once for all its cases:

    ~/.cache/estimator_lite/ref-venv-2.15/bin/python \
        tests/reference/read_canned_model_dir.py REQUEST.json

REQUEST.json: {"resume_steps": N, "cases": {case: model_dir}}, the cases keys of
tests/reference/canned_cases.py's CASES. For each case, tf.estimator builds the
case's canned estimator on model_dir (without training first), then
  1. evaluate() on the case's eval input_fn and predict() on its predict
     input_fn, from the checkpoint estimator_lite wrote;
  2. train(steps=N): resumes that checkpoint, saving a new one in model_dir;
     records the new global_step and the variables (names and shapes) of the
     checkpoint it saved, and whether all their values are finite.

Prints one JSON object on stdout: {"tensorflow_version": ..., "cases": {case:
{"evaluate", "predict", "resume": {"global_step", "variables", "finite"}} or
{"error": traceback}}}. A case that raises is recorded and the next one runs.
"""
import json
import os
import sys
import traceback

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import canned_cases as cc  # pylint: disable=g-import-not-at-top,wrong-import-position


def _read(tf, case, model_dir, resume_steps):
  def build():
    return cc.make_estimator(case, tf.estimator, tf.compat.v1.estimator,
                             tf.feature_column, model_dir)
  record = {
      "evaluate": cc.to_json(build().evaluate(cc.eval_input_fn(case))),
      "predict": cc.to_json(list(build().predict(cc.predict_input_fn(case)))),
  }
  build().train(cc.train_input_fn(case), steps=resume_steps)
  reader = tf.train.load_checkpoint(model_dir)
  finite = all(
      bool(np.all(np.isfinite(reader.get_tensor(name))))
      for name, dtype in reader.get_variable_to_dtype_map().items()
      if dtype.is_floating)
  record["resume"] = {
      "global_step": int(reader.get_tensor("global_step")),
      "variables": cc.checkpoint_variables(model_dir),
      "finite": finite,
  }
  return record


def main(argv):
  if len(argv) != 2:
    sys.exit(__doc__)
  with open(argv[1]) as f:
    request = json.load(f)
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if not tf.__version__.startswith("2.15.") or not hasattr(tf, "estimator"):
    sys.exit(f"read_canned_model_dir.py must run under TensorFlow 2.15 with "
             f"tensorflow-estimator (found TensorFlow {tf.__version__}).")
  tf.get_logger().setLevel("ERROR")
  result = {"tensorflow_version": tf.__version__, "cases": {}}
  for case, model_dir in request["cases"].items():
    try:
      result["cases"][case] = _read(tf, case, model_dir,
                                    request["resume_steps"])
    except Exception:  # pylint: disable=broad-except
      result["cases"][case] = {"error": traceback.format_exc()}
  json.dump(result, sys.stdout, sort_keys=True)
  sys.stdout.write("\n")


if __name__ == "__main__":
  main(sys.argv)
