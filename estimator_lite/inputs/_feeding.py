"""Feeds in-memory columns (numpy arrays) to a model through tf.data, batch by batch.

tf.estimator fed numpy arrays and DataFrames through queues filled by Python
threads. Here a `tf.data.Dataset.from_generator` yields whole batches sliced
from the arrays: the arrays stay in this Python process and never become graph
constants, so graph.pbtxt and every checkpoint's .meta stay small however large
the data (`Dataset.from_tensor_slices(array)` would copy the array into the
graph, see DESIGN.md). The graph only holds a token naming the generator.

Rows flow through the epochs without a break, as tf.estimator's queues did: a
batch may end one epoch and begin the next, and only the very last batch of
the last epoch may be smaller than `batch_size`.

Called by an Estimator, the input_fn returns that Dataset; called by anything
else in a graph (a test, a user's input_fn that wraps it), the tensors of its
next batch, as tf.estimator's queue-fed input_fn returned (`deliver`).
"""
from __future__ import annotations

import itertools
import numbers
from typing import Any, Callable, Dict, Iterator, Optional, Tuple, Union

import numpy as np
import tensorflow as tf

from estimator_lite._graph import input_fn as input_fn_lib

_logging = tf.compat.v1.logging


def check_shuffle(shuffle: Optional[bool]) -> None:
  """Raises ValueError (tf.estimator's wording) unless shuffle is a bool."""
  if not isinstance(shuffle, bool):
    raise ValueError('shuffle must be provided and explicitly set as boolean '
                     '(it is recommended to set it as True for training); '
                     f'got {shuffle}')


def check_batch_options(batch_size: int, num_epochs: Optional[int],
                        queue_capacity: Optional[int], num_threads: int) -> None:
  """Validates the arguments numpy_input_fn and pandas_input_fn share.

  Raises:
    ValueError: a value that cannot work; the message says which one and why.
  """
  def is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)

  if not is_int(batch_size) or batch_size < 1:
    raise ValueError(f"batch_size must be a positive int; got {batch_size!r}.")
  # 0 is valid, as in tf.estimator: an input that ends before its first batch.
  if num_epochs is not None and (not is_int(num_epochs) or num_epochs < 0):
    raise ValueError(
        f"num_epochs must be a non-negative int, or None to repeat the data forever; "
        f"got {num_epochs!r}.")
  if queue_capacity is not None and (not is_int(queue_capacity) or queue_capacity < 1):
    raise ValueError(f"queue_capacity must be a positive int; got {queue_capacity!r}.")
  if not is_int(num_threads) or num_threads < 1:
    raise ValueError(f"num_threads must be a positive int; got {num_threads!r}.")
  if num_threads > 1:
    # tf.estimator ran one reader per thread, each reading every epoch (so
    # num_epochs was multiplied) and, unshuffled, interleaving rows at random.
    # One reader keeps both the epoch count and the order exact; the batches
    # are prepared ahead of the training step anyway (prefetch).
    _logging.info("num_threads=%d: estimator_lite reads with one thread so that "
                  "num_epochs and the row order stay exact; batches are still "
                  "prepared ahead of the training step.", num_threads)


def _tensor_dtype(key: Any, array: np.ndarray) -> tf.DType:
  """The tf.DType a column feeds as; TypeError naming the column if it has none."""
  if array.dtype.kind in "US":
    return tf.string
  # An object column feeds as tf.string only if it holds strings (not, e.g.,
  # pandas' missing values or Python objects); checked on the first row.
  if array.dtype.kind == "O" and len(array) and isinstance(array.flat[0], (str, bytes)):
    return tf.string
  try:
    if array.dtype.kind == "O":
      raise TypeError(array.dtype)
    return tf.as_dtype(array.dtype)
  except TypeError:
    raise TypeError(
        f"Cannot feed column {key!r} (dtype {array.dtype}, first value "
        f"{array.flat[0]!r}) to TensorFlow; convert it to a numeric, bool or string "
        "dtype first (e.g. fill missing values).") from None


def _index_batches(num_rows: int, batch_size: int, num_epochs: Optional[int],
                   shuffle: Optional[bool],
                   rng: Any,  # a np.random.Generator when shuffling, else None
                   ) -> Iterator[Union[slice, np.ndarray]]:
  """Yields each batch's rows: a slice (in order) or an index array (shuffled).

  The epochs form one stream of rows cut into batches; each epoch is a fresh
  permutation when shuffling.
  """
  pending = []  # pieces of a batch that continues into the next epoch
  pending_rows = 0
  epochs = range(num_epochs) if num_epochs is not None else itertools.count()
  for _ in epochs:
    order: Any = rng.permutation(num_rows) if shuffle else None
    start = 0
    if pending_rows:
      take = min(batch_size - pending_rows, num_rows)
      pending.append(order[:take] if shuffle else np.arange(take))
      pending_rows += take
      start = take
      if pending_rows < batch_size:
        continue
      yield np.concatenate(pending)
      pending, pending_rows = [], 0
    while start + batch_size <= num_rows:
      stop = start + batch_size
      yield order[start:stop] if shuffle else slice(start, stop)
      start = stop
    if start < num_rows:
      pending = [order[start:] if shuffle else np.arange(start, num_rows)]
      pending_rows = num_rows - start
  if pending_rows:
    yield np.concatenate(pending)


