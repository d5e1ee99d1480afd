"""model_to_estimator against tf.estimator 2.15's results on the same models and data.

tests/data/keras/model_to_estimator_expected.json was written by
tests/reference/make_keras_fixture.py under TensorFlow 2.15 from the models of
keras_cases.py (fixed initial weights): both sides train, evaluate, predict
and export them, and must agree on the numbers, metric keys, prediction keys,
checkpoint variable names and error texts.
"""
from __future__ import annotations

import json
import os
import sys
from typing import Any, Callable, Dict

import numpy as np
import pytest

import estimator_lite as est
import estimator_lite.keras
import estimator_lite.keras.v1
import tensorflow as tf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import keras_cases  # pylint: disable=g-import-not-at-top,wrong-import-position

_FIXTURE = os.path.join(os.path.dirname(__file__), "..", "data", "keras",
                        "model_to_estimator_expected.json")
with open(_FIXTURE) as _f:
  EXPECTED = json.load(_f)
DATA = keras_cases.data()
TOL = dict(rtol=1e-5, atol=1e-6)


def _listing(path: str) -> list:
  return sorted([name, list(shape)] for name, shape in tf.train.list_variables(path))


def _serve_x() -> Any:
  x = tf.compat.v1.placeholder(tf.float32, [None, 4], name="x")
  return est.export.TensorServingInputReceiver(x, {"x": x})


def _serve_ab() -> Any:
  features = {"a": tf.compat.v1.placeholder(tf.float32, [None, 2], name="a"),
              "b": tf.compat.v1.placeholder(tf.float32, [None, 3], name="b")}
  return est.export.ServingInputReceiver(features, features)


def _close(actual: Dict[str, Any], expected: Dict[str, Any]) -> None:
  assert sorted(actual) == sorted(expected)
  for key, value in expected.items():
    np.testing.assert_allclose(actual[key], value, **TOL, err_msg=key)


def assert_matches_tf215(name: str, model: Any, features: Any, labels: Any, fmt: str,
                         serving: Callable[[], Any], model_dir: str,
                         compare_numbers: bool = True, **kwargs: Any) -> None:
  """Does what make_keras_fixture.run_case did in 2.15 and compares each result."""
  expected = EXPECTED["cases"][name]
  keras_eval = model.evaluate(features, labels, batch_size=keras_cases.N, verbose=0,
                              return_dict=True)
  if compare_numbers:
    _close(keras_eval, expected["keras_evaluate"])
  estimator = est.keras.model_to_estimator(
      keras_model=model, model_dir=model_dir, checkpoint_format=fmt,
      config=est.RunConfig(tf_random_seed=1), **kwargs)

  def input_fn() -> tf.data.Dataset:
    return tf.data.Dataset.from_tensors((features, labels)).repeat()

  keras_ckpt = os.path.join(model_dir, "keras", "keras_model.ckpt")
  assert tf.io.gfile.exists(keras_ckpt + ".index") == ("keras_checkpoint" in expected)
  if "keras_checkpoint" in expected:
    assert _listing(keras_ckpt) == expected["keras_checkpoint"]
    # The warm-start checkpoint holds the Keras model's weights: evaluating
    # before any training warm-starts from it (as 2.15's evaluate did), giving
    # keras model.evaluate's numbers (under the metric_names_map names).
    assert estimator.latest_checkpoint() is None
    _close(estimator.evaluate(input_fn, steps=1), expected["evaluate_warm_start"])
  estimator.train(input_fn, steps=keras_cases.STEPS)
  metrics = estimator.evaluate(input_fn, steps=1)
  assert sorted(metrics) == sorted(expected["evaluate"])
  assert _listing(estimator.latest_checkpoint()) == expected["checkpoint"]
  predictions = list(estimator.predict(lambda: tf.data.Dataset.from_tensors(features)))
  assert sorted(predictions[0]) == sorted(expected["predictions"])
  export_dir = estimator.export_saved_model(os.path.join(model_dir, "export"), serving)
  loaded = tf.saved_model.load(export_dir.decode())
  assert sorted(loaded.signatures.keys()) == expected["signatures"]
  inputs = features if isinstance(features, dict) else {"x": features}
  served = loaded.signatures["serving_default"](**{k: tf.constant(v) for k, v in inputs.items()})
  assert sorted(served) == sorted(expected["serving_default"])
  for key in expected["predictions"]:
    np.testing.assert_allclose(served[key].numpy(), [p[key] for p in predictions], **TOL)
  if compare_numbers:
    _close(metrics, expected["evaluate"])
    _close({k: [p[k] for p in predictions] for k in predictions[0]}, expected["predictions"])


