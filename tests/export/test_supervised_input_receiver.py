"""SupervisedInputReceiver, UnsupervisedInputReceiver and the supervised receiver fn builders.

The receivers of TRAIN and EVAL SavedModel exports (exported end to end in
test_saved_model_export.py). A rejected value raises ValueError whose text
starts with tf.estimator 2.15's, then says how to fix it.
"""
import re

import numpy as np
import pytest
import tensorflow as tf

import estimator_lite as est
from estimator_lite.export.supervised_input_receiver import (
    SupervisedInputReceiver, UnsupervisedInputReceiver,
    build_supervised_input_receiver_fn_from_input_fn)


def _raises_with_tf_estimator_text(text):
  return pytest.raises(ValueError, match=re.escape(text))


def test_supervised_receiver_keeps_features_and_labels_as_given():
  features = {"x": tf.constant([[1.0]]), 7: tf.constant([3])}
  labels = tf.constant([1])
  receiver = SupervisedInputReceiver(features, labels, tf.constant(["e"]))
  assert receiver.features is features and receiver.labels is labels
  assert list(receiver.receiver_tensors) == ["input"]
  sparse = tf.sparse.SparseTensor([[0, 0]], [1], [1, 1])
  assert SupervisedInputReceiver(sparse, {"y": labels}, {"e": labels}).features is sparse
  assert receiver.replace(labels={"y": labels}).labels == {"y": labels}
  unpacked_features, unpacked_labels, inputs = receiver  # as tf.estimator's namedtuple
  assert unpacked_features is features and unpacked_labels is labels
  assert inputs is receiver.receiver_tensors


def test_supervised_receiver_rejects_bad_values_with_tf_estimator_texts():
  x, y = tf.constant([0] * 4), tf.constant([0])
  inputs = {"example0": tf.constant(["e"])}
  with _raises_with_tf_estimator_text("features must be defined."):
    SupervisedInputReceiver(None, y, inputs)
  with _raises_with_tf_estimator_text("labels must be defined."):
    SupervisedInputReceiver(x, None, inputs)
  with _raises_with_tf_estimator_text("feature keys must be strings or ints: 1.5."):
    SupervisedInputReceiver({1.5: x}, y, inputs)
  with _raises_with_tf_estimator_text("label keys must be strings or ints: 1.5."):
    SupervisedInputReceiver(x, {1.5: y}, inputs)
  with _raises_with_tf_estimator_text(
      "feature feature1 must be a Tensor, SparseTensor, or RaggedTensor."):
    SupervisedInputReceiver({"feature1": [1]}, y, inputs)
  with _raises_with_tf_estimator_text(
      "feature must be a Tensor, SparseTensor, or RaggedTensor."):
    SupervisedInputReceiver([1], y, inputs)
  with _raises_with_tf_estimator_text("label must be a Tensor, SparseTensor, or RaggedTensor."):
    SupervisedInputReceiver(x, 100, inputs)
  with _raises_with_tf_estimator_text("receiver_tensors must be defined."):
    SupervisedInputReceiver(x, y, None)
  with _raises_with_tf_estimator_text("receiver_tensor keys must be strings: 1."):
    SupervisedInputReceiver(x, y, {1: x})
  with _raises_with_tf_estimator_text("receiver_tensor example1 must be a Tensor"):
    SupervisedInputReceiver(x, y, {"example1": [1]})


def test_unsupervised_receiver_is_a_serving_receiver_without_alternatives():
  x = tf.constant([[1.0]])
  receiver = UnsupervisedInputReceiver({"x": x, 42: x}, {"e": tf.constant(["e"])})
  assert isinstance(receiver, est.export.ServingInputReceiver)
  assert receiver.receiver_tensors_alternatives is None
  assert receiver.replace(features=x).features == {"feature": x}
  with pytest.raises(ValueError, match="no receiver_tensors_alternatives"):
    UnsupervisedInputReceiver(x, x, {"raw": x})
  with _raises_with_tf_estimator_text("features must be defined."):
    UnsupervisedInputReceiver(None, x)


def test_raw_supervised_receiver_fn_feeds_features_and_labels_side_by_side():
  features = {"name": tf.constant(["hello"]), "count": tf.constant([42])}
  labels = {"foo": tf.constant([5]), "bar": tf.TensorSpec([None, 2], tf.float32)}
  receiver_fn = est.experimental.build_raw_supervised_input_receiver_fn(
      features, labels, default_batch_size=10)
  with tf.Graph().as_default():
    receiver = receiver_fn()
  assert isinstance(receiver, SupervisedInputReceiver)
  assert set(receiver.features) == {"name", "count"}
  assert set(receiver.labels) == {"foo", "bar"}
  assert set(receiver.receiver_tensors) == {"name", "count", "foo", "bar"}
  assert receiver.receiver_tensors["name"].dtype == tf.string
  assert receiver.features["count"].shape.as_list() == [10]
  assert receiver.labels["bar"].shape.as_list() == [10, 2]

  # Single tensors reach model_fn as they are, fed under 'input' and 'label'.
  single_fn = est.experimental.build_raw_supervised_input_receiver_fn(
      np.zeros([3, 2], np.float32), features["count"])
  with tf.Graph().as_default():
    single = single_fn()
  assert isinstance(single.features, tf.Tensor) and isinstance(single.labels, tf.Tensor)
  assert single.receiver_tensors == {"input": single.features, "label": single.labels}
  assert single.features.shape.as_list() == [None, 2]


def test_raw_supervised_receiver_fn_rejects_clashing_keys():
  with _raises_with_tf_estimator_text(
      "Features and labels must have distinct keys. Found overlapping keys: {'x'}"):
    est.experimental.build_raw_supervised_input_receiver_fn(
        {"x": tf.constant([1]), "y": tf.constant([1])}, {"x": tf.constant([1])})
  # A single feature is fed as 'input': a label of that name clashes too.
  with _raises_with_tf_estimator_text("Found overlapping keys: {'input'}"):
    est.experimental.build_raw_supervised_input_receiver_fn(
        tf.constant([1]), {"input": tf.constant([1])})
  with _raises_with_tf_estimator_text("labels must be defined."):
    est.experimental.build_raw_supervised_input_receiver_fn({"x": tf.constant([1])}, None)


def test_receiver_fn_from_input_fn_matches_the_input_fn_without_touching_the_caller_graph():
  def input_fn(feature_key="x"):
    return tf.data.Dataset.from_tensor_slices((
        {feature_key: np.ones([4, 3], np.float32), "words": np.array(["a", "b", "c", "d"])},
        np.arange(4, dtype=np.int64))).batch(2)

  with tf.Graph().as_default() as caller_graph:
    receiver_fn = build_supervised_input_receiver_fn_from_input_fn(input_fn, feature_key="z")
    assert caller_graph.get_operations() == []
    receiver = receiver_fn()
  assert set(receiver.features) == {"z", "words"}
  assert receiver.features["z"].shape.as_list() == [None, 3]
  assert receiver.features["words"].dtype == tf.string
  assert isinstance(receiver.labels, tf.Tensor) and receiver.labels.dtype == tf.int64
  assert set(receiver.receiver_tensors) == {"z", "words", "label"}

  with pytest.raises(ValueError, match="input_fn returned features only"):
    build_supervised_input_receiver_fn_from_input_fn(
        lambda: tf.data.Dataset.from_tensors({"x": [1.0]}))
