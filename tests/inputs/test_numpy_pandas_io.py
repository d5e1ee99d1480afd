"""estimator_lite.inputs: numpy_input_fn and pandas_input_fn with tf.estimator's semantics."""
import glob
import os
import re

import numpy as np
import pytest
import tensorflow as tf

import estimator_lite as est
from estimator_lite._graph import input_fn as input_fn_lib
from estimator_lite.inputs import numpy_input_fn
from estimator_lite.inputs import pandas_input_fn

_SHUFFLE_MESSAGE = re.escape(
    "shuffle must be provided and explicitly set as boolean (it is recommended to set "
    "it as True for training); got")


def _run_to_end(session, element, limit):
  batches = []
  while len(batches) < limit:
    try:
      batches.append(session.run(element))
    except tf.errors.OutOfRangeError:
      break
  return batches


def _read_all(input_fn, seed=None, limit=100):
  """Calls input_fn in a graph as an Estimator does, and reads its Dataset to the end."""
  with tf.Graph().as_default():
    tf.compat.v1.set_random_seed(seed)
    dataset = input_fn_lib.call_input_fn(input_fn, est.ModeKeys.TRAIN, {}, None)
    assert isinstance(dataset, tf.data.Dataset)
    iterator = tf.compat.v1.data.make_initializable_iterator(dataset)
    element = iterator.get_next()
    with tf.compat.v1.Session() as session:
      session.run(iterator.initializer)
      return element, _run_to_end(session, element, limit)


def _read_directly(input_fn, limit=100):
  """Calls input_fn in a graph as tf.estimator's programs and tests did: it returns
  tensors, which each Session runs batch by batch to OutOfRangeError."""
  with tf.Graph().as_default():
    element = input_fn()
    assert not isinstance(element, tf.data.Dataset)
    readings = []
    for _ in range(2):  # a new Session starts from the first batch again
      with tf.compat.v1.Session() as session:
        coordinator = tf.compat.v1.train.Coordinator()
        threads = tf.compat.v1.train.start_queue_runners(session, coord=coordinator)
        readings.append(_run_to_end(session, element, limit))
        coordinator.request_stop()
        coordinator.join(threads)
    return element, readings


def _assert_same_batches(first, second):
  assert len(first) == len(second)
  for a, b in zip(first, second):
    tf.nest.map_structure(np.testing.assert_array_equal, a, b)


def test_numpy_batches_run_through_epochs_keep_last_partial_batch_and_end():
  x = np.arange(10.0)
  element, batches = _read_all(numpy_input_fn(x, x * 10, batch_size=4, num_epochs=2,
                                              shuffle=False))
  features, labels = element  # an array x gives a bare Tensor, not a dict
  assert isinstance(features, tf.Tensor) and features.shape.as_list() == [None]
  # As tf.estimator's queues: batches span epochs, only the very last is short.
  assert [list(f) for f, _ in batches] == [
      [0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 0, 1], [2, 3, 4, 5], [6, 7, 8, 9]]
  for f, l in batches:
    np.testing.assert_array_equal(l, f * 10)

  _, batches = _read_all(numpy_input_fn(x, batch_size=4, num_epochs=1, shuffle=False))
  assert [len(b) for b in batches] == [4, 4, 2]  # features only, partial batch kept


def test_called_directly_the_input_fns_return_tensors_as_tf_estimators_did():
  x = {"a": np.arange(10.0), "b": np.arange(10) * 2}
  y = np.arange(10) * 10
  make = lambda **kw: numpy_input_fn(x, y, batch_size=4, shuffle=False, **kw)
  (features, labels), readings = _read_directly(make(num_epochs=2))
  assert sorted(features) == ["a", "b"] and isinstance(labels, tf.Tensor)
  _, through_estimator = _read_all(make(num_epochs=2))
  for batches in readings:
    _assert_same_batches(batches, through_estimator)
  # num_epochs=0, as tf.estimator allowed: the input ends before a batch.
  _, readings = _read_directly(make(num_epochs=0))
  assert readings == [[], []]
  pd = pytest.importorskip("pandas")
  frame = pd.DataFrame(x)
  (features, target), readings = _read_directly(
      pandas_input_fn(frame, pd.Series(y), batch_size=3, shuffle=False))
  assert sorted(features) == ["a", "b"] and isinstance(target, tf.Tensor)
  assert [list(t) for _, t in readings[0]] == [[0, 10, 20], [30, 40, 50], [60, 70, 80], [90]]


def test_a_users_input_fn_that_unpacks_numpy_input_fn_trains_and_evaluates(tmp_path):
  # tf.estimator-era code: `features, labels = numpy_input_fn(...)()` inside
  # the program's own input_fn, then more features built from the tensors.
  x = np.random.RandomState(2).uniform(-1, 1, (64, 2)).astype(np.float32)
  y = (x[:, 0] > 0).astype(np.int64)

  def input_fn(epochs):
    features, labels = numpy_input_fn({"x": x}, y, batch_size=16, num_epochs=epochs,
                                      shuffle=False)()
    features["x"] = features["x"] * 2.0
    return features, labels

  estimator = est.Estimator(_logistic_model_fn, str(tmp_path))
  estimator.train(lambda: input_fn(5))
  assert estimator.get_variable_value("global_step") == 20  # 5 epochs of 4 batches
  results = estimator.evaluate(lambda: input_fn(1))
  assert results["global_step"] == 20 and results["accuracy"] > 0.9


