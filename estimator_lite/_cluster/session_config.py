"""The ConfigProto a task's sessions and servers run with, as tf.estimator chose it.

Three rules, each once: tf.estimator's default session config; the one it set
for a task of a between-graph cluster (device filters by role); and the one
that runs when the RunConfig has none (the default). `RunConfig` and the
session and server layers below it all take them from here.
"""
from __future__ import annotations

import os
from typing import Any, Optional

import tensorflow as tf
from tensorflow.core.protobuf import rewriter_config_pb2

from estimator_lite._cluster import shared_machine
from estimator_lite._cluster import tf_config as _tf_config

# Each job's device filters in a between-graph cluster, as tf.estimator set
# them: a trainer sees the ps tasks and itself only, so it neither waits for
# nor depends on the other trainers; a ps task serves all trainers.
_DEVICE_FILTERS = {
    _tf_config.MASTER: ["/job:ps", "/job:master"],
    _tf_config.CHIEF: ["/job:ps", "/job:chief"],
    _tf_config.PS: ["/job:ps", "/job:worker", "/job:chief", "/job:master"],
}


def get_default_session_config() -> tf.compat.v1.ConfigProto:
  """The session config of a RunConfig whose `session_config` is None: tf.estimator's default.

  Soft placement, and one Grappler pass, which keeps graph setup (the time to
  the first step) short without changing results.

  Returns:
    A new `tf.compat.v1.ConfigProto`.
  """
  return tf.compat.v1.ConfigProto(
      allow_soft_placement=True,
      graph_options=tf.compat.v1.GraphOptions(
          rewrite_options=rewriter_config_pb2.RewriterConfig(
              meta_optimizer_iterations=rewriter_config_pb2.RewriterConfig.ONE)))


def cluster_session_config(role: _tf_config.ClusterRole) -> Optional[tf.compat.v1.ConfigProto]:
  """tf.estimator's session_config for a task of a between-graph cluster (None for other jobs).

  With thread spinning off where the cluster's tasks share this machine's
  cores: started by the launcher, or TF_CONFIG puts another task on this
  task's host (shared_machine.py says why).
  """
  if role.task_type == _tf_config.WORKER:
    filters = ["/job:ps", f"/job:worker/task:{role.task_id}"]
  elif isinstance(role.task_type, str) and role.task_type in _DEVICE_FILTERS:
    filters = _DEVICE_FILTERS[role.task_type]
  else:  # the evaluator, and jobs tf.estimator had no role for
    return None
  config = get_default_session_config()
  config.device_filters.extend(filters)
  if (shared_machine.tasks_share_machine(os.environ) or shared_machine.tasks_share_host(
      role.cluster_spec.as_dict(), role.task_type, role.task_id)):
    config.experimental.disable_thread_spinning = True
  return config


def effective_session_config(config: Any) -> tf.compat.v1.ConfigProto:
  """The ConfigProto the sessions and servers of `config` run with.

  `config.session_config`, or `get_default_session_config()` when it is None,
  as tf.estimator's Estimator did.

  Args:
    config: a RunConfig.

  Returns:
    A `tf.compat.v1.ConfigProto` (the RunConfig's own, or a new default one).
  """
  session_config = config.session_config
  return get_default_session_config() if session_config is None else session_config
