"""Head: the interface between a model's logits and an Estimator (tf.estimator 2.15's `Head`).

A head turns logits into predictions, a training loss, evaluation metrics,
export signatures and (with an optimizer or a `train_op_fn`) a train op, and
wraps them in an `EstimatorSpec` for the mode a model_fn was called in. The
canned estimators are a logit function plus a head; a user's own model_fn can
use one the same way:

```python
def model_fn(features, labels, mode):
  head = estimator_lite.MultiClassHead(n_classes=3)
  layer = tf_keras.layers.Dense(head.logits_dimension)
  logits = layer(features["x"])
  optimizer = tf_keras.optimizers.legacy.Adagrad(0.1)
  optimizer.iterations = tf.compat.v1.train.get_or_create_global_step()
  return head.create_estimator_spec(
      features=features, mode=mode, logits=logits, labels=labels,
      optimizer=optimizer, trainable_variables=layer.trainable_weights)
```

The rules every head shares live beside this module: label checks
(`labels.py`), example weights (`weights.py`), argument checks
(`validation.py`), loss reduction (`losses.py`), class names and lookup tables
(`classes.py`), the train op and loss summaries (`train_op.py`), the
mode-by-mode spec and signatures (`spec_builder.py`) and the metrics at
probability thresholds (`threshold_metrics.py`); `single_head.py` builds a
one-label head's loss, metrics and spec from them.

How tf.estimator 2.15's v1 heads (`tf.compat.v1.estimator`'s canned
estimators, built on its older `canned/head.py`) differed from these; the
compat.v1 canned estimators wrap these heads to do as v1 did
(`estimator_lite/canned/v1_head.py`):

* v1 reduced the training loss with any `tf.compat.v1.losses.Reduction`
  (SUM by default); these heads take only Keras 2 reductions, so the v1
  wrapper trains them with SUM and rescales for MEAN and
  SUM_BY_NONZERO_WEIGHTS.
* v1 heads built their train op with `train_op_fn(loss)` only (a
  `tf.compat.v1.train` optimizer's `minimize`); pass it as `train_op_fn`.
* v1 binary heads computed `auc` and `auc_precision_recall` with
  `tf.compat.v1.metrics.auc` (trapezoidal summation, where Keras's AUC
  interpolates the PR curve), and wrote an `average_loss` training summary
  under SUM; the v1 wrapper does both. These heads use Keras 2 metrics, as
  2.15's v2 heads did (thresholded metrics count `> threshold`; v1 counted
  `>= threshold`).
* v1's label range message read "Labels must <= n_classes - 1".
"""
from __future__ import annotations

import abc
from typing import Any, Callable, Dict, Mapping, Optional, Sequence

import tensorflow as tf

from estimator_lite.estimator_spec import EstimatorSpec

# TensorFlow Serving's default signature; the other three are tf.estimator's
# own names for the extra signatures a head exports.
DEFAULT_SERVING_KEY = tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY
CLASSIFY_SERVING_KEY = "classification"
REGRESS_SERVING_KEY = "regression"
PREDICT_SERVING_KEY = "predict"

# What a head's methods take: labels and logits as tensors (or dicts of them
# for MultiHead), features as a dict of name to Tensor/SparseTensor.
Features = Optional[Mapping[str, Any]]
RegularizationLosses = Optional[Sequence[Any]]


