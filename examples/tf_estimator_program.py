"""A program written for tf.estimator 2.15, not edited for estimator_lite.

It runs on TensorFlow 2.15 with tensorflow-estimator as it is, and on
TensorFlow 2.21 with estimator_lite in the three ways README, "Porting a
program", gives:

    .venv/bin/python -m estimator_lite.run examples/tf_estimator_program.py --model_dir DIR
    .venv/bin/python -m estimator_lite.migrate examples/tf_estimator_program.py --diff

(or after `estimator_lite.install()` in a notebook). It fits y = 2x + 1 with a
canned `LinearRegressor`, evaluates it and exports a SavedModel.
"""
import argparse

import numpy as np
import tensorflow as tf

_NUM_EXAMPLES = 256


def input_fn(shuffle: bool, repeat: bool) -> tf.data.Dataset:
  """The points of y = 2x + 1, batched: tf.estimator's input_fn contract."""
  x = np.linspace(-1.0, 1.0, _NUM_EXAMPLES, dtype=np.float32)
  dataset = tf.data.Dataset.from_tensor_slices(({"x": x}, 2.0 * x + 1.0))
  if shuffle:
    dataset = dataset.shuffle(_NUM_EXAMPLES, seed=0)
  if repeat:
    dataset = dataset.repeat()
  return dataset.batch(32)


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--model_dir", required=True, help="where checkpoints go")
  parser.add_argument("--max_steps", type=int, default=300)
  args = parser.parse_args()

  tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)
  regressor = tf.estimator.LinearRegressor(
      feature_columns=[tf.feature_column.numeric_column("x")],
      model_dir=args.model_dir,
      optimizer="SGD",
      config=tf.estimator.RunConfig(tf_random_seed=0))
  regressor.train(lambda: input_fn(shuffle=True, repeat=True), max_steps=args.max_steps)
  metrics = regressor.evaluate(lambda: input_fn(shuffle=False, repeat=False))
  print(f"average_loss: {metrics['average_loss']:.3g} at step {metrics['global_step']}")

  serving_fn = tf.estimator.export.build_parsing_serving_input_receiver_fn(
      {"x": tf.io.FixedLenFeature([1], tf.float32)})
  export_dir = regressor.export_saved_model(f"{args.model_dir}/export", serving_fn)
  print(f"Exported SavedModel: {export_dir.decode()}")


if __name__ == "__main__":
  main()
