"""tf.estimator 2.15 reads KMeansClustering model_dirs written by estimator_lite.

Runs ONLY under the reference environment (TensorFlow 2.15 + tensorflow-estimator
2.15); tests/canned/test_kmeans.py calls it once for all its cases:

    ~/.cache/estimator_lite/ref-venv-2.15/bin/python \
        tests/reference/read_kmeans_model_dir.py REQUEST.json

REQUEST.json: {"resume_steps": N, "cases": {case: model_dir}}, the case names
of tests/reference/make_kmeans_fixture.py's CASES. For each case,
tf.compat.v1.estimator.experimental.KMeans is built on model_dir (no training
first), then
  1. gives cluster_centers(), score(), predict_cluster_index(), transform()
     and evaluate() from the checkpoint estimator_lite wrote
     (make_kmeans_fixture.outputs);
  2. exports a SavedModel and runs each of its signatures on the points;
  3. train(steps=N): resumes that checkpoint; records the new global step,
     the cluster centers and the variables (names, shapes, dtypes) of the
     checkpoint it saved.

Prints one JSON object on stdout: {"tensorflow_version": ..., "cases": {case:
{..., "served", "resumed": {"global_step", "cluster_centers", "variables"}}
or {"error": traceback}}}. A case that raises is recorded and the next one
runs.
"""
import json
import os
import sys
import traceback

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import make_kmeans_fixture as fixture  # pylint: disable=g-import-not-at-top,wrong-import-position


def _read(tf, np, case, model_dir, resume_steps):
  kmeans_class = tf.compat.v1.estimator.experimental.KMeans
  estimator = fixture.make_estimator(case, kmeans_class, tf.feature_column, np, model_dir)
  record = fixture.outputs(tf, case, estimator)
  export_dir = estimator.export_saved_model(
      os.path.join(model_dir, "export"),
      fixture.serving_input_receiver_fn(tf, tf.estimator.export, case))
  record["served"] = fixture.served(tf, export_dir, case)
  estimator.train(fixture.train_input_fn(tf, case), steps=resume_steps)
  record["resumed"] = {
      "global_step": int(estimator.get_variable_value("global_step")),
      "cluster_centers": fixture.to_json(estimator.cluster_centers()),
      "variables": fixture.checkpoint_variables(tf, model_dir),
  }
  return record


def main(argv):
  if len(argv) != 2:
    sys.exit(__doc__)
  with open(argv[1]) as f:
    request = json.load(f)
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if not tf.__version__.startswith("2.15.") or not hasattr(tf, "estimator"):
    sys.exit(f"read_kmeans_model_dir.py must run under TensorFlow 2.15 with "
             f"tensorflow-estimator (found TensorFlow {tf.__version__}).")
  tf.get_logger().setLevel("ERROR")
  result = {"tensorflow_version": tf.__version__, "cases": {}}
  for case, model_dir in request["cases"].items():
    try:
      result["cases"][case] = _read(tf, np, case, model_dir, request["resume_steps"])
    except Exception:  # pylint: disable=broad-except
      result["cases"][case] = {"error": traceback.format_exc()}
  json.dump(result, sys.stdout, sort_keys=True)
  sys.stdout.write("\n")


if __name__ == "__main__":
  main(sys.argv)
