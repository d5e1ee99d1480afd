"""LinearSDCA: tf.estimator 2.15's Stochastic Dual Coordinate Ascent optimizer of the Linear estimators.

`LinearClassifier` and `LinearRegressor` (top level and compat.v1) take a
`LinearSDCA` as their `optimizer`; their model_fn then builds the linear
model as with any optimizer and trains it with `sdca_solver.SdcaSolver`
instead of gradients: one SDCA step a batch, then (a chief hook) the weights
copied from the solver's unshrunk ones and L1-shrunk. The loss follows the
head: logistic for the binary classifier, squared for the regressor.

Checkpoints are tf.estimator 2.15's: the model's variables
(`linear/linear_model/<column>/weights`, `.../bias_weights`), the solver's
`<weights op name>_unshrunk` copies and the example-state table
(`ShardedMutableHashTable-1-of-1-{keys,values}`).
"""
from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Tuple

import tensorflow as tf

from estimator_lite.canned import estimator_rules
from estimator_lite.canned.linear_model import LinearModel
from estimator_lite.canned.linear_model import expand_variables
from estimator_lite.canned.linear_model import fraction_of_zero
from estimator_lite.canned.sdca_solver import SdcaExamples
from estimator_lite.canned.sdca_solver import SdcaOptions
from estimator_lite.canned.sdca_solver import SdcaSolver
from estimator_lite.canned.sdca_solver import SparseFeature
from estimator_lite.estimator_spec import EstimatorSpec
from estimator_lite.head.binary_class_head import BinaryClassHead
from estimator_lite.head.regression_head import RegressionHead
from estimator_lite.mode_keys import ModeKeys
from estimator_lite._util import tf_internals

LOGISTIC_LOSS = "logistic_loss"
SQUARED_LOSS = "squared_loss"