class Head(abc.ABC):
  """The top of a model: given logits, its loss, predictions, metrics and EstimatorSpec.

  Subclasses set `name`, `logits_dimension` and `loss_reduction` and
  implement `loss`, `predictions`, `metrics`, `update_metrics` and
  `create_estimator_spec`. Each method builds ops in the current graph (or
  runs eagerly), so a head object can be reused across the graphs an
  Estimator builds for train, evaluate and predict.
  """

  @property
  @abc.abstractmethod
  def name(self) -> Optional[str]:
    """The head's name, or None.

    Returns:
      A string that suffixes its metric and summary keys (`"auc/<name>"`), or
      None for no suffix.
    """
    raise NotImplementedError("Calling an abstract method.")

  @property
  @abc.abstractmethod
  def logits_dimension(self) -> int:
    """How many logits the head expects per example.

    Returns:
      The size of the last dimension of `logits` (`[batch_size,
      logits_dimension]` in the usual case): the number of classes, labels or
      regression targets.
    """
    raise NotImplementedError("Calling an abstract method.")

  @property
  @abc.abstractmethod
  def loss_reduction(self) -> str:
    """How the training loss is reduced over the batch.

    Returns:
      A `tf_keras.losses.Reduction` value other than `NONE` (e.g.
      `SUM_OVER_BATCH_SIZE`, `SUM`).
    """
    raise NotImplementedError("Calling an abstract method.")

  @abc.abstractmethod
  def loss(self, labels: Any, logits: Any, features: Features = None, mode: Optional[str] = None,
           regularization_losses: RegularizationLosses = None) -> Any:
    """Builds the training loss.

    Args:
      labels: a `Tensor` of labels, or for `MultiHead` a dict of head name to
        labels.
      logits: the logits `Tensor` (`[D0, ... DN, logits_dimension]`).
      features: the features dict; the example weights are read from it.
      mode: a `ModeKeys` value, for heads whose loss depends on the mode.
      regularization_losses: scalar losses added to the reduced loss.

    Returns:
      A scalar `Tensor`: the reduced, weighted loss plus the regularization.
    """
    raise NotImplementedError("Calling an abstract method.")

  @abc.abstractmethod
  def predictions(self, logits: Any, keys: Optional[Sequence[str]] = None) -> Dict[Any, Any]:
    """Builds the predictions for `logits`.

    Args:
      logits: the logits `Tensor`.
      keys: `PredictionKeys` values to build; None builds all of the head's.

    Returns:
      A dict of prediction key to `Tensor`.
    """
    raise NotImplementedError("Calling an abstract method.")

  @abc.abstractmethod
  def metrics(self, regularization_losses: RegularizationLosses = None) -> Dict[str, Any]:
    """Creates the head's evaluation metric objects, not yet updated.

    Args:
      regularization_losses: when given, a `regularization_loss` mean metric
        is created too.

    Returns:
      A dict of metric key (`MetricKeys`, suffixed by the head's name) to a
      Keras metric object.
    """
    raise NotImplementedError("Calling an abstract method.")

  @abc.abstractmethod
  def update_metrics(self, eval_metrics: Dict[str, Any], features: Features, logits: Any,
                     labels: Any, mode: Optional[str] = None,
                     regularization_losses: RegularizationLosses = None) -> Dict[str, Any]:
    """Updates the metrics made by `metrics()` with one batch.

    Args:
      eval_metrics: the dict `metrics()` returned.
      features: the features dict (example weights are read from it).
      logits: the logits `Tensor`.
      labels: the labels `Tensor`.
      mode: a `ModeKeys` value; tf.estimator's heads ignore it (and their
        `update_metrics` do not take it).
      regularization_losses: scalar losses for the `regularization_loss`
        metric.

    Returns:
      `eval_metrics`, updated.
    """
    raise NotImplementedError("Calling an abstract method.")

  def _summary_key(self, key: str) -> str:
    """`key` suffixed by the head's name, as metric and summary keys are."""
    return summary_key(self.name, key)

  def create_estimator_spec(self, features: Features, mode: str, logits: Any, labels: Any = None,
                            optimizer: Any = None, trainable_variables: Optional[Sequence[Any]] = None,
                            train_op_fn: Optional[Callable[[Any], Any]] = None,
                            update_ops: Optional[Sequence[Any]] = None,
                            regularization_losses: RegularizationLosses = None) -> EstimatorSpec:
    """Builds the `EstimatorSpec` a model_fn returns for `mode`.

    Pass the arguments by name. PREDICT needs only features and logits; EVAL
    also labels; TRAIN also exactly one of `optimizer` (with
    `trainable_variables`) or `train_op_fn`.

    Args:
      features: the features dict.
      mode: a `ModeKeys` value.
      logits: the logits `Tensor`.
      labels: the labels `Tensor` (TRAIN and EVAL).
      optimizer: a Keras 2 `OptimizerV2` (`tf_keras.optimizers.legacy.*`);
        the train op is `optimizer.get_updates(loss, trainable_variables)[0]`.
        Set `optimizer.iterations` to the global step first so that training
        advances it.
      trainable_variables: list or tuple of the variables `optimizer` trains.
      train_op_fn: used when `optimizer` is None: called with the scalar loss,
        returns the train op (e.g. a `tf.compat.v1.train` optimizer's
        `minimize`). `lambda _: tf.no_op()` leaves training to the caller.
      update_ops: list or tuple of ops run with each training step (e.g.
        batch normalization's moving averages).
      regularization_losses: scalar losses added to the training loss.

    Returns:
      An `EstimatorSpec` for `mode`.

    Raises:
      NotImplementedError: a subclass that does not override this method.
    """
    raise NotImplementedError(
        "Subclasses of Head must implement `create_estimator_spec()` or "
        "_create_tpu_estimator_spec(). Override create_estimator_spec(); "
        "estimator_lite.head.spec_builder.single_head_estimator_spec builds one "
        "from the other methods.")


def summary_key(head_name: Optional[str], key: str) -> str:
  """A metric or summary key as a head named `head_name` reports it.

  Args:
    head_name: the head's name, or None.
    key: a `MetricKeys` value.

  Returns:
    `"<key>/<head_name>"`, or `key` when the head has no name.
  """
  return f"{key}/{head_name}" if head_name else key
