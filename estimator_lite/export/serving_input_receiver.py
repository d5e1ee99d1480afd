"""What a serving_input_receiver_fn returns: the serving graph's inputs and features.

A `serving_input_receiver_fn` takes no arguments, builds placeholders (the
tensors a server feeds) inside the export graph, turns them into the features
the model_fn expects, and returns a `ServingInputReceiver` pairing the two.
"""
import attrs
import numpy as np
import tensorflow as tf

# The keys TensorFlow's SavedModel tooling (and tf.estimator) used when a single
# tensor, rather than a dict, was given.
SINGLE_FEATURE_DEFAULT_NAME = "feature"
SINGLE_RECEIVER_DEFAULT_NAME = "input"

_DEFAULT_NAMES = {
    "feature": SINGLE_FEATURE_DEFAULT_NAME,
    "receiver_tensor": SINGLE_RECEIVER_DEFAULT_NAME,
    "receiver_tensors_alternative": SINGLE_RECEIVER_DEFAULT_NAME,
}


def _is_tensor(value):
  return isinstance(value, (tf.Tensor, tf.sparse.SparseTensor, tf.RaggedTensor))


def _check_tensor(value, key, label):
  if not _is_tensor(value):
    where = f" {key!r}" if key is not None else ""
    raise ValueError(
        f"{label}{where} must be a Tensor, SparseTensor, or RaggedTensor; given "
        f"{value!r}. Build it inside serving_input_receiver_fn (e.g. with "
        "tf.compat.v1.placeholder).")


def _wrap_and_check(tensors, label, allow_int_keys=False):
  """Returns `tensors` as a new dict of name to tensor, validated."""
  if tensors is None:
    raise ValueError(f"{label}s must be defined; got None.")
  if not isinstance(tensors, dict):
    tensors = {_DEFAULT_NAMES[label]: tensors}
  checked = {}
  for key, value in tensors.items():
    key_ok = isinstance(key, str) or (
        allow_int_keys and isinstance(key, int) and not isinstance(key, bool))
    if not key_ok:
      kinds = "strings or ints" if allow_int_keys else "strings"
      raise ValueError(f"{label} keys must be {kinds}: {key!r}.")
    _check_tensor(value, key, label)
    checked[key] = value
  return checked


def _check_alternatives(alternatives):
  if alternatives is None:
    return None
  if not isinstance(alternatives, dict):
    raise ValueError(
        f"receiver_tensors_alternatives must be a dict: {alternatives!r}. Map "
        "each alternative's name to a Tensor or a dict of Tensors.")
  return {name: _wrap_and_check(tensors, "receiver_tensors_alternative")
          for name, tensors in alternatives.items()}


class _Replaceable:
  """replace()/_replace() for the frozen receivers (tf.estimator's were namedtuples)."""

  def replace(self, **changes):
    """Returns a new, validated receiver with `changes` applied."""
    fields = ("features", "receiver_tensors", "receiver_tensors_alternatives")
    unknown = sorted(set(changes) - set(fields))
    if unknown:
      raise ValueError(
          f"{type(self).__name__} has no field(s) {unknown}; fields are {list(fields)}.")
    values = {name: getattr(self, name) for name in fields}
    values.update(changes)
    return type(self)(**values)

  _replace = replace


# eq=False: identity equality and hashing; comparing dicts of graph tensors by
# value would build ops (or fail) rather than answer.
@attrs.frozen(init=False, eq=False)
class ServingInputReceiver(_Replaceable):
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

  features: dict
  receiver_tensors: dict
  receiver_tensors_alternatives: object = None

  def __init__(self, features, receiver_tensors,
               receiver_tensors_alternatives=None):
    self.__attrs_init__(
        features=_wrap_and_check(features, "feature", allow_int_keys=True),
        receiver_tensors=_wrap_and_check(receiver_tensors, "receiver_tensor"),
        receiver_tensors_alternatives=_check_alternatives(
            receiver_tensors_alternatives))


@attrs.frozen(init=False, eq=False)
class TensorServingInputReceiver(_Replaceable):
  """A `ServingInputReceiver` whose single feature reaches model_fn as a bare tensor.

  For model_fns whose `features` is one `Tensor` rather than a dict.

  Args:
    features: a single `Tensor`, `SparseTensor` or `RaggedTensor`.
    receiver_tensors: as for `ServingInputReceiver`.
    receiver_tensors_alternatives: as for `ServingInputReceiver`.

  Raises:
    ValueError: features is None or not a tensor, or receiver tensors are bad.
  """

  features: object
  receiver_tensors: dict
  receiver_tensors_alternatives: object = None

  def __init__(self, features, receiver_tensors,
               receiver_tensors_alternatives=None):
    if features is None:
      raise ValueError("features must be defined; got None.")
    _check_tensor(features, None, "features")
    receiver = ServingInputReceiver(features, receiver_tensors,
                                    receiver_tensors_alternatives)
    self.__attrs_init__(
        features=features,
        receiver_tensors=receiver.receiver_tensors,
        receiver_tensors_alternatives=receiver.receiver_tensors_alternatives)


def build_parsing_serving_input_receiver_fn(feature_spec,
                                            default_batch_size=None):
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
  if not isinstance(feature_spec, dict) or not feature_spec:
    raise ValueError(
        f"feature_spec must be a non-empty dict of feature name to "
        f"tf.io.FixedLenFeature/VarLenFeature; given {feature_spec!r}.")
  feature_spec = dict(feature_spec)

  def serving_input_receiver_fn():
    """Parses serialized tf.Examples fed to 'input_example_tensor'."""
    serialized = tf.compat.v1.placeholder(
        dtype=tf.string, shape=[default_batch_size], name="input_example_tensor")
    features = tf.compat.v1.io.parse_example(serialized, feature_spec)
    return ServingInputReceiver(features, {"examples": serialized})

  return serving_input_receiver_fn


def _placeholder_like(value, default_batch_size):
  if isinstance(value, tf.TensorSpec):
    shape, dtype, name = value.shape, value.dtype, value.name
  elif isinstance(value, tf.Tensor):
    shape, dtype = value.shape, value.dtype
    try:
      # A graph tensor's op name names the placeholder, as tf.estimator did.
      name = value.op.name
    except AttributeError:  # eager tensors have no op
      name = None
  else:
    # numpy arrays and lists: read shape and dtype without embedding the data
    # in the export graph.
    array = np.asarray(value)
    dtype = tf.string if array.dtype.kind in "USO" else tf.as_dtype(array.dtype)
    shape, name = tf.TensorShape(array.shape), None
  if shape.rank is None:
    batch_shape = tf.TensorShape(None)
  else:
    # As tf.estimator: the first dimension is the batch (a scalar becomes [batch]).
    batch_shape = tf.TensorShape([default_batch_size]).concatenate(shape[1:])
  return tf.compat.v1.placeholder(dtype=dtype, shape=batch_shape, name=name)


def build_raw_serving_input_receiver_fn(features, default_batch_size=None):
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
  if not isinstance(features, dict) or not features:
    raise ValueError(
        f"features must be a non-empty dict of feature name to Tensor; given "
        f"{features!r}.")
  features = dict(features)

  def serving_input_receiver_fn():
    """Feeds each feature through its own placeholder."""
    receiver_tensors = {name: _placeholder_like(value, default_batch_size)
                        for name, value in features.items()}
    return ServingInputReceiver(receiver_tensors, receiver_tensors)

  return serving_input_receiver_fn
