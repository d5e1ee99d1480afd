"""tf.compat.v1.estimator.X: a v1 DNNClassifier fed by numpy_input_fn."""
import json
import sys
import tempfile

import numpy as np
import tensorflow as tf


def main(argv):
  model_dir = argv[1] if len(argv) > 1 else tempfile.mkdtemp()
  rng = np.random.RandomState(0)
  x = rng.rand(40, 3).astype(np.float32)
  y = (x.sum(axis=1) > 1.5).astype(np.int64)
  train_input_fn = tf.compat.v1.estimator.inputs.numpy_input_fn(
      {"x": x}, y, batch_size=8, num_epochs=None, shuffle=False)
  eval_input_fn = tf.compat.v1.estimator.inputs.numpy_input_fn(
      {"x": x}, y, batch_size=8, num_epochs=1, shuffle=False)
  columns = [tf.feature_column.numeric_column("x", shape=[3])]
  estimator = tf.compat.v1.estimator.DNNClassifier(
      hidden_units=[4], feature_columns=columns, model_dir=model_dir,
      config=tf.compat.v1.estimator.RunConfig(tf_random_seed=2))
  estimator.train(train_input_fn, steps=5)
  metrics = estimator.evaluate(eval_input_fn)
  print("RESULT " + json.dumps({
      "loss": round(float(metrics["loss"]), 4),
      "accuracy": round(float(metrics["accuracy"]), 4),
      "global_step": int(metrics["global_step"]),
      "estimator_module": type(estimator).__module__,
  }, sort_keys=True))


if __name__ == "__main__":
  main(sys.argv)
