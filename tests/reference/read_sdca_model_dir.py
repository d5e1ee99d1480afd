"""tf.estimator 2.15 reads model_dirs that estimator_lite's LinearSDCA-trained estimators wrote.

Runs ONLY under the reference environment (TensorFlow 2.15 + tensorflow-estimator
2.15); tests/canned/test_linear_sdca.py calls it once for all its cases:

    ~/.cache/estimator_lite/ref-venv-2.15/bin/python \
        tests/reference/read_sdca_model_dir.py REQUEST.json

REQUEST.json: {"resume_steps": N, "cases": {case: model_dir}}, the cases of
tests/reference/make_sdca_fixture.py. For each case, tf.estimator builds the
case's estimator (with its LinearSDCA) on model_dir, then
  1. evaluate() and predict() from the checkpoint estimator_lite wrote;
  2. train(steps=N): restores that checkpoint (weights, unshrunk weights and
     the example-state table) and saves a new one; records its global_step,
     its variables (name -> [shape, dtype]) and whether every float in it is
     finite.

Prints one JSON object on stdout: {"tensorflow_version": ..., "cases": {case:
{"evaluate", "predict", "resume": {"global_step", "variables", "finite"}}
or {"error": traceback}}}. A case that raises is recorded and the
next one runs.
"""
import json
import os
import sys
import traceback

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import make_sdca_fixture as fx  # pylint: disable=g-import-not-at-top,wrong-import-position


def _read(tf, case, model_dir, resume_steps):
  estimator = fx.build_estimator(tf, tf.estimator, tf.compat.v1.estimator, case, model_dir)
  record = fx.describe_model_dir(tf, estimator, model_dir, case)
  estimator.train(input_fn=fx.input_fn(tf, case), steps=resume_steps)
  reader = tf.train.load_checkpoint(model_dir)
  finite = all(bool(np.all(np.isfinite(reader.get_tensor(name))))
               for name, dtype in reader.get_variable_to_dtype_map().items()
               if dtype.is_floating)
  record["resume"] = {
      "global_step": int(reader.get_tensor("global_step")),
      "variables": fx.checkpoint_variables(tf, model_dir),
      "finite": finite,
  }
  return {"evaluate": record["metrics"], "predict": record["predictions"],
          "resume": record["resume"]}


def main(argv):
  if len(argv) != 2:
    sys.exit(__doc__)
  with open(argv[1]) as f:
    request = json.load(f)
  import tensorflow as tf  # pylint: disable=import-outside-toplevel
  tf.get_logger().setLevel("ERROR")
  results = {}
  for case, model_dir in request["cases"].items():
    try:
      results[case] = _read(tf, case, model_dir, request["resume_steps"])
    except Exception:  # pylint: disable=broad-except
      results[case] = {"error": traceback.format_exc(limit=-6)}
  json.dump({"tensorflow_version": tf.__version__, "cases": results}, sys.stdout)


if __name__ == "__main__":
  main(sys.argv)
