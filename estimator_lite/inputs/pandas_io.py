"""pandas_input_fn: an input_fn over a DataFrame (tf.compat.v1.estimator.inputs.pandas_input_fn)."""
from __future__ import annotations

import uuid
from typing import Any, Callable, Dict, Optional, Union

import numpy as np
import tensorflow as tf

from estimator_lite.inputs import _feeding

try:
  import pandas as pd  # pylint: disable=g-import-not-at-top
except ImportError:  # pandas is optional: only pandas_input_fn needs it.
  pd = None


def _unique_target_key(frame: pd.DataFrame, name: Any) -> Any:
  if name in frame:
    name += "_" + str(uuid.uuid4())
  return name


def pandas_input_fn(x: pd.DataFrame, y: Union[pd.Series, pd.DataFrame, None] = None,
                    batch_size: int = 128, num_epochs: Optional[int] = 1,
                    shuffle: Optional[bool] = None, queue_capacity: Optional[int] = 1000,
                    num_threads: int = 1, target_column: str = "target"
                    ) -> Callable[[], Any]:
  """Returns an input_fn that feeds a pandas DataFrame to the model.

  Called by an Estimator, the input_fn returns a `tf.data.Dataset` whose
  elements are a dict of column name -> Tensor (the columns of `x`), or
  `(features, target)` with `target` a Tensor (`y` a Series) or a dict keyed
  by `y`'s columns (`y` a DataFrame); called by other code in a graph, the
  tensors of the next batch, as tf.estimator's did. The frame is copied when this is called (later changes to it
  are not seen) and read batch by batch, never embedded in the graph.
  Batching, epochs and shuffling are as `numpy_input_fn`'s.

  Args:
    x: pandas `DataFrame`.
    y: pandas `Series` or `DataFrame` with the same index as `x`, or None.
    batch_size: rows per batch.
    num_epochs: times to go through the data (0: none); None repeats it forever.
    shuffle: bool, required: whether to read the rows in random order.
    queue_capacity: rows prepared ahead of the model; None: len(x).
    num_threads: accepted for compatibility (see numpy_input_fn).
    target_column: name under which a Series `y` travels with the features;
      it must not be a column of `x`. Unused when `y` is a DataFrame.

  Returns:
    A function `() -> tf.data.Dataset` (or, called outside an Estimator in a
    graph, `-> features` or `(features, target)` tensors), usable as an
    Estimator input_fn.

  Raises:
    TypeError: pandas is not installed, or target_column is not a string.
    ValueError: shuffle is not a bool, `x` already has a column named
      target_column, the indexes of `x` and `y` differ, or an invalid
      batch_size/num_epochs/queue_capacity/num_threads.
  """
  if pd is None:
    raise TypeError("pandas_input_fn should not be called without pandas installed "
                    "(pip install pandas).")
  _feeding.check_shuffle(shuffle)
  if not isinstance(target_column, str):
    raise TypeError("target_column must be a string type")
  _feeding.check_batch_options(batch_size, num_epochs, queue_capacity, num_threads)
  if not isinstance(x, pd.DataFrame):
    raise TypeError(f"x must be a pandas DataFrame; got {type(x).__name__}.")

  feature_keys = list(x.columns)
  columns = {key: x[key].to_numpy(copy=True) for key in feature_keys}
  target_keys: Any = None  # None, one key, or a list of keys (a DataFrame y)
  target_names: Optional[Dict[Any, Any]] = None
  if y is not None:
    if target_column in x:
      raise ValueError(
          f"Cannot use name {target_column} for target column: DataFrame already has a "
          f"column with that name: {x.columns}")
    if not np.array_equal(x.index, y.index):
      raise ValueError("Index for x and y are mismatched.\nIndex for x: "
                       f"{x.index}\nIndex for y: {y.index}\n")
    if isinstance(y, pd.DataFrame):
      # Each target travels under a name not in x; the labels dict gets y's names.
      target_names = {}
      for column in y.columns:
        key = _unique_target_key(x, column)
        target_names[key] = column
        columns[key] = y[column].to_numpy(copy=True)
      target_keys = list(target_names)
    else:
      target_keys = target_column
      columns[target_column] = y.to_numpy(copy=True)
  if not columns:
    raise ValueError("x has no columns; pandas_input_fn needs at least one feature.")
  if queue_capacity is None:
    queue_capacity = max(1, len(x))
  seed_source = _feeding.SeedSource()

  def input_fn() -> Any:
    """Returns the Dataset of DataFrame batches, or its tensors (_feeding.deliver)."""
    dataset = _feeding.make_dataset(columns, feature_keys, target_keys, batch_size,
                                    num_epochs, shuffle, queue_capacity, seed_source)
    if target_names is not None and any(k != v for k, v in target_names.items()):
      dataset = dataset.map(lambda features, targets: (
          features, {target_names[key]: value for key, value in targets.items()}))
    return _feeding.deliver(dataset, input_fn)

  return input_fn
