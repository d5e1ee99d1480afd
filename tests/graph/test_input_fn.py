"""input_fn: every return form tf.estimator accepted, the arguments it may take, clear errors."""
import json

import numpy as np
import pandas as pd
import pytest

import estimator_lite as est
from estimator_lite._graph import input_fn as _inputs
import tensorflow as tf


class _CountRuns(est.SessionRunHook):

  def __init__(self):
    self.runs = 0

  def after_run(self, run_context, run_values):
    self.runs += 1


def _structure(value):
  if isinstance(value, dict):
    return {key: _structure(item) for key, item in value.items()}
  if isinstance(value, tf.Tensor):
    return "tensor"
  return repr(value)


def _recording_model_fn(seen):
  """A linear model_fn that records the structure of what it receives, per mode."""
  def model_fn(features, labels, mode):
    x = features["x"] if isinstance(features, dict) else features
    seen[mode] = {"features": _structure(features), "labels": _structure(labels)}
    w = tf.compat.v1.get_variable("w", [2, 1], initializer=tf.compat.v1.zeros_initializer())
    prediction = tf.matmul(x, w)
    if mode == est.ModeKeys.PREDICT:
      return est.EstimatorSpec(mode, predictions={"y": prediction})
    y = labels["y"] if isinstance(labels, dict) else labels
    loss = tf.compat.v1.losses.mean_squared_error(y, prediction)
    train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
        loss, global_step=tf.compat.v1.train.get_global_step())
    return est.EstimatorSpec(mode, loss=loss, train_op=train_op)
  return model_fn


def test_dataset_of_features_and_labels_and_of_features_only(tmp_path, linear_data):
  x, y = linear_data
  seen = {}
  estimator = est.Estimator(_recording_model_fn(seen), model_dir=str(tmp_path))
  estimator.train(lambda: tf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat().batch(8),
                  steps=3)
  assert seen[est.ModeKeys.TRAIN] == {"features": {"x": "tensor"}, "labels": "tensor"}
  counter = _CountRuns()
  results = estimator.evaluate(
      lambda: tf.data.Dataset.from_tensor_slices(({"x": x}, y)).batch(8), hooks=[counter])
  assert results["global_step"] == 3
  # Evaluation read the whole finite dataset, 64 / 8 batches, and stopped.
  assert counter.runs == 8
  predictions = list(estimator.predict(
      lambda: tf.data.Dataset.from_tensor_slices({"x": x}).batch(8)))
  assert seen[est.ModeKeys.PREDICT] == {"features": {"x": "tensor"}, "labels": "None"}
  assert len(predictions) == len(x)
  # A plain Tensor (not a dict) as features works too.
  batches = list(estimator.predict(
      lambda: tf.data.Dataset.from_tensor_slices(x).batch(32), yield_single_examples=False))
  assert [b["y"].shape for b in batches] == [(32, 1), (32, 1)]


def test_tuple_of_tensors_and_of_dicts(tmp_path, linear_data):
  x, y = linear_data
  seen = {}
  estimator = est.Estimator(_recording_model_fn(seen), model_dir=str(tmp_path))
  estimator.train(lambda: (tf.constant(x), tf.constant(y)), steps=2)
  assert seen[est.ModeKeys.TRAIN] == {"features": "tensor", "labels": "tensor"}
  estimator.train(lambda: ({"x": tf.constant(x)}, {"y": tf.constant(y)}), steps=2)
  assert seen[est.ModeKeys.TRAIN] == {"features": {"x": "tensor"}, "labels": {"y": "tensor"}}
  assert estimator.get_variable_value("global_step") == 4
  # Tensors never run out: evaluation needs steps.
  results = estimator.evaluate(lambda: ({"x": tf.constant(x)}, {"y": tf.constant(y)}), steps=2)
  assert seen[est.ModeKeys.EVAL] == {"features": {"x": "tensor"}, "labels": {"y": "tensor"}}
  assert results["global_step"] == 4 and np.isfinite(results["loss"])


