"""Parses the TF_CONFIG environment variable into this process's role in a cluster.

Semantics follow tf.estimator 2.15's RunConfig, with two additions: the
Kubeflow TFJob form (the evaluator listed inside `cluster`) is accepted and
the evaluator is taken out of the training cluster, and every malformed
value fails at once with a message that quotes it.

Top-level keys this module does not use are ignored, as tf.estimator ignored
them: Google Cloud AI Platform and Vertex AI add "job" (the job's own
description) and may add more; a warning names them once per process.
"""
from __future__ import annotations

import json
from typing import Optional

import attrs
import tensorflow as tf

CHIEF = "chief"
WORKER = "worker"
PS = "ps"
MASTER = "master"
EVALUATOR = "evaluator"
TASK_TYPES = (CHIEF, WORKER, PS, MASTER, EVALUATOR)
LOCAL_MASTER = ""
KNOWN_KEYS = ("cluster", "task", "environment", "rpc_layer", "session_master",
              "eval_session_master")
# Unknown top-level keys already warned about: RunConfig parses TF_CONFIG on
# every construction (and replace()), and one warning per key is enough.
_warned_unknown_keys: set = set()

_logging = tf.compat.v1.logging


class TFConfigError(ValueError):
  """TF_CONFIG is malformed; the message quotes the offending part and how to fix it."""


@attrs.frozen
class ClusterRole:
  """This process's place in the cluster, as RunConfig exposes it."""

  cluster_spec: tf.train.ClusterSpec
  task_type: str
  task_id: int
  master: str
  evaluation_master: str
  num_ps_replicas: int
  num_worker_replicas: int
  is_chief: bool
  global_id_in_cluster: Optional[int]
  environment: str = "local"

  @property
  def distributed(self):
    return bool(self.cluster_spec.jobs)


def _fail(problem, raw):
  raise TFConfigError(
      f"TF_CONFIG is malformed: {problem}\nTF_CONFIG={raw}\n"
      'Expected e.g. {"cluster": {"chief": ["host0:2222"], "worker": '
      '["host1:2222"], "ps": ["host2:2222"]}, "task": {"type": "worker", '
      '"index": 0}}.')


def _load(raw):
  if raw is None or not raw.strip():
    return {}
  try:
    config = json.loads(raw)
  except ValueError as e:
    _fail(f"it is not valid JSON ({e}).", raw)
  if not isinstance(config, dict):
    _fail(f"it must be a JSON object, got {type(config).__name__}.", raw)
  return config


def _check_cluster(cluster, raw):
  if not isinstance(cluster, dict):
    _fail(f'"cluster" must be an object of job name to address list, got {cluster!r}.', raw)
  for job, addresses in cluster.items():
    if job not in TASK_TYPES:
      _fail(f'unknown job {job!r} in "cluster"; job names are {list(TASK_TYPES)}.', raw)
    if isinstance(addresses, dict):
      addresses = list(addresses.values())
    if not isinstance(addresses, list) or not addresses:
      _fail(f'"cluster"[{job!r}] must be a non-empty list of "host:port", got {addresses!r}.', raw)
    for address in addresses:
      if not isinstance(address, str) or ":" not in address:
        _fail(f'"cluster"[{job!r}] has address {address!r}; addresses are "host:port" strings.', raw)
  return cluster


def _warn_unknown_keys(unknown_keys):
  new = [key for key in unknown_keys if key not in _warned_unknown_keys]
  if new:
    _warned_unknown_keys.update(new)
    _logging.warning(
        "TF_CONFIG has key(s) %s that estimator_lite does not use; ignoring them (it "
        "reads %s).", new, list(KNOWN_KEYS))


def _parse_task(task, raw, distributed, hint=""):
  if not isinstance(task, dict):
    _fail(f'"task" must be an object like {{"type": "worker", "index": 0}}, got {task!r}.', raw)
  task_type = task.get("type")
  index = task.get("index")
  if distributed and not task_type:
    _fail('"cluster" is set but "task" has no "type"; every process needs its own '
          f'"task": {{"type": ..., "index": ...}}{hint}.', raw)
  if distributed and index is None:
    _fail(f'"task" {task!r} has no "index".', raw)
  task_type = task_type or WORKER
  if task_type not in TASK_TYPES:
    _fail(f'unknown task type {task_type!r}; task types are {list(TASK_TYPES)}.', raw)
  index = 0 if index is None else index
  if isinstance(index, bool) or not isinstance(index, (int, str)):
    _fail(f'task index must be an integer, got {index!r}.', raw)
  try:
    index = int(index)
  except ValueError:
    _fail(f'task index must be an integer, got {index!r}.', raw)
  if index < 0:
    _fail(f"task index must be non-negative, got {index}.", raw)
  return task_type, index


def _global_id(cluster_spec, task_type, task_id, chief_type):
  order = [chief_type] + [t for t in sorted(cluster_spec.jobs) if t not in (chief_type, PS)]
  if PS in cluster_spec.jobs:
    order.append(PS)
  next_id = 0
  for job in order:
    if job == task_type:
      return next_id + task_id
    next_id += len(cluster_spec.job_tasks(job))
  return None


def _session_master(config, cluster_spec, task_type, task_id):
  """The session target of a training task, by tf.estimator's precedence."""
  if "session_master" in config:
    return config["session_master"]
  jobs = cluster_spec.jobs
  # A one-node cluster trains in-process: a direct session is faster than one
  # through this task's own gRPC server, and no server needs to start.
  if len(jobs) == 1 and len(cluster_spec.job_tasks(jobs[0])) == 1:
    return LOCAL_MASTER
  rpc_layer = config.get("rpc_layer", "grpc")
  return f"{rpc_layer}://{cluster_spec.job_tasks(task_type)[task_id]}"


