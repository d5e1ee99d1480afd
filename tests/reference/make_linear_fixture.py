"""Records tf.estimator 2.15's Linear and Baseline estimators on tiny data (linear_expected.json).

Runs ONLY under the reference environment (TensorFlow 2.15 + tensorflow-estimator
2.15). From the repository root:

    ~/.cache/estimator_lite/ref-venv-2.15/bin/python \
        tests/reference/make_linear_fixture.py tests/data/linear_expected.json

The cases (`CASES`) cover the constructor arguments of the Linear* and
Baseline* classes, v2 and compat.v1: every kind of feature column (v2 and v1
constructors), n_classes, label_vocabulary, weight_column (a name or a numeric
column), each optimizer name, an optimizer instance, a callable, None (the
default learning-rate rule, with 30 columns), loss_reduction, sparse_combiner
and a partitioner. Linear weights and the baseline bias start at zero, so
training is deterministic: each case trains TRAIN_STEPS steps on the 8 rows
(one batch) and records the checkpoint's variables (name -> shape), the
evaluation metrics and the first PREDICT_ROWS predictions. Two cases also
export a SavedModel (parsing receiver) and record its signatures and what
its `predict` signature returns for serialized Examples of the first rows.

tests/canned/test_linear.py and test_baseline.py build the same estimators
from this module (`build_estimator`, `input_fn`, ...) with estimator_lite and
compare: names identical, numbers within 1e-4. Nothing at module level imports
TensorFlow or an estimator package, so the tests import this file too.
"""
import json
import os
import sys
import tempfile

TRAIN_STEPS = 5
PREDICT_ROWS = 3

FEATURES = {
    "x": [[0.2], [0.5], [0.9], [0.1], [0.7], [0.3], [0.8], [0.4]],
    "x2": [[0.1, 1.0], [0.4, 0.2], [0.9, 0.5], [0.3, 0.3], [0.6, 0.8], [0.2, 0.1],
           [0.7, 0.9], [0.5, 0.4]],
    # "z" is out of the vocabulary (its OOV bucket, or no weight).
    "c": [["a"], ["b"], ["c"], ["z"], ["b"], ["a"], ["c"], ["b"]],
    "h": [["p"], ["q"], ["r"], ["s"], ["p"], ["t"], ["q"], ["u"]],
    "i": [[0], [3], [1], [4], [2], [0], [3], [1]],
    "iw": [[1.0], [2.0], [0.5], [1.5], [1.0], [3.0], [0.5], [2.0]],
    # Multivalent: "" is a missing value, so rows have 1 or 2 terms (what
    # sparse_combiner is about).
    "tags": [["a", "b"], ["c", ""], ["a", "c"], ["b", ""], ["b", "c"], ["a", ""],
             ["c", "a"], ["b", "b"]],
    "w": [[1.0], [2.0], [0.5], [1.0], [1.5], [1.0], [2.0], [0.5]],
}
NUM_MANY = 30  # columns of the `many` case: default learning rate 1/sqrt(30) < 0.2
LABELS = {
    "binary": [[0], [1], [1], [0], [1], [1], [1], [0]],
    "multi": [[0], [2], [1], [0], [2], [2], [1], [2]],
    "vocab": [["lo"], ["hi"], ["mid"], ["lo"], ["hi"], ["hi"], ["mid"], ["hi"]],
    "regression": [[1.5], [-0.5], [2.0], [0.25], [1.0], [-1.0], [0.5], [3.0]],
    "regression2": [[1.5, 0.0], [-0.5, 1.0], [2.0, 2.0], [0.25, -1.0], [1.0, 0.5],
                    [-1.0, 0.0], [0.5, 1.5], [3.0, -0.5]],
}
VOCABULARY = ["lo", "mid", "hi"]
TAG_VOCABULARY = ["a", "b", "c"]


class Api:
  """What a case needs from one side: the estimator namespaces, columns, optimizers, heads."""

  def __init__(self, tf, est, est_v1, keras_legacy_optimizers, vocabulary_file):
    self.tf = tf
    self.est = est
    self.est_v1 = est_v1
    self.fc = tf.feature_column
    self.fc_v1 = tf.compat.v1.feature_column
    self.keras_opt = keras_legacy_optimizers
    self.v1_train = tf.compat.v1.train
    self.vocabulary_file = vocabulary_file


def write_vocabulary_file(directory):
  """The vocabulary file of the `tags` column (one term a line)."""
  path = os.path.join(directory, "tags_vocabulary.txt")
  with open(path, "w") as f:
    f.write("\n".join(TAG_VOCABULARY) + "\n")
  return path


