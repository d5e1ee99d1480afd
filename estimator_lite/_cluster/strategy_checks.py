"""Which tf.distribute strategies RunConfig accepts, checked when the RunConfig is built.

estimator_lite runs every strategy in graph mode (a `tf.Graph`,
`tf.compat.v1` sessions), as tf.estimator did. On TensorFlow 2.21 that works
for the strategies whose replicas are all driven from one graph per process:
`MirroredStrategy` (this machine's devices), `MultiWorkerMirroredStrategy`
(all-reduce across the TF_CONFIG chief and workers, no ps), and the
`OneDeviceStrategy` / `CentralStorageStrategy` variants of the same. The
others need eager mode or hardware estimator_lite does not drive; a RunConfig
holding one fails here, with the reason and what to use instead, rather than
deep inside TensorFlow (or in a hang) once training starts.
"""
from __future__ import annotations

from typing import Any, Optional

import tensorflow as tf

from estimator_lite._cluster import tf_config as _tf_config
from estimator_lite._util import tf_internals

MIRRORED = "MirroredStrategy"
MULTI_WORKER = "MultiWorkerMirroredStrategy"
ONE_DEVICE = "OneDeviceStrategy"
CENTRAL_STORAGE = "CentralStorageStrategy"

_SUPPORTED = (
    # (kind, classes); tf.distribute.experimental.MultiWorkerMirroredStrategy
    # instances are instances of tf.distribute.MultiWorkerMirroredStrategy.
    (MULTI_WORKER, (tf.distribute.MultiWorkerMirroredStrategy,
                    tf.compat.v1.distribute.experimental.MultiWorkerMirroredStrategy)),
    (MIRRORED, (tf.distribute.MirroredStrategy, tf.compat.v1.distribute.MirroredStrategy)),
    (ONE_DEVICE, (tf.distribute.OneDeviceStrategy, tf.compat.v1.distribute.OneDeviceStrategy)),
    (CENTRAL_STORAGE, (tf.distribute.experimental.CentralStorageStrategy,
                       tf.compat.v1.distribute.experimental.CentralStorageStrategy)),
)

_PS_V2_TEXT = ("Please use `tf.compat.v1.distribute.experimental.ParameterServerStrategy` for "
               "parameter server strategy with estimator.")
_BETWEEN_GRAPH_ADVICE = (
    "For asynchronous or SyncReplicasOptimizer training with parameter servers, "
    "leave train_distribute=None and list 'ps' tasks in TF_CONFIG: estimator_lite "
    "runs tf.estimator's between-graph replication (replica_device_setter) itself.")


def _unsupported_reason(strategy):
  """Why `strategy` cannot run in graph mode here, or None if it is not a known unsupported one."""
  names = {cls.__name__ for cls in type(strategy).__mro__}
  if names & {"ParameterServerStrategy", "ParameterServerStrategyV1", "ParameterServerStrategyV2"}:
    return ("ParameterServerStrategy is not supported: the TF2 one needs eager "
            "mode and a tf.distribute.experimental.coordinator.ClusterCoordinator, "
            "which cannot drive an Estimator's graph-mode sessions, and the "
            "tf.compat.v1 one only wraps the parameter-server training "
            "estimator_lite runs without a strategy. " + _BETWEEN_GRAPH_ADVICE)
  if any(name.startswith("TPUStrategy") for name in names):
    return ("TPUStrategy is not supported: estimator_lite does not drive TPUs "
            "(tf.estimator used TPUEstimator for them). Use MirroredStrategy for "
            "several GPUs of one machine, MultiWorkerMirroredStrategy for several machines.")
  return None


def strategy_kind(strategy: Any) -> Optional[str]:
  """Returns MIRRORED, MULTI_WORKER, ONE_DEVICE or CENTRAL_STORAGE for a supported strategy, else None."""
  for kind, classes in _SUPPORTED:
    if isinstance(strategy, classes):
      return kind
  return None


def num_workers(strategy: Any) -> int:
  """How many worker processes a MultiWorkerMirroredStrategy spans (1 without a cluster)."""
  return tf_internals.strategy_num_workers(strategy)


def is_multi_worker(strategy: Any) -> bool:
  """True for a MultiWorkerMirroredStrategy whose replicas span several processes."""
  return strategy_kind(strategy) == MULTI_WORKER and num_workers(strategy) > 1


def _check_type(name, strategy):
  if strategy is None:
    return None
  if isinstance(strategy, type):
    raise ValueError(
        f"RunConfig({name}={strategy.__name__}): pass a strategy instance, e.g. "
        f"{name}={strategy.__name__}(), not the class.")
  if not isinstance(strategy, (tf.distribute.Strategy, tf.compat.v1.distribute.Strategy)):
    raise ValueError(
        f"RunConfig({name}={strategy!r}): {name} must be a tf.distribute.Strategy "
        "instance (e.g. tf.distribute.MirroredStrategy()) or None.")
  reason = _unsupported_reason(strategy)
  kind = strategy_kind(strategy)
  if reason is None and kind is None:
    reason = (f"{type(strategy).__name__} is not one of the strategies estimator_lite "
              "runs in graph mode (MirroredStrategy, MultiWorkerMirroredStrategy, "
              "OneDeviceStrategy, CentralStorageStrategy).")
  if reason is not None:
    # tf.estimator rejected the TF2 ParameterServerStrategy with this text
    # (users' tests match on it); the compat.v1 one it ran.
    tf_text = (_PS_V2_TEXT + " "
               if isinstance(strategy, tf.distribute.experimental.ParameterServerStrategy) else "")
    raise ValueError(f"{tf_text}RunConfig({name}={type(strategy).__name__}): {reason}")
  return kind


