"""EstimatorSpec: frozen, validated per mode, tf.estimator's positional order, replace()."""
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
  with pytest.raises(AttributeError):
    spec.loss = None
  with pytest.raises(AttributeError):
    spec.train_op = train_op
  assert spec.loss is loss

  replaced = spec.replace(mode=est.ModeKeys.TRAIN, predictions={"loss": loss})
  assert set(replaced.predictions) == {"loss"} and replaced.loss is loss
  assert spec.predictions is None  # the original is unchanged
  assert spec._replace(training_hooks=[]).training_hooks == ()  # pylint: disable=protected-access
  # As tf.estimator: a spec keeps the mode model_fn was called in.
  with pytest.raises(ValueError, match="mode of EstimatorSpec cannot be changed"):
    spec.replace(mode=est.ModeKeys.EVAL, train_op=None)
  with pytest.raises(ValueError, match="mode of EstimatorSpec cannot be changed"):
    spec._replace(mode=est.ModeKeys.EVAL)  # pylint: disable=protected-access
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
  sparse = tf.sparse.SparseTensor(indices=[[0]], values=[1.0], dense_shape=[1])
  with pytest.raises(TypeError, match=r"loss must be Tensor, given: SparseTensor"):
    est.EstimatorSpec(est.ModeKeys.TRAIN, loss=sparse, train_op=train_op)
  with pytest.raises(TypeError, match=r"train_op must be Operation or Tensor, given: step"):
    est.EstimatorSpec(est.ModeKeys.TRAIN, loss=loss, train_op="step")
  # A loss of shape [1] is accepted and reshaped to a scalar, as tf.estimator did.
  spec = est.EstimatorSpec(est.ModeKeys.EVAL, loss=tf.constant([1.0]))
  assert spec.loss.shape == ()
  # PREDICT gets a default serving signature.
  spec = est.EstimatorSpec(est.ModeKeys.PREDICT, predictions={"y": loss})
  assert list(spec.export_outputs) == ["serving_default"]


def test_predictions_must_be_dense_tensors(graph):
  _, loss, _ = _train_parts()
  sparse = tf.sparse.SparseTensor(indices=[[0]], values=[1.0], dense_shape=[1])
  for mode, extra in ((est.ModeKeys.EVAL, {"loss": loss}), (est.ModeKeys.PREDICT, {})):
    # tf.estimator's text names the key unquoted: predictions[number].
    with pytest.raises(TypeError, match=r"predictions\[number\] must be Tensor, given: 1.0"):
      est.EstimatorSpec(mode, predictions={"number": 1.0}, **extra)
    with pytest.raises(TypeError, match=r"predictions\[sparse\] must be Tensor.*to_dense"):
      est.EstimatorSpec(mode, predictions={"sparse": sparse}, **extra)
    with pytest.raises(TypeError, match=r"predictions must be Tensor, given: SparseTensor"):
      est.EstimatorSpec(mode, predictions=sparse, **extra)


def test_scaffold_and_export_outputs_keep_tf_estimators_texts(graph):
  _, loss, _ = _train_parts()
  with pytest.raises(TypeError, match=r"scaffold must be tf\.train\.Scaffold\. Given: nope"):
    est.EstimatorSpec(est.ModeKeys.EVAL, loss=loss, scaffold="nope")
  predictions = {"y": loss}
  with pytest.raises(TypeError, match="`export_outputs` must be dict, received: "):
    est.EstimatorSpec(est.ModeKeys.PREDICT, predictions=predictions, export_outputs=[1])
  with pytest.raises(TypeError, match="Values in `export_outputs` must be ExportOutput objects"):
    est.EstimatorSpec(est.ModeKeys.PREDICT, predictions=predictions,
                      export_outputs={"head": predictions})
  outputs = {name: est.export.PredictOutput(predictions) for name in ("a", "b")}
  with pytest.raises(ValueError, match="Multiple `export_outputs` were provided, but none of "
                     "them are specified as the default.*'serving_default'"):
    est.EstimatorSpec(est.ModeKeys.PREDICT, predictions=predictions, export_outputs=outputs)


def test_eval_metric_ops_values_are_validated(graph):
  _, loss, _ = _train_parts()
  value, update = tf.compat.v1.metrics.mean(loss)
  # A metric's value may be a nested structure of tensors, as in tf.estimator.
  nested = ((value, (tf.constant(2), loss)), update)
  ok = est.EstimatorSpec(est.ModeKeys.EVAL, loss=loss,
                         eval_metric_ops={"pair": (value, update), "nested": nested})
  assert ok.eval_metric_ops["nested"] is nested
  # A list is not a (metric_value, update_op) tuple in tf.estimator either.
  for bad in (value, [value, update], (value, update, value), ("value", update), 0.5):
    with pytest.raises(TypeError, match=r"\(metric_value, update_op\) tuples.*for key: bad\."):
      est.EstimatorSpec(est.ModeKeys.EVAL, loss=loss, eval_metric_ops={"bad": bad})
  with pytest.raises(TypeError, match="eval_metric_ops must be a dict"):
    est.EstimatorSpec(est.ModeKeys.EVAL, loss=loss, eval_metric_ops=[(value, update)])


