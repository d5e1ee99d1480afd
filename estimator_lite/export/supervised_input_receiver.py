"""What the receiver fn of a TRAIN or EVAL SavedModel export returns: features, labels, inputs.

`Estimator.experimental_export_all_saved_models` (and `export_saved_model`
with `experimental_mode=ModeKeys.TRAIN` or `EVAL`) calls model_fn in that mode
on a receiver's features and labels, so that the export can be loaded to
compute the loss and metrics (or run a training step) on fed examples. Such a
receiver fn takes no arguments, builds placeholders in the export graph and
returns a `SupervisedInputReceiver` (or, for a model_fn without labels, an
`UnsupervisedInputReceiver`).
"""
from __future__ import annotations

from typing import Any, Callable, Dict, NamedTuple, Optional, cast

import tensorflow as tf

from estimator_lite._graph import input_fn as _input_fn
from estimator_lite._util import validation
from estimator_lite.export import receiver_fn_checks
from estimator_lite.export import receiver_tensors as _receiver_tensors
from estimator_lite.export.receiver_tensors import SINGLE_LABEL_DEFAULT_NAME
from estimator_lite.export.receiver_tensors import SINGLE_RECEIVER_DEFAULT_NAME
from estimator_lite.export.serving_input_receiver import ServingInputReceiver


class _SupervisedInputReceiverFields(NamedTuple):
  features: Any
  labels: Any
  receiver_tensors: Dict[str, Any]


class SupervisedInputReceiver(validation.Replaceable, _SupervisedInputReceiverFields):
  """Returned by the receiver fn of a TRAIN or EVAL export: features, labels and inputs.

  Unlike a `ServingInputReceiver`, it carries the labels model_fn needs to
  compute the loss, keeps `features` and `labels` as given (a single tensor
  reaches model_fn unwrapped), and has no receiver_tensors_alternatives
  (those serve extra serving signatures).

  Args:
    features: a `Tensor`, `SparseTensor`, `RaggedTensor`, or dict of string
      (or int) to them: model_fn's `features`.
    labels: the same kinds of value: model_fn's `labels`.
    receiver_tensors: a `Tensor` or dict of string to `Tensor`: the inputs of
      the exported signature (usually the placeholders behind features and
      labels). A single tensor is named 'input'.

  Raises:
    ValueError: a missing or non-tensor value, or a key of the wrong type.
  """

  __slots__ = ()

  def __new__(cls, features: Any, labels: Any, receiver_tensors: Any) -> SupervisedInputReceiver:
    # Checked as a dict would be; the values are kept as given.
    _receiver_tensors.wrap_and_check_input_tensors(features, "feature", allow_int_keys=True)
    _receiver_tensors.wrap_and_check_input_tensors(labels, "label", allow_int_keys=True)
    return super().__new__(
        cls, features, labels,
        _receiver_tensors.wrap_and_check_input_tensors(receiver_tensors, "receiver_tensor"))


class UnsupervisedInputReceiver(ServingInputReceiver):
  """Returned by the receiver fn of a TRAIN or EVAL export whose model_fn takes no labels.

  A `ServingInputReceiver` without receiver_tensors_alternatives.

  Args:
    features: as for `ServingInputReceiver` (a single tensor is wrapped as
      `{'feature': tensor}`).
    receiver_tensors: as for `ServingInputReceiver`.
    receiver_tensors_alternatives: must be None; accepted so that `replace()`
      works.

  Raises:
    ValueError: a missing or non-tensor value, a key of the wrong type, or
      receiver_tensors_alternatives.
  """

  __slots__ = ()

  def __new__(cls, features: Any, receiver_tensors: Any,
              receiver_tensors_alternatives: None = None) -> UnsupervisedInputReceiver:
    if receiver_tensors_alternatives is not None:
      raise ValueError(
          "UnsupervisedInputReceiver has no receiver_tensors_alternatives (they add "
          "serving signatures); use a ServingInputReceiver to serve them.")
    return cast(UnsupervisedInputReceiver, super().__new__(cls, features, receiver_tensors))


def _keys(value: Any, single_name: str) -> set:
  """The keys `value` is fed under: its own, or `single_name` for a single tensor."""
  try:
    return set(value.keys())
  except AttributeError:
    return {single_name}


