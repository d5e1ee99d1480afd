"""SIGTERM during training: checkpoint at the current step, exit 143, restart resumes there.

And when the step in flight does not end within the grace period (a hung ps,
say): exit 143 anyway, the checkpoints already written untouched.
"""
import contextlib
import hashlib
import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import tensorflow as tf

import estimator_lite as est
from estimator_lite._session import preemption as _preemption

_REPO = pathlib.Path(__file__).resolve().parents[2]

# argv: model_dir progress_file max_steps [save_steps [hold [linger_secs]]].
# With `hold` ("hook" or "session_run"; "-" for none), once the file
# progress_file + ".hold" exists the next step never ends: its hook sleeps in
# Python, or Session.run waits (in C++) on an op that sleeps; progress_file +
# ".held" says it is stuck. With `linger_secs`, the program catches
# Preempted, prints CAUGHT, keeps working (sleeps) that long and exits 0.
_PROGRAM = textwrap.dedent('''
    import os, sys, time
    import numpy as np, tensorflow as tf
    import estimator_lite as est

    model_dir, progress_file, max_steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
    save_steps = int(sys.argv[4]) if len(sys.argv) > 4 else 100000
    hold = sys.argv[5] if len(sys.argv) > 5 and sys.argv[5] != "-" else None
    linger_secs = float(sys.argv[6]) if len(sys.argv) > 6 else None
    tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)

    def hold_forever():
        open(progress_file + ".held", "w").close()
        time.sleep(600)
        return 0

    class Progress(est.SessionRunHook):
        """Writes the global step after every step, slowly, so the test can signal mid-run."""
        def begin(self):
            self._step = tf.compat.v1.train.get_global_step()
            self._stuck = tf.py_function(hold_forever, [], tf.int32)
        def before_run(self, run_context):
            fetches = {"step": self._step}
            if hold == "session_run" and os.path.exists(progress_file + ".hold"):
                fetches["stuck"] = self._stuck
            return est.SessionRunArgs(fetches)
        def after_run(self, run_context, run_values):
            with open(progress_file, "w") as f:
                f.write(str(run_values.results["step"] + 1))
            if hold == "hook" and os.path.exists(progress_file + ".hold"):
                hold_forever()
            time.sleep(0.01)

    def input_fn():
        x = np.arange(12, dtype=np.float32).reshape(4, 3)
        return tf.data.Dataset.from_tensor_slices(({"x": x}, x.sum(1, keepdims=True))).repeat().batch(2)

    def model_fn(features, labels, mode):
        pred = tf.compat.v1.layers.dense(features["x"], 1)
        loss = tf.compat.v1.losses.mean_squared_error(labels, pred)
        train_op = tf.compat.v1.train.GradientDescentOptimizer(1e-3).minimize(
            loss, global_step=tf.compat.v1.train.get_global_step())
        return est.EstimatorSpec(mode, loss=loss, train_op=train_op)

    estimator = est.Estimator(model_fn, model_dir=model_dir,
                              config=est.RunConfig(save_checkpoints_steps=save_steps))
    try:
        estimator.train(input_fn, max_steps=max_steps, hooks=[Progress()])
    except est.Preempted as e:
        if linger_secs is None:
            raise
        print("CAUGHT", e.step, flush=True)
        time.sleep(linger_secs)  # work after the preemption, an export say
        print("LINGERED", flush=True)
        sys.exit(0)
    print("FINISHED", estimator.get_variable_value("global_step"))
''')


def _run(args, tmp_path, env=None, **kwargs):
  env = dict(os.environ, PYTHONPATH=str(_REPO), **(env or {}))
  script = tmp_path / "train.py"
  script.write_text(_PROGRAM)
  return subprocess.Popen([sys.executable, str(script), *map(str, args)], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          **kwargs)


@contextlib.contextmanager
def _trainer(args, tmp_path, env=None):
  """Runs the program; kills it on the way out if it still runs (a failed wait)."""
  proc = _run(args, tmp_path, env)
  try:
    yield proc
  finally:
    if proc.poll() is None:
      proc.kill()
      proc.communicate()


def _wait_for_step(progress, proc, at_least, timeout):
  deadline = time.monotonic() + timeout
  while time.monotonic() < deadline:
    if proc.poll() is not None:
      raise AssertionError(f"trainer exited early:\n{proc.stdout.read()}")
    try:
      step = int(progress.read_text() or 0)
    except (FileNotFoundError, ValueError):
      step = 0
    if step >= at_least:
      return step
    time.sleep(0.05)
  raise AssertionError(f"trainer did not reach step {at_least} in {timeout} s")