class LinearSDCA:
  """Stochastic Dual Coordinate Ascent for the linear estimators.

  Pass one as the `optimizer` of `LinearClassifier` or `LinearRegressor` (it
  is not a `tf.compat.v1.train.Optimizer`; it only tells these estimators
  to train with SDCA). It applies when:

    - the feature columns are v2 ones;
    - multivalent categorical columns are summed (`sparse_combiner="sum"`);
    - a classifier has binary labels, a regressor one-dimensional ones.

  ```python
  price = tf.feature_column.numeric_column("price")
  country = tf.feature_column.categorical_column_with_hash_bucket("country", 100)
  sdca = estimator_lite.experimental.LinearSDCA(
      example_id_column="example_id", num_loss_partitions=1, num_table_shards=1,
      symmetric_l2_regularization=2.0)
  classifier = estimator_lite.LinearClassifier(
      feature_columns=[price, country], weight_column="weights", optimizer=sdca)
  classifier.train(input_fn_train, steps=50)
  classifier.evaluate(input_fn=input_fn_eval)
  ```

  The features of the train input_fn hold `example_id_column`: a string
  Tensor of shape `[batch_size]` identifying each example (SDCA keeps a dual
  variable per example across steps). `num_loss_partitions` is sigma' of
  eq. (11) of [3]: the global loss converges when it is at least the number
  of train ops running concurrently over all workers; larger values converge
  more slowly, and the number of workers is the recommended value (1, the
  default, on one machine). `num_table_shards` splits the table of per-example
  state, typically one shard per parameter server for large data sets.

  SDCA is from [1], with the L1 proximal step of [2], the distributed version
  of [3] and the adaptive sampling of [4]:
  [1] www.jmlr.org/papers/volume14/shalev-shwartz13a/shalev-shwartz13a.pdf
  [2] https://arxiv.org/pdf/1309.2375.pdf
  [3] https://arxiv.org/pdf/1502.03508.pdf
  [4] https://arxiv.org/pdf/1502.08053.pdf
  """

  def __init__(self, example_id_column: str, num_loss_partitions: int = 1,
               num_table_shards: Optional[int] = None,
               symmetric_l1_regularization: float = 0.0,
               symmetric_l2_regularization: float = 1.0, adaptive: bool = False) -> None:
    """Configures SDCA for a linear estimator.

    Args:
      example_id_column: the feature name holding the example ids.
      num_loss_partitions: the number of workers.
      num_table_shards: the number of shards of the per-example state table,
        typically the number of parameter servers (None: 1).
      symmetric_l1_regularization: a float >= 0.
      symmetric_l2_regularization: a float > 0, typically greater than 1.
      adaptive: whether to sample examples adaptively.
    """
    self._example_id_column = example_id_column
    self._num_loss_partitions = num_loss_partitions
    self._num_table_shards = num_table_shards
    self._symmetric_l1_regularization = symmetric_l1_regularization
    self._symmetric_l2_regularization = symmetric_l2_regularization
    self._adaptive = adaptive

  @property
  def example_id_column(self) -> str:
    """The feature name of the example ids."""
    return self._example_id_column

  def options(self, loss_type: str) -> SdcaOptions:
    """The solver options of this configuration, for the loss `loss_type`."""
    return SdcaOptions(loss_type=loss_type,
                       symmetric_l1_regularization=self._symmetric_l1_regularization,
                       symmetric_l2_regularization=self._symmetric_l2_regularization,
                       num_loss_partitions=self._num_loss_partitions,
                       num_table_shards=self._num_table_shards, adaptive=self._adaptive)

  def get_train_step(self, linear_model: LinearModel, weight_column: Any, loss_type: str,
                     features: Dict[str, Any], targets: Any,
                     global_step: Any) -> Tuple[SdcaSolver, tf.Operation]:
    """Builds the SDCA solver of a built linear model and its train op.

    Args:
      linear_model: the (built) `LinearModel` to train, of one unit.
      weight_column: the feature name or numeric column of the example
        weights, or None (each example weighs 1).
      loss_type: "logistic_loss" or "squared_loss" (or another of
        `sdca_solver.LOSS_TYPES`).
      features: the batch's features, with `example_id_column`.
      targets: the batch's labels, `[batch_size]` or `[batch_size, 1]`.
      global_step: the global step, incremented by the train op.

    Returns:
      (the solver, the train op).

    Raises:
      KeyError: the features lack `example_id_column`.
      ValueError: a dense column whose shape has more than one dimension, or
        a column neither categorical nor dense (tf.estimator's texts).
    """
    if self._example_id_column not in features:
      # tf.estimator raised the KeyError of the lookup; the same, explained.
      raise KeyError(
          f"{self._example_id_column!r}: LinearSDCA(example_id_column="
          f"{self._example_id_column!r}) reads each example's id (a string Tensor of "
          f"shape [batch_size]) from this feature; the features have the keys "
          f"{sorted(map(str, features))}. Add it to what the train input_fn returns.")
    _, dense_column, categorical_column, _ = tf_internals.feature_column_classes()
    batch_size = tf.compat.v1.shape(targets)[0]
    cache = tf_internals.feature_transformation_cache(features)
    state_manager = linear_model.state_manager
    weights = linear_model.weights
    sparse_features: List[SparseFeature] = []
    sparse_weights: List[Any] = []
    dense_features: List[tf.Tensor] = []
    dense_weights: List[Any] = []
    for column in sorted(linear_model.feature_columns, key=lambda column: column.name):
      if isinstance(column, categorical_column):
        sparse_features.append(
            _unique_valid_ids(column.get_sparse_tensors(cache, state_manager)))
        sparse_weights.append(weights[column.name])
      elif isinstance(column, dense_column):
        if column.variable_shape.ndims != 1:
          raise ValueError(
              f"Column {type(column).__name__} has rank {column.variable_shape.ndims}, "
              "larger than 1.")
        dense_features.append(column.get_dense_tensor(cache, state_manager))
        dense_weights.append(weights[column.name])
      else:
        raise ValueError(f"LinearSDCA does not support column type {type(column).__name__}.")
    # The bias is the weight of a dense feature that is always 1.
    dense_features.append(tf.ones([batch_size, 1]))
    dense_weights.append(linear_model.bias)
    if weight_column is None:
      example_weights = tf.ones([batch_size])
    else:
      key = weight_column if isinstance(weight_column, str) else weight_column.key
      example_weights = tf.reshape(features[key], shape=[-1])
    examples = SdcaExamples(
        sparse_features=sparse_features, dense_features=dense_features,
        example_labels=tf.cast(tf.reshape(targets, shape=[-1]), tf.float32),
        example_weights=example_weights,
        example_ids=features[self._example_id_column])
    solver = SdcaSolver(examples, sparse_weights=sparse_weights, dense_weights=dense_weights,
                        options=self.options(loss_type))
    return solver, solver.minimize(global_step=global_step)


