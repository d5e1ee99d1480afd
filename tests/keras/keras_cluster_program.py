"""A tf-keras model through model_to_estimator under train_and_evaluate, run as one cluster task.

Started through `python -m estimator_lite.launch` (TF_CONFIG says the role).
Every training task logs where each model variable lives; the chief exports
at the end and says where.
"""
import argparse
import json
import os

import estimator_lite as est
import estimator_lite.keras
import tensorflow as tf


def _example(index):
  x = tf.random.stateless_uniform([4], seed=tf.stack([index, 3]), minval=-1.0, maxval=1.0)
  label = tf.cast(x[0] + x[1] > 0, tf.int64)
  return {"x": x}, tf.reshape(label, [1])


class _DevicesHook(est.SessionRunHook):

  def __init__(self, task):
    self._task = task

  def begin(self):
    devices = {v.op.name: v.device for v in tf.compat.v1.global_variables()}
    tf.compat.v1.logging.info("keras_cluster %s: variable devices %s", self._task,
                              json.dumps(devices, sort_keys=True))


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--model_dir", required=True)
  parser.add_argument("--max_steps", type=int, default=200)
  args = parser.parse_args()
  tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)
  inputs = tf.keras.Input(shape=(4,), name="x")
  hidden = tf.keras.layers.Dense(8, activation="relu", name="hidden")(inputs)
  model = tf.keras.Model(inputs, tf.keras.layers.Dense(1, activation="sigmoid", name="p")(hidden))
  model.compile(optimizer=tf.keras.optimizers.legacy.Adam(0.01), loss="binary_crossentropy",
                metrics=["accuracy"])
  config = est.RunConfig(model_dir=args.model_dir, save_checkpoints_steps=50,
                         experimental_max_worker_delay_secs=1)
  estimator = est.keras.model_to_estimator(model, config=config)
  task = f"{config.task_type}:{config.task_id}"

  def train_input_fn(input_context):
    rows = tf.data.Dataset.range(100000).shard(input_context.num_input_pipelines,
                                               input_context.input_pipeline_id)
    return rows.repeat().map(_example).batch(16)

  train_spec = est.TrainSpec(train_input_fn, max_steps=args.max_steps, hooks=[_DevicesHook(task)])
  eval_spec = est.EvalSpec(lambda: tf.data.Dataset.range(200000, 200064).map(_example).batch(16),
                           steps=4, start_delay_secs=0, throttle_secs=0)
  result = est.train_and_evaluate(estimator, train_spec, eval_spec)
  if config.is_chief:
    def serving():
      x = tf.compat.v1.placeholder(tf.float32, [None, 4], name="x")
      return est.export.ServingInputReceiver({"x": x}, {"x": x})
    export_dir = estimator.export_saved_model(os.path.join(args.model_dir, "export"), serving)
    print(f"keras_cluster {task}: exported {export_dir.decode()} after {result}")


if __name__ == "__main__":
  main()