def test_numpy_dict_x_and_y_repeat_forever_with_static_batch():
  x = {"b": np.arange(5.0)[:, None] * np.ones((5, 2)), "a": np.arange(5)}
  y = {"y1": np.arange(5), "y2": -np.arange(5)}
  (features, labels), batches = _read_all(
      numpy_input_fn(x, y, batch_size=3, num_epochs=None, shuffle=False), limit=4)
  assert sorted(features) == ["a", "b"] and sorted(labels) == ["y1", "y2"]
  assert features["b"].shape.as_list() == [3, 2]  # num_epochs=None: full batches
  assert features["a"].dtype == tf.int64 and features["b"].dtype == tf.float64
  assert [list(f["a"]) for f, _ in batches] == [[0, 1, 2], [3, 4, 0], [1, 2, 3], [4, 0, 1]]
  for f, l in batches:
    np.testing.assert_array_equal(l["y2"], -f["a"])
    np.testing.assert_array_equal(f["b"][:, 1], f["a"])


def test_numpy_shuffle_is_a_permutation_per_epoch_and_seeded():
  x = np.arange(50)
  make = lambda: numpy_input_fn(x, batch_size=10, num_epochs=3, shuffle=True)
  _, batches = _read_all(make(), seed=7)
  rows = np.concatenate(batches)
  assert len(rows) == 150
  for epoch in range(3):
    assert sorted(rows[epoch * 50:(epoch + 1) * 50]) == list(range(50))
  assert list(rows[:50]) != list(range(50))
  # The same graph seed gives the same order in a new program (a new input_fn).
  _, again = _read_all(make(), seed=7)
  np.testing.assert_array_equal(np.concatenate(again), rows)
  # A second reading by the same input_fn (train() called again) is a new
  # order, so a loop of short train() calls does not see the same rows.
  fn = make()
  _, first = _read_all(fn, seed=7)
  _, second = _read_all(fn, seed=7)
  assert list(np.concatenate(first)) != list(np.concatenate(second))


def test_numpy_input_fn_errors_keep_tf_estimator_wording():
  x = np.arange(10.0)
  for bad in (None, 1, "True"):
    with pytest.raises(ValueError, match=_SHUFFLE_MESSAGE):
      numpy_input_fn(x, shuffle=bad)
  with pytest.raises(ValueError, match="batch_size must be a positive int; got 0"):
    numpy_input_fn(x, batch_size=0, shuffle=False)
  cases = [
      (dict(x={}), ValueError, "x cannot be an empty dict"),
      (dict(x=np.array([])), ValueError, "x cannot be an empty array"),
      (dict(x=[1, 2]), TypeError, "x must be a dict or array; got list"),
      (dict(x={"a": x}, y={}), ValueError, "y cannot be empty dict"),
      (dict(x={"a": x}, y={"a": x}), ValueError, "1 duplicate keys are found in both x and y"),
      (dict(x={"a": x}, y=np.arange(3)), ValueError,
       r"Length of tensors in x and y is mismatched(.|\n)*Shapes in x: \{'a': \(10,\)\}"
       r"(.|\n)*Shapes in y: \(3,\)"),
  ]
  for kwargs, error, message in cases:
    input_fn = numpy_input_fn(shuffle=False, **kwargs)  # checked when called, as tf.estimator
    with tf.Graph().as_default(), pytest.raises(error, match=message):
      input_fn()


def test_numpy_strings_and_a_feature_named_like_the_target():
  x = {"s": np.array(["a", "bb", "c"]), "__target_key__": np.arange(3)}
  y = np.array([b"x", b"y", b"z"], dtype=object)
  _, batches = _read_all(numpy_input_fn(x, y, batch_size=2, shuffle=False))
  assert [list(f["s"]) for f, _ in batches] == [[b"a", b"bb"], [b"c"]]
  assert [list(f["__target_key__"]) for f, _ in batches] == [[0, 1], [2]]
  assert [list(l) for _, l in batches] == [[b"x", b"y"], [b"z"]]


def _logistic_model_fn(features, labels, mode):
  x = features["x"] if isinstance(features, dict) else features
  w = tf.compat.v1.get_variable("w", [x.shape[1], 1],
                                initializer=tf.compat.v1.zeros_initializer())
  logits = tf.matmul(tf.cast(x, tf.float32), w)
  predictions = {"row": tf.cast(x[:, 0], tf.float32), "logit": logits[:, 0]}
  if mode == est.ModeKeys.PREDICT:
    return est.EstimatorSpec(mode, predictions=predictions)
  labels = tf.reshape(tf.cast(labels, tf.float32), [-1, 1])
  loss = tf.compat.v1.losses.sigmoid_cross_entropy(labels, logits)
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.5).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  accuracy = tf.compat.v1.metrics.accuracy(labels, tf.cast(logits > 0, tf.float32))
  return est.EstimatorSpec(mode, loss=loss, train_op=train_op,
                           eval_metric_ops={"accuracy": accuracy})


