"""The evaluator task's timing: start_delay_secs, throttle_secs, and reacting to new checkpoints.

Each test runs the evaluator role (train_and_evaluate under an evaluator
TF_CONFIG) in a thread of this process, over real checkpoints of a tiny linear
model, and measures real time. Checkpoints are made once per module and
copied into each test's model_dir; a test "writes" one by updating the
model_dir/checkpoint index, which is what a chief's Saver does last, or trains
for real. Every wait is bounded.
"""
import glob
import json
import os
import shutil
import threading
import time

import pytest
import tensorflow as tf

import estimator_lite as est
from conftest import one_weight_input_fn as input_fn
from conftest import one_weight_model_fn as model_fn

# Generous bounds for a loaded 2-core machine; the assertions are much tighter.
_THREAD_TIMEOUT_SECS = 60
EVALUATOR_TF_CONFIG = json.dumps({
    "cluster": {"chief": ["localhost:1"], "ps": ["localhost:2"]},
    "task": {"type": "evaluator", "index": 0}})


@pytest.fixture(scope="module")
def trained_dir(tmp_path_factory):
  """A model_dir holding model.ckpt-{0,5,10,15} (all kept)."""
  model_dir = str(tmp_path_factory.mktemp("trained"))
  with pytest.MonkeyPatch.context() as patch:
    patch.delenv("TF_CONFIG", raising=False)
    est.Estimator(model_fn, config=est.RunConfig(
        model_dir=model_dir, save_checkpoints_steps=5, keep_checkpoint_max=0)).train(
            input_fn, max_steps=15)
  return model_dir


def copy_checkpoints(trained_dir, model_dir, steps):
  """Copies the checkpoints at `steps`, without an index: none is visible yet."""
  for step in steps:
    for path in glob.glob(os.path.join(trained_dir, f"model.ckpt-{step}.*")):
      shutil.copy(path, model_dir)


def write_index(model_dir, steps):
  """Makes the checkpoints at `steps` visible, the last one newest, as Saver.save does."""
  names = [f"model.ckpt-{step}" for step in steps]
  # Relative paths, as the Estimator's Saver (save_relative_paths) writes them.
  tf.compat.v1.train.update_checkpoint_state(model_dir, names[-1], names)


def eval_events(model_dir):
  """{global step: wall time} of the evaluation points in model_dir/eval."""
  events = {}
  for path in glob.glob(os.path.join(model_dir, "eval", "events.out.tfevents.*")):
    for event in tf.compat.v1.train.summary_iterator(path):
      if any(value.tag == "loss" for value in event.summary.value):
        events[event.step] = event.wall_time
  return dict(sorted(events.items()))


def start_evaluator(monkeypatch, model_dir, eval_spec, max_steps):
  """Runs train_and_evaluate as the evaluator task in a daemon thread; returns (thread, outcome)."""
  monkeypatch.setenv("TF_CONFIG", EVALUATOR_TF_CONFIG)
  estimator = est.Estimator(model_fn, config=est.RunConfig(model_dir=model_dir))
  monkeypatch.delenv("TF_CONFIG")
  assert estimator.config.task_type == "evaluator"
  outcome = {}

  def run():
    try:
      outcome["result"] = est.train_and_evaluate(
          estimator, est.TrainSpec(input_fn, max_steps=max_steps), eval_spec)
    except BaseException as e:  # pylint: disable=broad-except
      outcome["error"] = e

  thread = threading.Thread(target=run, daemon=True)
  thread.start()
  return thread, outcome


def join(thread, outcome):
  thread.join(_THREAD_TIMEOUT_SECS)
  assert not thread.is_alive(), f"the evaluator still runs after {_THREAD_TIMEOUT_SECS} s"
  if "error" in outcome:
    raise outcome["error"]
  assert outcome["result"] is None  # as tf.estimator, for every cluster role


def recording_input_fn(starts, on_call=None):
  """An eval input_fn that records when each evaluation starts (time.time())."""
  def eval_input_fn():
    starts.append(time.time())
    if on_call is not None:
      on_call(len(starts))
    return input_fn()
  return eval_input_fn


