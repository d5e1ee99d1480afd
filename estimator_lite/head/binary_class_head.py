"""BinaryClassHead: one label, two classes, sigmoid cross entropy (tf.estimator 2.15's)."""
from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, Optional, Sequence

import tensorflow as tf
import tf_keras

from estimator_lite._util import tf_internals
from estimator_lite.canned.metric_keys import MetricKeys
from estimator_lite.canned.prediction_keys import PredictionKeys
from estimator_lite.export.export_output import ExportOutput
from estimator_lite.head import base_head
from estimator_lite.head import classes as classes_lib
from estimator_lite.head import labels as labels_lib
from estimator_lite.head import single_head
from estimator_lite.head import spec_builder
from estimator_lite.head import threshold_metrics
from estimator_lite.head import validation
from estimator_lite.head import weights as weights_lib


class BinaryClassHead(single_head.SingleHead):
  """A head for binary classification: one logit per example, sigmoid cross-entropy loss.

  Logits are `[D0, ... DN, 1]` (usually `[batch_size, 1]`). Labels have the
  same shape (or lack the last dimension): floats in [0, 1], or, with
  `label_vocabulary`, strings from it. Example weights, when
  `weight_column` is given, are `[D0, ... DN]` or `[D0, ... DN, 1]`.

  Predictions: `logits`, `logistic` (sigmoid), `probabilities` (of class 0
  and 1), `class_ids`, `classes`, `all_class_ids`, `all_classes`. Metrics:
  `accuracy`, `accuracy_baseline`, `auc`, `auc_precision_recall`,
  `average_loss`, `label/mean`, `precision`, `prediction/mean`, `recall`, and
  accuracy/precision/recall at each of `thresholds`. Signatures:
  `serving_default` and `classification` (ClassificationOutput),
  `regression` (the logistic) and `predict`.

  A custom `loss_fn(labels, logits[, features, loss_reduction])` returns the
  unreduced loss, `[D0, ... DN, 1]`; it receives float labels (vocabulary
  strings already mapped to ids).

  ```python
  head = estimator_lite.BinaryClassHead(weight_column="w")
  spec = head.create_estimator_spec(features, mode, logits, labels=labels,
                                    optimizer=optimizer,
                                    trainable_variables=variables)
  ```

  Args:
    weight_column: a feature name or `tf.feature_column.numeric_column`
      holding each example's weight, which multiplies its loss.
    thresholds: floats in (0, 1): for each, accuracy, precision and recall
      are reported with the logistic above it counted as class 1.
    label_vocabulary: a list or tuple of the two class names; labels are then
      strings from it. Without it labels are already 0/1 (strings are an
      error).
    loss_reduction: a `tf_keras.losses.Reduction` other than `NONE`:
      `SUM_OVER_BATCH_SIZE` (default; the weighted sum divided by the number
      of examples) or `SUM`.
    loss_fn: optional custom loss function.
    name: the head's name: suffixes its metric and summary keys
      (`"auc/<name>"`) and names its ops' scope.

  Raises:
    ValueError: `label_vocabulary` is not a list or tuple, a threshold is
      outside (0, 1), `loss_reduction` is invalid or `loss_fn` has other
      arguments (tf.estimator's texts).
  """

  _PREDICTION_KEYS = (PredictionKeys.LOGITS, PredictionKeys.LOGISTIC,
                      PredictionKeys.PROBABILITIES, PredictionKeys.CLASS_IDS,
                      PredictionKeys.CLASSES, PredictionKeys.ALL_CLASS_IDS,
                      PredictionKeys.ALL_CLASSES)

  def __init__(self, weight_column: Any = None, thresholds: Optional[Iterable[float]] = None,
               label_vocabulary: Optional[Sequence[str]] = None,
               loss_reduction: str = tf_keras.losses.Reduction.SUM_OVER_BATCH_SIZE,
               loss_fn: Optional[Callable[..., Any]] = None, name: Optional[str] = None) -> None:
    if label_vocabulary is not None and not isinstance(label_vocabulary, (list, tuple)):
      raise ValueError(
          f"label_vocabulary should be a list or a tuple. Given type: {type(label_vocabulary)}. "
          "Pass the class names as a list, e.g. ['no', 'yes'].")
    thresholds = validation.validate_thresholds(
        thresholds, "thresholds not in (0, 1): {thresholds}.")
    validation.validate_loss_reduction(loss_reduction)
    if loss_fn:
      validation.validate_loss_fn_args(loss_fn)
    super().__init__(logits_dimension=1, weight_column=weight_column,
                     loss_reduction=loss_reduction, loss_fn=loss_fn, name=name)
    self._label_vocabulary = label_vocabulary
    self._accuracy_key = self._summary_key(MetricKeys.ACCURACY)
    self._precision_key = self._summary_key(MetricKeys.PRECISION)
    self._recall_key = self._summary_key(MetricKeys.RECALL)
    self._prediction_mean_key = self._summary_key(MetricKeys.PREDICTION_MEAN)
    self._label_mean_key = self._summary_key(MetricKeys.LABEL_MEAN)
    self._accuracy_baseline_key = self._summary_key(MetricKeys.ACCURACY_BASELINE)
    self._auc_key = self._summary_key(MetricKeys.AUC)
    self._auc_pr_key = self._summary_key(MetricKeys.AUC_PR)
    self._threshold_metrics = threshold_metrics.ThresholdMetrics(name, thresholds)

  def _processed_labels(self, logits: Any, labels: Any) -> Any:
    """Labels as float32 0/1 of logits' shape, checked to be in [0, 1]."""
    labels = labels_lib.check_dense_labels_match_logits_and_reshape(
        labels=labels, logits=logits, expected_labels_dimension=1)
    if self._label_vocabulary is not None:
      labels = classes_lib.class_id_table(self._label_vocabulary).lookup(labels)
    elif labels.dtype == tf.string:
      # tf.estimator 2.15 failed only when the step ran ("Cast string to
      # float"), after writing a first checkpoint; the dtype is known now.
      raise ValueError(
          "Labels dtype should be numeric (class ids 0 or 1) without label_vocabulary. "
          f"Instead got {labels.dtype}. For string labels pass label_vocabulary=[...] listing "
          "the two class names (e.g. label_vocabulary=['no', 'yes'], the first one is class "
          "0), or give the labels as integer class ids 0 or 1.")
    labels = tf.cast(labels, dtype=tf.float32)
    return labels_lib.check_label_range(labels, n_classes=2)

  def _default_unweighted_loss(self, logits: Any, labels: Any) -> Any:
    return tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)

  def _export_outputs(self, predictions: Dict[str, Any]) -> Dict[str, ExportOutput]:
    return spec_builder.classification_export_outputs(
        predictions, n_classes=2, label_vocabulary=self._label_vocabulary,
        regression_key=PredictionKeys.LOGISTIC)

  def _add_predictions(self, predictions: Dict[Any, Any], keys: Sequence[str],
                       logits: Any) -> None:
    if PredictionKeys.LOGISTIC in keys:
      predictions[PredictionKeys.LOGISTIC] = tf.math.sigmoid(logits, name=PredictionKeys.LOGISTIC)
    # Class 0's logit is 0: softmax over (0, logit) is (1 - sigmoid, sigmoid).
    two_class_logits = tf.concat((tf.zeros_like(logits), logits), axis=-1,
                                 name="two_class_logits")
    if PredictionKeys.PROBABILITIES in keys:
      predictions[PredictionKeys.PROBABILITIES] = tf.nn.softmax(
          two_class_logits, name=PredictionKeys.PROBABILITIES)
    classes_lib.add_class_predictions(predictions, keys, two_class_logits, n_classes=2,
                                      label_vocabulary=self._label_vocabulary)

  def _add_head_metrics(self, eval_metrics: Dict[str, Any],
                        regularization_losses: base_head.RegularizationLosses) -> None:
    metrics = tf_keras.metrics
    eval_metrics.update({
        self._accuracy_key: metrics.Accuracy(name=MetricKeys.ACCURACY),
        self._precision_key: metrics.Precision(name=MetricKeys.PRECISION),
        self._recall_key: metrics.Recall(name=MetricKeys.RECALL),
        self._prediction_mean_key: metrics.Mean(name=MetricKeys.PREDICTION_MEAN),
        self._label_mean_key: metrics.Mean(name=MetricKeys.LABEL_MEAN),
    })
    # In tf.estimator's order (the spec builds the results in it, which names them).
    eval_metrics[self._accuracy_baseline_key] = AccuracyBaseline(
        eval_metrics[self._label_mean_key], name=MetricKeys.ACCURACY_BASELINE)
    # Keras's default AUC summation is "interpolation", as in 2.15.
    eval_metrics[self._auc_key] = metrics.AUC(name=MetricKeys.AUC)
    eval_metrics[self._auc_pr_key] = metrics.AUC(curve="PR", name=MetricKeys.AUC_PR)
    self._add_regularization_metric(eval_metrics, regularization_losses)
    self._threshold_metrics.add_metrics(eval_metrics)

  def _update_auc(self, auc_metric: Any, labels: Any, predictions: Any,
                  weights: Any = None) -> None:
    predictions = tf.cast(predictions, dtype=tf.float32)
    if weights is not None:
      weights = tf_internals.broadcast_weights(weights, predictions)
    auc_metric.update_state(y_true=labels, y_pred=predictions, sample_weight=weights)

  def _update_head_metrics(self, eval_metrics: Dict[str, Any], predictions: Dict[Any, Any],
                           labels: Any, processed_labels: Any, weights: Any) -> None:
    del labels  # the metrics compare the processed 0/1 labels
    class_ids = predictions[PredictionKeys.CLASS_IDS]
    for key in (self._accuracy_key, self._precision_key, self._recall_key):
      eval_metrics[key].update_state(
          y_true=processed_labels, y_pred=class_ids, sample_weight=weights)
    logistic = predictions[PredictionKeys.LOGISTIC]
    weights_lib.update_metric_with_broadcast_weights(
        eval_metrics[self._prediction_mean_key], logistic, weights)
    weights_lib.update_metric_with_broadcast_weights(
        eval_metrics[self._label_mean_key], processed_labels, weights)
    eval_metrics[self._accuracy_baseline_key].record_update()
    self._update_auc(eval_metrics[self._auc_key], processed_labels, logistic, weights)
    self._update_auc(eval_metrics[self._auc_pr_key], processed_labels, logistic, weights)
    self._threshold_metrics.update(eval_metrics, processed_labels, logistic, weights)


