"""`from tensorflow.compat.v1 import estimator`: a v1 DNNLinearCombinedClassifier."""
import json
import sys
import tempfile

import numpy as np
import tensorflow as tf
from tensorflow.compat.v1 import estimator


def main(argv):
  model_dir = argv[1] if len(argv) > 1 else tempfile.mkdtemp()
  rng = np.random.RandomState(10)
  x = rng.rand(24, 2).astype(np.float32)
  y = (x[:, 0] > 0.5).astype(np.int64)
  input_fn = estimator.inputs.numpy_input_fn(
      {"x": x}, y, batch_size=6, num_epochs=None, shuffle=False)
  column = tf.feature_column.numeric_column("x", shape=[2])
  model = estimator.DNNLinearCombinedClassifier(
      linear_feature_columns=[column], dnn_feature_columns=[column],
      dnn_hidden_units=[3], model_dir=model_dir,
      config=estimator.RunConfig(tf_random_seed=10))
  model.train(input_fn, steps=4)
  metrics = model.evaluate(input_fn, steps=2)
  print("RESULT " + json.dumps({
      "loss": round(float(metrics["loss"]), 4),
      "accuracy": round(float(metrics["accuracy"]), 4),
      "global_step": int(metrics["global_step"]),
      "estimator_module": type(model).__module__,
  }, sort_keys=True))


if __name__ == "__main__":
  main(sys.argv)