def test_first_evaluation_waits_for_start_delay_secs(monkeypatch, tmp_path, trained_dir):
  model_dir = str(tmp_path)
  copy_checkpoints(trained_dir, model_dir, [5])
  write_index(model_dir, [5])  # ready before the evaluator starts
  starts = []
  eval_spec = est.EvalSpec(recording_input_fn(starts), steps=1, start_delay_secs=2,
                           throttle_secs=0)

  began = time.time()
  join(*start_evaluator(monkeypatch, model_dir, eval_spec, max_steps=5))

  events = eval_events(model_dir)
  assert list(events) == [5] and len(starts) == 1
  # Not before the delay, although the checkpoint was there all along ...
  assert starts[0] - began >= 2.0
  assert events[5] - began >= 2.0
  # ... and promptly after it.
  assert starts[0] - began < 2.0 + 10


def test_throttle_secs_separates_evaluation_starts(monkeypatch, tmp_path, trained_dir):
  model_dir = str(tmp_path)
  copy_checkpoints(trained_dir, model_dir, [5, 10, 15])
  write_index(model_dir, [5])
  throttle_secs = 2.0

  def on_call(count):
    # A newer checkpoint appears as soon as each evaluation starts, so it is
    # ready well within the throttle window.
    if count < 3:
      write_index(model_dir, [5, 10, 15][:count + 1])

  starts = []
  eval_spec = est.EvalSpec(recording_input_fn(starts, on_call), steps=1, start_delay_secs=0,
                           throttle_secs=throttle_secs)
  join(*start_evaluator(monkeypatch, model_dir, eval_spec, max_steps=15))

  # Each checkpoint evaluated once, in order, none skipped.
  assert list(eval_events(model_dir)) == [5, 10, 15]
  gaps = [later - earlier for earlier, later in zip(starts, starts[1:])]
  assert len(gaps) == 2
  for gap in gaps:
    # The throttle counts from the start of the previous evaluation, taken a
    # few milliseconds before its input_fn is called: allow for that jitter.
    assert gap >= throttle_secs - 0.2, gaps
    # Once the throttle allows, the waiting checkpoint is taken at once.
    assert gap < throttle_secs + 3.0, gaps


class SaveTimes(est.CheckpointSaverListener):
  """Records when (time.time()) each checkpoint was written, by global step."""

  def __init__(self):
    self.at = {}

  def after_save(self, session, global_step_value):
    del session
    self.at[global_step_value] = time.time()


def test_new_checkpoint_is_evaluated_within_a_few_seconds(monkeypatch, tmp_path, trained_dir):
  model_dir = str(tmp_path)
  copy_checkpoints(trained_dir, model_dir, [5])
  write_index(model_dir, [5])
  throttle_secs = 1.0
  starts = []
  eval_spec = est.EvalSpec(recording_input_fn(starts), steps=1, start_delay_secs=0,
                           throttle_secs=throttle_secs)
  thread, outcome = start_evaluator(monkeypatch, model_dir, eval_spec, max_steps=10)

  # The evaluator takes the checkpoint that is there: step 5.
  deadline = time.monotonic() + _THREAD_TIMEOUT_SECS
  while list(eval_events(model_dir)) != [5]:
    assert thread.is_alive(), outcome
    assert time.monotonic() < deadline, "step 5 was never evaluated"
    time.sleep(0.1)
  # Let the throttle run out, so the next checkpoint may be evaluated at once.
  time.sleep(max(0.0, starts[0] + throttle_secs + 0.2 - time.time()))

  # A chief trains on from step 5 and writes step 10 (and step 5 again, when
  # its session starts: the evaluator must not evaluate that one twice).
  saves = SaveTimes()
  est.Estimator(model_fn, config=est.RunConfig(
      model_dir=model_dir, save_checkpoints_steps=5, keep_checkpoint_max=0)).train(
          input_fn, max_steps=10, saving_listeners=[saves])
  join(thread, outcome)

  events = eval_events(model_dir)
  assert list(events) == [5, 10]
  assert 10 in saves.at
  # Checkpoint written -> its evaluation's event written: a poll (0.25 s)
  # plus one small evaluation; 3 s leaves room for a slow CI machine.
  latency = events[10] - saves.at[10]
  assert 0 < latency < 3.0, latency
