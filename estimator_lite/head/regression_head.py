"""Regression heads: RegressionHead (mean squared error), PoissonRegressionHead and
LogisticRegressionHead (tf.estimator 2.15's)."""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional

import tensorflow as tf
import tf_keras

from estimator_lite.canned.metric_keys import MetricKeys
from estimator_lite.canned.prediction_keys import PredictionKeys
from estimator_lite.export.export_output import ExportOutput
from estimator_lite.head import base_head
from estimator_lite.head import labels as labels_lib
from estimator_lite.head import single_head
from estimator_lite.head import spec_builder
from estimator_lite.head import validation
from estimator_lite.head import weights as weights_lib


class RegressionHead(single_head.SingleHead):
  """A head for regression of `label_dimension` real values, mean squared error loss.

  Logits and labels are `[D0, ... DN, label_dimension]` (labels may lack the
  last dimension when it is 1). The loss is weighted and reduced over every
  example and every label dimension. Example weights, when `weight_column`
  is given, are `[D0, ... DN]`, `[D0, ... DN, 1]` or
  `[D0, ... DN, label_dimension]`.

  Predictions: `predictions` (and `logits` when there is an
  `inverse_link_fn`). Metrics: `average_loss`, `label/mean`,
  `prediction/mean`. Signatures: `serving_default` and `regression`
  (RegressionOutput) and `predict`.

  A custom `loss_fn(labels, logits[, features, loss_reduction])` returns the
  unreduced loss, `[D0, ... DN, label_dimension]`. `inverse_link_fn` (the
  "mean function" of a generalized linear model, e.g. `tf.exp` for Poisson
  regression) maps logits to the predicted values.

  ```python
  head = estimator_lite.RegressionHead(label_dimension=2)
  spec = head.create_estimator_spec(features, mode, logits, labels=labels,
                                    optimizer=optimizer,
                                    trainable_variables=variables)
  ```

  Args:
    label_dimension: how many values each example has as its label (the last
      dimension of labels and logits).
    weight_column: a feature name or `tf.feature_column.numeric_column`
      holding each example's weight, which multiplies its loss.
    loss_reduction: a `tf_keras.losses.Reduction` other than `NONE`:
      `SUM_OVER_BATCH_SIZE` (default; the weighted sum divided by
      `batch_size * label_dimension`) or `SUM`.
    loss_fn: optional custom loss function; default mean squared error.
    inverse_link_fn: optional function from logits to predictions; default
      identity.
    name: the head's name: suffixes its metric and summary keys and names
      its ops' scope.

  Raises:
    ValueError: `label_dimension` below 1, `loss_reduction` invalid or
      `loss_fn` with other arguments (tf.estimator's texts).
  """

  def __init__(self, label_dimension: int = 1, weight_column: Any = None,
               loss_reduction: str = tf_keras.losses.Reduction.SUM_OVER_BATCH_SIZE,
               loss_fn: Optional[Callable[..., Any]] = None,
               inverse_link_fn: Optional[Callable[[Any], Any]] = None,
               name: Optional[str] = None) -> None:
    if label_dimension < 1:
      raise ValueError(
          f"Invalid label_dimension {label_dimension}. It is the number of values per "
          "label, 1 or more.")
    validation.validate_loss_reduction(loss_reduction)
    if loss_fn:
      validation.validate_loss_fn_args(loss_fn)
    super().__init__(logits_dimension=label_dimension, weight_column=weight_column,
                     loss_reduction=loss_reduction, loss_fn=loss_fn, name=name,
                     expected_loss_dim=label_dimension, allow_per_logit_weights=True)
    self._inverse_link_fn = inverse_link_fn
    self._prediction_mean_key = self._summary_key(MetricKeys.PREDICTION_MEAN)
    self._label_mean_key = self._summary_key(MetricKeys.LABEL_MEAN)

  def _processed_labels(self, logits: Any, labels: Any) -> Any:
    labels = labels_lib.check_dense_labels_match_logits_and_reshape(
        labels=labels, logits=logits, expected_labels_dimension=self._logits_dimension)
    return tf.cast(labels, dtype=tf.float32)

  def _default_unweighted_loss(self, logits: Any, labels: Any) -> Any:
    return tf.compat.v1.losses.mean_squared_error(
        labels=labels, predictions=logits, reduction=tf.compat.v1.losses.Reduction.NONE)

  def _export_outputs(self, predictions: Dict[str, Any]) -> Dict[str, ExportOutput]:
    return spec_builder.regression_export_outputs(predictions)

  def predictions(self, logits: Any) -> Dict[Any, Any]:  # type: ignore[override]
    """Builds the predictions; see `Head.predictions` (this head takes no `keys`).

    Args:
      logits: `[D0, ... DN, label_dimension]` logits.

    Returns:
      `{"predictions": values}`, plus `"logits"` when there is an
      `inverse_link_fn`.
    """
    logits = labels_lib.check_logits_final_dim(logits, self._logits_dimension)
    with tf.compat.v1.name_scope("predictions", values=(logits,)):
      if self._inverse_link_fn:
        return {PredictionKeys.PREDICTIONS: self._inverse_link_fn(logits),
                PredictionKeys.LOGITS: logits}
      return {PredictionKeys.PREDICTIONS: logits}

  def _add_head_metrics(self, eval_metrics: Dict[str, Any],
                        regularization_losses: base_head.RegularizationLosses) -> None:
    eval_metrics[self._prediction_mean_key] = tf_keras.metrics.Mean(
        name=MetricKeys.PREDICTION_MEAN)
    eval_metrics[self._label_mean_key] = tf_keras.metrics.Mean(name=MetricKeys.LABEL_MEAN)
    self._add_regularization_metric(eval_metrics, regularization_losses)

  def _update_head_metrics(self, eval_metrics: Dict[str, Any], predictions: Dict[Any, Any],
                           labels: Any, processed_labels: Any, weights: Any) -> None:
    del processed_labels
    # The raw labels, as tf.estimator 2.15 averaged them.
    eval_metrics[self._label_mean_key].update_state(values=labels, sample_weight=weights)
    weights_lib.update_metric_with_broadcast_weights(
        eval_metrics[self._prediction_mean_key], predictions[PredictionKeys.PREDICTIONS], weights)


