"""The linear model of the Linear and DNNLinearCombined estimators: columns to a weighted sum.

One weight matrix a feature column, `[num_buckets, units]` for a categorical
column (its ids pick rows, combined per example with `sparse_combiner`) and
`[num_elements, units]` for a dense one (multiplied with its tensor), plus a
bias of `[units]`, all initialised to zero. The variables get tf.estimator
2.15's names, relative to the variable scope the model is built in:

  <name>/<column name>/weights     one per column (columns sorted by name)
  <name>/bias_weights

A partitioner set on the enclosing `tf.compat.v1.variable_scope` applies, as
it did for tf.estimator's v1 estimators (their variables are then
PartitionedVariables of one or more parts). Columns that keep state (an
embedding column's `embedding_weights`, a vocabulary's lookup table) create it
under their own scope, `<name>/<column name>/`.
"""
from __future__ import annotations

import collections.abc
import re
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence

import tensorflow as tf

from estimator_lite._util import tf_internals

SPARSE_COMBINERS = ("mean", "sqrtn", "sum")


def normalize_feature_columns(feature_columns: Any) -> List[Any]:
  """Checks `feature_columns` and returns them as a list sorted by column name.

  Args:
    feature_columns: one v2 feature column or an iterable of them.

  Returns:
    The columns, sorted by `name` (the order the model sums them in).

  Raises:
    ValueError: a dict, an item that is not a feature column, no columns, or
      two columns of one name (TensorFlow's texts).
  """
  feature_column, _, _, _ = tf_internals.feature_column_classes()
  if isinstance(feature_columns, feature_column):
    feature_columns = [feature_columns]
  if isinstance(feature_columns, collections.abc.Iterator):
    feature_columns = list(feature_columns)
  if isinstance(feature_columns, dict):
    raise ValueError("Expected feature_columns to be iterable, found dict.")
  for column in feature_columns:
    if not isinstance(column, feature_column):
      raise ValueError(
          "Items of feature_columns must be a FeatureColumn. "
          f"Given (type {type(column)}): {column}.")
  if not feature_columns:
    raise ValueError("feature_columns must not be empty.")
  by_name: Dict[str, Any] = {}
  for column in feature_columns:
    if column.name in by_name:
      raise ValueError(
          f"Duplicate feature column name found for columns: {column} and "
          f"{by_name[column.name]}. This usually means that these columns refer to "
          "same base feature. Either one must be discarded or a duplicated but "
          "renamed item must be inserted in features dict.")
    by_name[column.name] = column
  return sorted(feature_columns, key=lambda column: column.name)


def column_scope_name(column_name: str) -> str:
  """The variable scope a column's weights live under: its name, other characters as '_'."""
  return re.sub(r"[^A-Za-z0-9_.\-]", "_", column_name)


def expand_variables(variables: Iterable[Any]) -> List[Any]:
  """`variables` with each PartitionedVariable replaced by its parts."""
  expanded: List[Any] = []
  for variable in variables:
    if isinstance(variable, (tf.Variable, tf.Tensor)):
      expanded.append(variable)
    else:
      expanded.extend(list(variable))
  return expanded


class _StateManager:
  """Creates and holds the variables and lookup tables of the model's columns.

  The interface v2 feature columns call (`create_variable`, `get_variable`,
  `add_resource`, `has_resource`, `get_resource`); variables come from
  `tf.compat.v1.get_variable`, so that the enclosing variable scope names them
  and its partitioner splits them.
  """

  def __init__(self, trainable: bool = True) -> None:
    self._trainable = trainable
    self._variables: Dict[Any, Dict[str, Any]] = collections.defaultdict(dict)
    self._resources: Dict[Any, Dict[str, Any]] = collections.defaultdict(dict)

  def create_variable(self, feature_column: Any, name: str, shape: Any,
                      dtype: Any = None, trainable: bool = True, use_resource: bool = True,
                      initializer: Any = None) -> Any:
    if name in self._variables[feature_column]:
      raise ValueError("Variable already exists.")
    variable = tf.compat.v1.get_variable(
        name, shape=shape, dtype=dtype or tf.float32, initializer=initializer,
        trainable=self._trainable and trainable, use_resource=use_resource)
    self._variables[feature_column][name] = variable
    return variable

  def get_variable(self, feature_column: Any, name: str) -> Any:
    if name in self._variables[feature_column]:
      return self._variables[feature_column][name]
    raise ValueError("Variable does not exist.")

  def add_variable(self, feature_column: Any, var: Any) -> None:
    self._variables[feature_column][var.name] = var

  def add_resource(self, feature_column: Any, resource_name: str, resource: Any) -> None:
    self._resources[feature_column][resource_name] = resource

  def has_resource(self, feature_column: Any, resource_name: str) -> bool:
    return resource_name in self._resources[feature_column]

  def get_resource(self, feature_column: Any, resource_name: str) -> Any:
    if resource_name not in self._resources[feature_column]:
      raise ValueError("Resource does not exist.")
    return self._resources[feature_column][resource_name]