def columns(api, fc):
  """The feature columns, by short name, made with `fc` (v2 or v1 constructors)."""
  x = fc.numeric_column("x")
  c = fc.categorical_column_with_vocabulary_list("c", ["a", "b", "c"], num_oov_buckets=1)
  h = fc.categorical_column_with_hash_bucket("h", 7)
  i = fc.categorical_column_with_identity("i", 5)
  return {
      "x": x,
      "x2": fc.numeric_column("x2", shape=(2,)),
      "x_buckets": fc.bucketized_column(x, [0.3, 0.6]),
      "c": c,
      "c_indicator": fc.indicator_column(c),
      "h": h,
      "i": i,
      "i_weighted": fc.weighted_categorical_column(i, "iw"),
      "c_x_h": fc.crossed_column([c, "h"], 11),
      "tags_list": fc.categorical_column_with_vocabulary_list("tags", TAG_VOCABULARY),
      "tags_file": fc.categorical_column_with_vocabulary_file(
          "tags", api.vocabulary_file, vocabulary_size=3),
  }


def pick(api, names, v1_columns=False):
  table = columns(api, api.fc_v1 if v1_columns else api.fc)
  return [table[name] for name in names]


def many_columns(api):
  return [api.fc.numeric_column(f"m{k}") for k in range(NUM_MANY)]


# name -> (label kind, builder(api, model_dir) -> estimator, extra feature keys)
def _cases():
  v1_sum_over_batch = "weighted_sum_over_batch_size"  # tf.compat.v1.losses.Reduction
  return {
      # -- Linear, top level --------------------------------------------------------
      "linear_binary_ftrl": ("binary", lambda a, d: a.est.LinearClassifier(
          pick(a, ["x", "x_buckets", "c", "h", "i_weighted", "c_x_h", "c_indicator"]),
          model_dir=d, weight_column="w")),
      "linear_vocab_adagrad_mean": ("vocab", lambda a, d: a.est.LinearClassifier(
          pick(a, ["x2", "tags_file", "i"]), model_dir=d, n_classes=3,
          label_vocabulary=VOCABULARY, optimizer="Adagrad", sparse_combiner="mean")),
      "linear_multi_sgd_instance_sqrtn_sum": ("multi", lambda a, d: a.est.LinearClassifier(
          pick(a, ["x", "tags_list", "h"]), model_dir=d, n_classes=3,
          optimizer=a.keras_opt.SGD(learning_rate=0.1), sparse_combiner="sqrtn",
          loss_reduction="sum")),
      "linear_regressor_adam_weight_column": ("regression", lambda a, d: a.est.LinearRegressor(
          pick(a, ["x", "x_buckets", "c", "c_x_h"]), model_dir=d, optimizer="Adam",
          weight_column=a.fc.numeric_column("w"))),
      "linear_regressor2_callable_mean": ("regression2", lambda a, d: a.est.LinearRegressor(
          pick(a, ["x2", "i", "tags_list"]), model_dir=d, label_dimension=2,
          optimizer=lambda: a.keras_opt.RMSprop(learning_rate=0.05),
          sparse_combiner="mean")),
      "linear_estimator_rmsprop": ("regression", lambda a, d: a.est.LinearEstimator(
          a.est.RegressionHead(), pick(a, ["x", "c"]), model_dir=d, optimizer="RMSProp")),
      "linear_regressor_default_rate_many": ("regression", lambda a, d: a.est.LinearRegressor(
          many_columns(a), model_dir=d, optimizer=None)),
      # -- Linear, compat.v1 --------------------------------------------------------
      "v1_linear_multi_ftrl_v1_columns": ("multi", lambda a, d: a.est_v1.LinearClassifier(
          pick(a, ["x", "x_buckets", "tags_file", "c_x_h", "i_weighted"], v1_columns=True),
          model_dir=d, n_classes=3)),
      "v1_linear_binary_adam_partitioned": ("binary", lambda a, d: a.est_v1.LinearClassifier(
          pick(a, ["x", "c", "h", "c_x_h"]), model_dir=d, optimizer="Adam",
          partitioner=a.tf.compat.v1.fixed_size_partitioner(2), weight_column="w")),
      "v1_linear_regressor_sgd_sqrtn": ("regression", lambda a, d: a.est_v1.LinearRegressor(
          pick(a, ["x", "i_weighted", "tags_list"], v1_columns=True), model_dir=d,
          optimizer="SGD", sparse_combiner="sqrtn", loss_reduction=v1_sum_over_batch)),
      "v1_linear_vocab_callable": ("vocab", lambda a, d: a.est_v1.LinearClassifier(
          pick(a, ["x2", "c"], v1_columns=True), model_dir=d, n_classes=3,
          label_vocabulary=VOCABULARY,
          optimizer=lambda: a.v1_train.AdagradOptimizer(learning_rate=0.1))),
      # -- Baseline, top level ------------------------------------------------------
      "baseline_multi_ftrl": ("multi", lambda a, d: a.est.BaselineClassifier(
          model_dir=d, n_classes=3)),
      "baseline_binary_adagrad_weight": ("binary", lambda a, d: a.est.BaselineClassifier(
          model_dir=d, weight_column="w", optimizer="Adagrad")),
      "baseline_vocab_sum": ("vocab", lambda a, d: a.est.BaselineClassifier(
          model_dir=d, n_classes=3, label_vocabulary=VOCABULARY, loss_reduction="sum")),
      "baseline_regressor2_sgd_weight": ("regression2", lambda a, d: a.est.BaselineRegressor(
          model_dir=d, label_dimension=2, weight_column="w",
          optimizer=a.keras_opt.SGD(learning_rate=0.2))),
      "baseline_estimator_adam": ("regression", lambda a, d: a.est.BaselineEstimator(
          a.est.RegressionHead(), model_dir=d, optimizer="Adam")),
      # -- Baseline, compat.v1 ------------------------------------------------------
      "v1_baseline_binary_adam": ("binary", lambda a, d: a.est_v1.BaselineClassifier(
          model_dir=d, optimizer="Adam")),
      "v1_baseline_multi_ftrl": ("multi", lambda a, d: a.est_v1.BaselineClassifier(
          model_dir=d, n_classes=3)),
      "v1_baseline_regressor_weight_rmsprop": ("regression", lambda a, d: (
          a.est_v1.BaselineRegressor(model_dir=d, weight_column="w", optimizer="RMSProp"))),
  }


