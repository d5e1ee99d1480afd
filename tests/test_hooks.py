"""Hooks: a user's tf.estimator-style SessionRunHook, hooks per mode, listeners, stop and NaN hooks."""
import json
import os
import subprocess
import time

import numpy as np
import pytest
import ref_env  # tests/reference, on the path through conftest.py
import session_start_program

import estimator_lite as est
import tensorflow as tf


class RecordingHook(tf.compat.v1.train.SessionRunHook):
  """A hook as a tf.estimator user wrote it: subclasses TensorFlow's SessionRunHook."""

  def __init__(self):
    self.calls = []
    self.fetched = []     # what before_run asked for, as after_run received it
    self.steps_seen = []  # the global step after each run
    self.final_step = None

  def begin(self):
    self.calls.append("begin")
    self._global_step = tf.compat.v1.train.get_global_step()

  def after_create_session(self, session, coord):
    self.calls.append("after_create_session")

  def before_run(self, run_context):
    self.calls.append("before_run")
    return tf.compat.v1.train.SessionRunArgs(self._global_step)

  def after_run(self, run_context, run_values):
    self.calls.append("after_run")
    self.fetched.append(int(run_values.results))
    self.steps_seen.append(int(run_context.session.run(self._global_step)))

  def end(self, session):
    self.calls.append("end")
    self.final_step = int(session.run(self._global_step))


def _model_fn_with_hooks(hooks):
  """Linear model_fn returning hooks in the EstimatorSpec fields.

  Args:
    hooks: {EstimatorSpec field: a hook, or (TRAIN/EVAL fields) a function
      loss -> list of hooks, for hooks on a model_fn tensor}.
  """

  def spec_hooks(name, loss=None):
    hook = hooks.get(name)
    if hook is None:
      return None
    return [hook] if isinstance(hook, tf.compat.v1.train.SessionRunHook) else hook(loss)

  def model_fn(features, labels, mode):
    w = tf.compat.v1.get_variable("w", [2, 1], initializer=tf.compat.v1.zeros_initializer())
    prediction = tf.matmul(features["x"], w)
    if mode == est.ModeKeys.PREDICT:
      return est.EstimatorSpec(mode, predictions={"y": prediction},
                               prediction_hooks=spec_hooks("prediction_hooks"))
    loss = tf.compat.v1.losses.mean_squared_error(labels, prediction)
    train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
        loss, global_step=tf.compat.v1.train.get_global_step())
    return est.EstimatorSpec(
        mode, loss=loss, train_op=train_op,
        training_hooks=spec_hooks("training_hooks", loss),
        training_chief_hooks=spec_hooks("training_chief_hooks", loss),
        evaluation_hooks=spec_hooks("evaluation_hooks", loss))
  return model_fn


def _protocol(steps):
  return (["begin", "after_create_session"] + ["before_run", "after_run"] * steps + ["end"])


def test_hooks_run_in_their_modes(tmp_path, linear_data, make_input_fn):
  x, y = linear_data
  spec_hooks = {name: RecordingHook() for name in (
      "training_hooks", "training_chief_hooks", "evaluation_hooks", "prediction_hooks")}
  train_hook, eval_hook, predict_hook = RecordingHook(), RecordingHook(), RecordingHook()
  estimator = est.Estimator(_model_fn_with_hooks(spec_hooks), model_dir=str(tmp_path))

  estimator.train(make_input_fn(x, y), steps=5, hooks=[train_hook])
  for hook in (train_hook, spec_hooks["training_hooks"], spec_hooks["training_chief_hooks"]):
    assert hook.calls == _protocol(5)
    assert hook.steps_seen == [1, 2, 3, 4, 5]
    # before_run's fetch came back in after_run. (Reading the step variable in
    # the same run as the optimizer's increment is unordered, in TensorFlow
    # as under tf.estimator, so it may show either value.)
    assert all(s - 1 <= f <= s for f, s in zip(hook.fetched, hook.steps_seen))
    assert hook.final_step == 5
  for name in ("evaluation_hooks", "prediction_hooks"):
    assert spec_hooks[name].calls == []

  estimator.evaluate(make_input_fn(x, y), steps=3, hooks=[eval_hook])
  for hook in (eval_hook, spec_hooks["evaluation_hooks"]):
    assert hook.calls == _protocol(3)
    assert hook.steps_seen == hook.fetched == [5, 5, 5]
  assert spec_hooks["prediction_hooks"].calls == []

  predictions = estimator.predict(make_input_fn(x, repeat=False, batch_size=32),
                                  hooks=[predict_hook], yield_single_examples=False)
  assert len(list(predictions)) == 2
  for hook in (predict_hook, spec_hooks["prediction_hooks"]):
    # Two batches, then a run that meets the end of input (no after_run).
    assert hook.calls == _protocol(2)[:-1] + ["before_run", "end"]
  # Training hooks were not called again outside TRAIN.
  assert spec_hooks["training_hooks"].calls == _protocol(5)
  assert spec_hooks["training_chief_hooks"].calls == _protocol(5)


