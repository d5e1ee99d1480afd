"""The EstimatorSpec of a single head, mode by mode, from its loss, predictions and metrics."""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Sequence

import tensorflow as tf

from estimator_lite.canned.prediction_keys import PredictionKeys
from estimator_lite.estimator_spec import EstimatorSpec
from estimator_lite.export import export_output
from estimator_lite.export.export_output import ExportOutput
from estimator_lite.head import base_head
from estimator_lite.head import classes as classes_lib
from estimator_lite.head import train_op as train_op_lib
from estimator_lite.mode_keys import ModeKeys


def single_head_estimator_spec(
    head: base_head.Head, features: base_head.Features, mode: str, logits: Any,
    labels: Any, optimizer: Any, trainable_variables: Optional[Sequence[Any]],
    train_op_fn: Optional[Callable[[Any], Any]], update_ops: Optional[Sequence[Any]],
    regularization_losses: base_head.RegularizationLosses,
    export_outputs_fn: Callable[[Dict[str, Any]], Dict[str, ExportOutput]]) -> EstimatorSpec:
  """Builds `head`'s EstimatorSpec for `mode`, as tf.estimator 2.15's heads did.

  The ops are built under the name scope of the head's name ("head" when it
  has none), the train op under the root scope `training` and the metrics'
  updates in the caller's scope, where tf.estimator 2.15 built them (programs
  name them).

  * PREDICT: every prediction, and `export_outputs_fn(predictions)`.
  * EVAL: the regularized loss and the head's Keras metrics, updated with this
    batch.
  * TRAIN: the loss, the train op (from `optimizer` or `train_op_fn`) and the
    `loss` (and `regularization_loss`) summaries.

  Args:
    head: the head.
    features: the features dict.
    mode: a `ModeKeys` value.
    logits: the logits `Tensor`.
    labels: the labels (TRAIN and EVAL).
    optimizer: a Keras 2 optimizer, or None.
    trainable_variables: the variables `optimizer` trains.
    train_op_fn: builds the train op from the loss when `optimizer` is None.
    update_ops: ops run with each training step.
    regularization_losses: scalar losses added to the loss.
    export_outputs_fn: the head's signatures, given its predictions.

  Returns:
    An `EstimatorSpec`.

  Raises:
    ValueError: see `create_estimator_spec_train_op`, and the label checks.
  """
  with tf.compat.v1.name_scope(head.name, "head"):
    predictions = head.predictions(logits)
    if mode == ModeKeys.PREDICT:
      return EstimatorSpec(mode=ModeKeys.PREDICT, predictions=predictions,
                           export_outputs=export_outputs_fn(predictions))
    regularized_training_loss = head.loss(
        logits=logits, labels=labels, features=features, mode=mode,
        regularization_losses=regularization_losses)
    if mode == ModeKeys.EVAL:
      eval_metrics = head.metrics(regularization_losses=regularization_losses)
    else:
      train_op = train_op_lib.create_estimator_spec_train_op(
          head_name=head.name, optimizer=optimizer, train_op_fn=train_op_fn,
          update_ops=update_ops, trainable_variables=trainable_variables,
          regularized_training_loss=regularized_training_loss,
          loss_reduction=head.loss_reduction)
  if mode == ModeKeys.EVAL:
    # tf.estimator updated the metrics and built the spec outside the head's
    # scope: the update ops and values a program names (`ReadVariableOp_1`,
    # `Identity_3`) are at the caller's.
    updated = head.update_metrics(
        eval_metrics=eval_metrics, features=features, logits=logits, labels=labels,
        regularization_losses=regularization_losses)
    return EstimatorSpec(mode=ModeKeys.EVAL, predictions=predictions,
                         loss=regularized_training_loss, eval_metric_ops=updated)
  train_op_lib.create_estimator_spec_summary(
      regularized_training_loss=regularized_training_loss,
      regularization_losses=regularization_losses,
      summary_key_fn=lambda key: base_head.summary_key(head.name, key))
  return EstimatorSpec(mode=ModeKeys.TRAIN, predictions=predictions,
                       loss=regularized_training_loss, train_op=train_op)


def classification_export_outputs(predictions: Dict[str, Any], n_classes: int,
                                  label_vocabulary: Optional[Sequence[str]],
                                  regression_key: Optional[str] = None
                                  ) -> Dict[str, ExportOutput]:
  """A classification head's signatures: default and `classification`, `predict`.

  Args:
    predictions: the head's predictions; `probabilities` are the scores.
    n_classes: the number of classes.
    label_vocabulary: the class names, or None for ids as strings.
    regression_key: a prediction key to export as the `regression` signature
      too (the binary head's `logistic`), or None.

  Returns:
    A dict of signature key to `ExportOutput`.
  """
  classifier_output = classes_lib.classification_output(
      scores=predictions[PredictionKeys.PROBABILITIES], n_classes=n_classes,
      label_vocabulary=label_vocabulary)
  outputs: Dict[str, ExportOutput] = {
      base_head.DEFAULT_SERVING_KEY: classifier_output,
      base_head.CLASSIFY_SERVING_KEY: classifier_output,
  }
  if regression_key is not None:
    outputs[base_head.REGRESS_SERVING_KEY] = export_output.RegressionOutput(
        value=predictions[regression_key])
  outputs[base_head.PREDICT_SERVING_KEY] = export_output.PredictOutput(predictions)
  return outputs


def regression_export_outputs(predictions: Dict[str, Any]) -> Dict[str, ExportOutput]:
  """A regression head's signatures: default and `regression` (its `predictions`), `predict`.

  Args:
    predictions: the head's predictions.

  Returns:
    A dict of signature key to `ExportOutput`.
  """
  regression_output = export_output.RegressionOutput(value=predictions[PredictionKeys.PREDICTIONS])
  return {
      base_head.DEFAULT_SERVING_KEY: regression_output,
      base_head.REGRESS_SERVING_KEY: regression_output,
      base_head.PREDICT_SERVING_KEY: export_output.PredictOutput(predictions),
  }
