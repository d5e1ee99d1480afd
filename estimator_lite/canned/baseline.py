"""Baseline estimators: tf.estimator 2.15's Baseline{Classifier,Regressor,Estimator} and compat.v1's.

A baseline model has one trainable vector, `baseline/bias` of the head's
logits dimension, and ignores the feature values: its logits are that bias
for every example. Trained, it predicts the label distribution (a classifier)
or the label mean (a regressor), a floor any real model should beat, and a
quick check of an input pipeline.

```python
classifier = estimator_lite.BaselineClassifier(n_classes=3)
classifier.train(input_fn=train_input_fn, steps=100)
loss = classifier.evaluate(input_fn=eval_input_fn)["loss"]
```

The features still set the batch size (all of them must agree on it, the
weight column excepted) and the weight column's feature is read if one is
given. As in tf.estimator 2.15, the top-level classes train with a Keras 2
optimizer (checkpoint: `training/Ftrl/baseline/bias/accumulator`, ...; no
`iter`, the global step counts the steps) and reduce losses with
SUM_OVER_BATCH_SIZE; the compat.v1 classes (`...V1`) train with a
`tf.compat.v1.train` optimizer (`baseline/bias/Ftrl`) and sum the losses.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple

import tensorflow as tf

from estimator_lite.canned import optimizers
from estimator_lite.canned import default_heads
from estimator_lite.canned import estimator_rules
from estimator_lite.canned.estimator_rules import SUM_OVER_BATCH_SIZE
from estimator_lite.canned.estimator_rules import V1_SUM
from estimator_lite.estimator import Estimator
from estimator_lite.estimator_spec import EstimatorSpec
from estimator_lite.mode_keys import ModeKeys
from estimator_lite.run_config import RunConfig
from estimator_lite._util import tf_internals

# tf.estimator's learning rate for a baseline's optimizer given by name.
LEARNING_RATE = 0.3

OptimizerArg = Any


def _weight_column_key(weight_column: Any) -> Optional[str]:
  if weight_column is None:
    return None
  if isinstance(weight_column, str):
    return weight_column
  _, _, _, numeric_column = tf_internals.feature_column_classes()
  if not isinstance(weight_column, numeric_column):
    raise TypeError(
        "Weight column must be either a string or NumericColumn. Given type: "
        f"{type(weight_column)}. Pass the feature's name or "
        "tf.feature_column.numeric_column(name).")
  return str(weight_column.key)


def _dynamic_batch_size(feature: Any) -> tf.Tensor:
  # Read at run time, never folded into a constant: with a fully defined
  # static shape, tf.shape's constant would cut the logits off the input and
  # predict would never see the input end (tf.estimator 2.15 looped forever
  # there).
  if isinstance(feature, tf.SparseTensor):
    return tf.cast(feature.dense_shape[0], tf.int32)
  return tf.raw_ops.Shape(input=feature, out_type=tf.int32)[0]


def _batch_size_and_checks(features: Dict[str, Any],
                           weight_column_key: Optional[str]) -> Tuple[Any, List[Any]]:
  # Every feature's first dimension is the batch size; they must agree. The
  # weight feature is left out so that serving does not need it.
  estimator_rules.check_features(features)
  batch_size = None
  checks = []
  for key, feature in features.items():
    if key == weight_column_key:
      continue
    first_dim = _dynamic_batch_size(feature)
    if batch_size is None:
      batch_size = first_dim
    else:
      checks.append(tf.compat.v1.debugging.assert_equal(batch_size, first_dim))
  if batch_size is None:
    # tf.estimator failed here building tf.ones([None, n]): its type and text.
    raise TypeError(
        "Expected int32, but got None of type 'NoneType'. A baseline estimator "
        "takes its batch size from the features, but they have no key besides "
        f"the weight column ({sorted(features)}): return at least one feature "
        "from the input_fn.")
  return batch_size, checks


def _baseline_model_fn_v2(features: Any, labels: Any, mode: str, head: Any,
                          optimizer: OptimizerArg, weight_column: Any = None,
                          config: Optional[RunConfig] = None,
                          loss_reduction: str = SUM_OVER_BATCH_SIZE) -> EstimatorSpec:
  """The model_fn of the top-level Baseline estimators."""
  del config
  num_outputs = head.logits_dimension
  batch_size, checks = _batch_size_and_checks(features, _weight_column_key(weight_column))
  with tf.compat.v1.name_scope("baseline"):
    # The variable is made outside the checks: its initializer must not wait
    # for the input.
    bias = tf.Variable(initial_value=tf.zeros([num_outputs]), name="bias")
    with tf.control_dependencies(checks):
      logits = tf.math.multiply(bias, tf.ones([batch_size, num_outputs]))
  train_optimizer: Any = None
  if mode == ModeKeys.TRAIN:
    train_optimizer = optimizers.get_optimizer_instance_v2(optimizer, learning_rate=LEARNING_RATE)
    estimator_rules.count_steps_with_global_step(train_optimizer)

  def train_op_fn(loss: tf.Tensor) -> Any:
    # Each replica's gradient is summed across replicas: a per-replica mean
    # loss is divided by their number to give the global mean's gradient.
    if loss_reduction == SUM_OVER_BATCH_SIZE:
      num_replicas = tf.distribute.get_strategy().num_replicas_in_sync
      if num_replicas > 1:
        loss *= (1. / num_replicas)
    return train_optimizer.get_updates(loss, [bias])[0]

  return head.create_estimator_spec(
      features=features, mode=mode, logits=logits, labels=labels, train_op_fn=train_op_fn)


def _baseline_model_fn_v1(features: Any, labels: Any, mode: str, head: Any,
                          optimizer: OptimizerArg, weight_column: Any = None,
                          config: Optional[RunConfig] = None) -> EstimatorSpec:
  """The model_fn of the compat.v1 Baseline estimators."""
  del config
  num_outputs = head.logits_dimension
  batch_size, checks = _batch_size_and_checks(features, _weight_column_key(weight_column))
  with tf.compat.v1.variable_scope("baseline"):
    bias = tf.compat.v1.get_variable(
        "bias", shape=[num_outputs], initializer=tf.compat.v1.zeros_initializer())
    with tf.control_dependencies(checks):
      logits = tf.math.multiply(bias, tf.ones([batch_size, num_outputs]))

  def train_op_fn(loss: tf.Tensor) -> Any:
    train_optimizer = optimizers.get_optimizer_instance(optimizer, learning_rate=LEARNING_RATE)
    # tf.estimator's v1 heads minimized under the root scope `head`.
    return estimator_rules.v1_train_op_fn(train_optimizer, "head/")(loss)

  return head.create_estimator_spec(
      features=features, mode=mode, logits=logits, labels=labels, train_op_fn=train_op_fn)


def _baseline_model_fn(head: Any, optimizer: OptimizerArg, weight_column: Any = None,
                       loss_reduction: str = SUM_OVER_BATCH_SIZE,
                       v1: bool = False) -> Callable[..., EstimatorSpec]:
  """The model_fn a Baseline estimator of this module hands to `Estimator`.

  Args:
    head: the head turning the logits into the spec.
    optimizer: the constructor's optimizer argument.
    weight_column: the weight feature, left out of the batch-size checks.
    loss_reduction: the v2 head's reduction (for the replicas' gradients).
    v1: whether it is a compat.v1 estimator (v1 optimizer, `get_variable`).

  Returns:
    `model_fn(features, labels, mode, config) -> EstimatorSpec`.
  """
  def model_fn(features: Any, labels: Any, mode: str, config: RunConfig) -> EstimatorSpec:
    if v1:
      return _baseline_model_fn_v1(
          features=features, labels=labels, mode=mode, head=head, optimizer=optimizer,
          weight_column=weight_column, config=config)
    return _baseline_model_fn_v2(
        features=features, labels=labels, mode=mode, head=head, optimizer=optimizer,
        weight_column=weight_column, config=config, loss_reduction=loss_reduction)
  return model_fn


class BaselineClassifier(Estimator):
  """A classifier that learns its labels' class distribution and predicts it for every example.

  ```python
  classifier = estimator_lite.BaselineClassifier(n_classes=3)
  classifier.train(input_fn=train_input_fn, steps=100)
  classifier.evaluate(input_fn=eval_input_fn)["accuracy"]  # the majority-class rate
  ```

  The input_fn gives features (their values are unused, but they set the
  batch size) and, with a `weight_column`, that feature.
  """

  def __init__(self, model_dir: Optional[str] = None, n_classes: int = 2,
               weight_column: Any = None, label_vocabulary: Optional[List[str]] = None,
               optimizer: OptimizerArg = "Ftrl", config: Optional[RunConfig] = None,
               loss_reduction: str = SUM_OVER_BATCH_SIZE) -> None:
    """Creates the classifier.

    Args:
      model_dir: where checkpoints and summaries go; an existing one resumes.
      n_classes: the number of classes, at least 2.
      weight_column: the feature name (or a `tf.feature_column.numeric_column`)
        of per-example loss weights.
      label_vocabulary: the string labels, in class-id order; without it
        labels are class ids.
      optimizer: 'Adagrad', 'Adam', 'Ftrl', 'RMSProp' or 'SGD' (learning rate
        0.3), a `tf_keras.optimizers.legacy` optimizer, or a callable
        returning one.
      config: a `RunConfig`.
      loss_reduction: a `tf_keras.losses.Reduction` other than NONE.

    Raises:
      ValueError: `n_classes` < 2, or an invalid vocabulary or reduction (from
        the head).
    """
    head = default_heads.classifier_head(n_classes, weight_column, label_vocabulary,
                                         loss_reduction)
    super().__init__(model_fn=_baseline_model_fn(head, optimizer, weight_column, loss_reduction),
                     model_dir=model_dir, config=config)


class BaselineRegressor(Estimator):
  """A regressor that learns the mean of its labels and predicts it for every example.

  ```python
  regressor = estimator_lite.BaselineRegressor()
  regressor.train(input_fn=train_input_fn, steps=100)
  regressor.evaluate(input_fn=eval_input_fn)["average_loss"]  # the labels' variance, about
  ```

  The input_fn gives features (setting the batch size) and, with a
  `weight_column`, that feature.
  """

  def __init__(self, model_dir: Optional[str] = None, label_dimension: int = 1,
               weight_column: Any = None, optimizer: OptimizerArg = "Ftrl",
               config: Optional[RunConfig] = None,
               loss_reduction: str = SUM_OVER_BATCH_SIZE) -> None:
    """Creates the regressor.

    Args:
      model_dir: where checkpoints and summaries go; an existing one resumes.
      label_dimension: the number of targets an example has.
      weight_column: the feature name (or a `tf.feature_column.numeric_column`)
        of per-example loss weights.
      optimizer: a name, a `tf_keras.optimizers.legacy` optimizer or a callable
        returning one (see `BaselineClassifier`).
      config: a `RunConfig`.
      loss_reduction: a `tf_keras.losses.Reduction` other than NONE.

    Raises:
      ValueError: an invalid `label_dimension` or reduction (from the head).
    """
    head = default_heads.regression_head(label_dimension, weight_column, loss_reduction)
    super().__init__(model_fn=_baseline_model_fn(head, optimizer, loss_reduction=loss_reduction),
                     model_dir=model_dir, config=config)


class BaselineEstimator(Estimator):
  """A baseline with a head of your choice: it learns the head's best constant logits.

  ```python
  estimator = estimator_lite.BaselineEstimator(head=estimator_lite.MultiLabelHead(n_classes=3))
  estimator.train(input_fn=train_input_fn, steps=100)
  ```

  With the head's weight column set, the features must hold it.
  """

  def __init__(self, head: Any, model_dir: Optional[str] = None,
               optimizer: OptimizerArg = "Ftrl", config: Optional[RunConfig] = None) -> None:
    """Creates the estimator.

    Args:
      head: a `Head` (e.g. `estimator_lite.MultiLabelHead(n_classes=3)`).
      model_dir: where checkpoints and summaries go; an existing one resumes.
      optimizer: a name, a `tf_keras.optimizers.legacy` optimizer or a callable
        returning one (see `BaselineClassifier`).
      config: a `RunConfig`.
    """
    super().__init__(model_fn=_baseline_model_fn(head, optimizer), model_dir=model_dir,
                     config=config)


class BaselineClassifierV1(Estimator):
  """tf.compat.v1.estimator.BaselineClassifier: `BaselineClassifier` with a v1 optimizer.

  Differences from `BaselineClassifier`: `optimizer` is a
  `tf.compat.v1.train` optimizer (or its name), and the training loss is the
  batch's SUM by default. Checkpoint: `baseline/bias`, `baseline/bias/Ftrl`,
  `baseline/bias/Ftrl_1`, as tf.estimator 2.15's.
  """

  def __init__(self, model_dir: Optional[str] = None, n_classes: int = 2,
               weight_column: Any = None, label_vocabulary: Optional[List[str]] = None,
               optimizer: OptimizerArg = "Ftrl", config: Optional[RunConfig] = None,
               loss_reduction: str = V1_SUM) -> None:
    """Creates the classifier.

    Args:
      model_dir: where checkpoints and summaries go; an existing one resumes.
      n_classes: the number of classes, at least 2.
      weight_column: the feature name (or a numeric column) of per-example
        loss weights.
      label_vocabulary: the string labels, in class-id order.
      optimizer: 'Adagrad', 'Adam', 'Ftrl', 'RMSProp' or 'SGD' (learning rate
        0.3), a `tf.compat.v1.train.Optimizer`, or a callable returning one.
      config: a `RunConfig`.
      loss_reduction: a `tf.compat.v1.losses.Reduction` other than NONE:
        `SUM` (the default), `MEAN`, `SUM_OVER_BATCH_SIZE` or
        `SUM_BY_NONZERO_WEIGHTS`.

    Raises:
      ValueError: `n_classes` < 2, an invalid vocabulary, or a `loss_reduction`
        of NONE.
    """
    head = default_heads.v1_classifier_head(n_classes, weight_column, label_vocabulary,
                                            loss_reduction)
    super().__init__(model_fn=_baseline_model_fn(head, optimizer, weight_column, v1=True),
                     model_dir=model_dir, config=config)


class BaselineRegressorV1(Estimator):
  """tf.compat.v1.estimator.BaselineRegressor: `BaselineRegressor`, v1 optimizer and SUM loss."""

  def __init__(self, model_dir: Optional[str] = None, label_dimension: int = 1,
               weight_column: Any = None, optimizer: OptimizerArg = "Ftrl",
               config: Optional[RunConfig] = None, loss_reduction: str = V1_SUM) -> None:
    """Creates the regressor.

    Args:
      model_dir: where checkpoints and summaries go; an existing one resumes.
      label_dimension: the number of targets an example has.
      weight_column: the feature name (or a numeric column) of per-example
        loss weights.
      optimizer: a name, a `tf.compat.v1.train.Optimizer` or a callable
        returning one (see `BaselineClassifierV1`).
      config: a `RunConfig`.
      loss_reduction: a `tf.compat.v1.losses.Reduction` other than NONE:
        `SUM` (the default), `MEAN`, `SUM_OVER_BATCH_SIZE` or
        `SUM_BY_NONZERO_WEIGHTS`.

    Raises:
      ValueError: an invalid `label_dimension` or reduction.
    """
    head = default_heads.v1_regression_head(label_dimension, weight_column, loss_reduction)
    super().__init__(model_fn=_baseline_model_fn(head, optimizer, v1=True), model_dir=model_dir,
                     config=config)


class BaselineEstimatorV1(Estimator):
  """tf.compat.v1.estimator.BaselineEstimator: `BaselineEstimator` with a v1 optimizer."""

  def __init__(self, head: Any, model_dir: Optional[str] = None,
               optimizer: OptimizerArg = "Ftrl", config: Optional[RunConfig] = None) -> None:
    """Creates the estimator.

    Args:
      head: a `Head`.
      model_dir: where checkpoints and summaries go; an existing one resumes.
      optimizer: a name, a `tf.compat.v1.train.Optimizer` or a callable
        returning one (see `BaselineClassifierV1`).
      config: a `RunConfig`.
    """
    super().__init__(model_fn=_baseline_model_fn(head, optimizer, v1=True), model_dir=model_dir,
                     config=config)
