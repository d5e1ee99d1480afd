"""MultiClassHead: one label, n_classes > 2 classes, softmax cross entropy (tf.estimator 2.15's)."""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Sequence

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
from estimator_lite.head import validation


class MultiClassHead(single_head.SingleHead):
  """A head for single-label classification into `n_classes` classes, softmax cross-entropy loss.

  Logits are `[D0, ... DN, n_classes]` (usually `[batch_size, n_classes]`).
  Labels are `[D0, ... DN, 1]` or `[D0, ... DN]`: integer class ids in
  `[0, n_classes)`, or, with `label_vocabulary`, strings from it. Example
  weights, when `weight_column` is given, are `[D0, ... DN]` or
  `[D0, ... DN, 1]`.

  Predictions: `logits`, `probabilities`, `class_ids`, `classes`,
  `all_class_ids`, `all_classes`. Metrics: `accuracy`, `average_loss`.
  Signatures: `serving_default` and `classification` (ClassificationOutput)
  and `predict`.

  A custom `loss_fn(labels, logits[, features, loss_reduction])` gets integer
  class ids `[D0, ... DN, 1]` and returns the unreduced loss
  `[D0, ... DN, 1]`.

  ```python
  head = estimator_lite.MultiClassHead(n_classes=3)
  spec = head.create_estimator_spec(features, mode, logits, labels=labels,
                                    optimizer=optimizer,
                                    trainable_variables=variables)
  ```

  Args:
    n_classes: the number of classes, more than 2 (use `BinaryClassHead`
      for 2).
    weight_column: a feature name or `tf.feature_column.numeric_column`
      holding each example's weight, which multiplies its loss.
    label_vocabulary: a list or tuple of the `n_classes` class names; labels
      are then strings from it. Without it labels are integer ids (strings
      are an error).
    loss_reduction: a `tf_keras.losses.Reduction` other than `NONE`:
      `SUM_OVER_BATCH_SIZE` (default; the weighted sum divided by the number
      of examples) or `SUM`.
    loss_fn: optional custom loss function.
    name: the head's name: suffixes its metric and summary keys and names
      its ops' scope.

  Raises:
    ValueError: `n_classes` is None or not more than 2, `label_vocabulary` is
      not a list or tuple of `n_classes` names, `loss_reduction` is invalid or
      `loss_fn` has other arguments (tf.estimator's texts).
  """

  _PREDICTION_KEYS = (PredictionKeys.LOGITS, PredictionKeys.PROBABILITIES,
                      PredictionKeys.CLASS_IDS, PredictionKeys.CLASSES,
                      PredictionKeys.ALL_CLASS_IDS, PredictionKeys.ALL_CLASSES)

  def __init__(self, n_classes: int, weight_column: Any = None,
               label_vocabulary: Optional[Sequence[str]] = None,
               loss_reduction: str = tf_keras.losses.Reduction.SUM_OVER_BATCH_SIZE,
               loss_fn: Optional[Callable[..., Any]] = None, name: Optional[str] = None) -> None:
    if n_classes is None:
      raise ValueError("n_classes cannot be None. Pass the number of classes (more than 2).")
    if label_vocabulary is not None and not isinstance(label_vocabulary, (list, tuple)):
      raise ValueError(
          f"label_vocabulary should be a list or a tuple. Given type: {type(label_vocabulary)}. "
          "Pass the class names as a list.")
    if label_vocabulary is not None and len(label_vocabulary) != n_classes:
      raise ValueError(
          '"label_vocabulary" does not have "n_classes" items. '
          f"len(label_vocabulary)={len(label_vocabulary)}, n_classes={n_classes}, "
          f"label_vocabulary={label_vocabulary}. Give one name per class.")
    validation.validate_loss_reduction(loss_reduction)
    if loss_fn:
      validation.validate_loss_fn_args(loss_fn)
    self._n_classes = validation.validate_n_classes(n_classes)
    super().__init__(logits_dimension=self._n_classes, weight_column=weight_column,
                     loss_reduction=loss_reduction, loss_fn=loss_fn, name=name)
    self._label_vocabulary = label_vocabulary
    self._accuracy_key = self._summary_key(MetricKeys.ACCURACY)

  def _processed_labels(self, logits: Any, labels: Any) -> Any:
    """Labels as class ids of logits' batch shape, checked to be in [0, n_classes)."""
    labels = labels_lib.check_dense_labels_match_logits_and_reshape(
        labels=labels, logits=logits, expected_labels_dimension=1)
    if self._label_vocabulary is None:
      if not labels.dtype.is_integer:
        raise ValueError(
            f"Labels dtype should be integer. Instead got {labels.dtype}. Give integer "
            f"class ids in [0, {self._n_classes}), or, for string labels, pass "
            f"label_vocabulary=[...] listing the {self._n_classes} class names (the first "
            "one is class 0).")
      label_ids = labels
    else:
      if labels.dtype != tf.string:
        raise ValueError(
            "Labels dtype should be string if there is a vocabulary. Instead got "
            f"{labels.dtype}. Give the class names as labels, or drop label_vocabulary.")
      label_ids = classes_lib.class_id_table(self._label_vocabulary).lookup(labels)
    return labels_lib.check_label_range(label_ids, self._n_classes)

  def _default_unweighted_loss(self, logits: Any, labels: Any) -> Any:
    unweighted_loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(
        labels=labels, logits=logits, reduction=tf.compat.v1.losses.Reduction.NONE)
    # Back to [D0, ... DN, 1], the weights' shape.
    return tf.expand_dims(unweighted_loss, axis=-1)

  def _export_outputs(self, predictions: Dict[str, Any]) -> Dict[str, ExportOutput]:
    return spec_builder.classification_export_outputs(
        predictions, n_classes=self._n_classes, label_vocabulary=self._label_vocabulary)

  def _add_predictions(self, predictions: Dict[Any, Any], keys: Sequence[str],
                       logits: Any) -> None:
    if PredictionKeys.PROBABILITIES in keys:
      predictions[PredictionKeys.PROBABILITIES] = tf.nn.softmax(
          logits, name=PredictionKeys.PROBABILITIES)
    classes_lib.add_class_predictions(predictions, keys, logits, n_classes=self._n_classes,
                                      label_vocabulary=self._label_vocabulary)

  def _add_head_metrics(self, eval_metrics: Dict[str, Any],
                        regularization_losses: base_head.RegularizationLosses) -> None:
    self._add_regularization_metric(eval_metrics, regularization_losses)
    eval_metrics[self._accuracy_key] = tf_keras.metrics.Accuracy(name=MetricKeys.ACCURACY)

  def _update_head_metrics(self, eval_metrics: Dict[str, Any], predictions: Dict[Any, Any],
                           labels: Any, processed_labels: Any, weights: Any) -> None:
    del labels  # accuracy compares the class ids
    eval_metrics[self._accuracy_key].update_state(
        y_true=processed_labels, y_pred=predictions[PredictionKeys.CLASS_IDS],
        sample_weight=weights)