def _check_multi_worker_cluster(strategy, role):
  """A MultiWorkerMirroredStrategy must describe the same cluster and task as TF_CONFIG."""
  jobs = role.cluster_spec.jobs
  if _tf_config.PS in jobs:
    raise ValueError(
        "RunConfig(train_distribute=MultiWorkerMirroredStrategy): TF_CONFIG lists "
        f"{role.num_ps_replicas} 'ps' task(s), but MultiWorkerMirroredStrategy keeps "
        "a copy of every variable on each worker and all-reduces the gradients; it "
        "uses no parameter servers. Remove the 'ps' job from TF_CONFIG, or keep it "
        "and set train_distribute=None. " + _BETWEEN_GRAPH_ADVICE)
  if _tf_config.MASTER in jobs:
    raise ValueError(
        "RunConfig(train_distribute=MultiWorkerMirroredStrategy): TF_CONFIG has a "
        "'master' task; MultiWorkerMirroredStrategy needs 'chief' (and 'worker') "
        "tasks. Rename 'master' to 'chief' and run a separate 'evaluator' task.")
  trainers = role.num_worker_replicas if jobs else 1
  workers = num_workers(strategy)
  if workers != trainers:
    raise ValueError(
        f"RunConfig(train_distribute=MultiWorkerMirroredStrategy): the strategy spans "
        f"{workers} worker(s) but TF_CONFIG lists {trainers} training task(s) "
        "(chief and workers). The strategy reads TF_CONFIG when it is constructed: "
        "set TF_CONFIG before creating it, in every task.")
  task_type, task_id = tf_internals.strategy_task(strategy)
  if workers > 1 and (task_type, task_id) != (role.task_type, role.task_id):
    raise ValueError(
        "RunConfig(train_distribute=MultiWorkerMirroredStrategy): the strategy was "
        f"built for task {task_type}:{task_id} but TF_CONFIG "
        f"now says {role.task_type}:{role.task_id}. Create the strategy after TF_CONFIG "
        "is final.")


def check(train_distribute: Any, eval_distribute: Any, role: Any, steps_per_loop: int,
          device_fn: Any) -> None:
  """Raises ValueError for a strategy RunConfig cannot run (see module docstring).

  Args:
    train_distribute: RunConfig's train_distribute.
    eval_distribute: RunConfig's eval_distribute.
    role: the `tf_config.ClusterRole` of this process.
    steps_per_loop: RunConfig's steps_per_loop.
    device_fn: RunConfig's device_fn.

  Raises:
    ValueError: a non-strategy value, a strategy that needs eager mode or
      hardware estimator_lite does not drive, or a strategy that does not fit
      this process's TF_CONFIG role; the message says what to use instead.
  """
  train_kind = _check_type("train_distribute", train_distribute)
  eval_kind = _check_type("eval_distribute", eval_distribute)
  if train_kind == MULTI_WORKER and role.task_type == _tf_config.EVALUATOR:
    # Created in eager mode on the evaluator task (the same program runs on
    # every task), the strategy pings the training tasks every 30 seconds and
    # logs errors once they have finished. The evaluator never trains with
    # it, so the checks would only alarm the user.
    tf_internals.stop_strategy_health_checks(train_distribute)
  if train_kind is not None and role.task_type != _tf_config.EVALUATOR:
    # The evaluator runs the same program but never trains: its
    # train_distribute is not used.
    if steps_per_loop > 1:
      raise ValueError(
          f"RunConfig(train_distribute={train_kind}, steps_per_loop={steps_per_loop}): "
          "the in-graph training loop of steps_per_loop cannot hold a strategy's "
          "replicas. Use steps_per_loop=1 with a strategy.")
    if device_fn is not None:
      raise ValueError(
          f"RunConfig(train_distribute={train_kind}, device_fn={device_fn!r}): a "
          "strategy places each replica on its device itself; device_fn would "
          "override it. Pass one or the other.")
    if train_kind == MULTI_WORKER:
      _check_multi_worker_cluster(train_distribute, role)
    elif role.num_ps_replicas or role.num_worker_replicas > 1:
      raise ValueError(
          f"RunConfig(train_distribute={train_kind}): {train_kind} replicates the "
          "model over the devices of this one process, but TF_CONFIG lists "
          f"{role.num_worker_replicas} training task(s) and {role.num_ps_replicas} ps "
          "task(s). For several machines use MultiWorkerMirroredStrategy (chief and "
          "worker tasks, no ps) created after TF_CONFIG is set. " + _BETWEEN_GRAPH_ADVICE)
  if eval_kind == MULTI_WORKER and num_workers(eval_distribute) > 1:
    raise ValueError(
        "RunConfig(eval_distribute=MultiWorkerMirroredStrategy across "
        f"{num_workers(eval_distribute)} workers): evaluation runs in one process "
        "(the evaluator task, or the trainer in local mode), so an all-reduce "
        "across workers would wait forever for the others. Use eval_distribute="
        "tf.distribute.MirroredStrategy() (this machine's devices) or None.")
