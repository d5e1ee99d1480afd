"""Maps an input_fn's features and labels onto a Keras model's inputs and outputs.

The rules are tf.estimator's: a dict is matched by name (the model's input or
output names; extra keys are ignored, missing ones raise FormattedKeyError), a
list or tuple is taken in order, a single tensor is the only input or output.
A features dict with exactly the keys `features` and `sample_weights` carries
per-example weights beside the real features.
"""
from __future__ import annotations

import collections.abc
from typing import Any, List, Optional, Sequence, Tuple

import tensorflow as tf

from estimator_lite.keras.errors import FormattedKeyError

FEATURES_KEY = "features"
SAMPLE_WEIGHTS_KEY = "sample_weights"


def as_tensor(value: Any) -> Any:
  """A tensor for `value` (numpy arrays become constants; tensors pass through)."""
  if tf.is_tensor(value):
    return value
  return tf.compat.v1.convert_to_tensor_or_sparse_tensor(value)


def split_sample_weights(features: Any) -> Tuple[Any, Any]:
  """(features, sample weights or None) from an input_fn's features."""
  if isinstance(features, dict) and set(features) == {FEATURES_KEY, SAMPLE_WEIGHTS_KEY}:
    return features[FEATURES_KEY], features[SAMPLE_WEIGHTS_KEY]
  return features, None


def ordered_tensors(value: Any, names: Optional[Sequence[str]], value_name: str,
                    order_name: str) -> Optional[List[Any]]:
  """`value` (None, list, dict or tensor) as a list of tensors in the model's order.

  Args:
    value: features or labels.
    names: the model's input or output names, the order a dict is read in.
    value_name: "features" or "labels", for the error text.
    order_name: "inputs" or "outputs", for the error text.

  Returns:
    A list of tensors, or None for None.

  Raises:
    FormattedKeyError: a dict lacks some of `names` (tf.estimator's text).
  """
  if value is None:
    return None
  if isinstance(value, (list, tuple)):
    return [as_tensor(v) for v in value]
  if isinstance(value, dict):
    expected = list(names or [])
    missing = set(expected) - set(value)
    if missing:
      raise FormattedKeyError(
          f"The dictionary passed into {value_name} does not cover requested {order_name} "
          "keys defined in the keras model."
          f"\n\tExpected keys: {set(expected)}"
          f"\n\t{value_name} keys: {set(value)}"
          f"\n\tMissed keys: {missing}"
          f"\nName each entry of the input_fn's {value_name} dict after the model's "
          f"{order_name} (the names of its keras.Input layers / output layers).")
    return [as_tensor(value[name]) for name in expected]
  return [as_tensor(value)]


def weights_per_output(weights: Any, output_names: Sequence[str]) -> List[Any]:
  """Sample weights as one entry (tensor or None) per model output.

  Raises:
    ValueError: a list of the wrong length, or a dict with unknown names.
    TypeError: a multi-output model given one weight tensor.
  """
  names = list(output_names)
  if weights is None or (isinstance(weights, (list, tuple)) and not weights):
    return [None for _ in names]
  if len(names) == 1:
    if isinstance(weights, (list, tuple)) and len(weights) == 1:
      return list(weights)
    if isinstance(weights, dict) and names[0] in weights:
      return [weights[names[0]]]
    return [weights]
  if isinstance(weights, (list, tuple)):
    if len(weights) != len(names):
      raise ValueError(
          f"Provided `sample_weights` was a list of {len(weights)} elements, but the model "
          f"has {len(names)} outputs. You should provide one `sample_weights`array per "
          f"model output. Give one weight tensor per output, in the order {names}.")
    return list(weights)
  if isinstance(weights, collections.abc.Mapping):
    unknown = set(weights).difference(names)
    if unknown:
      raise ValueError(
          f"Unknown entries in sample_weights dictionary: {list(unknown)}. Only expected "
          f"following keys: {names}. Key the weights by the model's output names.")
    return [weights.get(name) for name in names]
  raise TypeError(
      "The model has multiple outputs, so `sample_weights` should be either a list or a "
      f"dict. Provided `sample_weights` type not understood: {weights}. Pass a dict keyed "
      "by output name.")
