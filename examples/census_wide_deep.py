"""Census income (UCI Adult) with a wide & deep model: DNNLinearCombinedClassifier.

Predicts whether a person earns more than $50K a year from the 1994 US census
(examples/data/census: 32,561 training rows, 16,278 test rows). The wide part
is a linear model over sparse categorical columns and their crosses; the deep
part a DNN over numeric columns, one-hot (indicator) columns and embeddings.
train_and_evaluate trains and evaluates after every checkpoint; a BestExporter
exports the model whose evaluation loss is lowest, as a SavedModel that parses
tf.train.Example protos. The program then reloads that export with
tf.saved_model.load and predicts a few test rows from serialized Examples.

    python examples/census_wide_deep.py [--model_dir DIR] [--train_steps N]
    # the same program on tf.estimator (TensorFlow 2.15 and before):
    python examples/census_wide_deep.py --api tf.estimator
"""
from __future__ import annotations

import argparse
import gzip
import importlib
import os
import tempfile
from types import ModuleType
from typing import Any, Callable, Dict, List, Tuple

import tensorflow as tf

DATA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "census")
TRAIN_FILE, TEST_FILE = "adult.data.csv.gz", "adult.test.csv.gz"
TEST_ROWS = 16_278

# The files' 15 columns (no header); fields are separated by ", ".
CSV_COLUMNS = ("age", "workclass", "fnlwgt", "education", "education_num", "marital_status",
               "occupation", "relationship", "race", "gender", "capital_gain", "capital_loss",
               "hours_per_week", "native_country", "income_bracket")
NUMERIC = ("age", "fnlwgt", "education_num", "capital_gain", "capital_loss", "hours_per_week")
LABEL, LABEL_VOCABULARY = "income_bracket", ["<=50K", ">50K"]
# Numbers parse as float32: numeric_column's parsing spec (the serving side) is float.
CSV_DEFAULTS = [[0.0] if name in NUMERIC else [""] for name in CSV_COLUMNS]

fc = tf.feature_column


def feature_columns() -> Tuple[List[Any], List[Any]]:
  """(wide columns, deep columns), in the classic census wide & deep style."""
  age = fc.numeric_column("age")
  education_num, hours_per_week = fc.numeric_column("education_num"), fc.numeric_column(
      "hours_per_week")
  # Capital gains and losses span 0 to 99,999: log1p keeps them on the others' scale.
  capital_gain = fc.numeric_column("capital_gain", normalizer_fn=tf.math.log1p)
  capital_loss = fc.numeric_column("capital_loss", normalizer_fn=tf.math.log1p)
  vocab = fc.categorical_column_with_vocabulary_list
  workclass = vocab("workclass", ["Federal-gov", "Local-gov", "Never-worked", "Private",
                                  "Self-emp-inc", "Self-emp-not-inc", "State-gov",
                                  "Without-pay"])
  education = vocab("education", [
      "Bachelors", "HS-grad", "11th", "Masters", "9th", "Some-college", "Assoc-acdm",
      "Assoc-voc", "7th-8th", "Doctorate", "Prof-school", "5th-6th", "10th", "1st-4th",
      "Preschool", "12th"])
  marital_status = vocab("marital_status", [
      "Married-civ-spouse", "Divorced", "Married-spouse-absent", "Never-married", "Separated",
      "Married-AF-spouse", "Widowed"])
  relationship = vocab("relationship", ["Husband", "Not-in-family", "Wife", "Own-child",
                                        "Unmarried", "Other-relative"])
  gender = vocab("gender", ["Female", "Male"])
  # Hashed: no vocabulary to maintain ("?" and unseen values get a bucket too).
  occupation = fc.categorical_column_with_hash_bucket("occupation", hash_bucket_size=1000)
  native_country = fc.categorical_column_with_hash_bucket("native_country", hash_bucket_size=100)
  age_buckets = fc.bucketized_column(age, boundaries=[18, 25, 30, 35, 40, 45, 50, 55, 60, 65])

  wide = [workclass, education, marital_status, relationship, gender, occupation,
          native_country, age_buckets,
          fc.crossed_column(["education", "occupation"], hash_bucket_size=1000),
          fc.crossed_column([age_buckets, "education", "occupation"], hash_bucket_size=1000)]
  deep = [age, education_num, capital_gain, capital_loss, hours_per_week,
          fc.indicator_column(workclass), fc.indicator_column(education),
          fc.indicator_column(marital_status), fc.indicator_column(relationship),
          fc.embedding_column(occupation, dimension=8),
          fc.embedding_column(native_country, dimension=4)]
  return wide, deep


def parse_csv(lines: tf.Tensor) -> Tuple[Dict[str, tf.Tensor], tf.Tensor]:
  """A batch of CSV lines -> (features, label strings)."""
  # decode_csv takes a one-character delimiter; the files separate by ", ".
  fields = tf.io.decode_csv(tf.strings.regex_replace(lines, ", ", ","), CSV_DEFAULTS)
  features = dict(zip(CSV_COLUMNS, fields))
  return features, features.pop(LABEL)


def make_input_fn(path: str, batch_size: int, shuffle: bool,
                  num_epochs: int | None) -> Callable[[], tf.data.Dataset]:
  """An input_fn reading the gzipped CSV at `path` (num_epochs None: forever)."""
  def input_fn() -> tf.data.Dataset:
    dataset = tf.data.TextLineDataset(path, compression_type="GZIP")
    if shuffle:
      dataset = dataset.shuffle(10_000, seed=1)
    # Batch before parsing: one decode_csv per batch, not per line.
    return (dataset.repeat(num_epochs).batch(batch_size)
            .map(parse_csv, num_parallel_calls=tf.data.AUTOTUNE).prefetch(1))
  return input_fn


