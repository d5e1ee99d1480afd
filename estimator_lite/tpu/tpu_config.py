"""TPUConfig, InputPipelineConfig and the tpu.RunConfig: tf.estimator 2.15's, for CPU/GPU runs.

A TPUEstimator program builds these whether or not it runs on a TPU. Without a
TPU (`use_tpu=False`) tf.estimator 2.15 read `iterations_per_loop` (the cadence
of the step-rate log) and the masters; every other field was validated and
stored, and so it is here, with 2.15's checks and texts.
"""
from __future__ import annotations

import collections
import json
import os
import re
from typing import Any, Optional

import tensorflow as tf

from estimator_lite._util import validation
from estimator_lite.run_config import RunConfig as _BaseRunConfig
from estimator_lite.run_config import TaskType

_logging = tf.compat.v1.logging
_ITERATIONS_PER_LOOP = re.compile(r"^(?P<value>[1-9]\d*)((?P<suffix>[s|m|h])$|$)")
_SECONDS_PER_UNIT = {"s": 1, "m": 60, "h": 3600}
_NUM_CORES_PER_REPLICA = (1, 2, 4, 8, 16, 32, 64, 128)
# TF_CONFIG["service"][...]: the TPU job's name, as 2.15 read it.
_TPU_WORKER_JOB_NAME = "tpu_worker_job_name"

IterationsPerLoop = collections.namedtuple("IterationsPerLoop", ["value", "unit"])


def check_positive_integer(value: Any, name: str) -> None:
  """2.15's check of a count: an int (not a bool) above zero.

  Raises:
    TypeError: `value` is not an int.
    ValueError: `value` is zero or negative.
  """
  if not validation.is_int(value):
    raise TypeError(f"{name} must be int, got {type(value)}")
  if value <= 0:
    raise ValueError(f"{name} must be positive, got {value}")


def parse_iterations_per_loop(iterations_per_loop: Any) -> IterationsPerLoop:
  """Reads TPUConfig's `iterations_per_loop`: a count (`100`) or a time (`30s`, `5m`, `1h`).

  Returns:
    `IterationsPerLoop(value, unit)`: unit "count" with the number of steps,
    or "seconds" with the time in seconds.

  Raises:
    ValueError: neither form.
  """
  match = _ITERATIONS_PER_LOOP.match(str(iterations_per_loop))
  if match is None:
    # 2.15's text, its missing space after "any" included.
    raise ValueError(
        "Invalid TPUConfig `iterations_per_loop` value. Value must be positive "
        "integer value or time-based value `<N><s|m|h>` where <N> is any"
        "positive integer and `s`, `m`, `h` are unit of time in seconds, "
        "minutes, hours respectively. Examples of valid values: `3600s`, `60m`,"
        f" `1h`. Got {iterations_per_loop!r}.")
  value = int(match.group("value"))
  suffix = match.group("suffix")
  if suffix:
    return IterationsPerLoop(value * _SECONDS_PER_UNIT[suffix], "seconds")
  return IterationsPerLoop(value, "count")


class InputPipelineConfig:
  """How a TPU job feeds its cores (see TPUConfig); stored, unused without a TPU."""
  PER_SHARD_V1 = 1
  PER_HOST_V1 = 2
  PER_HOST_V2 = 3
  BROADCAST = 4
  SLICED = 5


def _tpu_job_name_from_tf_config() -> Optional[str]:
  service = json.loads(os.environ.get("TF_CONFIG") or "{}").get("service") or {}
  name = service.get(_TPU_WORKER_JOB_NAME)
  if name:
    _logging.info("Load TPU job name from TF_CONFIG: %s", name)
  return name


