"""SingleHead: what every one-label head (binary, multi-class, multi-label, regression) shares.

Each of those heads differs only in how it reads labels, its default loss,
its predictions, metrics and signatures; the properties, the loss (labels
checked, a custom `loss_fn` or the default, weighted and reduced), the
`average_loss`/`regularization_loss` metrics and the mode-by-mode
EstimatorSpec are stated once here.
"""
from __future__ import annotations

import abc
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

import tensorflow as tf
import tf_keras

from estimator_lite.canned.metric_keys import MetricKeys
from estimator_lite.canned.prediction_keys import PredictionKeys
from estimator_lite.estimator_spec import EstimatorSpec
from estimator_lite.export.export_output import ExportOutput
from estimator_lite.head import base_head
from estimator_lite.head import labels as labels_lib
from estimator_lite.head import losses as losses_lib
from estimator_lite.head import spec_builder
from estimator_lite.head import validation
from estimator_lite.head import weights as weights_lib


class SingleHead(base_head.Head):
  """A head with one label: its loss, loss metrics and EstimatorSpec built from a few hooks.

  A subclass validates its own arguments (in tf.estimator's order, so that
  the first error reported is the same), calls this `__init__`, and
  implements `_processed_labels`, `_default_unweighted_loss`,
  `_export_outputs`, `_add_head_metrics` and `_update_head_metrics`; a
  head with prediction keys also sets `_PREDICTION_KEYS` and implements
  `_add_predictions` (or overrides `predictions`).

  Args:
    logits_dimension: the size of the logits' last dimension.
    weight_column: a feature name or `tf.feature_column.numeric_column`
      holding each example's weight, or None.
    loss_reduction: a `tf_keras.losses.Reduction` other than `NONE`.
    loss_fn: a custom loss function (already validated), or None.
    name: the head's name, or None.
    expected_loss_dim: the last dimension a custom `loss_fn`'s result must
      have.
    allow_per_logit_weights: whether weights may have one value per logit
      (`[D0, ... DN, logits_dimension]`), not only one per example.
  """

  # The PredictionKeys the head makes, in the order it builds them.
  _PREDICTION_KEYS: Tuple[str, ...] = (PredictionKeys.LOGITS,)

  def __init__(self, logits_dimension: int, weight_column: Any, loss_reduction: str,
               loss_fn: Optional[Callable[..., Any]], name: Optional[str],
               expected_loss_dim: int = 1, allow_per_logit_weights: bool = False) -> None:
    self._logits_dimension = logits_dimension
    self._weight_column = weight_column
    self._loss_reduction = loss_reduction
    self._loss_fn = loss_fn
    self._name = name
    self._expected_loss_dim = expected_loss_dim
    self._allow_per_logit_weights = allow_per_logit_weights
    self._loss_mean_key = self._summary_key(MetricKeys.LOSS_MEAN)
    self._loss_regularization_key = self._summary_key(MetricKeys.LOSS_REGULARIZATION)

  @property
  def name(self) -> Optional[str]:
    """See `Head`."""
    return self._name

  @property
  def logits_dimension(self) -> int:
    """See `Head`."""
    return self._logits_dimension

  @property
  def loss_reduction(self) -> str:
    """See `Head`."""
    return self._loss_reduction

  @property
  def weight_column(self) -> Any:
    """The feature name or numeric column of the example weights, or None.

    estimator_lite's own: what a `LinearSDCA` weighs the examples of a
    `LinearEstimator` by, whose head the user built.
    """
    return self._weight_column

  @abc.abstractmethod
  def _processed_labels(self, logits: Any, labels: Any) -> Any:
    """The labels checked and converted to what the loss takes."""

  @abc.abstractmethod
  def _default_unweighted_loss(self, logits: Any, labels: Any) -> Any:
    """The per-example loss when there is no custom `loss_fn`."""

  @abc.abstractmethod
  def _export_outputs(self, predictions: Dict[str, Any]) -> Dict[str, ExportOutput]:
    """The head's export signatures, given its predictions."""

  def _add_predictions(self, predictions: Dict[Any, Any], keys: Sequence[str],
                       logits: Any) -> None:
    """Adds the predictions other than `logits` asked for in `keys` (none by default)."""
    del predictions, keys, logits

  @abc.abstractmethod
  def _add_head_metrics(self, eval_metrics: Dict[str, Any],
                        regularization_losses: base_head.RegularizationLosses) -> None:
    """Adds the head's metrics after `average_loss`, `regularization_loss` among them."""

  @abc.abstractmethod
  def _update_head_metrics(self, eval_metrics: Dict[str, Any], predictions: Dict[Any, Any],
                           labels: Any, processed_labels: Any, weights: Any) -> None:
    """Updates the head's metrics other than the loss ones with one batch."""

  def _loss_inputs(self, logits: Any, labels: Any,
                   features: base_head.Features) -> Tuple[Any, Any, Any, Any]:
    """Checked logits, processed labels, the unweighted loss and the example weights."""
    logits = labels_lib.check_logits_final_dim(logits, self._logits_dimension)
    labels = self._processed_labels(logits, labels)
    if self._loss_fn:
      unweighted_loss = losses_lib.call_loss_fn(
          loss_fn=self._loss_fn, labels=labels, logits=logits, features=features,
          expected_loss_dim=self._expected_loss_dim)
    else:
      unweighted_loss = self._default_unweighted_loss(logits, labels)
    weights = weights_lib.get_weights_and_check_match_logits(
        features=features, weight_column=self._weight_column, logits=logits,
        allow_per_logit_weights=self._allow_per_logit_weights)
    return logits, labels, unweighted_loss, weights

  def unreduced_loss_and_weights(self, labels: Any, logits: Any,
                                 features: base_head.Features = None) -> Tuple[Any, Any, Any]:
    """The per-example loss, the example weights and the processed labels, not yet reduced.

    Built in the caller's name scope (`loss` opens `losses`): the compat.v1
    canned heads reduce them as tf.estimator's v1 heads did, with the ops
    directly under the head's scope where programs name them
    (`head/logistic_loss`, `head/labels`).

    Args:
      labels: the labels, in one of the forms the head's class describes.
      logits: `[D0, ... DN, logits_dimension]` logits.
      features: the features dict (for the weights, and a `loss_fn` that
        takes them).

    Returns:
      `(unweighted_loss, weights, processed_labels)`: the loss per example
      (`[D0, ... DN, expected_loss_dim]`), the weights (1 without a weight
      column) and the labels as the loss took them (class ids, 0/1 floats or
      float targets).

    Raises:
      ValueError: labels or logits of the wrong dtype or static shape.
    """
    _, processed_labels, unweighted_loss, weights = self._loss_inputs(logits, labels, features)
    return unweighted_loss, weights, processed_labels

  def loss(self, labels: Any, logits: Any, features: base_head.Features = None,
           mode: Optional[str] = None,
           regularization_losses: base_head.RegularizationLosses = None) -> Any:
    """Builds the regularized training loss; see `Head.loss`.

    Args:
      labels: the labels, in one of the forms the head's class describes.
      logits: `[D0, ... DN, logits_dimension]` logits.
      features: the features dict (for the weights, and a `loss_fn` that
        takes them).
      mode: unused: the loss is the same in every mode.
      regularization_losses: scalar losses added after the reduction.

    Returns:
      A scalar `Tensor`.

    Raises:
      ValueError: labels or logits of the wrong dtype or static shape.
    """
    del mode  # the loss is the same in every mode
    with tf.compat.v1.name_scope(
        "losses", values=(logits, labels, regularization_losses, features)):
      _, _, unweighted_loss, weights = self._loss_inputs(logits, labels, features)
      return losses_lib.weighted_training_loss(
          unweighted_loss, weights, self._loss_reduction, regularization_losses)

  def predictions(self, logits: Any, keys: Optional[Sequence[str]] = None) -> Dict[Any, Any]:
    """Builds the predictions named by `keys`; see `Head.predictions`.

    Args:
      logits: `[D0, ... DN, logits_dimension]` logits.
      keys: a list or tuple of `PredictionKeys` values; None for all of the
        head's (its class lists them).

    Returns:
      A dict of prediction key to `Tensor`.

    Raises:
      ValueError: a key this head does not make.
    """
    keys = validation.prediction_keys_or_all(keys, self._PREDICTION_KEYS)
    logits = labels_lib.check_logits_final_dim(logits, self._logits_dimension)
    predictions: Dict[Any, Any] = {}
    with tf.compat.v1.name_scope("predictions", values=(logits,)):
      if PredictionKeys.LOGITS in keys:
        predictions[PredictionKeys.LOGITS] = logits
      self._add_predictions(predictions, keys, logits)
    return predictions

  def metrics(self, regularization_losses: base_head.RegularizationLosses = None) -> Dict[str, Any]:
    """Creates the head's evaluation metrics, not yet updated; see `Head.metrics`.

    Args:
      regularization_losses: when given, `regularization_loss` is created too.

    Returns:
      A dict of metric key to Keras 2 metric object.
    """
    with tf.compat.v1.name_scope("metrics", values=(regularization_losses,)):
      eval_metrics: Dict[str, Any] = {
          self._loss_mean_key: tf_keras.metrics.Mean(name=MetricKeys.LOSS_MEAN)}
      self._add_head_metrics(eval_metrics, regularization_losses)
    return eval_metrics

  def _add_regularization_metric(self, eval_metrics: Dict[str, Any],
                                 regularization_losses: base_head.RegularizationLosses) -> None:
    """Adds the `regularization_loss` mean to `eval_metrics` when there are such losses."""
    losses_lib.add_regularization_metric(
        eval_metrics, self._loss_regularization_key, regularization_losses)

  # tf.estimator's heads' update_metrics take no `mode`, unlike Head's.
  def update_metrics(  # type: ignore[override]
      self, eval_metrics: Dict[str, Any], features: base_head.Features, logits: Any,
      labels: Any, regularization_losses: base_head.RegularizationLosses = None
  ) -> Dict[str, Any]:
    """Updates the metrics made by `metrics()` with one batch; see `Head.update_metrics`.

    Args:
      eval_metrics: the dict `metrics()` returned.
      features: the features dict (for the weights).
      logits: `[D0, ... DN, logits_dimension]` logits.
      labels: the labels, in one of the forms the head's class describes.
      regularization_losses: scalar losses for `regularization_loss`.

    Returns:
      `eval_metrics`, updated.

    Raises:
      ValueError: labels or logits of the wrong dtype or static shape.
    """
    predictions = self.predictions(logits)
    _, processed_labels, unweighted_loss, weights = self._loss_inputs(logits, labels, features)
    eval_metrics[self._loss_mean_key].update_state(values=unweighted_loss, sample_weight=weights)
    losses_lib.update_regularization_metric(
        eval_metrics, self._loss_regularization_key, regularization_losses)
    self._update_head_metrics(eval_metrics, predictions, labels, processed_labels, weights)
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
      logits: `[D0, ... DN, logits_dimension]` logits.
      labels: the labels (TRAIN and EVAL), in one of the forms the head's
        class describes.
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
      ValueError: in TRAIN both or neither of `optimizer` and `train_op_fn`;
        labels of the wrong dtype or static shape.
    """
    return spec_builder.single_head_estimator_spec(
        self, features=features, mode=mode, logits=logits, labels=labels, optimizer=optimizer,
        trainable_variables=trainable_variables, train_op_fn=train_op_fn, update_ops=update_ops,
        regularization_losses=regularization_losses, export_outputs_fn=self._export_outputs)