class SeedSource:
  """Seeds each reading of the data: fixed per graph seed and per reading.

  With a graph-level seed (RunConfig.tf_random_seed) the shuffled order is
  deterministic, yet differs between successive readings (train() called in a
  loop would otherwise see the same first batches on every call).
  """

  def __init__(self) -> None:
    self._readings = itertools.count()

  def rng_factory(self) -> Callable[[], np.random.Generator]:
    """Returns a function giving each reading's numpy Generator.

    Call it while the input_fn builds its graph, and only when shuffling: it
    takes one op seed from the graph, as one random op does. tf.estimator
    2.15's feeder took exactly one when shuffling (its RandomShuffleQueue)
    and none otherwise (a FIFOQueue); a graph hands op seeds out in order
    (TF's `get_seed` counts the seeds taken, not the ops built), so taking
    the same number keeps a model_fn's unseeded random ops (initializers,
    dropout) on 2.15's op seeds under `RunConfig(tf_random_seed=...)`.
    The generator itself runs on a tf.data thread, outside that graph.
    """
    graph_seed, _ = tf.compat.v1.get_seed(None)

    def rng() -> np.random.Generator:
      reading = next(self._readings)
      if graph_seed is None:
        return np.random.default_rng()
      return np.random.default_rng([int(graph_seed) & 0xFFFFFFFF, reading])
    return rng


def make_dataset(columns: Dict[Any, np.ndarray], feature_keys: Any, target_keys: Any,
                 batch_size: int, num_epochs: Optional[int], shuffle: Optional[bool],
                 queue_capacity: Optional[int], seed_source: SeedSource) -> tf.data.Dataset:
  """Builds the Dataset of batches for a dict of equally long columns.

  Args:
    columns: dict name -> numpy array (features and targets together).
    feature_keys: list of keys of the features, or a single key whose column
      is returned as a bare Tensor (an array `x`).
    target_keys: None (no labels), a list of keys (labels dict), or a single
      key (labels Tensor).
    batch_size, num_epochs, shuffle: as numpy_input_fn.
    queue_capacity: rows to prepare ahead of the model (rounded up to batches).
    seed_source: a `SeedSource` shared by every call of one input_fn.

  Returns:
    A `tf.data.Dataset` of features, or of (features, labels).
  """
  num_rows = len(next(iter(columns.values())))
  # With num_epochs=None every batch is full (rows wrap around into the next
  # epoch), so the batch dimension is static, as tf.estimator's dequeue_many.
  batch_dim = batch_size if num_epochs is None else None

  def structure(make: Callable[..., Any]) -> Any:
    def part(keys: Any) -> Any:
      if keys is None:
        return None
      if isinstance(keys, list):
        return {key: make(key) for key in keys}
      return make(keys)
    features, targets = part(feature_keys), part(target_keys)
    return features if target_keys is None else (features, targets)

  signature = structure(lambda key: tf.TensorSpec(
      (batch_dim,) + columns[key].shape[1:], _tensor_dtype(key, columns[key])))

  # Only a shuffle takes an op seed (see SeedSource.rng_factory): an in-order
  # read must leave the graph's op seeds untouched, as 2.15's FIFOQueue did.
  make_rng = seed_source.rng_factory() if shuffle else None

  def generate() -> Iterator[Any]:
    rng = make_rng() if make_rng is not None else None
    for rows in _index_batches(num_rows, batch_size, num_epochs, shuffle, rng):
      yield structure(lambda key, rows=rows: columns[key][rows])

  dataset = tf.data.Dataset.from_generator(generate, output_signature=signature)
  # Prepare batches while the model trains, as tf.estimator's queue did.
  ahead = -(-(queue_capacity or batch_size) // batch_size)
  return dataset.prefetch(max(1, ahead))


def check_lengths(columns: Dict[Any, np.ndarray], feature_keys: Any, target_keys: Any,
                  target_shape: Optional[Tuple[int, ...]]) -> None:
  """Raises tf.estimator's ValueError when the columns differ in length."""
  if len({len(column) for column in columns.values()}) == 1:
    return
  x_keys = feature_keys if isinstance(feature_keys, list) else [feature_keys]
  shapes_x = {key: columns[key].shape for key in x_keys}
  shape_y: Union[None, Tuple[int, ...], Dict[Any, Tuple[int, ...]]]
  if target_keys is None or not isinstance(target_keys, list):
    shape_y = target_shape
  else:
    shape_y = {key: columns[key].shape for key in target_keys}
  raise ValueError('Length of tensors in x and y is mismatched. All '
                   'elements in x and y must have the same length.\n'
                   f'Shapes in x: {shapes_x}\n'
                   f'Shapes in y: {shape_y}\n')


def deliver(dataset: tf.data.Dataset, input_fn: Callable[..., Any]) -> Any:
  """What `input_fn` (numpy_input_fn's or pandas_input_fn's) returns: `dataset` or its tensors.

  - Called by an Estimator (`called_by_estimator`), or executing eagerly:
    the Dataset itself.
  - Otherwise, building a graph: the next batch's `features` or
    `(features, labels)` tensors, as tf.estimator's input_fn returned them.
    Each Session reads the batches from the start and, after the last, raises
    `OutOfRangeError`, as tf.estimator's queues did; there is nothing to
    initialise, and `start_queue_runners` (which such code calls) is harmless.
  """
  if tf.executing_eagerly() or input_fn_lib.called_by_estimator(input_fn):
    return dataset
  # A one-shot iterator takes an op seed from a seeded graph, which 2.15's
  # queues did not (see SeedSource): built with the graph seed unset, it
  # takes none, and the model_fn's random ops keep 2.15's op seeds. The
  # batches' order does not depend on it (SeedSource seeds the shuffle).
  graph = tf.compat.v1.get_default_graph()
  graph_seed, graph.seed = graph.seed, None
  try:
    iterator = tf.compat.v1.data.make_one_shot_iterator(dataset)
  finally:
    graph.seed = graph_seed
  return iterator.get_next()
