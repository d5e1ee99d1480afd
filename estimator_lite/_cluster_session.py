"""MonitoredTrainingSession for Estimator.train, with a worker that sees the chief's init promptly.

A non-chief task waits until the chief has initialised (or restored) the
variables on the ps tasks. TensorFlow's `WorkerSessionCreator` checks every 30
seconds, so a worker that starts one second before the chief's initialisation
loses half a minute. Here the worker checks every second; everything else is
what `tf.compat.v1.train.MonitoredTrainingSession` does for a non-chief (no
checkpoint, summary or step-counter hooks; only `hooks`).
"""
import tensorflow as tf
from tensorflow.python.training import sync_replicas_optimizer

from estimator_lite import _fast_session
from estimator_lite import _shutdown

_READY_POLL_SECS = 1
_STOP_GRACE_PERIOD_SECS = 120  # MonitoredTrainingSession's default.
# SyncReplicasOptimizer's chief queue runner waits on the ps for gradients
# that stop coming when training ends; it only ends when the session closes.
# Waiting MonitoredSession's usual 120 s for it would only delay the exit.
_SYNC_REPLICAS_STOP_GRACE_SECS = 2
_SYNC_REPLICAS_HOOK = getattr(sync_replicas_optimizer, "_SyncReplicasOptimizerHook", ())


def _uses_sync_replicas(hooks):
  return any(isinstance(hook, _SYNC_REPLICAS_HOOK) for hook in hooks or ())


class _WorkerSessionCreator(tf.compat.v1.train.SessionCreator):
  """WorkerSessionCreator that polls the chief's initialisation every second."""

  def __init__(self, scaffold, master, config, max_wait_secs):
    self._scaffold = scaffold or tf.compat.v1.train.Scaffold()
    self._master = master
    self._config = config
    self._max_wait_secs = max_wait_secs

  def create_session(self):
    self._scaffold.finalize()
    manager = tf.compat.v1.train.SessionManager(
        local_init_op=self._scaffold.local_init_op,
        local_init_feed_dict=self._scaffold.local_init_feed_dict,
        ready_op=self._scaffold.ready_op,
        ready_for_local_init_op=self._scaffold.ready_for_local_init_op,
        graph=tf.compat.v1.get_default_graph(),
        recovery_wait_secs=_READY_POLL_SECS)
    return manager.wait_for_session(
        self._master, config=self._config, max_wait_secs=self._max_wait_secs)


def monitored_training_session(master="", is_chief=True, scaffold=None, hooks=None,
                               config=None, max_wait_secs=7200, **chief_kwargs):
  """`tf.compat.v1.train.MonitoredTrainingSession`, same arguments.

  Returns:
    A `MonitoredSession` over a `_fast_session.FastSession`: for the chief,
    as MonitoredTrainingSession builds it; for a non-chief, one whose session
    creator polls readiness every second.
  """
  if is_chief:
    if _uses_sync_replicas(list(hooks or ()) + list(chief_kwargs.get("chief_only_hooks") or ())):
      chief_kwargs.setdefault("stop_grace_period_secs", _SYNC_REPLICAS_STOP_GRACE_SECS)
      _shutdown.quiet_queue_runner_cancellation()
    # MonitoredTrainingSession with a faster per-step Session.run (see _fast_session).
    return _fast_session.monitored_training_session(
        master=master, is_chief=True, scaffold=scaffold, hooks=hooks, config=config,
        max_wait_secs=max_wait_secs, **chief_kwargs)
  creator = _WorkerSessionCreator(scaffold, master, config, max_wait_secs)
  return tf.compat.v1.train.MonitoredSession(
      session_creator=_fast_session.FastSessionCreator(creator), hooks=hooks or [],
      stop_grace_period_secs=chief_kwargs.get("stop_grace_period_secs",
                                              _STOP_GRACE_PERIOD_SECS))
