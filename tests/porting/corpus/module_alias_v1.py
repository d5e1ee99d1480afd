"""A module alias: `v1 = tf.compat.v1`, then `v1.estimator.inputs.numpy_input_fn`."""
import json
import sys
import tempfile

import numpy as np
import tensorflow as tf

v1 = tf.compat.v1


def main(argv):
  model_dir = argv[1] if len(argv) > 1 else tempfile.mkdtemp()
  rng = np.random.RandomState(7)
  x = rng.rand(16, 1).astype(np.float32)
  y = (4.0 * x + 1.0).astype(np.float32)
  input_fn = v1.estimator.inputs.numpy_input_fn(
      {"x": x}, y, batch_size=4, num_epochs=None, shuffle=False)
  estimator = v1.estimator.LinearRegressor(
      feature_columns=[tf.feature_column.numeric_column("x")], model_dir=model_dir,
      config=v1.estimator.RunConfig(tf_random_seed=7))
  estimator.train(input_fn, steps=5)
  metrics = estimator.evaluate(input_fn, steps=2)
  print("RESULT " + json.dumps({
      "loss": round(float(metrics["loss"]), 4),
      "average_loss": round(float(metrics["average_loss"]), 4),
      "global_step": int(metrics["global_step"]),
      "estimator_module": type(estimator).__module__,
  }, sort_keys=True))


if __name__ == "__main__":
  main(sys.argv)
