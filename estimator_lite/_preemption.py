"""SIGTERM (preemption) during training: stop after the current step, save, exit 143.

A preempted machine gets SIGTERM and a grace period before SIGKILL. Without
this, a tf.estimator job lost everything since its last periodic checkpoint.
Here the signal only sets a flag; a hook requests a stop after the step in
flight, the regular CheckpointSaverHook saves at the current step when the
session ends, and train() raises `Preempted` (a SystemExit with status 143,
128 + SIGTERM), so an uncaught preemption ends the process with that status
and no traceback. If the step in flight does not finish within the grace
period (a hung ps, say), the process exits with 143 at once; checkpoints
already written stay intact.
"""
import os
import signal
import threading

import tensorflow as tf

PREEMPTED_EXIT_CODE = 128 + signal.SIGTERM
DEFAULT_GRACE_SECS = 25.0


class Preempted(SystemExit):
  """Raised by Estimator.train after a SIGTERM, once the checkpoint is saved.

  Its `code` is 143 (128 + SIGTERM): left uncaught, the process exits with it.
  """

  def __init__(self, step, checkpoint):
    super().__init__(PREEMPTED_EXIT_CODE)
    self.step = step
    self.checkpoint = checkpoint

  def __str__(self):
    return (f"Training was preempted (SIGTERM) at global step {self.step}; "
            f"latest checkpoint: {self.checkpoint}. Restart to resume.")


class SigtermWatcher:
  """Context manager that turns SIGTERM into a stop request while training.

  Args:
    grace_secs: how long the step in flight may take before the process exits.
  """

  def __init__(self, grace_secs=DEFAULT_GRACE_SECS):
    self._grace_secs = grace_secs
    self._event = threading.Event()
    self._previous = None
    self._installed = False

  @property
  def requested(self):
    return self._event.is_set()

  def __enter__(self):
    # Signal handlers can only be set from the main thread; elsewhere (a
    # training thread of the user's) SIGTERM keeps its previous behaviour.
    if threading.current_thread() is threading.main_thread():
      self._previous = signal.signal(signal.SIGTERM, self._handle)
      self._installed = True
    return self

  def __exit__(self, *exc):
    if self._installed:
      signal.signal(signal.SIGTERM, self._previous)
      self._installed = False
    return False

  def _handle(self, signum, frame):
    del signum, frame
    if self._event.is_set():
      return
    self._event.set()
    tf.compat.v1.logging.warning(
        "Received SIGTERM: stopping after the current step and saving a checkpoint "
        "(grace period %.0f s).", self._grace_secs)
    timer = threading.Timer(self._grace_secs, self._give_up)
    timer.daemon = True
    timer.start()

  def _give_up(self):
    tf.compat.v1.logging.error(
        "Training did not stop within the %.0f s grace period after SIGTERM; "
        "exiting with status %d. Checkpoints already written are intact.",
        self._grace_secs, PREEMPTED_EXIT_CODE)
    os._exit(PREEMPTED_EXIT_CODE)  # pylint: disable=protected-access

  def hook(self):
    """A SessionRunHook that requests a stop once SIGTERM was received."""
    return _StopOnSignalHook(self._event)


class _StopOnSignalHook(tf.compat.v1.train.SessionRunHook):

  def __init__(self, event):
    self._event = event

  def after_run(self, run_context, run_values):
    del run_values
    if self._event.is_set():
      run_context.request_stop()
