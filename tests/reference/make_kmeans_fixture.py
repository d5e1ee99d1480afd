"""Writes the tf.estimator 2.15 KMeansClustering model_dirs that tests/canned/test_kmeans.py loads.

Runs ONLY in the reference environment (TensorFlow 2.15 + tensorflow-estimator
2.15). From the repository root:

    rm -rf tests/data/canned/kmeans215
    ~/.cache/estimator_lite/ref-venv-2.15/bin/python tests/reference/make_kmeans_fixture.py

For each case of `CASES`, tf.compat.v1.estimator.experimental.KMeans trains
TRAIN_STEPS steps into tests/data/canned/kmeans215/<case>/, which keeps only
`checkpoint` and the last checkpoint's index and data files. Then, on a copy,
it records in tests/data/canned/kmeans215/expected.json: the checkpoint's
variables (names, shapes, dtypes), cluster_centers(), score(),
predict_cluster_index(), transform(), evaluate(), the export's signatures
and what each serves for the points, and the cluster centers after resuming
training RESUME_STEPS more steps (k-means after initialisation is
deterministic, so estimator_lite must reach the same centers).

The test and tests/reference/read_kmeans_model_dir.py import this module for
the cases, the data and the input_fns (nothing here imports TensorFlow at
import time: the caller passes its modules).
"""
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# pylint: disable=g-import-not-at-top,wrong-import-position,unused-import
from fixture_io import checkpoint_variables
from fixture_io import to_json
from fixture_io import trim_model_dir
# pylint: enable=g-import-not-at-top,wrong-import-position,unused-import

TRAIN_STEPS = 3
RESUME_STEPS = 2

# 12 points in 3 groups (positive coordinates, so cosine distance separates
# them as well), and an id feature the feature-column case ignores.
POINTS = [
    [1.0, 9.0], [1.5, 8.0], [0.5, 8.5], [1.2, 9.4],
    [8.0, 1.0], [9.0, 1.5], [8.5, 0.4], [9.5, 1.1],
    [6.0, 6.0], [6.5, 5.5], [5.5, 6.4], [6.2, 6.8],
]
IDS = list(range(len(POINTS)))
BATCH_SIZE = 4
PREDICT_BATCH_SIZE = 5

# name -> (input kind, constructor arguments). Input kinds: "tensor" (the
# points as one (n, 2) tensor, the whole set every step), "dict" (features
# "x" and "y", each (n, 1), in batches of BATCH_SIZE; without feature
# columns k-means concatenates them in key order), "columns" (the same plus
# "id", read through feature columns x and y). A constructor value "INIT"
# stands for INITIAL_CENTERS; names of the class's constants are resolved on
# the class.
INITIAL_CENTERS = [[0.0, 10.0], [10.0, 0.0], [5.0, 5.0]]
CASES = {
    "full_batch_kmeans_plus_plus": (
        "tensor",
        {"num_clusters": 3, "initial_clusters": "KMEANS_PLUS_PLUS_INIT",
         "distance_metric": "SQUARED_EUCLIDEAN_DISTANCE", "use_mini_batch": False,
         "seed": 7}),
    "mini_batch_cosine": (
        "dict",
        {"num_clusters": 3, "initial_clusters": "RANDOM_INIT",
         "distance_metric": "COSINE_DISTANCE", "use_mini_batch": True,
         "mini_batch_steps_per_iteration": 2, "seed": 3}),
    "mini_batch_columns_given_centers": (
        "columns",
        {"num_clusters": 3, "initial_clusters": "INIT",
         "distance_metric": "SQUARED_EUCLIDEAN_DISTANCE", "use_mini_batch": True,
         "relative_tolerance": 1e-6}),
}


def make_estimator(name, kmeans_class, fc, np, model_dir):
  """The estimator of case `name`: `kmeans_class` is 2.15's or estimator_lite's KMeansClustering."""
  kind, kwargs = CASES[name]
  resolved = {}
  for key, value in kwargs.items():
    if value == "INIT":
      value = np.array(INITIAL_CENTERS, dtype=np.float32)
    elif isinstance(value, str):
      value = getattr(kmeans_class, value)
    resolved[key] = value
  if kind == "columns":
    resolved["feature_columns"] = [fc.numeric_column("x"), fc.numeric_column("y")]
  return kmeans_class(model_dir=model_dir, **resolved)


def _features(tf, kind):
  points = tf.constant(POINTS, dtype=tf.float32)
  if kind == "tensor":
    return points
  features = {"x": points[:, :1], "y": points[:, 1:]}
  if kind == "columns":
    features["id"] = tf.constant(IDS, dtype=tf.int64)
  return features


