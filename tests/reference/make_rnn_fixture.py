"""Writes the tf.estimator 2.15 RNN model_dirs that tests/canned/test_rnn.py loads.

Runs ONLY in the reference environment (TensorFlow 2.15 + tensorflow-estimator
2.15). From the repository root:

    rm -rf tests/data/canned/rnn215
    ~/.cache/estimator_lite/ref-venv-2.15/bin/python tests/reference/make_rnn_fixture.py

For each case of `CASES` it trains tf.estimator's RNN estimator TRAIN_STEPS
steps into tests/data/canned/rnn215/<case>/, keeps only `checkpoint` and the
last checkpoint's index and data files, and records in
tests/data/canned/rnn215/expected.json the checkpoint's variables
(tf.train.list_variables), evaluate() and predict() on the rows below, and the
signatures of an export with a parsing serving receiver (with the predict
signature's outputs for the rows as serialized tf.Examples, where a sequence
feature is a variable-length list).

The test imports this module for the rows, the cases and the estimators'
arguments, and tests/reference/read_rnn_model_dir.py does too: nothing here
imports TensorFlow at import time (the caller passes its modules).
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

TRAIN_STEPS = 4
# 6 sequences of 1 to 3 steps: a number per step ("x"), a token id per step
# ("t", 0..4), a number per sequence ("c", the context), an example weight
# ("w"); labels per sequence (3 classes) and per step (0/1, 0 past the end).
SEQUENCES = {
    "x": [[0.5, -1.0, 2.0], [1.5], [0.0, 3.0], [-0.5, 1.0, 0.25], [2.5, -2.0], [1.0]],
    "t": [[1, 2, 3], [0], [4, 4], [2, 0, 1], [3, 1], [2]],
}
CONTEXT = {"c": [1.0, -0.5, 0.25, 2.0, 0.0, -1.5], "w": [1.0, 2.0, 0.5, 1.0, 1.5, 1.0]}
SEQUENCE_LABELS = [[1], [0], [2], [1], [2], [0]]
STEP_LABELS = [[1, 0, 1], [0, 0, 0], [1, 1, 0], [0, 1, 1], [1, 0, 0], [1, 0, 0]]
MAX_STEPS = 3
VOCABULARY_SIZE = 5

# name -> (class, labels, constructor arguments; "head" names one of heads()).
CASES = {
    "rnn_classifier": (
        "RNNClassifier", "sequence",
        {"sequence_feature_columns": ["x", "t_embedding"], "context_feature_columns": ["c"],
         "units": [4, 3], "n_classes": 3, "weight_column": "w"}),
    "rnn_classifier_lstm": (
        "RNNClassifier", "sequence",
        {"sequence_feature_columns": ["x"], "units": 3, "cell_type": "lstm",
         "n_classes": 3, "optimizer": "Adam"}),
    "rnn_estimator_sequential": (
        "RNNEstimator", "step",
        {"sequence_feature_columns": ["x", "t_embedding"], "units": 3, "cell_type": "gru",
         "return_sequences": True, "head": "sequential_binary"}),
}


def feature_columns(fc):
  """The feature columns of the cases, by name, from `fc` (tf.feature_column)."""
  tokens = fc.sequence_categorical_column_with_identity("t", VOCABULARY_SIZE)
  return {
      "x": fc.sequence_numeric_column("x"),
      "t_embedding": fc.embedding_column(tokens, 2),
      "c": fc.numeric_column("c"),
  }


def heads(binary_class_head, sequential_head_wrapper):
  """The heads the RNNEstimator cases take, by name."""
  return {"sequential_binary": sequential_head_wrapper(binary_class_head(),
                                                       sequence_length_mask="sequence_mask")}


def make_estimator(name, rnn, heads_by_name, fc, model_dir):
  """The estimator of case `name` from `rnn` (a module with RNNClassifier, RNNEstimator)."""
  class_name, _, kwargs = CASES[name]
  columns = feature_columns(fc)
  kwargs = {key: [columns[c] for c in value] if key.endswith("feature_columns") else value
            for key, value in kwargs.items()}
  if "head" in kwargs:
    kwargs["head"] = heads_by_name[kwargs["head"]]
  return getattr(rnn, class_name)(model_dir=model_dir, **kwargs)


def _sparse(tf, rows, dtype):
  indices = [[i, j] for i, row in enumerate(rows) for j in range(len(row))]
  values = [value for row in rows for value in row]
  return tf.sparse.SparseTensor(indices=indices, values=tf.constant(values, dtype),
                                dense_shape=[len(rows), MAX_STEPS])


def features(tf):
  """All 6 rows as one batch of features (sequence features as SparseTensors)."""
  return {
      "x": _sparse(tf, SEQUENCES["x"], tf.float32),
      "t": _sparse(tf, SEQUENCES["t"], tf.int64),
      "c": tf.constant([[value] for value in CONTEXT["c"]]),
      "w": tf.constant([[value] for value in CONTEXT["w"]]),
  }


def labels(tf, name):
  """The case's labels: [6, 1] class ids, or [6, MAX_STEPS] per-step 0/1."""
  return tf.constant(SEQUENCE_LABELS if CASES[name][1] == "sequence" else STEP_LABELS)


