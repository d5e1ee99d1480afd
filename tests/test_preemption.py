"""SIGTERM during training: checkpoint at the current step, exit 143, restart resumes there."""
import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import time

import tensorflow as tf

_REPO = pathlib.Path(__file__).resolve().parents[1]

_PROGRAM = textwrap.dedent('''
    import sys, time
    import numpy as np, tensorflow as tf
    import estimator_lite as est

    model_dir, progress_file, max_steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
    tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)

    class Progress(est.SessionRunHook):
        """Writes the global step after every step, slowly, so the test can signal mid-run."""
        def begin(self):
            self._step = tf.compat.v1.train.get_global_step()
        def before_run(self, run_context):
            return est.SessionRunArgs(self._step)
        def after_run(self, run_context, run_values):
            with open(progress_file, "w") as f:
                f.write(str(run_values.results + 1))
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
                              config=est.RunConfig(save_checkpoints_steps=100000))
    estimator.train(input_fn, max_steps=max_steps, hooks=[Progress()])
    print("FINISHED", estimator.get_variable_value("global_step"))
''')


def _run(args, tmp_path, **kwargs):
  env = dict(os.environ, PYTHONPATH=str(_REPO))
  script = tmp_path / "train.py"
  script.write_text(_PROGRAM)
  return subprocess.Popen([sys.executable, str(script), *map(str, args)], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          **kwargs)


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
  proc = _run([model_dir, progress, 100000], tmp_path)
  try:
    _wait_for_step(progress, proc, at_least=30, timeout=120)
    proc.send_signal(signal.SIGTERM)
    output, _ = proc.communicate(timeout=60)
  finally:
    if proc.poll() is None:
      proc.kill()
      proc.communicate()
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