def test_hooks_must_be_session_run_hooks(tmp_path, linear_data, make_input_fn):
  x, y = linear_data
  estimator = est.Estimator(_model_fn_with_hooks({}), model_dir=str(tmp_path))
  with pytest.raises(TypeError, match=r"SessionRunHook.*Estimator.train\(hooks=...\)"):
    estimator.train(make_input_fn(x, y), steps=1, hooks=[lambda: None])
  with pytest.raises(TypeError, match="saving_listeners must be a list of CheckpointSaverListener"):
    estimator.train(make_input_fn(x, y), steps=1, saving_listeners=[RecordingHook()])


class RecordingListener(tf.compat.v1.train.CheckpointSaverListener):
  """Records each call and whether the checkpoint file of that step exists yet."""

  def __init__(self, model_dir):
    self.model_dir = model_dir
    self.calls = []

  def _exists(self, step):
    return os.path.exists(os.path.join(self.model_dir, f"model.ckpt-{step}.index"))

  def begin(self):
    self.calls.append(("begin",))

  def before_save(self, session, global_step_value):
    self.calls.append(("before_save", global_step_value, self._exists(global_step_value)))

  def after_save(self, session, global_step_value):
    self.calls.append(("after_save", global_step_value, self._exists(global_step_value)))

  def end(self, session, global_step_value):
    self.calls.append(("end", global_step_value))


def test_saving_listeners_are_called_around_each_save(tmp_path, linear_data, make_input_fn):
  x, y = linear_data
  model_dir = str(tmp_path)
  listener = RecordingListener(model_dir)
  estimator = est.Estimator(_model_fn_with_hooks({}), model_dir=model_dir,
                            config=est.RunConfig(save_checkpoints_steps=5))
  estimator.train(make_input_fn(x, y), steps=12, saving_listeners=[listener])
  expected = [("begin",)]
  for step in (0, 5, 10, 12):  # the initial save, every 5 steps, the final one
    expected += [("before_save", step, False), ("after_save", step, True)]
  assert listener.calls == expected + [("end", 12)]

  no_saves = est.Estimator(_model_fn_with_hooks({}), model_dir=str(tmp_path / "other"),
                           config=est.RunConfig(save_checkpoints_steps=None,
                                                save_checkpoints_secs=None))
  with pytest.raises(ValueError, match="There should be a CheckpointSaverHook to use saving_listeners"):
    no_saves.train(make_input_fn(x, y), steps=1, saving_listeners=[listener])


# What tf.estimator 2.15 did (tests/reference/session_start_program.py, run in
# its venv; the reference tier runs it again): its default saver saved step 0
# before any hook's after_create_session, so a hook that sets weights there
# changed the next checkpoint, not model.ckpt-0.
_TF215_SESSION_START = {
    "calls": ["save 0", "chief hook", "train hook", "training hook", "save 1", "save 2"],
    "w at step 0": 0.0, "w at step 2": 42.0}


def test_the_first_checkpoint_is_saved_before_hooks_set_weights(tmp_path):
  assert session_start_program.run(est, str(tmp_path)) == _TF215_SESSION_START