class TPUConfig(collections.namedtuple("TPUConfig", [
    "iterations_per_loop", "num_shards", "num_cores_per_replica",
    "per_host_input_for_training", "tpu_job_name", "initial_infeed_sleep_secs",
    "input_partition_dims", "eval_training_input_configuration",
    "experimental_host_call_every_n_steps",
    "experimental_allow_per_host_v2_parallel_get_next", "experimental_feed_hook"])):
  """TPU-related configuration of a `TPUEstimator` (tf.estimator 2.15's namedtuple).

  Without a TPU, `iterations_per_loop` sets how often the step rate is logged
  (every `log_step_count_steps / iterations_per_loop` runs, rounded up, as
  2.15 did); the other fields are validated as 2.15 did and kept.

  Args:
    iterations_per_loop: steps per TPU loop, or a time `<N><s|m|h>`.
    num_shards: (deprecated in 2.15) the number of model replicas.
    num_cores_per_replica: TPU cores per replica (1, 2, 4, ..., 128), or None.
    per_host_input_for_training: an `InputPipelineConfig` value; True and
      False stand for PER_HOST_V1 and PER_SHARD_V1.
    tpu_job_name: the TPU job's name; None: TF_CONFIG's service
      `tpu_worker_job_name`, if any.
    initial_infeed_sleep_secs: seconds the TPU infeed waits first.
    input_partition_dims: how inputs are split over a replica's cores.
    eval_training_input_configuration: PER_HOST_V1 or SLICED.
    experimental_host_call_every_n_steps: how often a TPU runs `host_call`.
    experimental_allow_per_host_v2_parallel_get_next: a TPU input option.
    experimental_feed_hook: a TPU infeed/outfeed hook class.

  Raises:
    ValueError: a value 2.15 refused (its text).
    TypeError: a count that is not an int.
  """

  def __new__(cls, iterations_per_loop: Any = 2, num_shards: Optional[int] = None,
              num_cores_per_replica: Optional[int] = None,
              per_host_input_for_training: Any = True, tpu_job_name: Optional[str] = None,
              initial_infeed_sleep_secs: Optional[int] = None,
              input_partition_dims: Any = None,
              eval_training_input_configuration: int = InputPipelineConfig.PER_HOST_V1,
              experimental_host_call_every_n_steps: int = 1,
              experimental_allow_per_host_v2_parallel_get_next: bool = False,
              experimental_feed_hook: Any = None) -> "TPUConfig":
    # 2.15's checks, in its order.
    parse_iterations_per_loop(iterations_per_loop)
    if num_shards is not None:
      check_positive_integer(num_shards, "TPUConfig num_shards")
    if input_partition_dims is not None:
      if len(input_partition_dims) not in (1, 2):
        raise ValueError("input_partition_dims must be a list/tuple with one or two elements.")
      if per_host_input_for_training is not InputPipelineConfig.PER_HOST_V2:
        raise ValueError("input_partition_dims is only supported in PER_HOST_V2 mode.")
      if num_cores_per_replica is None:
        raise ValueError("input_partition_dims requires setting num_cores_per_replica.")
    if num_cores_per_replica is not None and num_cores_per_replica not in _NUM_CORES_PER_REPLICA:
      raise ValueError("num_cores_per_replica must be 1, 2, 4, 8, 16, 32, 64, 128; "
                       f"got {num_cores_per_replica}")
    if eval_training_input_configuration not in (InputPipelineConfig.PER_HOST_V1,
                                                 InputPipelineConfig.SLICED):
      raise ValueError("eval_training_input_configuration must be PER_HOST_V1 or SLICED;"
                       f" got {eval_training_input_configuration}")
    if per_host_input_for_training is False:
      per_host_input_for_training = InputPipelineConfig.PER_SHARD_V1
    elif per_host_input_for_training is True:
      per_host_input_for_training = InputPipelineConfig.PER_HOST_V1
    if initial_infeed_sleep_secs:
      check_positive_integer(initial_infeed_sleep_secs, "TPUConfig initial_infeed_sleep_secs")
    return super().__new__(
        cls, iterations_per_loop=iterations_per_loop, num_shards=num_shards,
        num_cores_per_replica=num_cores_per_replica,
        per_host_input_for_training=per_host_input_for_training,
        tpu_job_name=tpu_job_name or _tpu_job_name_from_tf_config(),
        initial_infeed_sleep_secs=initial_infeed_sleep_secs,
        input_partition_dims=input_partition_dims,
        eval_training_input_configuration=eval_training_input_configuration,
        experimental_host_call_every_n_steps=experimental_host_call_every_n_steps,
        experimental_allow_per_host_v2_parallel_get_next=(
            experimental_allow_per_host_v2_parallel_get_next),
        experimental_feed_hook=experimental_feed_hook)


