"""Label and logits checks every head makes: shapes, ranks and class-id ranges.

As in tf.estimator 2.15: building a graph, static shapes are checked at once
(ValueError) and what is known only at run time by assertion ops, whose
messages are 2.15's texts followed by a fix hint (an InvalidArgumentError when
the step runs); executing eagerly, every check raises ValueError at once, with
2.15's eager text first.
"""
from __future__ import annotations

from typing import Any, Optional

import tensorflow as tf

LABEL_NONE_ERR_MSG = (
    "You must provide a labels Tensor. Given: None. "
    "Suggested troubleshooting steps: Check that your data contains your label "
    "feature. Check that your input_fn properly parses and returns labels.")

SPARSE_LABEL_ERR_MSG = (
    "SparseTensor labels are not supported. Labels must be a Tensor of shape "
    "[D0, D1, ..., DN, {0}], e.g. [batch_size, {0}].Suggested Fix (1): Check the"
    " label feature in your data. Each example must contain {0} value(s). If "
    "not, your choice of label was probably incorrect. Suggested Fix (2): In "
    "your input_fn, use tf.sparse_tensor_to_dense() to turn labels into a "
    "Tensor.")

MISMATCHED_LABEL_DIM_ERR_MSG = (
    "Mismatched label shape. Expected labels dimension={}.  Received {}. "
    "Suggested Fix: If your classifier expects one-hot encoding label, check "
    "your n_classes argument to the estimator and/or the shape of your label. "
    "Otherwise, check the shape of your label.")

LABEL_SHAPE_ERR_MSG = (
    "labels shape must be [D0, D1, ... DN, {}]. Suggested Fix: check your "
    "n_classes argument to the head and/or the shape of your label.")

LOGITS_SHAPE_ERR_MSG = "logits shape must be [D0, D1, ... DN, logits_dimension]"
_LOGITS_FIX = (" The model's last layer must have head.logits_dimension units "
               "(the number of classes, or of regression targets).")

# Class-id range messages (tf.estimator 2.15's), each with what to change.
LABEL_MAX_ERR_MSG = "Labels must be <= n_classes - 1"
LABEL_MIN_ERR_MSG = "Labels must be >= 0"
_RANGE_FIX = (". Fix: labels must be class ids in [0, n_classes) (0 or 1 for a binary "
              "head), or, with label_vocabulary, strings from it (one that is not "
              "reads as -1); check n_classes and label_vocabulary.")


def shape_tuple(tensor: Any) -> tuple:
  """An eager tensor's shape as a tuple of ints, as tf.estimator's eager messages print it."""
  return tuple(tensor.shape.as_list())


def _eager_checked_labels(labels: Any, logits: Any, expected_labels_dimension: int) -> Any:
  """check_dense_labels_match_logits_and_reshape executing eagerly: ValueError at once."""
  if labels.shape.rank == logits.shape.rank - 1:
    labels = tf.expand_dims(labels, -1)
  labels_shape = shape_tuple(labels)
  if len(labels_shape) < 2:
    raise ValueError(f"labels must have rank at least 2.  Received rank {len(labels_shape)}, "
                     f"shape {labels_shape}")
  if labels_shape[-1] != expected_labels_dimension:
    raise ValueError(MISMATCHED_LABEL_DIM_ERR_MSG.format(expected_labels_dimension,
                                                         labels_shape[-1]))
  expected_labels_shape = shape_tuple(logits)[:-1] + (expected_labels_dimension,)
  if expected_labels_shape != labels_shape:
    raise ValueError(f"{LABEL_SHAPE_ERR_MSG.format(expected_labels_dimension)}, "
                     f"expected_labels_shape: {expected_labels_shape}. "
                     f"labels_shape: {labels_shape}.")
  return labels