def test_tf_estimator_2_15_saved_step_0_before_the_hooks_ran(tmp_path, reference_python):
  program = session_start_program.__file__
  completed = subprocess.run(
      [reference_python, program, "tf215", str(tmp_path / "tf215")], capture_output=True,
      text=True, timeout=300, env=ref_env.subprocess_env(), check=False)
  assert completed.returncode == 0, completed.stderr[-4000:]
  assert json.loads(completed.stdout.splitlines()[-1]) == _TF215_SESSION_START


class _FailAfter(tf.compat.v1.train.SessionRunHook):
  """Safety net: fails the test instead of training forever if stopping is broken."""

  def __init__(self, secs):
    self._deadline = time.monotonic() + secs

  def after_run(self, run_context, run_values):
    if time.monotonic() > self._deadline:
      raise RuntimeError("training did not stop in time")


def test_stop_at_time_hook_stops_training_and_saves(tmp_path, linear_data, make_input_fn):
  x, y = linear_data
  estimator = est.Estimator(_model_fn_with_hooks({}), model_dir=str(tmp_path))
  # No steps or max_steps and an endless input: only the hook can stop it.
  estimator.train(make_input_fn(x, y), hooks=[est.StopAtTimeHook(0.5), _FailAfter(60)])
  step = int(estimator.get_variable_value("global_step"))
  assert step > 0
  assert estimator.latest_checkpoint().endswith(f"model.ckpt-{step}")
  with pytest.raises(ValueError, match="max_secs > 0"):
    est.StopAtTimeHook(0)


# Where a user's NanTensorHook(loss) can be: none (the built-in guard alone),
# either EstimatorSpec field, or train(hooks=...), where the loss tensor does
# not exist yet and the hook names it.
_NAN_HOOK_PLACES = (None, "training_hooks", "training_chief_hooks", "train_hooks")


@pytest.mark.parametrize("own_saver", [False, True], ids=["default_saver", "own_saver"])
@pytest.mark.parametrize("nan_hook", _NAN_HOOK_PLACES, ids=lambda p: p or "no_user_hook")
def test_nan_loss_raises_and_latest_checkpoint_has_no_nan(tmp_path, nan_hook, own_saver):
  # Labels of the 7th batch are NaN: the loss of step 6 -> 7 is NaN and its
  # update writes NaN into w. A checkpoint is due at every step, so without
  # care the NaN weights would be saved as model.ckpt-7: by the default saver,
  # or by the user's own CheckpointSaverHook in training_chief_hooks, which
  # MonitoredTrainingSession runs before every other hook. A user's
  # NanTensorHook there would raise TensorFlow's error, without the step.
  x = np.ones((10, 2), np.float32)
  y = np.ones((10, 1), np.float32)
  y[6] = np.nan
  model_dir = str(tmp_path)

  def chief_hooks(loss):
    hooks = [tf.compat.v1.train.CheckpointSaverHook(model_dir, save_steps=1)] if own_saver else []
    if nan_hook == "training_chief_hooks":
      hooks.append(tf.compat.v1.train.NanTensorHook(loss))
    return hooks

  spec_hooks = {"training_chief_hooks": chief_hooks}
  if nan_hook == "training_hooks":
    spec_hooks["training_hooks"] = lambda loss: [tf.compat.v1.train.NanTensorHook(loss)]
  train_hooks = []
  if nan_hook == "train_hooks":
    train_hooks.append(tf.compat.v1.train.NanTensorHook("mean_squared_error/value:0"))
  estimator = est.Estimator(_model_fn_with_hooks(spec_hooks), model_dir=model_dir,
                            config=est.RunConfig(save_checkpoints_steps=1))
  with pytest.raises(est.NanLossDuringTrainingError, match="NaN loss during training at global step 6"):
    estimator.train(lambda: tf.data.Dataset.from_tensor_slices(({"x": x}, y)).batch(1),
                    hooks=train_hooks)
  latest = estimator.latest_checkpoint()
  assert latest.endswith("model.ckpt-6")
  reader = tf.train.load_checkpoint(latest)
  for name in reader.get_variable_to_shape_map():
    assert np.all(np.isfinite(reader.get_tensor(name))), name
  # Training can continue from the last good checkpoint.
  assert estimator.get_variable_value("global_step") == 6
