"""A tiny train_and_evaluate program for the launcher's network tests: one task of a cluster.

The training tasks wait, after their session is created (so their servers are
up and connected), until `--release_file` exists: the test probes the tasks'
ports in that window, then releases them. The evaluator exports the final
model (FinalExporter) into model_dir/export/final/.
"""
import argparse
import os
import time

import tensorflow as tf

import estimator_lite as est

_RELEASE_TIMEOUT_SECS = 120


class _WaitForRelease(tf.compat.v1.train.SessionRunHook):
  """Holds a training task before its first step until the release file exists."""

  def __init__(self, path):
    self._path = path

  def after_create_session(self, session, coord):
    deadline = time.monotonic() + _RELEASE_TIMEOUT_SECS
    while not os.path.exists(self._path) and time.monotonic() < deadline:
      time.sleep(0.05)


def _model_fn(features, labels, mode, params):
  weight = tf.compat.v1.get_variable("weight", [1, 1])
  prediction = tf.matmul(features["x"], weight)
  if mode == est.ModeKeys.PREDICT:
    return est.EstimatorSpec(mode, predictions={"y": prediction})
  loss = tf.compat.v1.losses.mean_squared_error(labels, prediction)
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  return est.EstimatorSpec(
      mode, loss=loss, train_op=train_op,
      training_hooks=[_WaitForRelease(params["release_file"])],
      eval_metric_ops={"mae": tf.compat.v1.metrics.mean_absolute_error(labels, prediction)})


def _input_fn():
  return tf.data.Dataset.from_tensors(({"x": [[1.0]]}, [[2.0]])).repeat()


def _serving_input_fn():
  x = tf.compat.v1.placeholder(tf.float32, [None, 1], name="x")
  return est.export.ServingInputReceiver({"x": x}, {"x": x})


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--model_dir", required=True)
  parser.add_argument("--release_file", required=True)
  parser.add_argument("--max_steps", type=int, default=40)
  args = parser.parse_args()
  estimator = est.Estimator(
      _model_fn, model_dir=args.model_dir, params={"release_file": args.release_file},
      config=est.RunConfig(save_checkpoints_steps=20, experimental_max_worker_delay_secs=0))
  est.train_and_evaluate(
      estimator, est.TrainSpec(_input_fn, max_steps=args.max_steps),
      est.EvalSpec(_input_fn, steps=1, start_delay_secs=0, throttle_secs=0,
                   exporters=[est.FinalExporter("final", _serving_input_fn)]))


if __name__ == "__main__":
  main()
