"""What a serving_input_receiver_fn returns: the serving graph's inputs and features.

A `serving_input_receiver_fn` takes no arguments, builds placeholders (the
tensors a server feeds) inside the export graph, turns them into the features
the model_fn expects, and returns a `ServingInputReceiver` pairing the two.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, NamedTuple, Optional

import tensorflow as tf

from estimator_lite._util import validation
from estimator_lite.export import receiver_fn_checks
from estimator_lite.export import receiver_tensors as _receiver_tensors


def _check_alternatives(alternatives: Any) -> Optional[Dict[str, Dict[str, Any]]]:
  if alternatives is None:
    return None
  if not isinstance(alternatives, dict):
    raise ValueError(
        f"receiver_tensors_alternatives must be a dict: {alternatives}. Map "
        "each alternative's name to a Tensor or a dict of Tensors.")
  return {name: _receiver_tensors.wrap_and_check_input_tensors(
              tensors, "receiver_tensors_alternative")
          for name, tensors in alternatives.items()}


class _ServingInputReceiverFields(NamedTuple):
  features: Any
  receiver_tensors: Dict[str, Any]
  receiver_tensors_alternatives: Optional[Dict[str, Dict[str, Any]]] = None


class ServingInputReceiver(validation.Replaceable, _ServingInputReceiverFields):
  """Returned by a serving_input_receiver_fn: model features and the inputs fed at serving.

  Args:
    features: a `Tensor`, `SparseTensor`, `RaggedTensor`, or dict of string (or
      int) to them: what model_fn receives as `features`. A single tensor is
      wrapped as `{'feature': tensor}`; use `TensorServingInputReceiver` to pass
      it to model_fn unwrapped.
    receiver_tensors: a `Tensor` or dict of string to `Tensor`: the inputs of
      every exported signature (typically one string placeholder of serialized
      `tf.Example`s). A single tensor is named 'input'.
    receiver_tensors_alternatives: optional dict of alternative name to a
      `Tensor` or dict of `Tensor`s; each alternative adds the signatures
      `'<name>:<signature>'` fed at that point instead (e.g. raw features
      downstream of the tf.Example parsing).

  Raises:
    ValueError: a missing or non-tensor value, or a key of the wrong type.
  """

  __slots__ = ()

  def __new__(cls, features: Any, receiver_tensors: Any,
              receiver_tensors_alternatives: Optional[Dict[str, Any]] = None
              ) -> ServingInputReceiver:
    return super().__new__(
        cls,
        _receiver_tensors.wrap_and_check_input_tensors(features, "feature", allow_int_keys=True),
        _receiver_tensors.wrap_and_check_input_tensors(receiver_tensors, "receiver_tensor"),
        _check_alternatives(receiver_tensors_alternatives))


class TensorServingInputReceiver(validation.Replaceable, _ServingInputReceiverFields):
  """A `ServingInputReceiver` whose single feature reaches model_fn as a bare tensor.

  For model_fns whose `features` is one `Tensor` rather than a dict.

  Args:
    features: a single `Tensor`, `SparseTensor` or `RaggedTensor`.
    receiver_tensors: as for `ServingInputReceiver`.
    receiver_tensors_alternatives: as for `ServingInputReceiver`.

  Raises:
    ValueError: features is None or not a tensor, or receiver tensors are bad.
  """

  __slots__ = ()

  def __new__(cls, features: Any, receiver_tensors: Any,
              receiver_tensors_alternatives: Optional[Dict[str, Any]] = None
              ) -> TensorServingInputReceiver:
    if features is None:
      raise ValueError(
          "features must be defined. Got None; return the model's single input "
          "tensor from serving_input_receiver_fn.")
    # As tf.estimator: a single value, checked under the label 'feature'.
    _receiver_tensors.check_tensor(features, None, "feature")
    receiver = ServingInputReceiver(features, receiver_tensors,
                                    receiver_tensors_alternatives)
    return super().__new__(cls, features, receiver.receiver_tensors,
                           receiver.receiver_tensors_alternatives)


def _non_empty_dict(value: Any, name: str, of_what: str) -> dict:
  """A copy of `value`, which must be a non-empty dict of `of_what`.

  Raises:
    ValueError: it is not.
  """
  if not isinstance(value, dict) or not value:
    raise ValueError(f"{name} must be a non-empty dict of {of_what}; given {value!r}.")
  return dict(value)


def build_parsing_serving_input_receiver_fn(feature_spec: Dict[str, Any],
                                            default_batch_size: Optional[int] = None
                                            ) -> Callable[[], ServingInputReceiver]:
  """Builds a serving_input_receiver_fn that parses fed serialized `tf.Example`s.

  The receiver feeds one string placeholder, `input_example_tensor`, under the
  input key 'examples' (what TensorFlow Serving's Classify and Regress APIs
  feed), and parses it with `feature_spec`.

  Args:
    feature_spec: dict of feature name to `tf.io.FixedLenFeature`,
      `VarLenFeature`, ... (e.g. from
      `tf.compat.v1.feature_column.make_parse_example_spec`).
    default_batch_size: fixed number of examples per request, or None
      (recommended) for any batch size.

  Returns:
    A serving_input_receiver_fn returning a `ServingInputReceiver`.

  Raises:
    ValueError: feature_spec is not a non-empty dict.
  """
  feature_spec = _non_empty_dict(
      feature_spec, "feature_spec", "feature name to tf.io.FixedLenFeature/VarLenFeature")

  def serving_input_receiver_fn() -> ServingInputReceiver:
    """Parses serialized tf.Examples fed to 'input_example_tensor'."""
    receiver_fn_checks.refuse_eager_call()
    serialized = tf.compat.v1.placeholder(
        dtype=tf.string, shape=[default_batch_size], name="input_example_tensor")
    features = tf.compat.v1.io.parse_example(serialized, feature_spec)
    return ServingInputReceiver(features, {"examples": serialized})

  return serving_input_receiver_fn


def build_raw_serving_input_receiver_fn(features: Dict[str, Any],
                                        default_batch_size: Optional[int] = None
                                        ) -> Callable[[], ServingInputReceiver]:
  """Builds a serving_input_receiver_fn that feeds features to the model directly.

  Each feature becomes a placeholder of its dtype and shape (the first
  dimension replaced by `default_batch_size`), fed under its own key.

  Args:
    features: dict of feature name to an example `Tensor` (graph or eager),
      numpy array or `tf.TensorSpec` with a leading batch dimension.
    default_batch_size: fixed number of examples per request, or None
      (recommended) for any batch size.

  Returns:
    A serving_input_receiver_fn returning a `ServingInputReceiver`.

  Raises:
    ValueError: features is not a non-empty dict.
  """
  features = _non_empty_dict(features, "features", "feature name to Tensor")

  def serving_input_receiver_fn() -> ServingInputReceiver:
    """Feeds each feature through its own placeholder."""
    receiver_fn_checks.refuse_eager_call()
    receiver_tensors = _receiver_tensors.placeholders_like(features, default_batch_size)
    return ServingInputReceiver(receiver_tensors, receiver_tensors)

  return serving_input_receiver_fn