CASES = _cases()
# Cases that also export: their serving signatures and `predict` outputs.
EXPORTED = ("linear_binary_ftrl", "linear_regressor_adam_weight_column")


def build_estimator(api, name, model_dir):
  """The estimator of case `name`, built with `api`'s classes."""
  return CASES[name][1](api, model_dir)


def _features(tf, name):
  features = {key: tf.constant(value) for key, value in FEATURES.items()}
  features["i"] = tf.constant(FEATURES["i"], dtype=tf.int64)
  if name == "linear_regressor_default_rate_many":
    for k in range(NUM_MANY):
      features[f"m{k}"] = tf.constant([[row[0] * (k % 5 + 1) / 5.0] for row in FEATURES["x"]])
  return features


def input_fn(tf, name):
  """The train/evaluate input_fn: all 8 rows as one batch, repeated."""
  def fn():
    labels = tf.constant(LABELS[CASES[name][0]])
    return tf.data.Dataset.from_tensors((_features(tf, name), labels)).repeat()
  return fn


def predict_input_fn(tf, name):
  """The predict input_fn: the 8 rows' features, once."""
  return lambda: tf.data.Dataset.from_tensors(_features(tf, name))


def serving_feature_columns(api, name):
  """The columns whose parse spec the serving receiver of an EXPORTED case uses."""
  return {
      "linear_binary_ftrl": pick(api, ["x", "x_buckets", "c", "h", "i_weighted", "c_x_h",
                                       "c_indicator"]),
      "linear_regressor_adam_weight_column": pick(api, ["x", "x_buckets", "c", "c_x_h"]),
  }[name]


def serialized_examples(tf, rows):
  """tf.Example protos (serialized) of the first `rows` rows, "" values left out."""
  examples = []
  for row in range(rows):
    feature = {}
    for key, values in FEATURES.items():
      value = values[row]
      if isinstance(value[0], str):
        feature[key] = tf.train.Feature(bytes_list=tf.train.BytesList(
            value=[v.encode() for v in value if v]))
      elif key == "i":
        feature[key] = tf.train.Feature(int64_list=tf.train.Int64List(value=value))
      else:
        feature[key] = tf.train.Feature(float_list=tf.train.FloatList(value=value))
    examples.append(tf.train.Example(
        features=tf.train.Features(feature=feature)).SerializeToString())
  return examples