def test_large_array_is_not_embedded_in_graph_files(tmp_path):
  rows, width = 12_800, 1024
  x = np.random.RandomState(0).uniform(-1, 1, (rows, width)).astype(np.float32)
  assert x.nbytes >= 50e6
  x[:, 0] = np.arange(rows)  # column 0: the row number, to check prediction order
  y = (x[:, 1] > 0).astype(np.int64)
  estimator = est.Estimator(
      _logistic_model_fn, str(tmp_path),
      config=est.RunConfig(tf_random_seed=1, save_checkpoints_steps=100))
  estimator.train(numpy_input_fn({"x": x}, y, batch_size=128, num_epochs=None,
                                 shuffle=True), steps=200)
  assert estimator.get_variable_value("global_step") == 200
  graph_files = glob.glob(str(tmp_path / "graph.pbtxt")) + glob.glob(str(tmp_path / "*.meta"))
  assert len(graph_files) >= 3
  for path in graph_files:  # the 52 MB array is not a graph constant
    assert os.path.getsize(path) < 1_000_000, path
  # Evaluation reads exactly one epoch (the last batch is partial).
  results = estimator.evaluate(numpy_input_fn({"x": x}, y, batch_size=1000, shuffle=False))
  assert results["global_step"] == 200 and 0.0 <= results["accuracy"] <= 1.0
  # Prediction sees every row once, in order.
  head = {"x": x[:300]}
  rows_seen = [p["row"] for p in estimator.predict(
      numpy_input_fn(head, batch_size=128, shuffle=False))]
  np.testing.assert_array_equal(rows_seen, np.arange(300))


def test_pandas_input_fn_series_and_frame_targets_and_errors(tmp_path):
  pd = pytest.importorskip("pandas")
  frame = pd.DataFrame({"a": np.arange(5), "b": np.arange(5.0) * 2},
                       index=np.arange(100, 105))
  series = pd.Series(np.arange(5) * 3, index=frame.index)
  (features, target), batches = _read_all(
      pandas_input_fn(frame, series, batch_size=2, shuffle=False))
  assert sorted(features) == ["a", "b"] and isinstance(target, tf.Tensor)
  assert [(list(f["a"]), list(t)) for f, t in batches] == [
      ([0, 1], [0, 3]), ([2, 3], [6, 9]), ([4], [12])]
  # A DataFrame y gives a labels dict under y's own names, even one also in x.
  targets = pd.DataFrame({"t1": np.arange(5), "a": -np.arange(5)}, index=frame.index)
  _, batches = _read_all(pandas_input_fn(frame, targets, batch_size=3, shuffle=False))
  features, labels = batches[0]
  assert sorted(labels) == ["a", "t1"]
  np.testing.assert_array_equal(labels["a"], -features["a"])
  # The frame is copied when pandas_input_fn is called.
  input_fn = pandas_input_fn(frame, batch_size=5, shuffle=False, num_epochs=None)
  frame.loc[100, "a"] = 42
  _, batches = _read_all(input_fn, limit=2)
  assert list(batches[1]["a"]) == [0, 1, 2, 3, 4]

  with pytest.raises(ValueError, match="Index for x and y are mismatched"):
    pandas_input_fn(frame, pd.Series(np.arange(5)), shuffle=False)
  with pytest.raises(ValueError, match="Cannot use name target for target column"):
    pandas_input_fn(frame.assign(target=1), series, shuffle=False)
  with pytest.raises(TypeError, match="target_column must be a string type"):
    pandas_input_fn(frame, series, shuffle=False, target_column=3)
  with pytest.raises(ValueError, match=_SHUFFLE_MESSAGE):
    pandas_input_fn(frame)

  # End to end: an Estimator trains and evaluates on a DataFrame.
  rng = np.random.RandomState(1)
  data = pd.DataFrame({"f0": rng.uniform(-1, 1, 200), "f1": rng.uniform(-1, 1, 200)})
  label = pd.Series((data["f0"] > 0).astype(np.int64), index=data.index)

  def model_fn(features, labels, mode):
    stacked = tf.stack([tf.cast(features["f0"], tf.float32),
                        tf.cast(features["f1"], tf.float32)], axis=1)
    return _logistic_model_fn({"x": stacked}, labels, mode)

  estimator = est.Estimator(model_fn, str(tmp_path / "pandas"))
  estimator.train(pandas_input_fn(data, label, batch_size=20, num_epochs=20, shuffle=True))
  assert estimator.get_variable_value("global_step") == 200  # 20 epochs of 10 batches
  results = estimator.evaluate(pandas_input_fn(data, label, batch_size=64, shuffle=False))
  assert results["accuracy"] > 0.9
