"""Example weights: read from the features by `weight_column`, shaped to match the logits."""
from __future__ import annotations

from typing import Any, Mapping, Optional

import tensorflow as tf

from estimator_lite._util import tf_internals
from estimator_lite.head import labels as labels_lib

_WEIGHTS_ERR_MSG = "weights shape must be [D0, D1, ... DN] or [D0, D1, ... DN, 1]"
_PER_LOGIT_WEIGHTS_ERR_MSG = (
    "weights shape must be [D0, D1, ... DN], [D0, D1, ... DN, 1] or "
    "[D0, D1, ... DN, logits_dimension]")
_SHAPE_FIX = " (one weight per example: the weight feature must have the labels' batch shape)"


def get_weights_and_check_match_logits(features: Optional[Mapping[str, Any]], weight_column: Any,
                                       logits: Any, allow_per_logit_weights: bool = False) -> Any:
  """Reads the example weights and checks their shape against the logits.

  With logits of shape `[D0, ... DN, logits_dimension]`, weights may be
  `[D0, ... DN, 1]`, `[D0, ... DN]` (given a last dimension of 1) or, when
  `allow_per_logit_weights`, `[D0, ... DN, logits_dimension]`.

  Args:
    features: the features dict.
    weight_column: a feature name or a `tf.feature_column.numeric_column`;
      None means every example weighs 1.
    logits: the logits `Tensor`.
    allow_per_logit_weights: whether one weight per logit is allowed.

  Returns:
    A float32 weights `Tensor` (with shape assertions as control
    dependencies), or the Python float 1. without a weight column.

  Raises:
    TypeError: `weight_column` is neither a string nor a NumericColumn.
    ValueError: the weight feature is missing or not numeric, or (executing
      eagerly) its shape is wrong (tf.estimator's texts).
  """
  err_msg = _PER_LOGIT_WEIGHTS_ERR_MSG if allow_per_logit_weights else _WEIGHTS_ERR_MSG
  features = features or {}
  with tf.compat.v1.name_scope("weights", values=tuple(features.values()) + (logits,)) as scope:
    if weight_column is None:
      return 1.
    if isinstance(weight_column, str):
      weight_column = tf.feature_column.numeric_column(key=weight_column, shape=(1,))
    try:
      weights = tf_internals.numeric_column_dense_tensor(weight_column, features)
    except ValueError as e:
      if "is not in features dictionary" in str(e) and "Fix:" not in str(e):
        raise ValueError(
            f"{e} Fix: the features input_fn returns must include the weight column "
            f"{weight_column.key!r}, also when evaluating.") from None
      raise
    if not (weights.dtype.is_floating or weights.dtype.is_integer):
      raise ValueError(
          f"Weight column should be castable to float. Given dtype: {weights.dtype}. "
          "Give the weight feature a numeric dtype.")
    weights = tf.cast(weights, name="weights", dtype=tf.float32)
    if tf.executing_eagerly():
      return _eager_checked_weights(weights, logits, err_msg, allow_per_logit_weights)
    weights_shape = tf.shape(weights, name="weights_shape")
    logits_shape = tf.shape(logits, name="logits_shape")
    # tf.estimator's message and data first (programs match them), then the fix.
    data = ["logits_shape: ", logits_shape, "weights_shape: ", weights_shape, _SHAPE_FIX.strip()]
    if (weights.shape.rank is not None and logits.shape.rank is not None and
        weights.shape.rank == logits.shape.rank - 1):
      assert_dimension = tf.compat.v1.debugging.assert_equal(
          logits_shape[:-1], weights_shape, message=err_msg, data=data)
      with tf.control_dependencies([assert_dimension]):
        return tf.expand_dims(weights, -1, name=scope)
    supported_weights_shape = tf.concat([logits_shape[:-1], [1]], axis=0)
    if allow_per_logit_weights:
      condition = tf.reduce_any([
          tf.reduce_all(tf.equal(logits_shape, weights_shape)),
          tf.reduce_all(tf.equal(supported_weights_shape, weights_shape))])
      assert_dimension = tf.debugging.Assert(condition=condition, data=[err_msg] + data)
    else:
      assert_dimension = tf.compat.v1.debugging.assert_equal(
          supported_weights_shape, weights_shape, message=err_msg, data=data)
    with tf.control_dependencies([assert_dimension]):
      return tf.identity(weights, name=scope)


def _eager_checked_weights(weights: Any, logits: Any, err_msg: str,
                           allow_per_logit_weights: bool) -> Any:
  """The weights' shape check executing eagerly: tf.estimator's ValueError at once."""
  weights_shape, logits_shape = labels_lib.shape_tuple(weights), labels_lib.shape_tuple(logits)
  error = ValueError(f"{err_msg}, logits_shape: {logits_shape}. "
                     f"weights_shape: {weights_shape}.{_SHAPE_FIX}")
  if len(weights_shape) == len(logits_shape) - 1:
    if logits_shape[:-1] != weights_shape:
      raise error
    return tf.expand_dims(weights, -1)
  allowed = {logits_shape[:-1] + (1,)}
  if allow_per_logit_weights:
    allowed.add(logits_shape)
  if weights_shape not in allowed:
    raise error
  return weights


def update_metric_with_broadcast_weights(eval_metric: Any, values: Any, weights: Any) -> None:
  """Updates a Keras `Mean` metric with `values`, each weighted by its example's weight.

  Args:
    eval_metric: a Keras `Mean`-like metric.
    values: the values; cast to float32.
    weights: example weights broadcastable to `values`, or None.
  """
  values = tf.cast(values, dtype=tf.float32)
  if weights is not None:
    weights = tf_internals.broadcast_weights(weights, values)
  eval_metric.update_state(values=values, sample_weight=weights)
