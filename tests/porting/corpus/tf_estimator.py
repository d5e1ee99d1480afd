"""tf.estimator.X: a LinearRegressor on feature columns, exported for serving."""
import json
import os
import sys
import tempfile

import numpy as np
import tensorflow as tf


def input_fn():
  rng = np.random.RandomState(0)
  x = rng.rand(32, 2).astype(np.float32)
  y = (x @ np.array([[2.0], [-1.0]], np.float32) + 0.5).astype(np.float32)
  return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).batch(8)


def main(argv):
  model_dir = argv[1] if len(argv) > 1 else tempfile.mkdtemp()
  columns = [tf.feature_column.numeric_column("x", shape=[2])]
  config = tf.estimator.RunConfig(tf_random_seed=1)
  estimator = tf.estimator.LinearRegressor(
      feature_columns=columns, model_dir=model_dir, config=config)
  estimator.train(input_fn, steps=4)
  metrics = estimator.evaluate(input_fn, steps=2)
  spec = tf.feature_column.make_parse_example_spec(columns)
  serving_fn = tf.estimator.export.build_parsing_serving_input_receiver_fn(spec)
  export_dir = estimator.export_saved_model(os.path.join(model_dir, "export"), serving_fn)
  print("RESULT " + json.dumps({
      "loss": round(float(metrics["loss"]), 4),
      "average_loss": round(float(metrics["average_loss"]), 4),
      "global_step": int(metrics["global_step"]),
      "estimator_module": type(estimator).__module__,
      "exported": sorted(tf.io.gfile.listdir(export_dir)),
  }, sort_keys=True))


if __name__ == "__main__":
  main(sys.argv)
