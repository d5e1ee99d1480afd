"""The optimizer a canned estimator trains with: a name, a callable or an instance.

tf.estimator 2.15's rules. The v2 estimators (the top level) train with Keras 2's
OptimizerV2 classes (`tf_keras.optimizers.legacy.*`), whose slot and
hyperparameter variables (`training/Adagrad/...`) are part of the checkpoint;
the v1 estimators (`compat.v1`) train with `tf.compat.v1.train` optimizers.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable, Dict, Optional, Union

import tensorflow as tf
import tf_keras

_V1_CLASSES: Dict[str, Any] = {
    "Adagrad": tf.compat.v1.train.AdagradOptimizer,
    "Adam": tf.compat.v1.train.AdamOptimizer,
    "Ftrl": tf.compat.v1.train.FtrlOptimizer,
    "RMSProp": tf.compat.v1.train.RMSPropOptimizer,
    "SGD": tf.compat.v1.train.GradientDescentOptimizer,
}
_V2_CLASSES: Dict[str, Any] = {
    "Adagrad": tf_keras.optimizers.legacy.Adagrad,
    "Adam": tf_keras.optimizers.legacy.Adam,
    "Ftrl": tf_keras.optimizers.legacy.Ftrl,
    "RMSProp": tf_keras.optimizers.legacy.RMSprop,
    "SGD": tf_keras.optimizers.legacy.SGD,
}
# The learning rate a v2 optimizer named by a string gets when neither the
# caller nor the class gives one.
_FALLBACK_LEARNING_RATE = 0.05

OptimizerArg = Union[str, Callable[[], Any], Any]


def _unsupported_name(name: str, classes: Dict[str, Any]) -> ValueError:
  return ValueError(
      f"Unsupported optimizer name: {name}. Supported names are: "
      f"{tuple(sorted(classes))}")


def get_optimizer_instance(opt: OptimizerArg, learning_rate: Optional[float] = None) -> Any:
  """Returns a `tf.compat.v1.train.Optimizer` for a v1 canned estimator.

  Args:
    opt: an Optimizer instance, a callable returning one, or one of the names
      'Adagrad', 'Adam', 'Ftrl', 'RMSProp', 'SGD'.
    learning_rate: the learning rate of an optimizer given by name.

  Returns:
    A `tf.compat.v1.train.Optimizer`.

  Raises:
    ValueError: an unknown name (the valid names are listed), a name without a
      learning rate, or an object that is not an Optimizer.
  """
  if isinstance(opt, str):
    if opt not in _V1_CLASSES:
      raise _unsupported_name(opt, _V1_CLASSES)
    if not learning_rate:
      raise ValueError("learning_rate must be specified when opt is string.")
    return _V1_CLASSES[opt](learning_rate=learning_rate)
  if callable(opt):
    opt = opt()
  if not isinstance(opt, tf.compat.v1.train.Optimizer):
    raise ValueError(
        f"The given object is not an Optimizer instance. Given: {opt}. A v1 "
        "canned estimator takes a tf.compat.v1.train optimizer (e.g. "
        "tf.compat.v1.train.AdagradOptimizer(0.05)) or its name.")
  return opt


def _has_default_learning_rate(optimizer_class: Any) -> bool:
  parameter = inspect.signature(optimizer_class.__init__).parameters.get("learning_rate")
  return parameter is not None and parameter.default is not inspect.Parameter.empty


def get_optimizer_instance_v2(opt: OptimizerArg,
                              learning_rate: Optional[float] = None) -> Any:
  """Returns a Keras 2 `OptimizerV2` (`tf_keras.optimizers.legacy.*`) for a canned estimator.

  Args:
    opt: an OptimizerV2 instance, a callable returning one, or one of the names
      'Adagrad', 'Adam', 'Ftrl', 'RMSProp', 'SGD'.
    learning_rate: the learning rate of an optimizer given by name; when None,
      the class's own default.

  Returns:
    A `tf_keras.optimizers.legacy.Optimizer`.

  Raises:
    ValueError: an unknown name (the valid names are listed), or an object that
      is not a legacy Keras optimizer (a Keras 3 or new-style tf-keras optimizer
      cannot build a graph-mode train op: the text names the class to use).
  """
  if isinstance(opt, str):
    if opt not in _V2_CLASSES:
      raise _unsupported_name(opt, _V2_CLASSES)
    optimizer_class = _V2_CLASSES[opt]
    if learning_rate:
      return optimizer_class(learning_rate=learning_rate)
    if _has_default_learning_rate(optimizer_class):
      return optimizer_class()
    return optimizer_class(learning_rate=_FALLBACK_LEARNING_RATE)
  if callable(opt) and not _is_optimizer(opt):
    opt = opt()
  if isinstance(opt, tf_keras.optimizers.legacy.Optimizer):
    return opt
  if _is_optimizer(opt):
    name = type(opt).__name__
    raise ValueError(
        "Please set your optimizer as an instance of "
        "`tf.keras.optimizers.legacy.Optimizer`, e.g., "
        f"`tf.keras.optimizers.legacy.{name}`.Received optimizer type: {type(opt)}. "
        f"With estimator_lite: tf_keras.optimizers.legacy.{name}(...) (Keras 2 "
        "from the tf-keras package); Keras 3 optimizers cannot build a graph-mode "
        "train op.")
  raise ValueError(
      "The given object is not a tf.keras.optimizers.Optimizer instance. Given: "
      f"{opt}. Pass a name ({', '.join(sorted(_V2_CLASSES))}) or a "
      "tf_keras.optimizers.legacy optimizer.")


def _is_optimizer(value: Any) -> bool:
  # Any Keras optimizer (tf-keras new or legacy, Keras 3), duck-typed so that
  # Keras 3 need not be imported to recognise one.
  return callable(getattr(value, "apply_gradients", None)) and not isinstance(
      value, tf.compat.v1.train.Optimizer) and not inspect.isclass(value)