def check_dense_labels_match_logits_and_reshape(labels: Any, logits: Any,
                                                expected_labels_dimension: int) -> Any:
  """Checks labels against logits' shape, adding a last dimension of 1 if it is missing.

  With logits of shape `[D0, ... DN, logits_dimension]`, labels must be
  `[D0, ... DN, expected_labels_dimension]`; `[D0, ... DN]` is taken as
  `[D0, ... DN, 1]`.

  Args:
    labels: the labels (a `Tensor` or something convertible to one).
    logits: the logits `Tensor`.
    expected_labels_dimension: the size labels' last dimension must have.

  Returns:
    The labels `Tensor`, reshaped if needed; in graph mode it runs the shape
    assertions first.

  Raises:
    ValueError: labels are None or a `SparseTensor`, or their static shape is
      wrong (tf.estimator's texts).
  """
  if labels is None:
    raise ValueError(LABEL_NONE_ERR_MSG)
  with tf.compat.v1.name_scope("labels", values=(labels, logits)) as scope:
    labels = tf.compat.v1.convert_to_tensor_or_sparse_tensor(labels)
    if isinstance(labels, tf.SparseTensor):
      raise ValueError(SPARSE_LABEL_ERR_MSG.format(expected_labels_dimension))
    if tf.executing_eagerly():
      return _eager_checked_labels(labels, logits, expected_labels_dimension)
    labels_rank, logits_rank = labels.shape.rank, logits.shape.rank
    if labels_rank is not None and logits_rank is not None and labels_rank == logits_rank - 1:
      labels = tf.expand_dims(labels, -1)
      labels_rank += 1
    shape_message = LABEL_SHAPE_ERR_MSG.format(expected_labels_dimension)
    # A static rank below 2 raises ValueError here, with shape_message.
    assert_rank = tf.compat.v1.debugging.assert_rank_at_least(labels, 2, message=shape_message)
    with tf.control_dependencies([assert_rank]):
      final_dim = labels.shape[-1] if labels_rank is not None else None
      if final_dim is not None and final_dim != expected_labels_dimension:
        raise ValueError(MISMATCHED_LABEL_DIM_ERR_MSG.format(expected_labels_dimension, final_dim))
      logits_shape = tf.shape(logits)
      expected_labels_shape = tf.concat([logits_shape[:-1], [expected_labels_dimension]], axis=0)
      labels_shape = tf.shape(labels)
      assert_dimension = tf.compat.v1.debugging.assert_equal(
          expected_labels_shape, labels_shape, message=shape_message,
          data=["expected_labels_shape: ", expected_labels_shape,
                "labels_shape: ", labels_shape])
      with tf.control_dependencies([assert_dimension]):
        return tf.identity(labels, name=scope)


def check_logits_final_dim(logits: Any, expected_logits_dimension: Any) -> Any:
  """Casts logits to float32 and checks they are `[D0, ... DN, expected_logits_dimension]`.

  Args:
    logits: the logits.
    expected_logits_dimension: the size their last dimension must have.

  Returns:
    The float32 logits `Tensor` (with the rank and size assertions as control
    dependencies when the static shape does not settle them).

  Raises:
    ValueError: the static last dimension is wrong (tf.estimator's text).
  """
  with tf.compat.v1.name_scope("logits", values=(logits,)) as scope:
    logits = tf.cast(logits, tf.float32)
    shape = logits.shape
    if tf.executing_eagerly():
      if shape.rank < 2:
        raise ValueError(f"logits must have rank at least 2.  Received rank {shape.rank}, "
                         f"shape {shape_tuple(logits)}.{_LOGITS_FIX}")
      if isinstance(expected_logits_dimension, int) and shape[-1] != expected_logits_dimension:
        raise ValueError(f"{LOGITS_SHAPE_ERR_MSG}, got {shape_tuple(logits)}.{_LOGITS_FIX}")
      return logits
    logits_shape = tf.shape(logits)
    # A static rank below 2 raises ValueError here.
    assert_rank = tf.compat.v1.debugging.assert_rank_at_least(
        logits, 2, data=[logits_shape], message=LOGITS_SHAPE_ERR_MSG + "." + _LOGITS_FIX)
    with tf.control_dependencies([assert_rank]):
      if shape.rank is not None and shape[-1] is not None:
        if isinstance(expected_logits_dimension, int) and shape[-1] != expected_logits_dimension:
          raise ValueError(f"{LOGITS_SHAPE_ERR_MSG}, got {shape}.{_LOGITS_FIX}")
        return logits
      assert_dimension = tf.compat.v1.debugging.assert_equal(
          expected_logits_dimension, logits_shape[-1], data=[logits_shape],
          message=LOGITS_SHAPE_ERR_MSG)
      with tf.control_dependencies([assert_dimension]):
        return tf.identity(logits, name=scope)


def check_label_range(labels: Any, n_classes: int, message: Optional[str] = None) -> Any:
  """Asserts that every label is in `[0, n_classes)`.

  Args:
    labels: label (class id) `Tensor`.
    n_classes: the number of classes.
    message: the assertion text for both bounds; default tf.estimator's
      "Labels must be <= n_classes - 1" / "Labels must be >= 0" with a fix.

  Returns:
    `labels`, depending on the assertions.

  Raises:
    ValueError: executing eagerly, a label out of range (tf.estimator's eager
      text, "Labels must be <= 2 - 1", or `message`).
  """
  with tf.compat.v1.name_scope("check_label_range", values=(labels,)):
    if tf.executing_eagerly():
      if not tf.reduce_all(labels <= n_classes - 1):
        raise ValueError(message or f"Labels must be <= {n_classes} - 1{_RANGE_FIX}")
      if not tf.reduce_all(labels >= 0):
        raise ValueError(message or LABEL_MIN_ERR_MSG + _RANGE_FIX)
      return labels
    assert_less = tf.compat.v1.debugging.assert_less_equal(
        labels, tf.convert_to_tensor(n_classes - 1, dtype=labels.dtype),
        message=message or LABEL_MAX_ERR_MSG + _RANGE_FIX)
    assert_greater = tf.compat.v1.debugging.assert_non_negative(
        labels, message=message or LABEL_MIN_ERR_MSG + _RANGE_FIX)
    with tf.control_dependencies((assert_less, assert_greater)):
      return tf.identity(labels)
