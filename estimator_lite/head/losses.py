"""A head's loss: a custom `loss_fn` called and checked, the weighted, reduced training loss, and
the regularization added to it (and reported as the `regularization_loss` metric)."""
from __future__ import annotations

from typing import Any, Callable, Dict, Mapping, Optional, Sequence

import tensorflow as tf
import tf_keras

from estimator_lite._util import fn_args as fn_args_lib
from estimator_lite._util import tf_internals
from estimator_lite.canned.metric_keys import MetricKeys
from estimator_lite.head import labels as labels_lib

_LOSS_SHAPE_FIX = "(one loss per example: keep the batch dimensions, do not reduce them)"


def call_loss_fn(loss_fn: Callable[..., Any], labels: Any, logits: Any,
                 features: Optional[Mapping[str, Any]], expected_loss_dim: int = 1) -> Any:
  """Calls a custom `loss_fn` and asserts its result is `[D0, ... DN, expected_loss_dim]`.

  Args:
    loss_fn: the head's `loss_fn`; given `features` when it takes them.
    labels: the processed labels `Tensor`.
    logits: the logits `Tensor` (`[D0, ... DN, logits_dimension]`).
    features: the features dict.
    expected_loss_dim: the size the loss's last dimension must have.

  Returns:
    The unreduced loss `Tensor`, depending on the shape assertion.

  Raises:
    ValueError: executing eagerly, the loss has the wrong shape.
  """
  kwargs = {}
  if "features" in fn_args_lib.fn_args(loss_fn):
    kwargs["features"] = features
  features = features or {}
  with tf.compat.v1.name_scope("call_loss_fn", values=[labels, logits] + list(features.values())):
    unweighted_loss = loss_fn(labels=labels, logits=logits, **kwargs)
    message = f"loss_fn must return Tensor of shape [D0, D1, ... DN, {expected_loss_dim}]. "
    if tf.executing_eagerly():
      loss_shape, logits_shape = (labels_lib.shape_tuple(unweighted_loss),
                                  labels_lib.shape_tuple(logits))
      if loss_shape != logits_shape[:-1] + (expected_loss_dim,):
        raise ValueError(f"{message}logits_shape: {logits_shape}. loss_shape: {loss_shape}. "
                         f"{_LOSS_SHAPE_FIX}")
      return unweighted_loss
    logits_shape = tf.shape(logits, name="logits_shape")
    expected_loss_shape = tf.concat([logits_shape[:-1], [expected_loss_dim]], axis=0,
                                    name="expected_loss_shape")
    loss_shape = tf.shape(unweighted_loss, name="loss_shape")
    # tf.estimator's data first (programs match it), then the fix.
    check_loss_shape = tf.debugging.Assert(
        tf.reduce_all(tf.equal(loss_shape, expected_loss_shape)),
        data=[message, "logits_shape: ", logits_shape, "loss_shape: ", loss_shape,
              _LOSS_SHAPE_FIX],
        name="check_loss_shape")
    with tf.control_dependencies([check_loss_shape]):
      return tf.identity(unweighted_loss)


def weighted_training_loss(unweighted_loss: Any, weights: Any, loss_reduction: str,
                           regularization_losses: Optional[Sequence[Any]] = None) -> Any:
  """The training loss: the weighted per-example losses reduced, plus the regularization.

  Args:
    unweighted_loss: per-example (or per-logit) losses.
    weights: example weights broadcastable to them, or 1.
    loss_reduction: a Keras 2 `Reduction`: SUM divides by nothing,
      SUM_OVER_BATCH_SIZE by the number of loss elements.
    regularization_losses: scalar losses added after the reduction.

  Returns:
    A scalar float32 `Tensor`.
  """
  training_loss = tf_internals.compute_weighted_loss(
      unweighted_loss, sample_weight=weights, reduction=loss_reduction)
  return regularized(training_loss, regularization_losses)


def regularized(training_loss: Any, regularization_losses: Optional[Sequence[Any]]) -> Any:
  """`training_loss` plus the sum of `regularization_losses` (itself when there are none).

  Args:
    training_loss: a scalar loss.
    regularization_losses: scalar losses, or None.

  Returns:
    A scalar `Tensor`.
  """
  if regularization_losses is None:
    return training_loss
  return training_loss + tf.math.add_n(list(regularization_losses))


def add_regularization_metric(eval_metrics: Dict[str, Any], key: str,
                              regularization_losses: Optional[Sequence[Any]]) -> None:
  """Adds a `regularization_loss` mean metric to `eval_metrics` when there are such losses.

  Args:
    eval_metrics: a head's metrics dict, extended in place.
    key: the metric's key (suffixed by the head's name).
    regularization_losses: scalar losses, or None for no metric.
  """
  if regularization_losses is not None:
    eval_metrics[key] = tf_keras.metrics.Mean(name=MetricKeys.LOSS_REGULARIZATION)


def update_regularization_metric(eval_metrics: Dict[str, Any], key: str,
                                 regularization_losses: Optional[Sequence[Any]]) -> None:
  """Updates the `regularization_loss` metric with the batch's summed regularization losses.

  Args:
    eval_metrics: the head's metrics.
    key: the metric's key (suffixed by the head's name).
    regularization_losses: scalar losses; None leaves the metrics alone.
  """
  if regularization_losses is not None:
    eval_metrics[key].update_state(values=tf.math.add_n(list(regularization_losses)))
