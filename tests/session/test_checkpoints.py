"""SIGKILL at random moments, some during checkpoint saves: nothing saved is ever lost.

The trainer carries a 16 MB non-trainable "ballast" variable so that every
checkpoint save takes a noticeable share of the run and random kills land in
the middle of saves too. After every kill the test checks that the
`checkpoint` index only names complete checkpoints that restore, and that the
restart resumes at or after the last save that had completed.
"""
import os
import pathlib
import random
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import tensorflow as tf

# Tier `long` (tests/tiers.py): runs with --tier long.
pytestmark = pytest.mark.long

_REPO = pathlib.Path(__file__).resolve().parents[2]
_KILLS = 20
_MAX_STEPS = 10_000   # more than 20 short runs can reach: the last run finishes it.

_PROGRAM = textwrap.dedent('''
    import sys
    import numpy as np, tensorflow as tf
    import estimator_lite as est

    model_dir, progress_file, saves_file, max_steps = sys.argv[1:4] + [int(sys.argv[4])]
    tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)

    class Progress(est.SessionRunHook):
        def begin(self):
            self._step = tf.compat.v1.train.get_global_step()
        def after_create_session(self, session, coord):
            print("STARTED_AT", session.run(self._step), flush=True)
        def before_run(self, run_context):
            return est.SessionRunArgs(self._step)
        def after_run(self, run_context, run_values):
            with open(progress_file, "w") as f:
                f.write(str(run_values.results + 1))

    class SaveLog(est.CheckpointSaverListener):
        def after_save(self, session, global_step_value):
            with open(saves_file, "a") as f:
                f.write(f"{global_step_value}\\n")
                f.flush()
                os.fsync(f.fileno())

    import os

    def input_fn():
        x = np.arange(24, dtype=np.float32).reshape(8, 3) / 24
        return tf.data.Dataset.from_tensor_slices(({"x": x}, x.sum(1, keepdims=True))).repeat().batch(4)

    def model_fn(features, labels, mode):
        tf.compat.v1.get_variable("ballast", [4_000_000], trainable=False,
                                  initializer=tf.compat.v1.random_normal_initializer(seed=1))
        pred = tf.compat.v1.layers.dense(features["x"], 1)
        loss = tf.compat.v1.losses.mean_squared_error(labels, pred)
        train_op = tf.compat.v1.train.GradientDescentOptimizer(0.01).minimize(
            loss, global_step=tf.compat.v1.train.get_global_step())
        return est.EstimatorSpec(mode, loss=loss, train_op=train_op)

    config = est.RunConfig(save_checkpoints_steps=5, keep_checkpoint_max=3,
                           log_step_count_steps=1000, save_summary_steps=1000)
    estimator = est.Estimator(model_fn, model_dir=model_dir, config=config)
    estimator.train(input_fn, max_steps=max_steps, hooks=[Progress()],
                    saving_listeners=[SaveLog()])
    print("FINISHED", estimator.get_variable_value("global_step"), flush=True)
''')


def _start(tmp_path, max_steps):
  env = dict(os.environ, PYTHONPATH=str(_REPO))
  return subprocess.Popen(
      [sys.executable, str(tmp_path / "train.py"), str(tmp_path / "model"),
       str(tmp_path / "progress"), str(tmp_path / "saves"), str(max_steps)],
      env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _last_completed_save(tmp_path):
  saves = tmp_path / "saves"
  lines = saves.read_text().split() if saves.exists() else []
  return int(lines[-1]) if lines else None


def _wait_until_training(proc, progress, since, timeout=120):
  deadline = time.monotonic() + timeout
  while time.monotonic() < deadline:
    if proc.poll() is not None:
      return False
    if progress.exists() and progress.stat().st_mtime > since:
      return True
    time.sleep(0.02)
  raise AssertionError("trainer never started training")


def _save_was_interrupted(model_dir, since):
  """True when this run's kill left a save half done.

  Evidence: files written since `since` that belong to no completed
  checkpoint (the Saver's `_temp` shards, or a step newer than the index's).
  """
  state = tf.train.get_checkpoint_state(str(model_dir))
  latest = int(state.model_checkpoint_path.rsplit("-", 1)[1]) if state else -1
  for name in os.listdir(model_dir):
    if os.path.getmtime(os.path.join(model_dir, name)) < since:
      continue
    if "_temp" in name:
      return True
    if ".ckpt-" in name and int(name.split(".ckpt-")[1].split(".")[0].split("_")[0]) > latest:
      return True
  return False


def _check_index_is_complete(model_dir):
  """Every checkpoint the index names exists in full and restores."""
  state = tf.train.get_checkpoint_state(str(model_dir))
  if state is None:
    return None
  paths = list(state.all_model_checkpoint_paths) or [state.model_checkpoint_path]
  assert state.model_checkpoint_path in paths
  for path in paths:
    path = path if os.path.isabs(path) else os.path.join(model_dir, path)
    assert os.path.exists(path + ".index"), f"index names missing {path}"
    reader = tf.train.load_checkpoint(path)
    for name in reader.get_variable_to_shape_map():
      value = reader.get_tensor(name)
      assert np.all(np.isfinite(value)), (path, name)
  return int(tf.train.load_checkpoint(str(model_dir)).get_tensor("global_step"))


def test_sigkill_at_random_moments_never_loses_a_saved_checkpoint(tmp_path, communicate_or_kill):
  (tmp_path / "train.py").write_text(_PROGRAM)
  rng = random.Random(1234)
  progress = tmp_path / "progress"
  kills_during_training = 0
  kills_during_save = 0
  for attempt in range(_KILLS):
    saved_before = _last_completed_save(tmp_path)
    started = time.time()
    proc = _start(tmp_path, _MAX_STEPS)
    try:
      if not _wait_until_training(proc, progress, since=started):
        break   # finished already
      time.sleep(rng.uniform(0.0, 0.8))
      proc.send_signal(signal.SIGKILL)
      output, _ = proc.communicate(timeout=60)
    finally:
      if proc.poll() is None:
        proc.kill()
        proc.communicate()
    if proc.returncode == -signal.SIGKILL:
      kills_during_training += 1
      if _save_was_interrupted(tmp_path / "model", since=started):
        kills_during_save += 1
    started_at = [int(line.split()[1]) for line in output.splitlines()
                  if line.startswith("STARTED_AT")]
    assert started_at, output[-3000:]
    # The restart resumed from at least the last save completed before it.
    if saved_before is not None:
      assert started_at[0] >= saved_before, (attempt, started_at, saved_before)
    restorable = _check_index_is_complete(tmp_path / "model")
    last_save = _last_completed_save(tmp_path)
    if last_save is not None:
      assert restorable is not None and restorable >= last_save, (attempt, restorable, last_save)

  assert kills_during_training >= _KILLS - 2
  print(f"{kills_during_training} kills while training, {kills_during_save} of them "
        "in the middle of a checkpoint save")
  # Saves take most of the run, so some kills must have landed inside one.
  assert kills_during_save >= 1
  # Finish: a normal run reaches max_steps from wherever the kills left it.
  final_target = _check_index_is_complete(tmp_path / "model") + 25
  proc = _start(tmp_path, final_target)
  output = communicate_or_kill(proc, timeout=180)
  assert proc.returncode == 0, output[-3000:]
  assert f"FINISHED {final_target}" in output
  assert _check_index_is_complete(tmp_path / "model") == final_target
