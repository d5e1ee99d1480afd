"""The train op a head builds from its loss, and the loss summaries it writes in TRAIN."""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import tensorflow as tf
import tf_keras

from estimator_lite.canned.metric_keys import MetricKeys
from estimator_lite.head import validation


def create_estimator_spec_train_op(
    head_name: Optional[str], optimizer: Any = None,
    trainable_variables: Optional[Sequence[Any]] = None,
    train_op_fn: Optional[Callable[[Any], Any]] = None,
    update_ops: Optional[Sequence[Any]] = None, regularized_training_loss: Any = None,
    loss_reduction: str = tf_keras.losses.Reduction.SUM_OVER_BATCH_SIZE) -> Any:
  """Builds the train op, under the root name scope `training` (Keras's).

  With an `optimizer`, the op is `optimizer.get_updates(loss,
  trainable_variables)[0]`; under a distribution strategy with several
  replicas a SUM_OVER_BATCH_SIZE loss is first divided by their number, so
  that the summed gradients are the batch mean. Otherwise it is
  `train_op_fn(loss)`. `update_ops` are grouped with it.

  Args:
    head_name: the head's name (unused; kept for tf.estimator's signature).
    optimizer: a Keras 2 optimizer, or None.
    trainable_variables: list or tuple of the variables to train (with
      `optimizer`).
    train_op_fn: called with the loss when `optimizer` is None.
    update_ops: list or tuple of ops to run with each step, or None.
    regularized_training_loss: the scalar loss to minimize.
    loss_reduction: the head's loss reduction.

  Returns:
    The train op.

  Raises:
    ValueError: both or neither of `optimizer` and `train_op_fn`, a
      non-Keras optimizer, or `trainable_variables`/`update_ops` not a list or
      tuple (tf.estimator's texts).
  """
  del head_name
  validation.validate_update_ops(update_ops)
  with tf.compat.v1.name_scope(""):  # back to the root, whatever scope the head is in
    with tf.compat.v1.name_scope("training"):
      if optimizer is not None:
        if train_op_fn is not None:
          raise ValueError(
              "train_op_fn and optimizer cannot both be set. Pass one: an optimizer "
              "(with trainable_variables) or a train_op_fn.")
        validation.validate_v2_optimizer(optimizer)
        validation.validate_trainable_variables(trainable_variables)
        if loss_reduction == tf_keras.losses.Reduction.SUM_OVER_BATCH_SIZE:
          num_replicas = tf.distribute.get_strategy().num_replicas_in_sync
          if num_replicas > 1:
            regularized_training_loss *= (1. / num_replicas)
        train_op = optimizer.get_updates(regularized_training_loss, trainable_variables)[0]
      elif train_op_fn is not None:
        train_op = train_op_fn(regularized_training_loss)
      else:
        raise ValueError(
            "train_op_fn and optimizer cannot both be None. In TRAIN mode pass an "
            "optimizer (with trainable_variables) or a train_op_fn.")
      if update_ops is not None:
        train_op = tf.group(train_op, *update_ops)
      return train_op


def create_estimator_spec_summary(regularized_training_loss: Any,
                                  regularization_losses: Optional[Sequence[Any]] = None,
                                  summary_key_fn: Optional[Callable[[str], str]] = None) -> None:
  """Writes the `loss` (and `regularization_loss`) scalar summaries of a training step.

  Args:
    regularized_training_loss: the scalar training loss.
    regularization_losses: scalar losses, summed into `regularization_loss`.
    summary_key_fn: maps a `MetricKeys` value to the summary tag (a named
      head suffixes its name).
  """
  with tf.compat.v1.name_scope(""):
    loss_key = summary_key_fn(MetricKeys.LOSS) if summary_key_fn else MetricKeys.LOSS
    tf.compat.v1.summary.scalar(loss_key, regularized_training_loss)
    if regularization_losses is not None:
      regularization_loss = tf.math.add_n(list(regularization_losses))
      regularization_key = (summary_key_fn(MetricKeys.LOSS_REGULARIZATION)
                            if summary_key_fn else MetricKeys.LOSS_REGULARIZATION)
      tf.compat.v1.summary.scalar(regularization_key, regularization_loss)
