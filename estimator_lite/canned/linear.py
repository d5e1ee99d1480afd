"""Linear estimators: tf.estimator 2.15's LinearClassifier, LinearRegressor and LinearEstimator.

A linear model (`estimator_lite.canned.linear_model.LinearModel`) over the
feature columns gives the logits; a head turns them into a loss, predictions,
metrics and export signatures. Two generations, as in tf.estimator 2.15:

* `LinearClassifier`, `LinearRegressor`, `LinearEstimator` (the top level,
  tf.estimator's v2 classes): v2 feature columns only, Keras 2 optimizers
  (`tf_keras.optimizers.legacy.*`, whose slots are checkpointed as
  `training/Ftrl/linear/linear_model/<column>/weights/accumulator`, ...),
  losses reduced with SUM_OVER_BATCH_SIZE by default. The optimizer counts its
  steps with the global step, so it has no `iter` variable of its own.
* `LinearClassifierV1`, `LinearRegressorV1`, `LinearEstimatorV1`
  (`estimator_lite.compat.v1.Linear*`, tf.compat.v1.estimator's classes):
  `tf.compat.v1.train` optimizers (slots `.../weights/part_0/Ftrl`), a
  `partitioner` for the model's variables (by default one part, unless the
  cluster has parameter servers), losses summed (SUM) by default.

Both name the model's variables `linear/linear_model/<column>/weights` and
`linear/linear_model/bias_weights`, so a model_dir written by tf.estimator
2.15 restores here and the reverse.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple, Union

import tensorflow as tf
import tf_keras

from estimator_lite.canned import default_heads
from estimator_lite.canned import estimator_rules
from estimator_lite.canned import linear_sdca
from estimator_lite.canned import optimizers
from estimator_lite.canned.estimator_rules import SUM_OVER_BATCH_SIZE
from estimator_lite.canned.estimator_rules import V1_SUM
from estimator_lite.canned.linear_model import LinearModel
from estimator_lite.canned.linear_model import expand_variables
from estimator_lite.canned.linear_model import fraction_of_zero
from estimator_lite.estimator import Estimator
from estimator_lite.estimator_spec import EstimatorSpec
from estimator_lite.mode_keys import ModeKeys
from estimator_lite.run_config import RunConfig
from estimator_lite.warm_starting import WarmStartSettings
from estimator_lite._util import tf_internals

# tf.estimator's learning rate for a linear model's optimizer given by name,
# and the cap of the default optimizer's rate (which is lower with more than
# 25 columns).
LEARNING_RATE = 0.2

WarmStartFrom = Union[None, str, WarmStartSettings]
OptimizerArg = Any


def _default_optimizer_v2(feature_columns: Iterable[Any]) -> Any:
  return tf_keras.optimizers.legacy.Ftrl(
      learning_rate=estimator_rules.linear_learning_rate(
          len(list(feature_columns)), LEARNING_RATE))


def _default_optimizer_v1(feature_columns: Iterable[Any]) -> Any:
  return tf.compat.v1.train.FtrlOptimizer(
      learning_rate=estimator_rules.linear_learning_rate(
          len(list(feature_columns)), LEARNING_RATE))


def _summarize(bias: Any, units: int, variables: List[Any]) -> None:
  # tf.estimator's training summaries of a linear model: its bias (a scalar
  # for one unit) and how many of its weights are exactly zero (Ftrl's L1
  # makes them so).
  if units > 1:
    tf.compat.v1.summary.histogram("bias", bias)
  else:
    tf.compat.v1.summary.scalar("bias", bias[0] if isinstance(bias, tf.Variable) else bias[0][0])
  tf.compat.v1.summary.scalar("fraction_of_zero_weights", fraction_of_zero(variables))


def build_linear_logits(units: int, feature_columns: Iterable[Any], sparse_combiner: str = "sum",
                        features: Optional[Dict[str, Any]] = None,
                        scope_name: str = "linear") -> Tuple[tf.Tensor, List[Any]]:
  """Builds a v2 linear model's logits and returns them with its trainable variables.

  The top-level Linear estimators and the top-level DNNLinearCombined
  estimators build their linear part with this: variables
  `<scope_name>/linear_model/<column>/weights` and
  `<scope_name>/linear_model/bias_weights` (tf.estimator 2.15's names), and
  the `bias` and `fraction_of_zero_weights` training summaries.

  Args:
    units: the width of the logits (the head's `logits_dimension`).
    feature_columns: v2 feature columns (DenseColumn or CategoricalColumn).
    sparse_combiner: "sum", "mean" or "sqrtn": how a categorical column's
      several ids in one example combine.
    features: feature name -> Tensor or SparseTensor.
    scope_name: the variable scope the model's scope `linear_model` is in.

  Returns:
    (logits `[batch_size, units]`, the model's variables: column weights then
    bias), the variables to pass to the optimizer.

  Raises:
    ValueError: a v1-only feature column (tf.estimator's text); invalid
      columns or a missing feature (see `LinearModel`).
  """
  feature_columns = tuple(feature_columns)
  estimator_rules.check_v2_feature_columns(feature_columns)
  model = LinearModel(feature_columns=feature_columns, units=units,
                      sparse_combiner=sparse_combiner, name=f"{scope_name}/linear_model")
  logits = model(features if features is not None else {})
  variables = model.variables
  bias = model.bias
  _summarize(bias, units, [variable for variable in variables if variable is not bias])
  return logits, variables


def linear_logit_fn_builder(units: int, feature_columns: Iterable[Any],
                            sparse_combiner: str = "sum") -> Callable[[Dict[str, Any]], tf.Tensor]:
  """Returns a logit_fn for a v1 linear model (tf.compat.v1.estimator.experimental's).

  The logit_fn builds the model in the current variable scope (the v1 Linear
  estimators call it inside `linear`, with their partitioner): variables
  `linear_model/<column>/weights` and `linear_model/bias_weights`, plus the
  `bias` and `fraction_of_zero_weights` summaries. v2 feature columns are
  handled by `LinearModel`; v1-only ones (v1 `shared_embedding_columns`) by
  `tf.compat.v1.feature_column.linear_model`, as tf.estimator did.

  Args:
    units: the width of the logits.
    feature_columns: feature columns (DenseColumn or CategoricalColumn).
    sparse_combiner: "sum", "mean" or "sqrtn": how a categorical column's
      several ids in one example combine.

  Returns:
    `logit_fn(features) -> logits`, `features` a dict of feature name to
    Tensor or SparseTensor and the logits `[batch_size, units]`.
  """
  feature_columns = tuple(feature_columns)

  def linear_logit_fn(features: Dict[str, Any]) -> tf.Tensor:
    """Builds the linear model on `features` and returns its logits.

    Args:
      features: feature name -> Tensor or SparseTensor.

    Returns:
      The logits, `[batch_size, units]`.
    """
    if tf_internals.is_feature_column_v2(feature_columns):
      model = LinearModel(feature_columns=feature_columns, units=units,
                          sparse_combiner=sparse_combiner, name="linear_model")
      logits = model(features)
      bias = expand_variables([model.bias])
      variables = [variable for variable in model.variables
                   if not any(variable is part for part in bias)]
    else:
      columns_to_variables: Dict[Any, Any] = {}
      logits = tf.compat.v1.feature_column.linear_model(
          features, feature_columns, units=units, sparse_combiner=sparse_combiner,
          cols_to_vars=columns_to_variables)
      bias = columns_to_variables.pop("bias")
      variables = expand_variables(columns_to_variables.values())
    _summarize(bias, units, variables)
    return logits

  return linear_logit_fn


def _linear_model_fn_v2(features: Any, labels: Any, mode: str, head: Any,
                        feature_columns: Tuple[Any, ...], optimizer: OptimizerArg,
                        config: Optional[RunConfig], sparse_combiner: str = "sum",
                        weight_column: Any = None,
                        sdca_loss_type: Optional[str] = None) -> EstimatorSpec:
  """The model_fn of the top-level Linear estimators."""
  del config
  estimator_rules.check_features(features, feature_columns)
  if isinstance(optimizer, linear_sdca.LinearSDCA):
    return linear_sdca.sdca_model_fn(
        features, labels, mode, head, feature_columns, optimizer, weight_column=weight_column,
        loss_type=sdca_loss_type, model_name="linear/linear_model")
  logits, trainable_variables = build_linear_logits(
      units=head.logits_dimension, feature_columns=feature_columns,
      sparse_combiner=sparse_combiner, features=features)
  train_optimizer = None
  if mode == ModeKeys.TRAIN:
    train_optimizer = optimizers.get_optimizer_instance_v2(
        optimizer or _default_optimizer_v2(feature_columns), learning_rate=LEARNING_RATE)
    estimator_rules.count_steps_with_global_step(train_optimizer)
  return head.create_estimator_spec(
      features=features, mode=mode, labels=labels, optimizer=train_optimizer,
      trainable_variables=trainable_variables, logits=logits)


def _linear_model_fn_v1(features: Any, labels: Any, mode: str, head: Any,
                        feature_columns: Tuple[Any, ...], optimizer: OptimizerArg,
                        partitioner: Any, config: Optional[RunConfig],
                        sparse_combiner: str = "sum", weight_column: Any = None,
                        sdca_loss_type: Optional[str] = None) -> EstimatorSpec:
  """The model_fn of the compat.v1 Linear estimators."""
  estimator_rules.check_features(features, feature_columns)
  num_ps_replicas = config.num_ps_replicas if config else 0
  # With no parameter servers the default partitioner makes one part; with
  # some, up to one a server for variables of 64 MiB or more.
  partitioner = partitioner or tf.compat.v1.min_max_variable_partitioner(
      max_partitions=num_ps_replicas, min_slice_size=64 << 20)
  with tf.compat.v1.variable_scope("linear", values=tuple(features.values()),
                                   partitioner=partitioner):
    if isinstance(optimizer, linear_sdca.LinearSDCA):
      return linear_sdca.sdca_model_fn(
          features, labels, mode, head, feature_columns, optimizer,
          weight_column=weight_column, loss_type=sdca_loss_type,
          model_name=linear_sdca.v1_model_name(head))
    logit_fn = linear_logit_fn_builder(units=head.logits_dimension,
                                       feature_columns=feature_columns,
                                       sparse_combiner=sparse_combiner)
    logits = logit_fn(features)
    train_optimizer = optimizers.get_optimizer_instance(
        optimizer or _default_optimizer_v1(feature_columns), learning_rate=LEARNING_RATE)
    scope = tf.compat.v1.get_default_graph().get_name_scope()
    return head.create_estimator_spec(
        features=features, mode=mode, labels=labels, logits=logits,
        train_op_fn=estimator_rules.v1_train_op_fn(train_optimizer, f"{scope}/head/"))


def _linear_model_fn(head: Any, feature_columns: Iterable[Any], optimizer: OptimizerArg,
                     sparse_combiner: str, v1: bool = False, partitioner: Any = None,
                     weight_column: Any = None,
                     sdca_loss_type: Optional[str] = None) -> Callable[..., EstimatorSpec]:
  """The model_fn a Linear estimator of this module hands to `Estimator`.

  Args:
    head: the head turning the logits into the spec.
    feature_columns: the linear model's feature columns (read once, here).
    optimizer: the constructor's optimizer argument.
    sparse_combiner: "sum", "mean" or "sqrtn".
    v1: whether it is a compat.v1 estimator (v1 optimizer, partitioner).
    partitioner: the v1 estimator's variable partitioner, or None.
    weight_column: the head's weight column (what a `LinearSDCA` weighs
      examples with), or None.
    sdca_loss_type: the loss a `LinearSDCA` trains with ("logistic_loss",
      "squared_loss"); None: the one the head implies.

  Returns:
    `model_fn(features, labels, mode, config) -> EstimatorSpec`.
  """
  columns = tuple(feature_columns or [])

  def model_fn(features: Any, labels: Any, mode: str, config: RunConfig) -> EstimatorSpec:
    if v1:
      return _linear_model_fn_v1(
          features=features, labels=labels, mode=mode, head=head, feature_columns=columns,
          optimizer=optimizer, partitioner=partitioner, config=config,
          sparse_combiner=sparse_combiner, weight_column=weight_column,
          sdca_loss_type=sdca_loss_type)
    return _linear_model_fn_v2(
        features=features, labels=labels, mode=mode, head=head, feature_columns=columns,
        optimizer=optimizer, config=config, sparse_combiner=sparse_combiner,
        weight_column=weight_column, sdca_loss_type=sdca_loss_type)

  return model_fn


_INPUTS_DOC = """
  The input_fn of `train` and `evaluate` gives features holding, else the
  model raises an error naming the missing key:

  * the `weight_column`'s feature, if one is set (a dense Tensor);
  * each feature column's input: a Tensor (or SparseTensor, for categorical
    columns) under the column's key; a crossed or weighted column needs the
    features of each column it is built from.
"""


class LinearClassifier(Estimator):
  """A linear classifier: one weight per feature value, a bias, softmax (or sigmoid) cross entropy.

  Two classes by default (a logistic regression); `n_classes` > 2 trains a
  multinomial one. Labels are class ids in [0, n_classes), or strings of
  `label_vocabulary`.

  ```python
  age = tf.feature_column.numeric_column("age")
  city = tf.feature_column.categorical_column_with_hash_bucket("city", 1000)
  classifier = estimator_lite.LinearClassifier(
      feature_columns=[age, city, tf.feature_column.crossed_column([city, "job"], 5000)],
      optimizer=tf_keras.optimizers.legacy.Ftrl(
          learning_rate=0.1, l1_regularization_strength=0.001))
  classifier.train(input_fn=train_input_fn, steps=1000)
  metrics = classifier.evaluate(input_fn=eval_input_fn)
  predictions = classifier.predict(input_fn=predict_input_fn)
  ```
  """ + _INPUTS_DOC

  def __init__(self, feature_columns: Iterable[Any], model_dir: Optional[str] = None,
               n_classes: int = 2, weight_column: Any = None,
               label_vocabulary: Optional[List[str]] = None, optimizer: OptimizerArg = "Ftrl",
               config: Optional[RunConfig] = None, warm_start_from: WarmStartFrom = None,
               loss_reduction: str = SUM_OVER_BATCH_SIZE, sparse_combiner: str = "sum") -> None:
    """Creates the classifier.

    Args:
      feature_columns: v2 feature columns (`tf.feature_column.*`; v1 ones
        work with `compat.v1.LinearClassifier`): numeric, bucketized,
        categorical (vocabulary, hash, identity), crossed, weighted,
        indicator or embedding columns.
      model_dir: where checkpoints and summaries go; an existing one resumes.
      n_classes: the number of classes, at least 2.
      weight_column: the feature name (or a `tf.feature_column.numeric_column`)
        of per-example loss weights.
      label_vocabulary: the string labels, in class-id order; without it
        labels are ids (or 0/1 floats for two classes).
      optimizer: 'Adagrad', 'Adam', 'Ftrl', 'RMSProp' or 'SGD' (learning rate
        0.2), a `tf_keras.optimizers.legacy` optimizer, or a callable returning
        one; None: Ftrl at min(0.2, 1 / sqrt(len(feature_columns))). Also an
        `estimator_lite.experimental.LinearSDCA`, to train with SDCA.
      config: a `RunConfig`.
      warm_start_from: a checkpoint (or its directory) to start the variables
        from, or a `WarmStartSettings`.
      loss_reduction: a `tf_keras.losses.Reduction` other than NONE: how the
        batch's losses make the training loss.
      sparse_combiner: "sum", "mean" or "sqrtn": how a categorical column's
        several values in one example combine.

    Raises:
      ValueError: `n_classes` < 2, or an invalid vocabulary or reduction (from
        the head); with a LinearSDCA, more than two classes, v1 feature
        columns or a `sparse_combiner` other than "sum".
    """
    feature_columns = tuple(feature_columns or [])
    linear_sdca.validate_for_classifier(feature_columns, n_classes, optimizer, sparse_combiner)
    head = default_heads.classifier_head(n_classes, weight_column, label_vocabulary, loss_reduction)
    super().__init__(model_fn=_linear_model_fn(head, feature_columns, optimizer, sparse_combiner,
                                               weight_column=weight_column,
                                               sdca_loss_type=linear_sdca.LOGISTIC_LOSS),
                     model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class LinearRegressor(Estimator):
  """A linear regressor: one weight per feature value and a bias, trained on mean squared error.

  ```python
  regressor = estimator_lite.LinearRegressor(
      feature_columns=[tf.feature_column.numeric_column("size"),
                       tf.feature_column.categorical_column_with_vocabulary_list(
                           "district", ["north", "south"])])
  regressor.train(input_fn=train_input_fn, steps=1000)
  metrics = regressor.evaluate(input_fn=eval_input_fn)
  ```
  """ + _INPUTS_DOC

  def __init__(self, feature_columns: Iterable[Any], model_dir: Optional[str] = None,
               label_dimension: int = 1, weight_column: Any = None,
               optimizer: OptimizerArg = "Ftrl", config: Optional[RunConfig] = None,
               warm_start_from: WarmStartFrom = None,
               loss_reduction: str = SUM_OVER_BATCH_SIZE, sparse_combiner: str = "sum") -> None:
    """Creates the regressor.

    Args:
      feature_columns: v2 feature columns (see `LinearClassifier`).
      model_dir: where checkpoints and summaries go; an existing one resumes.
      label_dimension: the number of targets an example has (the labels'
        last dimension).
      weight_column: the feature name (or a `tf.feature_column.numeric_column`)
        of per-example loss weights.
      optimizer: a name, a `tf_keras.optimizers.legacy` optimizer or a
        callable returning one (see `LinearClassifier`), or an
        `estimator_lite.experimental.LinearSDCA`, to train with SDCA.
      config: a `RunConfig`.
      warm_start_from: a checkpoint (or its directory) or a
        `WarmStartSettings`.
      loss_reduction: a `tf_keras.losses.Reduction` other than NONE.
      sparse_combiner: "sum", "mean" or "sqrtn".

    Raises:
      ValueError: an invalid `label_dimension` or reduction (from the head);
        with a LinearSDCA, a `label_dimension` above 1, v1 feature columns or
        a `sparse_combiner` other than "sum".
    """
    feature_columns = tuple(feature_columns or [])
    linear_sdca.validate_for_regressor(feature_columns, label_dimension, optimizer,
                                       sparse_combiner)
    head = default_heads.regression_head(label_dimension, weight_column, loss_reduction)
    super().__init__(model_fn=_linear_model_fn(head, feature_columns, optimizer, sparse_combiner,
                                               weight_column=weight_column,
                                               sdca_loss_type=linear_sdca.SQUARED_LOSS),
                     model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class LinearEstimator(Estimator):
  """A linear model with a head of your choice (multi-label, Poisson, several heads, ...).

  ```python
  estimator = estimator_lite.LinearEstimator(
      head=estimator_lite.MultiLabelHead(n_classes=3),
      feature_columns=[tf.feature_column.categorical_column_with_hash_bucket("tag", 100)])
  estimator.train(input_fn=train_input_fn, steps=100)
  ```

  The head decides the loss, predictions and metrics; what the features must
  hold is as for `LinearClassifier`, with the head's weight column.
  """

  def __init__(self, head: Any, feature_columns: Iterable[Any], model_dir: Optional[str] = None,
               optimizer: OptimizerArg = "Ftrl", config: Optional[RunConfig] = None,
               sparse_combiner: str = "sum", warm_start_from: WarmStartFrom = None) -> None:
    """Creates the estimator.

    Args:
      head: a `Head` (e.g. `estimator_lite.MultiLabelHead(n_classes=3)`).
      feature_columns: v2 feature columns (see `LinearClassifier`).
      model_dir: where checkpoints and summaries go; an existing one resumes.
      optimizer: a name, a `tf_keras.optimizers.legacy` optimizer or a
        callable returning one (see `LinearClassifier`).
      config: a `RunConfig`.
      sparse_combiner: "sum", "mean" or "sqrtn".
      warm_start_from: a checkpoint (or its directory) or a
        `WarmStartSettings`.
    """
    super().__init__(model_fn=_linear_model_fn(head, feature_columns, optimizer, sparse_combiner),
                     model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class LinearClassifierV1(Estimator):
  """tf.compat.v1.estimator.LinearClassifier: a linear classifier trained with a v1 optimizer.

  As `LinearClassifier`, except: `optimizer` is a `tf.compat.v1.train`
  optimizer (or its name), the training loss is the batch's SUM by default,
  the model's variables go through `partitioner`, and feature columns may be
  v1-only ones. Checkpoints match tf.estimator 2.15's v1 classifier
  (`linear/linear_model/<column>/weights`, slots
  `linear/linear_model/<column>/weights/part_0/Ftrl`, ...).
  """ + _INPUTS_DOC

  def __init__(self, feature_columns: Iterable[Any], model_dir: Optional[str] = None,
               n_classes: int = 2, weight_column: Any = None,
               label_vocabulary: Optional[List[str]] = None, optimizer: OptimizerArg = "Ftrl",
               config: Optional[RunConfig] = None, partitioner: Any = None,
               warm_start_from: WarmStartFrom = None, loss_reduction: str = V1_SUM,
               sparse_combiner: str = "sum") -> None:
    """Creates the classifier.

    Args:
      feature_columns: feature columns (`tf.compat.v1.feature_column.*` or
        `tf.feature_column.*`).
      model_dir: where checkpoints and summaries go; an existing one resumes.
      n_classes: the number of classes, at least 2.
      weight_column: the feature name (or a numeric column) of per-example
        loss weights.
      label_vocabulary: the string labels, in class-id order.
      optimizer: 'Adagrad', 'Adam', 'Ftrl', 'RMSProp' or 'SGD' (learning rate
        0.2), a `tf.compat.v1.train.Optimizer`, or a callable returning one;
        None: `FtrlOptimizer` at min(0.2, 1 / sqrt(len(feature_columns))).
        Also an `estimator_lite.experimental.LinearSDCA`, to train with SDCA.
      config: a `RunConfig`; its parameter servers set the default
        partitioning.
      partitioner: a variable partitioner for the model's variables.
      warm_start_from: a checkpoint (or its directory) or a
        `WarmStartSettings`.
      loss_reduction: a `tf.compat.v1.losses.Reduction` other than NONE:
        `SUM` (the default), `MEAN`, `SUM_OVER_BATCH_SIZE` or
        `SUM_BY_NONZERO_WEIGHTS`.
      sparse_combiner: "sum", "mean" or "sqrtn".

    Raises:
      ValueError: `n_classes` < 2, an invalid vocabulary, or a `loss_reduction`
        of NONE; with a LinearSDCA, more than two classes, v1 feature columns
        or a `sparse_combiner` other than "sum".
    """
    feature_columns = tuple(feature_columns or [])
    linear_sdca.validate_for_classifier(feature_columns, n_classes, optimizer, sparse_combiner)
    head = default_heads.v1_classifier_head(n_classes, weight_column, label_vocabulary,
                                            loss_reduction)
    super().__init__(model_fn=_linear_model_fn(head, feature_columns, optimizer, sparse_combiner,
                                               v1=True, partitioner=partitioner,
                                               weight_column=weight_column,
                                               sdca_loss_type=linear_sdca.LOGISTIC_LOSS),
                     model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class LinearRegressorV1(Estimator):
  """tf.compat.v1.estimator.LinearRegressor: a linear regressor trained with a v1 optimizer.

  As `LinearRegressor`, with `LinearClassifierV1`'s v1 differences (v1
  optimizers, SUM loss by default, `partitioner`, v1 feature columns).
  """ + _INPUTS_DOC

  def __init__(self, feature_columns: Iterable[Any], model_dir: Optional[str] = None,
               label_dimension: int = 1, weight_column: Any = None,
               optimizer: OptimizerArg = "Ftrl", config: Optional[RunConfig] = None,
               partitioner: Any = None, warm_start_from: WarmStartFrom = None,
               loss_reduction: str = V1_SUM, sparse_combiner: str = "sum") -> None:
    """Creates the regressor.

    Args:
      feature_columns: feature columns (v1 or v2).
      model_dir: where checkpoints and summaries go; an existing one resumes.
      label_dimension: the number of targets an example has.
      weight_column: the feature name (or a numeric column) of per-example
        loss weights.
      optimizer: a name, a `tf.compat.v1.train.Optimizer` or a callable
        returning one (see `LinearClassifierV1`).
      config: a `RunConfig`.
      partitioner: a variable partitioner for the model's variables.
      warm_start_from: a checkpoint (or its directory) or a
        `WarmStartSettings`.
      loss_reduction: a `tf.compat.v1.losses.Reduction` other than NONE:
        `SUM` (the default), `MEAN`, `SUM_OVER_BATCH_SIZE` or
        `SUM_BY_NONZERO_WEIGHTS`.
      sparse_combiner: "sum", "mean" or "sqrtn".

    Raises:
      ValueError: an invalid `label_dimension` or reduction; with a
        LinearSDCA, a `label_dimension` above 1, v1 feature columns or a
        `sparse_combiner` other than "sum".
    """
    feature_columns = tuple(feature_columns or [])
    linear_sdca.validate_for_regressor(feature_columns, label_dimension, optimizer,
                                       sparse_combiner)
    head = default_heads.v1_regression_head(label_dimension, weight_column, loss_reduction)
    super().__init__(model_fn=_linear_model_fn(head, feature_columns, optimizer, sparse_combiner,
                                               v1=True, partitioner=partitioner,
                                               weight_column=weight_column,
                                               sdca_loss_type=linear_sdca.SQUARED_LOSS),
                     model_dir=model_dir, config=config, warm_start_from=warm_start_from)


class LinearEstimatorV1(Estimator):
  """tf.compat.v1.estimator.LinearEstimator: a linear model, a head of your choice, v1 optimizer.

  As `LinearEstimator`, with `LinearClassifierV1`'s v1 differences. The head
  is one of estimator_lite's heads; its train op is the v1 optimizer's
  `minimize`.
  """

  def __init__(self, head: Any, feature_columns: Iterable[Any], model_dir: Optional[str] = None,
               optimizer: OptimizerArg = "Ftrl", config: Optional[RunConfig] = None,
               partitioner: Any = None, sparse_combiner: str = "sum",
               warm_start_from: WarmStartFrom = None) -> None:
    """Creates the estimator.

    Args:
      head: a `Head`.
      feature_columns: feature columns (v1 or v2).
      model_dir: where checkpoints and summaries go; an existing one resumes.
      optimizer: a name, a `tf.compat.v1.train.Optimizer` or a callable
        returning one (see `LinearClassifierV1`).
      config: a `RunConfig`.
      partitioner: a variable partitioner for the model's variables.
      sparse_combiner: "sum", "mean" or "sqrtn".
      warm_start_from: a checkpoint (or its directory) or a
        `WarmStartSettings`.
    """
    super().__init__(model_fn=_linear_model_fn(head, feature_columns, optimizer, sparse_combiner,
                                               v1=True, partitioner=partitioner),
                     model_dir=model_dir, config=config, warm_start_from=warm_start_from)
