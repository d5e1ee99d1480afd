"""The example-state table of SDCA training: one dense hash table, split into shards.

SDCA keeps, for every training example it has seen, its dual variable and the
loss terms that go into the duality gap (four floats), keyed by the
fingerprint of the example's id (two int64s, `SdcaFprint`). The table is
TensorFlow's dense hash table (`tf.lookup.experimental.DenseHashTable`, the
`MutableDenseHashTableV2` op), split into `num_shards` tables so that large
data sets can spread it over parameter servers; a key goes to shard
`abs(first int64 of the key) mod num_shards`.

The shards are checkpointed as tf.estimator 2.15's were: the saveable of
shard i of n is named `<name>-<i+1>-of-<n>`, giving the checkpoint entries
`ShardedMutableHashTable-1-of-1-keys` and `ShardedMutableHashTable-1-of-1-values`
with the default name, so a 2.15 model_dir's example state restores here and
the reverse.
"""
from __future__ import annotations

from typing import Any, List, Sequence, Tuple

import tensorflow as tf


class ShardedDenseHashTable:
  """A dense hash table of `num_shards` shards, for int64 (vector) keys.

  ```python
  table = ShardedDenseHashTable(tf.int64, tf.float32, default_value=[0.0] * 4,
                                empty_key=[0, 0], deleted_key=[1, 1], num_shards=2)
  state = table.lookup(keys)            # keys [batch, 2] -> [batch, 4]
  insert = table.insert(keys, new_state)
  ```
  """

  def __init__(self, key_dtype: tf.DType, value_dtype: tf.DType, default_value: Any,
               empty_key: Any, deleted_key: Any, num_shards: int = 1,
               checkpoint: bool = True, name: str = "ShardedMutableHashTable") -> None:
    """Creates the shards (in graph mode, in the current graph).

    Args:
      key_dtype: the keys' dtype.
      value_dtype: the values' dtype.
      default_value: what `lookup` returns for a key not in the table (its
        shape is the shape of one value).
      empty_key: a key never inserted, marking empty buckets (its shape is
        the shape of one key).
      deleted_key: another key never inserted, marking deleted buckets.
      num_shards: how many tables to split the keys over.
      checkpoint: whether the shards are saved to and restored from
        checkpoints.
      name: the name scope of the shards' ops, and the prefix of their
        saveables' names.
    """
    self._key_dtype = key_dtype
    self._value_dtype = value_dtype
    with tf.compat.v1.name_scope(name, "sharded_mutable_hash_table") as scope:
      self._name = scope
      self._shards = [
          tf.lookup.experimental.DenseHashTable(
              key_dtype=key_dtype, value_dtype=value_dtype, default_value=default_value,
              empty_key=empty_key, deleted_key=deleted_key, checkpoint=checkpoint,
              name=f"{name}-{index + 1}-of-{num_shards}")
          for index in range(num_shards)]

  @property
  def name(self) -> str:
    """The name scope of the shards."""
    return self._name

  @property
  def shards(self) -> List[Any]:
    """The shards, `tf.lookup.experimental.DenseHashTable`s."""
    return list(self._shards)

  def size(self) -> tf.Tensor:
    """The number of keys in the table (all shards), an int64 scalar."""
    with tf.compat.v1.name_scope("sharded_mutable_hash_table_size"):
      return tf.math.add_n([shard.size() for shard in self._shards])

  def _shard_of(self, keys: tf.Tensor) -> tf.Tensor:
    # A vector key goes by its first element.
    if keys.shape.ndims > 1:
      keys = tf.reshape(tf.slice(keys, [0, 0], [-1, 1]), [-1])
    return tf.cast(tf.math.floormod(tf.math.abs(keys), len(self._shards)), tf.int32)

  @staticmethod
  def _check_keys(keys: tf.Tensor) -> None:
    if keys.shape.ndims not in (1, 2):
      raise ValueError(f"Expected a vector or matrix for keys, got {keys.shape}.")

  def lookup(self, keys: tf.Tensor) -> tf.Tensor:
    """The values of `keys` (the default value for keys not in the table).

    Args:
      keys: a vector of scalar keys, or a matrix of vector keys, of the
        table's key dtype.

    Returns:
      The values, one a key, in the order of `keys`.

    Raises:
      TypeError: keys of another dtype.
      ValueError: keys that are neither a vector nor a matrix.
    """
    if keys.dtype.base_dtype != self._key_dtype:
      raise TypeError(
          f"Signature mismatch. Keys must be dtype {self._key_dtype}, got {keys.dtype}.")
    self._check_keys(keys)
    if len(self._shards) == 1:
      return self._shards[0].lookup(keys)
    shard_of_key = self._shard_of(keys)
    key_shards = tf.dynamic_partition(keys, shard_of_key, len(self._shards))
    value_shards = [shard.lookup(shard_keys)
                    for shard, shard_keys in zip(self._shards, key_shards)]
    positions = tf.dynamic_partition(tf.range(tf.shape(keys)[0]), shard_of_key,
                                     len(self._shards))
    return tf.dynamic_stitch(positions, value_shards)

  def insert(self, keys: tf.Tensor, values: tf.Tensor) -> tf.Operation:
    """Sets the values of `keys` (inserting the keys not in the table).

    Args:
      keys: as for `lookup`.
      values: one value a key.

    Returns:
      The op that inserts them.

    Raises:
      ValueError: keys that are neither a vector nor a matrix.
    """
    self._check_keys(keys)
    if len(self._shards) == 1:
      return self._shards[0].insert(keys, values)
    shard_of_key = self._shard_of(keys)
    key_shards = tf.dynamic_partition(keys, shard_of_key, len(self._shards))
    value_shards = tf.dynamic_partition(values, shard_of_key, len(self._shards))
    return tf.group(*[shard.insert(shard_keys, shard_values)
                      for shard, shard_keys, shard_values
                      in zip(self._shards, key_shards, value_shards)])

  def export_sharded(self) -> Tuple[List[tf.Tensor], List[tf.Tensor]]:
    """Every shard's keys and values.

    Returns:
      (the keys of each shard, the values of each shard).
    """
    keys: List[tf.Tensor] = []
    values: List[tf.Tensor] = []
    for shard in self._shards:
      shard_keys, shard_values = shard.export()
      keys.append(shard_keys)
      values.append(shard_values)
    return keys, values


def sum_over_shards(values: Sequence[tf.Tensor]) -> tf.Tensor:
  """The column sums of every shard's values, in float64, added up.

  Each shard's sum waits for the previous one, so that the float64 copies of
  large shards on one device are not alive at once.

  Args:
    values: each shard's values, `[keys, value_size]`.

  Returns:
    `[value_size]` float64.
  """
  sums: List[tf.Tensor] = []
  for shard_values in values:
    with tf.control_dependencies(sums):
      sums.append(tf.math.reduce_sum(tf.cast(shard_values, tf.float64), 0))
  return tf.math.add_n(sums)