def to_json(value):
  """numpy values, bytes and containers as JSON values."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  if isinstance(value, dict):
    return {str(k): to_json(v) for k, v in value.items()}
  if isinstance(value, (list, tuple)):
    return [to_json(v) for v in value]
  if isinstance(value, np.ndarray):
    return to_json(value.tolist())
  if isinstance(value, bytes):
    return value.decode("utf-8")
  if isinstance(value, np.generic):
    return value.item()
  return value


def differences(got, expected, tolerance=1e-4, path=""):
  """Where `got` differs from `expected`: same structure, equal strings and ints, floats close.

  Floats agree when |got - expected| <= tolerance * max(1, |expected|).

  Returns:
    A list of (path, got, expected), empty when they agree.
  """
  if isinstance(expected, dict):
    if not isinstance(got, dict) or sorted(got) != sorted(expected):
      return [(path, sorted(got) if isinstance(got, dict) else got, sorted(expected))]
    return [d for key in expected
            for d in differences(got[key], expected[key], tolerance, f"{path}/{key}")]
  if isinstance(expected, list):
    if not isinstance(got, list) or len(got) != len(expected):
      return [(path, got, expected)]
    return [d for k, (g, e) in enumerate(zip(got, expected))
            for d in differences(g, e, tolerance, f"{path}[{k}]")]
  if isinstance(expected, float) or isinstance(got, float):
    if abs(got - expected) > tolerance * max(1.0, abs(expected)):
      return [(path, got, expected)]
    return []
  return [] if got == expected else [(path, got, expected)]


def run_case(api, name, model_dir):
  """Trains, evaluates, predicts (and for EXPORTED cases exports) case `name`."""
  tf = api.tf
  estimator = build_estimator(api, name, model_dir)
  estimator.train(input_fn(tf, name), steps=TRAIN_STEPS)
  record = {
      "variables": {n: list(s) for n, s in tf.train.list_variables(model_dir)},
      "evaluate": to_json(estimator.evaluate(input_fn(tf, name), steps=1)),
      "predict": to_json(
          [p for _, p in zip(range(PREDICT_ROWS), estimator.predict(predict_input_fn(tf, name)))]),
  }
  if name in EXPORTED:
    receiver_fn = api.est.export.build_parsing_serving_input_receiver_fn(
        tf.feature_column.make_parse_example_spec(serving_feature_columns(api, name)))
    export_dir = estimator.export_saved_model(os.path.join(model_dir, "export"), receiver_fn)
    record["export"] = read_export(tf, export_dir)
  return record


def read_export(tf, export_dir):
  """The export's signature keys and its `predict` outputs for 2 serialized Examples."""
  if isinstance(export_dir, bytes):
    export_dir = export_dir.decode("utf-8")
  with tf.Graph().as_default():
    with tf.compat.v1.Session() as session:
      meta_graph = tf.compat.v1.saved_model.loader.load(session, ["serve"], export_dir)
      signatures = meta_graph.signature_def
      predict = signatures["predict"]
      fetches = {key: info.name for key, info in predict.outputs.items()}
      outputs = session.run(fetches, feed_dict={
          predict.inputs["examples"].name: serialized_examples(tf, 2)})
  return {
      "signatures": {key: {"method_name": sig.method_name, "inputs": sorted(sig.inputs),
                           "outputs": sorted(sig.outputs)}
                     for key, sig in signatures.items()},
      "predict_outputs": to_json(outputs),
  }


def main(argv):
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if not tf.__version__.startswith("2.15.") or not hasattr(tf, "estimator"):
    sys.exit(f"make_linear_fixture.py runs under TensorFlow 2.15 with tensorflow-estimator "
             f"(found {tf.__version__}); use the reference venv.")
  tf.get_logger().setLevel("ERROR")
  out = argv[1] if len(argv) > 1 else "tests/data/linear_expected.json"
  with tempfile.TemporaryDirectory() as tmp:
    api = Api(tf, tf.estimator, tf.compat.v1.estimator, tf.keras.optimizers.legacy,
              write_vocabulary_file(tmp))
    expected = {"train_steps": TRAIN_STEPS, "cases": {}}
    for name in CASES:
      print("case", name, flush=True)
      expected["cases"][name] = run_case(api, name, os.path.join(tmp, name))
  with open(out, "w") as f:
    json.dump(expected, f, indent=1, sort_keys=True)
    f.write("\n")
  print("wrote", out)


if __name__ == "__main__":
  main(sys.argv)