def test_input_fn_receives_params_config_mode_and_input_context(tmp_path, linear_data):
  x, y = linear_data
  received = []

  def input_fn(params, config, mode, input_context):
    received.append((params, config, mode, input_context))
    return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat().batch(params["batch"])

  def model_fn(features, labels, mode, params):
    del params
    return _recording_model_fn({})(features, labels, mode)

  config = est.RunConfig(tf_random_seed=2)
  estimator = est.Estimator(model_fn, model_dir=str(tmp_path), config=config,
                            params={"batch": 4})
  estimator.train(input_fn, steps=1)
  estimator.evaluate(input_fn, steps=1)
  assert [r[2] for r in received] == [est.ModeKeys.TRAIN, est.ModeKeys.EVAL]
  params, got_config, _, input_context = received[0]
  assert params == {"batch": 4}
  assert isinstance(got_config, est.RunConfig)
  assert got_config.model_dir == str(tmp_path) and got_config.tf_random_seed == 2
  assert isinstance(input_context, tf.distribute.InputContext)
  assert (input_context.num_input_pipelines, input_context.input_pipeline_id) == (1, 0)


def test_input_fn_taking_only_some_arguments(tmp_path, linear_data):
  x, y = linear_data
  modes = []

  def input_fn(mode):
    modes.append(mode)
    return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat().batch(8)

  estimator = est.Estimator(_recording_model_fn({}), model_dir=str(tmp_path))
  estimator.train(input_fn, steps=1)
  assert modes == [est.ModeKeys.TRAIN]
  with pytest.raises(TypeError, match=r"requires argument\(s\) \['batch_size'\]"):
    estimator.train(lambda batch_size: None, steps=1)
  # tf.estimator's error was TensorFlow's "unsupported callable", a TypeError.
  with pytest.raises(TypeError, match="unsupported callable: input_fn must be callable"):
    estimator.train(input_fn(est.ModeKeys.TRAIN), steps=1)


def test_plain_python_and_numpy_values_reach_model_fn_unchanged(tmp_path, linear_data, tf_logs):
  # tf.estimator passed such values to model_fn as they were (model_fn's ops
  # convert them), in every mode.
  x, y = linear_data
  x_list = x.tolist()
  received = {}

  def model_fn(features, labels, mode):
    received[mode] = (features, labels)
    return _recording_model_fn({})(
        {"x": tf.cast(features["x"], tf.float32)}, labels, mode)

  ids = pd.Series(np.arange(len(x)))  # array-likes too, e.g. from dict(data_frame)
  estimator = est.Estimator(model_fn, model_dir=str(tmp_path))
  estimator.train(lambda: ({"x": x, "scale": 2.0, "name": "a", "ids": ids}, y), steps=2)
  features, labels = received[est.ModeKeys.TRAIN]
  assert features["x"] is x and labels is y and features["ids"] is ids
  assert features["scale"] == 2.0 and features["name"] == "a"
  results = estimator.evaluate(lambda: ({"x": x_list}, y.tolist()), steps=1)
  assert received[est.ModeKeys.EVAL] == ({"x": x_list}, y.tolist())
  assert results["global_step"] == 2 and np.isfinite(results["loss"])

  # Constant features never run out, so predict would yield forever:
  # tf.estimator's warning, through tf.compat.v1.logging, says so.
  tf_logs.clear()
  batch = next(estimator.predict(lambda: {"x": x}, yield_single_examples=False))
  assert received[est.ModeKeys.PREDICT] == ({"x": x}, None)
  assert batch["y"].shape == (64, 1)
  assert ("Input graph does not use tf.data.Dataset or contain a QueueRunner. That "
          "means predict yields forever. This is probably a mistake.") in tf_logs.text
  tf_logs.clear()
  assert len(list(estimator.predict(
      lambda: tf.data.Dataset.from_tensor_slices({"x": x}).batch(32)))) == 64
  assert "QueueRunner" not in tf_logs.text


def test_nested_tuple_features_from_a_dataset(tmp_path, linear_data):
  # A dataset element ((x, ids), y): features is the inner tuple, in every mode.
  x, y = linear_data
  ids = np.arange(len(x), dtype=np.int64)
  received = {}

  def model_fn(features, labels, mode):
    dense, example_ids = features
    received[mode] = (type(features), example_ids.dtype)
    return _recording_model_fn({})(dense, labels, mode)

  def input_fn():
    features = tf.data.Dataset.from_tensor_slices((x, ids))
    return tf.data.Dataset.zip((features, tf.data.Dataset.from_tensor_slices(y))).batch(16)

  estimator = est.Estimator(model_fn, model_dir=str(tmp_path))
  estimator.train(input_fn, steps=3)
  assert estimator.evaluate(input_fn)["global_step"] == 3
  # A pair is (features, labels) in every mode; predict ignores the labels.
  assert len(list(estimator.predict(input_fn))) == len(x)
  assert received == {mode: (tuple, tf.int64) for mode in est.ModeKeys.all()}


