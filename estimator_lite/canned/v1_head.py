"""The head of a compat.v1 canned Classifier or Regressor: a v2 head, reduced and measured as v1's.

tf.estimator 2.15's v1 canned classes trained on its v1 heads, which differ
from the v2 heads in three ways a program sees:

* `loss_reduction` is a `tf.compat.v1.losses.Reduction`, MEAN and
  SUM_BY_NONZERO_WEIGHTS included: the training loss is
  `tf.compat.v1.losses.compute_weighted_loss(unreduced_loss, weights,
  reduction)`, and the train op, the `loss` summary and evaluate()'s `loss`
  all use it.
* A binary classifier's `auc` and `auc_precision_recall` are
  `tf.compat.v1.metrics.auc` (trapezoids), not Keras's AUC (which
  interpolates the PR curve).
* With SUM reduction a training step also writes an `average_loss` summary:
  the loss over the sum of the example weights.

`V1Head` wraps the v2 head (built to SUM the weighted loss, or to take
SUM_OVER_BATCH_SIZE as it is) and adds those three.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Sequence

import tensorflow as tf
import tf_keras

from estimator_lite._util import tf_internals
from estimator_lite.canned.metric_keys import MetricKeys
from estimator_lite.canned.prediction_keys import PredictionKeys
from estimator_lite.estimator_spec import EstimatorSpec
from estimator_lite.head import base_head
from estimator_lite.head import classes as classes_lib
from estimator_lite.head import labels as labels_lib
from estimator_lite.head import losses as losses_lib
from estimator_lite.head import spec_builder
from estimator_lite.head import weights as weights_lib
from estimator_lite.mode_keys import ModeKeys

_V1 = tf.compat.v1.losses.Reduction

# A Keras value given to a v1 class reads as the v1 value of the same meaning.
_FROM_KERAS = {tf_keras.losses.Reduction.SUM: _V1.SUM,
               tf_keras.losses.Reduction.SUM_OVER_BATCH_SIZE: _V1.SUM_OVER_BATCH_SIZE}


def v1_loss_reduction(loss_reduction: str) -> str:
  """The `tf.compat.v1.losses.Reduction` a v1 canned class was given, checked.

  Args:
    loss_reduction: a `tf.compat.v1.losses.Reduction` value other than NONE,
      or the Keras value of SUM or SUM_OVER_BATCH_SIZE.

  Returns:
    The `tf.compat.v1.losses.Reduction` value.

  Raises:
    ValueError: NONE or an unknown value (tf.estimator's text, then the fix).
  """
  loss_reduction = _FROM_KERAS.get(loss_reduction, loss_reduction)
  if loss_reduction not in _V1.all() or loss_reduction == _V1.NONE:
    raise ValueError(
        f"Invalid loss_reduction: {loss_reduction}. Pass a "
        "tf.compat.v1.losses.Reduction other than NONE: SUM (the default), "
        "MEAN, SUM_OVER_BATCH_SIZE or SUM_BY_NONZERO_WEIGHTS.")
  return loss_reduction


def inner_head_loss_reduction(loss_reduction: str) -> str:
  """The Keras reduction of the v2 head a `V1Head` wraps, for a v1 reduction.

  SUM_OVER_BATCH_SIZE means the same in both; every other v1 reduction is the
  weighted SUM divided by a weight count, so the v2 head sums. An invalid
  value is left for `V1Head` to refuse, after the head's own checks (the
  order of tf.estimator's errors).

  Args:
    loss_reduction: a `tf.compat.v1.losses.Reduction` (or Keras) value.

  Returns:
    `tf_keras.losses.Reduction.SUM_OVER_BATCH_SIZE` or `SUM`.
  """
  if _FROM_KERAS.get(loss_reduction, loss_reduction) == _V1.SUM_OVER_BATCH_SIZE:
    return tf_keras.losses.Reduction.SUM_OVER_BATCH_SIZE
  return tf_keras.losses.Reduction.SUM


class V1Head(base_head.Head):
  """A v2 head that reduces its loss, writes summaries and (binary) AUCs as tf.estimator's v1 heads.

  Args:
    head: the v2 head, built with `inner_head_loss_reduction(loss_reduction)`
      and `weight_column`.
    weight_column: the head's weight column (name or numeric column), or None.
    loss_reduction: a value `v1_loss_reduction` accepts.
    loss_dimension: the last dimension of the head's unreduced loss (1 for a
      classifier, the label dimension for a regressor).
    binary_label_vocabulary: for a binary classification head, its label
      vocabulary, or None.
    binary: whether `head` is a binary classification head.

  Raises:
    ValueError: see `v1_loss_reduction`.
  """

  def __init__(self, head: base_head.Head, weight_column: Any, loss_reduction: str,
               loss_dimension: int = 1, binary_label_vocabulary: Optional[Sequence[str]] = None,
               binary: bool = False) -> None:
    self._head = head
    self._weight_column = weight_column
    self._v1_reduction = v1_loss_reduction(loss_reduction)
    self._loss_dimension = loss_dimension
    self._label_vocabulary = binary_label_vocabulary
    self._binary = binary

  @property
  def name(self) -> Optional[str]:
    """See `Head`."""
    return self._head.name

  @property
  def logits_dimension(self) -> int:
    """See `Head`."""
    return self._head.logits_dimension

  @property
  def loss_reduction(self) -> str:
    """The `tf.compat.v1.losses.Reduction` of the training loss."""
    return self._v1_reduction

  def _example_weights(self, features: base_head.Features, logits: Any) -> Any:
    """The example weights broadcast to the unreduced loss's shape."""
    weights = weights_lib.get_weights_and_check_match_logits(
        features=features, weight_column=self._weight_column, logits=logits)
    ones = tf.ones_like(logits[..., :self._loss_dimension])
    return tf.cast(weights, tf.float32) * ones

  def _training_loss(self, labels: Any, logits: Any, features: base_head.Features,
                     mode: Optional[str]) -> Any:
    """The unregularized training loss, reduced by the v1 reduction."""
    loss = self._head.loss(labels=labels, logits=logits, features=features, mode=mode)
    if self._v1_reduction in (_V1.SUM, _V1.SUM_OVER_BATCH_SIZE):
      return loss  # the v2 head reduced it already
    weights = self._example_weights(features, logits)
    if self._v1_reduction == _V1.MEAN:
      divisor = tf.math.reduce_sum(weights)
    else:  # SUM_BY_NONZERO_WEIGHTS
      divisor = tf.cast(tf.math.count_nonzero(weights), tf.float32)
    # compute_weighted_loss's rule: no weight at all gives 0, not NaN.
    return tf.math.divide_no_nan(loss, divisor, name="value")

  def loss(self, labels: Any, logits: Any, features: base_head.Features = None,
           mode: Optional[str] = None,
           regularization_losses: base_head.RegularizationLosses = None) -> Any:
    """Builds the training loss reduced by the v1 reduction, then regularized.

    Args:
      labels: the labels, as the wrapped head takes them.
      logits: the logits.
      features: the features dict (for the weights).
      mode: a `ModeKeys` value (unused by the canned heads).
      regularization_losses: scalar losses added after the reduction.

    Returns:
      A scalar `Tensor`.
    """
    with tf.compat.v1.name_scope("v1_loss", values=(logits, labels)):
      training_loss = self._training_loss(labels, logits, features, mode)
    return losses_lib.regularized(training_loss, regularization_losses)

  def predictions(self, logits: Any, keys: Optional[Sequence[str]] = None) -> Dict[Any, Any]:
    """See `Head.predictions`: the wrapped head's."""
    # A regression head's predictions take no keys (tf.estimator's did not).
    return self._head.predictions(logits) if keys is None else self._head.predictions(logits, keys)

  def metrics(self, regularization_losses: base_head.RegularizationLosses = None) -> Dict[str, Any]:
    """See `Head.metrics`: the wrapped head's (a binary head's AUCs are replaced on update)."""
    return self._head.metrics(regularization_losses=regularization_losses)

  def update_metrics(self, eval_metrics: Dict[str, Any], features: base_head.Features,
                     logits: Any, labels: Any, mode: Optional[str] = None,
                     regularization_losses: base_head.RegularizationLosses = None
                     ) -> Dict[str, Any]:
    """Updates the wrapped head's metrics; a binary head's AUCs become v1 ones.

    Args:
      eval_metrics: the dict `metrics()` returned.
      features: the features dict (for the weights).
      logits: the logits.
      labels: the labels.
      mode: unused.
      regularization_losses: scalar losses for `regularization_loss`.

    Returns:
      `eval_metrics`, updated: metric objects, and for a binary head
      `(value, update_op)` pairs of `tf.compat.v1.metrics.auc` under `auc`
      and `auc_precision_recall`.
    """
    del mode
    updated = self._head.update_metrics(
        eval_metrics=eval_metrics, features=features, logits=logits, labels=labels,
        regularization_losses=regularization_losses)
    if self._binary:
      self._replace_aucs(updated, features, logits, labels)
    return updated

  def _replace_aucs(self, eval_metrics: Dict[str, Any], features: base_head.Features,
                    logits: Any, labels: Any) -> None:
    """Puts tf.estimator 2.15's v1 `auc` and `auc_precision_recall` into `eval_metrics`."""
    with tf.compat.v1.name_scope("v1_metrics", values=(logits, labels)):
      labels = labels_lib.check_dense_labels_match_logits_and_reshape(
          labels=labels, logits=logits, expected_labels_dimension=1)
      if self._label_vocabulary is not None:
        labels = classes_lib.class_id_table(self._label_vocabulary).lookup(labels)
      labels = tf.cast(labels, tf.float32)
      logistic = tf.cast(
          self._head.predictions(logits, keys=(PredictionKeys.LOGISTIC,))[PredictionKeys.LOGISTIC],
          tf.float32)
      weights = weights_lib.get_weights_and_check_match_logits(
          features=features, weight_column=self._weight_column, logits=logits)
      weights = tf_internals.broadcast_weights(weights, logistic)
      for key, curve in ((MetricKeys.AUC, "ROC"), (MetricKeys.AUC_PR, "PR")):
        eval_metrics[base_head.summary_key(self.name, key)] = tf.compat.v1.metrics.auc(
            labels=labels, predictions=logistic, weights=weights, curve=curve, name=key)

  def create_estimator_spec(self, features: base_head.Features, mode: str, logits: Any,
                            labels: Any = None, optimizer: Any = None,
                            trainable_variables: Optional[Sequence[Any]] = None,
                            train_op_fn: Optional[Callable[[Any], Any]] = None,
                            update_ops: Optional[Sequence[Any]] = None,
                            regularization_losses: base_head.RegularizationLosses = None
                            ) -> EstimatorSpec:
    """Builds the `EstimatorSpec` for `mode`, as tf.estimator 2.15's v1 heads.

    PREDICT is the wrapped head's. EVAL and TRAIN use this head's loss (and
    metrics); TRAIN with SUM reduction also writes the `average_loss` summary.

    Args:
      features: the features dict.
      mode: a `ModeKeys` value.
      logits: the logits.
      labels: the labels (TRAIN and EVAL).
      optimizer: a Keras 2 optimizer, or None.
      trainable_variables: the variables `optimizer` trains.
      train_op_fn: builds the train op from the loss when `optimizer` is None.
      update_ops: ops run with each training step.
      regularization_losses: scalar losses added to the loss.

    Returns:
      An `EstimatorSpec`.

    Raises:
      ValueError: see `Head.create_estimator_spec`.
    """
    if mode == ModeKeys.PREDICT:
      return self._head.create_estimator_spec(features=features, mode=mode, logits=logits)
    spec = spec_builder.single_head_estimator_spec(
        self, features=features, mode=mode, logits=logits, labels=labels, optimizer=optimizer,
        trainable_variables=trainable_variables, train_op_fn=train_op_fn, update_ops=update_ops,
        regularization_losses=regularization_losses,
        export_outputs_fn=lambda predictions: {})  # not used outside PREDICT
    if mode == ModeKeys.TRAIN and self._v1_reduction == _V1.SUM:
      with tf.compat.v1.name_scope(self.name, "head"):
        training_loss = (spec.loss if regularization_losses is None else
                         self._training_loss(labels, logits, features, mode))
        average_loss = training_loss / tf.math.reduce_sum(
            self._example_weights(features, logits))
      with tf.compat.v1.name_scope(""):
        tf.compat.v1.summary.scalar(
            base_head.summary_key(self.name, MetricKeys.LOSS_MEAN), average_loss)
    return spec