class RunConfig(_BaseRunConfig):
  """RunConfig with TPU support: tf.estimator 2.15's `tf.compat.v1.estimator.tpu.RunConfig`.

  As 2.15's, it sets no device filters for a task of a TF_CONFIG cluster
  (`session_config` stays None unless given), and `master` and
  `evaluation_master` may be given here instead of in TF_CONFIG.

  Args:
    tpu_config: a `TPUConfig`; None: `TPUConfig()`.
    evaluation_master: the session target of evaluation; None: TF_CONFIG's,
      else `master` (except on an evaluator task, which keeps TF_CONFIG's).
    master: the session target of training; None: the cluster resolver's
      `master()`, else TF_CONFIG's.
    cluster: a `tf.distribute.cluster_resolver.ClusterResolver`, or None.
    **kwargs: the arguments of `estimator_lite.RunConfig`.

  Raises:
    ValueError: both `master` and `cluster`, or a `cluster` with a
      session_config that has a cluster_def already.
  """

  def __init__(self, tpu_config: Optional[TPUConfig] = None,
               evaluation_master: Optional[str] = None, master: Optional[str] = None,
               cluster: Any = None, **kwargs: Any) -> None:
    super().__init__(**kwargs)
    self._tpu_config = tpu_config or TPUConfig()
    self._cluster = cluster
    if master is not None:
      if cluster is not None:
        raise ValueError("Both master and cluster are set. The master is the cluster "
                         "resolver's master(): pass one of them.")
      self._master = master
    else:
      self._master = cluster.master() if cluster else self._role.master
    if evaluation_master is not None:
      self._evaluation_master = evaluation_master
    elif self._role.evaluation_master or self.task_type == TaskType.EVALUATOR:
      # A cluster manager set it in TF_CONFIG: respected, as 2.15 did.
      self._evaluation_master = self._role.evaluation_master
    else:
      self._evaluation_master = self._master
    if cluster:
      self._merge_cluster_def(cluster)

  def _merge_cluster_def(self, cluster: Any) -> None:
    """2.15's rule: the resolver's ClusterSpec goes into the session's cluster_def."""
    session_config = self.session_config
    if session_config is None:
      session_config = tf.compat.v1.ConfigProto(allow_soft_placement=True,
                                                isolate_session_state=True)
    if session_config.HasField("cluster_def"):
      raise ValueError("You cannot provide a ClusterResolver and session_config.cluster_def. "
                       "Leave cluster_def out of session_config; the resolver gives it.")
    cluster_spec = cluster.cluster_spec()
    if cluster_spec:
      session_config.cluster_def.CopyFrom(cluster_spec.as_cluster_def())
    self._set({"session_config": session_config})

  def _maybe_overwrite_session_config_for_distributed_training(self) -> None:
    # 2.15's: a TPU job runs in-graph, so no device filters are set.
    pass

  @property
  def master(self) -> str:  # type: ignore[override]
    return self._master

  @property
  def evaluation_master(self) -> str:  # type: ignore[override]
    return self._evaluation_master

  @property
  def tpu_config(self) -> TPUConfig:
    return self._tpu_config

  @property
  def cluster(self) -> Any:
    return self._cluster

  def replace(self, **kwargs: Any) -> "RunConfig":
    """As `estimator_lite.RunConfig.replace`; `tpu_config` may be replaced too.

    Returns:
      A new tpu.RunConfig.
    """
    if "tpu_config" not in kwargs:
      return super().replace(**kwargs)
    tpu_config = kwargs.pop("tpu_config")
    new = super().replace(**kwargs)
    new._tpu_config = tpu_config
    return new
