"""`from tensorflow.estimator import export`: a receiver built with export.ServingInputReceiver."""
import json
import os
import sys
import tempfile

import numpy as np
import tensorflow as tf
from tensorflow.estimator import export


def serving_input_fn():
  x = tf.compat.v1.placeholder(tf.float32, [None, 1], name="x")
  return export.ServingInputReceiver({"x": x}, {"x": x})


def input_fn():
  x = np.linspace(0.0, 1.0, 12, dtype=np.float32).reshape(-1, 1)
  return tf.data.Dataset.from_tensor_slices(({"x": x}, 2.0 * x)).batch(4)


def main(argv):
  model_dir = argv[1] if len(argv) > 1 else tempfile.mkdtemp()
  estimator = tf.estimator.LinearRegressor(
      feature_columns=[tf.feature_column.numeric_column("x")], model_dir=model_dir,
      config=tf.estimator.RunConfig(tf_random_seed=11))
  estimator.train(input_fn, steps=3)
  metrics = estimator.evaluate(input_fn, steps=1)
  export_dir = estimator.export_saved_model(os.path.join(model_dir, "export"), serving_input_fn)
  loaded = tf.saved_model.load(export_dir)
  prediction = loaded.signatures["predict"](x=tf.constant([[1.0]]))["predictions"]
  print("RESULT " + json.dumps({
      "loss": round(float(metrics["loss"]), 4),
      "global_step": int(metrics["global_step"]),
      "prediction": round(float(prediction.numpy()[0][0]), 4),
      "signatures": sorted(loaded.signatures.keys()),
      "estimator_module": type(estimator).__module__,
  }, sort_keys=True))


if __name__ == "__main__":
  main(sys.argv)
