"""The head of a compat.v1 canned Classifier or Regressor: a v2 head, reduced and measured as v1's.

tf.estimator 2.15's v1 canned classes trained on its v1 heads, which differ
from the v2 heads in what a program sees:

* `loss_reduction` is a `tf.compat.v1.losses.Reduction`, MEAN and
  SUM_BY_NONZERO_WEIGHTS included: the training loss is
  `tf.compat.v1.losses.compute_weighted_loss(unreduced_loss, weights,
  reduction)`, and the train op, the `loss` summary and evaluate()'s `loss`
  all use it.
* The metrics are `tf.compat.v1.metrics`: a binary classifier's `auc` and
  `auc_precision_recall` are trapezoidal (Keras's AUC interpolates the PR
  curve).
* With SUM reduction a training step also writes an `average_loss` summary:
  the loss over the sum of the example weights.
* The graph's names: the loss's ops lie directly under the head's scope
  (`head/weighted_loss/Sum`, `head/truediv`), the metrics under the caller's
  (`metrics/accuracy/value`), and a multi-class head builds its predictions
  in another order (`head/predictions/ExpandDims_2` is `class_ids`).
  Programs name them in hooks (tensorflow/models' wide_deep example logs
  `head/truediv`).

`V1Head` takes the predictions, signatures and per-example loss from the v2
head (built to SUM the weighted loss, or to take SUM_OVER_BATCH_SIZE as it
is) and builds the rest as v1 did.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

import tensorflow as tf
import tf_keras

from estimator_lite._util import tf_internals
from estimator_lite.canned.metric_keys import MetricKeys
from estimator_lite.canned.prediction_keys import PredictionKeys
from estimator_lite.estimator_spec import EstimatorSpec
from estimator_lite.head import base_head
from estimator_lite.head import classes as classes_lib
from estimator_lite.head import labels as labels_lib
from estimator_lite.head import single_head
from estimator_lite.head import spec_builder
from estimator_lite.head import train_op as train_op_lib
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
  """A v2 head's predictions, with tf.estimator 2.15's v1 loss, metrics, summaries and op names.

  The v2 head gives the predictions, signatures and the per-example loss;
  this head reduces that loss with `tf.compat.v1.losses.compute_weighted_loss`
  and evaluates with `tf.compat.v1.metrics`, as tf.estimator's v1 heads did,
  and builds each mode's ops where those heads built them, so that the names
  programs log (`head/weighted_loss/Sum`, `head/truediv`,
  `metrics/accuracy/value`) exist here too.

  Args:
    head: the v2 head (a `BinaryClassHead`, `MultiClassHead` or
      `RegressionHead`), built with `inner_head_loss_reduction(loss_reduction)`
      and `weight_column`.
    weight_column: the head's weight column (name or numeric column), or
      None; `head` applies it.
    loss_reduction: a value `v1_loss_reduction` accepts.
    loss_dimension: the last dimension of the head's unreduced loss (1 for a
      classifier, the label dimension for a regressor); `head` shapes it.
    binary_label_vocabulary: for a binary classification head, its label
      vocabulary, or None.
    binary: whether `head` is a binary classification head.
    multi_class_label_vocabulary: for a multi-class head, its label
      vocabulary, or None.
    multi_class: whether `head` is a multi-class classification head.

  Raises:
    ValueError: see `v1_loss_reduction`.
  """

  def __init__(self, head: single_head.SingleHead, weight_column: Any, loss_reduction: str,
               loss_dimension: int = 1, binary_label_vocabulary: Optional[Sequence[str]] = None,
               binary: bool = False,
               multi_class_label_vocabulary: Optional[Sequence[str]] = None,
               multi_class: bool = False) -> None:
    # The wrapped head weighs its per-example loss and gives it its shape.
    del weight_column, loss_dimension
    self._head = head
    self._v1_reduction = v1_loss_reduction(loss_reduction)
    self._binary = binary
    self._multi_class = multi_class
    self._label_vocabulary = (binary_label_vocabulary if binary
                              else multi_class_label_vocabulary)

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

  @property
  def weight_column(self) -> Any:
    """The wrapped head's weight column (see `SingleHead.weight_column`)."""
    return self._head.weight_column

  def _loss_spec(self, labels: Any, logits: Any, features: base_head.Features
                 ) -> Tuple[Any, Any, Any, Any]:
    """The reduced training loss, the unreduced loss, the weights and the processed labels.

    Built in the caller's name scope, as the v1 heads' `create_loss`.
    """
    unreduced_loss, weights, processed_labels = self._head.unreduced_loss_and_weights(
        labels=labels, logits=logits, features=features)
    training_loss = tf.compat.v1.losses.compute_weighted_loss(
        unreduced_loss, weights=weights, reduction=self._v1_reduction)
    return training_loss, unreduced_loss, weights, processed_labels

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
    del mode  # the loss is the same in every mode
    training_loss = self._loss_spec(labels, logits, features)[0]
    return _regularized(training_loss, regularization_losses)[0]

  def predictions(self, logits: Any, keys: Optional[Sequence[str]] = None) -> Dict[Any, Any]:
    """See `Head.predictions`: the wrapped head's (a multi-class head's built in v1's order)."""
    if self._multi_class:
      predictions = self._multi_class_predictions(logits)
      return predictions if keys is None else {key: predictions[key] for key in keys}
    # A regression head's predictions take no keys (tf.estimator's did not).
    return self._head.predictions(logits) if keys is None else self._head.predictions(logits, keys)

  def _multi_class_predictions(self, logits: Any) -> Dict[Any, Any]:
    """A multi-class head's predictions, built in the order (so with the op names) of v1's."""
    n_classes = self.logits_dimension
    logits = labels_lib.check_logits_final_dim(logits, n_classes)
    with tf.compat.v1.name_scope("predictions", values=(logits,)):
      predictions = {
          PredictionKeys.LOGITS: logits,
          PredictionKeys.ALL_CLASS_IDS: classes_lib.all_class_ids(logits, n_classes),
          PredictionKeys.ALL_CLASSES: _v1_all_classes(logits, n_classes, self._label_vocabulary),
      }
      classes_lib.add_class_predictions(
          predictions, (PredictionKeys.CLASS_IDS, PredictionKeys.CLASSES), logits,
          n_classes=n_classes, label_vocabulary=self._label_vocabulary)
      predictions[PredictionKeys.PROBABILITIES] = tf.nn.softmax(
          logits, name=PredictionKeys.PROBABILITIES)
    return predictions

  def metrics(self, regularization_losses: base_head.RegularizationLosses = None) -> Dict[str, Any]:
    """See `Head.metrics`: none yet; v1's metrics are `tf.compat.v1.metrics`, made on update."""
    del regularization_losses
    return {}

  def update_metrics(self, eval_metrics: Dict[str, Any], features: base_head.Features,
                     logits: Any, labels: Any, mode: Optional[str] = None,
                     regularization_losses: base_head.RegularizationLosses = None
                     ) -> Dict[str, Any]:
    """Adds tf.estimator 2.15's v1 metrics of this batch to `eval_metrics`.

    Args:
      eval_metrics: the dict `metrics()` returned.
      features: the features dict (for the weights).
      logits: the logits.
      labels: the labels.
      mode: unused.
      regularization_losses: scalar losses for `regularization_loss`.

    Returns:
      `eval_metrics`, with `(value, update_op)` pairs of `tf.compat.v1.metrics`.
    """
    del mode
    predictions = self.predictions(logits)
    _, unreduced_loss, weights, processed_labels = self._loss_spec(labels, logits, features)
    regularization_loss = (tf.math.add_n(list(regularization_losses))
                           if regularization_losses else None)
    eval_metrics.update(self._eval_metric_ops(
        predictions, processed_labels, weights, unreduced_loss, regularization_loss))
    return eval_metrics

  def _eval_metric_ops(self, predictions: Dict[Any, Any], labels: Any, weights: Any,
                       unreduced_loss: Any, regularization_loss: Any) -> Dict[str, Any]:
    """The v1 head's `tf.compat.v1.metrics`, named (and scoped) as tf.estimator 2.15's."""
    key = functools.partial(base_head.summary_key, self.name)
    v1_metrics = tf.compat.v1.metrics
    if not (self._binary or self._multi_class):
      # The v1 regression head opened no `metrics` scope and named two means by default.
      ops = {
          key(MetricKeys.LOSS_MEAN): v1_metrics.mean(values=unreduced_loss, weights=weights),
          key(MetricKeys.PREDICTION_MEAN): _weighted_mean(
              predictions[PredictionKeys.PREDICTIONS], weights, MetricKeys.PREDICTION_MEAN),
          key(MetricKeys.LABEL_MEAN): v1_metrics.mean(values=labels, weights=weights),
      }
      if regularization_loss is not None:
        ops[key(MetricKeys.LOSS_REGULARIZATION)] = v1_metrics.mean(
            values=regularization_loss, name=MetricKeys.LOSS_REGULARIZATION)
      return ops
    class_ids = predictions[PredictionKeys.CLASS_IDS]
    with tf.compat.v1.name_scope("metrics"):
      ops = {}
      if self._binary:
        label_mean = _weighted_mean(labels, weights, MetricKeys.LABEL_MEAN, cast_name="labels")
      ops[key(MetricKeys.LOSS_MEAN)] = v1_metrics.mean(
          values=unreduced_loss, weights=weights, name=MetricKeys.LOSS_MEAN)
      ops[key(MetricKeys.ACCURACY)] = v1_metrics.accuracy(
          labels=labels, predictions=class_ids, weights=weights, name=MetricKeys.ACCURACY)
      if self._binary:
        logistic = predictions[PredictionKeys.LOGISTIC]
        ops[key(MetricKeys.PRECISION)] = v1_metrics.precision(
            labels=labels, predictions=class_ids, weights=weights, name=MetricKeys.PRECISION)
        ops[key(MetricKeys.RECALL)] = v1_metrics.recall(
            labels=labels, predictions=class_ids, weights=weights, name=MetricKeys.RECALL)
        ops[key(MetricKeys.PREDICTION_MEAN)] = _weighted_mean(
            logistic, weights, MetricKeys.PREDICTION_MEAN)
        ops[key(MetricKeys.LABEL_MEAN)] = label_mean
        ops[key(MetricKeys.ACCURACY_BASELINE)] = _accuracy_baseline(label_mean)
        for metric_key, curve in ((MetricKeys.AUC, "ROC"), (MetricKeys.AUC_PR, "PR")):
          ops[key(metric_key)] = _auc(labels, logistic, weights, curve, metric_key)
      if regularization_loss is not None:
        ops[key(MetricKeys.LOSS_REGULARIZATION)] = v1_metrics.mean(
            values=regularization_loss, name=MetricKeys.LOSS_REGULARIZATION)
    return ops

  def create_estimator_spec(self, features: base_head.Features, mode: str, logits: Any,
                            labels: Any = None, optimizer: Any = None,
                            trainable_variables: Optional[Sequence[Any]] = None,
                            train_op_fn: Optional[Callable[[Any], Any]] = None,
                            update_ops: Optional[Sequence[Any]] = None,
                            regularization_losses: base_head.RegularizationLosses = None
                            ) -> EstimatorSpec:
    """Builds the `EstimatorSpec` for `mode`, as tf.estimator 2.15's v1 heads did.

    Under the head's name scope: the predictions, then (TRAIN, EVAL) the
    loss, reduced with `tf.compat.v1.losses.compute_weighted_loss`, then
    (TRAIN) the train op and, with SUM reduction, the loss over the summed
    example weights (`head/truediv`, the `average_loss` summary). EVAL's
    `tf.compat.v1.metrics` are built outside it, in the caller's scope
    (`metrics/accuracy`, `dnn/metrics/accuracy`), as v1's were.

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
    if mode == ModeKeys.PREDICT and not self._multi_class:
      return self._head.create_estimator_spec(features=features, mode=mode, logits=logits)
    with tf.compat.v1.name_scope(self.name, "head"):
      predictions = self.predictions(logits)
      if mode == ModeKeys.PREDICT:
        return EstimatorSpec(
            mode=mode, predictions=predictions,
            export_outputs=spec_builder.classification_export_outputs(
                predictions, n_classes=self.logits_dimension,
                label_vocabulary=self._label_vocabulary))
      training_loss, unreduced_loss, weights, processed_labels = self._loss_spec(
          labels, logits, features)
      loss, regularization_loss = _regularized(training_loss, regularization_losses)
      if mode == ModeKeys.TRAIN:
        train_op = train_op_lib.create_estimator_spec_train_op(
            head_name=self.name, optimizer=optimizer, train_op_fn=train_op_fn,
            update_ops=update_ops, trainable_variables=trainable_variables,
            regularized_training_loss=loss)
        average_loss = None
        if self._v1_reduction == _V1.SUM:
          # The loss over the example weights (each broadcast to its losses).
          weight_sum = tf.math.reduce_sum(weights * tf.ones_like(unreduced_loss))
          average_loss = training_loss / weight_sum
    if mode == ModeKeys.EVAL:
      return EstimatorSpec(
          mode=mode, predictions=predictions, loss=loss,
          eval_metric_ops=self._eval_metric_ops(
              predictions, processed_labels, weights, unreduced_loss, regularization_loss))
    key = functools.partial(base_head.summary_key, self.name)
    with tf.compat.v1.name_scope(""):
      tf.compat.v1.summary.scalar(key(MetricKeys.LOSS), loss)
      if average_loss is not None:
        tf.compat.v1.summary.scalar(key(MetricKeys.LOSS_MEAN), average_loss)
      if regularization_loss is not None:
        tf.compat.v1.summary.scalar(key(MetricKeys.LOSS_REGULARIZATION), regularization_loss)
    return EstimatorSpec(mode=mode, predictions=predictions, loss=loss, train_op=train_op)


def _v1_all_classes(logits: Any, n_classes: int,
                    label_vocabulary: Optional[Sequence[str]]) -> Any:
  """`[batch_size, n_classes]` class names, a vocabulary expanded as v1 did (`ExpandDims_1`)."""
  if not label_vocabulary:
    return classes_lib.all_classes(logits, n_classes)
  names = tf.expand_dims(list(label_vocabulary), axis=0)
  return tf.tile(names, multiples=[tf.shape(logits)[0], 1])


def _regularized(training_loss: Any, regularization_losses: base_head.RegularizationLosses
                 ) -> Tuple[Any, Any]:
  """`(training_loss + regularization, regularization)`, or `(training_loss, None)` without any."""
  if not regularization_losses:
    return training_loss, None
  regularization_loss = tf.math.add_n(list(regularization_losses))
  return tf.math.add_n([training_loss, regularization_loss]), regularization_loss


def _weighted_mean(values: Any, weights: Any, name: str, cast_name: str = "predictions") -> Any:
  """`tf.compat.v1.metrics.mean` of `values` as floats, weights broadcast to them, in scope `name`."""
  with tf.compat.v1.name_scope(name, values=(values, weights)) as scope:
    values = tf.cast(values, name=cast_name, dtype=tf.float32)
    if weights is not None:
      weights = tf_internals.broadcast_weights(weights, values)
    return tf.compat.v1.metrics.mean(values, weights=weights, name=scope)


def _accuracy_baseline(label_mean: Tuple[Any, Any]) -> Tuple[Any, Any]:
  """Always predicting the more frequent class: `max(m, 1 - m)` of the label mean's pair."""
  with tf.compat.v1.name_scope(None, "accuracy_baseline", label_mean):
    value, update_op = label_mean
    return (tf.math.maximum(value, 1. - value, name="value"),
            tf.math.maximum(update_op, 1. - update_op, name="update_op"))


def _auc(labels: Any, logistic: Any, weights: Any, curve: str, name: str) -> Tuple[Any, Any]:
  """`tf.compat.v1.metrics.auc` (trapezoids) of the logistic, weights broadcast to it."""
  with tf.compat.v1.name_scope(name, values=(logistic, labels, weights)) as scope:
    logistic = tf.cast(logistic, name="predictions", dtype=tf.float32)
    if weights is not None:
      weights = tf_internals.broadcast_weights(weights, logistic)
    return tf.compat.v1.metrics.auc(labels=labels, predictions=logistic, weights=weights,
                                    curve=curve, name=scope)