def train_input_fn(tf, name):
  """The case's training input: every point each step, or repeated batches."""
  kind = CASES[name][0]

  def fn():
    if kind == "tensor":
      return _features(tf, kind), None
    return tf.data.Dataset.from_tensor_slices(_features(tf, kind)).repeat().batch(BATCH_SIZE)

  return fn


def score_input_fn(tf, name):
  """All the points in one batch (score() reads only the first)."""
  kind = CASES[name][0]
  return lambda: (_features(tf, kind), None)


def predict_input_fn(tf, name):
  """The points once, in batches of PREDICT_BATCH_SIZE."""
  kind = CASES[name][0]
  return lambda: tf.data.Dataset.from_tensor_slices(_features(tf, kind)).batch(
      PREDICT_BATCH_SIZE)


def serving_input_receiver_fn(tf, export_module, name):
  """Raw float points in: one (n, 2) tensor, or features x and y (n, 1)."""
  kind = CASES[name][0]

  def fn():
    if kind == "tensor":
      points = tf.compat.v1.placeholder(tf.float32, [None, 2], name="points")
      return export_module.TensorServingInputReceiver(points, {"points": points})
    x = tf.compat.v1.placeholder(tf.float32, [None, 1], name="x")
    y = tf.compat.v1.placeholder(tf.float32, [None, 1], name="y")
    return export_module.ServingInputReceiver({"x": x, "y": y}, {"x": x, "y": y})

  return fn


def serving_inputs(tf, name):
  """The keyword arguments of the export's signatures for all the points."""
  if CASES[name][0] == "tensor":
    return {"points": tf.constant(POINTS, dtype=tf.float32)}
  points = tf.constant(POINTS, dtype=tf.float32)
  return {"x": points[:, :1], "y": points[:, 1:]}


def outputs(tf, name, estimator):
  """What a trained estimator gives for the case: centers, score, predictions, metrics."""
  return {
      "cluster_centers": to_json(estimator.cluster_centers()),
      "score": to_json(estimator.score(score_input_fn(tf, name))),
      "predict_cluster_index": to_json(
          list(estimator.predict_cluster_index(predict_input_fn(tf, name)))),
      "transform": to_json(list(estimator.transform(predict_input_fn(tf, name)))),
      "evaluate": to_json(estimator.evaluate(score_input_fn(tf, name), steps=1)),
  }


def served(tf, export_dir, name):
  """Each signature of the SavedModel in export_dir, run on all the points."""
  loaded = tf.saved_model.load(export_dir)
  return {key: to_json({k: v.numpy() for k, v in fn(**serving_inputs(tf, name)).items()})
          for key, fn in loaded.signatures.items()}


def _record(tf, np, kmeans_class, name, model_dir):
  estimator = make_estimator(name, kmeans_class, tf.feature_column, np, model_dir)
  record = outputs(tf, name, estimator)
  export_dir = estimator.export_saved_model(
      os.path.join(model_dir, "export"),
      serving_input_receiver_fn(tf, tf.estimator.export, name))
  record["served"] = served(tf, export_dir, name)
  estimator.train(train_input_fn(tf, name), steps=RESUME_STEPS)
  record["resumed"] = {
      "global_step": int(estimator.get_variable_value("global_step")),
      "cluster_centers": to_json(estimator.cluster_centers()),
  }
  return record


def main():
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if not tf.__version__.startswith("2.15.") or not hasattr(tf, "estimator"):
    sys.exit(f"run me with TensorFlow 2.15 + tensorflow-estimator (found {tf.__version__})")
  tf.get_logger().setLevel("ERROR")
  kmeans_class = tf.compat.v1.estimator.experimental.KMeans
  root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
  out_dir = os.path.join(root, "tests", "data", "canned", "kmeans215")
  if os.path.exists(out_dir):
    sys.exit(f"{out_dir} exists: remove it first")
  expected = {"tensorflow_version": tf.__version__, "train_steps": TRAIN_STEPS,
              "resume_steps": RESUME_STEPS, "cases": {}}
  for name in CASES:
    model_dir = os.path.join(out_dir, name)
    estimator = make_estimator(name, kmeans_class, tf.feature_column, np, model_dir)
    estimator.train(train_input_fn(tf, name), steps=TRAIN_STEPS)
    trim_model_dir(tf, model_dir)
    variables = checkpoint_variables(tf, model_dir)
    with tempfile.TemporaryDirectory() as tmp:
      copy = os.path.join(tmp, name)
      shutil.copytree(model_dir, copy)
      record = _record(tf, np, kmeans_class, name, copy)
    record["variables"] = variables
    expected["cases"][name] = record
    print(name, sorted(variables), record["score"], record["resumed"]["global_step"])
  with open(os.path.join(out_dir, "expected.json"), "w") as f:
    json.dump(expected, f, indent=1, sort_keys=True)
    f.write("\n")


if __name__ == "__main__":
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
  main()
