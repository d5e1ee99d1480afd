"""Keras 3 models (`import keras`) under model_to_estimator.

The functional model of keras_cases, built with Keras 3 from the same
weights, must train, evaluate, predict and export to the numbers tf.estimator
2.15 produced for its Keras 2 twin; what Keras 3 cannot do in a graph is
refused with a clear error.
"""
from __future__ import annotations

import json
import os
from typing import Any

import numpy as np
import pytest

import estimator_lite as est
import estimator_lite.keras
import tensorflow as tf

keras = pytest.importorskip("keras")
if not keras.__version__.startswith("3."):
  pytest.skip("needs Keras 3", allow_module_level=True)

import keras_cases  # pylint: disable=g-import-not-at-top,wrong-import-position

with open(os.path.join(os.path.dirname(__file__), "..", "data", "keras",
                       "model_to_estimator_expected.json")) as _f:
  EXPECTED = json.load(_f)["cases"]
DATA = keras_cases.data()
FEATURES = {"a": DATA["a"], "b": DATA["b"]}


def _functional() -> Any:
  a = keras.Input(shape=(2,), name="a")
  b = keras.Input(shape=(3,), name="b")
  hidden = keras.layers.Dense(4, activation="tanh", name="hidden")(
      keras.layers.Concatenate(name="merge")([a, b]))
  model = keras.Model([a, b], keras.layers.Dense(1, name="out")(hidden))
  rng = np.random.default_rng(2)  # keras_cases' weights for the functional model
  model.set_weights([rng.normal(scale=0.5, size=w.shape).astype(np.float32)
                     for w in model.get_weights()])
  model.compile(optimizer=keras.optimizers.Adam(learning_rate=0.05), loss="mse",
                metrics=["mae", keras.metrics.RootMeanSquaredError(name="rmse")])
  return model


def _serve() -> Any:
  features = {"a": tf.compat.v1.placeholder(tf.float32, [None, 2], name="a"),
              "b": tf.compat.v1.placeholder(tf.float32, [None, 3], name="b")}
  return est.export.ServingInputReceiver(features, features)


def _input_fn() -> tf.data.Dataset:
  return tf.data.Dataset.from_tensors((FEATURES, DATA["y_reg"])).repeat()


@pytest.mark.parametrize("fmt", ["saver", "checkpoint"])
def test_keras3_functional_trains_like_tf215(fmt: str, tmp_path: Any) -> None:
  expected = EXPECTED["functional_list_saver"]
  estimator = est.keras.model_to_estimator(_functional(), model_dir=str(tmp_path),
                                           checkpoint_format=fmt)
  warm = estimator.evaluate(_input_fn, steps=1,
                            checkpoint_path=os.path.join(tmp_path, "keras", "keras_model.ckpt"))
  for key, value in expected["evaluate_warm_start"].items():
    np.testing.assert_allclose(warm[key], value, rtol=1e-5, err_msg=key)
  estimator.train(_input_fn, steps=keras_cases.STEPS)
  metrics = estimator.evaluate(_input_fn, steps=1)
  assert sorted(metrics) == sorted(expected["evaluate"])
  for key, value in expected["evaluate"].items():
    np.testing.assert_allclose(metrics[key], value, rtol=1e-5, err_msg=key)
  names = [name for name, _ in tf.train.list_variables(estimator.latest_checkpoint())]
  if fmt == "saver":  # the names 2.15 wrote for the Keras 2 twin
    assert sorted(names) == [name for name, _ in expected["checkpoint"]]
  else:
    assert "estimator_global_step/.ATTRIBUTES/VARIABLE_VALUE" in names
    assert sum(".Sm/" in n or ".Sv/" in n for n in names) == 8  # Adam's slots are saved
  predictions = [p["out"] for p in estimator.predict(
      lambda: tf.data.Dataset.from_tensors(FEATURES))]
  np.testing.assert_allclose(predictions, expected["predictions"]["out"], rtol=1e-5)
  export_dir = estimator.export_saved_model(os.path.join(tmp_path, "export"), _serve)
  served = tf.saved_model.load(export_dir.decode()).signatures["serving_default"](
      a=tf.constant(DATA["a"]), b=tf.constant(DATA["b"]))
  np.testing.assert_allclose(served["out"].numpy(), predictions, rtol=1e-5)


@pytest.mark.parametrize("layer,words", [
    (lambda: keras.layers.Dropout(0.5), "random numbers"),
    (lambda: keras.layers.BatchNormalization(), "moving mean and variance"),
])
def test_keras3_layers_that_fail_silently_in_a_graph_are_refused(layer: Any, words: str,
                                                                 tmp_path: Any) -> None:
  model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3), layer(),
                            keras.layers.Dense(1)])
  model.compile(optimizer="sgd", loss="mse")
  with pytest.raises(ValueError, match=words) as caught:
    est.keras.model_to_estimator(model, model_dir=str(tmp_path))
  assert "tf.keras" in str(caught.value)


def test_keras3_optimizer_without_graph_twin_is_refused(tmp_path: Any) -> None:
  model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
  model.compile(optimizer=keras.optimizers.AdamW(learning_rate=0.1), loss="mse")
  with pytest.raises(ValueError, match="AdamW"):
    est.keras.model_to_estimator(model, model_dir=str(tmp_path))
