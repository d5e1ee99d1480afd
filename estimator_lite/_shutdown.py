"""Keeps the end of synchronous training quiet and prompt.

`SyncReplicasOptimizer`'s chief runs a QueueRunner thread that waits on the ps
for the next round of gradients. When training ends, no more gradients come:
the thread stays blocked until the session is closed, which cancels it, and it
dies with a CancelledError traceback that says nothing useful to the user. The
training itself finished correctly.
"""
import contextlib
import threading

import tensorflow as tf

_QUEUE_RUNNER_THREAD_PREFIX = "QueueRunnerThread-"
_JOIN_SECS = 10


def _is_shutdown_noise(args):
  thread_name = getattr(args.thread, "name", "") or ""
  if not thread_name.startswith(_QUEUE_RUNNER_THREAD_PREFIX):
    return False
  if isinstance(args.exc_value, (tf.errors.CancelledError, tf.errors.AbortedError)):
    return True
  # The session was closed under the thread between two runs.
  return isinstance(args.exc_value, RuntimeError) and "closed" in str(args.exc_value).lower()


@contextlib.contextmanager
def quiet_queue_runner_cancellation():
  """Inside, a QueueRunner thread cancelled at session close logs one line, no traceback.

  On exit, waits (a few seconds at most) for such threads to finish, so their
  end is still covered. Any other uncaught thread exception is reported as usual.
  """
  previous = threading.excepthook

  def excepthook(args):
    if _is_shutdown_noise(args):
      tf.compat.v1.logging.info("%s stopped at the end of training (%s).", args.thread.name,
                                type(args.exc_value).__name__)
      return
    previous(args)

  threading.excepthook = excepthook
  try:
    yield
  finally:
    for thread in threading.enumerate():
      if thread.name.startswith(_QUEUE_RUNNER_THREAD_PREFIX):
        thread.join(_JOIN_SECS)
    threading.excepthook = previous
