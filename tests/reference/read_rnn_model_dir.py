"""tf.estimator 2.15 reads RNN model_dirs written by estimator_lite.

Runs ONLY under the reference environment (TensorFlow 2.15 + tensorflow-estimator
2.15); tests/canned/test_rnn.py calls it once for all its cases:

    ~/.cache/estimator_lite/ref-venv-2.15/bin/python \
        tests/reference/read_rnn_model_dir.py REQUEST.json

REQUEST.json: {"resume_steps": N, "cases": {case: model_dir}}, the case names
of tests/reference/make_rnn_fixture.py's CASES. For each case, tf.estimator
builds the case's RNN estimator on model_dir (without training first), then
  1. evaluate() and predict() on the case's rows, from the checkpoint
     estimator_lite wrote;
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

import make_rnn_fixture as fixture  # pylint: disable=g-import-not-at-top,wrong-import-position


def _read(tf, rnn, heads_by_name, case, model_dir, resume_steps):
  def build():
    return fixture.make_estimator(case, rnn, heads_by_name, tf.feature_column, model_dir)

  record = {
      "evaluate": fixture.to_json(build().evaluate(fixture.input_fn(tf, case))),
      "predict": fixture.to_json(list(build().predict(
          fixture.input_fn(tf, case, with_labels=False)))),
  }
  build().train(fixture.input_fn(tf, case, repeat=True), steps=resume_steps)
  reader = tf.train.load_checkpoint(model_dir)
  variables = {name: shape for name, shape in tf.train.list_variables(model_dir)}
  record["resume"] = {
      "global_step": int(reader.get_tensor("global_step")),
      "variables": variables,
      "finite": all(np.all(np.isfinite(reader.get_tensor(name)))
                    for name in variables if name != "global_step"),
  }
  return record


def main(argv):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if not tf.__version__.startswith("2.15.") or not hasattr(tf, "estimator"):
    sys.exit(f"run me with TensorFlow 2.15 + tensorflow-estimator (found {tf.__version__})")
  tf.get_logger().setLevel("ERROR")
  with open(argv[1]) as f:
    request = json.load(f)
  rnn, heads_by_name = fixture.tf_estimator_modules()
  result = {"tensorflow_version": tf.__version__, "cases": {}}
  for case, model_dir in request["cases"].items():
    try:
      result["cases"][case] = _read(tf, rnn, heads_by_name, case, model_dir,
                                    request["resume_steps"])
    except Exception:  # pylint: disable=broad-except
      result["cases"][case] = {"error": traceback.format_exc()}
  print(json.dumps(result))


if __name__ == "__main__":
  main(sys.argv)