class LinearModel:
  """A linear model over v2 feature columns: `sum_c f_c(features) @ W_c + b`.

  Callable once a graph: the first call creates the variables (see the module
  docstring for their names) in the current variable scope and returns the
  logits. `sparse_combiner` says how a categorical column with several ids in
  one example combines their weights: "sum" adds them, "mean" averages them,
  "sqrtn" divides the sum by the square root of the number of ids (weighted
  columns weigh each id).

  Example:

  ```python
  model = LinearModel([price_buckets, keywords], units=3, name="linear_model")
  logits = model(features)          # [batch_size, 3]
  model.bias                        # linear_model/bias_weights
  ```
  """

  def __init__(self, feature_columns: Any, units: int = 1, sparse_combiner: str = "sum",
               trainable: bool = True, name: str = "linear_model") -> None:
    """Checks the columns.

    Args:
      feature_columns: v2 feature columns, each a DenseColumn or a
        CategoricalColumn.
      units: the width of the output.
      sparse_combiner: "sum", "mean" or "sqrtn".
      trainable: whether the variables are trainable.
      name: the variable scope (and name scope) of the model, relative to the
        current one; may contain '/'.

    Raises:
      ValueError: the columns are not valid (see
        `normalize_feature_columns`), or one is neither dense nor categorical.
    """
    _, dense_column, categorical_column, _ = tf_internals.feature_column_classes()
    self._feature_columns = normalize_feature_columns(feature_columns)
    for column in self._feature_columns:
      if not isinstance(column, (dense_column, categorical_column)):
        raise ValueError(
            "Items of feature_columns must be either a DenseColumn or "
            f"CategoricalColumn. Given: {column}")
    self._units = units
    self._sparse_combiner = sparse_combiner
    self._trainable = trainable
    self._name = name
    self._state_manager = _StateManager(trainable)
    self._weights: Dict[str, Any] = {}
    self._bias: Any = None

  @property
  def feature_columns(self) -> List[Any]:
    """The columns, sorted by name."""
    return list(self._feature_columns)

  @property
  def bias(self) -> Any:
    """The bias variable (a PartitionedVariable under a partitioner); None before the call."""
    return self._bias

  @property
  def state_manager(self) -> Any:
    """What the columns keep their state in (pass it to a column's `get_sparse_tensors`)."""
    return self._state_manager

  @property
  def weights(self) -> Dict[str, Any]:
    """Column name -> its weight variable; empty before the call."""
    return dict(self._weights)

  @property
  def variables(self) -> List[Any]:
    """All the model's variables (partitions expanded): column weights, bias, column state."""
    state = [variable for per_column in self._state_manager._variables.values()
             for variable in per_column.values()]
    return expand_variables(list(self._weights.values()) + [self._bias] + state)

  def _build(self) -> None:
    _, _, categorical_column, _ = tf_internals.feature_column_classes()
    with tf.compat.v1.variable_scope(self._name, auxiliary_name_scope=False):
      for column in self._feature_columns:
        with tf.compat.v1.variable_scope(column_scope_name(column.name),
                                         auxiliary_name_scope=False):
          column.create_state(self._state_manager)
          if isinstance(column, categorical_column):
            rows = column.num_buckets
          else:
            rows = column.variable_shape.num_elements()
          self._weights[column.name] = tf.compat.v1.get_variable(
              "weights", shape=(rows, self._units), dtype=tf.float32,
              initializer=tf.compat.v1.zeros_initializer(), trainable=self._trainable,
              use_resource=True)
      self._bias = tf.compat.v1.get_variable(
          "bias_weights", shape=[self._units], dtype=tf.float32,
          initializer=tf.compat.v1.zeros_initializer(), trainable=self._trainable,
          use_resource=True)

  def __call__(self, features: Mapping[str, Any]) -> tf.Tensor:
    """Creates the variables (first call) and returns the logits, `[batch_size, units]` float32.

    Args:
      features: feature name -> Tensor or SparseTensor, as the columns read them.

    Returns:
      The weighted sum plus bias.

    Raises:
      ValueError: `features` is not a dict; a column's feature is missing
        (TensorFlow's text, then the column and the keys present); columns of
        different static batch sizes.
    """
    if not isinstance(features, dict):
      raise ValueError(f"We expected a dictionary here. Instead we got: {features}")
    if self._bias is None:
      self._build()
    _, _, categorical_column, _ = tf_internals.feature_column_classes()
    with tf.compat.v1.name_scope(self._name):
      cache = tf_internals.feature_transformation_cache(features)
      weighted_sums = []
      for column in self._feature_columns:
        with tf.compat.v1.name_scope(column_scope_name(column.name)):
          try:
            if isinstance(column, categorical_column):
              weighted_sums.append(self._categorical_sum(column, cache))
            else:
              weighted_sums.append(self._dense_sum(column, cache))
          except ValueError as error:
            if "is not in features dictionary" not in str(error):
              raise
            raise ValueError(
                f"{error} Feature column {column.name!r} reads it; the features "
                f"have the keys {sorted(map(str, features))}. Add it to what the "
                "input_fn returns (or to the serving receiver's features).") from error
      _check_static_batch_sizes(weighted_sums, self._feature_columns)
      # tf.estimator's linear model (a Keras layer in a layer) summed inside
      # two more scopes of its name; programs name its logits:
      # `linear/linear_model/linear_model/linear_model/weighted_sum` (v1),
      # `linear/linear_model/linear/linear_model/linear/linear_model/weighted_sum` (v2).
      with tf.compat.v1.name_scope(self._name), tf.compat.v1.name_scope(self._name):
        no_bias = tf.math.add_n(weighted_sums, name="weighted_sum_no_bias")
        return tf.nn.bias_add(no_bias, self._bias, name="weighted_sum")

  def _dense_sum(self, column: Any, cache: Any) -> tf.Tensor:
    tensor = column.get_dense_tensor(cache, self._state_manager)
    num_elements = column.variable_shape.num_elements()
    tensor = tf.reshape(tensor, (tf.shape(tensor)[0], num_elements))
    return tf.linalg.matmul(tensor, self._weights[column.name], name="weighted_sum")

  def _categorical_sum(self, column: Any, cache: Any) -> tf.Tensor:
    # The weighted sum of a multi-hot row is the combined lookup of its ids'
    # weight rows.
    sparse = column.get_sparse_tensors(cache, self._state_manager)
    ids = tf.sparse.reshape(sparse.id_tensor, [tf.shape(sparse.id_tensor)[0], -1])
    id_weights = sparse.weight_tensor
    if id_weights is not None:
      id_weights = tf.sparse.reshape(id_weights, [tf.shape(id_weights)[0], -1])
    return tf.compat.v1.nn.safe_embedding_lookup_sparse(
        self._weights[column.name], ids, sparse_weights=id_weights,
        combiner=self._sparse_combiner, name="weighted_sum")


