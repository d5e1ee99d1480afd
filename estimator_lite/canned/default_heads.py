"""The heads the canned Classifier and Regressor estimators build from their arguments.

Every `...Classifier` (Linear, DNN, DNNLinearCombined, Baseline, v2 and
compat.v1) trains a binary head for two classes and a multi-class head for
more; every `...Regressor` a mean-squared-error `RegressionHead`. The
`...Estimator` classes take a head instead. The compat.v1 classes wrap theirs
in a `V1Head` (v1 loss reductions, summaries and AUCs).
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from estimator_lite.canned import v1_head
from estimator_lite.head import base_head
from estimator_lite.head import head_utils
from estimator_lite.head import single_head
from estimator_lite.head.regression_head import RegressionHead


def classifier_head(n_classes: int, weight_column: Any,
                    label_vocabulary: Optional[Sequence[str]],
                    loss_reduction: str) -> single_head.SingleHead:
  """The head of a canned classifier.

  Args:
    n_classes: the number of classes, at least 2.
    weight_column: the weight feature's name or numeric column, or None.
    label_vocabulary: the string labels in class-id order, or None.
    loss_reduction: a `tf_keras.losses.Reduction` other than NONE.

  Returns:
    A `BinaryClassHead` for 2 classes, else a `MultiClassHead`.

  Raises:
    ValueError: `n_classes` < 2, an invalid vocabulary or reduction (the
      head's checks).
  """
  return head_utils.binary_or_multi_class_head(
      n_classes, weight_column=weight_column, label_vocabulary=label_vocabulary,
      loss_reduction=loss_reduction)


def regression_head(label_dimension: int, weight_column: Any,
                    loss_reduction: str) -> single_head.SingleHead:
  """The head of a canned regressor.

  Args:
    label_dimension: the number of targets an example has.
    weight_column: the weight feature's name or numeric column, or None.
    loss_reduction: a `tf_keras.losses.Reduction` other than NONE.

  Returns:
    A `RegressionHead`.

  Raises:
    ValueError: an invalid `label_dimension` or reduction (the head's checks).
  """
  return RegressionHead(label_dimension=label_dimension, weight_column=weight_column,
                        loss_reduction=loss_reduction)


def v1_classifier_head(n_classes: int, weight_column: Any,
                       label_vocabulary: Optional[Sequence[str]],
                       loss_reduction: str) -> base_head.Head:
  """The head of a compat.v1 canned classifier (tf.estimator 2.15's v1 head's behaviour).

  Args:
    n_classes: the number of classes, at least 2.
    weight_column: the weight feature's name or numeric column, or None.
    label_vocabulary: the string labels in class-id order, or None.
    loss_reduction: a `tf.compat.v1.losses.Reduction` other than NONE.

  Returns:
    A `V1Head` around a `BinaryClassHead` for 2 classes, else around a
    `MultiClassHead`.

  Raises:
    ValueError: `n_classes` < 2, an invalid vocabulary or reduction.
  """
  head = classifier_head(n_classes, weight_column, label_vocabulary,
                         v1_head.inner_head_loss_reduction(loss_reduction))
  return v1_head.V1Head(head, weight_column, loss_reduction, loss_dimension=1,
                        binary_label_vocabulary=label_vocabulary if n_classes == 2 else None,
                        binary=n_classes == 2,
                        multi_class_label_vocabulary=label_vocabulary if n_classes > 2 else None,
                        multi_class=n_classes > 2)


def v1_regression_head(label_dimension: int, weight_column: Any,
                       loss_reduction: str) -> base_head.Head:
  """The head of a compat.v1 canned regressor (tf.estimator 2.15's v1 head's behaviour).

  Args:
    label_dimension: the number of targets an example has.
    weight_column: the weight feature's name or numeric column, or None.
    loss_reduction: a `tf.compat.v1.losses.Reduction` other than NONE.

  Returns:
    A `V1Head` around a `RegressionHead`.

  Raises:
    ValueError: an invalid `label_dimension` or reduction.
  """
  head = regression_head(label_dimension, weight_column,
                         v1_head.inner_head_loss_reduction(loss_reduction))
  return v1_head.V1Head(head, weight_column, loss_reduction, loss_dimension=label_dimension)