def test_sigterm_saves_current_step_and_restart_resumes(tmp_path, communicate_or_kill):
  model_dir, progress = tmp_path / "model", tmp_path / "progress"
  with _trainer([model_dir, progress, 100000], tmp_path) as proc:
    _wait_for_step(progress, proc, at_least=30, timeout=120)
    proc.send_signal(signal.SIGTERM)
    output, _ = proc.communicate(timeout=60)
  last_step_run = int(progress.read_text())

  assert proc.returncode == 143, output[-3000:]
  assert "Received SIGTERM" in output
  assert "preempted (SIGTERM) at global step" in output
  saved_step = int(tf.train.load_variable(str(model_dir), "global_step"))
  # Only ckpt-0 would exist without the preemption save; with it, no step is lost.
  assert saved_step == last_step_run, (saved_step, last_step_run)
  assert tf.train.latest_checkpoint(str(model_dir)).endswith(f"model.ckpt-{saved_step}")

  restart = _run([model_dir, progress, saved_step + 5], tmp_path)
  output = communicate_or_kill(restart, timeout=120)
  assert restart.returncode == 0, output[-3000:]
  assert f"Restoring parameters from {model_dir}/model.ckpt-{saved_step}" in output
  assert f"FINISHED {saved_step + 5}" in output


def test_work_after_catching_preempted_outlives_the_grace_period(tmp_path):
  # The grace timer guards the step in flight only: once train() has saved
  # and raised Preempted, a program that catches it may work on (export, say)
  # past the grace period without being killed with 143.
  model_dir, progress = tmp_path / "model", tmp_path / "progress"
  grace_secs, linger_secs = 2, 4
  env = {_preemption.GRACE_ENV: str(grace_secs)}
  with _trainer([model_dir, progress, 100000, 100000, "-", linger_secs], tmp_path, env) as proc:
    _wait_for_step(progress, proc, at_least=5, timeout=60)
    proc.send_signal(signal.SIGTERM)
    output, _ = proc.communicate(timeout=60)
  last_step_run = int(progress.read_text())

  assert proc.returncode == 0, output[-3000:]
  assert f"CAUGHT {last_step_run}" in output and "LINGERED" in output, output[-3000:]
  assert "grace period after SIGTERM" not in output
  assert tf.train.latest_checkpoint(str(model_dir)).endswith(f"model.ckpt-{last_step_run}")


def _checkpoint_files(model_dir):
  """{name: sha256} of the `checkpoint` index and every model.ckpt-* file."""
  return {path.name: hashlib.sha256(path.read_bytes()).hexdigest()
          for path in model_dir.iterdir()
          if path.name == "checkpoint" or path.name.startswith("model.ckpt-")}


@pytest.mark.parametrize("where", ["hook", "session_run"])
def test_step_stuck_past_the_grace_period_exits_143_and_keeps_the_checkpoints(tmp_path, where):
  # The step in flight never ends: in a hook (the main thread in Python), or
  # inside Session.run (in C++, where Python runs no signal handler), as with
  # a hung ps. After the grace period the process exits 143 anyway.
  model_dir, progress = tmp_path / "model", tmp_path / "progress"
  grace_secs = 1
  env = {_preemption.GRACE_ENV: str(grace_secs)}
  with _trainer([model_dir, progress, 100000, 10, where], tmp_path, env) as proc:
    _wait_for_step(progress, proc, at_least=25, timeout=120)  # checkpoints 0, 10 and 20
    pathlib.Path(f"{progress}.hold").touch()
    deadline = time.monotonic() + 60
    while not pathlib.Path(f"{progress}.held").exists():
      assert proc.poll() is None and time.monotonic() < deadline, "the step did not get stuck"
      time.sleep(0.05)
    # Stuck before this step's checkpoint save: no save is in flight.
    written = _checkpoint_files(model_dir)
    start = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    output, _ = proc.communicate(timeout=60)
    secs = time.monotonic() - start

  assert proc.returncode == 143, output[-3000:]
  assert grace_secs <= secs < grace_secs + 30, secs
  assert f"Received SIGTERM: stopping after the current step and saving a checkpoint (grace period {grace_secs} s)" in output
  assert f"Training did not stop within the {grace_secs} s grace period after SIGTERM; exiting with status 143" in output
  assert "preempted (SIGTERM) at global step" not in output
  # The checkpoints already written are there, byte for byte, and restore.
  assert _checkpoint_files(model_dir) == written
  latest = tf.train.latest_checkpoint(str(model_dir))
  assert latest and int(latest.rsplit("-", 1)[1]) >= 20
  for path in tf.train.get_checkpoint_state(str(model_dir)).all_model_checkpoint_paths:
    reader = tf.train.load_checkpoint(path)
    for name in reader.get_variable_to_shape_map():
      assert np.all(np.isfinite(reader.get_tensor(name))), (path, name)


@pytest.mark.parametrize("value", ["soon", "0", "-5", "nan", "inf"])
def test_a_bad_grace_period_setting_names_the_variable(monkeypatch, value, tmp_path, linear_data,
                                                       linear_model_fn, make_input_fn):
  monkeypatch.setenv(_preemption.GRACE_ENV, value)
  x, y = linear_data
  estimator = est.Estimator(linear_model_fn, model_dir=str(tmp_path))
  with pytest.raises(ValueError, match=f"ESTIMATOR_LITE_SIGTERM_GRACE_SECS='{value}' is not a "
                     "positive number of seconds.*or unset it"):
    estimator.train(make_input_fn(x, y), steps=1)
  monkeypatch.setenv(_preemption.GRACE_ENV, " 2.5 ")
  assert _preemption.grace_secs_from_env() == 2.5
  monkeypatch.delenv(_preemption.GRACE_ENV)
  assert _preemption.grace_secs_from_env() == _preemption.DEFAULT_GRACE_SECS
