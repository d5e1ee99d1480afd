"""Writes the tf.estimator 2.15 DNN / DNNLinearCombined model_dirs that tests/canned/test_dnn*.py load.

Runs ONLY in the reference environment (TensorFlow 2.15 + tensorflow-estimator
2.15). From the repository root:

    rm -rf tests/data/canned/dnn_tf215
    ~/.cache/estimator_lite/ref-venv-2.15/bin/python tests/reference/make_dnn_fixture.py

For each case of `CASES` it trains tf.estimator's estimator TRAIN_STEPS steps
into tests/data/canned/dnn_tf215/<case>/, keeps only `checkpoint` and the last
checkpoint's index and data files, and records in
tests/data/canned/dnn_tf215/expected.json the checkpoint's variables
(tf.train.list_variables), evaluate() and predict() on the fixed rows below,
and the signatures of an export with a parsing serving receiver (with the
predict signature's outputs for SERVING_ROWS serialized Examples).

DNN weights are random, so estimator_lite is checked by loading these
model_dirs: the same evaluate/predict numbers, then training resumes. The
test imports this module for the data and the estimators' arguments (nothing
here imports TensorFlow at import time: the caller passes its modules).
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

TRAIN_STEPS = 5
# 8 rows: a number, a vocabulary column ("z" is out of vocabulary: the OOV
# bucket), a hashed column, an integer id and a weight.
FEATURES = {
    "x": [[0.5], [1.5], [-1.0], [2.0], [0.0], [-0.5], [3.0], [1.0]],
    "c": [["a"], ["b"], ["c"], ["a"], ["z"], ["b"], ["c"], ["a"]],
    "h": [["p"], ["q"], ["r"], ["s"], ["p"], ["t"], ["q"], ["u"]],
    "i": [[0], [1], [2], [1], [0], [2], [2], [1]],
    "w": [[1.0], [2.0], [0.5], [1.0], [1.5], [1.0], [2.0], [0.5]],
}
LABELS = {
    "multi": [[0], [1], [2], [1], [0], [2], [2], [1]],
    "binary": [[0], [1], [1], [0], [1], [0], [1], [0]],
}
BATCH_SIZE = 4
SERVING_ROWS = 3
VOCABULARY = ["a", "b", "c"]

# name -> (class, v1?, labels, constructor arguments; column lists name keys
# of feature_columns()).
CASES = {
    "dnn_classifier": (
        "DNNClassifier", False, "multi",
        {"hidden_units": [4, 3], "feature_columns": ["x", "c_embedding", "h_indicator",
                                                      "i_indicator"],
         "n_classes": 3, "weight_column": "w", "batch_norm": True, "dropout": 0.2}),
    "dnn_classifier_v1": (
        "DNNClassifier", True, "binary",
        {"hidden_units": [3], "feature_columns": ["x", "c_embedding"],
         "optimizer": "Adam"}),
    "dnn_linear_combined_classifier": (
        "DNNLinearCombinedClassifier", False, "binary",
        {"linear_feature_columns": ["x", "c", "c_x_h"],
         "dnn_feature_columns": ["x", "c_embedding"], "dnn_hidden_units": [3]}),
    "dnn_linear_combined_classifier_v1": (
        "DNNLinearCombinedClassifier", True, "multi",
        {"linear_feature_columns": ["x", "c"], "dnn_feature_columns": ["x", "c_embedding"],
         "dnn_hidden_units": [3], "n_classes": 3}),
}


def feature_columns(fc):
  """The feature columns of the cases, by name, from `fc` (tf.feature_column)."""
  c = fc.categorical_column_with_vocabulary_list("c", VOCABULARY, num_oov_buckets=1)
  h = fc.categorical_column_with_hash_bucket("h", 7)
  return {
      "x": fc.numeric_column("x"),
      "c": c,
      "c_embedding": fc.embedding_column(c, 2),
      "h_indicator": fc.indicator_column(h),
      "i_indicator": fc.indicator_column(fc.categorical_column_with_identity("i", 3)),
      "c_x_h": fc.crossed_column([c, "h"], 5),
  }


def make_estimator(name, estimators, estimators_v1, fc, model_dir):
  """The estimator of case `name` from `estimators` (tf.estimator or estimator_lite)."""
  class_name, v1, _, kwargs = CASES[name]
  columns = feature_columns(fc)
  kwargs = {key: [columns[c] for c in value] if key.endswith("feature_columns") else value
            for key, value in kwargs.items()}
  namespace = estimators_v1 if v1 else estimators
  return getattr(namespace, class_name)(model_dir=model_dir, **kwargs)


def input_fn(tf, name, with_labels=True, repeat=False):
  """An input_fn over the 8 rows in batches of BATCH_SIZE (labels of the case)."""
  labels = LABELS[CASES[name][2]]

  def fn():
    features = {key: tf.constant(value) for key, value in FEATURES.items()}
    data = (features, tf.constant(labels)) if with_labels else features
    dataset = tf.data.Dataset.from_tensor_slices(data).batch(BATCH_SIZE)
    return dataset.repeat() if repeat else dataset

  return fn


def serving_input_receiver_fn(tf, estimators, fc, name):
  """A parsing receiver over the case's feature columns (serialized tf.Examples in)."""
  _, _, _, kwargs = CASES[name]
  columns = feature_columns(fc)
  used = [columns[c] for key, value in kwargs.items() if key.endswith("feature_columns")
          for c in value]
  spec = fc.make_parse_example_spec(used)
  return estimators.export.build_parsing_serving_input_receiver_fn(spec)


