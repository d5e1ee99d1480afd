"""Writes tests/data/keras/model_to_estimator_expected.json: what tf.estimator 2.15's
`tf.keras.estimator.model_to_estimator` does with the models of tests/keras/keras_cases.py.

Runs ONLY under the reference environment (TensorFlow 2.15 + tensorflow-estimator
2.15, Python 3.11). Regenerate the committed fixture from the repository root with:

    ~/.cache/estimator_lite/ref-venv-2.15/bin/python \
        tests/reference/make_keras_fixture.py tests/data/keras/model_to_estimator_expected.json

For each case (a model, a checkpoint format, the input form) it records: the
Keras model's own `evaluate`, the Estimator's evaluation of the warm-start
checkpoint it wrote under model_dir/keras/ (before any training), its
evaluation and predictions after STEPS training steps, the variable names and
shapes of both checkpoints, and the exported SavedModel's signatures and
serving_default outputs after `tf.saved_model.load`. "errors" holds the
exception type and text of invalid calls.
"""
import json
import os
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "keras"))

import keras_cases  # pylint: disable=g-import-not-at-top,wrong-import-position


def _require_reference_tf():
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if not tf.__version__.startswith("2.15.") or not hasattr(tf, "estimator"):
    sys.exit(f"make_keras_fixture.py must run under TensorFlow 2.15 with "
             f"tensorflow-estimator (found TensorFlow {tf.__version__}).")
  return tf


def _listing(path):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return sorted([name, list(shape)] for name, shape in tf.train.list_variables(path))


def _floats(values):
  return {k: float(v) for k, v in values.items()}


def run_case(tf, name, model, features, labels, checkpoint_format, serving, **kwargs):
  """Trains, evaluates, predicts and exports one model; returns what 2.15 produced."""
  keras_eval = model.evaluate(features, labels, batch_size=keras_cases.N, verbose=0,
                              return_dict=True)
  model_dir = tempfile.mkdtemp(prefix=f"keras_{name}_")
  estimator = tf.keras.estimator.model_to_estimator(
      keras_model=model, model_dir=model_dir, checkpoint_format=checkpoint_format,
      config=tf.estimator.RunConfig(tf_random_seed=1), **kwargs)

  def input_fn():
    return tf.data.Dataset.from_tensors((features, labels)).repeat()

  result = {"keras_evaluate": _floats(keras_eval)}
  keras_ckpt = os.path.join(model_dir, "keras", "keras_model.ckpt")
  if tf.io.gfile.exists(keras_ckpt + ".index"):
    result["keras_checkpoint"] = _listing(keras_ckpt)
    result["evaluate_warm_start"] = _floats(
        estimator.evaluate(input_fn, steps=1, checkpoint_path=keras_ckpt))
  estimator.train(input_fn, steps=keras_cases.STEPS)
  result["evaluate"] = _floats(estimator.evaluate(input_fn, steps=1))
  predictions = list(estimator.predict(
      lambda: tf.data.Dataset.from_tensors(features)))
  result["predictions"] = {k: [p[k].tolist() for p in predictions] for k in predictions[0]}
  result["checkpoint"] = _listing(estimator.latest_checkpoint())
  export_dir = estimator.export_saved_model(os.path.join(model_dir, "export"), serving(tf))
  loaded = tf.saved_model.load(export_dir.decode())
  result["signatures"] = sorted(loaded.signatures.keys())
  inputs = features if isinstance(features, dict) else {"x": features}
  outputs = loaded.signatures["serving_default"](**{k: tf.constant(v) for k, v in inputs.items()})
  result["serving_default"] = {k: v.numpy().tolist() for k, v in outputs.items()}
  return result


def _serve_x(tf):
  def fn():
    x = tf.compat.v1.placeholder(tf.float32, [None, 4], name="x")
    return tf.estimator.export.TensorServingInputReceiver(x, {"x": x})
  return fn


def _serve_ab(tf):
  def fn():
    features = {"a": tf.compat.v1.placeholder(tf.float32, [None, 2], name="a"),
                "b": tf.compat.v1.placeholder(tf.float32, [None, 3], name="b")}
    return tf.estimator.export.ServingInputReceiver(features, features)
  return fn


