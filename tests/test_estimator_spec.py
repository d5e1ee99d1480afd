"""EstimatorSpec: frozen, validated per mode, tf.estimator's positional order, replace()."""
import attrs
import pytest

import estimator_lite as est
import tensorflow as tf


@pytest.fixture
def graph():
  with tf.Graph().as_default() as g:
    yield g


def _train_parts():
  w = tf.compat.v1.get_variable("w", [1], initializer=tf.compat.v1.ones_initializer())
  loss = tf.reduce_sum(w * 2.0)
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
      loss, global_step=tf.compat.v1.train.get_or_create_global_step())
  return w, loss, train_op


def test_positional_order_is_tf_estimators(graph):
  w, loss, train_op = _train_parts()
  predictions = {"w": w * 1.0}
  metrics = {"m": tf.compat.v1.metrics.mean(loss)}
  spec = est.EstimatorSpec(est.ModeKeys.TRAIN, predictions, loss, train_op, metrics)
  assert spec.mode == est.ModeKeys.TRAIN
  assert spec.predictions is not None and set(spec.predictions) == {"w"}
  assert spec.loss is loss and spec.train_op is train_op
  assert set(spec.eval_metric_ops) == {"m"}
  assert spec.training_hooks == () and spec.evaluation_hooks == ()
  assert isinstance(spec.scaffold, tf.compat.v1.train.Scaffold)


def test_spec_is_frozen_and_replace_validates(graph):
  _, loss, train_op = _train_parts()
  spec = est.EstimatorSpec(est.ModeKeys.TRAIN, loss=loss, train_op=train_op)
  with pytest.raises(attrs.exceptions.FrozenInstanceError):
    spec.loss = None
  with pytest.raises(AttributeError):
    spec.train_op = train_op
  assert spec.loss is loss

  evaluated = spec.replace(mode=est.ModeKeys.EVAL, train_op=None)
  assert evaluated.mode == est.ModeKeys.EVAL and evaluated.loss is loss
  assert spec.mode == est.ModeKeys.TRAIN  # the original is unchanged
  assert spec._replace(training_hooks=[]).training_hooks == ()  # pylint: disable=protected-access
  with pytest.raises(ValueError, match=r"Missing loss.*mode 'train'"):
    spec.replace(loss=None)
  with pytest.raises(ValueError, match=r"Missing train_op.*'train'"):
    spec._replace(train_op=None)  # pylint: disable=protected-access
  with pytest.raises(ValueError, match=r"no field\(s\) \['losses'\]"):
    spec.replace(losses=loss)


def test_required_fields_per_mode(graph):
  _, loss, train_op = _train_parts()
  with pytest.raises(ValueError, match=r"Missing loss.*mode 'eval'"):
    est.EstimatorSpec(est.ModeKeys.EVAL)
  with pytest.raises(ValueError, match=r"Missing predictions.*'infer'"):
    est.EstimatorSpec(est.ModeKeys.PREDICT, loss=loss)
  with pytest.raises(ValueError, match="mode='training' is not one of"):
    est.EstimatorSpec("training", loss=loss, train_op=train_op)
  with pytest.raises(ValueError, match=r"Loss must be scalar.*shape \(2,\)"):
    est.EstimatorSpec(est.ModeKeys.EVAL, loss=tf.constant([1.0, 2.0]))
  with pytest.raises(TypeError, match=r"loss must be Tensor, given: 1.5"):
    est.EstimatorSpec(est.ModeKeys.EVAL, loss=1.5)
  # A loss of shape [1] is accepted and reshaped to a scalar, as tf.estimator did.
  spec = est.EstimatorSpec(est.ModeKeys.EVAL, loss=tf.constant([1.0]))
  assert spec.loss.shape == ()
  # PREDICT gets a default serving signature.
  spec = est.EstimatorSpec(est.ModeKeys.PREDICT, predictions={"y": loss})
  assert list(spec.export_outputs) == ["serving_default"]


def test_eval_metric_ops_values_are_validated(graph):
  _, loss, _ = _train_parts()
  value, update = tf.compat.v1.metrics.mean(loss)
  ok = est.EstimatorSpec(est.ModeKeys.EVAL, loss=loss,
                         eval_metric_ops={"pair": (value, update), "list": [value, update],
                                          "keras": tf.keras.metrics.Mean()})
  assert ok.eval_metric_ops["list"] == (value, update)
  for bad in (value, (value, update, value), ("value", update), 0.5):
    with pytest.raises(TypeError, match=r"\(metric_value, update_op\) tuples.*key: 'bad'"):
      est.EstimatorSpec(est.ModeKeys.EVAL, loss=loss, eval_metric_ops={"bad": bad})
  with pytest.raises(TypeError, match="eval_metric_ops must be a dict"):
    est.EstimatorSpec(est.ModeKeys.EVAL, loss=loss, eval_metric_ops=[(value, update)])


def test_hooks_are_type_checked(graph):
  _, loss, train_op = _train_parts()
  hook = tf.compat.v1.train.StopAtStepHook(num_steps=1)
  spec = est.EstimatorSpec(est.ModeKeys.TRAIN, loss=loss, train_op=train_op,
                           training_hooks=[hook], training_chief_hooks=[hook])
  assert spec.training_hooks == (hook,)
  for field in ("training_hooks", "training_chief_hooks", "evaluation_hooks",
                "prediction_hooks"):
    with pytest.raises(TypeError, match=rf"SessionRunHook instances.*EstimatorSpec.{field}"):
      est.EstimatorSpec(est.ModeKeys.TRAIN, loss=loss, train_op=train_op,
                        **{field: [hook, "not a hook"]})


def test_tensors_from_another_graph_are_rejected(graph):
  with tf.Graph().as_default():
    other_loss = tf.constant(1.0)
  with pytest.raises(ValueError, match="must be from the default graph"):
    est.EstimatorSpec(est.ModeKeys.EVAL, loss=other_loss)
