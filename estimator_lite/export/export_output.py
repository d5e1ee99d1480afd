"""Signature outputs of an exported model: what `EstimatorSpec.export_outputs` maps to.

Each class turns the model's output tensors plus the serving receiver's input
tensors into one SignatureDef, with the same method names and tensor keys
TensorFlow Serving's Predict, Classify and Regress APIs expect (and, for
`EvalOutput`, tf.estimator's supervised eval signature).
"""
from __future__ import annotations

import abc
from typing import Any, Dict, Mapping, Optional, Tuple, Union

import tensorflow as tf

from estimator_lite._util import metrics as _metrics

_sig_utils = tf.compat.v1.saved_model.signature_def_utils
# TensorFlow 2.21 no longer exports these constants; the values are what
# tf.estimator 2.15 wrote into eval and train SignatureDefs.
SUPERVISED_EVAL_METHOD_NAME = "tensorflow/supervised/eval"
SUPERVISED_TRAIN_METHOD_NAME = "tensorflow/supervised/training"


def _serialized_examples(receiver_tensors: Mapping[str, Any], kind: str) -> tf.Tensor:
  """The single string input that TensorFlow Serving's Classify/Regress APIs feed.

  Raises:
    ValueError: not exactly one receiver tensor, or not a string tensor.
  """
  if len(receiver_tensors) != 1:
    raise ValueError(
        f"{kind} signatures take exactly one input, a string Tensor of "
        f"serialized tf.Examples; got receiver tensors {receiver_tensors!r}.")
  (_, examples), = receiver_tensors.items()
  if examples.dtype != tf.string:
    raise ValueError(
        f"{kind} signature input must be a string Tensor of serialized "
        f"tf.Examples; got {examples!r}. Use "
        "build_parsing_serving_input_receiver_fn for such models.")
  return examples


class ExportOutput(abc.ABC):
  """Base class for one exported signature's outputs."""

  _SEPARATOR_CHAR = "/"

  @abc.abstractmethod
  def as_signature_def(self, receiver_tensors: Mapping[str, Any]) -> Any:
    """Builds the SignatureDef for this output.

    Args:
      receiver_tensors: dict of name to input `Tensor` (the serving receiver's).

    Returns:
      A `SignatureDef` proto.
    """

  def _check_output_key(self, key: Any, error_label: str) -> str:
    if isinstance(key, tuple):
      key = self._SEPARATOR_CHAR.join(key)
    if not isinstance(key, str):
      raise ValueError(
          f"{error_label} output key must be a string; got {key!r}. "
          "Use string keys in the outputs dict.")
    return key

  def _wrap_and_check_outputs(self, outputs: Any, single_output_default_name: str,
                              error_label: Optional[str] = None) -> Dict[str, tf.Tensor]:
    if not isinstance(outputs, dict):
      outputs = {single_output_default_name: outputs}
    output_dict = {}
    for key, value in outputs.items():
      error_name = error_label or single_output_default_name
      key = self._check_output_key(key, error_name)
      if not isinstance(value, tf.Tensor):
        raise ValueError(
            f"{error_name} output value must be a Tensor; got {value!r} for key "
            f"{key!r}.")
      output_dict[key] = value
    return output_dict


class ClassificationOutput(ExportOutput):
  """Outputs of a classification signature (TensorFlow Serving's Classify API).

  Args:
    scores: float `Tensor` of shape [batch, num_classes], or None.
    classes: string `Tensor` of shape [batch, num_classes], or None.

  Raises:
    ValueError: neither given, or one of the wrong dtype.
  """

  def __init__(self, scores: Optional[tf.Tensor] = None,
               classes: Optional[tf.Tensor] = None) -> None:
    if scores is not None and not (isinstance(scores, tf.Tensor) and
                                   scores.dtype.is_floating):
      raise ValueError(
          f"Classification scores must be a float32 Tensor; got {scores!r}.")
    if classes is not None and not (isinstance(classes, tf.Tensor) and
                                    classes.dtype == tf.string):
      raise ValueError(
          f"Classification classes must be a string Tensor; got {classes!r}. "
          "Map class ids to names (e.g. tf.strings.as_string) first.")
    if scores is None and classes is None:
      raise ValueError(
          "Cannot create a ClassificationOutput with empty arguments: pass "
          "scores, classes or both.")
    self._scores = scores
    self._classes = classes

  @property
  def scores(self) -> Optional[tf.Tensor]:
    return self._scores

  @property
  def classes(self) -> Optional[tf.Tensor]:
    return self._classes

  def as_signature_def(self, receiver_tensors: Mapping[str, Any]) -> Any:
    examples = _serialized_examples(receiver_tensors, "Classification")
    return _sig_utils.classification_signature_def(examples, self.classes,
                                                   self.scores)


