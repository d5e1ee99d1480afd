"""`from tensorflow.estimator.export import ServingInputReceiver`: a custom Estimator's export."""
import json
import os
import sys
import tempfile

import numpy as np
import tensorflow as tf
from tensorflow.estimator.export import PredictOutput
from tensorflow.estimator.export import ServingInputReceiver


def model_fn(features, labels, mode):
  bias = tf.compat.v1.get_variable("bias", shape=[], initializer=tf.compat.v1.zeros_initializer())
  predictions = features["x"] + bias
  if mode == tf.estimator.ModeKeys.PREDICT:
    return tf.estimator.EstimatorSpec(
        mode, predictions=predictions,
        export_outputs={"serving_default": PredictOutput({"y": predictions})})
  loss = tf.reduce_mean(tf.square(predictions - labels))
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.2).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def input_fn():
  x = np.arange(8, dtype=np.float32) / 8.0
  return tf.data.Dataset.from_tensor_slices(({"x": x}, x + 1.0)).batch(4).repeat()


def serving_input_fn():
  x = tf.compat.v1.placeholder(tf.float32, [None], name="x")
  return ServingInputReceiver({"x": x}, {"x": x})


def main(argv):
  model_dir = argv[1] if len(argv) > 1 else tempfile.mkdtemp()
  estimator = tf.estimator.Estimator(
      model_fn, model_dir=model_dir, config=tf.estimator.RunConfig(tf_random_seed=12))
  estimator.train(input_fn, steps=5)
  metrics = estimator.evaluate(input_fn, steps=2)
  export_dir = estimator.export_saved_model(os.path.join(model_dir, "export"), serving_input_fn)
  loaded = tf.saved_model.load(export_dir)
  y = loaded.signatures["serving_default"](x=tf.constant([2.0]))["y"]
  print("RESULT " + json.dumps({
      "loss": round(float(metrics["loss"]), 4),
      "global_step": int(metrics["global_step"]),
      "served": round(float(y.numpy()[0]), 4),
      "estimator_module": type(estimator).__module__,
  }, sort_keys=True))


if __name__ == "__main__":
  main(sys.argv)
