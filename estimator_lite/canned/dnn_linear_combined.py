"""Wide-and-deep estimators: a linear model and a DNN summed into one set of logits (tf.estimator 2.15's).

`DNNLinearCombinedClassifier`, `DNNLinearCombinedRegressor` and
`DNNLinearCombinedEstimator` add the logits of a linear model (the "wide"
part: `linear_feature_columns`, variables under `linear/linear_model/...`) to
those of a DNN (the "deep" part: `dnn_feature_columns`, variables under
`dnn/...`); each part trains with its own optimizer (Ftrl and Adagrad by
default). Either part may be left out, not both.

The top-level classes are tf.estimator 2.15's v2 estimators (Keras 2
optimizers: the DNN's counts its steps in the global step, the linear one in
its own `training/Ftrl/iter`, as 2.15 wrote them); the `...V1` classes are
`tf.compat.v1.estimator`'s (`tf.compat.v1.train` optimizers, variables
partitioned over the parameter servers, the loss summed over the batch by
default).

```python
import estimator_lite as est

fc = tf.feature_column
occupation = fc.categorical_column_with_hash_bucket("occupation", 100)
age_buckets = fc.bucketized_column(fc.numeric_column("age"), [30, 50])
model = est.DNNLinearCombinedClassifier(
    linear_feature_columns=[fc.crossed_column([occupation, age_buckets], 1000)],
    dnn_feature_columns=[fc.numeric_column("age"), fc.embedding_column(occupation, 8)],
    dnn_hidden_units=[64, 32])
```
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Union

import tensorflow as tf

from estimator_lite.canned import default_heads
from estimator_lite.canned import dnn
from estimator_lite.canned import dnn_model
from estimator_lite.canned import estimator_rules
from estimator_lite.canned import linear
from estimator_lite.canned import optimizers
from estimator_lite.canned.estimator_rules import SUM_OVER_BATCH_SIZE
from estimator_lite.canned.estimator_rules import V1_SUM
from estimator_lite.estimator import Estimator
from estimator_lite.estimator_spec import EstimatorSpec
from estimator_lite.head import base_head
from estimator_lite.mode_keys import ModeKeys
from estimator_lite.run_config import RunConfig
from estimator_lite.warm_starting import WarmStartSettings

# The learning rates of optimizers given by name (tf.estimator's, kept for
# compatibility): the DNN's, and the most the linear model's may be.
DNN_LEARNING_RATE = 0.001
LINEAR_LEARNING_RATE = 0.005

Activation = Optional[Callable[..., Any]]
OptimizerArg = Union[str, Callable[[], Any], Any]
WarmStart = Union[None, str, WarmStartSettings]
Columns = Optional[Iterable[Any]]
_NO_COLUMNS = "Either linear_feature_columns or dnn_feature_columns must be defined."
_NO_COLUMNS_FIX = ("Give linear_feature_columns (the wide part), dnn_feature_columns "
                   "with dnn_hidden_units (the deep part), or both.")


def validate_feature_columns(linear_feature_columns: Columns,
                             dnn_feature_columns: Columns) -> List[Any]:
  """Checks that at least one part has feature columns.

  Args:
    linear_feature_columns: the linear part's columns, or None.
    dnn_feature_columns: the DNN's columns, or None.

  Returns:
    All the columns, the linear ones first.

  Raises:
    ValueError: neither part has a column (tf.estimator's text, with the fix).
  """
  feature_columns = list(linear_feature_columns or []) + list(dnn_feature_columns or [])
  if not feature_columns:
    raise ValueError(f"{_NO_COLUMNS} {_NO_COLUMNS_FIX}")
  return feature_columns



def _check_no_sync_replicas_optimizer(optimizer: Any) -> None:
  if isinstance(optimizer, tf.compat.v1.train.SyncReplicasOptimizer):
    raise ValueError(
        "SyncReplicasOptimizer does not support multi optimizers case. Therefore, it "
        "is not supported in DNNLinearCombined model. If you want to use this "
        "optimizer, please use either DNN or Linear model.")


def _check_hidden_units(dnn_hidden_units: Optional[Sequence[int]]) -> None:
  if not dnn_hidden_units:
    raise ValueError(
        "dnn_hidden_units must be defined when dnn_feature_columns is specified. "
        "Pass the units of each hidden layer, e.g. dnn_hidden_units=[64, 32].")


def _check_model_fn_arguments(features: Any, linear_feature_columns: Columns,
                              dnn_feature_columns: Columns) -> None:
  estimator_rules.check_features(
      features, tuple(linear_feature_columns or ()) + tuple(dnn_feature_columns or ()))
  if not linear_feature_columns and not dnn_feature_columns:
    raise ValueError(f"{_NO_COLUMNS} {_NO_COLUMNS_FIX}")


def _combine(dnn_logits: Any, linear_logits: Any) -> Any:
  if dnn_logits is not None and linear_logits is not None:
    return dnn_logits + linear_logits
  return dnn_logits if dnn_logits is not None else linear_logits


def dnn_linear_combined_model_fn_v2(
    features: Dict[str, Any], labels: Any, mode: str, head: base_head.Head,
    linear_feature_columns: Columns = None, linear_optimizer: OptimizerArg = "Ftrl",
    dnn_feature_columns: Columns = None, dnn_optimizer: OptimizerArg = "Adagrad",
    dnn_hidden_units: Optional[Sequence[int]] = None, dnn_activation_fn: Activation = tf.nn.relu,
    dnn_dropout: Optional[float] = None, config: Optional[RunConfig] = None,
    batch_norm: bool = False, linear_sparse_combiner: str = "sum",
    loss_reduction: str = SUM_OVER_BATCH_SIZE) -> EstimatorSpec:
  """The model_fn of the v2 DNNLinearCombined estimators.

  Args:
    features: the features dict.
    labels: the labels (TRAIN, EVAL).
    mode: a `ModeKeys` value.
    head: the head turning logits into the spec.
    linear_feature_columns: the linear part's v2 feature columns.
    linear_optimizer: a Keras 2 optimizer, a callable returning one, or its
      name (learning rate min(0.005, 1 / sqrt(number of columns))).
    dnn_feature_columns: the DNN's v2 dense feature columns.
    dnn_optimizer: a Keras 2 optimizer, a callable returning one, or its name
      (learning rate 0.001).
    dnn_hidden_units: units of each hidden layer (required with
      dnn_feature_columns).
    dnn_activation_fn: activation of the hidden layers.
    dnn_dropout: dropout rate in training, or None.
    config: the RunConfig (unused).
    batch_norm: whether to batch-normalise the hidden layers.
    linear_sparse_combiner: "sum", "mean" or "sqrtn".
    loss_reduction: the head's reduction; SUM_OVER_BATCH_SIZE divides the loss
      by the number of replicas before the gradients.

  Returns:
    The head's EstimatorSpec.

  Raises:
    ValueError: features not a dict, no columns at all, DNN columns without
      hidden units, a SyncReplicasOptimizer, a bad optimizer.
  """
  del config
  _check_model_fn_arguments(features, linear_feature_columns, dnn_feature_columns)
  dnn_logits = linear_logits = None
  dnn_variables: List[Any] = []
  dnn_update_ops: List[Any] = []
  linear_variables: List[Any] = []
  dnn_train_optimizer: Any = None
  linear_train_optimizer: Any = None
  if dnn_feature_columns:
    if mode == ModeKeys.TRAIN:
      dnn_train_optimizer = optimizers.get_optimizer_instance_v2(
          dnn_optimizer, learning_rate=DNN_LEARNING_RATE)
      _check_no_sync_replicas_optimizer(dnn_train_optimizer)
    _check_hidden_units(dnn_hidden_units)
    dnn_logits, dnn_variables, dnn_update_ops = dnn_model.dnn_logits_v2(
        units=head.logits_dimension, hidden_units=tuple(dnn_hidden_units or ()),
        feature_columns=tuple(dnn_feature_columns), activation_fn=dnn_activation_fn,
        dropout=dnn_dropout, batch_norm=batch_norm, features=features, mode=mode)
  if linear_feature_columns:
    linear_columns = tuple(linear_feature_columns)
    if mode == ModeKeys.TRAIN:
      linear_train_optimizer = optimizers.get_optimizer_instance_v2(
          linear_optimizer, learning_rate=estimator_rules.linear_learning_rate(
              len(linear_columns), LINEAR_LEARNING_RATE))
      _check_no_sync_replicas_optimizer(linear_train_optimizer)
    linear_logits, linear_variables = linear.build_linear_logits(
        units=head.logits_dimension, feature_columns=linear_columns,
        sparse_combiner=linear_sparse_combiner, features=features)
    dnn_model.add_layer_summary(linear_logits, "linear")
  logits = _combine(dnn_logits, linear_logits)

  def _train_op_fn(loss: Any) -> Any:
    if loss_reduction == SUM_OVER_BATCH_SIZE:
      num_replicas = tf.distribute.get_strategy().num_replicas_in_sync
      if num_replicas > 1:
        loss *= 1.0 / num_replicas
    train_ops: List[Any] = []
    if dnn_logits is not None:
      train_ops.extend(dnn_train_optimizer.get_updates(loss, dnn_variables))
      train_ops.extend(dnn_update_ops)
    if linear_logits is not None:
      train_ops.extend(linear_train_optimizer.get_updates(loss, linear_variables))
    return tf.group(*train_ops)

  if mode == ModeKeys.TRAIN:
    # One optimizer counts its steps in the global step (hooks read it): the
    # DNN's when there is one. The other keeps its own `iter` variable, which
    # tf.estimator 2.15 saved as well (`training/Ftrl/iter`).
    estimator_rules.count_steps_with_global_step(
        dnn_train_optimizer if dnn_logits is not None else linear_train_optimizer)
  return head.create_estimator_spec(
      features=features, mode=mode, labels=labels, train_op_fn=_train_op_fn, logits=logits)


def dnn_linear_combined_model_fn_v1(
    features: Dict[str, Any], labels: Any, mode: str, head: base_head.Head,
    linear_feature_columns: Columns = None, linear_optimizer: OptimizerArg = "Ftrl",
    dnn_feature_columns: Columns = None, dnn_optimizer: OptimizerArg = "Adagrad",
    dnn_hidden_units: Optional[Sequence[int]] = None, dnn_activation_fn: Activation = tf.nn.relu,
    dnn_dropout: Optional[float] = None,
    input_layer_partitioner: Optional[Callable[..., Any]] = None,
    config: Optional[RunConfig] = None, batch_norm: bool = False,
    linear_sparse_combiner: str = "sum") -> EstimatorSpec:
  """The model_fn of the v1 (compat.v1) DNNLinearCombined estimators.

  Args:
    features: the features dict.
    labels: the labels (TRAIN, EVAL).
    mode: a `ModeKeys` value.
    head: the head turning logits into the spec.
    linear_feature_columns: the linear part's feature columns (v1 or v2).
    linear_optimizer: a `tf.compat.v1.train.Optimizer`, a callable returning
      one, or its name (learning rate min(0.005, 1 / sqrt(number of columns))).
    dnn_feature_columns: the DNN's dense feature columns (v1 or v2).
    dnn_optimizer: a `tf.compat.v1.train.Optimizer`, a callable returning one,
      or its name (learning rate 0.001).
    dnn_hidden_units: units of each hidden layer (required with
      dnn_feature_columns).
    dnn_activation_fn: activation of the hidden layers.
    dnn_dropout: dropout rate in training, or None.
    input_layer_partitioner: the partitioner of the DNN's input layer and of
      the linear model; None: min-max over the ps tasks with 64 MB slices.
    config: the RunConfig (its number of ps tasks).
    batch_norm: whether to batch-normalise the hidden layers.
    linear_sparse_combiner: "sum", "mean" or "sqrtn".

  Returns:
    The head's EstimatorSpec.

  Raises:
    ValueError: features not a dict, no columns at all, DNN columns without
      hidden units, a SyncReplicasOptimizer, a bad optimizer.
  """
  _check_model_fn_arguments(features, linear_feature_columns, dnn_feature_columns)
  num_ps_replicas = config.num_ps_replicas if config else 0
  input_layer_partitioner = input_layer_partitioner or tf.compat.v1.min_max_variable_partitioner(
      max_partitions=num_ps_replicas, min_slice_size=dnn.INPUT_LAYER_MIN_SLICE_SIZE)
  dnn_logits = linear_logits = None
  dnn_scope = linear_scope = ""
  dnn_train_optimizer: Any = None
  linear_train_optimizer: Any = None
  if dnn_feature_columns:
    dnn_train_optimizer = optimizers.get_optimizer_instance(
        dnn_optimizer, learning_rate=DNN_LEARNING_RATE)
    _check_no_sync_replicas_optimizer(dnn_train_optimizer)
    _check_hidden_units(dnn_hidden_units)
    with tf.compat.v1.variable_scope(
        "dnn", values=tuple(features.values()),
        partitioner=tf.compat.v1.min_max_variable_partitioner(
            max_partitions=num_ps_replicas)) as scope:
      dnn_scope = scope.name
      dnn_logit_fn = dnn.dnn_logit_fn_builder(
          units=head.logits_dimension, hidden_units=tuple(dnn_hidden_units or ()),
          feature_columns=tuple(dnn_feature_columns), activation_fn=dnn_activation_fn,
          dropout=dnn_dropout, input_layer_partitioner=input_layer_partitioner,
          batch_norm=batch_norm)
      dnn_logits = dnn_logit_fn(features=features, mode=mode)
  if linear_feature_columns:
    linear_columns = tuple(linear_feature_columns)
    linear_train_optimizer = optimizers.get_optimizer_instance(
        linear_optimizer, learning_rate=estimator_rules.linear_learning_rate(
            len(linear_columns), LINEAR_LEARNING_RATE))
    _check_no_sync_replicas_optimizer(linear_train_optimizer)
    with tf.compat.v1.variable_scope("linear", values=tuple(features.values()),
                                     partitioner=input_layer_partitioner) as scope:
      linear_scope = scope.name
      linear_logit_fn = linear.linear_logit_fn_builder(
          units=head.logits_dimension, feature_columns=linear_columns,
          sparse_combiner=linear_sparse_combiner)
      linear_logits = linear_logit_fn(features)
      dnn_model.add_layer_summary(linear_logits, scope.name)
  logits = _combine(dnn_logits, linear_logits)
  name_scope = tf.compat.v1.get_default_graph().get_name_scope()

  def _train_op_fn(loss: Any) -> Any:
    # In the name scope tf.estimator's v1 head trained in ("head"), which
    # names Adam's beta1_power/beta2_power as 2.15 did.
    with tf.compat.v1.name_scope(f"{name_scope}/head/" if name_scope else "head/"):
      train_ops = []
      if dnn_logits is not None:
        train_ops.append(dnn_train_optimizer.minimize(loss, var_list=tf.compat.v1.get_collection(
            tf.compat.v1.GraphKeys.TRAINABLE_VARIABLES, scope=dnn_scope)))
      if linear_logits is not None:
        train_ops.append(linear_train_optimizer.minimize(loss, var_list=tf.compat.v1.get_collection(
            tf.compat.v1.GraphKeys.TRAINABLE_VARIABLES, scope=linear_scope)))
      train_op = tf.group(*train_ops)
      with tf.control_dependencies([train_op]):
        return tf.compat.v1.assign_add(tf.compat.v1.train.get_global_step(), 1).op

  return head.create_estimator_spec(
      features=features, mode=mode, labels=labels, train_op_fn=_train_op_fn, logits=logits,
      update_ops=tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.UPDATE_OPS))


def _dnn_linear_combined_model_fn(
    make_head: Callable[[], base_head.Head], linear_feature_columns: Columns,
    linear_optimizer: OptimizerArg, dnn_feature_columns: Columns, dnn_optimizer: OptimizerArg,
    dnn_hidden_units: Optional[Iterable[int]], dnn_activation_fn: Activation,
    dnn_dropout: Optional[float], batch_norm: bool, linear_sparse_combiner: str,
    loss_reduction: str = SUM_OVER_BATCH_SIZE, v1: bool = False,
    input_layer_partitioner: Optional[Callable[..., Any]] = None
) -> Callable[..., EstimatorSpec]:
  """Checks the columns and returns the model_fn a DNNLinearCombined estimator hands to `Estimator`.

  The columns and units are read once, here: every mode's graph then sees
  the same ones, even when they were given as generators.

  Args:
    make_head: builds the head turning the logits into the spec; called
      after the columns are checked (tf.estimator's order of errors).
    linear_feature_columns: the linear part's feature columns, or None.
    linear_optimizer: the constructor's linear optimizer argument.
    dnn_feature_columns: the DNN's dense feature columns, or None.
    dnn_optimizer: the constructor's DNN optimizer argument.
    dnn_hidden_units: units of each hidden layer, or None.
    dnn_activation_fn: activation of the hidden layers.
    dnn_dropout: dropout rate in training, or None.
    batch_norm: whether to batch-normalise the hidden layers.
    linear_sparse_combiner: "sum", "mean" or "sqrtn".
    loss_reduction: the v2 head's reduction (for the replicas' gradients).
    v1: whether it is a compat.v1 estimator (v1 optimizers, partitioners).
    input_layer_partitioner: the v1 input layer's and linear model's
      partitioner, or None.

  Returns:
    `model_fn(features, labels, mode, config) -> EstimatorSpec`.

  Raises:
    ValueError: neither part has feature columns; the head's checks.
  """
  linear_columns = estimator_rules.tuple_or_none(linear_feature_columns)
  dnn_columns = estimator_rules.tuple_or_none(dnn_feature_columns)
  hidden_units = estimator_rules.tuple_or_none(dnn_hidden_units)
  validate_feature_columns(linear_columns, dnn_columns)
  head = make_head()

  def model_fn(features: Dict[str, Any], labels: Any, mode: str,
               config: RunConfig) -> EstimatorSpec:
    if v1:
      return dnn_linear_combined_model_fn_v1(
          features=features, labels=labels, mode=mode, head=head,
          linear_feature_columns=linear_columns, linear_optimizer=linear_optimizer,
          dnn_feature_columns=dnn_columns, dnn_optimizer=dnn_optimizer,
          dnn_hidden_units=hidden_units, dnn_activation_fn=dnn_activation_fn,
          dnn_dropout=dnn_dropout, input_layer_partitioner=input_layer_partitioner,
          config=config, batch_norm=batch_norm, linear_sparse_combiner=linear_sparse_combiner)
    return dnn_linear_combined_model_fn_v2(
        features=features, labels=labels, mode=mode, head=head,
        linear_feature_columns=linear_columns, linear_optimizer=linear_optimizer,
        dnn_feature_columns=dnn_columns, dnn_optimizer=dnn_optimizer,
        dnn_hidden_units=hidden_units, dnn_activation_fn=dnn_activation_fn,
        dnn_dropout=dnn_dropout, config=config, batch_norm=batch_norm,
        linear_sparse_combiner=linear_sparse_combiner, loss_reduction=loss_reduction)

  return model_fn


# -- the v2 estimators (tf.estimator.DNNLinearCombined*) ----------------------------


class DNNLinearCombinedClassifier(Estimator):
  """A wide-and-deep classifier (tf.estimator.DNNLinearCombinedClassifier).

  The linear and DNN logits are summed and fed to a softmax (or, for 2
  classes, sigmoid) cross-entropy loss. Every feature column of either part
  needs its key among the features the input_fn returns.

  Predictions carry "logits", "probabilities", "class_ids", "classes",
  "all_class_ids" and "all_classes" (and "logistic" for 2 classes). An export
  has the "classification" signature (also "serving_default") and "predict".
  """

  def __init__(self, model_dir: Optional[str] = None, linear_feature_columns: Columns = None,
               linear_optimizer: OptimizerArg = "Ftrl", dnn_feature_columns: Columns = None,
               dnn_optimizer: OptimizerArg = "Adagrad",
               dnn_hidden_units: Optional[Iterable[int]] = None,
               dnn_activation_fn: Activation = tf.nn.relu, dnn_dropout: Optional[float] = None,
               n_classes: int = 2, weight_column: Any = None,
               label_vocabulary: Optional[Sequence[str]] = None,
               config: Optional[RunConfig] = None, warm_start_from: WarmStart = None,
               loss_reduction: str = SUM_OVER_BATCH_SIZE, batch_norm: bool = False,
               linear_sparse_combiner: str = "sum") -> None:
    """Creates the classifier.

    Args:
      model_dir: where checkpoints and summaries go (and where training
        resumes from).
      linear_feature_columns: the linear part's feature columns (categorical
        or dense).
      linear_optimizer: the linear part's optimizer: a Keras 2 optimizer
        (`tf_keras.optimizers.legacy.*`), a callable returning one, or one of
        'Adagrad', 'Adam', 'Ftrl', 'RMSProp', 'SGD'.
      dnn_feature_columns: the DNN's dense feature columns.
      dnn_optimizer: the DNN's optimizer, given the same ways.
      dnn_hidden_units: the number of units of each hidden layer (required
        with dnn_feature_columns).
      dnn_activation_fn: the activation of the hidden layers.
      dnn_dropout: the probability of dropping a hidden unit in training, or
        None.
      n_classes: the number of classes, at least 2.
      weight_column: a feature name or `tf.feature_column.numeric_column`
        giving each example's weight in the loss and metrics.
      label_vocabulary: the class names when labels are strings, or None.
      config: a `RunConfig`.
      warm_start_from: a checkpoint (or model_dir) to start from, or a
        `WarmStartSettings`.
      loss_reduction: a `tf_keras.losses.Reduction` other than NONE.
      batch_norm: whether to batch-normalise each hidden layer's output.
      linear_sparse_combiner: how the linear model combines a categorical
        column's several values in one example: "sum", "mean" or "sqrtn".

    Raises:
      ValueError: neither part has feature columns; n_classes < 2 and the
        head's other checks.
    """
    model_fn = _dnn_linear_combined_model_fn(
        lambda: default_heads.classifier_head(
            n_classes, weight_column, label_vocabulary, loss_reduction),
        linear_feature_columns, linear_optimizer, dnn_feature_columns, dnn_optimizer,
        dnn_hidden_units, dnn_activation_fn, dnn_dropout, batch_norm, linear_sparse_combiner,
        loss_reduction=loss_reduction)
    super().__init__(model_fn=model_fn, model_dir=model_dir, config=config,
                     warm_start_from=warm_start_from)


class DNNLinearCombinedRegressor(Estimator):
  """A wide-and-deep regressor (tf.estimator.DNNLinearCombinedRegressor).

  As DNNLinearCombinedClassifier, with a mean squared error loss on
  `label_dimension` targets. Predictions carry "predictions"; an export has
  the "regression" signature (also "serving_default") and "predict".
  """

  def __init__(self, model_dir: Optional[str] = None, linear_feature_columns: Columns = None,
               linear_optimizer: OptimizerArg = "Ftrl", dnn_feature_columns: Columns = None,
               dnn_optimizer: OptimizerArg = "Adagrad",
               dnn_hidden_units: Optional[Iterable[int]] = None,
               dnn_activation_fn: Activation = tf.nn.relu, dnn_dropout: Optional[float] = None,
               label_dimension: int = 1, weight_column: Any = None,
               config: Optional[RunConfig] = None, warm_start_from: WarmStart = None,
               loss_reduction: str = SUM_OVER_BATCH_SIZE, batch_norm: bool = False,
               linear_sparse_combiner: str = "sum") -> None:
    """Creates the regressor.

    Args:
      model_dir: where checkpoints and summaries go.
      linear_feature_columns: the linear part's feature columns.
      linear_optimizer: the linear part's optimizer (a Keras 2 optimizer, a
        callable returning one, or its name).
      dnn_feature_columns: the DNN's dense feature columns.
      dnn_optimizer: the DNN's optimizer, given the same ways.
      dnn_hidden_units: the number of units of each hidden layer.
      dnn_activation_fn: the activation of the hidden layers.
      dnn_dropout: the probability of dropping a hidden unit in training, or
        None.
      label_dimension: the number of regression targets per example.
      weight_column: a feature name or numeric column giving each example's
        weight.
      config: a `RunConfig`.
      warm_start_from: a checkpoint to start from, or a `WarmStartSettings`.
      loss_reduction: a `tf_keras.losses.Reduction` other than NONE.
      batch_norm: whether to batch-normalise each hidden layer's output.
      linear_sparse_combiner: "sum", "mean" or "sqrtn".

    Raises:
      ValueError: neither part has feature columns; the head's checks.
    """
    model_fn = _dnn_linear_combined_model_fn(
        lambda: default_heads.regression_head(
            label_dimension, weight_column, loss_reduction),
        linear_feature_columns, linear_optimizer, dnn_feature_columns, dnn_optimizer,
        dnn_hidden_units, dnn_activation_fn, dnn_dropout, batch_norm, linear_sparse_combiner,
        loss_reduction=loss_reduction)
    super().__init__(model_fn=model_fn, model_dir=model_dir, config=config,
                     warm_start_from=warm_start_from)


class DNNLinearCombinedEstimator(Estimator):
  """A wide-and-deep model topped by a head of your choice (tf.estimator.DNNLinearCombinedEstimator).

  tf.estimator 2.15's class took no `warm_start_from`; neither does this one.
  """

  def __init__(self, head: base_head.Head, model_dir: Optional[str] = None,
               linear_feature_columns: Columns = None, linear_optimizer: OptimizerArg = "Ftrl",
               dnn_feature_columns: Columns = None, dnn_optimizer: OptimizerArg = "Adagrad",
               dnn_hidden_units: Optional[Iterable[int]] = None,
               dnn_activation_fn: Activation = tf.nn.relu, dnn_dropout: Optional[float] = None,
               config: Optional[RunConfig] = None, batch_norm: bool = False,
               linear_sparse_combiner: str = "sum") -> None:
    """Creates the estimator.

    Args:
      head: a `Head` (estimator_lite.MultiLabelHead, RegressionHead, ...).
      model_dir: where checkpoints and summaries go.
      linear_feature_columns: the linear part's feature columns.
      linear_optimizer: the linear part's optimizer (a Keras 2 optimizer, a
        callable returning one, or its name).
      dnn_feature_columns: the DNN's dense feature columns.
      dnn_optimizer: the DNN's optimizer, given the same ways.
      dnn_hidden_units: the number of units of each hidden layer.
      dnn_activation_fn: the activation of the hidden layers.
      dnn_dropout: the probability of dropping a hidden unit in training, or
        None.
      config: a `RunConfig`.
      batch_norm: whether to batch-normalise each hidden layer's output.
      linear_sparse_combiner: "sum", "mean" or "sqrtn".

    Raises:
      ValueError: neither part has feature columns.
    """
    model_fn = _dnn_linear_combined_model_fn(
        lambda: head, linear_feature_columns, linear_optimizer, dnn_feature_columns,
        dnn_optimizer, dnn_hidden_units, dnn_activation_fn, dnn_dropout, batch_norm,
        linear_sparse_combiner)
    super().__init__(model_fn=model_fn, model_dir=model_dir, config=config)


# -- the v1 estimators (tf.compat.v1.estimator.DNNLinearCombined*) ------------------


class DNNLinearCombinedClassifierV1(Estimator):
  """tf.compat.v1.estimator.DNNLinearCombinedClassifier: the classifier with v1 training.

  Differs from `DNNLinearCombinedClassifier` in: `tf.compat.v1.train`
  optimizers (slots beside their variables), variables partitioned over the
  parameter servers (`input_layer_partitioner` for the DNN's input layer and
  the linear model), v1 feature columns accepted, and the training loss
  summed over the batch by default.
  """

  def __init__(self, model_dir: Optional[str] = None, linear_feature_columns: Columns = None,
               linear_optimizer: OptimizerArg = "Ftrl", dnn_feature_columns: Columns = None,
               dnn_optimizer: OptimizerArg = "Adagrad",
               dnn_hidden_units: Optional[Iterable[int]] = None,
               dnn_activation_fn: Activation = tf.nn.relu, dnn_dropout: Optional[float] = None,
               n_classes: int = 2, weight_column: Any = None,
               label_vocabulary: Optional[Sequence[str]] = None,
               input_layer_partitioner: Optional[Callable[..., Any]] = None,
               config: Optional[RunConfig] = None, warm_start_from: WarmStart = None,
               loss_reduction: str = V1_SUM, batch_norm: bool = False,
               linear_sparse_combiner: str = "sum") -> None:
    """Creates the classifier.

    Args:
      model_dir: where checkpoints and summaries go.
      linear_feature_columns: the linear part's feature columns (v1 or v2).
      linear_optimizer: a `tf.compat.v1.train.Optimizer`, a callable returning
        one, or its name.
      dnn_feature_columns: the DNN's dense feature columns (v1 or v2).
      dnn_optimizer: the DNN's optimizer, given the same ways.
      dnn_hidden_units: the number of units of each hidden layer.
      dnn_activation_fn: the activation of the hidden layers.
      dnn_dropout: the probability of dropping a hidden unit in training, or
        None.
      n_classes: the number of classes, at least 2.
      weight_column: a feature name or numeric column giving each example's
        weight.
      label_vocabulary: the class names when labels are strings, or None.
      input_layer_partitioner: the partitioner of the DNN's input layer and
        the linear model; None: min-max over the ps tasks with 64 MB slices.
      config: a `RunConfig`.
      warm_start_from: a checkpoint to start from, or a `WarmStartSettings`.
      loss_reduction: a `tf.compat.v1.losses.Reduction` other than NONE:
        `SUM` (the default), `MEAN`, `SUM_OVER_BATCH_SIZE` or
        `SUM_BY_NONZERO_WEIGHTS`.
      batch_norm: whether to batch-normalise each hidden layer's output.
      linear_sparse_combiner: "sum", "mean" or "sqrtn".

    Raises:
      ValueError: neither part has feature columns; the head's checks.
    """
    model_fn = _dnn_linear_combined_model_fn(
        lambda: default_heads.v1_classifier_head(
            n_classes, weight_column, label_vocabulary, loss_reduction),
        linear_feature_columns, linear_optimizer, dnn_feature_columns, dnn_optimizer,
        dnn_hidden_units, dnn_activation_fn, dnn_dropout, batch_norm, linear_sparse_combiner,
        v1=True, input_layer_partitioner=input_layer_partitioner)
    super().__init__(model_fn=model_fn, model_dir=model_dir, config=config,
                     warm_start_from=warm_start_from)


class DNNLinearCombinedRegressorV1(Estimator):
  """tf.compat.v1.estimator.DNNLinearCombinedRegressor: the regressor with v1 training."""

  def __init__(self, model_dir: Optional[str] = None, linear_feature_columns: Columns = None,
               linear_optimizer: OptimizerArg = "Ftrl", dnn_feature_columns: Columns = None,
               dnn_optimizer: OptimizerArg = "Adagrad",
               dnn_hidden_units: Optional[Iterable[int]] = None,
               dnn_activation_fn: Activation = tf.nn.relu, dnn_dropout: Optional[float] = None,
               label_dimension: int = 1, weight_column: Any = None,
               input_layer_partitioner: Optional[Callable[..., Any]] = None,
               config: Optional[RunConfig] = None, warm_start_from: WarmStart = None,
               loss_reduction: str = V1_SUM, batch_norm: bool = False,
               linear_sparse_combiner: str = "sum") -> None:
    """Creates the regressor.

    Args:
      model_dir: where checkpoints and summaries go.
      linear_feature_columns: the linear part's feature columns (v1 or v2).
      linear_optimizer: a `tf.compat.v1.train.Optimizer`, a callable returning
        one, or its name.
      dnn_feature_columns: the DNN's dense feature columns (v1 or v2).
      dnn_optimizer: the DNN's optimizer, given the same ways.
      dnn_hidden_units: the number of units of each hidden layer.
      dnn_activation_fn: the activation of the hidden layers.
      dnn_dropout: the probability of dropping a hidden unit in training, or
        None.
      label_dimension: the number of regression targets per example.
      weight_column: a feature name or numeric column giving each example's
        weight.
      input_layer_partitioner: the partitioner of the DNN's input layer and
        the linear model.
      config: a `RunConfig`.
      warm_start_from: a checkpoint to start from, or a `WarmStartSettings`.
      loss_reduction: a `tf.compat.v1.losses.Reduction` other than NONE:
        `SUM` (the default), `MEAN`, `SUM_OVER_BATCH_SIZE` or
        `SUM_BY_NONZERO_WEIGHTS`.
      batch_norm: whether to batch-normalise each hidden layer's output.
      linear_sparse_combiner: "sum", "mean" or "sqrtn".

    Raises:
      ValueError: neither part has feature columns; the head's checks.
    """
    model_fn = _dnn_linear_combined_model_fn(
        lambda: default_heads.v1_regression_head(label_dimension, weight_column, loss_reduction),
        linear_feature_columns, linear_optimizer, dnn_feature_columns, dnn_optimizer,
        dnn_hidden_units, dnn_activation_fn, dnn_dropout, batch_norm, linear_sparse_combiner,
        v1=True, input_layer_partitioner=input_layer_partitioner)
    super().__init__(model_fn=model_fn, model_dir=model_dir, config=config,
                     warm_start_from=warm_start_from)


class DNNLinearCombinedEstimatorV1(Estimator):
  """tf.compat.v1.estimator.DNNLinearCombinedEstimator: the estimator with v1 training.

  Like tf.estimator 2.15's, it takes no `warm_start_from`.
  """

  def __init__(self, head: base_head.Head, model_dir: Optional[str] = None,
               linear_feature_columns: Columns = None, linear_optimizer: OptimizerArg = "Ftrl",
               dnn_feature_columns: Columns = None, dnn_optimizer: OptimizerArg = "Adagrad",
               dnn_hidden_units: Optional[Iterable[int]] = None,
               dnn_activation_fn: Activation = tf.nn.relu, dnn_dropout: Optional[float] = None,
               input_layer_partitioner: Optional[Callable[..., Any]] = None,
               config: Optional[RunConfig] = None, batch_norm: bool = False,
               linear_sparse_combiner: str = "sum") -> None:
    """Creates the estimator.

    Args:
      head: a `Head`; it trains through `train_op_fn` with the v1 optimizers.
      model_dir: where checkpoints and summaries go.
      linear_feature_columns: the linear part's feature columns (v1 or v2).
      linear_optimizer: a `tf.compat.v1.train.Optimizer`, a callable returning
        one, or its name.
      dnn_feature_columns: the DNN's dense feature columns (v1 or v2).
      dnn_optimizer: the DNN's optimizer, given the same ways.
      dnn_hidden_units: the number of units of each hidden layer.
      dnn_activation_fn: the activation of the hidden layers.
      dnn_dropout: the probability of dropping a hidden unit in training, or
        None.
      input_layer_partitioner: the partitioner of the DNN's input layer and
        the linear model.
      config: a `RunConfig`.
      batch_norm: whether to batch-normalise each hidden layer's output.
      linear_sparse_combiner: "sum", "mean" or "sqrtn".

    Raises:
      ValueError: neither part has feature columns.
    """
    model_fn = _dnn_linear_combined_model_fn(
        lambda: head, linear_feature_columns, linear_optimizer, dnn_feature_columns,
        dnn_optimizer, dnn_hidden_units, dnn_activation_fn, dnn_dropout, batch_norm,
        linear_sparse_combiner,
        v1=True, input_layer_partitioner=input_layer_partitioner)
    super().__init__(model_fn=model_fn, model_dir=model_dir, config=config)

