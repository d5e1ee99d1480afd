"""`from tensorflow import estimator`: a custom model_fn Estimator, raw serving export."""
import json
import os
import sys
import tempfile

import numpy as np
import tensorflow as tf
from tensorflow import estimator


def model_fn(features, labels, mode, params):
  weights = tf.compat.v1.get_variable(
      "weights", shape=[2, 1], initializer=tf.compat.v1.glorot_uniform_initializer())
  predictions = tf.matmul(features["x"], weights)
  if mode == estimator.ModeKeys.PREDICT:
    return estimator.EstimatorSpec(
        mode, predictions={"y": predictions},
        export_outputs={"serving_default": estimator.export.PredictOutput({"y": predictions})})
  loss = tf.compat.v1.losses.mean_squared_error(labels, predictions)
  optimizer = tf.compat.v1.train.GradientDescentOptimizer(params["learning_rate"])
  train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
  metrics = {"mae": tf.compat.v1.metrics.mean_absolute_error(labels, predictions)}
  return estimator.EstimatorSpec(mode, loss=loss, train_op=train_op, eval_metric_ops=metrics)


def input_fn():
  rng = np.random.RandomState(3)
  x = rng.rand(24, 2).astype(np.float32)
  y = (x[:, :1] * 3.0 - x[:, 1:]).astype(np.float32)
  return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).batch(6)


def main(argv):
  model_dir = argv[1] if len(argv) > 1 else tempfile.mkdtemp()
  model = estimator.Estimator(
      model_fn, model_dir=model_dir, params={"learning_rate": 0.1},
      config=estimator.RunConfig(tf_random_seed=3))
  model.train(input_fn, max_steps=4)
  metrics = model.evaluate(input_fn, steps=2)
  serving_fn = estimator.export.build_raw_serving_input_receiver_fn(
      {"x": tf.zeros([1, 2], tf.float32)})
  export_dir = model.export_saved_model(os.path.join(model_dir, "export"), serving_fn)
  prediction = next(model.predict(lambda: tf.data.Dataset.from_tensors(
      {"x": np.array([[1.0, 2.0]], np.float32)})))
  print("RESULT " + json.dumps({
      "loss": round(float(metrics["loss"]), 4),
      "mae": round(float(metrics["mae"]), 4),
      "global_step": int(metrics["global_step"]),
      "prediction": round(float(prediction["y"][0]), 4),
      "estimator_module": type(model).__module__,
      "exported": sorted(tf.io.gfile.listdir(export_dir)),
  }, sort_keys=True))


if __name__ == "__main__":
  main(sys.argv)
