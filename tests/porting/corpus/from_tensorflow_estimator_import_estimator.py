"""`from tensorflow_estimator import estimator`: the v1 API, a BaselineClassifier and hooks."""
import json
import sys
import tempfile

import numpy as np
from tensorflow_estimator import estimator


def main(argv):
  model_dir = argv[1] if len(argv) > 1 else tempfile.mkdtemp()
  x = np.zeros((12, 1), np.float32)
  y = np.array([0, 1, 2, 1, 1, 2] * 2, np.int64)
  input_fn = estimator.inputs.numpy_input_fn(
      {"x": x}, y, batch_size=4, num_epochs=None, shuffle=False)
  model = estimator.BaselineClassifier(
      n_classes=3, model_dir=model_dir, config=estimator.RunConfig(tf_random_seed=6))
  model.train(input_fn, steps=3, hooks=[estimator.StopAtStepHook(last_step=3)])
  metrics = model.evaluate(input_fn, steps=3)
  print("RESULT " + json.dumps({
      "loss": round(float(metrics["loss"]), 4),
      "accuracy": round(float(metrics["accuracy"]), 4),
      "global_step": int(metrics["global_step"]),
      "estimator_module": type(model).__module__,
  }, sort_keys=True))


if __name__ == "__main__":
  main(sys.argv)