def _error(fn):
  try:
    fn()
  except Exception as e:  # pylint: disable=broad-except
    return [type(e).__name__, str(e)]
  return None


def main(argv):
  tf = _require_reference_tf()
  d = keras_cases.data()
  cases = {}
  for fmt in ("checkpoint", "saver"):
    cases[f"sequential_{fmt}"] = run_case(
        tf, f"sequential_{fmt}", keras_cases.sequential(tf), d["x"], d["y_class"], fmt, _serve_x)
  cases["functional_dict_checkpoint"] = run_case(
      tf, "functional", keras_cases.functional(tf), {"a": d["a"], "b": d["b"]}, d["y_reg"],
      "checkpoint", _serve_ab, metric_names_map={"mae": "mean_abs", "rmse": "root_mse"},
      export_outputs={"out": tf.estimator.export.RegressionOutput})
  cases["functional_list_saver"] = run_case(
      tf, "functional_list", keras_cases.functional(tf), {"a": d["a"], "b": d["b"]},
      {"out": d["y_reg"]}, "saver", _serve_ab)
  model, custom = keras_cases.subclassed(tf)
  cases["subclassed_saver"] = run_case(
      tf, "subclassed", model, d["x"], d["y_class"], "saver", _serve_x, custom_objects=custom)

  m2e = tf.keras.estimator.model_to_estimator
  seq = keras_cases.sequential(tf)
  uncompiled = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(2,))])
  sub, custom = keras_cases.subclassed(tf)
  errors = {
      "neither": _error(lambda: m2e()),
      "both": _error(lambda: m2e(keras_model=seq, keras_model_path="/tmp/x.h5")),
      "uncompiled": _error(lambda: m2e(keras_model=uncompiled)),
      "bad_format": _error(lambda: m2e(keras_model=seq, checkpoint_format="h5")),
      "subclassed_checkpoint": _error(lambda: m2e(keras_model=sub, custom_objects=custom)),
  }
  # A fresh model for each call: a failed call leaves 2.15's model half-converted.
  fun = lambda: keras_cases.functional(tf)  # pylint: disable=unnecessary-lambda-assignment

  def missing_feature():
    est = m2e(keras_model=fun(), model_dir=tempfile.mkdtemp())
    est.train(lambda: tf.data.Dataset.from_tensors(({"a": d["a"]}, d["y_reg"])), steps=1)

  def bad_metric_map():
    est = m2e(keras_model=fun(), model_dir=tempfile.mkdtemp(), metric_names_map={"mae": "m"})
    est.evaluate(lambda: tf.data.Dataset.from_tensors(({"a": d["a"], "b": d["b"]}, d["y_reg"])),
                 steps=1)

  def extra_metric_map():
    est = m2e(keras_model=fun(), model_dir=tempfile.mkdtemp(),
              metric_names_map={"mae": "m", "rmse": "r", "nope": "n"})
    est.evaluate(lambda: tf.data.Dataset.from_tensors(({"a": d["a"], "b": d["b"]}, d["y_reg"])),
                 steps=1)

  def bad_export_outputs():
    est = m2e(keras_model=fun(), model_dir=tempfile.mkdtemp(),
              export_outputs={"nope": tf.estimator.export.RegressionOutput})
    est.train(lambda: tf.data.Dataset.from_tensors(({"a": d["a"], "b": d["b"]}, d["y_reg"])),
              steps=1)

  errors["missing_feature"] = _error(missing_feature)
  errors["metric_names_map_missing"] = _error(bad_metric_map)
  errors["metric_names_map_extra"] = _error(extra_metric_map)
  errors["export_outputs_unknown"] = _error(bad_export_outputs)
  out = {"tensorflow": tf.__version__, "cases": cases, "errors": errors}
  with open(argv[1], "w") as f:
    json.dump(out, f, indent=1, sort_keys=True)
    f.write("\n")


if __name__ == "__main__":
  main(sys.argv)