def input_fn(tf, name, with_labels=True, repeat=False):
  """An input_fn giving the 6 rows as one batch (once, or repeated for training)."""

  def fn():
    data = (features(tf), labels(tf, name)) if with_labels else features(tf)
    dataset = tf.data.Dataset.from_tensors(data)
    return dataset.repeat() if repeat else dataset

  return fn


def parse_spec(fc, name):
  """The tf.Example parsing spec of the case's feature columns."""
  _, _, kwargs = CASES[name]
  columns = feature_columns(fc)
  return fc.make_parse_example_spec(
      [columns[c] for key, value in kwargs.items() if key.endswith("feature_columns")
       for c in value])


def serialized_examples(tf):
  """The 6 rows as serialized tf.Examples (a sequence feature is a list of its steps)."""
  examples = []
  for row in range(len(SEQUENCE_LABELS)):
    feature = {
        "x": tf.train.Feature(float_list=tf.train.FloatList(value=SEQUENCES["x"][row])),
        "t": tf.train.Feature(int64_list=tf.train.Int64List(value=SEQUENCES["t"][row])),
        "c": tf.train.Feature(float_list=tf.train.FloatList(value=[CONTEXT["c"][row]])),
        "w": tf.train.Feature(float_list=tf.train.FloatList(value=[CONTEXT["w"][row]])),
    }
    examples.append(tf.train.Example(
        features=tf.train.Features(feature=feature)).SerializeToString())
  return examples


def tf_estimator_modules():
  """tf.estimator 2.15's rnn module and the heads (the RNN estimators are not in tf.estimator.*)."""
  # pylint: disable=g-import-not-at-top
  from tensorflow_estimator.python.estimator.canned import rnn
  from tensorflow_estimator.python.estimator.head import binary_class_head
  from tensorflow_estimator.python.estimator.head import sequential_head
  return rnn, heads(binary_class_head.BinaryClassHead, sequential_head.SequentialHeadWrapper)


def _record(tf, name, model_dir):
  rnn, heads_by_name = tf_estimator_modules()
  estimator = make_estimator(name, rnn, heads_by_name, tf.feature_column, model_dir)
  metrics = estimator.evaluate(input_fn(tf, name))
  predictions = list(estimator.predict(input_fn(tf, name, with_labels=False)))
  receiver_fn = tf.estimator.export.build_parsing_serving_input_receiver_fn(
      parse_spec(tf.feature_column, name))
  export_dir = estimator.export_saved_model(os.path.join(model_dir, "export"), receiver_fn)
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
  out_dir = os.path.join(root, "tests", "data", "canned", "rnn215")
  if os.path.exists(out_dir):
    sys.exit(f"{out_dir} exists: remove it first")
  expected = {"tensorflow_version": tf.__version__, "train_steps": TRAIN_STEPS, "cases": {}}
  rnn, heads_by_name = tf_estimator_modules()
  for name in CASES:
    model_dir = os.path.join(out_dir, name)
    estimator = make_estimator(name, rnn, heads_by_name, tf.feature_column, model_dir)
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