class RegressionOutput(ExportOutput):
  """Outputs of a regression signature (TensorFlow Serving's Regress API).

  Args:
    value: float `Tensor` of predictions, shape [batch] or [batch, 1].

  Raises:
    ValueError: value is not a float Tensor.
  """

  def __init__(self, value: tf.Tensor) -> None:
    if not (isinstance(value, tf.Tensor) and value.dtype.is_floating):
      raise ValueError(
          f"Regression output value must be a float32 Tensor; got {value!r}.")
    self._value = value

  @property
  def value(self) -> tf.Tensor:
    return self._value

  def as_signature_def(self, receiver_tensors: Mapping[str, Any]) -> Any:
    examples = _serialized_examples(receiver_tensors, "Regression")
    return _sig_utils.regression_signature_def(examples, self.value)


class PredictOutput(ExportOutput):
  """Outputs of a generic predict signature (TensorFlow Serving's Predict API).

  Args:
    outputs: a `Tensor` or a dict of string to `Tensor`.

  Raises:
    ValueError: outputs is not a Tensor or dict of Tensors.
  """

  _SINGLE_OUTPUT_DEFAULT_NAME = "output"

  def __init__(self, outputs: Union[tf.Tensor, Dict[str, tf.Tensor]]) -> None:
    self._outputs = self._wrap_and_check_outputs(
        outputs, self._SINGLE_OUTPUT_DEFAULT_NAME, error_label="Prediction")

  @property
  def outputs(self) -> Dict[str, tf.Tensor]:
    return self._outputs

  def as_signature_def(self, receiver_tensors: Mapping[str, Any]) -> Any:
    return _sig_utils.predict_signature_def(receiver_tensors, self.outputs)


