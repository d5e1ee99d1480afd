"""The session creator of a training task: the chief's, or a worker's that sees the chief's init promptly.

A task that initialises its variables (the chief, a local run, every
all-reduce task) restores model_dir's latest checkpoint or runs the init ops,
as `tf.compat.v1.train.ChiefSessionCreator`. A ps cluster's worker waits
until the chief has done that on the ps tasks; TensorFlow's
`WorkerSessionCreator` checks every 30 seconds, so a worker that starts one
second before the chief's initialisation loses half a minute. Here it checks
every second. Either session is a FastSession (fast_session.py).
"""
from __future__ import annotations

from typing import Any, Optional

import tensorflow as tf

from estimator_lite._session import fast_session

_READY_POLL_SECS = 1


class _WorkerSessionCreator(tf.compat.v1.train.SessionCreator):
  """WorkerSessionCreator that polls the chief's initialisation every second."""

  def __init__(self, scaffold: tf.compat.v1.train.Scaffold, master: str,
               config: tf.compat.v1.ConfigProto, max_wait_secs: float):
    self._scaffold = scaffold
    self._master = master
    self._config = config
    self._max_wait_secs = max_wait_secs

  def create_session(self) -> tf.compat.v1.Session:
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


def training_session_creator(target: Any, scaffold: tf.compat.v1.train.Scaffold,
                             checkpoint_dir: Optional[str], max_wait_secs: float
                             ) -> tf.compat.v1.train.SessionCreator:
  """The creator of this task's training sessions, each a FastSession.

  Args:
    target: the task's `targets.TrainingTarget`.
    scaffold: the training graph's Scaffold.
    checkpoint_dir: model_dir, restored from when it has a checkpoint.
    max_wait_secs: how long a worker waits for the chief's initialisation.
  """
  if target.initializes_variables:
    creator: tf.compat.v1.train.SessionCreator = tf.compat.v1.train.ChiefSessionCreator(
        scaffold=scaffold, master=target.master, config=target.session_config,
        checkpoint_dir=checkpoint_dir)
  else:
    creator = _WorkerSessionCreator(scaffold, target.master, target.session_config,
                                    max_wait_secs)
  return fast_session.FastSessionCreator(creator)
