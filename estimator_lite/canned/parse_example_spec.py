"""Parsing specs for tf.Example input to canned classifiers and regressors (tf.estimator 2.15's).

A canned estimator's features, label and example weight often come from the
same serialized `tf.Example`s. These functions give the one spec
`tf.io.parse_example` needs for all of them: the feature columns' spec
(`make_parse_example_spec`) plus a `FixedLenFeature` for the label and, when
a weight column is given, its feature:

```python
spec = estimator_lite.classifier_parse_example_spec(
    feature_columns, label_key="clicked", label_dtype=tf.int64, weight_column="weight")
def input_fn():
  dataset = tf.data.TFRecordDataset(files).batch(64)
  dataset = dataset.map(lambda records: tf.io.parse_example(records, spec))
  return dataset.map(lambda features: (features, features.pop("clicked")))
```

One implementation serves the top level and compat.v1 (tf.estimator's two
differed only in which `make_parse_example_spec` they called: v1 feature
columns are taken too).
"""
from __future__ import annotations

from typing import Any, Dict, Iterable

import tensorflow as tf

from estimator_lite._util import tf_internals


def _feature_spec(feature_columns: Iterable[Any]) -> Dict[str, Any]:
  feature_columns = list(feature_columns)
  feature_column, _, _, _ = tf_internals.feature_column_classes()
  # v1-only columns (v1 shared_embedding_columns) need v1's function; anything
  # else, a non-column included, gets the v2 function and its error text.
  if any(not isinstance(column, feature_column) and hasattr(column, "_parse_example_spec")
         for column in feature_columns):
    return dict(tf.compat.v1.feature_column.make_parse_example_spec(feature_columns))
  return dict(tf.feature_column.make_parse_example_spec(feature_columns))


def _add_label_and_weight(spec: Dict[str, Any], label_key: str, label_spec: Any,
                          weight_column: Any) -> Dict[str, Any]:
  if label_key in spec:
    raise ValueError(
        f"label should not be used as feature. label_key: {label_key}, features: "
        f"{spec.keys()}. Use a label_key that no feature column reads.")
  spec[label_key] = label_spec
  if weight_column is None:
    return spec
  if isinstance(weight_column, str):
    weight_column = tf.feature_column.numeric_column(weight_column)
  _, _, _, numeric_column = tf_internals.feature_column_classes()
  if not isinstance(weight_column, numeric_column):
    raise ValueError(
        "weight_column should be an instance of tf.feature_column.numeric_column. "
        f"Given type: {type(weight_column)} value: {weight_column}. Pass the "
        "weight feature's name or tf.feature_column.numeric_column(name).")
  if weight_column.key in spec:
    raise ValueError(
        f"weight_column should not be used as feature. weight_column: "
        f"{weight_column.key}, features: {spec.keys()}. Use a weight feature that no "
        "feature column reads.")
  spec.update(weight_column.parse_example_spec)
  return spec


def classifier_parse_example_spec(feature_columns: Iterable[Any], label_key: str,
                                  label_dtype: tf.DType = tf.int64,
                                  label_default: Any = None,
                                  weight_column: Any = None) -> Dict[str, Any]:
  """The `tf.io.parse_example` spec of a classifier's features, label and weight.

  Args:
    feature_columns: the feature columns the classifier uses.
    label_key: the label's key in the `tf.Example`s.
    label_dtype: the label's type: `tf.int64` class ids (the default),
      `tf.string` with a `label_vocabulary`, or `tf.float32` 0/1 labels of a
      binary classifier.
    label_default: the label of an example that has none (e.g. 0, when only
      positive examples carry the label); None makes a missing label an error
      at parse time.
    weight_column: the weight feature's name or a
      `tf.feature_column.numeric_column`, or None.

  Returns:
    Feature key -> `tf.io.FixedLenFeature` / `tf.io.VarLenFeature` (or the
    other spec types the columns ask for); the label's entry is a
    `FixedLenFeature((1,), label_dtype, label_default)`.

  Raises:
    ValueError: a feature column reads `label_key` or the weight feature, an
      item is not a feature column, or `weight_column` is neither a string nor
      a numeric column.
  """
  return _add_label_and_weight(
      _feature_spec(feature_columns), label_key,
      tf.io.FixedLenFeature((1,), label_dtype, label_default), weight_column)


def regressor_parse_example_spec(feature_columns: Iterable[Any], label_key: str,
                                 label_dtype: tf.DType = tf.float32,
                                 label_default: Any = None, label_dimension: int = 1,
                                 weight_column: Any = None) -> Dict[str, Any]:
  """The `tf.io.parse_example` spec of a regressor's features, label and weight.

  Args:
    feature_columns: the feature columns the regressor uses.
    label_key: the label's key in the `tf.Example`s.
    label_dtype: the label's type, `tf.float32` by default.
    label_default: the label of an example that has none; None makes a
      missing label an error at parse time.
    label_dimension: the number of targets an example has (the label's
      length).
    weight_column: the weight feature's name or a
      `tf.feature_column.numeric_column`, or None.

  Returns:
    Feature key -> parsing spec; the label's entry is a
    `FixedLenFeature((label_dimension,), label_dtype, label_default)`.

  Raises:
    ValueError: a feature column reads `label_key` or the weight feature, an
      item is not a feature column, or `weight_column` is neither a string nor
      a numeric column.
  """
  return _add_label_and_weight(
      _feature_spec(feature_columns), label_key,
      tf.io.FixedLenFeature((label_dimension,), label_dtype, label_default), weight_column)
