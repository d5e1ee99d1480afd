"""`import tensorflow.compat.v1 as tf`, then tf.estimator.X (the v1 API)."""
import json
import sys
import tempfile

import numpy as np
import tensorflow.compat.v1 as tf


def model_fn(features, labels, mode):
  logits = tf.layers.dense(features["x"], 2, name="logits",
                           kernel_initializer=tf.glorot_uniform_initializer())
  predictions = tf.argmax(logits, axis=1)
  loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
  train_op = tf.train.AdagradOptimizer(0.5).minimize(
      loss, global_step=tf.train.get_global_step())
  metrics = {"accuracy": tf.metrics.accuracy(labels, predictions)}
  return tf.estimator.EstimatorSpec(
      mode, predictions={"class": predictions}, loss=loss, train_op=train_op,
      eval_metric_ops=metrics)


def main(argv):
  model_dir = argv[1] if len(argv) > 1 else tempfile.mkdtemp()
  rng = np.random.RandomState(9)
  x = rng.rand(20, 3).astype(np.float32)
  y = (x[:, 0] > x[:, 1]).astype(np.int32)
  input_fn = tf.estimator.inputs.numpy_input_fn(
      {"x": x}, y, batch_size=5, num_epochs=None, shuffle=False)
  estimator = tf.estimator.Estimator(
      model_fn, model_dir=model_dir, config=tf.estimator.RunConfig(tf_random_seed=9))
  estimator.train(input_fn, steps=4)
  metrics = estimator.evaluate(input_fn, steps=2)
  print("RESULT " + json.dumps({
      "loss": round(float(metrics["loss"]), 4),
      "accuracy": round(float(metrics["accuracy"]), 4),
      "global_step": int(metrics["global_step"]),
      "estimator_module": type(estimator).__module__,
  }, sort_keys=True))


if __name__ == "__main__":
  main(sys.argv)
