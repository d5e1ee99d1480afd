"""SIGTERM (preemption) during training: stop after the current step, save, exit 143.

A preempted machine gets SIGTERM and a grace period before SIGKILL. Without
this, a tf.estimator job lost everything since its last periodic checkpoint.
Here the signal only sets a flag; a hook requests a stop after the step in
flight, the regular CheckpointSaverHook saves at the current step when the
session ends, and train() raises `Preempted` (a SystemExit with status 143,
128 + SIGTERM), so an uncaught preemption ends the process with that status
and no traceback. If the step in flight does not finish within the grace
period (a hung ps, say), the process exits with 143 at once; checkpoints
already written stay intact. The grace period is 25 s, or
$ESTIMATOR_LITE_SIGTERM_GRACE_SECS (set it below the time the platform waits
between SIGTERM and SIGKILL). The grace timer guards training only: it is
cancelled once training has stopped and the checkpoint is saved, so a program
that catches `Preempted` may go on (export, say) for as long as it needs.

Python runs a signal handler only when the main thread executes Python code,
and a step stuck inside `Session.run` (C++) never gets back there: the signal
is noticed by a thread reading the signal wakeup fd instead, which sets the
flag and starts the grace timer at once, wherever the main thread is.
"""
import math
import os
import signal
import threading

import tensorflow as tf

PREEMPTED_EXIT_CODE = 128 + signal.SIGTERM
DEFAULT_GRACE_SECS = 25.0
GRACE_ENV = "ESTIMATOR_LITE_SIGTERM_GRACE_SECS"
_STOP = b"\0"  # no signal has number 0: tells the wakeup-fd reader to return


def grace_secs_from_env():
  """The grace period: $ESTIMATOR_LITE_SIGTERM_GRACE_SECS, else DEFAULT_GRACE_SECS.

  Raises:
    ValueError: the variable is set to something other than a positive number.
  """
  value = os.environ.get(GRACE_ENV, "").strip()
  if not value:
    return DEFAULT_GRACE_SECS
  try:
    secs = float(value)
  except ValueError:
    secs = math.nan
  if not (secs > 0 and math.isfinite(secs)):
    raise ValueError(
        f"{GRACE_ENV}={value!r} is not a positive number of seconds. Set it to how "
        "long the step in flight may take after SIGTERM before the process exits "
        f"(e.g. {GRACE_ENV}=25, the default), or unset it.")
  return secs


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
    grace_secs: how long the step in flight may take before the process
      exits; None reads $ESTIMATOR_LITE_SIGTERM_GRACE_SECS (default 25 s).

  Raises:
    ValueError: grace_secs is None and the environment variable is not a
      positive number.
  """

  def __init__(self, grace_secs=None):
    self._grace_secs = grace_secs_from_env() if grace_secs is None else grace_secs
    self._event = threading.Event()
    self._previous = None
    self._previous_wakeup_fd = -1
    self._pipe = None
    self._thread = None
    # Guards _timer and _exited between the wakeup-fd thread and __exit__.
    self._lock = threading.Lock()
    self._timer = None
    self._exited = False

  @property
  def requested(self):
    return self._event.is_set()

  def __enter__(self):
    # Signal handlers can only be set from the main thread; elsewhere (a
    # training thread of the user's) SIGTERM keeps its previous behaviour.
    if threading.current_thread() is not threading.main_thread():
      return self
    with self._lock:
      self._exited = False
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)  # set_wakeup_fd requires it
    # The Python-level handler does nothing: installing one keeps SIGTERM
    # from ending the process, and makes Python write each signal's number
    # to the wakeup fd, which _watch reads.
    self._previous = signal.signal(signal.SIGTERM, lambda signum, frame: None)
    self._previous_wakeup_fd = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    self._pipe = (read_fd, write_fd)
    self._thread = threading.Thread(target=self._watch, args=(read_fd, self._previous_wakeup_fd),
                                    name="estimator_lite-sigterm", daemon=True)
    self._thread.start()
    return self

  def __exit__(self, *exc):
    # Training has stopped (the session, closed before this, saved the
    # checkpoint): whatever the program does next (an export after catching
    # Preempted) is not a stuck step, and must not be cut short by the timer.
    self._cancel_grace_timer()
    if self._pipe is None:
      return False
    signal.set_wakeup_fd(self._previous_wakeup_fd)
    # None: the previous handler was not set from Python; the default is
    # the closest Python can restore.
    signal.signal(signal.SIGTERM,
                  signal.SIG_DFL if self._previous is None else self._previous)
    read_fd, write_fd = self._pipe
    try:
      os.write(write_fd, _STOP)
    except OSError:
      pass  # a full pipe: the reader is a daemon thread; it cannot hold up the exit
    thread = self._thread
    if thread is not None:
      thread.join(5)
    os.close(write_fd)
    if thread is None or not thread.is_alive():
      os.close(read_fd)
    self._pipe = self._thread = None
    return False

  def _watch(self, read_fd, forward_fd):
    """Reads signal numbers from the wakeup fd until __exit__ writes _STOP."""
    while True:
      try:
        data = os.read(read_fd, 64)
      except OSError:
        return
      signals = data.replace(_STOP, b"")
      if signals and forward_fd >= 0:
        # Someone else's wakeup fd (an asyncio loop, say) still hears of its signals.
        try:
          os.write(forward_fd, signals)
        except OSError:
          pass
      if signal.SIGTERM in signals and not self._event.is_set():
        self._on_sigterm()
      if not data or _STOP in data:
        return

  def _cancel_grace_timer(self):
    with self._lock:
      self._exited = True
      timer, self._timer = self._timer, None
    if timer is not None:
      timer.cancel()

  def _on_sigterm(self):
    self._event.set()
    tf.compat.v1.logging.warning(
        "Received SIGTERM: stopping after the current step and saving a checkpoint "
        "(grace period %g s).", self._grace_secs)
    with self._lock:
      # A SIGTERM read after __exit__ began (its join can time out) finds
      # training already stopped: no timer then.
      if self._exited:
        return
      self._timer = threading.Timer(self._grace_secs, self._give_up)
      self._timer.daemon = True
      self._timer.start()

  def _give_up(self):
    with self._lock:
      if self._exited:
        return  # training stopped just as the timer fired
    tf.compat.v1.logging.error(
        "Training did not stop within the %g s grace period after SIGTERM; "
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
