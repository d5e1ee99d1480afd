"""tf.compat.v2.estimator.X: a v2 DNNClassifier with train_and_evaluate."""
import json
import sys
import tempfile

import numpy as np
import tensorflow as tf


def input_fn():
  rng = np.random.RandomState(13)
  x = rng.rand(20, 2).astype(np.float32)
  y = (x[:, 0] + x[:, 1] > 1.0).astype(np.int64)
  return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).batch(5)


def main(argv):
  model_dir = argv[1] if len(argv) > 1 else tempfile.mkdtemp()
  estimator = tf.compat.v2.estimator.DNNClassifier(
      hidden_units=[4], feature_columns=[tf.feature_column.numeric_column("x", shape=[2])],
      model_dir=model_dir, config=tf.compat.v2.estimator.RunConfig(tf_random_seed=13))
  train_spec = tf.compat.v2.estimator.TrainSpec(input_fn, max_steps=4)
  eval_spec = tf.compat.v2.estimator.EvalSpec(input_fn, steps=2, throttle_secs=0)
  metrics, _ = tf.compat.v2.estimator.train_and_evaluate(estimator, train_spec, eval_spec)
  print("RESULT " + json.dumps({
      "loss": round(float(metrics["loss"]), 4),
      "accuracy": round(float(metrics["accuracy"]), 4),
      "global_step": int(metrics["global_step"]),
      "estimator_module": type(estimator).__module__,
  }, sort_keys=True))


if __name__ == "__main__":
  main(sys.argv)
