"""BinaryClassHead: one label, two classes, sigmoid cross entropy (tf.estimator 2.15's)."""
from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, Optional, Sequence

import tensorflow as tf
import tf_keras

from estimator_lite._util import tf_internals
from estimator_lite.canned.metric_keys import MetricKeys
from estimator_lite.canned.prediction_keys import PredictionKeys
from estimator_lite.estimator_spec import EstimatorSpec
from estimator_lite.export import export_output
from estimator_lite.head import base_head
from estimator_lite.head import classes as classes_lib
from estimator_lite.head import labels as labels_lib
from estimator_lite.head import losses as losses_lib
from estimator_lite.head import spec_builder
from estimator_lite.head import validation
from estimator_lite.head import weights as weights_lib

_VALID_KEYS = (PredictionKeys.LOGITS, PredictionKeys.LOGISTIC, PredictionKeys.PROBABILITIES,
               PredictionKeys.CLASS_IDS, PredictionKeys.CLASSES, PredictionKeys.ALL_CLASS_IDS,
               PredictionKeys.ALL_CLASSES)


class BinaryClassHead(base_head.Head):
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

  def __init__(self, weight_column: Any = None, thresholds: Optional[Iterable[float]] = None,
               label_vocabulary: Optional[Sequence[str]] = None,
               loss_reduction: str = tf_keras.losses.Reduction.SUM_OVER_BATCH_SIZE,
               loss_fn: Optional[Callable[..., Any]] = None, name: Optional[str] = None) -> None:
    if label_vocabulary is not None and not isinstance(label_vocabulary, (list, tuple)):
      raise ValueError(
          f"label_vocabulary should be a list or a tuple. Given type: {type(label_vocabulary)}. "
          "Pass the class names as a list, e.g. ['no', 'yes'].")
    self._thresholds = validation.validate_thresholds(
        thresholds, "thresholds not in (0, 1): {thresholds}.")
    validation.validate_loss_reduction(loss_reduction)
    if loss_fn:
      validation.validate_loss_fn_args(loss_fn)
    self._weight_column = weight_column
    self._label_vocabulary = label_vocabulary
    self._loss_reduction = loss_reduction
    self._loss_fn = loss_fn
    self._name = name

    def key(metric_key: str) -> str:
      return base_head.summary_key(name, metric_key)

    self._loss_mean_key = key(MetricKeys.LOSS_MEAN)
    self._accuracy_key = key(MetricKeys.ACCURACY)
    self._precision_key = key(MetricKeys.PRECISION)
    self._recall_key = key(MetricKeys.RECALL)
    self._prediction_mean_key = key(MetricKeys.PREDICTION_MEAN)
    self._label_mean_key = key(MetricKeys.LABEL_MEAN)
    self._accuracy_baseline_key = key(MetricKeys.ACCURACY_BASELINE)
    self._auc_key = key(MetricKeys.AUC)
    self._auc_pr_key = key(MetricKeys.AUC_PR)
    self._loss_regularization_key = key(MetricKeys.LOSS_REGULARIZATION)
    self._accuracy_keys = tuple(key(MetricKeys.ACCURACY_AT_THRESHOLD % t) for t in self._thresholds)
    self._precision_keys = tuple(key(MetricKeys.PRECISION_AT_THRESHOLD % t) for t in self._thresholds)
    self._recall_keys = tuple(key(MetricKeys.RECALL_AT_THRESHOLD % t) for t in self._thresholds)

  @property
  def name(self) -> Optional[str]:
    """See `Head`."""
    return self._name

  @property
  def logits_dimension(self) -> int:
    """See `Head`: always 1."""
    return 1

  @property
  def loss_reduction(self) -> str:
    """See `Head`."""
    return self._loss_reduction

  def _processed_labels(self, logits: Any, labels: Any) -> Any:
    """Labels as float32 0/1 of logits' shape, checked to be in [0, 1]."""
    labels = labels_lib.check_dense_labels_match_logits_and_reshape(
        labels=labels, logits=logits, expected_labels_dimension=1)
    if self._label_vocabulary is not None:
      labels = classes_lib.class_id_table(self._label_vocabulary).lookup(labels)
    labels = tf.cast(labels, dtype=tf.float32)
    return labels_lib.check_label_range(labels, n_classes=2)

  def _unweighted_loss_and_weights(self, logits: Any, labels: Any, features: base_head.Features) -> Any:
    if self._loss_fn:
      unweighted_loss = losses_lib.call_loss_fn(
          loss_fn=self._loss_fn, labels=labels, logits=logits, features=features,
          expected_loss_dim=1)
    else:
      unweighted_loss = tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
    weights = weights_lib.get_weights_and_check_match_logits(
        features=features, weight_column=self._weight_column, logits=logits)
    return unweighted_loss, weights

  def loss(self, labels: Any, logits: Any, features: base_head.Features = None,
           mode: Optional[str] = None,
           regularization_losses: base_head.RegularizationLosses = None) -> Any:
    """Builds the regularized training loss; see `Head.loss`.

    Args:
      labels: `[D0, ... DN, 1]` or `[D0, ... DN]` labels.
      logits: `[D0, ... DN, 1]` logits.
      features: the features dict (for the weights).
      mode: unused.
      regularization_losses: scalar losses added after the reduction.

    Returns:
      A scalar `Tensor`.
    """
    del mode  # the loss is the same in every mode
    with tf.compat.v1.name_scope(
        "losses", values=(logits, labels, regularization_losses, features)):
      logits = labels_lib.check_logits_final_dim(logits, self.logits_dimension)
      labels = self._processed_labels(logits, labels)
      unweighted_loss, weights = self._unweighted_loss_and_weights(logits, labels, features)
      return losses_lib.weighted_training_loss(
          unweighted_loss, weights, self._loss_reduction, regularization_losses)

  def predictions(self, logits: Any, keys: Optional[Sequence[str]] = None) -> Dict[Any, Any]:
    """Builds the predictions named by `keys`; see `Head.predictions`.

    Args:
      logits: `[D0, ... DN, 1]` logits.
      keys: a list or tuple of `PredictionKeys` values; None for all of
        `logits`, `logistic`, `probabilities`, `class_ids`, `classes`,
        `all_class_ids` and `all_classes`.

    Returns:
      A dict of prediction key to `Tensor`.

    Raises:
      ValueError: a key this head does not make.
    """
    if keys:
      validation.check_prediction_keys(keys, _VALID_KEYS)
    else:
      keys = _VALID_KEYS
    logits = labels_lib.check_logits_final_dim(logits, self.logits_dimension)
    predictions: Dict[Any, Any] = {}
    with tf.compat.v1.name_scope("predictions", values=(logits,)):
      if PredictionKeys.LOGITS in keys:
        predictions[PredictionKeys.LOGITS] = logits
      if PredictionKeys.LOGISTIC in keys:
        predictions[PredictionKeys.LOGISTIC] = tf.math.sigmoid(logits, name=PredictionKeys.LOGISTIC)
      # Class 0's logit is 0: softmax over (0, logit) is (1 - sigmoid, sigmoid).
      two_class_logits = tf.concat((tf.zeros_like(logits), logits), axis=-1,
                                   name="two_class_logits")
      if PredictionKeys.PROBABILITIES in keys:
        predictions[PredictionKeys.PROBABILITIES] = tf.nn.softmax(
            two_class_logits, name=PredictionKeys.PROBABILITIES)
      if PredictionKeys.CLASS_IDS in keys or PredictionKeys.CLASSES in keys:
        class_ids = tf.expand_dims(
            tf.math.argmax(two_class_logits, axis=-1, name=PredictionKeys.CLASS_IDS), axis=-1)
        if PredictionKeys.CLASS_IDS in keys:
          predictions[PredictionKeys.CLASS_IDS] = class_ids
        if PredictionKeys.CLASSES in keys:
          if self._label_vocabulary is not None:
            classes = classes_lib.class_string_table(self._label_vocabulary).lookup(class_ids)
          else:
            classes = tf.strings.as_string(class_ids, name="str_classes")
          predictions[PredictionKeys.CLASSES] = classes
      if PredictionKeys.ALL_CLASS_IDS in keys:
        predictions[PredictionKeys.ALL_CLASS_IDS] = classes_lib.all_class_ids(logits, n_classes=2)
      if PredictionKeys.ALL_CLASSES in keys:
        predictions[PredictionKeys.ALL_CLASSES] = classes_lib.all_classes(
            logits, n_classes=2, label_vocabulary=self._label_vocabulary)
      return predictions

  def metrics(self, regularization_losses: base_head.RegularizationLosses = None) -> Dict[str, Any]:
    """Creates the evaluation metrics; see `Head.metrics`.

    Args:
      regularization_losses: when given, `regularization_loss` is created too.

    Returns:
      A dict of metric key to Keras 2 metric object.
    """
    metrics = tf_keras.metrics
    with tf.compat.v1.name_scope("metrics", values=(regularization_losses,)):
      eval_metrics: Dict[str, Any] = {
          self._loss_mean_key: metrics.Mean(name=MetricKeys.LOSS_MEAN),
          self._accuracy_key: metrics.Accuracy(name=MetricKeys.ACCURACY),
          self._precision_key: metrics.Precision(name=MetricKeys.PRECISION),
          self._recall_key: metrics.Recall(name=MetricKeys.RECALL),
          self._prediction_mean_key: metrics.Mean(name=MetricKeys.PREDICTION_MEAN),
          self._label_mean_key: metrics.Mean(name=MetricKeys.LABEL_MEAN),
          # Keras's default AUC summation is "interpolation", as in 2.15.
          self._auc_key: metrics.AUC(name=MetricKeys.AUC),
          self._auc_pr_key: metrics.AUC(curve="PR", name=MetricKeys.AUC_PR),
      }
      eval_metrics[self._accuracy_baseline_key] = AccuracyBaseline(
          eval_metrics[self._label_mean_key], name=MetricKeys.ACCURACY_BASELINE)
      if regularization_losses is not None:
        eval_metrics[self._loss_regularization_key] = metrics.Mean(
            name=MetricKeys.LOSS_REGULARIZATION)
      for i, threshold in enumerate(self._thresholds):
        eval_metrics[self._accuracy_keys[i]] = metrics.BinaryAccuracy(
            name=self._accuracy_keys[i], threshold=threshold)
        eval_metrics[self._precision_keys[i]] = metrics.Precision(
            name=self._precision_keys[i], thresholds=threshold)
        eval_metrics[self._recall_keys[i]] = metrics.Recall(
            name=self._recall_keys[i], thresholds=threshold)
    return eval_metrics

  def _update_auc(self, auc_metric: Any, labels: Any, predictions: Any, weights: Any = None) -> None:
    predictions = tf.cast(predictions, dtype=tf.float32)
    if weights is not None:
      weights = tf_internals.broadcast_weights(weights, predictions)
    auc_metric.update_state(y_true=labels, y_pred=predictions, sample_weight=weights)

  def update_metrics(self, eval_metrics: Dict[str, Any], features: base_head.Features,  # type: ignore[override]
                     logits: Any, labels: Any,
                     regularization_losses: base_head.RegularizationLosses = None) -> Dict[str, Any]:
    """Updates the metrics with one batch; see `Head.update_metrics`.

    Args:
      eval_metrics: the dict `metrics()` returned.
      features: the features dict (for the weights).
      logits: `[D0, ... DN, 1]` logits.
      labels: the labels.
      regularization_losses: scalar losses for `regularization_loss`.

    Returns:
      `eval_metrics`, updated.
    """
    class_ids = self.predictions(logits)[PredictionKeys.CLASS_IDS]
    logits = labels_lib.check_logits_final_dim(logits, self.logits_dimension)
    labels = self._processed_labels(logits, labels)
    unweighted_loss, weights = self._unweighted_loss_and_weights(logits, labels, features)
    eval_metrics[self._loss_mean_key].update_state(values=unweighted_loss, sample_weight=weights)
    for key in (self._accuracy_key, self._precision_key, self._recall_key):
      eval_metrics[key].update_state(y_true=labels, y_pred=class_ids, sample_weight=weights)
    logistic = self.predictions(logits, [PredictionKeys.LOGISTIC])[PredictionKeys.LOGISTIC]
    weights_lib.update_metric_with_broadcast_weights(
        eval_metrics[self._prediction_mean_key], logistic, weights)
    weights_lib.update_metric_with_broadcast_weights(
        eval_metrics[self._label_mean_key], labels, weights)
    eval_metrics[self._accuracy_baseline_key].update_state()
    self._update_auc(eval_metrics[self._auc_key], labels, logistic, weights)
    self._update_auc(eval_metrics[self._auc_pr_key], labels, logistic, weights)
    if regularization_losses is not None:
      eval_metrics[self._loss_regularization_key].update_state(
          values=tf.math.add_n(list(regularization_losses)))
    for i in range(len(self._thresholds)):
      for keys in (self._accuracy_keys, self._precision_keys, self._recall_keys):
        eval_metrics[keys[i]].update_state(y_true=labels, y_pred=logistic, sample_weight=weights)
    return eval_metrics

  def create_estimator_spec(self, features: base_head.Features, mode: str, logits: Any,
                            labels: Any = None, optimizer: Any = None,
                            trainable_variables: Optional[Sequence[Any]] = None,
                            train_op_fn: Optional[Callable[[Any], Any]] = None,
                            update_ops: Optional[Sequence[Any]] = None,
                            regularization_losses: base_head.RegularizationLosses = None
                            ) -> EstimatorSpec:
    """Builds the `EstimatorSpec` for `mode`; see `Head.create_estimator_spec`.

    Args:
      features: the features dict.
      mode: a `ModeKeys` value.
      logits: `[D0, ... DN, 1]` logits.
      labels: `[D0, ... DN, 1]` or `[D0, ... DN]` labels (TRAIN and EVAL).
      optimizer: a Keras 2 optimizer (TRAIN), or None.
      trainable_variables: the variables `optimizer` trains.
      train_op_fn: builds the train op from the loss when `optimizer` is None.
      update_ops: ops run with each training step.
      regularization_losses: scalar losses added to the loss; they are
        usually batch means, so keep the default SUM_OVER_BATCH_SIZE
        reduction with them.

    Returns:
      An `EstimatorSpec`.

    Raises:
      ValueError: in TRAIN both or neither of `optimizer` and `train_op_fn`.
    """
    def export_outputs(predictions: Dict[str, Any]) -> Dict[str, export_output.ExportOutput]:
      classifier_output = classes_lib.classification_output(
          scores=predictions[PredictionKeys.PROBABILITIES], n_classes=2,
          label_vocabulary=self._label_vocabulary)
      return {
          base_head.DEFAULT_SERVING_KEY: classifier_output,
          base_head.CLASSIFY_SERVING_KEY: classifier_output,
          base_head.REGRESS_SERVING_KEY: export_output.RegressionOutput(
              value=predictions[PredictionKeys.LOGISTIC]),
          base_head.PREDICT_SERVING_KEY: export_output.PredictOutput(predictions),
      }

    return spec_builder.single_head_estimator_spec(
        self, features=features, mode=mode, logits=logits, labels=labels, optimizer=optimizer,
        trainable_variables=trainable_variables, train_op_fn=train_op_fn, update_ops=update_ops,
        regularization_losses=regularization_losses, export_outputs_fn=export_outputs)


class AccuracyBaseline(tf_keras.metrics.Metric):
  """The accuracy of always predicting the more frequent class: max(m, 1 - m).

  m is the (weighted) label mean, read from the head's `label/mean` metric
  when the result is asked for, so this metric keeps no state of its own.
  Reading it through that metric's result() (rather than from its variables)
  keeps the value right under a distribution strategy: the result is then
  computed over every replica's examples.
  """

  def __init__(self, label_mean: Any, name: str = MetricKeys.ACCURACY_BASELINE) -> None:
    """Creates the metric.

    Args:
      label_mean: the Keras `Mean` metric of the labels.
      name: the metric's name.
    """
    super().__init__(name=name)
    self._label_mean = label_mean

  def update_state(self, *args: Any, **kwargs: Any) -> Any:
    """Does nothing: `label/mean`'s update carries the state."""
    del args, kwargs
    # A tensor (Keras's wrapper refuses an Operation), which Keras records as
    # this metric's update: Estimator asks every metric in eval_metric_ops for one.
    return tf.zeros([])

  def result(self) -> Any:
    mean = self._label_mean.result()
    return tf.math.maximum(mean, 1.0 - mean)

  def reset_state(self) -> None:
    """Nothing to reset."""