def _a_generator():
  yield {"x": 1.0}, 2.0


@pytest.mark.parametrize("returned,error,pattern", [
    (lambda: [tf.constant(1.0)] * 3, ValueError,
     r"input_fn should return \(features, labels\) as a len 2 tuple\. It returned a list "
     r"of length 3"),
    (lambda: None, TypeError, r"no features \(None\)"),
    (_a_generator, TypeError,
     r"features = <generator object.*neither a tensor nor a value convertible to one.*"
     r"input_fn returned generator"),
    (lambda: tf.data.Dataset.from_tensors((1.0, 2.0, 3.0)), ValueError,
     r"len 2 tuple\. It returned a tuple of length 3"),
    (lambda: ({"x": tf.constant(1.0)}, {"y": [1, None]}), TypeError,
     r"labels\['y'\]\[1\] = None, which is neither a tensor"),
    (lambda: ({"x": (tf.constant(1.0), object())}, 1.0), TypeError,
     r"features\['x'\]\[1\] = <object object.*neither a tensor"),
], ids=["list_of_3", "none", "generator", "dataset_of_triples", "none_in_labels",
        "object_in_features"])
def test_unsupported_return_names_what_was_returned(tmp_path, returned, error, pattern):
  estimator = est.Estimator(_recording_model_fn({}), model_dir=str(tmp_path))
  with pytest.raises(error, match=pattern):
    estimator.train(returned, steps=1)


class _InputFnCalled(Exception):
  """Raised by a recording input_fn: stops Estimator.train before it needs the cluster."""


_SHARDED_CLUSTER = {"chief": ["localhost:1"], "worker": ["localhost:2", "localhost:3"],
                    "ps": ["localhost:4"]}


@pytest.mark.parametrize("task_type, task_id, expected", [
    ("chief", 0, (3, 0)), ("worker", 0, (3, 1)), ("worker", 1, (3, 2))])
def test_each_training_task_gets_its_own_input_pipeline(monkeypatch, tmp_path, task_type,
                                                        task_id, expected):
  monkeypatch.setenv("TF_CONFIG", json.dumps(
      {"cluster": _SHARDED_CLUSTER, "task": {"type": task_type, "index": task_id}}))
  estimator = est.Estimator(_recording_model_fn({}), model_dir=str(tmp_path))
  received = {}

  def input_fn(mode, input_context):
    received[mode] = input_context
    # input_fn is called while the graph is built, before any session: stop
    # there, so this runs in-process without the cluster's servers.
    raise _InputFnCalled()

  with pytest.raises(_InputFnCalled):
    estimator.train(input_fn, steps=1)
  context = received[est.ModeKeys.TRAIN]
  assert isinstance(context, tf.distribute.InputContext)
  assert (context.num_input_pipelines, context.input_pipeline_id) == expected
  assert context.num_replicas_in_sync == 1

  # The shards the three tasks read with the documented dataset.shard(...) are
  # disjoint and cover the data.
  rows = tf.data.Dataset.range(9).shard(context.num_input_pipelines, context.input_pipeline_id)
  assert [int(r) for r in rows] == list(range(expected[1], 9, 3))

  # Evaluation and prediction run in this one process, which must see all of
  # its input (a master evaluating between saves, or a user's own call).
  with pytest.raises(_InputFnCalled):
    estimator.evaluate(input_fn, steps=1)
  with pytest.raises(_InputFnCalled):
    next(estimator.predict(input_fn))
  for mode in (est.ModeKeys.EVAL, est.ModeKeys.PREDICT):
    assert (received[mode].num_input_pipelines, received[mode].input_pipeline_id) == (1, 0)


@pytest.mark.parametrize("task_type", ["ps", "evaluator"])
def test_ps_and_evaluator_read_one_whole_pipeline(monkeypatch, task_type):
  monkeypatch.setenv("TF_CONFIG", json.dumps(
      {"cluster": _SHARDED_CLUSTER, "task": {"type": task_type, "index": 0}}))
  config = est.RunConfig()
  for mode in est.ModeKeys.all():
    context = _inputs.input_context_for(config, mode)
    assert (context.num_input_pipelines, context.input_pipeline_id) == (1, 0)
