"""An unmodified tf.estimator 2.15 TPUEstimator program (use_tpu=False) with train_and_evaluate.

Run by tests/tpu/test_tpu_cluster.py as every task of a cluster through the
launcher, each task as `python -m estimator_lite.run tpu_cluster_program.py`:
TF_CONFIG says the role (ps, chief, worker, evaluator). It names only
tf.estimator's API (`tf.compat.v1.estimator.tpu`, `tf.estimator`), as a
program written for 2.15 does. Each trainer logs where the model's variables
live; the chief says where it exported.
"""
import argparse
import json

import numpy as np
import tensorflow as tf

tpu = tf.compat.v1.estimator.tpu


def input_fn(params):
  angles = np.arange(32, dtype=np.float32)
  x = np.stack([np.sin(angles), np.cos(angles)], axis=1)
  y = (x[:, 0] > x[:, 1]).astype(np.int32)
  return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat().batch(
      params["batch_size"], drop_remainder=True)


def eval_input_fn(params):
  return input_fn(params).take(4)


def model_fn(features, labels, mode, params):
  logits = tf.compat.v1.layers.dense(
      features["x"], 2, name="logits", kernel_initializer=tf.compat.v1.zeros_initializer())
  if mode == tf.estimator.ModeKeys.PREDICT:
    return tpu.TPUEstimatorSpec(mode, predictions={"classes": tf.argmax(logits, 1)})
  loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
  optimizer = tf.compat.v1.train.GradientDescentOptimizer(params["learning_rate"])
  if params["use_tpu"]:
    optimizer = tf.compat.v1.tpu.CrossShardOptimizer(optimizer)
  train_op = optimizer.minimize(loss, tf.compat.v1.train.get_global_step())

  def metric_fn(labels, logits):
    return {"accuracy": tf.compat.v1.metrics.accuracy(labels, tf.argmax(logits, 1))}

  return tpu.TPUEstimatorSpec(mode, loss=loss, train_op=train_op,
                              eval_metrics=(metric_fn, [labels, logits]),
                              training_hooks=[DevicesHook()])


class DevicesHook(tf.compat.v1.train.SessionRunHook):
  """Logs the device of each model variable once (for the test to read)."""

  def begin(self):
    devices = {v.op.name: v.device for v in tf.compat.v1.global_variables()}
    print("variable devices " + json.dumps(devices), flush=True)


def serving_input_receiver_fn():
  x = tf.compat.v1.placeholder(tf.float32, [None, 2], name="x")
  return tf.estimator.export.ServingInputReceiver({"x": x}, {"x": x})


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--model_dir", required=True)
  parser.add_argument("--max_steps", type=int, default=200)
  args = parser.parse_args()
  config = tpu.RunConfig(model_dir=args.model_dir, save_checkpoints_steps=50,
                         tpu_config=tpu.TPUConfig(iterations_per_loop=10))
  estimator = tpu.TPUEstimator(model_fn=model_fn, config=config, use_tpu=False,
                               params={"learning_rate": 0.5}, train_batch_size=8,
                               eval_batch_size=8, export_to_tpu=False)
  exporter = tf.estimator.LatestExporter("latest", serving_input_receiver_fn)
  tf.estimator.train_and_evaluate(
      estimator, tf.estimator.TrainSpec(input_fn, max_steps=args.max_steps),
      tf.estimator.EvalSpec(eval_input_fn, steps=None, start_delay_secs=0, throttle_secs=0,
                            exporters=[exporter]))


if __name__ == "__main__":
  main()
