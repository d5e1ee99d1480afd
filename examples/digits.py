"""Train and evaluate a digit classifier with estimator_lite on scikit-learn's bundled digits.

The data (1,797 8x8 images of handwritten digits) ships inside scikit-learn, so
this runs offline. It is a plain tf.estimator program: only the import changed.

    python examples/digits.py [--model_dir DIR] [--max_steps N]
"""
import argparse
import os
import tempfile

import numpy as np
import tensorflow as tf
from sklearn import datasets

import estimator_lite as est  # was: tf.estimator

NUM_CLASSES = 10
_EVAL_FRACTION = 0.2


def load_digits(seed=0):
  """Returns ((train_x, train_y), (eval_x, eval_y)) as float32 / int32 arrays."""
  digits = datasets.load_digits()
  x = (digits.data / 16.0).astype(np.float32)
  y = digits.target.astype(np.int32)
  order = np.random.RandomState(seed).permutation(len(x))
  split = int(len(x) * (1 - _EVAL_FRACTION))
  train, test = order[:split], order[split:]
  return (x[train], y[train]), (x[test], y[test])


def make_input_fn(x, y, batch_size, shuffle, repeat):
  """An input_fn over in-memory arrays (small: embedding them in the graph is fine)."""
  def input_fn(params):
    del params
    dataset = tf.data.Dataset.from_tensor_slices(({"pixels": x}, y))
    if shuffle:
      dataset = dataset.shuffle(len(x), seed=1)
    if repeat:
      dataset = dataset.repeat()
    return dataset.batch(batch_size)
  return input_fn


def model_fn(features, labels, mode, params):
  """A two-layer perceptron written with tf.compat.v1 ops, as TF 1.x programs were."""
  net = features["pixels"]
  for units in params["hidden_units"]:
    net = tf.compat.v1.layers.dense(net, units, activation=tf.nn.relu)
  logits = tf.compat.v1.layers.dense(net, NUM_CLASSES)
  classes = tf.argmax(logits, axis=1, output_type=tf.int32)
  predictions = {"class_ids": classes, "probabilities": tf.nn.softmax(logits)}
  if mode == est.ModeKeys.PREDICT:
    return est.EstimatorSpec(mode, predictions=predictions)
  loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
  if mode == est.ModeKeys.EVAL:
    metrics = {"accuracy": tf.compat.v1.metrics.accuracy(labels, classes)}
    return est.EstimatorSpec(mode, loss=loss, eval_metric_ops=metrics)
  optimizer = tf.compat.v1.train.AdamOptimizer(params["learning_rate"])
  train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
  return est.EstimatorSpec(mode, loss=loss, train_op=train_op)


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--model_dir", default=None,
                      help="where checkpoints go (default: a new temporary directory)")
  parser.add_argument("--max_steps", type=int, default=1000)
  args = parser.parse_args()
  tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)
  model_dir = args.model_dir or tempfile.mkdtemp(prefix="digits_")

  (train_x, train_y), (eval_x, eval_y) = load_digits()
  estimator = est.Estimator(
      model_fn, model_dir=model_dir,
      config=est.RunConfig(save_checkpoints_steps=500, tf_random_seed=42),
      params={"hidden_units": [64, 32], "learning_rate": 0.01})
  estimator.train(make_input_fn(train_x, train_y, 64, shuffle=True, repeat=True),
                  max_steps=args.max_steps)
  metrics = estimator.evaluate(make_input_fn(eval_x, eval_y, 128, shuffle=False, repeat=False))
  first = next(estimator.predict(make_input_fn(eval_x[:1], None, 1, shuffle=False, repeat=False)))

  print(f"\nEvaluation on {len(eval_x)} held-out digits:")
  for key in sorted(metrics):
    print(f"  {key}: {metrics[key]}")
  print(f"First held-out digit: true {eval_y[0]}, predicted {first['class_ids']}")
  print(f"Checkpoints are in {os.path.abspath(model_dir)} "
        f"(latest: {estimator.latest_checkpoint()})")


if __name__ == "__main__":
  main()
