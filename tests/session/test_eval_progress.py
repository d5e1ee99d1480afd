"""Evaluation's input must end, and a long evaluation says how far it has got.

* evaluate / train_and_evaluate / InMemoryEvaluatorHook with steps=None over a
  dataset tf.data knows to be infinite (`repeat()`) raise a ValueError naming
  `steps` before any session exists (tf.estimator hung there, silently);
* a finite dataset, one of unknown size, and an endless generator with steps
  still evaluate;
* every PROGRESS_LOG_SECS an evaluation logs "Evaluation: N batches so far
  of M" (steps, the dataset's size, or "unknown");
* predict has no steps: an endless input is fine there, the caller stops.
"""
import itertools
import os
import re
import time

import numpy as np
import pytest
import tensorflow as tf

import estimator_lite as est
from estimator_lite._session import eval_session


class _CountingHook(tf.compat.v1.train.SessionRunHook):
  """Counts begin() calls and session runs: how much evaluation work happened."""

  def __init__(self):
    self.begun = 0
    self.runs = 0

  def begin(self):
    self.begun += 1

  def after_run(self, run_context, run_values):
    del run_context, run_values
    self.runs += 1


def _dataset_input_fn(x, y, batch_size, make=lambda dataset: dataset):
  def input_fn():
    return make(tf.data.Dataset.from_tensor_slices(({"x": x}, y))).batch(batch_size)
  return input_fn


def _repeated(x, y):
  return _dataset_input_fn(x, y, 16, lambda dataset: dataset.repeat())


@pytest.fixture
def estimator(tmp_path, linear_model_fn):
  return est.Estimator(linear_model_fn, model_dir=str(tmp_path / "model"),
                       params={"learning_rate": 0.1})


@pytest.fixture
def trained(estimator, linear_data):
  estimator.train(_repeated(*linear_data), steps=2)
  return estimator


def _assert_names_steps(error):
  text = str(error)
  assert "steps" in text and "infinite" in text
  assert "steps=N" in text and ".take(N)" in text  # how to fix it


# -- an infinite input without steps ------------------------------------------------
def test_evaluate_infinite_dataset_without_steps_raises_before_any_session(
    estimator, linear_data):
  hook = _CountingHook()
  start = time.monotonic()
  with pytest.raises(ValueError, match=r"steps") as raised:
    estimator.evaluate(_repeated(*linear_data), hooks=[hook])
  assert time.monotonic() - start < 10
  _assert_names_steps(raised.value)
  # No checkpoint is needed to know: nothing began, nothing was written.
  assert estimator.latest_checkpoint() is None
  assert hook.begun == 0 and hook.runs == 0
  assert not os.path.exists(estimator.eval_dir())


def test_evaluate_infinite_dataset_with_steps_evaluates_those_batches(trained, linear_data):
  hook = _CountingHook()
  results = trained.evaluate(_repeated(*linear_data), steps=5, hooks=[hook])
  assert hook.runs == 5
  assert results["global_step"] == 2


def test_train_and_evaluate_infinite_eval_input_without_steps_raises(estimator, linear_data):
  train_spec = est.TrainSpec(_repeated(*linear_data), max_steps=2)
  eval_spec = est.EvalSpec(_repeated(*linear_data), steps=None, start_delay_secs=0,
                           throttle_secs=0)
  with pytest.raises(ValueError, match=r"steps=None") as raised:
    est.train_and_evaluate(estimator, train_spec, eval_spec)
  _assert_names_steps(raised.value)
  assert not os.path.exists(estimator.eval_dir())


def test_in_memory_evaluator_infinite_input_without_steps_raises(estimator, linear_data):
  evaluator = est.experimental.InMemoryEvaluatorHook(estimator, _repeated(*linear_data))
  with pytest.raises(ValueError, match=r"steps=None"):
    estimator.train(_repeated(*linear_data), steps=2, hooks=[evaluator])
  assert estimator.latest_checkpoint() is None  # refused when training began


# -- inputs that end, or whose end tf.data cannot know --------------------------------
def test_finite_dataset_without_steps_evaluates_every_batch(trained, linear_data):
  x, y = linear_data  # 64 examples in batches of 10: 7 batches, the last of 4
  hook = _CountingHook()
  results = trained.evaluate(_dataset_input_fn(x, y, 10), hooks=[hook])
  assert hook.runs == 7
  w = trained.get_variable_value("w")
  b = trained.get_variable_value("b")
  # The mean of the 7 batch losses: the last, short batch counts as much as the others.
  batch_losses = [np.mean((x[i:i + 10] @ w + b - y[i:i + 10]) ** 2) for i in range(0, 64, 10)]
  np.testing.assert_allclose(results["loss"], np.mean(batch_losses), rtol=1e-5)


