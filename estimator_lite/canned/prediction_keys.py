"""The keys of a canned estimator's predictions: tf.estimator 2.15's keys."""
from __future__ import annotations


class PredictionKeys:
  """Prediction key strings (the keys of each dict `predict()` yields)."""
  CLASSES = "classes"
  CLASS_IDS = "class_ids"
  ALL_CLASSES = "all_classes"
  ALL_CLASS_IDS = "all_class_ids"
  LOGISTIC = "logistic"
  LOGITS = "logits"
  PREDICTIONS = "predictions"
  PROBABILITIES = "probabilities"
  TOP_K = "top_k"