class PoissonRegressionHead(RegressionHead):
  """A head for Poisson regression: `tf.nn.log_poisson_loss`, predictions `exp(logits)`.

  A generalized linear model with the log link: logits are log rates, labels
  are counts (`[D0, ... DN, label_dimension]`, or without the last dimension
  when it is 1). Predictions are `predictions` (the rates) and `logits`;
  metrics and signatures are `RegressionHead`'s.

  Args:
    label_dimension: how many values each example has as its label.
    weight_column: a feature name or `tf.feature_column.numeric_column`
      holding each example's weight, which multiplies its loss.
    loss_reduction: a `tf_keras.losses.Reduction` other than `NONE`:
      `SUM_OVER_BATCH_SIZE` (default; the weighted sum divided by
      `batch_size * label_dimension`) or `SUM`.
    compute_full_loss: whether the loss includes the Stirling approximation
      of the constant `log(z!)` term (see `tf.nn.log_poisson_loss`).
    name: the head's name: suffixes its metric and summary keys and names
      its ops' scope.

  Raises:
    ValueError: see `RegressionHead`.
  """

  def __init__(self, label_dimension: int = 1, weight_column: Any = None,
               loss_reduction: str = tf_keras.losses.Reduction.SUM_OVER_BATCH_SIZE,
               compute_full_loss: bool = True, name: Optional[str] = None) -> None:
    self._compute_full_loss = compute_full_loss
    super().__init__(label_dimension=label_dimension, weight_column=weight_column,
                     loss_reduction=loss_reduction, loss_fn=self._poisson_loss,
                     inverse_link_fn=tf.math.exp, name=name)

  def _poisson_loss(self, labels: Any, logits: Any) -> Any:
    return tf.nn.log_poisson_loss(targets=labels, log_input=logits,
                                  compute_full_loss=self._compute_full_loss)


class LogisticRegressionHead(RegressionHead):
  """A head for logistic regression: sigmoid cross-entropy on labels in [0, 1].

  The loss is `BinaryClassHead`'s, but the head is a regression: labels are
  floats in [0, 1] (no vocabulary), predictions are only `predictions`
  (the sigmoid of the logits) and `logits`, metrics are `RegressionHead`'s
  (no AUC or accuracy), and the default signature is a RegressionOutput.
  Logits and labels are `[D0, ... DN, 1]` (labels may lack the last
  dimension).

  Args:
    weight_column: a feature name or `tf.feature_column.numeric_column`
      holding each example's weight, which multiplies its loss.
    loss_reduction: a `tf_keras.losses.Reduction` other than `NONE`:
      `SUM_OVER_BATCH_SIZE` (default) or `SUM`.
    name: the head's name: suffixes its metric and summary keys and names
      its ops' scope.

  Raises:
    ValueError: see `RegressionHead`.
  """

  def __init__(self, weight_column: Any = None,
               loss_reduction: str = tf_keras.losses.Reduction.SUM_OVER_BATCH_SIZE,
               name: Optional[str] = None) -> None:
    super().__init__(label_dimension=1, weight_column=weight_column,
                     loss_reduction=loss_reduction, loss_fn=self._logistic_loss,
                     inverse_link_fn=tf.math.sigmoid, name=name)

  def _logistic_loss(self, labels: Any, logits: Any) -> Any:
    labels = labels_lib.check_label_range(
        labels, n_classes=2,
        message="Labels must be in range [0, 1]. Fix: logistic regression labels are "
                "probabilities; use BinaryClassHead or MultiClassHead for class ids.")
    return tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
