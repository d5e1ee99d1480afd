"""numpy_input_fn: an input_fn over numpy arrays (tf.compat.v1.estimator.inputs.numpy_input_fn)."""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Union

import numpy as np
import tensorflow as tf

from estimator_lite.inputs import _feeding

# Internal column names for an array `x` and an array `y`; a key already in
# `x` gets "_n" appended until unique (as tf.estimator did).
_ARRAY_X_KEY = "__direct_np_input__"
_TARGET_KEY = "__target_key__"


def _sorted_dict(data: Dict[str, Any]) -> Dict[str, Any]:
  return dict(sorted(data.items(), key=lambda item: item[0]))


def _features_as_dict(x: Any) -> Dict[str, Any]:
  if isinstance(x, dict):
    if not x:
      raise ValueError("x cannot be an empty dict")
    return _sorted_dict(x)
  if isinstance(x, np.ndarray):
    if x.size == 0:
      raise ValueError("x cannot be an empty array")
    return {_ARRAY_X_KEY: x}
  raise TypeError(f"x must be a dict or array; got {type(x).__name__}")


def numpy_input_fn(x: Union[np.ndarray, Dict[str, np.ndarray]],
                   y: Union[np.ndarray, Dict[str, np.ndarray], None] = None,
                   batch_size: int = 128, num_epochs: Optional[int] = 1,
                   shuffle: Optional[bool] = None, queue_capacity: int = 1000,
                   num_threads: int = 1) -> Callable[[], Any]:
  """Returns an input_fn that feeds numpy arrays (or dicts of them) to the model.

  Called by an Estimator, the input_fn returns a `tf.data.Dataset` whose
  elements are `features` (a dict with the keys of `x`, or a Tensor when `x`
  is an array) or `(features, targets)` (targets a Tensor, or a dict when `y`
  is a dict). Called by other code in a graph, it returns the tensors of the
  next batch, as tf.estimator's did: `features, targets = input_fn()`, then
  each `session.run` reads a batch until `OutOfRangeError`. The arrays are read batch by batch from this Python process and never
  embedded in the graph, so model_dir's graph files stay small whatever the
  size of the data.

  Rows run through the epochs without a break: a batch can span the end of
  one epoch and the start of the next, and only the last batch may be
  smaller than `batch_size`. The input ends after `num_epochs`. With
  `shuffle=True` each epoch is a new random permutation; with a graph seed
  (`RunConfig(tf_random_seed=...)`) the order is reproducible.

  Args:
    x: numpy array, or dict of name -> numpy array (all the same length).
    y: numpy array, dict of numpy arrays, or None.
    batch_size: rows per batch.
    num_epochs: times to go through the data (0: none); None repeats it
      forever (the batch dimension is then static).
    shuffle: bool, required: whether to read the rows in random order (True
      for training, False for evaluation and prediction).
    queue_capacity: rows prepared ahead of the model.
    num_threads: accepted for compatibility; one reader keeps num_epochs and
      the order exact (tf.estimator multiplied the epochs by the threads).

  Returns:
    A function `() -> tf.data.Dataset` (or, called outside an Estimator in a
    graph, `-> features` or `(features, targets)` tensors), usable as an
    Estimator input_fn.

  Raises:
    ValueError: shuffle is not a bool, or an invalid batch_size/num_epochs/
      queue_capacity/num_threads. When the input_fn is called: x or y is
      empty, a key is in both x and y, or the arrays' lengths differ.
    TypeError: (when the input_fn is called) x is not a dict or array.
  """
  _feeding.check_shuffle(shuffle)
  _feeding.check_batch_options(batch_size, num_epochs, queue_capacity, num_threads)
  seed_source = _feeding.SeedSource()

  def input_fn() -> Any:
    """Returns the Dataset of numpy batches, or its tensors (_feeding.deliver)."""
    # Validated when called, as tf.estimator did, so x may be filled in later.
    columns = _features_as_dict(x)
    feature_keys = list(columns) if isinstance(x, dict) else _ARRAY_X_KEY
    target_shape = None
    target_keys: Any  # None, one key, or a list of keys (a dict y)
    if y is None:
      target_keys = None
    elif isinstance(y, dict):
      if not y:
        raise ValueError("y cannot be empty dict, use None instead.")
      targets = _sorted_dict(y)
      target_keys = list(targets)
      duplicates = set(columns).intersection(target_keys)
      if duplicates:
        raise ValueError(f"{len(duplicates)} duplicate keys are found in both x and y: "
                         f"{duplicates}")
      columns.update(targets)
    else:
      target_keys = _TARGET_KEY
      while target_keys in columns:
        target_keys += "_n"
      columns[target_keys] = y
      target_shape = np.shape(y)
    columns = {key: np.asarray(value) for key, value in columns.items()}
    _feeding.check_lengths(columns, feature_keys, target_keys, target_shape)
    dataset = _feeding.make_dataset(columns, feature_keys, target_keys, batch_size,
                                    num_epochs, shuffle, queue_capacity, seed_source)
    return _feeding.deliver(dataset, input_fn)

  return input_fn