def make_estimator(est: ModuleType, model_dir: str, save_checkpoints_steps: int = 500,
                   hidden_units: Tuple[int, ...] = (100, 75, 50, 25)) -> Any:
  """The wide & deep classifier of `est` (estimator_lite, or tf.estimator)."""
  wide, deep = feature_columns()
  return est.DNNLinearCombinedClassifier(
      model_dir=model_dir, linear_feature_columns=wide, dnn_feature_columns=deep,
      dnn_hidden_units=list(hidden_units), label_vocabulary=LABEL_VOCABULARY,
      config=est.RunConfig(save_checkpoints_steps=save_checkpoints_steps, tf_random_seed=42))


def serving_input_receiver_fn(est: ModuleType) -> Callable[[], Any]:
  """Serving input: a batch of serialized tf.train.Example protos holding the features."""
  wide, deep = feature_columns()
  return est.export.build_parsing_serving_input_receiver_fn(
      fc.make_parse_example_spec(wide + deep))


def read_rows(path: str, count: int) -> List[Dict[str, Any]]:
  """The first `count` rows of a data file, as {column: float or str}."""
  rows = []
  with gzip.open(path, "rt") as f:
    for line, _ in zip(f, range(count)):
      values = line.rstrip("\n").split(", ")
      rows.append({name: float(value) if name in NUMERIC else value
                   for name, value in zip(CSV_COLUMNS, values)})
  return rows


def to_example(row: Dict[str, Any]) -> bytes:
  """A serialized tf.train.Example of a row's features (the label left out)."""
  feature = {}
  for name, value in row.items():
    if name == LABEL:
      continue
    feature[name] = (tf.train.Feature(float_list=tf.train.FloatList(value=[value]))
                     if name in NUMERIC else
                     tf.train.Feature(bytes_list=tf.train.BytesList(value=[value.encode()])))
  return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--model_dir", default=None,
                      help="where checkpoints and exports go (default: a new temporary directory)")
  parser.add_argument("--data_dir", default=DATA_DIR, help=f"holds {TRAIN_FILE} and {TEST_FILE}")
  parser.add_argument("--train_steps", type=int, default=2000)
  parser.add_argument("--batch_size", type=int, default=128)
  parser.add_argument("--save_checkpoints_steps", type=int, default=500,
                      help="a checkpoint, an evaluation and maybe an export every N steps")
  parser.add_argument("--eval_rows", type=int, default=TEST_ROWS,
                      help="test rows each evaluation reads (default: all)")
  parser.add_argument("--predict_rows", type=int, default=8,
                      help="test rows the reloaded export predicts")
  parser.add_argument("--api", choices=("estimator_lite", "tf.estimator"), default="estimator_lite",
                      help="the Estimator API (tf.estimator: TensorFlow 2.15 and before)")
  args = parser.parse_args()
  tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)
  est = tf.estimator if args.api == "tf.estimator" else importlib.import_module("estimator_lite")
  model_dir = args.model_dir or tempfile.mkdtemp(prefix="census_")
  train_path, test_path = (os.path.join(args.data_dir, name) for name in (TRAIN_FILE, TEST_FILE))

  estimator = make_estimator(est, model_dir, args.save_checkpoints_steps)
  exporter = est.BestExporter(name="best", serving_input_receiver_fn=serving_input_receiver_fn(est),
                              exports_to_keep=1)
  eval_steps = -(-args.eval_rows // 256)  # whole batches of 256, the last one short
  eval_result, _ = est.train_and_evaluate(
      estimator,
      est.TrainSpec(make_input_fn(train_path, args.batch_size, shuffle=True, num_epochs=None),
                    max_steps=args.train_steps),
      est.EvalSpec(make_input_fn(test_path, 256, shuffle=False, num_epochs=1), steps=eval_steps,
                   exporters=[exporter], throttle_secs=0))

  print(f"\nEvaluation after {eval_result['global_step']} steps "
        f"({min(args.eval_rows, TEST_ROWS)} test rows):")
  for key in ("accuracy", "accuracy_baseline", "auc", "precision", "recall", "loss"):
    print(f"  {key}: {eval_result[key]:.4f}")

  best_dir = os.path.join(model_dir, "export", "best")
  export_dir = os.path.join(best_dir, max(tf.io.gfile.listdir(best_dir))).rstrip("/")
  print(f"Best export: {export_dir}")
  predict = tf.saved_model.load(export_dir).signatures["predict"]
  rows = read_rows(test_path, args.predict_rows)
  outputs = predict(examples=tf.constant([to_example(row) for row in rows]))
  classes = [c.decode() for c in outputs["classes"].numpy()[:, 0]]
  probabilities = outputs["probabilities"].numpy()[:, 1]
  print(f"Predictions of the reloaded export on the first {len(rows)} test rows:")
  for row, predicted, probability in zip(rows, classes, probabilities):
    print(f"  age {row['age']:.0f}, {row['education']}, {row['occupation']}: "
          f"true {row[LABEL]}, predicted {predicted} (P(>50K) = {probability:.3f})")
  correct = sum(row[LABEL] == predicted for row, predicted in zip(rows, classes))
  print(f"Reloaded export's accuracy on them: {correct}/{len(rows)}")


if __name__ == "__main__":
  main()
