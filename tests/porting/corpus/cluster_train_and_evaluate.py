"""train_and_evaluate on whatever cluster TF_CONFIG describes (or alone without it).

Every task runs this same program; the chief (or the lone process) evaluates
the final checkpoint and prints the RESULT line.
"""
import argparse
import json
import tempfile

import numpy as np
import tensorflow as tf


def input_fn():
  rng = np.random.RandomState(14)
  x = rng.rand(32, 2).astype(np.float32)
  y = (x @ np.array([[1.0], [3.0]], np.float32) - 0.5).astype(np.float32)
  return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).batch(8).repeat()


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--model_dir", default=None)
  parser.add_argument("--max_steps", type=int, default=5)
  args = parser.parse_args()
  model_dir = args.model_dir or tempfile.mkdtemp()
  config = tf.estimator.RunConfig(tf_random_seed=14, save_checkpoints_steps=100)
  estimator = tf.estimator.LinearRegressor(
      feature_columns=[tf.feature_column.numeric_column("x", shape=[2])],
      model_dir=model_dir, config=config)
  train_spec = tf.estimator.TrainSpec(input_fn, max_steps=args.max_steps)
  eval_spec = tf.estimator.EvalSpec(input_fn, steps=2, start_delay_secs=0, throttle_secs=0)
  tf.estimator.train_and_evaluate(estimator, train_spec, eval_spec)
  print("task %s:%d finished" % (config.task_type, config.task_id))
  if config.is_chief:
    metrics = estimator.evaluate(input_fn, steps=2, name="final")
    print("RESULT " + json.dumps({
        "loss": round(float(metrics["loss"]), 4),
        "global_step": int(metrics["global_step"]),
        "num_workers": config.num_worker_replicas,
        "num_ps": config.num_ps_replicas,
        "estimator_module": type(estimator).__module__,
    }, sort_keys=True))


if __name__ == "__main__":
  main()
