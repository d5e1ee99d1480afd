"""Records tf.estimator 2.15's Linear estimators trained with LinearSDCA (tests/data/canned/sdca215).

Runs ONLY under the reference environment (TensorFlow 2.15 + tensorflow-estimator
2.15). From the repository root:

    ~/.cache/estimator_lite/ref-venv-2.15/bin/python \
        tests/reference/make_sdca_fixture.py tests/data/canned/sdca215

For each case of `CASES` (a binary LinearClassifier, a LinearRegressor with
L1 regularization, a compat.v1 LinearClassifier, a compat.v1 LinearRegressor
with partitioned variables and a sharded example-state table) it trains
TRAIN_STEPS SDCA steps on the rows of `FEATURES` (one batch), and writes:

  OUT/<case>/checkpoint, model.ckpt-<TRAIN_STEPS>.{index,data-00000-of-00001.gz}
      for the cases of MODEL_DIR_CASES, the model_dir, trimmed to its last
      checkpoint (no events, no graph); the data file is gzipped (4 MiB, mostly
      the example-state table's 131072 empty buckets, become 5 KiB):
      `unpack_model_dir` restores it;
  OUT/expected.json
      per case: the checkpoint's variables (name -> [shape, dtype]) and the
      values of the model's weights, the evaluation metrics and the
      predictions of every row.

tests/canned/test_linear_sdca.py builds the same estimators from this module
(`build_estimator`, `input_fn`) with estimator_lite, evaluates and predicts
from copies of these model_dirs, trains the same steps from scratch, and
compares to 1e-4. tests/reference/read_sdca_model_dir.py imports it too, to
read a model_dir estimator_lite wrote. Nothing at module level imports
TensorFlow or an estimator package.
"""
import gzip
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# pylint: disable=g-import-not-at-top,wrong-import-position,unused-import
from fixture_io import checkpoint_variables
from fixture_io import to_json
# pylint: enable=g-import-not-at-top,wrong-import-position,unused-import

# SDCA's kernel visits a batch's examples in a random order (a fresh seed
# each step, in 2.15 too): after a few steps two runs differ by up to 10%,
# after TRAIN_STEPS they have converged to the same optimum (to 1e-6 here).
TRAIN_STEPS = 100
CASES = ("classifier", "regressor", "classifier_v1", "regressor_v1_sharded")
MODEL_DIR_CASES = ("classifier", "regressor")

FEATURES = {
    "example_id": ["1", "2", "3", "4", "5", "6"],
    "price": [[0.6], [0.8], [0.3], [0.9], [0.2], [0.5]],
    "sq_footage": [[900.0], [700.0], [600.0], [800.0], [550.0], [750.0]],
    "country": [["IT"], ["US"], ["GB"], ["US"], ["IT"], ["GB"]],
    "weights": [[3.0], [1.0], [1.0], [2.0], [1.0], [0.5]],
}
LABELS = {
    "classifier": [[1], [0], [1], [0], [1], [0]],
    "regressor": [[1.5], [-0.5], [2.0], [0.25], [1.0], [-1.0]],
}


def feature_columns(tf):
  """The model's columns: numeric, bucketized, hashed categorical, crossed."""
  price = tf.feature_column.numeric_column("price")
  sq_footage = tf.feature_column.bucketized_column(
      tf.feature_column.numeric_column("sq_footage"), boundaries=[650.0, 800.0])
  country = tf.feature_column.categorical_column_with_hash_bucket("country", hash_bucket_size=5)
  crossed = tf.feature_column.crossed_column([sq_footage, "country"], hash_bucket_size=10)
  return [price, sq_footage, country, crossed]


def label_kind(case):
  """The key of `LABELS` a case trains on."""
  return "regressor" if case.startswith("regressor") else "classifier"


def input_fn(tf, case):
  """The input_fn of a case: every row, one batch (features, labels)."""

  def fn():
    features = {name: tf.constant(values) for name, values in FEATURES.items()}
    labels = tf.constant(LABELS[label_kind(case)])
    return features, labels

  return fn


def predict_input_fn(tf):
  """The input_fn of predict: the features of every row, one batch, then the end of input."""

  def fn():
    features = {name: tf.constant(values) for name, values in FEATURES.items()}
    return tf.data.Dataset.from_tensors(features)

  return fn


