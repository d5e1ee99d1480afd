"""The one place that calls a user's input_fn and turns what it returns into features and labels.

Every graph estimator_lite builds gets its input here: training (one step a
run, the in-graph loop, a strategy's replicas), evaluation and prediction.
"""
from __future__ import annotations

import collections.abc
import contextvars
from typing import Any, Callable, Iterator, List, Optional, Tuple

import numpy as np
import tensorflow as tf

from estimator_lite._util import fn_args
from estimator_lite.mode_keys import ModeKeys

_INPUT_FN_ARGS = ("mode", "params", "config", "input_context")
_logging = tf.compat.v1.logging
# The input_fn call_input_fn is calling now (None outside its calls).
_CALLING: contextvars.ContextVar = contextvars.ContextVar("estimator_lite_input_fn", default=None)


class IteratorInitializerHook(tf.compat.v1.train.SessionRunHook):
  """Initialises an iterator (a dataset's or a strategy's) once the session exists."""

  def __init__(self, iterator: Any):
    self._iterator = iterator

  def begin(self) -> None:
    # Built here, before MonitoredSession finalizes the graph.
    self._initializer = self._iterator.initializer

  def after_create_session(self, session: Any, coord: Any) -> None:
    del coord
    session.run(self._initializer)


def input_context_for(config: Any, mode: str = ModeKeys.TRAIN) -> tf.distribute.InputContext:
  """The tf.distribute.InputContext input_fn receives in this process.

  Training: one input pipeline per training task (chief or master, then the
  workers), numbered by `global_id_in_cluster`, so with
  `dataset.shard(num_input_pipelines, input_pipeline_id)` each task reads a
  disjoint part. Evaluation and prediction run in a single process (the
  evaluator, a master evaluating between saves, a user's own call), which
  must see all of its input: one pipeline, id 0.
  """
  if mode != ModeKeys.TRAIN:
    num_pipelines, pipeline_id = 1, 0
  else:
    num_pipelines = max(1, config.num_worker_replicas or 1)
    pipeline_id = config.global_id_in_cluster or 0
  if pipeline_id >= num_pipelines:  # ps or evaluator: read everything.
    num_pipelines, pipeline_id = 1, 0
  return tf.distribute.InputContext(num_input_pipelines=num_pipelines,
                                    input_pipeline_id=pipeline_id,
                                    num_replicas_in_sync=1)


def call_input_fn(input_fn: Callable[..., Any], mode: str, params: dict, config: Any,
                  input_context: Optional[tf.distribute.InputContext] = None) -> Any:
  """Calls input_fn with whichever of mode/params/config/input_context it names.

  Args:
    input_fn: the user's input_fn.
    mode: a ModeKeys value.
    params: the Estimator's params.
    config: the Estimator's RunConfig.
    input_context: what a distribution strategy gives this pipeline; None:
      this process's (input_context_for).

  Returns:
    What input_fn returned.

  Raises:
    TypeError: input_fn is not callable or needs an argument Estimator cannot give.
  """
  if not callable(input_fn):
    # tf.estimator failed here with TensorFlow's "unsupported callable".
    raise TypeError(
        f"unsupported callable: input_fn must be callable, given: {input_fn!r}. Pass "
        "the function itself (input_fn=my_input_fn), not its result.")
  names = fn_args.fn_args(input_fn)
  unknown = [n for n in fn_args.required_args(input_fn) if n not in _INPUT_FN_ARGS]
  if unknown:
    raise TypeError(
        f"input_fn {fn_args.describe(input_fn)} requires argument(s) {unknown}, but "
        f"Estimator only passes {list(_INPUT_FN_ARGS)}. Bind the others with "
        "functools.partial or a lambda.")
  kwargs: dict = {}
  if "mode" in names:
    kwargs["mode"] = mode
  if "params" in names:
    kwargs["params"] = params
  if "config" in names:
    kwargs["config"] = config
  if "input_context" in names:
    if input_context is not None:
      _logging.info("The input_fn accepts an input_context (%d input pipeline(s), "
                    "pipeline %d, %d replica(s) in sync).",
                    input_context.num_input_pipelines, input_context.input_pipeline_id,
                    input_context.num_replicas_in_sync)
    kwargs["input_context"] = input_context or input_context_for(config, mode)
  token = _CALLING.set(input_fn)
  try:
    with tf.device("/cpu:0"):
      return input_fn(**kwargs)
  finally:
    _CALLING.reset(token)


def called_by_estimator(input_fn: Callable[..., Any]) -> bool:
  """Whether estimator_lite is calling `input_fn` itself now (not a function that calls it).

  An input_fn that can return a tf.data.Dataset or its tensors returns the
  Dataset then: whatever an Estimator does with input (a strategy's
  per-replica input, `steps_per_loop`'s in-graph loop) takes a Dataset,
  while a caller of its own (a test, a user's input_fn wrapping it) gets the
  tensors tf.estimator's returned.
  """
  return _CALLING.get() is input_fn


def _is_dataset(value: Any) -> bool:
  return isinstance(value, (tf.data.Dataset, tf.compat.v1.data.Dataset))


def cardinality(result: Any) -> Optional[tf.Tensor]:
  """tf.data's count of the elements of a Dataset result, as a tensor; None for other results.

  Builds no more than the count's op (on the CPU, with the input pipeline); a
  session evaluates it to the number of elements (batches, for a batched
  dataset), `tf.data.INFINITE_CARDINALITY` (e.g. after `repeat()` with no
  count) or `tf.data.UNKNOWN_CARDINALITY` (e.g. after `filter`, or from
  `from_generator`: tf.data cannot tell without reading the input). Features
  from an iterator the input_fn made itself have no count: None.
  """
  if not _is_dataset(result):
    return None
  with tf.device("/cpu:0"):
    return tf.data.experimental.cardinality(result)


