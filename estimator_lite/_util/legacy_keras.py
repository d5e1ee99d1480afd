"""Selects Keras 2 (the `tf-keras` package) for `tf.keras` and `tf.compat.v1.layers`.

tf.estimator programs were written against Keras 2: `tf.compat.v1.layers.dense`,
`tf.keras.layers.BatchNormalization` whose moving statistics update in graph mode,
Keras metric objects whose `update_state` returns an op. On TF >= 2.16 those only
exist when `tf-keras` is installed and TF_USE_LEGACY_KERAS=1 is set before
TensorFlow first resolves `tf.keras`. TensorFlow resolves it lazily, so setting
the variable here works even when the user imported tensorflow first, as long
as nothing touched `tf.keras` yet.

A user who set TF_USE_LEGACY_KERAS themselves (to "0", say, to keep Keras 3)
is respected.
"""
import importlib.util
import os

_ENV = "TF_USE_LEGACY_KERAS"


def select_legacy_keras():
  """Sets TF_USE_LEGACY_KERAS=1 when tf-keras is installed and the user chose nothing.

  Returns:
    True when Keras 2 (tf-keras) is, or will be, what `tf.keras` resolves to.
  """
  if _ENV not in os.environ and importlib.util.find_spec("tf_keras") is not None:
    os.environ[_ENV] = "1"
  return os.environ.get(_ENV, "").lower() in ("1", "true")