def test_unknown_cardinality_without_steps_runs_to_the_end(trained, linear_data):
  x, y = linear_data
  keep_even = _dataset_input_fn(
      x, y, 8, lambda dataset: dataset.enumerate().filter(lambda i, _: tf.equal(i % 2, 0)).map(
          lambda _, example: example))
  hook = _CountingHook()
  trained.evaluate(keep_even, hooks=[hook])
  assert hook.runs == 4  # 32 of the 64 examples, in batches of 8


def test_endless_generator_with_steps_evaluates(trained):
  def endless():
    for i in itertools.count():
      yield {"x": np.full([2], i % 3, np.float32)}, np.float32([1.0])

  def input_fn():
    return tf.data.Dataset.from_generator(
        endless, output_signature=({"x": tf.TensorSpec([2], tf.float32)},
                                   tf.TensorSpec([1], tf.float32))).batch(4)

  hook = _CountingHook()
  results = trained.evaluate(input_fn, steps=3, hooks=[hook])
  assert hook.runs == 3 and np.isfinite(results["loss"])


# -- progress lines -------------------------------------------------------------------
_PROGRESS = re.compile(r"^Evaluation: (\d+) batches so far of (\S+) \(\d+ secs\)\.$")


def _slow_input_fn(x, y, batch_size, make=lambda dataset: dataset, secs=0.03):
  """Batches that take `secs` each to read: an evaluation slow enough to report on."""
  def sleep(batch_index):
    time.sleep(secs)
    return batch_index

  def slow(dataset):
    dataset = make(dataset).batch(batch_size)
    return dataset.map(
        lambda features, labels: (
            {"x": features["x"] + 0.0 * tf.cast(tf.py_function(
                sleep, [tf.constant(0)], tf.int32), tf.float32)}, labels))

  def input_fn():
    return slow(tf.data.Dataset.from_tensor_slices(({"x": x}, y)))
  return input_fn


def _progress_lines(logs):
  return [m for m in (_PROGRESS.match(line) for line in logs.messages) if m]


@pytest.mark.parametrize("case", ["steps", "known size", "unknown size"])
def test_progress_is_logged_with_batches_so_far_and_total(trained, linear_data, tf_logs,
                                                          monkeypatch, case):
  monkeypatch.setattr(eval_session, "PROGRESS_LOG_SECS", 0.1)
  x, y = linear_data
  if case == "steps":  # 32 batches of 2, 20 of them evaluated
    input_fn, steps, total = _slow_input_fn(x, y, 2), 20, "20"
  elif case == "known size":  # 64 examples in batches of 4
    input_fn, steps, total = _slow_input_fn(x, y, 4), None, "16"
  else:
    input_fn = _slow_input_fn(x, y, 4, lambda dataset: dataset.filter(lambda f, _: True))
    steps, total = None, "unknown"
  hook = _CountingHook()
  trained.evaluate(input_fn, steps=steps, hooks=[hook])
  lines = _progress_lines(tf_logs)
  assert len(lines) >= 2, tf_logs.text
  assert {m.group(2) for m in lines} == {total}
  counts = [int(m.group(1)) for m in lines]
  assert counts == sorted(counts) and 0 < counts[-1] <= hook.runs


def test_short_evaluation_logs_no_progress(trained, linear_data, tf_logs):
  assert eval_session.PROGRESS_LOG_SECS == 10.0  # the documented interval
  trained.evaluate(_dataset_input_fn(*linear_data, 16))
  assert not _progress_lines(tf_logs)
  assert "Finished evaluation" in tf_logs.text


# -- predict: no steps, the caller stops ----------------------------------------------
def test_predict_over_repeated_dataset_warns_and_stops_when_the_caller_does(
    trained, linear_data, tf_logs):
  x, _ = linear_data

  def input_fn():
    return tf.data.Dataset.from_tensor_slices({"x": x}).repeat().batch(16)

  predictions = list(itertools.islice(trained.predict(input_fn), 100))
  assert len(predictions) == 100
  assert "input_fn returned an infinite tf.data.Dataset" in tf_logs.text
  assert "so predict yields forever: stop iterating when you have enough" in tf_logs.text
  # A finite dataset draws no such warning.
  finite = list(trained.predict(lambda: tf.data.Dataset.from_tensor_slices({"x": x}).batch(16)))
  assert len(finite) == len(x)
  assert tf_logs.text.count("so predict yields forever") == 1
  expected = x @ trained.get_variable_value("w") + trained.get_variable_value("b")
  np.testing.assert_allclose([p["y"] for p in predictions],
                             np.concatenate([expected, expected])[:100], rtol=1e-5, atol=1e-6)