def parse_tf_config(raw: Optional[str]) -> ClusterRole:
  """Parses a TF_CONFIG string.

  Args:
    raw: the value of TF_CONFIG, or None/"" when unset.

  Returns:
    A `ClusterRole`.

  Raises:
    TFConfigError: (a ValueError) for any malformed value.
  """
  config = _load(raw)
  unknown_keys = sorted(set(config) - set(KNOWN_KEYS))
  _warn_unknown_keys(unknown_keys)
  cluster = _check_cluster(config.get("cluster") or {}, raw)
  environment = config.get("environment", "local")
  if not isinstance(environment, str):
    _fail(f'"environment" must be a string, got {environment!r}.', raw)
  for key in ("session_master", "eval_session_master", "rpc_layer"):
    if key in config and not isinstance(config[key], str):
      _fail(f'"{key}" must be a string, got {config[key]!r}.', raw)
  eval_session_master = config.get("eval_session_master", LOCAL_MASTER)
  # Kubeflow's TFJob lists the evaluator inside "cluster"; it is not part of the
  # training cluster, and servers must not wait for it.
  training_jobs = {job: list(addrs.values()) if isinstance(addrs, dict) else list(addrs)
                   for job, addrs in cluster.items() if job != EVALUATOR}
  evaluators = cluster.get(EVALUATOR)
  if evaluators is not None and len(evaluators) > 1:
    _fail(f'"cluster" lists {len(evaluators)} evaluators; at most one is supported.', raw)
  # A misspelt "task" ("tasks", "Task") is ignored as an unknown key: say so
  # if the task turns out to be missing.
  hint = (f' (there is no "task" key, but there is {unknown_keys}: a misspelling?)'
          if unknown_keys and "task" not in config else "")
  task_type, task_id = _parse_task(config.get("task") or {}, raw, bool(cluster), hint)

  if not training_jobs:
    if cluster and task_type != EVALUATOR:
      _fail('"cluster" holds only an evaluator; add the training jobs (chief, worker, ps).', raw)
    if task_type not in (WORKER, EVALUATOR) or (task_type == WORKER and task_id != 0):
      _fail(f'task {task_type!r} index {task_id} needs a "cluster"; without one, a '
            'process trains alone as worker 0 (leave "task" out).', raw)
    is_evaluator = task_type == EVALUATOR
    return ClusterRole(
        cluster_spec=tf.train.ClusterSpec({}), task_type=task_type, task_id=task_id,
        master=config.get("session_master", LOCAL_MASTER),
        evaluation_master=eval_session_master,
        num_ps_replicas=0, num_worker_replicas=0 if is_evaluator else 1,
        is_chief=not is_evaluator, global_id_in_cluster=None if is_evaluator else 0,
        environment=environment)

  has_master = MASTER in training_jobs
  chief_type = MASTER if has_master else CHIEF
  if has_master and CHIEF in training_jobs:
    _fail('"cluster" has both "master" and "chief"; use "chief" (master is its old name).', raw)
  if chief_type not in training_jobs:
    _fail('"cluster" must have one "chief" node (the task that initialises and saves '
          f'checkpoints); jobs given: {sorted(training_jobs)}.', raw)
  if len(training_jobs[chief_type]) != 1:
    _fail(f'"cluster" must have only one {chief_type!r} node, got '
          f'{training_jobs[chief_type]}.', raw)
  if has_master and task_type == EVALUATOR:
    _fail('task type "evaluator" is not supported with a "master" node: a master '
          'evaluates itself; use "chief" with a separate evaluator.', raw)
  cluster_spec = tf.train.ClusterSpec(training_jobs)

  if task_type == EVALUATOR:
    if evaluators is not None and task_id >= len(evaluators):
      _fail(f'task index {task_id} is out of range for job "evaluator" with '
            f"{len(evaluators)} task(s).", raw)
    return ClusterRole(
        cluster_spec=tf.train.ClusterSpec({}), task_type=task_type, task_id=task_id,
        master=LOCAL_MASTER, evaluation_master=eval_session_master,
        num_ps_replicas=0, num_worker_replicas=0, is_chief=False,
        global_id_in_cluster=None, environment=environment)
  if task_type not in training_jobs:
    _fail(f'task type {task_type!r} is not a job in "cluster" (jobs: '
          f"{sorted(training_jobs)}).", raw)
  if task_id >= len(training_jobs[task_type]):
    _fail(f"task index {task_id} is out of range for job {task_type!r} with "
          f"{len(training_jobs[task_type])} task(s).", raw)
  return ClusterRole(
      cluster_spec=cluster_spec, task_type=task_type, task_id=task_id,
      master=_session_master(config, cluster_spec, task_type, task_id),
      # As tf.estimator: only an evaluator evaluates against eval_session_master;
      # a chief or master evaluates in-process.
      evaluation_master=LOCAL_MASTER,
      num_ps_replicas=len(training_jobs.get(PS, ())),
      num_worker_replicas=len(training_jobs[chief_type]) + len(training_jobs.get(WORKER, ())),
      is_chief=task_type == chief_type,
      global_id_in_cluster=_global_id(cluster_spec, task_type, task_id, chief_type),
      environment=environment)
