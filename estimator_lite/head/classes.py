"""Class ids and class names: vocabulary lookups, all-class tensors and the classification export."""
from __future__ import annotations

from typing import Any, Dict, Optional, Sequence

import tensorflow as tf

from estimator_lite.canned.prediction_keys import PredictionKeys
from estimator_lite.export import export_output


def class_id_table(label_vocabulary: Sequence[str]) -> Any:
  """A table from class name to class id (-1 for a name not in the vocabulary).

  Built in the current graph each time: an Estimator builds a new graph per
  call, and a table must live in the graph of the labels it looks up. It is a
  tf.compat.v1 table, so the Scaffold initializes it with the other tables.

  Args:
    label_vocabulary: the class names, in class id order.

  Returns:
    A `tf.compat.v1.lookup.StaticHashTable` (string -> int64).
  """
  keys = tf.constant(list(label_vocabulary), dtype=tf.string)
  initializer = tf.lookup.KeyValueTensorInitializer(
      keys=keys, values=tf.range(len(label_vocabulary), dtype=tf.int64))
  return tf.compat.v1.lookup.StaticHashTable(initializer, default_value=-1,
                                             name="class_id_lookup")


def class_string_table(label_vocabulary: Sequence[str]) -> Any:
  """A table from class id to class name ("UNK" for an id out of range).

  Args:
    label_vocabulary: the class names, in class id order.

  Returns:
    A `tf.compat.v1.lookup.StaticHashTable` (int64 -> string).
  """
  # As tf.estimator's `index_to_string_table_from_tensor(name=
  # "class_string_lookup")`: an unnamed table ("hash_table") in that scope, so
  # the `classes` prediction is `.../hash_table_Lookup/LookupTableFindV2`.
  with tf.compat.v1.name_scope("class_string_lookup"):
    values = tf.constant(list(label_vocabulary), dtype=tf.string)
    initializer = tf.lookup.KeyValueTensorInitializer(
        keys=tf.range(len(label_vocabulary), dtype=tf.int64), values=values)
    return tf.compat.v1.lookup.StaticHashTable(initializer, default_value="UNK")


def all_class_ids(logits: Any, n_classes: int) -> Any:
  """`[batch_size, n_classes]` int32: each row is 0 .. n_classes - 1."""
  batch_size = tf.shape(logits)[0]
  return tf.tile(tf.expand_dims(tf.range(n_classes), axis=0), multiples=[batch_size, 1])


def all_classes(logits: Any, n_classes: int, label_vocabulary: Optional[Sequence[str]] = None) -> Any:
  """`[batch_size, n_classes]` string: each row is every class name (or id as a string)."""
  batch_size = tf.shape(logits)[0]
  if label_vocabulary:
    classes_list = tf.convert_to_tensor([list(label_vocabulary)])
  else:
    classes_list = tf.strings.as_string(tf.expand_dims(tf.range(n_classes), axis=0))
  return tf.tile(classes_list, multiples=[batch_size, 1])


def classification_output(scores: Any, n_classes: int,
                          label_vocabulary: Optional[Sequence[str]] = None) -> export_output.ClassificationOutput:
  """The classification signature: each class's score with its name.

  Args:
    scores: `[batch_size, n_classes]` float probabilities.
    n_classes: the number of classes.
    label_vocabulary: the class names, or None for "0", "1", ...

  Returns:
    A `ClassificationOutput` (its classes must be strings).
  """
  return export_output.ClassificationOutput(
      scores=scores, classes=all_classes(scores, n_classes, label_vocabulary))


def add_class_predictions(predictions: Dict[Any, Any], keys: Sequence[str], class_logits: Any,
                          n_classes: int, label_vocabulary: Optional[Sequence[str]]) -> None:
  """Adds the `class_ids`, `classes`, `all_class_ids` and `all_classes` asked for in `keys`.

  Args:
    predictions: the head's predictions dict, extended in place.
    keys: the `PredictionKeys` values to build.
    class_logits: `[D0, ... DN, n_classes]`: one logit per class; the
      predicted class is its arg max.
    n_classes: the number of classes.
    label_vocabulary: the class names, or None for ids as strings.
  """
  if PredictionKeys.CLASS_IDS in keys or PredictionKeys.CLASSES in keys:
    class_ids = tf.expand_dims(
        tf.math.argmax(class_logits, axis=-1, name=PredictionKeys.CLASS_IDS), axis=-1)
    if PredictionKeys.CLASS_IDS in keys:
      predictions[PredictionKeys.CLASS_IDS] = class_ids
    if PredictionKeys.CLASSES in keys:
      if label_vocabulary is not None:
        classes = class_string_table(label_vocabulary).lookup(class_ids)
      else:
        classes = tf.strings.as_string(class_ids, name="str_classes")
      predictions[PredictionKeys.CLASSES] = classes
  if PredictionKeys.ALL_CLASS_IDS in keys:
    predictions[PredictionKeys.ALL_CLASS_IDS] = all_class_ids(class_logits, n_classes=n_classes)
  if PredictionKeys.ALL_CLASSES in keys:
    predictions[PredictionKeys.ALL_CLASSES] = all_classes(
        class_logits, n_classes=n_classes, label_vocabulary=label_vocabulary)
