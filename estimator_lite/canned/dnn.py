"""Deep neural network estimators: DNNClassifier, DNNRegressor, DNNEstimator (tf.estimator 2.15's).

A DNN estimator is the network of `dnn_model` (dense feature columns, fully
connected hidden layers, a logits layer) topped by a head. The top-level
classes are tf.estimator 2.15's v2 estimators: Keras 2 `OptimizerV2`s whose
slots and hyperparameters are saved under `training/<Optimizer>/...`, the
global step as the optimizer's `iterations`, a loss averaged over the batch by
default. The `...V1` classes are `tf.compat.v1.estimator`'s: `tf.compat.v1.train`
optimizers (slots beside their variables), variables partitioned across the
parameter servers, a loss summed over the batch by default.

```python
import estimator_lite as est

occupation = tf.feature_column.categorical_column_with_hash_bucket("occupation", 100)
classifier = est.DNNClassifier(
    hidden_units=[64, 32],
    feature_columns=[tf.feature_column.numeric_column("age"),
                     tf.feature_column.embedding_column(occupation, 8)],
    n_classes=3)
classifier.train(input_fn=train_input_fn, steps=1000)
```
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, Optional, Sequence, Union

import tensorflow as tf

from estimator_lite.canned import default_heads
from estimator_lite.canned import dnn_model
from estimator_lite.canned import estimator_rules
from estimator_lite.canned import optimizers
from estimator_lite.canned.estimator_rules import SUM_OVER_BATCH_SIZE
from estimator_lite.canned.estimator_rules import V1_SUM
from estimator_lite.estimator import Estimator
from estimator_lite.estimator_spec import EstimatorSpec
from estimator_lite.head import base_head
from estimator_lite.mode_keys import ModeKeys
from estimator_lite.run_config import RunConfig
from estimator_lite.warm_starting import WarmStartSettings

# The learning rate of a v1 optimizer given by name (tf.estimator's, kept for
# compatibility). A v2 optimizer given by name uses its class's default.
LEARNING_RATE = 0.05
# Parameter-server partitioning of the v1 input layer: a slice is at least
# 64 MB, so small embeddings stay whole.
INPUT_LAYER_MIN_SLICE_SIZE = 64 << 20

Activation = Optional[Callable[..., Any]]
OptimizerArg = Union[str, Callable[[], Any], Any]
WarmStart = Union[None, str, WarmStartSettings]


def dnn_logit_fn_builder(units: int, hidden_units: Iterable[int], feature_columns: Iterable[Any],
                         activation_fn: Activation, dropout: Optional[float],
                         input_layer_partitioner: Optional[Callable[..., Any]],
                         batch_norm: bool) -> Callable[..., Any]:
  """Returns a function building the logits of a DNN (`tf.compat.v1.estimator.experimental`'s).

  The returned `logit_fn(features, mode)` builds the layers of the v1 DNN
  estimators in the current graph under a Keras model named "dnn": call it
  inside a `tf.compat.v1.variable_scope` (the canned estimators use "dnn",
  with a partitioner) to place and partition the variables.

  Args:
    units: the dimension of the logits (for a MultiHead, the sum of its heads'
      logits dimensions).
    hidden_units: the number of units of each hidden layer, in order.
    feature_columns: dense feature columns (v1 or v2) the network reads.
    activation_fn: the activation of the hidden layers.
    dropout: the probability of dropping a hidden unit in training, or None.
    input_layer_partitioner: the partitioner of the input layer's variables,
      or None.
    batch_norm: whether to batch-normalise each hidden layer's output.

  Returns:
    `logit_fn(features, mode) -> logits Tensor`, where `features` is a dict of
    Tensors and SparseTensors and `mode` a `ModeKeys` value.

  Raises:
    ValueError: `units` is not an int.
  """
  return dnn_model.dnn_logit_fn_v1(units, tuple(hidden_units), tuple(feature_columns),
                                   activation_fn, dropout, input_layer_partitioner, batch_norm)


def dnn_model_fn_v2(features: Dict[str, Any], labels: Any, mode: str, head: base_head.Head,
                    hidden_units: Sequence[int], feature_columns: Sequence[Any],
                    optimizer: OptimizerArg = "Adagrad", activation_fn: Activation = tf.nn.relu,
                    dropout: Optional[float] = None, config: Optional[RunConfig] = None,
                    batch_norm: bool = False) -> EstimatorSpec:
  """The model_fn of the v2 DNN estimators.

  Args:
    features: the features dict.
    labels: the labels (TRAIN, EVAL).
    mode: a `ModeKeys` value.
    head: the head turning logits into the spec.
    hidden_units: units of each hidden layer.
    feature_columns: v2 dense feature columns.
    optimizer: a Keras 2 optimizer, a callable returning one, or its name (the
      class's default learning rate).
    activation_fn: activation of the hidden layers.
    dropout: dropout rate in training, or None.
    config: the RunConfig (unused: v2 variables are not partitioned).
    batch_norm: whether to batch-normalise the hidden layers.

  Returns:
    The head's EstimatorSpec.

  Raises:
    ValueError: features not a dict, a bad optimizer, v1-only feature columns.
  """
  del config
  estimator_rules.check_features(features, feature_columns)
  logits, trainable_variables, update_ops = dnn_model.dnn_logits_v2(
      units=head.logits_dimension, hidden_units=hidden_units, feature_columns=feature_columns,
      activation_fn=activation_fn, dropout=dropout, batch_norm=batch_norm, features=features,
      mode=mode)
  if mode == ModeKeys.TRAIN:
    optimizer = optimizers.get_optimizer_instance_v2(optimizer)
    estimator_rules.count_steps_with_global_step(optimizer)
  return head.create_estimator_spec(
      features=features, mode=mode, labels=labels, optimizer=optimizer, logits=logits,
      trainable_variables=trainable_variables, update_ops=update_ops)


def dnn_model_fn_v1(features: Dict[str, Any], labels: Any, mode: str, head: base_head.Head,
                    hidden_units: Sequence[int], feature_columns: Sequence[Any],
                    optimizer: OptimizerArg = "Adagrad", activation_fn: Activation = tf.nn.relu,
                    dropout: Optional[float] = None,
                    input_layer_partitioner: Optional[Callable[..., Any]] = None,
                    config: Optional[RunConfig] = None, batch_norm: bool = False) -> EstimatorSpec:
  """The model_fn of the v1 (compat.v1) DNN estimators.

  The network's variables are partitioned over the parameter servers
  (`tf.compat.v1.min_max_variable_partitioner`); the head is built inside the
  "dnn" variable scope, as tf.estimator's was, which names the optimizer's
  slots (`dnn/hiddenlayer_0/kernel/t_0/Adagrad`).

  Args:
    features: the features dict.
    labels: the labels (TRAIN, EVAL).
    mode: a `ModeKeys` value.
    head: the head turning logits into the spec.
    hidden_units: units of each hidden layer.
    feature_columns: dense feature columns (v1 or v2).
    optimizer: a `tf.compat.v1.train.Optimizer`, a callable returning one, or
      its name (learning rate 0.05).
    activation_fn: activation of the hidden layers.
    dropout: dropout rate in training, or None.
    input_layer_partitioner: the input layer's partitioner; None: min-max
      over the ps tasks with 64 MB slices.
    config: the RunConfig (its number of ps tasks).
    batch_norm: whether to batch-normalise the hidden layers.

  Returns:
    The head's EstimatorSpec.

  Raises:
    ValueError: features not a dict, a bad optimizer.
  """
  optimizer = optimizers.get_optimizer_instance(optimizer, learning_rate=LEARNING_RATE)
  estimator_rules.check_features(features, feature_columns)
  num_ps_replicas = config.num_ps_replicas if config else 0
  partitioner = tf.compat.v1.min_max_variable_partitioner(max_partitions=num_ps_replicas)
  with tf.compat.v1.variable_scope("dnn", values=tuple(features.values()),
                                   partitioner=partitioner):
    input_layer_partitioner = input_layer_partitioner or tf.compat.v1.min_max_variable_partitioner(
        max_partitions=num_ps_replicas, min_slice_size=INPUT_LAYER_MIN_SLICE_SIZE)
    logit_fn = dnn_logit_fn_builder(
        units=head.logits_dimension, hidden_units=hidden_units, feature_columns=feature_columns,
        activation_fn=activation_fn, dropout=dropout,
        input_layer_partitioner=input_layer_partitioner, batch_norm=batch_norm)
    logits = logit_fn(features=features, mode=mode)
    scope = tf.compat.v1.get_default_graph().get_name_scope()
    return head.create_estimator_spec(
        features=features, mode=mode, labels=labels, logits=logits,
        train_op_fn=estimator_rules.v1_train_op_fn(
            optimizer, f"{scope}/head/" if scope else "head/"),
        update_ops=tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.UPDATE_OPS))


def _dnn_model_fn(head: base_head.Head, hidden_units: Optional[Iterable[int]],
                  feature_columns: Optional[Iterable[Any]], optimizer: OptimizerArg,
                  activation_fn: Activation, dropout: Optional[float], batch_norm: bool,
                  v1: bool = False, input_layer_partitioner: Optional[Callable[..., Any]] = None
                  ) -> Callable[..., EstimatorSpec]:
  """The model_fn a DNN estimator of this module hands to `Estimator`.

  Args:
    head: the head turning the logits into the spec.
    hidden_units: units of each hidden layer (read once, here; None fails
      when the network is built, as tf.estimator's did).
    feature_columns: the dense feature columns (read once, here).
    optimizer: the constructor's optimizer argument.
    activation_fn: activation of the hidden layers.
    dropout: dropout rate in training, or None.
    batch_norm: whether to batch-normalise the hidden layers.
    v1: whether it is a compat.v1 estimator (v1 optimizer, partitioners).
    input_layer_partitioner: the v1 input layer's partitioner, or None.

  Returns:
    `model_fn(features, labels, mode, config) -> EstimatorSpec`.
  """
  # None reaches the network builder and fails there, as tf.estimator's did.
  hidden: Any = estimator_rules.tuple_or_none(hidden_units)
  columns = tuple(feature_columns or [])

  def model_fn(features: Dict[str, Any], labels: Any, mode: str,
               config: RunConfig) -> EstimatorSpec:
    if v1:
      return dnn_model_fn_v1(
          features=features, labels=labels, mode=mode, head=head, hidden_units=hidden,
          feature_columns=columns, optimizer=optimizer, activation_fn=activation_fn,
          dropout=dropout, input_layer_partitioner=input_layer_partitioner, config=config,
          batch_norm=batch_norm)
    return dnn_model_fn_v2(
        features=features, labels=labels, mode=mode, head=head, hidden_units=hidden,
        feature_columns=columns, optimizer=optimizer, activation_fn=activation_fn,
        dropout=dropout, config=config, batch_norm=batch_norm)

  return model_fn


# -- the v2 estimators (tf.estimator.DNN*) ------------------------------------------


class DNNClassifier(Estimator):
  """A classifier on a deep neural network (tf.estimator.DNNClassifier).

  The features reach fully connected hidden layers through `feature_columns`
  (dense columns: numeric, bucketized, embedding, indicator, ...); the logits
  feed a softmax (or, for 2 classes, sigmoid) cross-entropy loss.

  Each feature column needs its key among the features the input_fn returns
  (a categorical column's as a SparseTensor or a Tensor, a weighted column's
  id and weight keys), and `weight_column`'s key when given.

  Predictions carry "logits", "probabilities", "class_ids", "classes",
  "all_class_ids" and "all_classes" (and "logistic" for 2 classes). An export
  has the "classification" signature (also "serving_default") and "predict".
  """

  def __init__(self, hidden_units: Iterable[int], feature_columns: Iterable[Any],
               model_dir: Optional[str] = None, n_classes: int = 2, weight_column: Any = None,
               label_vocabulary: Optional[Sequence[str]] = None,
               optimizer: OptimizerArg = "Adagrad", activation_fn: Activation = tf.nn.relu,
               dropout: Optional[float] = None, config: Optional[RunConfig] = None,
               warm_start_from: WarmStart = None,
               loss_reduction: str = SUM_OVER_BATCH_SIZE, batch_norm: bool = False) -> None:
    """Creates the classifier.

    Args:
      hidden_units: the number of units of each hidden layer, e.g. [64, 32]:
        64 units, then 32.
      feature_columns: the dense feature columns (`tf.feature_column`) the
        network reads.
      model_dir: where checkpoints and summaries go (and where training
        resumes from).
      n_classes: the number of classes, at least 2.
      weight_column: a feature name or `tf.feature_column.numeric_column`
        giving each example's weight in the loss and metrics.
      label_vocabulary: the class names when labels are strings; None: labels
        are class ids (0/1 or a probability for 2 classes).
      optimizer: a Keras 2 optimizer (`tf_keras.optimizers.legacy.*`), a
        callable returning one, or one of 'Adagrad', 'Adam', 'Ftrl',
        'RMSProp', 'SGD' (with that class's default learning rate).
      activation_fn: the activation of the hidden layers.
      dropout: the probability of dropping a hidden unit in training, or None.
      config: a `RunConfig`.
      warm_start_from: a checkpoint (or model_dir) to start from, or a
        `WarmStartSettings`.
      loss_reduction: how the training loss reduces over the batch, a
        `tf_keras.losses.Reduction` other than NONE.
      batch_norm: whether to batch-normalise each hidden layer's output.

    Raises:
      ValueError: n_classes < 2, a bad label_vocabulary or loss_reduction (the
        head's checks).
    """
    head = default_heads.classifier_head(n_classes, weight_column, label_vocabulary,
                                         loss_reduction)
    model_fn = _dnn_model_fn(head, hidden_units, feature_columns, optimizer, activation_fn,
                             dropout, batch_norm)
    super().__init__(model_fn=model_fn, model_dir=model_dir, config=config,
                     warm_start_from=warm_start_from)


class DNNRegressor(Estimator):
  """A regressor on a deep neural network (tf.estimator.DNNRegressor).

  As DNNClassifier, with a mean squared error loss on `label_dimension`
  targets per example. Predictions carry "predictions"; an export has the
  "regression" signature (also "serving_default") and "predict".
  """

  def __init__(self, hidden_units: Iterable[int], feature_columns: Iterable[Any],
               model_dir: Optional[str] = None, label_dimension: int = 1,
               weight_column: Any = None, optimizer: OptimizerArg = "Adagrad",
               activation_fn: Activation = tf.nn.relu, dropout: Optional[float] = None,
               config: Optional[RunConfig] = None, warm_start_from: WarmStart = None,
               loss_reduction: str = SUM_OVER_BATCH_SIZE, batch_norm: bool = False) -> None:
    """Creates the regressor.

    Args:
      hidden_units: the number of units of each hidden layer.
      feature_columns: the dense feature columns the network reads.
      model_dir: where checkpoints and summaries go.
      label_dimension: the number of regression targets per example (the last
        dimension of labels and logits).
      weight_column: a feature name or numeric column giving each example's
        weight.
      optimizer: a Keras 2 optimizer, a callable returning one, or its name.
      activation_fn: the activation of the hidden layers.
      dropout: the probability of dropping a hidden unit in training, or None.
      config: a `RunConfig`.
      warm_start_from: a checkpoint to start from, or a `WarmStartSettings`.
      loss_reduction: a `tf_keras.losses.Reduction` other than NONE.
      batch_norm: whether to batch-normalise each hidden layer's output.

    Raises:
      ValueError: a bad label_dimension or loss_reduction (the head's checks).
    """
    head = default_heads.regression_head(label_dimension, weight_column, loss_reduction)
    model_fn = _dnn_model_fn(head, hidden_units, feature_columns, optimizer, activation_fn,
                             dropout, batch_norm)
    super().__init__(model_fn=model_fn, model_dir=model_dir, config=config,
                     warm_start_from=warm_start_from)


class DNNEstimator(Estimator):
  """A deep neural network topped by a head of your choice (tf.estimator.DNNEstimator).

  The loss, predictions, metrics and export signatures are the head's (e.g.
  `estimator_lite.MultiLabelHead(n_classes=3)`).
  """

  def __init__(self, head: base_head.Head, hidden_units: Iterable[int],
               feature_columns: Iterable[Any], model_dir: Optional[str] = None,
               optimizer: OptimizerArg = "Adagrad", activation_fn: Activation = tf.nn.relu,
               dropout: Optional[float] = None, config: Optional[RunConfig] = None,
               warm_start_from: WarmStart = None, batch_norm: bool = False) -> None:
    """Creates the estimator.

    Args:
      head: a `Head` (estimator_lite.MultiLabelHead, RegressionHead, ...).
      hidden_units: the number of units of each hidden layer.
      feature_columns: the dense feature columns the network reads.
      model_dir: where checkpoints and summaries go.
      optimizer: a Keras 2 optimizer, a callable returning one, or its name.
      activation_fn: the activation of the hidden layers.
      dropout: the probability of dropping a hidden unit in training, or None.
      config: a `RunConfig`.
      warm_start_from: a checkpoint to start from, or a `WarmStartSettings`.
      batch_norm: whether to batch-normalise each hidden layer's output.
    """
    model_fn = _dnn_model_fn(head, hidden_units, feature_columns, optimizer, activation_fn,
                             dropout, batch_norm)
    super().__init__(model_fn=model_fn, model_dir=model_dir, config=config,
                     warm_start_from=warm_start_from)


# -- the v1 estimators (tf.compat.v1.estimator.DNN*) --------------------------------


class DNNClassifierV1(Estimator):
  """tf.compat.v1.estimator.DNNClassifier: DNNClassifier with v1 training.

  Differs from `DNNClassifier` in: `tf.compat.v1.train` optimizers (a name
  gets learning rate 0.05), variables partitioned over the parameter servers
  (`input_layer_partitioner` for the input layer), v1 feature columns
  accepted (such as `tf.compat.v1.feature_column.shared_embedding_columns`),
  and the training loss summed over the batch by default.
  """

  def __init__(self, hidden_units: Iterable[int], feature_columns: Iterable[Any],
               model_dir: Optional[str] = None, n_classes: int = 2, weight_column: Any = None,
               label_vocabulary: Optional[Sequence[str]] = None,
               optimizer: OptimizerArg = "Adagrad", activation_fn: Activation = tf.nn.relu,
               dropout: Optional[float] = None,
               input_layer_partitioner: Optional[Callable[..., Any]] = None,
               config: Optional[RunConfig] = None, warm_start_from: WarmStart = None,
               loss_reduction: str = V1_SUM, batch_norm: bool = False) -> None:
    """Creates the classifier.

    Args:
      hidden_units: the number of units of each hidden layer.
      feature_columns: the dense feature columns (v1 or v2) the network reads.
      model_dir: where checkpoints and summaries go.
      n_classes: the number of classes, at least 2.
      weight_column: a feature name or numeric column giving each example's
        weight.
      label_vocabulary: the class names when labels are strings, or None.
      optimizer: a `tf.compat.v1.train.Optimizer`, a callable returning one,
        or one of 'Adagrad', 'Adam', 'Ftrl', 'RMSProp', 'SGD' (learning rate
        0.05).
      activation_fn: the activation of the hidden layers.
      dropout: the probability of dropping a hidden unit in training, or None.
      input_layer_partitioner: the partitioner of the input layer's variables;
        None: min-max over the ps tasks with 64 MB slices.
      config: a `RunConfig`.
      warm_start_from: a checkpoint to start from, or a `WarmStartSettings`.
      loss_reduction: a `tf.compat.v1.losses.Reduction` other than NONE:
        `SUM` (the default), `MEAN`, `SUM_OVER_BATCH_SIZE` or
        `SUM_BY_NONZERO_WEIGHTS`.
      batch_norm: whether to batch-normalise each hidden layer's output.

    Raises:
      ValueError: n_classes < 2, a bad label_vocabulary or loss_reduction.
    """
    head = default_heads.v1_classifier_head(n_classes, weight_column, label_vocabulary,
                                            loss_reduction)
    model_fn = _dnn_model_fn(head, hidden_units, feature_columns, optimizer, activation_fn,
                             dropout, batch_norm, v1=True,
                             input_layer_partitioner=input_layer_partitioner)
    super().__init__(model_fn=model_fn, model_dir=model_dir, config=config,
                     warm_start_from=warm_start_from)


class DNNRegressorV1(Estimator):
  """tf.compat.v1.estimator.DNNRegressor: DNNRegressor with v1 training (see DNNClassifierV1)."""

  def __init__(self, hidden_units: Iterable[int], feature_columns: Iterable[Any],
               model_dir: Optional[str] = None, label_dimension: int = 1,
               weight_column: Any = None, optimizer: OptimizerArg = "Adagrad",
               activation_fn: Activation = tf.nn.relu, dropout: Optional[float] = None,
               input_layer_partitioner: Optional[Callable[..., Any]] = None,
               config: Optional[RunConfig] = None, warm_start_from: WarmStart = None,
               loss_reduction: str = V1_SUM, batch_norm: bool = False) -> None:
    """Creates the regressor.

    Args:
      hidden_units: the number of units of each hidden layer.
      feature_columns: the dense feature columns (v1 or v2) the network reads.
      model_dir: where checkpoints and summaries go.
      label_dimension: the number of regression targets per example.
      weight_column: a feature name or numeric column giving each example's
        weight.
      optimizer: a `tf.compat.v1.train.Optimizer`, a callable returning one,
        or its name (learning rate 0.05).
      activation_fn: the activation of the hidden layers.
      dropout: the probability of dropping a hidden unit in training, or None.
      input_layer_partitioner: the partitioner of the input layer's variables.
      config: a `RunConfig`.
      warm_start_from: a checkpoint to start from, or a `WarmStartSettings`.
      loss_reduction: a `tf.compat.v1.losses.Reduction` other than NONE:
        `SUM` (the default), `MEAN`, `SUM_OVER_BATCH_SIZE` or
        `SUM_BY_NONZERO_WEIGHTS`.
      batch_norm: whether to batch-normalise each hidden layer's output.

    Raises:
      ValueError: a bad label_dimension or loss_reduction.
    """
    head = default_heads.v1_regression_head(label_dimension, weight_column, loss_reduction)
    model_fn = _dnn_model_fn(head, hidden_units, feature_columns, optimizer, activation_fn,
                             dropout, batch_norm, v1=True,
                             input_layer_partitioner=input_layer_partitioner)
    super().__init__(model_fn=model_fn, model_dir=model_dir, config=config,
                     warm_start_from=warm_start_from)


class DNNEstimatorV1(Estimator):
  """tf.compat.v1.estimator.DNNEstimator: DNNEstimator with v1 training (see DNNClassifierV1)."""

  def __init__(self, head: base_head.Head, hidden_units: Iterable[int],
               feature_columns: Iterable[Any], model_dir: Optional[str] = None,
               optimizer: OptimizerArg = "Adagrad", activation_fn: Activation = tf.nn.relu,
               dropout: Optional[float] = None,
               input_layer_partitioner: Optional[Callable[..., Any]] = None,
               config: Optional[RunConfig] = None, warm_start_from: WarmStart = None,
               batch_norm: bool = False) -> None:
    """Creates the estimator.

    Args:
      head: a `Head`; it trains through `train_op_fn` with the v1 optimizer.
      hidden_units: the number of units of each hidden layer.
      feature_columns: the dense feature columns (v1 or v2) the network reads.
      model_dir: where checkpoints and summaries go.
      optimizer: a `tf.compat.v1.train.Optimizer`, a callable returning one,
        or its name (learning rate 0.05).
      activation_fn: the activation of the hidden layers.
      dropout: the probability of dropping a hidden unit in training, or None.
      input_layer_partitioner: the partitioner of the input layer's variables.
      config: a `RunConfig`.
      warm_start_from: a checkpoint to start from, or a `WarmStartSettings`.
      batch_norm: whether to batch-normalise each hidden layer's output.
    """
    model_fn = _dnn_model_fn(head, hidden_units, feature_columns, optimizer, activation_fn,
                             dropout, batch_norm, v1=True,
                             input_layer_partitioner=input_layer_partitioner)
    super().__init__(model_fn=model_fn, model_dir=model_dir, config=config,
                     warm_start_from=warm_start_from)

