"""tf.compat.v1.keras.estimator.model_to_estimator: a functional model, name-based checkpoints."""
import json
import sys
import tempfile

import numpy as np
import tensorflow as tf


def main(argv):
  model_dir = argv[1] if len(argv) > 1 else tempfile.mkdtemp()
  inputs = tf.keras.Input(shape=(3,), name="features")
  hidden = tf.keras.layers.Dense(
      2, activation="relu", kernel_initializer=tf.keras.initializers.Constant(0.3))(inputs)
  outputs = tf.keras.layers.Dense(
      1, kernel_initializer=tf.keras.initializers.Constant(-0.2))(hidden)
  model = tf.keras.Model(inputs, outputs)
  model.compile(optimizer=tf.keras.optimizers.SGD(0.05), loss="mse", metrics=["mae"])
  estimator = tf.compat.v1.keras.estimator.model_to_estimator(
      keras_model=model, model_dir=model_dir,
      config=tf.compat.v1.estimator.RunConfig(tf_random_seed=15))
  rng = np.random.RandomState(15)
  x = rng.rand(12, 3).astype(np.float32)
  y = x.sum(axis=1, keepdims=True).astype(np.float32)

  def input_fn():
    return tf.data.Dataset.from_tensor_slices(({"features": x}, y)).batch(4)

  estimator.train(input_fn, steps=3)
  metrics = estimator.evaluate(input_fn, steps=3)
  print("RESULT " + json.dumps({
      "loss": round(float(metrics["loss"]), 4),
      "mae": round(float(metrics["mae"]), 4),
      "global_step": int(metrics["global_step"]),
      "checkpoint_variables": sorted(
          name for name, _ in tf.train.list_variables(model_dir)
          if not name.startswith("training/")),
      "estimator_module": type(estimator).__module__,
  }, sort_keys=True))


if __name__ == "__main__":
  main(sys.argv)
