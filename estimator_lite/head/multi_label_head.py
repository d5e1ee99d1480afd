"""MultiLabelHead: any number of the n_classes classes per example, sigmoid cross entropy
(tf.estimator 2.15's)."""
from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, Optional, Sequence, Union

import tensorflow as tf
import tf_keras

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


class MultiLabelHead(single_head.SingleHead):
  """A head for multi-label classification: each example may be in several of `n_classes` classes.

  Logits are `[D0, ... DN, n_classes]`. Labels are either a multi-hot integer
  `Tensor` of the same shape (0/1 per class) or a `SparseTensor` listing each
  example's classes (dense shape `[D0, ... DN, ?]`): integer class ids, or,
  with `label_vocabulary`, class names. Example weights, when
  `weight_column` is given, are `[D0, ... DN]` or `[D0, ... DN, 1]`
  (per-class weights are not supported). The loss of an example is the mean
  of its per-class sigmoid cross-entropies.

  Predictions: `logits`, `probabilities` (per-class sigmoid), `classes` (all
  class names). Metrics: `auc`, `auc_precision_recall`, `average_loss`,
  accuracy/precision/recall at each of `thresholds`, and
  `probability_mean`/`auc`/`auc_precision_recall` for each class of
  `classes_for_class_based_metrics`. Signatures: `serving_default` and
  `classification` (ClassificationOutput) and `predict`.

  A custom `loss_fn(labels, logits[, features, loss_reduction])` gets the
  multi-hot labels `[D0, ... DN, n_classes]` and returns the unreduced loss
  `[D0, ... DN, 1]`.

  Args:
    n_classes: the number of classes, more than 1 (for one class use
      `BinaryClassHead`).
    weight_column: a feature name or `tf.feature_column.numeric_column`
      holding each example's weight, which multiplies its loss.
    thresholds: floats in (0, 1): for each, accuracy, precision and recall
      are reported with a class counted as predicted when its probability is
      above it.
    label_vocabulary: a list or tuple of the `n_classes` class names; labels
      are then a string `SparseTensor` of names from it.
    loss_reduction: a `tf_keras.losses.Reduction` other than `NONE`:
      `SUM_OVER_BATCH_SIZE` (default; the weighted sum divided by the number
      of examples) or `SUM`.
    loss_fn: optional custom loss function.
    classes_for_class_based_metrics: class ids (in `[0, n_classes)`) or
      class names (from `label_vocabulary`) to report per-class metrics for.
    name: the head's name: suffixes its metric and summary keys and names
      its ops' scope.

  Raises:
    ValueError: `n_classes` below 2, a threshold outside (0, 1), a bad
      `label_vocabulary`, `loss_reduction` or `loss_fn`, or a class of
      `classes_for_class_based_metrics` that does not exist (tf.estimator's
      texts).
  """

  _PREDICTION_KEYS = (PredictionKeys.LOGITS, PredictionKeys.PROBABILITIES, PredictionKeys.CLASSES)

  def __init__(self, n_classes: int, weight_column: Any = None,
               thresholds: Optional[Iterable[float]] = None,
               label_vocabulary: Optional[Sequence[str]] = None,
               loss_reduction: str = tf_keras.losses.Reduction.SUM_OVER_BATCH_SIZE,
               loss_fn: Optional[Callable[..., Any]] = None,
               classes_for_class_based_metrics: Optional[Sequence[Union[int, str]]] = None,
               name: Optional[str] = None) -> None:
    if n_classes is None or n_classes < 2:
      raise ValueError(
          f"n_classes must be > 1 for multi-label classification. Given: {n_classes}. "
          "For a single class use BinaryClassHead.")
    thresholds = validation.validate_thresholds(
        thresholds, "thresholds must be in (0, 1) range. Given: {threshold}")
    if label_vocabulary is not None:
      if not isinstance(label_vocabulary, (list, tuple)):
        raise ValueError(
            f"label_vocabulary must be a list or tuple. Given type: {type(label_vocabulary)}. "
            "Pass the class names as a list.")
      if len(label_vocabulary) != n_classes:
        raise ValueError(
            f"Length of label_vocabulary must be n_classes ({n_classes}). Given: "
            f"{len(label_vocabulary)}. Give one name per class.")
    if loss_fn:
      validation.validate_loss_fn_args(loss_fn)
    validation.validate_loss_reduction(loss_reduction)
    self._classes_for_class_based_metrics = _class_ids_for_metrics(
        classes_for_class_based_metrics, n_classes, label_vocabulary)
    self._n_classes = n_classes
    super().__init__(logits_dimension=n_classes, weight_column=weight_column,
                     loss_reduction=loss_reduction, loss_fn=loss_fn, name=name)
    self._label_vocabulary = label_vocabulary
    self._auc_key = self._summary_key(MetricKeys.AUC)
    self._auc_pr_key = self._summary_key(MetricKeys.AUC_PR)
    self._threshold_metrics = threshold_metrics.ThresholdMetrics(name, thresholds)
    prob_keys, auc_keys, auc_pr_keys = [], [], []
    for class_id in self._classes_for_class_based_metrics:
      if label_vocabulary is None:
        prob_keys.append(self._summary_key(MetricKeys.PROBABILITY_MEAN_AT_CLASS % class_id))
        auc_keys.append(self._summary_key(MetricKeys.AUC_AT_CLASS % class_id))
        auc_pr_keys.append(self._summary_key(MetricKeys.AUC_PR_AT_CLASS % class_id))
      else:
        class_name = label_vocabulary[class_id]
        prob_keys.append(self._summary_key(MetricKeys.PROBABILITY_MEAN_AT_NAME % class_name))
        auc_keys.append(self._summary_key(MetricKeys.AUC_AT_NAME % class_name))
        auc_pr_keys.append(self._summary_key(MetricKeys.AUC_PR_AT_NAME % class_name))
    self._prob_keys = tuple(prob_keys)
    self._auc_keys = tuple(auc_keys)
    self._auc_pr_keys = tuple(auc_pr_keys)

  def _processed_labels(self, logits: Any, labels: Any) -> Any:
    """Labels as a multi-hot int64 `[D0, ... DN, n_classes]` tensor."""
    if labels is None:
      raise ValueError(labels_lib.LABEL_NONE_ERR_MSG)
    if isinstance(labels, (tf.SparseTensor, tf.compat.v1.SparseTensorValue)):
      labels = tf.SparseTensor.from_value(labels)
      if labels.dtype == tf.string:
        label_ids = tf.SparseTensor(
            indices=labels.indices,
            values=classes_lib.class_id_table(self._label_vocabulary or ()).lookup(labels.values),
            dense_shape=labels.dense_shape)
        processed_labels = tf.sparse.to_indicator(label_ids, self._n_classes)
      else:
        if not labels.values.dtype.is_integer:
          raise ValueError(
              f"Labels dtype should be integer. Instead got {labels.values.dtype}. Give "
              "class ids, or label_vocabulary with string labels.")
        checked_values = labels_lib.check_label_range(
            labels.values, self._n_classes,
            message=f"labels must be an integer SparseTensor with values in [0, {self._n_classes})"
                    f". Fix: each label is a class id below n_classes={self._n_classes}.")
        with tf.control_dependencies([checked_values]):
          processed_labels = tf.sparse.to_indicator(labels, self._n_classes)
      processed_labels = tf.cast(processed_labels, dtype=tf.int64)
    else:
      processed_labels = labels_lib.check_label_range(
          tf.convert_to_tensor(labels), 2,
          message="labels must be an integer indicator Tensor with values in [0, 1]. Fix: "
                  "dense labels are multi-hot, one 0 or 1 per class.")
    return labels_lib.check_dense_labels_match_logits_and_reshape(
        labels=processed_labels, logits=logits, expected_labels_dimension=self.logits_dimension)

  def _default_unweighted_loss(self, logits: Any, labels: Any) -> Any:
    unweighted_loss = tf.compat.v1.losses.sigmoid_cross_entropy(
        multi_class_labels=labels, logits=logits, reduction=tf.compat.v1.losses.Reduction.NONE)
    # One loss per example: the mean over its classes.
    return tf.reduce_mean(unweighted_loss, axis=-1, keepdims=True)

  def _export_outputs(self, predictions: Dict[str, Any]) -> Dict[str, ExportOutput]:
    return spec_builder.classification_export_outputs(
        predictions, n_classes=self._n_classes, label_vocabulary=self._label_vocabulary)

  def _add_predictions(self, predictions: Dict[Any, Any], keys: Sequence[str],
                       logits: Any) -> None:
    if PredictionKeys.PROBABILITIES in keys:
      predictions[PredictionKeys.PROBABILITIES] = tf.math.sigmoid(
          logits, name=PredictionKeys.PROBABILITIES)
    if PredictionKeys.CLASSES in keys:
      predictions[PredictionKeys.CLASSES] = classes_lib.all_classes(
          logits, self._n_classes, self._label_vocabulary)

  def _add_head_metrics(self, eval_metrics: Dict[str, Any],
                        regularization_losses: base_head.RegularizationLosses) -> None:
    metrics = tf_keras.metrics
    eval_metrics[self._auc_key] = metrics.AUC(name=MetricKeys.AUC)
    eval_metrics[self._auc_pr_key] = metrics.AUC(curve="PR", name=MetricKeys.AUC_PR)
    self._add_regularization_metric(eval_metrics, regularization_losses)
    self._threshold_metrics.add_metrics(eval_metrics)
    for i in range(len(self._classes_for_class_based_metrics)):
      eval_metrics[self._prob_keys[i]] = metrics.Mean(name=self._prob_keys[i])
      eval_metrics[self._auc_keys[i]] = metrics.AUC(name=self._auc_keys[i])
      eval_metrics[self._auc_pr_keys[i]] = metrics.AUC(curve="PR", name=self._auc_pr_keys[i])

  def _update_head_metrics(self, eval_metrics: Dict[str, Any], predictions: Dict[Any, Any],
                           labels: Any, processed_labels: Any, weights: Any) -> None:
    del labels  # the metrics compare the multi-hot labels
    probabilities = predictions[PredictionKeys.PROBABILITIES]
    for key in (self._auc_key, self._auc_pr_key):
      eval_metrics[key].update_state(
          y_true=processed_labels, y_pred=probabilities, sample_weight=weights)
    self._threshold_metrics.update(eval_metrics, processed_labels, probabilities, weights)
    for i, class_id in enumerate(self._classes_for_class_based_metrics):
      # The class's column, keeping the batch dimensions: [D0, ... DN, 1].
      batch_rank = tf.rank(probabilities) - 1
      begin = tf.concat([tf.zeros([batch_rank], dtype=tf.int32), [class_id]], axis=0)
      size = tf.concat([-1 * tf.ones([batch_rank], dtype=tf.int32), [1]], axis=0)
      class_probabilities = tf.slice(probabilities, begin=begin, size=size)
      class_labels = tf.slice(processed_labels, begin=begin, size=size)
      weights_lib.update_metric_with_broadcast_weights(
          eval_metrics[self._prob_keys[i]], class_probabilities, weights)
      for key in (self._auc_keys[i], self._auc_pr_keys[i]):
        eval_metrics[key].update_state(
            y_true=class_labels, y_pred=class_probabilities, sample_weight=weights)


def _class_ids_for_metrics(classes: Optional[Sequence[Union[int, str]]], n_classes: int,
                           label_vocabulary: Optional[Sequence[str]]) -> tuple:
  """`classes_for_class_based_metrics` as class ids, checked against the classes there are."""
  if not classes:
    return ()
  classes = tuple(classes)
  if isinstance(classes[0], str):
    if not label_vocabulary:
      raise ValueError(
          "label_vocabulary must be provided when classes_for_class_based_metrics are "
          "strings. Give label_vocabulary, or class ids instead of names.")
    return tuple(list(label_vocabulary).index(str(name)) for name in classes)
  for class_id in classes:
    if class_id < 0 or class_id >= n_classes:  # type: ignore[operator]
      raise ValueError(
          f"All classes_for_class_based_metrics must be in range [0, {n_classes - 1}]. "
          f"Given: {class_id}. Class ids start at 0.")
  return classes
