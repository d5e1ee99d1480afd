"""The Keras models and data both sides of the model_to_estimator comparison build.

Imported by tests/reference/make_keras_fixture.py under TensorFlow 2.15 (where
`tf.keras` is Keras 2.15) and by tests/keras/ under estimator_lite (where
`tf.keras` is tf-keras), so it uses only the `tf.keras` API both share. Every
weight comes from a seeded numpy generator through `set_weights`, so both
sides start from the same numbers.
"""
from __future__ import annotations

from typing import Any, Dict, Tuple

import numpy as np

N = 8
STEPS = 3


def data() -> Dict[str, np.ndarray]:
  """Tiny fixed arrays: 4 dense features, 2 named inputs, class and regression labels."""
  rng = np.random.default_rng(7)
  return {
      "x": rng.normal(size=(N, 4)).astype(np.float32),
      "a": rng.normal(size=(N, 2)).astype(np.float32),
      "b": rng.normal(size=(N, 3)).astype(np.float32),
      "y_class": rng.integers(0, 3, size=(N,)).astype(np.int64),
      "y_reg": rng.normal(size=(N, 1)).astype(np.float32),
  }


def _fixed_weights(model: Any, seed: int) -> None:
  rng = np.random.default_rng(seed)
  model.set_weights([rng.normal(scale=0.5, size=w.shape).astype(np.float32)
                     for w in model.get_weights()])


def sequential(tf: Any) -> Any:
  """A classifier: Dense(5, relu) -> Dense(3, softmax); legacy SGD, accuracy."""
  model = tf.keras.Sequential([
      tf.keras.layers.Dense(5, activation="relu", input_shape=(4,), name="hidden"),
      tf.keras.layers.Dense(3, activation="softmax", name="probs"),
  ])
  _fixed_weights(model, 1)
  model.compile(optimizer=tf.keras.optimizers.legacy.SGD(learning_rate=0.1),
                loss="sparse_categorical_crossentropy", metrics=["accuracy"])
  return model


def functional(tf: Any) -> Any:
  """Two named inputs `a`, `b` -> concat -> Dense(1) `out`; Adam (converted to legacy), mse."""
  a = tf.keras.Input(shape=(2,), name="a")
  b = tf.keras.Input(shape=(3,), name="b")
  merged = tf.keras.layers.Concatenate(name="merge")([a, b])
  hidden = tf.keras.layers.Dense(4, activation="tanh", name="hidden")(merged)
  out = tf.keras.layers.Dense(1, name="out")(hidden)
  model = tf.keras.Model([a, b], out, name="two_inputs")
  _fixed_weights(model, 2)
  model.compile(optimizer=tf.keras.optimizers.Adam(learning_rate=0.05), loss="mse",
                metrics=["mae", tf.keras.metrics.RootMeanSquaredError(name="rmse")])
  return model


def subclassed_class(tf: Any) -> Any:
  """A Model subclass with get_config/from_config (model_to_estimator requires them)."""

  class TwoLayer(tf.keras.Model):

    def __init__(self, units: int = 5, **kwargs: Any) -> None:
      super().__init__(**kwargs)
      self.units = units
      self.hidden = tf.keras.layers.Dense(units, activation="relu")
      self.probs = tf.keras.layers.Dense(3, activation="softmax")

    def call(self, inputs: Any) -> Any:
      return self.probs(self.hidden(inputs))

    def get_config(self) -> Dict[str, Any]:
      return {"units": self.units}

    @classmethod
    def from_config(cls, config: Dict[str, Any], custom_objects: Any = None) -> Any:
      return cls(**config)

  return TwoLayer


def subclassed(tf: Any) -> Tuple[Any, Dict[str, Any]]:
  """The subclassed classifier, compiled (unbuilt: 2.15 could not carry its weights)."""
  cls = subclassed_class(tf)
  model = cls()
  model.compile(optimizer=tf.keras.optimizers.legacy.SGD(learning_rate=0.1),
                loss="sparse_categorical_crossentropy", metrics=["accuracy"])
  return model, {"TwoLayer": cls}
