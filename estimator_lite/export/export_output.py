"""Signature outputs of an exported model: what `EstimatorSpec.export_outputs` maps to.

Each class turns the model's output tensors plus the serving receiver's input
tensors into one SignatureDef, with the same method names and tensor keys
TensorFlow Serving's Predict, Classify and Regress APIs expect.
"""
import abc

import tensorflow as tf

_sig_utils = tf.compat.v1.saved_model.signature_def_utils


def _serialized_examples(receiver_tensors, kind):
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
  def as_signature_def(self, receiver_tensors):
    """Builds the SignatureDef for this output.

    Args:
      receiver_tensors: dict of name to input `Tensor` (the serving receiver's).

    Returns:
      A `SignatureDef` proto.
    """

  def _check_output_key(self, key, error_label):
    if isinstance(key, tuple):
      key = self._SEPARATOR_CHAR.join(key)
    if not isinstance(key, str):
      raise ValueError(
          f"{error_label} output key must be a string; got {key!r}. "
          "Use string keys in the outputs dict.")
    return key

  def _wrap_and_check_outputs(self, outputs, single_output_default_name,
                              error_label=None):
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

  def __init__(self, scores=None, classes=None):
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
  def scores(self):
    return self._scores

  @property
  def classes(self):
    return self._classes

  def as_signature_def(self, receiver_tensors):
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

  def __init__(self, value):
    if not (isinstance(value, tf.Tensor) and value.dtype.is_floating):
      raise ValueError(
          f"Regression output value must be a float32 Tensor; got {value!r}.")
    self._value = value

  @property
  def value(self):
    return self._value

  def as_signature_def(self, receiver_tensors):
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

  def __init__(self, outputs):
    self._outputs = self._wrap_and_check_outputs(
        outputs, self._SINGLE_OUTPUT_DEFAULT_NAME, error_label="Prediction")

  @property
  def outputs(self):
    return self._outputs

  def as_signature_def(self, receiver_tensors):
    return _sig_utils.predict_signature_def(receiver_tensors, self.outputs)
