"""The classification head a canned classifier uses for its `n_classes`."""
from __future__ import annotations

from typing import Any, Optional, Sequence

from estimator_lite.head import single_head
from estimator_lite.head.binary_class_head import BinaryClassHead
from estimator_lite.head.multi_class_head import MultiClassHead


def binary_or_multi_class_head(n_classes: int, weight_column: Any,
                               label_vocabulary: Optional[Sequence[str]],
                               loss_reduction: str) -> single_head.SingleHead:
  """Returns a `BinaryClassHead` for 2 classes, else a `MultiClassHead`.

  Args:
    n_classes: the number of classes.
    weight_column: a feature name or `tf.feature_column.numeric_column`
      holding each example's weight (a NumericColumn's `normalizer_fn`
      applies), or None.
    label_vocabulary: the class names, making labels strings from it; None:
      labels are already 0/1 (or floats in [0, 1]) for 2 classes and integer
      ids in [0, n_classes) otherwise.
    loss_reduction: a `tf_keras.losses.Reduction` other than `NONE`.

  Returns:
    The head.

  Raises:
    ValueError: see the two heads' arguments.
  """
  if n_classes == 2:
    return BinaryClassHead(weight_column=weight_column, label_vocabulary=label_vocabulary,
                           loss_reduction=loss_reduction)
  return MultiClassHead(n_classes, weight_column=weight_column,
                        label_vocabulary=label_vocabulary, loss_reduction=loss_reduction)
