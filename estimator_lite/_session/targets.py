"""Which session a graph runs in: its target (master), its ConfigProto and this task's part.

Each rule once: a training task's session (local, a ps cluster's chief or
worker, a strategy's replicas); the session of work that runs in this process
alone (evaluation, prediction, export), which must not keep a cluster
worker's device filters; and a strategy's additions to a session config.
"""
from __future__ import annotations

from typing import Any, Optional

import attrs
import tensorflow as tf

from estimator_lite._cluster import server
from estimator_lite._cluster import session_config as _session_config
from estimator_lite._cluster import strategy_checks
from estimator_lite._util import tf_internals


@attrs.frozen
class TrainingTarget:
  """Where and how this task's training session runs.

  Attributes:
    master: the session target ("" in-process, or a grpc:// address).
    session_config: the ConfigProto of the session.
    is_chief: runs the chief's hooks and writes checkpoints and summaries.
    initializes_variables: initialises (or restores) the variables itself;
      a ps cluster's worker instead waits for the chief to have done so.
    watches_sigterm: a SIGTERM stops training after the step and saves. Off
      across MultiWorkerMirroredStrategy workers: one task stopping alone
      would leave the others waiting in the next all-reduce.
  """

  master: str
  session_config: tf.compat.v1.ConfigProto
  is_chief: bool
  initializes_variables: bool
  watches_sigterm: bool


def strategy_session_config(base: tf.compat.v1.ConfigProto,
                            strategy: tf.distribute.Strategy) -> tf.compat.v1.ConfigProto:
  """`base` plus the strategy's settings and its devices.

  The strategy's own settings: collective group leader and device filters
  (MultiWorkerMirroredStrategy), isolated session state (MirroredStrategy).
  And a Session built with an explicit ConfigProto sees one CPU unless
  device_count says more, even after `tf.config.set_logical_device_configuration`
  split the CPU; replicas on /cpu:1... would then be soft-placed on /cpu:0
  without a word.
  """
  config = tf.compat.v1.ConfigProto()
  config.CopyFrom(base)
  config = tf_internals.strategy_session_config(strategy, config)
  num_cpus = sum(1 for device in strategy.extended.worker_devices
                 if tf.DeviceSpec.from_string(device).device_type == "CPU")
  if num_cpus > config.device_count.get("CPU", 1):
    config.device_count["CPU"] = num_cpus
  return config


def training_target(config: Any) -> TrainingTarget:
  """This task's training session, from its RunConfig (and TF_CONFIG role).

  Starts this task's server for a MultiWorkerMirroredStrategy across workers.
  """
  strategy = config.train_distribute
  if strategy is None:
    return TrainingTarget(master=config.master,
                          session_config=_session_config.effective_session_config(config),
                          is_chief=config.is_chief, initializes_variables=config.is_chief,
                          watches_sigterm=True)
  session_config = strategy_session_config(
      _session_config.effective_session_config(config), strategy)
  if not strategy_checks.is_multi_worker(strategy):
    return TrainingTarget(master=config.master, session_config=session_config, is_chief=True,
                          initializes_variables=True, watches_sigterm=True)
  # Every all-reduce task initialises (or restores) its own copy of the
  # variables (the chief's initial values are broadcast); only the chief writes.
  return TrainingTarget(master=server.multi_worker_target(config, session_config),
                        session_config=session_config, is_chief=config.is_chief,
                        initializes_variables=True, watches_sigterm=False)


def in_process_session_config(config: Any, strategy: Optional[tf.distribute.Strategy] = None
                              ) -> tf.compat.v1.ConfigProto:
  """The session config of evaluation, prediction and export, which run in this process.

  The RunConfig's effective session config without its device filters: those
  meant for a cluster worker would hide the local devices. With `strategy`, its
  settings too.
  """
  session_config = tf.compat.v1.ConfigProto()
  session_config.CopyFrom(_session_config.effective_session_config(config))
  del session_config.device_filters[:]
  if strategy is not None:
    session_config = strategy_session_config(session_config, strategy)
  return session_config