class AccuracyBaseline(tf_keras.metrics.Metric):
  """The accuracy of always predicting the more frequent class: max(m, 1 - m).

  m is the (weighted) label mean, read from the head's `label/mean` metric's
  total and count when the result is asked for, so this metric keeps no state
  of its own. Keras computes a result in the cross-replica context, where
  those variables read as their sum over the replicas: under a distribution
  strategy the value is over every replica's examples.
  """

  def __init__(self, label_mean: Any, name: str = MetricKeys.ACCURACY_BASELINE) -> None:
    """Creates the metric.

    Args:
      label_mean: the Keras `Mean` metric of the labels.
      name: the metric's name.
    """
    super().__init__(name=name)
    self._label_mean = label_mean

  def update_state(self, *args: Any, **kwargs: Any) -> None:
    """Does nothing: `label/mean`'s update carries the state (see `record_update`)."""
    del args, kwargs

  def record_update(self) -> None:
    """Records this batch's update: a no-op in the caller's graph, as tf.estimator's was.

    Estimator asks every metric in eval_metric_ops for an update op; 2.15's
    was this `NoOp`, built in the graph itself (Keras traces update_state()
    into a function), where programs fetch it by name.
    """
    self.add_update(tf.no_op())

  def result(self) -> Any:
    """max(m, 1 - m) of the label mean m: max(total, count - total) / count (0 before any example)."""
    # From the label mean's variables, not its result(): one op named per
    # result, as tf.estimator's Mean over those variables made.
    total, count = self._label_mean.total, self._label_mean.count
    return tf.math.divide_no_nan(tf.math.maximum(total, count - total), count)

  def reset_state(self) -> None:
    """Nothing to reset."""
