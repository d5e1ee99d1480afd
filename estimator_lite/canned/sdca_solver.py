"""The SDCA solver of a linear model: one proximal stochastic dual coordinate ascent step a batch.

What `LinearSDCA` trains the Linear estimators with. Each step runs
TensorFlow's `SdcaOptimizerV2` kernel on the batch: from the examples' dual
variables (kept in an example-state table keyed by the fingerprint of their
ids, `SdcaFprint`) and the current weights it computes new dual variables and
the weights' deltas. The deltas go to *unshrunk* copies of the model's
weights; a second op (`update_weights`, run after each step by a hook) copies
them into the model's weights and applies the L1 proximal step (soft
thresholding by l1 / l2), so that the model's weights are sparse while the
solver keeps accumulating on the unshrunk ones.

Checkpointed state, named as tf.estimator 2.15's solver named it: the
unshrunk copies, `<variable's op name>_unshrunk` (one a partition), and the
example-state table (`sdca_example_table.ShardedDenseHashTable`).

The model's variables may be PartitionedVariables (or lists of partitions)
split on their first axis, as `tf.compat.v1.fixed_size_partitioner` and
`min_max_variable_partitioner` split them: the solver reads and updates each
partition where it lives.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Optional, Sequence

import tensorflow as tf

from estimator_lite.canned.sdca_example_table import ShardedDenseHashTable
from estimator_lite.canned.sdca_example_table import sum_over_shards

# The losses the SDCA kernel knows (its `loss_type` attribute).
LOSS_TYPES = ("logistic_loss", "squared_loss", "hinge_loss", "smooth_hinge_loss",
              "poisson_loss")
# An example's state in the table: dual variable, primal loss, dual loss,
# example weight (what the kernel reads and writes).
_EXAMPLE_STATE_SIZE = 4


@dataclasses.dataclass(frozen=True)
class SparseFeature:
  """One sparse feature group of a batch, as the SDCA kernel reads it.

  Attributes:
    example_indices: int64 `[N]`, the row each entry belongs to.
    feature_indices: int64 `[N]`, the entry's id (a row of the weights).
    feature_values: float32 `[N]`, the entry's value (1.0 when None).
  """
  example_indices: tf.Tensor
  feature_indices: tf.Tensor
  feature_values: Optional[tf.Tensor] = None


@dataclasses.dataclass(frozen=True)
class SdcaExamples:
  """A batch of training examples.

  Attributes:
    sparse_features: one `SparseFeature` a sparse weight variable.
    dense_features: float32 `[batch, n]` tensors, one a dense weight variable.
    example_labels: float32 `[batch]`.
    example_weights: float32 `[batch]`.
    example_ids: string `[batch]`, identifying each example across steps.
  """
  sparse_features: Sequence[SparseFeature]
  dense_features: Sequence[tf.Tensor]
  example_labels: tf.Tensor
  example_weights: tf.Tensor
  example_ids: tf.Tensor


@dataclasses.dataclass(frozen=True)
class SdcaOptions:
  """How the solver trains.

  Attributes:
    loss_type: one of `LOSS_TYPES`.
    symmetric_l1_regularization: >= 0.
    symmetric_l2_regularization: > 0.
    num_loss_partitions: the number of solvers training concurrently on
      parts of the data (the workers).
    num_table_shards: the example-state table's shards (None: 1).
    adaptive: whether the kernel samples examples adaptively.
  """
  loss_type: str
  symmetric_l1_regularization: float = 0.0
  symmetric_l2_regularization: float = 1.0
  num_loss_partitions: int = 1
  num_table_shards: Optional[int] = None
  adaptive: bool = True


def _partitions(variable: Any) -> List[Any]:
  """A variable's partitions: a PartitionedVariable's (or a list's) items, else `[variable]`."""
  if isinstance(variable, (tf.Variable, tf.Tensor)):
    return [variable]
  return list(variable)


def _whole(variable: Any) -> tf.Tensor:
  """The variable's value, its partitions concatenated on the first axis."""
  parts = _partitions(variable)
  if len(parts) == 1:
    return tf.convert_to_tensor(parts[0])
  return tf.concat([tf.convert_to_tensor(part) for part in parts], axis=0)


class _DivPartitioning:
  """Where the ids of a variable split on its first axis live: which partition, which row.

  Partitions split the rows as evenly as possible, the first ones taking one
  row more (how TensorFlow's partitioners split).
  """

  def __init__(self, parts: Sequence[Any], ids: tf.Tensor) -> None:
    rows = [tf.compat.dimension_value(part.shape[0]) for part in parts]
    if all(row is not None for row in rows):
      total = tf.constant(sum(rows), ids.dtype)
    else:
      total = tf.math.reduce_sum(tf.cast(tf.stack(
          [row if row is not None else tf.shape(part)[0] for part, row in zip(parts, rows)]),
                                          ids.dtype))
    count = len(parts)
    per_part = total // count
    extras = total % count
    part_of_id = tf.math.maximum(ids // (per_part + 1), (ids - extras) // per_part)
    row_in_part = tf.where(part_of_id < extras, ids % (per_part + 1),
                           (ids - extras) % per_part)
    self.count = count
    self.part_of_id = tf.cast(part_of_id, tf.int32)
    self.rows = tf.dynamic_partition(row_in_part, self.part_of_id, count)

  def gather(self, parts: Sequence[Any]) -> tf.Tensor:
    """The rows of the ids, gathered from each partition, in the ids' order."""
    gathered = []
    for part, rows in zip(parts, self.rows):
      with tf.compat.v1.colocate_with(part):
        gathered.append(tf.compat.v1.gather(part, rows))
    positions = tf.dynamic_partition(tf.range(tf.shape(self.part_of_id)[0]),
                                     self.part_of_id, self.count)
    return tf.dynamic_stitch(positions, gathered)

  def scatter_add(self, parts: Sequence[Any], deltas: tf.Tensor) -> List[Any]:
    """Ops adding each id's delta to its row, partition by partition."""
    delta_parts = tf.dynamic_partition(deltas, self.part_of_id, self.count)
    ops = []
    for part, rows, part_deltas in zip(parts, self.rows, delta_parts):
      with tf.compat.v1.colocate_with(part):
        ops.append(tf.compat.v1.scatter_add(part, rows, part_deltas))
    return ops


class SdcaSolver:
  """Proximal SDCA for a linear model with sparse and dense weights.

  ```python
  solver = SdcaSolver(examples, sparse_weights=[w_country], dense_weights=[w_price, bias],
                      options=SdcaOptions(loss_type="logistic_loss"))
  train_op = solver.minimize(global_step)
  update = solver.update_weights(train_op)      # run with each train step
  ```
  """

  def __init__(self, examples: SdcaExamples, sparse_weights: Sequence[Any],
               dense_weights: Sequence[Any], options: SdcaOptions) -> None:
    """Creates the solver's state: the unshrunk weights and the example-state table.

    Also writes two training summaries: `approximate_duality_gap` and
    `examples_seen` (the table's size).

    Args:
      examples: the batch.
      sparse_weights: one variable (or partitioned variable) a sparse
        feature group of `examples`, `[ids, 1]`.
      dense_weights: one variable (or partitioned variable) a dense feature
        tensor of `examples`, `[n, 1]` (the bias, `[1]`, with a column of
        ones).
      options: the loss and regularization.

    Raises:
      ValueError: an unsupported loss type, or an invalid regularization
        (tf.estimator's texts).
    """
    if options.loss_type not in LOSS_TYPES:
      raise ValueError("Unsupported loss_type: ", options.loss_type)
    if options.symmetric_l2_regularization <= 0.0:
      raise ValueError("symmetric_l2_regularization should be positive.")
    if options.symmetric_l2_regularization <= 1.0:
      tf.compat.v1.logging.warn(
          "symmetric_l2_regularization for SDCA should typically be larger than for "
          "online optimization methods. Recommended value is of the order of the "
          "average L2 norm of the training examples.")
    if options.symmetric_l1_regularization < 0.0:
      raise ValueError("symmetric_l1_regularization should be non-negative.")
    self._examples = examples
    self._options = options
    self._weights: Dict[str, List[Any]] = {"sparse": list(sparse_weights),
                                           "dense": list(dense_weights)}
    self._unshrunk: Dict[str, List[List[Any]]] = {
        kind: [[self._unshrunk_copy(part) for part in _partitions(variable)]
               for variable in variables]
        for kind, variables in self._weights.items()}
    # SdcaFprint never gives 0 or 1 as the low 64 bits: safe empty and
    # deleted keys.
    self._table = ShardedDenseHashTable(
        key_dtype=tf.int64, value_dtype=tf.float32,
        default_value=[0.0] * _EXAMPLE_STATE_SIZE, empty_key=[0, 0], deleted_key=[1, 1],
        num_shards=options.num_table_shards or 1)
    tf.compat.v1.summary.scalar("approximate_duality_gap", self.approximate_duality_gap())
    tf.compat.v1.summary.scalar("examples_seen", self._table.size())

  @staticmethod
  def _unshrunk_copy(part: Any) -> tf.Variable:
    # Zeros like the weights (which start at zero): the solver's own,
    # unshrunk, accumulation of them, beside them.
    with tf.compat.v1.colocate_with(part):
      return tf.Variable(tf.zeros(part.shape, tf.float32), name=part.op.name + "_unshrunk")

  @property
  def options(self) -> SdcaOptions:
    """The solver's options."""
    return self._options

  def _regularization_sums(self, transform: Any) -> tf.Tensor:
    sums = []
    for variables in self._weights.values():
      for variable in variables:
        for part in _partitions(variable):
          value = tf.convert_to_tensor(part)
          with tf.compat.v1.device(value.device):
            sums.append(tf.math.reduce_sum(transform(tf.cast(value, tf.float64))))
    return tf.math.add_n(sums)

  def _l1_loss(self) -> tf.Tensor:
    with tf.compat.v1.name_scope("sdca/l1_loss"):
      return self._options.symmetric_l1_regularization * self._regularization_sums(tf.math.abs)

  def _l2_loss(self) -> tf.Tensor:
    with tf.compat.v1.name_scope("sdca/l2_loss"):
      return (self._options.symmetric_l2_regularization
              * self._regularization_sums(tf.math.square) / 2.0)

  def minimize(self, global_step: Optional[Any] = None) -> tf.Operation:
    """The op of one SDCA step on the batch: new dual variables, unshrunk weights updated.

    Args:
      global_step: incremented by one after the updates, if given.

    Returns:
      The train op.
    """
    examples = self._examples
    with tf.compat.v1.name_scope(None, "sdca/minimize"):
      example_keys = tf.raw_ops.SdcaFprint(input=tf.convert_to_tensor(examples.example_ids))
      example_state = self._table.lookup(example_keys)
      # The kernel reads, for each sparse group, the weights of the ids the
      # batch has (each once).
      unique_ids: List[tf.Tensor] = []
      gathered: List[tf.Tensor] = []
      partitionings: List[Optional[_DivPartitioning]] = []
      for parts, feature in zip(self._unshrunk["sparse"], examples.sparse_features):
        ids = tf.cast(tf.unique(tf.cast(feature.feature_indices, tf.int32))[0], tf.int64)
        unique_ids.append(ids)
        if len(parts) > 1:
          partitioning = _DivPartitioning(parts, tf.reshape(ids, [-1]))
          gathered.append(partitioning.gather(parts))
        else:
          partitioning = None
          value = tf.convert_to_tensor(parts[0])
          with tf.compat.v1.device(value.device):
            gathered.append(tf.compat.v1.gather(value, ids))
        partitionings.append(partitioning)
      new_state, sparse_deltas, dense_deltas = tf.raw_ops.SdcaOptimizerV2(
          sparse_example_indices=[f.example_indices for f in examples.sparse_features],
          sparse_feature_indices=[f.feature_indices for f in examples.sparse_features],
          sparse_feature_values=[f.feature_values for f in examples.sparse_features
                                 if f.feature_values is not None],
          dense_features=[_whole(dense) for dense in examples.dense_features],
          example_weights=tf.convert_to_tensor(examples.example_weights),
          example_labels=tf.convert_to_tensor(examples.example_labels),
          sparse_indices=unique_ids,
          sparse_weights=gathered,
          dense_weights=[_whole(parts) for parts in self._unshrunk["dense"]],
          example_state_data=example_state,
          loss_type=self._options.loss_type,
          l1=float(self._options.symmetric_l1_regularization),
          l2=float(self._options.symmetric_l2_regularization),
          num_loss_partitions=int(self._options.num_loss_partitions),
          num_inner_iterations=1,
          adaptive=bool(self._options.adaptive))
      with tf.control_dependencies([new_state]):
        updates = [self._table.insert(example_keys, new_state)]
        for parts, ids, deltas, partitioning in zip(
            self._unshrunk["sparse"], unique_ids, sparse_deltas, partitionings):
          if partitioning is not None:
            updates += partitioning.scatter_add(parts, deltas)
          else:
            updates.append(tf.compat.v1.scatter_add(parts[0], ids, deltas))
        for parts, deltas in zip(self._unshrunk["dense"], dense_deltas):
          if len(parts) > 1:
            pieces = tf.split(deltas, [part.shape.as_list()[0] for part in parts])
            updates += [tf.compat.v1.assign_add(part, piece) for part, piece in zip(parts, pieces)]
          else:
            updates.append(tf.compat.v1.assign_add(parts[0], deltas))
      if global_step is None:
        return tf.group(*updates)
      with tf.control_dependencies(updates):
        return tf.compat.v1.assign_add(global_step, 1).op

  def update_weights(self, train_op: Any) -> tf.Operation:
    """The op that copies the unshrunk weights into the model's, then applies the L1 step.

    Run it after `minimize`'s op (it depends on `train_op`); on the chief at
    least (other workers may skip it).

    Args:
      train_op: `minimize`'s op.

    Returns:
      The update op.
    """
    with tf.control_dependencies([train_op]):
      copies = []
      for kind, variables in self._weights.items():
        for variable, unshrunk_parts in zip(variables, self._unshrunk[kind]):
          for part, unshrunk in zip(_partitions(variable), unshrunk_parts):
            copies.append(part.assign(unshrunk))
    if self._options.symmetric_l1_regularization <= 0:
      return tf.group(*copies)
    # The proximal step of L1: soft thresholding by l1 / l2.
    shrinkage = (self._options.symmetric_l1_regularization
                 / self._options.symmetric_l2_regularization)
    with tf.control_dependencies(copies):
      shrinks = []
      for variables in self._weights.values():
        for variable in variables:
          for part in _partitions(variable):
            with tf.compat.v1.device(part.device):
              shrunk = tf.math.sign(part) * tf.math.maximum(0.0, tf.math.abs(part) - shrinkage)
              shrinks.append(part.assign(shrunk))
      return tf.group(*shrinks)

  def approximate_duality_gap(self) -> tf.Tensor:
    """The duality gap over the examples seen so far, normalized by their weight (NaN before any).

    Returns:
      A float64 scalar.
    """
    with tf.compat.v1.name_scope("sdca/approximate_duality_gap"):
      _, values = self._table.export_sharded()
      totals = sum_over_shards(values)
      primal_loss, dual_loss, example_weights = totals[1], totals[2], totals[3]
      return (primal_loss + dual_loss + self._l1_loss() + 2.0 * self._l2_loss()) / example_weights