def build_raw_supervised_input_receiver_fn(features: Any, labels: Any,
                                           default_batch_size: Optional[int] = None
                                           ) -> Callable[[], SupervisedInputReceiver]:
  """Builds a receiver fn that feeds features and labels to model_fn directly.

  For `Estimator.experimental_export_all_saved_models` (TRAIN and EVAL
  graphs). Each feature and label becomes a placeholder of its dtype and
  shape (the first dimension replaced by `default_batch_size`). A dict gives
  model_fn a dict of placeholders under the same keys; a single tensor gives
  model_fn the placeholder itself, fed under 'input' (features) or 'label'.

  Args:
    features: a `Tensor` (graph or eager), `tf.TensorSpec` or numpy array
      with a leading batch dimension, or a dict of string to them.
    labels: the same kinds of value, for the labels.
    default_batch_size: fixed number of examples per run, or None
      (recommended) for any batch size.

  Returns:
    A receiver fn, taking no arguments, that returns a
    `SupervisedInputReceiver`.

  Raises:
    ValueError: features or labels is None, or they share a key (they are
      fed side by side).
  """
  for value, name in ((features, "features"), (labels, "labels")):
    if value is None:
      raise ValueError(
          f"{name} must be defined. Got None; pass an example {name[:-1]} tensor "
          "(or tf.TensorSpec), or a dict of them, whose dtype and shape the "
          "placeholders take.")
  overlap = _keys(features, SINGLE_RECEIVER_DEFAULT_NAME) & _keys(
      labels, SINGLE_LABEL_DEFAULT_NAME)
  if overlap:
    raise ValueError(
        f"Features and labels must have distinct keys. Found overlapping keys: "
        f"{overlap}. Both are fed through one signature, so rename the feature "
        "or label keys that clash.")

  def _receive(value: Any, single_name: str) -> tuple:
    """(what model_fn gets, {input name: placeholder})."""
    if isinstance(value, dict):
      placeholders = _receiver_tensors.placeholders_like(value, default_batch_size)
      return placeholders, placeholders
    placeholder = _receiver_tensors.placeholder_like(value, default_batch_size)
    return placeholder, {single_name: placeholder}

  def supervised_input_receiver_fn() -> SupervisedInputReceiver:
    """Feeds each feature and label through its own placeholder."""
    receiver_fn_checks.refuse_eager_call("supervised_input_receiver_fn")
    model_features, feature_inputs = _receive(features, SINGLE_RECEIVER_DEFAULT_NAME)
    model_labels, label_inputs = _receive(labels, SINGLE_LABEL_DEFAULT_NAME)
    return SupervisedInputReceiver(model_features, model_labels,
                                   {**feature_inputs, **label_inputs})

  return supervised_input_receiver_fn


def build_supervised_input_receiver_fn_from_input_fn(
    input_fn: Callable[..., Any], **input_fn_args: Any
) -> Callable[[], SupervisedInputReceiver]:
  """Builds a receiver fn whose placeholders match what `input_fn` returns.

  Calls `input_fn(**input_fn_args)` now, in a graph of its own (nothing is
  added to the caller's graph), to read the dtypes and shapes of its features
  and labels; the receiver fn then feeds placeholders of those, as
  `build_raw_supervised_input_receiver_fn` does.

  Args:
    input_fn: an Estimator input_fn returning a `tf.data.Dataset` of
      `(features, labels)` or a `(features, labels)` tuple.
    **input_fn_args: keyword arguments for input_fn, passed as they are.

  Returns:
    A receiver fn, taking no arguments, that returns a
    `SupervisedInputReceiver`.

  Raises:
    TypeError / ValueError: what input_fn returned is not features and labels
      as above (input_fn's own errors propagate unchanged), it has no labels,
      or features and labels share a key.
  """
  with tf.Graph().as_default():
    features, labels, _ = _input_fn.parse_input_fn_result(input_fn(**input_fn_args))
  if labels is None:
    raise ValueError(
        f"input_fn returned features only ({features!r}); a supervised receiver "
        "needs (features, labels). Return a Dataset of (features, labels), or use "
        "UnsupervisedInputReceiver for a model_fn without labels.")
  return build_raw_supervised_input_receiver_fn(features, labels)
