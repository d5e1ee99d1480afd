"""ServingInputReceiver, TensorServingInputReceiver and the serving receiver fn builders.

A rejected value raises ValueError whose text starts with tf.estimator 2.15's
(users match it with assertRaisesRegex), then says how to fix it.
"""
import re
import types

import numpy as np
import pytest
import tensorflow as tf

import estimator_lite as est


def _raises_with_tf_estimator_text(text):
  """pytest.raises(ValueError) whose message contains tf.estimator's `text` verbatim."""
  return pytest.raises(ValueError, match=re.escape(text))


class _LabeledTensorLike:
  """What tf.estimator let through for LabeledTensor: a `.tensor` TF converts."""

  def __init__(self, tensor):
    self.tensor = tensor


tf.register_tensor_conversion_function(
    _LabeledTensorLike, lambda value, *args, **kwargs: tf.convert_to_tensor(value.tensor))


def test_single_tensors_are_named_feature_and_input():
  with tf.Graph().as_default():
    x = tf.compat.v1.placeholder(tf.float32, [None, 2])
    receiver = est.export.ServingInputReceiver(x, x)
    assert receiver.features == {"feature": x}
    assert receiver.receiver_tensors == {"input": x}
    assert receiver.receiver_tensors_alternatives is None
    bare = est.export.TensorServingInputReceiver(x, {"x": x})
    assert bare.features is x and bare.receiver_tensors == {"x": x}


def test_receivers_unpack_like_tf_estimators_namedtuples():
  with tf.Graph().as_default():
    x = tf.compat.v1.placeholder(tf.float32, [None, 2])
    receiver = est.export.ServingInputReceiver({"x": x}, x)
    features, receiver_tensors, alternatives = receiver
    assert features == {"x": x} and receiver_tensors == {"input": x} and alternatives is None
    assert len(receiver) == 3 and receiver[1] is receiver.receiver_tensors
    bare_features, _, _ = est.export.TensorServingInputReceiver(x, x)
    assert bare_features is x


def test_bad_values_raise_tf_estimator_texts_then_the_fix():
  x = tf.constant([[1.0, 2.0]])
  receiver_tensors = {"examples": tf.constant(["e"])}
  with _raises_with_tf_estimator_text("features must be defined.") as raised:
    est.export.ServingInputReceiver(None, receiver_tensors)
  assert "receiver fn" in str(raised.value)
  with _raises_with_tf_estimator_text("feature keys must be strings or ints: 4.5."):
    est.export.ServingInputReceiver({4.5: x}, receiver_tensors)
  with _raises_with_tf_estimator_text(
      "feature feature1 must be a Tensor, SparseTensor, or RaggedTensor.") as raised:
    est.export.ServingInputReceiver({"feature1": [1]}, receiver_tensors)
  assert "tf.compat.v1.placeholder" in str(raised.value)
  with _raises_with_tf_estimator_text("receiver_tensors must be defined."):
    est.export.ServingInputReceiver(x, None)
  with _raises_with_tf_estimator_text("receiver_tensor keys must be strings: 1."):
    est.export.ServingInputReceiver(x, {1: x})
  with _raises_with_tf_estimator_text(
      "receiver_tensor example1 must be a Tensor, SparseTensor, or RaggedTensor."):
    est.export.ServingInputReceiver(x, {"example1": np.array([1])})
  with _raises_with_tf_estimator_text("receiver_tensors_alternatives must be a dict: "):
    est.export.ServingInputReceiver(x, x, [x])
  with _raises_with_tf_estimator_text(
      "receiver_tensors_alternative input must be a Tensor, SparseTensor, or RaggedTensor."):
    est.export.ServingInputReceiver(x, x, {"raw": "not a tensor"})


def test_tensor_serving_receiver_checks_its_single_feature_as_feature():
  receiver_tensors = {"examples": tf.constant(["e"])}
  with _raises_with_tf_estimator_text("features must be defined."):
    est.export.TensorServingInputReceiver(None, receiver_tensors)
  # A dict is not a single feature; tf.estimator's text says 'feature'.
  with _raises_with_tf_estimator_text(
      "feature must be a Tensor, SparseTensor, or RaggedTensor."):
    est.export.TensorServingInputReceiver({"1": tf.constant([1])}, receiver_tensors)
  with _raises_with_tf_estimator_text("receiver_tensor example1 must be a Tensor"):
    est.export.TensorServingInputReceiver(tf.constant([1]), {"example1": [1]})


def test_labeled_tensor_like_features_are_accepted_as_given():
  # As tf.estimator: an object with a `.tensor` that TensorFlow converts.
  feature = _LabeledTensorLike(tf.constant([1]))
  receiver = est.export.ServingInputReceiver(feature, tf.constant(["e"]))
  assert receiver.features["feature"] is feature
  assert est.export.TensorServingInputReceiver(feature, tf.constant(["e"])).features is feature
  # An object TensorFlow cannot convert is still rejected, `.tensor` or not.
  with _raises_with_tf_estimator_text(
      "feature must be a Tensor, SparseTensor, or RaggedTensor."):
    est.export.ServingInputReceiver(types.SimpleNamespace(tensor=tf.constant([1])),
                                    tf.constant(["e"]))


def test_raw_receiver_fn_makes_placeholders_like_the_examples():
  features = {"name": tf.constant(["hello"]), "count": np.array([[1, 2]], np.int64),
              "ids": tf.sparse.SparseTensor([[0, 1]], [7], [1, 3])}
  receiver_fn = est.export.build_raw_serving_input_receiver_fn(features, default_batch_size=4)
  with tf.Graph().as_default():
    receiver = receiver_fn()
  assert set(receiver.features) == set(receiver.receiver_tensors) == {"name", "count", "ids"}
  assert receiver.receiver_tensors["name"].dtype == tf.string
  assert receiver.receiver_tensors["count"].shape.as_list() == [4, 2]
  # A sparse example gives a sparse placeholder: model_fn sees what it trained on.
  assert isinstance(receiver.features["ids"], tf.sparse.SparseTensor)
  assert receiver.features["ids"].shape.as_list() == [4, 3]
  with pytest.raises(ValueError, match="feature_spec must be a non-empty dict"):
    est.export.build_parsing_serving_input_receiver_fn([])