def test_keras_metric_objects_must_be_updated_in_this_graph(graph):
  _, loss, _ = _train_parts()
  with pytest.raises(ValueError, match=r'Please call update_state\(\.\.\.\) on the "idle" metric'):
    est.EstimatorSpec(est.ModeKeys.EVAL, loss=loss,
                      eval_metric_ops={"m": tf.keras.metrics.Mean(name="idle")})
  with tf.Graph().as_default():
    elsewhere = tf.keras.metrics.Mean()
    elsewhere.update_state(1.0)
  with pytest.raises(ValueError, match='eval_metric_ops with "m: .*" must be from the default graph'):
    est.EstimatorSpec(est.ModeKeys.EVAL, loss=loss, eval_metric_ops={"m": elsewhere})


@pytest.mark.parametrize("mode", [est.ModeKeys.TRAIN, est.ModeKeys.EVAL, est.ModeKeys.PREDICT])
def test_keras_metric_objects_become_result_and_update_op_pairs(graph, mode):
  # As tf.estimator 2.15: the spec holds (metric.result(), metric.updates[0]),
  # so code reading or merging eval_metric_ops sees one kind of value.
  _, loss, train_op = _train_parts()
  mean = tf.keras.metrics.Mean()
  mean.update_state([1.0, 3.0])
  metric_ops = {"mean": mean}
  spec = est.EstimatorSpec(mode, loss=loss, train_op=train_op, predictions={"loss": loss},
                           eval_metric_ops=metric_ops)
  value, update_op = spec.eval_metric_ops["mean"]
  assert update_op is mean.updates[0]
  assert value.graph is graph and tf.is_tensor(value)
  assert metric_ops["mean"] is mean  # the caller's dict is left as it was
  with tf.compat.v1.Session() as session:
    session.run(tf.compat.v1.local_variables_initializer())
    session.run(update_op)
    session.run(update_op)
    assert session.run(value) == pytest.approx(2.0)


def test_keras_metric_variables_join_the_metric_collections(graph):
  _, loss, _ = _train_parts()
  mean = tf.keras.metrics.Mean()
  mean.update_state(loss)
  local_key, metric_key = (tf.compat.v1.GraphKeys.LOCAL_VARIABLES,
                           tf.compat.v1.GraphKeys.METRIC_VARIABLES)
  assert not set(mean.variables) & set(tf.compat.v1.get_collection(local_key))
  spec = est.EstimatorSpec(est.ModeKeys.EVAL, loss=loss, eval_metric_ops={"mean": mean})
  # Local: the Scaffold initialises them and checkpoints leave them out; METRIC_VARIABLES
  # is where tools such as TFMA look for them. Once each, however many specs.
  spec.replace(loss=loss)
  for key in (local_key, metric_key):
    collection = tf.compat.v1.get_collection(key)
    assert all(collection.count(v) == 1 for v in mean.variables), key
  assert not set(mean.variables) & set(tf.compat.v1.global_variables())


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
  # Not a list at all: the same TypeError, not TensorFlow's refusal to bool() a Tensor.
  with pytest.raises(TypeError, match=r"SessionRunHook instances, given: Tensor\("):
    est.EstimatorSpec(est.ModeKeys.TRAIN, loss=loss, train_op=train_op, training_hooks=loss)


def test_tensors_from_another_graph_are_rejected(graph):
  with tf.Graph().as_default():
    other_loss = tf.constant(1.0, name="other")
    other_op = tf.no_op(name="other_op")
  # tf.estimator's whole text, then what to do.
  expected = ('loss with "other:0" must be from the default graph. Possible causes of this '
              'error include: \n\n1) loss was created outside the context of the default '
              'graph.\n\n2) The object passed through to EstimatorSpec was not created in '
              'the most recent call to "model_fn". Build every tensor inside model_fn')
  with pytest.raises(ValueError) as raised:
    est.EstimatorSpec(est.ModeKeys.EVAL, loss=other_loss)
  assert str(raised.value).startswith(expected)
  loss = tf.constant(1.0)
  with pytest.raises(ValueError, match='train_op with "other_op" must be from the default'):
    est.EstimatorSpec(est.ModeKeys.TRAIN, loss=loss, train_op=other_op)
  with pytest.raises(ValueError, match='prediction values with "y: other:0" must be from'):
    est.EstimatorSpec(est.ModeKeys.PREDICT, predictions={"y": other_loss})
  with pytest.raises(ValueError, match='eval_metric_ops with "m: other_op" must be from'):
    est.EstimatorSpec(est.ModeKeys.EVAL, loss=loss, eval_metric_ops={"m": (loss, other_op)})
