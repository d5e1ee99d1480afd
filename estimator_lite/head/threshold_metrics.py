"""Accuracy, precision and recall at each probability threshold (binary, multi-label heads)."""
from __future__ import annotations

from typing import Any, Dict, Optional, Sequence

import tf_keras

from estimator_lite.canned.metric_keys import MetricKeys
from estimator_lite.head import base_head


class ThresholdMetrics:
  """The `accuracy/positive_threshold_<t>` (and precision, recall) metrics of a head.

  A probability above the threshold counts as the positive class. The metric
  keys, and the Keras metrics' names, are suffixed by the head's name.

  Args:
    head_name: the head's name, or None.
    thresholds: the validated thresholds, each in (0, 1).
  """

  def __init__(self, head_name: Optional[str], thresholds: Sequence[float]) -> None:
    self._thresholds = tuple(thresholds)
    self._accuracy_keys = tuple(
        base_head.summary_key(head_name, MetricKeys.ACCURACY_AT_THRESHOLD % t)
        for t in self._thresholds)
    self._precision_keys = tuple(
        base_head.summary_key(head_name, MetricKeys.PRECISION_AT_THRESHOLD % t)
        for t in self._thresholds)
    self._recall_keys = tuple(
        base_head.summary_key(head_name, MetricKeys.RECALL_AT_THRESHOLD % t)
        for t in self._thresholds)

  def add_metrics(self, eval_metrics: Dict[str, Any]) -> None:
    """Adds a new, not yet updated, metric for each threshold to `eval_metrics`.

    Args:
      eval_metrics: the head's metrics dict, extended in place.
    """
    metrics = tf_keras.metrics
    for i, threshold in enumerate(self._thresholds):
      eval_metrics[self._accuracy_keys[i]] = metrics.BinaryAccuracy(
          name=self._accuracy_keys[i], threshold=threshold)
      eval_metrics[self._precision_keys[i]] = metrics.Precision(
          name=self._precision_keys[i], thresholds=threshold)
      eval_metrics[self._recall_keys[i]] = metrics.Recall(
          name=self._recall_keys[i], thresholds=threshold)

  def update(self, eval_metrics: Dict[str, Any], labels: Any, probabilities: Any,
             weights: Any) -> None:
    """Updates every threshold's metrics with one batch.

    Args:
      eval_metrics: the dict `add_metrics` extended.
      labels: 0/1 labels of `probabilities`' shape.
      probabilities: the predicted probabilities of the positive class(es).
      weights: the example weights.
    """
    for i in range(len(self._thresholds)):
      for keys in (self._accuracy_keys, self._precision_keys, self._recall_keys):
        eval_metrics[keys[i]].update_state(
            y_true=labels, y_pred=probabilities, sample_weight=weights)