@pytest.mark.parametrize("fmt", ["checkpoint", "saver"])
def test_sequential_matches_tf215(fmt: str, tmp_path: Any) -> None:
  assert_matches_tf215(f"sequential_{fmt}", keras_cases.sequential(tf), DATA["x"],
                       DATA["y_class"], fmt, _serve_x, str(tmp_path))


def test_functional_feature_dict_metric_names_map_matches_tf215(tmp_path: Any) -> None:
  # Adam (a tf-keras 2.11+ optimizer) is converted to the legacy Adam, as 2.15 did.
  assert_matches_tf215("functional_dict_checkpoint", keras_cases.functional(tf),
                       {"a": DATA["a"], "b": DATA["b"]}, DATA["y_reg"], "checkpoint",
                       _serve_ab, str(tmp_path),
                       metric_names_map={"mae": "mean_abs", "rmse": "root_mse"},
                       export_outputs={"out": est.export.RegressionOutput})


def test_functional_labels_dict_saver_matches_tf215(tmp_path: Any) -> None:
  assert_matches_tf215("functional_list_saver", keras_cases.functional(tf),
                       {"a": DATA["a"], "b": DATA["b"]}, {"out": DATA["y_reg"]}, "saver",
                       _serve_ab, str(tmp_path))


def test_subclassed_saver_matches_tf215_names(tmp_path: Any) -> None:
  # 2.15 could not carry a subclassed model's weights (fresh initialisation,
  # not reproducible there), so only keys and variable names are compared.
  model, custom = keras_cases.subclassed(tf)
  assert_matches_tf215("subclassed_saver", model, DATA["x"], DATA["y_class"], "saver",
                       _serve_x, str(tmp_path), compare_numbers=False, custom_objects=custom)


def test_v1_defaults_to_name_based_checkpoints(tmp_path: Any) -> None:
  estimator = est.keras.v1.model_to_estimator(keras_cases.sequential(tf), model_dir=str(tmp_path))
  estimator.train(lambda: tf.data.Dataset.from_tensors((DATA["x"], DATA["y_class"])), steps=1)
  assert _listing(estimator.latest_checkpoint()) == EXPECTED["cases"]["sequential_saver"][
      "checkpoint"]


def _errors() -> Dict[str, Callable[[], Any]]:
  m2e = est.keras.model_to_estimator
  uncompiled = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(2,))])
  ab = {"a": DATA["a"], "b": DATA["b"]}

  def run(call: str, **kwargs: Any) -> Callable[[], Any]:
    def fn() -> Any:
      import tempfile  # pylint: disable=g-import-not-at-top
      estimator = m2e(keras_model=keras_cases.functional(tf), model_dir=tempfile.mkdtemp(),
                      **kwargs)
      features = {"a": DATA["a"]} if call == "train_missing" else ab
      input_fn = lambda: tf.data.Dataset.from_tensors((features, DATA["y_reg"]))
      if call == "evaluate":
        return estimator.evaluate(input_fn, steps=1)
      return estimator.train(input_fn, steps=1)
    return fn

  return {
      "neither": lambda: m2e(),
      "both": lambda: m2e(keras_model=keras_cases.sequential(tf), keras_model_path="/tmp/x.h5"),
      "uncompiled": lambda: m2e(keras_model=uncompiled),
      "bad_format": lambda: m2e(keras_model=keras_cases.sequential(tf), checkpoint_format="h5"),
      "subclassed_checkpoint": lambda: m2e(keras_model=keras_cases.subclassed(tf)[0],
                                           custom_objects=keras_cases.subclassed(tf)[1]),
      "missing_feature": run("train_missing"),
      "metric_names_map_missing": run("evaluate", metric_names_map={"mae": "m"}),
      "metric_names_map_extra": run("evaluate",
                                    metric_names_map={"mae": "m", "rmse": "r", "nope": "n"}),
      "export_outputs_unknown": run("train",
                                    export_outputs={"nope": est.export.RegressionOutput}),
  }


