"""Keeps the end of synchronous training quiet.

`SyncReplicasOptimizer`'s chief runs a QueueRunner thread that waits on the ps
for the next round of gradients. When training ends no more gradients come:
the thread stays blocked until the session is closed, which cancels it, and it
dies with a CancelledError traceback that says nothing useful to the user (the
training itself finished correctly). Such a thread now logs one line instead.
"""
import threading

import tensorflow as tf

_QUEUE_RUNNER_THREAD_PREFIX = "QueueRunnerThread-"
_lock = threading.Lock()
_installed = False


def _is_shutdown_noise(args):
  thread_name = getattr(args.thread, "name", "") or ""
  if not thread_name.startswith(_QUEUE_RUNNER_THREAD_PREFIX):
    return False
  if isinstance(args.exc_value, (tf.errors.CancelledError, tf.errors.AbortedError)):
    return True
  # The session was closed under the thread between two runs.
  return isinstance(args.exc_value, RuntimeError) and "closed" in str(args.exc_value).lower()


def quiet_queue_runner_cancellation():
  """Makes a QueueRunner thread cancelled at session close log one line, no traceback.

  Installed once per process (wrapping `threading.excepthook`); any other
  uncaught thread exception is reported as before.
  """
  global _installed
  with _lock:
    if _installed:
      return
    previous = threading.excepthook

    def excepthook(args):
      if _is_shutdown_noise(args):
        tf.compat.v1.logging.info("%s stopped at the end of training (%s).",
                                  args.thread.name, type(args.exc_value).__name__)
        return
      previous(args)

    threading.excepthook = excepthook
    _installed = True
