"""`import tensorflow_estimator as tfe; tfe.estimator.X`: the v1 DNNRegressor and numpy inputs."""
import json
import sys
import tempfile

import numpy as np
import tensorflow as tf
import tensorflow_estimator as tfe


def main(argv):
  model_dir = argv[1] if len(argv) > 1 else tempfile.mkdtemp()
  rng = np.random.RandomState(5)
  x = rng.rand(30, 2).astype(np.float32)
  y = (x[:, 0] - 2.0 * x[:, 1]).reshape(-1, 1).astype(np.float32)
  input_fn = tfe.estimator.inputs.numpy_input_fn(
      {"x": x}, y, batch_size=10, num_epochs=None, shuffle=False)
  estimator = tfe.estimator.DNNRegressor(
      hidden_units=[3], feature_columns=[tf.feature_column.numeric_column("x", shape=[2])],
      model_dir=model_dir, config=tfe.estimator.RunConfig(tf_random_seed=5))
  estimator.train(input_fn, steps=4)
  metrics = estimator.evaluate(input_fn, steps=2)
  print("RESULT " + json.dumps({
      "loss": round(float(metrics["loss"]), 4),
      "average_loss": round(float(metrics["average_loss"]), 4),
      "global_step": int(metrics["global_step"]),
      "estimator_module": type(estimator).__module__,
  }, sort_keys=True))


if __name__ == "__main__":
  main(sys.argv)