def serialized_examples(tf):
  """The first SERVING_ROWS rows as serialized tf.Examples."""
  examples = []
  for row in range(SERVING_ROWS):
    feature = {}
    for key, values in FEATURES.items():
      value = values[row][0]
      if isinstance(value, str):
        feature[key] = tf.train.Feature(bytes_list=tf.train.BytesList(value=[value.encode()]))
      elif isinstance(value, int):
        feature[key] = tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))
      else:
        feature[key] = tf.train.Feature(float_list=tf.train.FloatList(value=[value]))
    examples.append(tf.train.Example(
        features=tf.train.Features(feature=feature)).SerializeToString())
  return examples


def _record(tf, name, model_dir):
  estimator = make_estimator(name, tf.estimator, tf.compat.v1.estimator, tf.feature_column,
                             model_dir)
  metrics = estimator.evaluate(input_fn(tf, name))
  predictions = list(estimator.predict(input_fn(tf, name, with_labels=False)))
  export_dir = estimator.export_saved_model(
      os.path.join(model_dir, "export"),
      serving_input_receiver_fn(tf, tf.estimator, tf.feature_column, name))
  loaded = tf.saved_model.load(export_dir)
  served = loaded.signatures["predict"](examples=tf.constant(serialized_examples(tf)))
  return {
      "evaluate": to_json(metrics),
      "predict": to_json(predictions),
      "signatures": sorted(loaded.signatures.keys()),
      "served_predict": to_json({k: v.numpy() for k, v in served.items()}),
  }


def main():
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if not tf.__version__.startswith("2.15.") or not hasattr(tf, "estimator"):
    sys.exit(f"run me with TensorFlow 2.15 + tensorflow-estimator (found {tf.__version__})")
  tf.get_logger().setLevel("ERROR")
  root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
  out_dir = os.path.join(root, "tests", "data", "canned", "dnn_tf215")
  if os.path.exists(out_dir):
    sys.exit(f"{out_dir} exists: remove it first")
  expected = {"tensorflow_version": tf.__version__, "train_steps": TRAIN_STEPS, "cases": {}}
  for name in CASES:
    model_dir = os.path.join(out_dir, name)
    estimator = make_estimator(name, tf.estimator, tf.compat.v1.estimator, tf.feature_column,
                               model_dir)
    estimator.train(input_fn(tf, name, repeat=True), steps=TRAIN_STEPS)
    trim_model_dir(tf, model_dir)
    with tempfile.TemporaryDirectory() as tmp:
      copy = os.path.join(tmp, name)
      shutil.copytree(model_dir, copy)
      record = _record(tf, name, copy)
    record["variables"] = {n: s for n, s in tf.train.list_variables(model_dir)}
    expected["cases"][name] = record
    print(name, len(record["variables"]), "variables", record["evaluate"])
  with open(os.path.join(out_dir, "expected.json"), "w") as f:
    json.dump(expected, f, indent=1, sort_keys=True)
    f.write("\n")


if __name__ == "__main__":
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
  main()