class _SupervisedOutput(ExportOutput):
  """Outputs of a supervised signature (TRAIN or EVAL): loss, predictions and metrics.

  Args:
    loss: a `Tensor` or dict of string to `Tensor`: the loss; keys become
      'loss' / 'loss/<key>'.
    predictions: a `Tensor` or dict of string to `Tensor`; keys become
      'predictions' / 'predictions/<key>'.
    metrics: dict of metric name to a `(metric_value, update_op)` pair (what
      `tf.compat.v1.metrics.*` return) or a Keras `Metric` object, or a single
      pair; each gives 'metrics/<name>/value' and 'metrics/<name>/update_op'.

  Raises:
    ValueError: a key that is not a string (or tuple of strings), a value that
      is not a `Tensor`, or an update_op that is not a `Tensor` or `Operation`.
  """
  # The SignatureDef's method name, set by each subclass.
  METHOD_NAME = ""
  # Output keys are prefixed with their kind, so one signature holds all
  # three: `loss`, `loss/<key>`, `predictions/<key>`, and for each metric
  # `metrics/<name>/value` and `metrics/<name>/update_op`.
  LOSS_NAME = "loss"
  PREDICTIONS_NAME = "predictions"
  METRICS_NAME = "metrics"
  METRIC_VALUE_SUFFIX = "value"
  METRIC_UPDATE_SUFFIX = "update_op"

  def __init__(self, loss: Any = None, predictions: Any = None, metrics: Any = None) -> None:
    self._loss: Optional[Dict[str, tf.Tensor]] = None
    self._predictions: Optional[Dict[str, tf.Tensor]] = None
    self._metrics: Optional[Dict[str, tf.Tensor]] = None
    if loss is not None:
      self._loss = self._prefixed(
          self._wrap_and_check_outputs(loss, self.LOSS_NAME), self.LOSS_NAME)
    if predictions is not None:
      self._predictions = self._prefixed(
          self._wrap_and_check_outputs(predictions, self.PREDICTIONS_NAME),
          self.PREDICTIONS_NAME)
    if metrics is not None:
      self._metrics = self._wrap_and_check_metrics(metrics)

  @property
  def loss(self) -> Optional[Dict[str, tf.Tensor]]:
    return self._loss

  @property
  def predictions(self) -> Optional[Dict[str, tf.Tensor]]:
    return self._predictions

  @property
  def metrics(self) -> Optional[Dict[str, tf.Tensor]]:
    return self._metrics

  def _prefix_key(self, key: str, prefix: str) -> str:
    # As tf.estimator: a key that already starts with the prefix ('loss',
    # 'predictions/y') keeps its name, so the outputs stay where users' eval
    # tools look for them.
    if key.startswith(prefix):
      return key
    return prefix + self._SEPARATOR_CHAR + key

  def _prefixed(self, outputs: Mapping[str, tf.Tensor], prefix: str) -> Dict[str, tf.Tensor]:
    return {self._prefix_key(key, prefix): value for key, value in outputs.items()}

  def _split_metric(self, name: str, metric: Any) -> Tuple[Any, Any]:
    """Returns (value Tensor, update Tensor or Operation) of one metric."""
    if isinstance(metric, tuple):
      if len(metric) != 2:
        raise ValueError(
            f"Metric {name!r} must be a (metric_value, update_op) pair, as "
            f"tf.compat.v1.metrics.* return; got a tuple of {len(metric)}: "
            f"{metric!r}.")
      return metric
    if callable(getattr(metric, "result", None)):
      # A Keras Metric object after update_state(), found as eval_metric_ops finds it.
      value = metric.result()
      return value, _metrics.keras_metric_update_op(metric, value.graph)
    raise ValueError(
        f"Metric {name!r} must be a (metric_value, update_op) pair (what "
        f"tf.compat.v1.metrics.* return) or a Keras Metric object; got {metric!r}.")

  def _wrap_and_check_metrics(self, metrics: Any) -> Dict[str, tf.Tensor]:
    if not isinstance(metrics, dict):
      metrics = {self.METRICS_NAME: metrics}
    outputs = {}
    for key, metric in metrics.items():
      key = self._prefix_key(self._check_output_key(key, self.METRICS_NAME),
                             self.METRICS_NAME)
      value, update_op = self._split_metric(key, metric)
      if not isinstance(value, tf.Tensor):
        raise ValueError(
            f"{key} output value must be a Tensor; got {value!r}. Pass the "
            "metric's value tensor first in the (metric_value, update_op) pair.")
      if not isinstance(update_op, (tf.Tensor, tf.Operation)):
        raise ValueError(
            f"{key} update_op must be a Tensor or Operation; got {update_op!r}.")
      if isinstance(update_op, tf.Operation):
        # A SignatureDef holds tensors only: expose the op through an empty
        # constant that runs it first.
        with update_op.graph.as_default(), tf.control_dependencies([update_op]):
          update_op = tf.constant([], name="metric_op_wrapper")
      outputs[key + self._SEPARATOR_CHAR + self.METRIC_VALUE_SUFFIX] = value
      outputs[key + self._SEPARATOR_CHAR + self.METRIC_UPDATE_SUFFIX] = update_op
    return outputs

  def as_signature_def(self, receiver_tensors: Any) -> Any:
    """Builds the SignatureDef: receiver tensors in; loss, predictions, metrics out.

    Args:
      receiver_tensors: a `Tensor`, or dict of name to `Tensor`: the inputs
        (for an eval signature, features and labels).

    Returns:
      A `SignatureDef` proto with this class's METHOD_NAME.

    Raises:
      ValueError: no receiver tensors.
    """
    if receiver_tensors is not None and not isinstance(receiver_tensors, dict):
      receiver_tensors = {"input": receiver_tensors}
    if not receiver_tensors:
      raise ValueError(
          f"{self.METHOD_NAME} inputs cannot be None or empty; pass the "
          "receiver's tensors (features and labels).")
    outputs: dict = {}
    for group in (self.loss, self.predictions, self.metrics):
      outputs.update(group or {})
    build = tf.compat.v1.saved_model.build_tensor_info
    return tf.compat.v1.saved_model.build_signature_def(
        inputs={key: build(t) for key, t in receiver_tensors.items()},
        outputs={key: build(t) for key, t in outputs.items()},
        method_name=self.METHOD_NAME)


class EvalOutput(_SupervisedOutput):
  """Outputs of a supervised eval signature (method 'tensorflow/supervised/eval').

  What an EVAL SavedModel export's 'eval' signature holds. Not served by
  TensorFlow Serving: a serving export leaves such signatures out (and logs
  it), as tf.estimator did.

  Args:
    loss: as for the supervised outputs: keys 'loss' / 'loss/<key>'.
    predictions: keys 'predictions' / 'predictions/<key>'.
    metrics: dict of name to `(metric_value, update_op)` or Keras `Metric`;
      keys 'metrics/<name>/value' and 'metrics/<name>/update_op'.

  Raises:
    ValueError: a key that is not a string (or tuple of strings), a value that
      is not a `Tensor`, or an update_op that is not a `Tensor` or `Operation`.
  """

  METHOD_NAME = SUPERVISED_EVAL_METHOD_NAME


class TrainOutput(_SupervisedOutput):
  """Outputs of a supervised training signature (method 'tensorflow/supervised/training').

  What a TRAIN SavedModel export's 'train' signature holds (tf.estimator's
  TrainOutput, which tf.estimator.export did not list either). The training
  step itself is the export's train op, kept in the MetaGraph's
  'saved_model_train_op' collection.

  Args:
    loss: keys 'loss' / 'loss/<key>'.
    predictions: keys 'predictions' / 'predictions/<key>'.
    metrics: as for `EvalOutput`.

  Raises:
    ValueError: as for `EvalOutput`.
  """

  METHOD_NAME = SUPERVISED_TRAIN_METHOD_NAME
