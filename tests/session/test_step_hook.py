"""TrainingStepHook does what TensorFlow's five default training hooks did, step for step.

The same graph is trained twice through a MonitoredSession: once with
TensorFlow's NanTensorHook, LoggingTensorHook, StopAtStepHook, StepCounterHook
and SummarySaverHook (what tf.estimator ran), once with TrainingStepHook alone.
Both must write the same events at the same steps, log the same lines, stop at
the same step, and, on a NaN loss, fail at the same step.
"""
import logging
import re

import numpy as np
import pytest
import tensorflow as tf

from estimator_lite._graph import global_step as global_step_lib
from estimator_lite._session import fast_session as _fast_session
from estimator_lite._session import step_hook as _nan_loss
from estimator_lite._session import step_hook as _step_hook

_v1 = tf.compat.v1
_train = _v1.train


def _graph(nan_at_step=None):
  """A one-weight regression with a global step read before its increment (as Estimator.train)."""
  graph = tf.Graph()
  with graph.as_default():
    _v1.set_random_seed(3)
    global_step = _train.get_or_create_global_step()
    step = global_step_lib.create_shared_read(graph)
    weight = _v1.get_variable("w", [], initializer=_v1.constant_initializer(2.0))
    loss = tf.square(weight - 0.5)
    if nan_at_step is not None:
      loss = tf.where(tf.equal(step, nan_at_step), tf.constant(np.nan), loss)
    with tf.control_dependencies([step]):
      train_op = _train.GradientDescentOptimizer(0.1).minimize(loss, global_step=global_step)
    _v1.summary.scalar("loss", loss)
    _v1.summary.scalar("twice_the_step", 2.0 * tf.cast(step, tf.float32))
  return graph, loss, step, train_op


def _tensorflow_hooks(loss, step, model_dir, scaffold, stop, every):
  log_every, count_every, summary_every = every
  return [
      _train.StepCounterHook(every_n_steps=count_every, output_dir=model_dir),
      _train.SummarySaverHook(save_steps=summary_every, output_dir=model_dir, scaffold=scaffold),
      _train.NanTensorHook(loss),
      _train.StopAtStepHook(**stop),
      _train.LoggingTensorHook({"loss": loss, "step": step}, every_n_iter=log_every),
  ]


def _step_hooks(loss, step, model_dir, scaffold, stop, every):
  log_every, count_every, summary_every = every
  return [_step_hook.TrainingStepHook(
      loss, step, log_every_n_iter=log_every, output_dir=model_dir,
      count_every_n_steps=count_every, summary_every_n_steps=summary_every,
      scaffold=scaffold, **stop)]


class _Lines(logging.Handler):

  def __init__(self):
    super().__init__(logging.INFO)
    self.lines = []

  def emit(self, record):
    self.lines.append(record.getMessage())


def _train_twice(make_hooks, model_dir, every, nan_at_step=None):
  """Trains to step 11 (last_step), then 6 more (num_steps); returns (log lines, error)."""
  handler = _Lines()
  logger = logging.getLogger("tensorflow")
  logger.addHandler(handler)
  previous_level = logger.level
  logger.setLevel(logging.INFO)
  error = None
  try:
    for stop in (dict(last_step=11), dict(num_steps=6)):
      graph, loss, step, train_op = _graph(nan_at_step)
      with graph.as_default():
        scaffold = _train.Scaffold()
        hooks = make_hooks(loss, step, model_dir, scaffold, stop, every)
        hooks.append(_train.CheckpointSaverHook(model_dir, save_steps=1000, scaffold=scaffold))
        try:
          with _train.MonitoredSession(
              session_creator=_fast_session.FastSessionCreator(_train.ChiefSessionCreator(
                  scaffold=scaffold, checkpoint_dir=model_dir)),
              hooks=hooks) as session:
            while not session.should_stop():
              session.run(train_op)
        except _train.NanLossDuringTrainingError as e:
          error = e
          break
  finally:
    logger.removeHandler(handler)
    logger.setLevel(previous_level)
  _v1.summary.FileWriterCache.clear()
  return handler.lines, error


def _events(model_dir):
  """[(step, what, value)] of every event written, in order; the rate's value as 'rate'."""
  out = []
  for path in sorted(tf.io.gfile.glob(str(model_dir / "events.out.tfevents.*"))):
    for event in _v1.train.summary_iterator(path):
      if event.HasField("summary"):
        for value in event.summary.value:
          out.append((event.step, value.tag,
                      "rate" if value.tag == "global_step/sec" else value.simple_value))
      elif event.HasField("session_log"):
        out.append((event.step, "session_log", event.session_log.status))
  return out


def _comparable(lines):
  """Log lines of the hooks, with timings (which differ run to run) masked."""
  kept = [line for line in lines
          if line.startswith(("loss = ", "global_step/sec", "Model diverged", "It seems"))]
  kept = [re.sub(r"\(\d+\.\d+ sec\)", "(T sec)", line) for line in kept]
  return [re.sub(r"^global_step/sec: .*", "global_step/sec: R", line) for line in kept]


@pytest.mark.parametrize("every", [(4, 3, 5), (1, 1, 1), (100, 100, 100)])
def test_same_events_logs_and_stop_step_as_tensorflow_hooks(tmp_path, every):
  ours_dir, theirs_dir = tmp_path / "ours", tmp_path / "theirs"
  theirs_lines, _ = _train_twice(_tensorflow_hooks, str(theirs_dir), every)
  ours_lines, _ = _train_twice(_step_hooks, str(ours_dir), every)

  theirs, ours = _events(theirs_dir), _events(ours_dir)
  assert ours == theirs
  # Stopped at 11, then 6 more: the last summary written is at most step 17.
  assert max(step for step, _, _ in ours) <= 17
  assert _train.latest_checkpoint(str(ours_dir)).endswith("-17")
  assert _train.latest_checkpoint(str(theirs_dir)).endswith("-17")
  assert any(tag == "loss" for _, tag, _ in ours)
  assert _comparable(ours_lines) == _comparable(theirs_lines)
  assert any(line.startswith("loss = ") for line in _comparable(ours_lines))
  if every[1] <= 5:
    assert "global_step/sec: R" in _comparable(ours_lines)


def test_nan_loss_fails_at_the_same_step_and_names_it(tmp_path):
  every = (1, 2, 2)
  theirs_lines, theirs_error = _train_twice(_tensorflow_hooks, str(tmp_path / "theirs"), every,
                                            nan_at_step=7)
  ours_lines, ours_error = _train_twice(_step_hooks, str(tmp_path / "ours"), every,
                                        nan_at_step=7)
  assert isinstance(theirs_error, _train.NanLossDuringTrainingError)
  assert isinstance(ours_error, _nan_loss.NanLossAtStepError)
  assert ours_error.step == 7
  assert "global step 7" in str(ours_error)
  # Summaries and step rate of the failed step are written before the guard
  # raises, as MonitoredTrainingSession's hooks ran before tf.estimator's guard.
  assert _events(tmp_path / "ours") == _events(tmp_path / "theirs")
  loss_lines = [line for line in _comparable(ours_lines) if line.startswith("loss = ")]
  assert loss_lines == [line for line in _comparable(theirs_lines) if line.startswith("loss = ")]
  assert loss_lines[-1].startswith("loss = ") and "step = 6" in loss_lines[-1]


def test_rejects_both_stop_arguments():
  with pytest.raises(ValueError, match="Only one of num_steps or last_step"):
    _step_hook.TrainingStepHook(tf.constant(0.0), tf.constant(0), num_steps=1, last_step=2)