@pytest.mark.parametrize("case", sorted(EXPECTED["errors"]))
def test_errors_keep_tf215_text(case: str) -> None:
  error_type, text = EXPECTED["errors"][case]
  with pytest.raises(Exception) as caught:
    _errors()[case]()
  assert type(caught.value).__name__ == error_type
  message = str(caught.value)
  if case in ("missing_feature", "export_outputs_unknown", "metric_names_map_extra",
              "metric_names_map_missing"):
    # Sets print in any order: compare the lines' words, then the hint.
    for line in text.split("\n"):
      head = line.split("{")[0].split("[")[0]
      assert head in message
  else:
    assert message.startswith(text)
  assert len(message) > len(text)  # a fix hint follows 2.15's text
  if error_type == "FormattedKeyError":
    assert isinstance(caught.value, KeyError)


def test_model_dir_and_config_model_dir_must_agree(tmp_path: Any) -> None:
  # tf.estimator 2.15's text (checked in its venv), then a hint.
  a, b = str(tmp_path / "a"), str(tmp_path / "b")
  with pytest.raises(ValueError) as caught:
    est.keras.model_to_estimator(keras_model=keras_cases.sequential(tf), model_dir=a,
                                 config=est.RunConfig(model_dir=b))
  assert str(caught.value).startswith(
      "`model_dir` are set both in constructor and `RunConfig`, but with different values. "
      f"In constructor: '{a}', in `RunConfig`: '{b}' Pass ")
  assert not os.path.exists(a) and not os.path.exists(b)
  same = est.keras.model_to_estimator(keras_model=keras_cases.sequential(tf), model_dir=a,
                                      config=est.RunConfig(model_dir=a))
  assert same.model_dir == a
  # As 2.15: a RunConfig without session_config gets the default one.
  assert same.config.session_config == est.RunConfig(model_dir=a).replace(
      session_config=est.run_config.get_default_session_config()).session_config


def test_graph_mode_model_gives_keras_session_the_config(tmp_path: Any) -> None:
  # A model built in graph mode has no weight values yet; 2.15 made tf-keras's
  # backend session use the RunConfig's session_config (its GPU options stick).
  from tf_keras.api._v1 import keras as tf_keras_v1  # pylint: disable=g-import-not-at-top
  try:
    with tf.Graph().as_default():
      model = tf.keras.Sequential([tf.keras.layers.Dense(2, input_shape=(4,))])
      model.compile("sgd", "mse")
      gpu = tf.compat.v1.GPUOptions(per_process_gpu_memory_fraction=0.3)
      estimator = est.keras.model_to_estimator(
          keras_model=model, model_dir=str(tmp_path), config=est.RunConfig(
              session_config=tf.compat.v1.ConfigProto(gpu_options=gpu)))
      session = tf_keras_v1.backend.get_session()
      assert session._config.gpu_options.per_process_gpu_memory_fraction == 0.3  # pylint: disable=protected-access
    # The warm-start checkpoint holds the clone's own seeded initial values.
    estimator.train(lambda: tf.data.Dataset.from_tensors(
        (DATA["x"], DATA["x"][:, :2])), steps=1)
    assert estimator.latest_checkpoint().endswith("model.ckpt-1")
  finally:
    tf_keras_v1.backend.clear_session()


def test_max_steps_resumes_from_object_based_checkpoints(tmp_path: Any) -> None:
  # The object-based format keys the global step by object path, so train()
  # cannot see max_steps is reached before it starts: as in 2.15 (its numbers,
  # checked in its venv), each call restores and runs one step before stopping.
  estimator = est.keras.model_to_estimator(keras_model=keras_cases.sequential(tf),
                                           model_dir=str(tmp_path))
  input_fn = lambda: tf.data.Dataset.from_tensors((DATA["x"], DATA["y_class"])).repeat()
  steps = []
  for max_steps in (2, 2, 3, 3):
    estimator.train(input_fn, max_steps=max_steps)
    steps.append(int(estimator.latest_checkpoint().rsplit("-", 1)[1]))
  assert steps == [2, 3, 4, 5]