def _unique_valid_ids(id_weight_pair: Any) -> SparseFeature:
  """A categorical column's ids as the solver reads them: one entry per (example, id), ids >= 0.

  Ids below zero (a vocabulary's out-of-vocabulary lookups with no OOV
  bucket) are dropped; an id repeated in one example is kept once, its
  weights added.
  """
  id_tensor = id_weight_pair.id_tensor
  if id_weight_pair.weight_tensor is not None:
    id_weights = id_weight_pair.weight_tensor.values
  else:
    id_weights = tf.ones([tf.compat.v1.shape(id_tensor.indices)[0]], tf.float32)
  example_ids = tf.reshape(id_tensor.indices[:, 0], [-1])
  flat_ids = tf.cast(tf.reshape(id_tensor.values, [-1]), tf.int64)
  valid = tf.math.greater_equal(flat_ids, 0)
  flat_ids = tf.boolean_mask(flat_ids, valid)
  example_ids = tf.boolean_mask(example_ids, valid)
  id_weights = tf.boolean_mask(id_weights, valid)
  # One number per (example, id) pair, to find the repeated pairs.
  span = tf.math.reduce_max(flat_ids) + 1
  pairs, pair_of_entry = tf.unique(span * example_ids + flat_ids)
  pair_examples = tf.math.unsorted_segment_min(example_ids, pair_of_entry,
                                               tf.compat.v1.shape(pairs)[0])
  pair_ids = pairs - span * pair_examples
  pair_weights = tf.reshape(
      tf.math.unsorted_segment_sum(id_weights, pair_of_entry, tf.compat.v1.shape(pairs)[0]), [-1])
  return SparseFeature(example_indices=pair_examples, feature_indices=pair_ids,
                       feature_values=pair_weights)


def _validate_common(feature_columns: Iterable[Any], sparse_combiner: str) -> None:
  if sparse_combiner != "sum":
    raise ValueError('sparse_combiner must be "sum" when optimizer is a LinearSDCA object.')
  if not tf_internals.is_feature_column_v2(feature_columns):
    raise ValueError("V2 feature columns required when optimizer is a LinearSDCA object.")


def validate_for_classifier(feature_columns: Iterable[Any], n_classes: int, optimizer: Any,
                            sparse_combiner: str) -> None:
  """Checks a LinearClassifier's arguments can train with `optimizer`, if it is a LinearSDCA.

  Args:
    feature_columns: the classifier's feature columns.
    n_classes: its number of classes.
    optimizer: its optimizer argument (anything but a LinearSDCA passes).
    sparse_combiner: its sparse combiner.

  Raises:
    ValueError: a sparse combiner other than "sum", v1 feature columns, or
      more than two classes (tf.estimator's texts).
  """
  if isinstance(optimizer, LinearSDCA):
    _validate_common(list(feature_columns), sparse_combiner)
    if n_classes > 2:
      raise ValueError("LinearSDCA cannot be used in a multi-class setting.")


def validate_for_regressor(feature_columns: Iterable[Any], label_dimension: int, optimizer: Any,
                           sparse_combiner: str) -> None:
  """Checks a LinearRegressor's arguments can train with `optimizer`, if it is a LinearSDCA.

  Args:
    feature_columns: the regressor's feature columns.
    label_dimension: its label dimension.
    optimizer: its optimizer argument (anything but a LinearSDCA passes).
    sparse_combiner: its sparse combiner.

  Raises:
    ValueError: a sparse combiner other than "sum", v1 feature columns, or
      labels of more than one dimension (tf.estimator's texts).
  """
  if isinstance(optimizer, LinearSDCA):
    _validate_common(list(feature_columns), sparse_combiner)
    if label_dimension > 1:
      raise ValueError("LinearSDCA can only be used with one-dimensional label.")


def loss_type_of_head(head: Any) -> str:
  """The SDCA loss a head implies: logistic for a binary classification head, squared for regression.

  Args:
    head: the estimator's head.

  Returns:
    "logistic_loss" or "squared_loss".

  Raises:
    ValueError: another head (tf.estimator's text).
  """
  if isinstance(head, BinaryClassHead):
    return LOGISTIC_LOSS
  if isinstance(head, RegressionHead) and head.logits_dimension == 1:
    return SQUARED_LOSS
  raise ValueError(f"Unsupported head type: {head}")


