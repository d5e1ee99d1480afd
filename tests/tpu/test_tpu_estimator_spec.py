"""TPUEstimatorSpec: 2.15's namedtuple and checks, and the EstimatorSpec it stands for on CPU."""
import pytest
import tensorflow as tf

import estimator_lite as est

tpu = est.tpu


def _graph_tensors():
  loss = tf.constant([0.5])
  step = tf.compat.v1.train.get_or_create_global_step()
  train_op = tf.compat.v1.assign_add(step, 1)
  return loss, train_op


def test_a_namedtuple_with_estimator_specs_checks_and_normal_forms():
  with tf.Graph().as_default():
    loss, train_op = _graph_tensors()
    spec = tpu.TPUEstimatorSpec(est.ModeKeys.TRAIN, loss=loss, train_op=train_op)
    assert isinstance(spec, tuple) and spec._fields[4] == "eval_metrics"
    assert spec.loss.shape == []  # shape [1] made scalar, as EstimatorSpec does
    assert spec.training_hooks == () and spec._replace(host_call=None) == spec
    with pytest.raises(ValueError, match="Missing train_op"):
      tpu.TPUEstimatorSpec(est.ModeKeys.TRAIN, loss=loss)
    predictions = {"y": tf.constant([[1.0]])}
    spec = tpu.TPUEstimatorSpec(est.ModeKeys.PREDICT, predictions=predictions)
    assert list(spec.export_outputs) == ["serving_default"]


@pytest.mark.parametrize("host_call, error, text", [
    ([lambda x: x], ValueError, "host_call should have two elements"),
    ("fn", ValueError, "host_call should be tuple or list"),
    ((1, []), TypeError, r"host_call\[0\] should be callable"),
    ((lambda x: x, 3), ValueError, r"host_call\[1\] should be tuple or list, or dict"),
    ((lambda x, y: x, [1]), RuntimeError,
     "length of tensors 1 does not match method args of the function, which takes 2"),
])
def test_host_call_and_eval_metrics_are_checked_as_2_15_did(host_call, error, text):
  with tf.Graph().as_default():
    loss, train_op = _graph_tensors()
    with pytest.raises(error, match=text):
      tpu.TPUEstimatorSpec(est.ModeKeys.TRAIN, loss=loss, train_op=train_op, host_call=host_call)
    with pytest.raises(error, match=text.replace("host_call", "eval_metrics")):
      tpu.TPUEstimatorSpec(est.ModeKeys.EVAL, loss=loss, eval_metrics=host_call)
  # A function of *args takes any number of tensors.
  with tf.Graph().as_default():
    loss, train_op = _graph_tensors()
    tpu.TPUEstimatorSpec(est.ModeKeys.TRAIN, loss=loss, train_op=train_op,
                         host_call=(lambda *tensors: [], [loss, loss, loss]))


def test_hooks_must_be_session_run_hooks():
  with tf.Graph().as_default():
    loss, train_op = _graph_tensors()
    with pytest.raises(TypeError, match="All hooks must be SessionRunHook instances, given: 3"):
      tpu.TPUEstimatorSpec(est.ModeKeys.TRAIN, loss=loss, train_op=train_op,
                           evaluation_hooks=[3])


def test_as_estimator_spec_calls_the_functions_in_the_graph():
  with tf.Graph().as_default():
    loss, train_op = _graph_tensors()
    labels = tf.constant([1, 0])
    logits = tf.constant([[0.0, 1.0], [1.0, 0.0]])
    seen = []

    def metric_fn(labels, logits):
      return {"accuracy": tf.compat.v1.metrics.accuracy(labels, tf.argmax(logits, 1))}

    def host_fn(value):
      seen.append(value)
      return [tf.identity(value)]

    spec = tpu.TPUEstimatorSpec(
        est.ModeKeys.EVAL, loss=loss, eval_metrics=(metric_fn, {"labels": labels,
                                                                "logits": logits}),
        host_call=(host_fn, [tf.reshape(loss, [1])]),
        scaffold_fn=lambda: tf.compat.v1.train.Scaffold(init_op=tf.no_op(name="my_init")))
    estimator_spec = spec.as_estimator_spec()
    assert isinstance(estimator_spec, est.EstimatorSpec)
    assert list(estimator_spec.eval_metric_ops) == ["accuracy"]
    assert estimator_spec.scaffold.init_op.name == "my_init"
    assert len(seen) == 1
    # The host call's result runs in every mode's hooks.
    for hooks in (estimator_spec.training_hooks, estimator_spec.evaluation_hooks,
                  estimator_spec.prediction_hooks):
      assert len(hooks) == 1

    def wrong_names(value):
      return [value]

    with pytest.raises(TypeError):
      tpu.TPUEstimatorSpec(est.ModeKeys.EVAL, loss=loss,
                           host_call=(wrong_names, {"other": loss})).as_estimator_spec()


def test_embedding_config_spec_is_2_15s_namedtuple_and_checks():
  column = tf.feature_column.numeric_column("x")
  spec = tpu.experimental.EmbeddingConfigSpec(feature_columns=[column])
  assert spec.partition_strategy == "div" and spec.feature_columns == [column]
  with pytest.raises(ValueError, match="Exactly one of `feature_columns` and the pair"):
    tpu.experimental.EmbeddingConfigSpec()
  with pytest.raises(ValueError, match='Invalid partition_strategy invalid. Must be one of '
                                       '"mod" or "div"'):
    tpu.experimental.EmbeddingConfigSpec(feature_columns=[column], partition_strategy="invalid")
