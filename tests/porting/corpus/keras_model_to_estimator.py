"""tf.keras.estimator.model_to_estimator: a compiled Sequential model as an Estimator."""
import json
import sys
import tempfile

import numpy as np
import tensorflow as tf


def main(argv):
  model_dir = argv[1] if len(argv) > 1 else tempfile.mkdtemp()
  tf.random.set_seed(8)
  model = tf.keras.Sequential([
      tf.keras.layers.Dense(
          1, input_shape=(2,), name="dense",
          kernel_initializer=tf.keras.initializers.Constant(0.5)),
  ])
  model.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss="mse")
  estimator = tf.keras.estimator.model_to_estimator(
      keras_model=model, model_dir=model_dir,
      config=tf.estimator.RunConfig(tf_random_seed=8))
  rng = np.random.RandomState(8)
  x = rng.rand(16, 2).astype(np.float32)
  y = (x[:, :1] + x[:, 1:]).astype(np.float32)
  input_name = model.input_names[0]

  def input_fn():
    return tf.data.Dataset.from_tensor_slices(({input_name: x}, y)).batch(4)

  estimator.train(input_fn, steps=4)
  metrics = estimator.evaluate(input_fn, steps=2)
  print("RESULT " + json.dumps({
      "loss": round(float(metrics["loss"]), 4),
      "global_step": int(metrics["global_step"]),
      "estimator_module": type(estimator).__module__,
  }, sort_keys=True))


if __name__ == "__main__":
  main(sys.argv)
