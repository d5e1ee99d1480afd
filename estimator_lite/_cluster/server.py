"""What a cluster task needs around training: its gRPC server and its staggered start.

Used by train_and_evaluate's roles (roles.py) for the ps, chief, master and
worker tasks of TF_CONFIG, and by the training session for a
MultiWorkerMirroredStrategy, whose tasks each train against their own server.
"""
from __future__ import annotations

import time
from typing import Any, Dict, Optional, Tuple

import tensorflow as tf

from estimator_lite._cluster import address_checks
from estimator_lite._cluster import session_config as _session_config
from estimator_lite._cluster import tf_config as _tf_config
from estimator_lite._util import tf_internals

_logging = tf.compat.v1.logging

# tf.estimator's stagger: worker i waits min(60, (i + 1) * 5) seconds, so that
# asynchronous updates from many workers do not all hit the fresh model at once.
_MAX_DELAY_SECS = 60
_DELAY_SECS_PER_WORKER = 5
_TRAINER_JOBS = (_tf_config.CHIEF, _tf_config.MASTER, _tf_config.WORKER)
# Servers this process started for MultiWorkerMirroredStrategy, by task: a
# port can be served only once per process, and a server cannot be stopped.
_MULTI_WORKER_SERVERS: Dict[Tuple[str, int], tf.distribute.Server] = {}


def _server_config(session_config: tf.compat.v1.ConfigProto) -> tf.compat.v1.ConfigProto:
  # The server's default session config: the task's own session config, so a
  # worker's device filters keep it from waiting for (or talking to) the other
  # workers; a direct session's placement options do not apply to a server.
  config = tf.compat.v1.ConfigProto()
  config.CopyFrom(session_config)
  config.log_device_placement = False
  return config


def _log_exposure(task_type: str, task_id: int, address: str) -> None:
  # TensorFlow binds the server to every interface whatever host the address
  # names, and serves any client: say so once, at a level shown by default.
  _, port = _tf_config.split_address(address)
  _logging.warning(
      "TensorFlow server for %s:%d listens unauthenticated on all interfaces at port %s: "
      "anyone who can reach this port can run TensorFlow ops in this process. Run the "
      "cluster on a trusted network only (docs/security.md; `python -m "
      "estimator_lite.launch --print-firewall` prints firewall rules for this TF_CONFIG).",
      task_type, task_id, port)


def start_std_server(config: Any) -> Optional[tf.distribute.Server]:
  """Starts this task's `tf.distribute.Server`, as tf.estimator did.

  Args:
    config: the Estimator's RunConfig (cluster_spec, task_type, task_id,
      session_config, protocol).

  Returns:
    The started server, or None for a one-node cluster (which trains
    in-process without one).

  Raises:
    RuntimeError: no cluster, task or master to start a server for.
    address_checks.TFConfigAddressError: this task's address or a ps's has
      port 0 or a host that does not resolve in time (see address_checks).
  """
  if not config.cluster_spec.jobs or not config.task_type or config.task_id is None:
    raise RuntimeError(
        "Could not start server; be sure to specify cluster_spec, task_type, and "
        "task in RunConfig or set the TF_CONFIG environment variable (got "
        f"cluster={config.cluster_spec.as_dict()}, task_type={config.task_type!r}, "
        f"task_id={config.task_id!r}).")
  if not config.master:
    jobs = config.cluster_spec.jobs
    if (len(jobs) == 1 and len(config.cluster_spec.job_tasks(jobs[0])) == 1 and
        config.task_type in _TRAINER_JOBS):
      _logging.info("Skip starting Tensorflow server as there is only one node in the cluster.")
      return None
    raise RuntimeError(
        "Could not start server; be sure to specify master in RunConfig or set "
        "the TF_CONFIG environment variable.")
  address_checks.check_task_addresses(config.cluster_spec, config.task_type, config.task_id)
  _logging.info("Start Tensorflow server for %s:%d of %s.", config.task_type,
                config.task_id, config.cluster_spec.as_dict())
  server = tf.distribute.Server(
      config.cluster_spec, job_name=config.task_type, task_index=config.task_id,
      config=_server_config(_session_config.effective_session_config(config)),
      protocol=config.protocol,
      start=True)
  _log_exposure(config.task_type, config.task_id,
                config.cluster_spec.task_address(config.task_type, config.task_id))
  return server


def worker_start_delay_secs(config: Any) -> float:
  """Seconds worker `task_id` waits before training (0 for chief and master).

  `min(max_delay, (task_id + 1) * 5)`, where max_delay is
  `RunConfig(experimental_max_worker_delay_secs)` or 60.
  """
  if config.task_type != _tf_config.WORKER:
    return 0
  max_delay = _MAX_DELAY_SECS
  if config.experimental_max_worker_delay_secs is not None:
    max_delay = config.experimental_max_worker_delay_secs
  return min(max_delay, (config.task_id + 1) * _DELAY_SECS_PER_WORKER)


def wait_before_training(config: Any) -> None:
  """Sleeps for this task's staggered start (see worker_start_delay_secs)."""
  delay = worker_start_delay_secs(config)
  if delay > 0:
    _logging.info("Waiting %g secs before starting training.", delay)
    time.sleep(delay)


def multi_worker_target(config: Any, session_config: tf.compat.v1.ConfigProto) -> str:
  """The session target of this task under MultiWorkerMirroredStrategy: its own server.

  The server is started once per process. A strategy created in eager mode
  with TF_CONFIG set (as TensorFlow's tutorial does) already serves this
  task's address, and its target is returned as it is.

  Args:
    config: the RunConfig (cluster_spec, task, protocol, train_distribute).
    session_config: the task's session config, for the server's default.

  Raises:
    address_checks.TFConfigAddressError: a task's address has port 0 or a
      host that does not resolve in time.
  """
  address = config.cluster_spec.task_address(config.task_type, config.task_id)
  protocol = config.protocol or "grpc"
  if tf_internals.strategy_serves_this_task(config.train_distribute):
    return f"{protocol}://{address}"
  key = (config.task_type, config.task_id)
  if key not in _MULTI_WORKER_SERVERS:
    address_checks.check_task_addresses(config.cluster_spec, config.task_type, config.task_id,
                                        all_reduce=True)
    _logging.info("Starting TensorFlow server for %s:%d at %s.", config.task_type,
                  config.task_id, address)
    _MULTI_WORKER_SERVERS[key] = tf.distribute.Server(
        config.cluster_spec, job_name=config.task_type, task_index=config.task_id,
        config=session_config, protocol=protocol, start=True)
    _log_exposure(config.task_type, config.task_id, address)
  return _MULTI_WORKER_SERVERS[key].target