def _check_static_batch_sizes(tensors: Sequence[tf.Tensor], columns: Sequence[Any]) -> None:
  expected: Optional[tf.compat.v1.Dimension] = None
  expected_index = 0
  for index, tensor in enumerate(tensors):
    size = tf.compat.v1.Dimension(tf.compat.dimension_value(tensor.shape[0]))
    if size.value is None:
      continue
    if expected is None:
      expected, expected_index = size, index
    elif not expected.is_compatible_with(size):
      raise ValueError(
          "Batch size (first dimension) of each feature must be same. Batch size of "
          f"columns ({columns[expected_index].name}, {columns[index].name}): "
          f"({expected}, {size})")


def fraction_of_zero(variables: Sequence[Any]) -> tf.Tensor:
  """The fraction of zero entries over all of `variables` (NaN when they hold none).

  Args:
    variables: variables or tensors (nested lists allowed).

  Returns:
    A float32 scalar.
  """
  with tf.compat.v1.name_scope("zero_fraction"):
    flat = tf.nest.flatten(variables)
    with tf.compat.v1.name_scope("total_size"):
      sizes = [tf.size(value, out_type=tf.int64) for value in flat]
      total_size = tf.math.add_n(sizes)
    with tf.compat.v1.name_scope("total_zero"):
      # tf.math.zero_fraction of an empty tensor is NaN: count it as no zeros.
      total_zero = tf.math.add_n([
          tf.compat.v1.cond(
              tf.math.equal(size, tf.constant(0, dtype=tf.int64)),
              true_fn=lambda: tf.constant(0, dtype=tf.float32),
              false_fn=lambda value=value, size=size: (
                  tf.math.zero_fraction(value) * tf.cast(size, tf.float32)),
              name="zero_count") for value, size in zip(flat, sizes)])
    with tf.compat.v1.name_scope("compute"):
      fraction = total_zero / tf.cast(total_size, tf.float32, name="float32_size")
    return tf.identity(fraction, name="zero_fraction_or_nan")