def build_estimator(tf, est, est_v1, case, model_dir):
  """The estimator of `case`: `est` is tf.estimator or estimator_lite, `est_v1` its compat.v1."""
  columns = feature_columns(tf)
  if case == "classifier":
    optimizer = est.experimental.LinearSDCA(
        example_id_column="example_id", symmetric_l2_regularization=0.5)
    return est.LinearClassifier(feature_columns=columns, model_dir=model_dir,
                                weight_column="weights", optimizer=optimizer)
  if case == "regressor":
    optimizer = est.experimental.LinearSDCA(
        example_id_column="example_id", symmetric_l1_regularization=0.05,
        symmetric_l2_regularization=0.5)
    return est.LinearRegressor(feature_columns=columns, model_dir=model_dir,
                               weight_column="weights", optimizer=optimizer)
  if case == "classifier_v1":
    optimizer = est.experimental.LinearSDCA(
        example_id_column="example_id", symmetric_l2_regularization=1.0)
    return est_v1.LinearClassifier(feature_columns=columns, model_dir=model_dir,
                                   optimizer=optimizer)
  if case == "regressor_v1_sharded":
    optimizer = est.experimental.LinearSDCA(
        example_id_column="example_id", num_table_shards=3, symmetric_l1_regularization=0.05,
        symmetric_l2_regularization=0.5)
    return est_v1.LinearRegressor(
        feature_columns=columns, model_dir=model_dir, weight_column="weights",
        optimizer=optimizer,
        partitioner=tf.compat.v1.fixed_size_partitioner(num_shards=2, axis=0))
  raise ValueError(f"unknown case {case!r}")


def describe_model_dir(tf, estimator, model_dir, case):
  """What expected.json records of a trained model_dir: variables, metrics, predictions."""
  checkpoint = tf.train.latest_checkpoint(model_dir)
  variables = checkpoint_variables(tf, model_dir)
  weights = {name: to_json(tf.train.load_variable(checkpoint, name))
             for name in variables
             if name.startswith("linear/linear_model/") and "unshrunk" not in name}
  metrics = {key: float(value) for key, value in
             estimator.evaluate(input_fn=input_fn(tf, case), steps=1).items()}
  predictions = [
      {key: to_json(value) for key, value in row.items()}
      for row in estimator.predict(input_fn=predict_input_fn(tf))]
  return dict(variables=variables, weights=weights, metrics=metrics, predictions=predictions)


def pack_model_dir(tf, model_dir, out_dir):
  """Copies the last checkpoint (index, gzipped data, `checkpoint` file) of `model_dir` to `out_dir`."""
  checkpoint = tf.train.latest_checkpoint(model_dir)
  prefix = os.path.basename(checkpoint)
  os.makedirs(out_dir, exist_ok=True)
  for name in os.listdir(model_dir):
    if name.startswith(prefix + ".index"):
      shutil.copy(os.path.join(model_dir, name), out_dir)
    elif name.startswith(prefix + ".data-"):
      with open(os.path.join(model_dir, name), "rb") as source, gzip.open(
          os.path.join(out_dir, name + ".gz"), "wb") as packed:
        shutil.copyfileobj(source, packed)
  with open(os.path.join(out_dir, "checkpoint"), "w") as f:
    f.write(f'model_checkpoint_path: "{prefix}"\nall_model_checkpoint_paths: "{prefix}"\n')


def unpack_model_dir(fixture_dir, model_dir):
  """Copies a fixture model_dir to `model_dir`, ungzipping its checkpoint data."""
  shutil.copytree(fixture_dir, model_dir, ignore=shutil.ignore_patterns("*.gz"))
  for name in os.listdir(fixture_dir):
    if name.endswith(".gz"):
      with gzip.open(os.path.join(fixture_dir, name), "rb") as packed, open(
          os.path.join(model_dir, name[:-len(".gz")]), "wb") as unpacked:
        shutil.copyfileobj(packed, unpacked)


def main(argv):
  if len(argv) != 2:
    sys.exit(__doc__)
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
  import tensorflow as tf  # pylint: disable=import-outside-toplevel
  if not tf.__version__.startswith("2.15.") or not hasattr(tf, "estimator"):
    sys.exit("run this with the reference venv's python (TensorFlow 2.15 + tf.estimator)")
  tf.get_logger().setLevel("ERROR")
  out = argv[1]
  expected = {"tensorflow": tf.__version__, "train_steps": TRAIN_STEPS, "cases": {}}
  work = tempfile.mkdtemp()
  for case in CASES:
    model_dir = os.path.join(work, case)
    estimator = build_estimator(tf, tf.estimator, tf.compat.v1.estimator, case, model_dir)
    estimator.train(input_fn=input_fn(tf, case), steps=TRAIN_STEPS)
    expected["cases"][case] = describe_model_dir(tf, estimator, model_dir, case)
    shutil.rmtree(os.path.join(out, case), ignore_errors=True)
    if case in MODEL_DIR_CASES:
      pack_model_dir(tf, model_dir, os.path.join(out, case))
  shutil.rmtree(work)
  with open(os.path.join(out, "expected.json"), "w") as f:
    json.dump(expected, f, indent=1, sort_keys=True)
    f.write("\n")


if __name__ == "__main__":
  main(sys.argv)
