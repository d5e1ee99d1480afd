"""Argument checks the heads share, with tf.estimator 2.15's error texts and a fix."""
from __future__ import annotations

from typing import Any, Callable, Iterable, Optional, Sequence

import tensorflow as tf
import tf_keras

from estimator_lite._util import fn_args as fn_args_lib

_LIST_OR_TUPLE_ERR_MSG = "{} should be a list or a tuple. Given type: {}."
_LOSS_FN_ARGS = ("labels", "logits", "features", "loss_reduction")


def validate_loss_fn_args(loss_fn: Callable[..., Any]) -> None:
  """Checks a custom `loss_fn` takes `labels` and `logits`, and optionally `features`, `loss_reduction`.

  Args:
    loss_fn: the loss function.

  Raises:
    ValueError: a required argument is missing or an unknown one is present.
  """
  names = fn_args_lib.fn_args(loss_fn)
  for required in ("labels", "logits"):
    if required not in names:
      raise ValueError(
          f"loss_fn must contain argument: {required}. Given arguments: {names}. "
          "Define it as loss_fn(labels, logits[, features, loss_reduction]).")
  unexpected = [name for name in names if name not in _LOSS_FN_ARGS]
  if unexpected:
    raise ValueError(
        f"loss_fn has unexpected args: {unexpected}. It may take only labels, logits, "
        "features and loss_reduction.")


def validate_loss_reduction(loss_reduction: Any) -> None:
  """Checks `loss_reduction` is a Keras 2 `Reduction` other than `NONE`.

  Args:
    loss_reduction: the value given to the head.

  Raises:
    ValueError: anything else (tf.estimator's text).
  """
  reduction = tf_keras.losses.Reduction
  if loss_reduction not in reduction.all() or loss_reduction == reduction.NONE:
    raise ValueError(
        f"Invalid loss_reduction: {loss_reduction}. See `tf.losses.Reduction` for valid "
        "options. Use tf_keras.losses.Reduction.SUM_OVER_BATCH_SIZE (the default) or "
        "SUM (tf.compat.v1.losses.Reduction values are not accepted).")


def validate_update_ops(update_ops: Optional[Sequence[Any]] = None) -> None:
  """Checks `update_ops` is None, a list or a tuple.

  Args:
    update_ops: the update ops given to `create_estimator_spec`.

  Raises:
    ValueError: anything else.
  """
  if update_ops is not None and not isinstance(update_ops, (list, tuple)):
    raise ValueError(_LIST_OR_TUPLE_ERR_MSG.format("update_ops", type(update_ops)))


def validate_v2_optimizer(optimizer: Any) -> None:
  """Checks `optimizer` is a Keras 2 optimizer (legacy `OptimizerV2` or the newer one).

  Args:
    optimizer: the optimizer given to `create_estimator_spec`.

  Raises:
    ValueError: anything else (tf.estimator's text).
  """
  if not isinstance(optimizer, (tf_keras.optimizers.Optimizer,
                                tf_keras.optimizers.legacy.Optimizer)):
    raise ValueError(
        "The given optimizer is not a tf.keras.optimizers.Optimizer instance. Received "
        f"optimizer of type {type(optimizer)}. Pass a tf_keras.optimizers.legacy "
        "optimizer, or give a tf.compat.v1.train optimizer through "
        "train_op_fn=lambda loss: opt.minimize(loss, global_step=...).")


def validate_trainable_variables(trainable_variables: Optional[Sequence[Any]] = None) -> None:
  """Checks `trainable_variables` is a list or tuple.

  Args:
    trainable_variables: the variables given to `create_estimator_spec`.

  Raises:
    ValueError: None, or not a list or tuple.
  """
  if trainable_variables is None:
    raise ValueError(
        f"trainable_variables cannot be None. Given {trainable_variables}. Pass the "
        "variables the optimizer trains, e.g. tf.compat.v1.trainable_variables().")
  if not isinstance(trainable_variables, (list, tuple)):
    raise ValueError(_LIST_OR_TUPLE_ERR_MSG.format("trainable_variables", type(trainable_variables)))


def validate_n_classes(n_classes: Any) -> Any:
  """Checks a multi-class head's `n_classes` is more than 2.

  Args:
    n_classes: a Python int (checked now) or a tensor (checked by an
      assertion when run).

  Returns:
    `n_classes`, unchanged.

  Raises:
    ValueError: a Python int of 2 or less (tf.estimator's text).
  """
  if isinstance(n_classes, int) and n_classes <= 2:
    raise ValueError(
        f"n_classes must be > 2: {n_classes}. For two classes use BinaryClassHead "
        "(binary_or_multi_class_head picks it).")
  if not isinstance(n_classes, int):
    tf.compat.v1.debugging.assert_greater(
        tf.convert_to_tensor(n_classes), 2, message="n_classes must be greater than 2")
  return n_classes


def validate_thresholds(thresholds: Optional[Iterable[float]], message: str) -> tuple:
  """Returns `thresholds` as a tuple after checking each is in (0, 1).

  Args:
    thresholds: the thresholds given to a head, or None.
    message: the error text, formatted with `thresholds=` (the tuple) and
      `threshold=` (the bad value).

  Returns:
    A tuple of floats (empty for None).

  Raises:
    ValueError: a threshold outside (0, 1).
  """
  values = tuple(thresholds) if thresholds else ()
  for threshold in values:
    if threshold <= 0.0 or threshold >= 1.0:
      raise ValueError(message.format(thresholds=(values,), threshold=threshold) +
                       " Thresholds are probabilities strictly between 0 and 1.")
  return values


def check_prediction_keys(pred_keys: Iterable[str], valid_keys: Sequence[str]) -> None:
  """Checks every requested prediction key is one the head makes.

  Args:
    pred_keys: the keys asked for.
    valid_keys: the head's keys.

  Raises:
    ValueError: an unknown key (tf.estimator's text).
  """
  for key in pred_keys:
    if key not in valid_keys:
      raise ValueError(
          f"Prediction key must be in PredictionKeys, given: {key}.Valid prediction keys "
          f"include {valid_keys}.")


def prediction_keys_or_all(pred_keys: Optional[Sequence[str]],
                           valid_keys: Sequence[str]) -> Sequence[str]:
  """The prediction keys a head builds: those asked for, checked, or all of its own.

  Args:
    pred_keys: the keys asked for; None or empty for all.
    valid_keys: the head's keys.

  Returns:
    `pred_keys`, or `valid_keys` when none were asked for.

  Raises:
    ValueError: an unknown key (tf.estimator's text).
  """
  if not pred_keys:
    return valid_keys
  check_prediction_keys(pred_keys, valid_keys)
  return pred_keys
