"""`from tensorflow.estimator import RunConfig, ...`: a LinearClassifier on categorical data."""
import json
import sys
import tempfile

import numpy as np
import tensorflow as tf
from tensorflow.estimator import LinearClassifier
from tensorflow.estimator import ModeKeys
from tensorflow.estimator import RunConfig


def input_fn():
  colors = np.array([b"red", b"green", b"blue", b"red"] * 5)
  sizes = np.arange(20, dtype=np.float32).reshape(-1, 1) / 20.0
  labels = np.array([1, 0, 0, 1] * 5, np.int64)
  return tf.data.Dataset.from_tensor_slices(
      ({"color": colors, "size": sizes}, labels)).batch(5)


def main(argv):
  model_dir = argv[1] if len(argv) > 1 else tempfile.mkdtemp()
  columns = [
      tf.feature_column.categorical_column_with_vocabulary_list(
          "color", ["red", "green", "blue"]),
      tf.feature_column.numeric_column("size"),
  ]
  estimator = LinearClassifier(
      feature_columns=columns, model_dir=model_dir,
      config=RunConfig(tf_random_seed=4, save_summary_steps=2))
  estimator.train(input_fn, steps=3)
  metrics = estimator.evaluate(input_fn, steps=2)
  print("RESULT " + json.dumps({
      "loss": round(float(metrics["loss"]), 4),
      "accuracy": round(float(metrics["accuracy"]), 4),
      "global_step": int(metrics["global_step"]),
      "eval_key": ModeKeys.EVAL,
      "estimator_module": type(estimator).__module__,
  }, sort_keys=True))


if __name__ == "__main__":
  main(sys.argv)