def require_dataset(result: Any, why: str) -> Any:
  """Returns `result`, which `why` needs to be a tf.data.Dataset.

  Args:
    result: what input_fn returned.
    why: what needs a dataset, e.g. "RunConfig(steps_per_loop=100)".

  Raises:
    TypeError: result is not a tf.data.Dataset; the message starts with `why`.
  """
  if not _is_dataset(result):
    raise TypeError(
        f"With {why}, input_fn must return a tf.data.Dataset; it returned "
        f"{type(result).__name__}: {result!r}. Wrap the tensors in "
        "tf.data.Dataset.from_tensor_slices(...) or from_generator(...).")
  return result


def dataset_iterator(result: Any, why: str) -> Tuple[Any, IteratorInitializerHook]:
  """Returns (initializable iterator, its initializer hook) for a Dataset result.

  Raises:
    TypeError: result is not a tf.data.Dataset; `why` says what needs one.
  """
  iterator = tf.compat.v1.data.make_initializable_iterator(require_dataset(result, why))
  return iterator, IteratorInitializerHook(iterator)


def split_features_and_labels(batch: Any) -> Tuple[Any, Any]:
  """(features, labels or None) of one element of input: a (features, labels) pair or features.

  Raises:
    ValueError: a tuple or list that is not a pair (tf.estimator's text first).
    TypeError: no features.
  """
  if isinstance(batch, (list, tuple)):
    if len(batch) != 2:
      raise ValueError(
          "input_fn should return (features, labels) as a len 2 tuple. It returned "
          f"a {type(batch).__name__} of length {len(batch)}: {batch!r}.")
    features, labels = batch
  else:
    features, labels = batch, None
  if features is None:
    raise TypeError(f"input_fn returned no features (None); it returned {batch!r}.")
  return features, labels


# Values a feature or label may be besides a tensor (tf.is_tensor: Tensor,
# SparseTensor, RaggedTensor, Variable, ...): what tf.convert_to_tensor takes,
# numbers, strings, numpy arrays and array-likes such as a pandas Series.
# tf.estimator passed such values to model_fn unchanged, and so does this.
_PLAIN_VALUES = (bool, int, float, complex, str, bytes, np.ndarray, np.generic)


def _is_feature_value(leaf: Any) -> bool:
  return tf.is_tensor(leaf) or isinstance(leaf, _PLAIN_VALUES) or hasattr(leaf, "__array__")


def _leaves(value: Any, path: str) -> Iterator[Tuple[str, Any]]:
  """(path, leaf) for each leaf of nested dicts, tuples and lists, e.g. ("features['x'][0]", 1)."""
  if isinstance(value, collections.abc.Mapping):
    for key, item in value.items():
      yield from _leaves(item, f"{path}[{key!r}]")
  elif isinstance(value, (list, tuple)):
    for index, item in enumerate(value):
      yield from _leaves(item, f"{path}[{index}]")
  else:
    yield path, value


def _check_structure(value: Any, what: str, returned: Any) -> None:
  for path, leaf in _leaves(value, what):
    if not _is_feature_value(leaf):
      raise TypeError(
          f"input_fn returned {path} = {leaf!r}, which is neither a tensor nor a value "
          "convertible to one (a number, string, bytes or numpy array-like) (input_fn "
          f"returned {type(returned).__name__}). Features and labels are tensors, "
          "SparseTensors, RaggedTensors or such values, or dicts, tuples or lists of "
          "them; an input_fn returns a tf.data.Dataset of (features, labels) or of "
          "features, or a (features, labels) tuple.")


def has_end_of_input(features: Any) -> bool:
  """True if reading `features` can reach the end of input, as tf.estimator judged it.

  That is: a tensor of `features` comes straight from a tf.data iterator, or
  the current graph has queue runners. Otherwise nothing ever raises
  OutOfRangeError, and a loop until end of input (predict) never ends.
  """
  for _, leaf in _leaves(features, "features"):
    if tf.is_tensor(leaf):
      for tensor in tf.nest.flatten(leaf, expand_composites=True):
        if isinstance(tensor, tf.Tensor) and tensor.op.type == "IteratorGetNext":
          return True
  graph = tf.compat.v1.get_default_graph()
  return bool(graph.get_collection(tf.compat.v1.GraphKeys.QUEUE_RUNNERS))


def parse_input_fn_result(result: Any) -> Tuple[Any, Any, List[tf.compat.v1.train.SessionRunHook]]:
  """Splits an input_fn result into features, labels and the hooks it needs.

  Returns:
    (features, labels or None, list of hooks)

  Raises:
    TypeError / ValueError: the result is not a supported structure; the message
      says what was returned.
  """
  hooks: List[tf.compat.v1.train.SessionRunHook] = []
  returned = result
  if _is_dataset(result):
    iterator, hook = dataset_iterator(result, "")
    hooks.append(hook)
    result = iterator.get_next()
  features, labels = split_features_and_labels(result)
  _check_structure(features, "features", returned)
  if labels is not None:
    _check_structure(labels, "labels", returned)
  return features, labels, hooks


def features_and_labels(input_fn: Callable[..., Any], mode: str, params: dict, config: Any
                        ) -> Tuple[Any, Any, List[tf.compat.v1.train.SessionRunHook]]:
  """Calls input_fn in the current graph; returns (features, labels or None, hooks).

  Raises:
    TypeError / ValueError: as call_input_fn and parse_input_fn_result.
  """
  return parse_input_fn_result(call_input_fn(input_fn, mode, params, config))
