"""estimator_lite.experimental.call_logit_fn: passes what the logit_fn takes, checks what it returns."""
import functools

import numpy as np
import pytest
import tensorflow as tf

import estimator_lite as est

_ERROR = "logit_fn should return a Tensor or a dictionary mapping strings to Tensors.  "


@pytest.fixture
def graph():
  with tf.Graph().as_default() as g:
    yield g


def test_passes_only_the_arguments_the_logit_fn_names(graph):
  seen = {}

  def by_mode(features, mode):
    seen["mode"] = mode
    return features["x"] * (2.0 if mode == est.ModeKeys.TRAIN else 3.0)

  def everything(features, params, config, mode):
    seen.update(params=params, config=config)
    return features["x"]

  features = {"x": tf.constant([[1.0, 2.0]])}
  logits = est.experimental.call_logit_fn(by_mode, features, est.ModeKeys.EVAL, {"p": 1}, None)
  assert seen == {"mode": est.ModeKeys.EVAL}
  with tf.compat.v1.Session() as session:
    np.testing.assert_allclose(session.run(logits), [[3.0, 6.0]])
  config = est.RunConfig()
  assert est.experimental.call_logit_fn(
      everything, features, est.ModeKeys.TRAIN, {"p": 1}, config) is features["x"]
  assert seen["params"] == {"p": 1} and seen["config"] is config
  # Arguments bound by functools.partial are not passed again.
  bound = functools.partial(everything, params={"q": 2})
  est.experimental.call_logit_fn(bound, features, est.ModeKeys.TRAIN, {"p": 1}, config)
  assert seen["params"] == {"q": 2}


def test_a_dict_of_heads_is_returned_as_is(graph):
  features = {"a": tf.constant([[1.0]]), "b": tf.constant([[2.0]])}
  heads = est.experimental.call_logit_fn(
      lambda features: {"head_a": features["a"], "head_b": features["b"]},
      features, est.ModeKeys.PREDICT, None, None)
  assert heads == {"head_a": features["a"], "head_b": features["b"]}


@pytest.mark.parametrize("result", [
    [tf.constant(1.0)],                      # a list of heads
    {"head": "not a tensor"},                # a head that is not a Tensor
    {1: tf.constant(1.0)},                   # a head name that is not a string
    None,
])
def test_anything_else_raises_tf_estimators_value_error(graph, result):
  with pytest.raises(ValueError) as raised:
    est.experimental.call_logit_fn(lambda features: result, {}, est.ModeKeys.TRAIN, None, None)
  assert str(raised.value).startswith(_ERROR + f"logit_fn returned: {result}")


def test_logits_from_call_logit_fn_train_and_evaluate(tmp_path):
  """In a model_fn, as tf.estimator's docs suggest; here a linear logit_fn learns y = 2x."""
  def logit_fn(features, params):
    weight = tf.compat.v1.get_variable("w", [1, 1], initializer=tf.compat.v1.zeros_initializer())
    return tf.matmul(features["x"], weight) * params["scale"]

  def model_fn(features, labels, mode, params, config):
    logits = est.experimental.call_logit_fn(logit_fn, features, mode, params, config)
    loss = tf.compat.v1.losses.mean_squared_error(labels, logits)
    train_op = tf.compat.v1.train.GradientDescentOptimizer(0.05).minimize(
        loss, global_step=tf.compat.v1.train.get_global_step())
    return est.EstimatorSpec(mode, loss=loss, train_op=train_op)

  def input_fn():
    x = np.array([[1.0], [2.0]], np.float32)
    return tf.data.Dataset.from_tensors(({"x": x}, 2.0 * x))

  estimator = est.Estimator(model_fn, model_dir=str(tmp_path), params={"scale": 1.0})
  estimator.train(lambda: input_fn().repeat(), steps=100)
  assert estimator.evaluate(input_fn)["loss"] < 1e-3