def v1_model_name(head: Any) -> str:
  """The linear model's name inside a compat.v1 Linear estimator's `linear` scope.

  tf.estimator 2.15 named it "linear_model" for its v1 heads (those of the
  compat.v1 LinearClassifier and LinearRegressor), and "linear/linear_model"
  for the v2 binary and regression heads (a compat.v1 LinearEstimator given
  one): variables `linear/linear/linear_model/...` then.

  Args:
    head: the estimator's head.

  Returns:
    The name to pass to `sdca_model_fn`.
  """
  if isinstance(head, (BinaryClassHead, RegressionHead)):
    return "linear/linear_model"
  return "linear_model"


class SDCAUpdateWeightsHook(tf.compat.v1.train.SessionRunHook):
  """Runs the solver's weight update (copy of the unshrunk weights, L1 step) with each train step."""

  def __init__(self, solver: SdcaSolver, train_op: Any) -> None:
    """Remembers the solver and its train op.

    Args:
      solver: the `SdcaSolver` of the train graph.
      train_op: its `minimize` op.
    """
    self._solver = solver
    self._train_op = train_op
    self._update_op: Any = None

  def begin(self) -> None:
    """Builds the update op in the (not yet finalized) train graph."""
    self._update_op = self._solver.update_weights(self._train_op)

  def before_run(self, run_context: Any) -> tf.compat.v1.train.SessionRunArgs:
    """Asks for the update op with the step (it waits for the train op)."""
    del run_context
    return tf.compat.v1.train.SessionRunArgs(self._update_op)


def sdca_model_fn(features: Dict[str, Any], labels: Any, mode: str, head: Any,
                  feature_columns: Iterable[Any], optimizer: LinearSDCA,
                  weight_column: Any = None, loss_type: Optional[str] = None,
                  model_name: str = "linear/linear_model") -> EstimatorSpec:
  """The model_fn of a linear estimator trained with a `LinearSDCA`.

  Builds the linear model (one unit, summed categorical ids) in the current
  variable scope under `model_name`, with the `bias` and
  `fraction_of_zero_weights` summaries; in TRAIN, the SDCA solver, its train
  op and the chief hook that updates the weights after each step.

  Args:
    features: feature name -> Tensor or SparseTensor.
    labels: the labels, `[batch_size]` or `[batch_size, 1]` (TRAIN, EVAL).
    mode: a `ModeKeys` value.
    head: the estimator's head.
    feature_columns: v2 feature columns.
    optimizer: the `LinearSDCA`.
    weight_column: the head's weight column (name or numeric column), or
      None: the head's own `weight_column`, if it has one (a head the user
      built for a `LinearEstimator`).
    loss_type: the SDCA loss; None: the one `head` implies
      (`loss_type_of_head`).
    model_name: the linear model's scope: "linear/linear_model" for the top
      level estimators, "linear_model" inside the compat.v1 ones' `linear`
      scope (the same variable names either way).

  Returns:
    The head's `EstimatorSpec`, with the weight-update hook among its
    `training_chief_hooks` in TRAIN.

  Raises:
    ValueError: features not a dict, or a head SDCA does not support.
  """
  estimator_rules.check_features(features, feature_columns)
  loss_type = loss_type or loss_type_of_head(head)
  if weight_column is None:
    weight_column = getattr(head, "weight_column", None)
  linear_model = LinearModel(feature_columns=feature_columns, units=1, sparse_combiner="sum",
                             name=model_name)
  logits = linear_model(features)
  bias = expand_variables([linear_model.bias])
  variables = [variable for variable in linear_model.variables
               if not any(variable is part for part in bias)]
  tf.compat.v1.summary.scalar("bias", bias[0][0])
  tf.compat.v1.summary.scalar("fraction_of_zero_weights", fraction_of_zero(variables))
  if mode != ModeKeys.TRAIN:
    return head.create_estimator_spec(features=features, mode=mode, labels=labels, logits=logits)
  solver, train_op = optimizer.get_train_step(
      linear_model, weight_column, loss_type, features, labels,
      tf.compat.v1.train.get_global_step())
  spec = head.create_estimator_spec(features=features, mode=mode, labels=labels,
                                    train_op_fn=lambda unused_loss: train_op, logits=logits)
  return spec._replace(training_chief_hooks=(
      tuple(spec.training_chief_hooks) + (SDCAUpdateWeightsHook(solver, train_op),)))
