"""The tensors an input receiver holds: their checks, default names, and placeholders.

Every receiver (`ServingInputReceiver`, `TensorServingInputReceiver`,
`SupervisedInputReceiver`, `UnsupervisedInputReceiver`) names its tensors and
checks them here, so that each rejects a bad value with the same text
tf.estimator 2.15 gave, followed by how to fix it.
"""
from __future__ import annotations

from typing import Any, Dict, Mapping, Optional

import numpy as np
import tensorflow as tf

# The keys tf.estimator (and TensorFlow's SavedModel tooling) used when a
# single tensor, rather than a dict, was given.
SINGLE_FEATURE_DEFAULT_NAME = "feature"
SINGLE_LABEL_DEFAULT_NAME = "label"
SINGLE_RECEIVER_DEFAULT_NAME = "input"

_DEFAULT_NAMES = {
    "feature": SINGLE_FEATURE_DEFAULT_NAME,
    "label": SINGLE_LABEL_DEFAULT_NAME,
    "receiver_tensor": SINGLE_RECEIVER_DEFAULT_NAME,
    "receiver_tensors_alternative": SINGLE_RECEIVER_DEFAULT_NAME,
}
_HOW_TO_BUILD = ("Build it inside the receiver fn (e.g. with tf.compat.v1.placeholder, "
                 "or tf.io.parse_example of one) and pass the tensor itself.")


def _converts_to_tensor(value: Any) -> bool:
  try:
    tf.convert_to_tensor(value)
  except (TypeError, ValueError):
    return False
  return True


def is_receiver_tensor(value: Any) -> bool:
  """Whether `value` may be a receiver's feature, label or input tensor.

  A `Tensor`, `SparseTensor` or `RaggedTensor`; or, as tf.estimator allowed,
  a LabeledTensor-like object (one with a `.tensor` attribute) that
  `tf.convert_to_tensor` accepts. Other values convertible to a tensor (lists,
  numpy arrays) are not: they would be baked into the graph as constants
  instead of being fed.
  """
  if isinstance(value, (tf.Tensor, tf.sparse.SparseTensor, tf.RaggedTensor)):
    return True
  return hasattr(value, "tensor") and _converts_to_tensor(value)


def check_tensor(value: Any, name: Any, error_label: str = "feature") -> None:
  """Raises ValueError unless `value` is a receiver tensor (see is_receiver_tensor).

  Args:
    value: the value to check.
    name: its key in the receiver's dict, or None for a single value.
    error_label: what it is: 'feature', 'label', 'receiver_tensor', ...

  Raises:
    ValueError: it is not; the text starts as tf.estimator's did.
  """
  if is_receiver_tensor(value):
    return
  # As tf.estimator: a falsy name (None, '', 0) is left out of the text.
  where = f" {name}" if name else ""
  raise ValueError(
      f"{error_label}{where} must be a Tensor, SparseTensor, or RaggedTensor. "
      f"Given {value!r} ({type(value).__name__}). {_HOW_TO_BUILD}")


def _check_key(key: Any, error_label: str, allow_int_keys: bool) -> None:
  if isinstance(key, str):
    return
  if not allow_int_keys:
    raise ValueError(
        f"{error_label} keys must be strings: {key}. Name each tensor with a "
        f"string key (the name it is fed under); given a {type(key).__name__}.")
  if not isinstance(key, int) or isinstance(key, bool):
    raise ValueError(
        f"{error_label} keys must be strings or ints: {key}. Name each tensor "
        f"with a string (or int) key; given a {type(key).__name__}.")


def wrap_and_check_input_tensors(tensors: Any, field_name: str,
                                 allow_int_keys: bool = False) -> Dict[Any, Any]:
  """Returns `tensors` as a new dict of name to tensor, each checked.

  Args:
    tensors: a receiver tensor (see is_receiver_tensor), or a dict of string
      (or, with `allow_int_keys`, int) to them. A single tensor is named by
      `field_name`'s default: 'feature', 'label' or 'input'.
    field_name: 'feature', 'label', 'receiver_tensor' or
      'receiver_tensors_alternative', as the texts name it.
    allow_int_keys: accept int keys too (features and labels).

  Returns:
    A new dict of name to tensor.

  Raises:
    ValueError: tensors is None, a key is not a string (or int), or a value is
      not a receiver tensor.
  """
  if tensors is None:
    raise ValueError(
        f"{field_name}s must be defined. Got None; return the {field_name} "
        f"tensor (or a dict of them) from the receiver fn.")
  if not isinstance(tensors, dict):
    tensors = {_DEFAULT_NAMES[field_name]: tensors}
  checked = {}
  for key, value in tensors.items():
    _check_key(key, field_name, allow_int_keys)
    check_tensor(value, key, error_label=field_name)
    checked[key] = value
  return checked


def placeholder_like(value: Any, default_batch_size: Optional[int] = None) -> tf.Tensor:
  """A placeholder, in the current graph, of `value`'s dtype and per-example shape.

  As tf.estimator: the first dimension is the batch, replaced by
  `default_batch_size` (a scalar becomes [batch]); a graph tensor's op name
  names the placeholder.

  Args:
    value: a `Tensor` (graph or eager), `SparseTensor` (gives a
      `tf.compat.v1.sparse_placeholder`), `RaggedTensor` (a dense placeholder
      of its shape, as tf.estimator made), `tf.TensorSpec`, numpy array or
      list.
    default_batch_size: the batch dimension, or None for any batch size.

  Returns:
    A `tf.compat.v1.placeholder` (or sparse placeholder).
  """
  if isinstance(value, tf.TensorSpec):
    shape, dtype, name = value.shape, value.dtype, value.name
  elif isinstance(value, (tf.Tensor, tf.RaggedTensor)):
    shape, dtype = value.shape, value.dtype
    try:
      name = value.op.name
    except AttributeError:  # eager and ragged tensors have no op
      name = None
  elif isinstance(value, tf.sparse.SparseTensor):
    # Fed as a SparseTensor, so model_fn sees what it saw in training.
    return tf.compat.v1.sparse_placeholder(
        dtype=value.dtype, shape=_batch_shape(value.shape, default_batch_size))
  else:
    # numpy arrays and lists: read shape and dtype without embedding the data
    # in the graph.
    array = np.asarray(value)
    dtype = tf.string if array.dtype.kind in "USO" else tf.as_dtype(array.dtype)
    shape, name = tf.TensorShape(array.shape), None
  return tf.compat.v1.placeholder(dtype=dtype, shape=_batch_shape(shape, default_batch_size),
                                  name=name)


def _batch_shape(shape: tf.TensorShape, default_batch_size: Optional[int]) -> tf.TensorShape:
  if shape.rank is None:
    return tf.TensorShape(None)
  return tf.TensorShape([default_batch_size]).concatenate(shape[1:])


def placeholders_like(values: Mapping[Any, Any], default_batch_size: Optional[int] = None
                      ) -> Dict[Any, tf.Tensor]:
  """{key: placeholder_like(value)} for each entry of `values`."""
  return {key: placeholder_like(value, default_batch_size) for key, value in values.items()}
