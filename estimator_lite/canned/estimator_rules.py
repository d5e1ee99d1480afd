"""Rules every canned estimator follows, stated once (tf.estimator 2.15's).

The Linear, DNN, DNNLinearCombined and Baseline estimators check their
features the same way, reduce their losses with the same defaults, count a
Keras 2 optimizer's steps with the global step, and (their compat.v1
variants) train with `optimizer.minimize` in the name scope tf.estimator's v1
heads used. The linear learning rate rule is shared by the Linear and the
DNNLinearCombined estimators, with a different cap each.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Iterable, List, Optional, Tuple

import numpy as np
import tensorflow as tf
import tf_keras

from estimator_lite._util import tf_internals

# The default reductions of the training loss: the v2 estimators average it
# over the batch, the compat.v1 ones sum it.
SUM_OVER_BATCH_SIZE = tf_keras.losses.Reduction.SUM_OVER_BATCH_SIZE
V1_SUM = tf.compat.v1.losses.Reduction.SUM


def _feature_keys(feature_columns: Iterable[Any]) -> List[str]:
  """The feature names `feature_columns` read (their parse spec's keys), sorted; [] if unknown."""
  try:
    return sorted(tf.compat.v1.feature_column.make_parse_example_spec(list(feature_columns)))
  except Exception:  # pylint: disable=broad-except
    # Only an error message uses them: a column without a parse spec just
    # leaves the keys out of it.
    return []


def _describe_value(value: Any) -> str:
  """What an input_fn gave, in words: its kind, and a tensor's shape and dtype."""
  kinds = ((tf.SparseTensor, "a SparseTensor"), (tf.Tensor, "a Tensor"),
           (np.ndarray, "a numpy array"))
  kind = next((name for cls, name in kinds if isinstance(value, cls)), None)
  if kind is not None:
    return f"{kind} of shape {tuple(value.shape)} and dtype {tf.as_dtype(value.dtype).name}"
  if isinstance(value, (tuple, list)):
    return f"a {type(value).__name__} of {len(value)} values"
  return f"a {type(value).__name__}"


def check_features(features: Any, feature_columns: Optional[Iterable[Any]] = None) -> None:
  """Checks the features a canned estimator got are a dict.

  Args:
    features: what the input_fn gave as features.
    feature_columns: the estimator's feature columns, whose keys the error
      names; None when it has none (Baseline).

  Raises:
    ValueError: they are not (tf.estimator's text, then what was given, the
      keys the feature columns read and the fix).
  """
  if isinstance(features, dict):
    return
  keys = _feature_keys(feature_columns or ())
  if keys:
    wanted = f"keyed by the names its feature columns read ({', '.join(map(repr, keys))})"
    example = "{" + ", ".join(f"{key!r}: <Tensor>" for key in keys[:3]) + "}"
  else:
    wanted = "keyed by feature name"
    example = "{'x': x}"
  raise ValueError(
      "features should be a dictionary of `Tensor`s. Given type: "
      f"{type(features)}. The input_fn gave {_describe_value(features)} as features; a "
      f"canned estimator needs a dict from feature name to Tensor or SparseTensor, {wanted}. "
      f"Fix: return ({example}, labels) from the input_fn (or a Dataset of such pairs).")


def check_v2_feature_columns(feature_columns: Iterable[Any]) -> None:
  """Checks a v2 canned estimator got v2 feature columns only.

  Args:
    feature_columns: the estimator's (or one of its parts') feature columns.

  Raises:
    ValueError: a v1-only feature column (tf.estimator's text).
  """
  if not tf_internals.is_feature_column_v2(feature_columns):
    raise ValueError(
        "Received a feature column from TensorFlow v1, but this is a TensorFlow v2 "
        "Estimator. Please either use v2 feature columns (accessible via "
        "tf.feature_column.* in TF 2.x) with this Estimator, or switch to a v1 "
        "Estimator for use with v1 feature columns (accessible via "
        "tf.compat.v1.estimator.* and tf.compat.v1.feature_column.*, respectively.")


def tuple_or_none(values: Optional[Iterable[Any]]) -> Optional[Tuple[Any, ...]]:
  """Freezes a constructor's columns or units once, keeping None as None.

  Every mode's graph then sees the same values, even when they were given as
  a generator; None stays None so that the model_fn's own checks (and
  tf.estimator's errors) see it.

  Args:
    values: an iterable, or None.

  Returns:
    A tuple of the values, or None.
  """
  return None if values is None else tuple(values)


def linear_learning_rate(num_linear_feature_columns: int, max_learning_rate: float) -> float:
  """The learning rate of a linear model's optimizer given by name: min(cap, 1 / sqrt(columns)).

  Args:
    num_linear_feature_columns: how many feature columns the linear model has.
    max_learning_rate: the cap (0.2 for the Linear estimators, 0.005 for
      the linear part of the DNNLinearCombined ones).

  Returns:
    The learning rate.
  """
  return min(max_learning_rate, 1.0 / math.sqrt(num_linear_feature_columns))


def count_steps_with_global_step(optimizer: Any) -> None:
  """Makes a Keras 2 optimizer count its steps with the global step, as tf.estimator 2.15 did.

  Hooks count steps with the global step, and the checkpoint then has no
  `training/<Optimizer>/iter` variable (as tf.estimator's canned estimators'
  did not).

  Args:
    optimizer: a `tf_keras.optimizers.legacy` optimizer of the graph being built.

  Raises:
    RuntimeError: the optimizer already made its variables in an earlier
      graph (an instance passed to the constructor trains one `train()` call
      only): Keras's text, then the fix.
  """
  try:
    optimizer.iterations = tf.compat.v1.train.get_or_create_global_step()
  except RuntimeError as error:
    raise RuntimeError(
        f"{error} An optimizer instance given to a canned estimator serves one "
        "train() call: its variables belong to that call's graph, as with "
        "tf.estimator. Pass a callable that returns a new one instead, e.g. "
        "optimizer=lambda: tf_keras.optimizers.legacy.Adagrad(0.05); to train "
        "more than once, always pass a callable.") from error


def v1_train_op_fn(optimizer: Any, name_scope: str) -> Callable[[tf.Tensor], Any]:
  """A head's `train_op_fn` for a v1 canned estimator: `optimizer.minimize` with the global step.

  The minimize runs under the absolute name scope `name_scope`, where
  tf.estimator's v1 heads ran it, so that the non-slot variables of a
  `tf.compat.v1.train` optimizer (Adam's `beta1_power`, `beta2_power`) get
  2.15's checkpoint names (e.g. `linear/head/beta1_power`).

  Args:
    optimizer: a `tf.compat.v1.train.Optimizer`.
    name_scope: the name scope, e.g. "linear/head/" (a trailing '/' makes
      it absolute).

  Returns:
    `train_op_fn(loss) -> train op`, which also increments the global step.
  """
  def train_op_fn(loss: tf.Tensor) -> Any:
    with tf.compat.v1.name_scope(name_scope):
      return optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())

  return train_op_fn
