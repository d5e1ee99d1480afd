"""Reads the TF_CONFIG environment variable: this process's role in a cluster, the other keys.

Semantics follow tf.estimator 2.15's RunConfig: the same keys ("cluster",
"task", "session_master", "eval_session_master", "model_dir", "service"), the
same checks in the same order, any job name in "cluster" (a task of a job
tf.estimator had no role for gets its cluster properties and no session
config). Each error starts with tf.estimator's text (users' tests match on
it), then says what is wrong in this TF_CONFIG, quotes it, and shows a valid
one. Where tf.estimator (or TensorFlow's `ClusterSpec`) raised a TypeError,
the error is a `TFConfigTypeError`: a TypeError and a ValueError both.

Additions: the Kubeflow TFJob form (the evaluator listed inside "cluster") is
accepted and the evaluator is taken out of the training cluster; an empty
TF_CONFIG reads as unset; "rpc_layer" sets the scheme of the session target
(grpc by default); a value of the wrong type (a "task" that is not an object,
a fractional task index, a non-string "session_master") fails here rather
than as an AttributeError or later.

Top-level keys this module does not use are ignored, as tf.estimator ignored
them: Google Cloud AI Platform and Vertex AI add "job" (the job's own
description) and may add more; a warning names them once per process.
"""
from __future__ import annotations

import json
from typing import Any, Dict, List, NoReturn, Optional, Tuple, Type

import attrs
import tensorflow as tf

CHIEF = "chief"
WORKER = "worker"
PS = "ps"
MASTER = "master"
EVALUATOR = "evaluator"
# The jobs train_and_evaluate has a role for; "cluster" may list others.
TASK_TYPES = (CHIEF, WORKER, PS, MASTER, EVALUATOR)
LOCAL_MASTER = ""
KNOWN_KEYS = ("cluster", "task", "environment", "rpc_layer", "session_master",
              "eval_session_master", "model_dir", "service")
# Unknown top-level keys already warned about: RunConfig parses TF_CONFIG on
# every construction, and one warning per key is enough.
_warned_unknown_keys: set = set()
_EXAMPLE = ('Expected e.g. {"cluster": {"chief": ["host0:2222"], "worker": ["host1:2222"], '
            '"ps": ["host2:2222"]}, "task": {"type": "worker", "index": 0}}.')
_FROM_TF_CONFIG_NOTE = ("Note that these values may be coming from the TF_CONFIG environment "
                        "variable.")

_logging = tf.compat.v1.logging


class TFConfigError(ValueError):
  """TF_CONFIG is malformed; the message quotes the offending part and how to fix it."""


class TFConfigTypeError(TFConfigError, TypeError):
  """A TF_CONFIG value of the wrong type.

  A TypeError, as tf.estimator raised, and a TFConfigError.
  """


@attrs.frozen
class ClusterRole:
  """This process's place in the cluster, as RunConfig exposes it."""

  cluster_spec: tf.train.ClusterSpec
  task_type: Any  # a job name from TF_CONFIG; a str unless TF_CONFIG says otherwise
  task_id: int
  master: str
  evaluation_master: str
  num_ps_replicas: int
  num_worker_replicas: int
  is_chief: bool
  global_id_in_cluster: Optional[int]
  environment: Any = "local"

  @property
  def distributed(self) -> bool:
    return bool(self.cluster_spec.jobs)


def _fail(tf_text: Optional[str], problem: str, raw: Optional[str],
          error: Type[TFConfigError] = TFConfigError) -> NoReturn:
  # tf.estimator's text first, unchanged: users' assertRaisesRegex match on it.
  raise error((f"{tf_text}\n" if tf_text else "") +
              f"TF_CONFIG is malformed: {problem}\nTF_CONFIG={raw}\n{_EXAMPLE}")


def _warn_unknown_keys(unknown_keys):
  new = [key for key in unknown_keys if key not in _warned_unknown_keys]
  if new:
    _warned_unknown_keys.update(new)
    _logging.warning(
        "TF_CONFIG has key(s) %s that estimator_lite does not use; ignoring them (it "
        "reads %s).", new, list(KNOWN_KEYS))


# The highest TCP port. Port 0 is let through: tf.estimator's own tests (and
# users' tests written after them) name placeholder tasks "host0:0".
_MAX_PORT = 65535


def split_address(address: str) -> Tuple[str, str]:
  """("host", "port") of a TF_CONFIG address "host:port" ("[::1]:2222" gives "::1").

  Either part is "" when missing; `_check_addresses` has made sure neither is
  for the addresses of a parsed TF_CONFIG.
  """
  host, _, port = address.rpartition(":")
  return host.strip("[]"), port


def _check_addresses(cluster, raw):
  """Each address in "cluster" must be "host:port", the port a number up to 65535.

  TensorFlow's ClusterSpec takes any string, and a task with a bad address
  fails only later, as a server that cannot start or a peer that never
  answers. Host names are not resolved here: a RunConfig is built on every
  task and in tests, and on Kubernetes a peer's name resolves only once its
  pod is up.
  """
  for job, tasks in cluster.items():
    addresses = tasks.values() if isinstance(tasks, dict) else tasks
    for address in addresses:
      if isinstance(address, str):
        host, port = split_address(address)
        if host and port.isdigit() and int(port) <= _MAX_PORT:
          continue
      _fail(None, f'job {job!r} in "cluster" has the address {address!r}, which is not '
            f'"host:port" with a port number up to {_MAX_PORT} (e.g. "host0:2222").', raw)


def _task_index(value, raw):
  """`value` as an int, as tf.estimator's int(index), but no bool or fractional number."""
  try:
    index = int(value)
  except (TypeError, ValueError, OverflowError) as e:
    _fail(str(e), f"the task index must be an integer, got {value!r}.", raw,
          TFConfigTypeError if isinstance(e, TypeError) else TFConfigError)
  if isinstance(value, bool) or (isinstance(value, float) and index != value):
    _fail(None, f"the task index must be an integer, got {value!r}.", raw)
  return index


def _global_id(cluster_spec, task_type, task_id, chief_type):
  # The chief first, then the other jobs by name, the ps tasks last.
  order = [chief_type] + [t for t in sorted(cluster_spec.jobs) if t not in (chief_type, PS)]
  if PS in cluster_spec.jobs:
    order.append(PS)
  next_id = 0
  for job in order:
    if job == task_type:
      return next_id + task_id
    next_id += len(cluster_spec.job_tasks(job))
  return None


class TFConfig:
  """A parsed TF_CONFIG value.

  Args:
    raw: the value of TF_CONFIG, or None/"" when unset.

  Raises:
    TFConfigError: (a ValueError) it is not a JSON object.
  """

  def __init__(self, raw: Optional[str]) -> None:
    self._raw = raw
    self._config: Dict[str, Any] = {}
    self._unknown_keys: List[str] = []
    if raw is None or not raw.strip():
      return
    try:
      config = json.loads(raw)
    except ValueError as e:
      _fail(str(e), "it is not valid JSON.", raw)
    if not isinstance(config, dict):
      _fail(None, f"it must be a JSON object, got {type(config).__name__}.", raw,
            TFConfigTypeError)
    self._config = config
    self._unknown_keys = sorted(str(key) for key in set(config) - set(KNOWN_KEYS))
    _warn_unknown_keys(self._unknown_keys)

  @property
  def is_set(self) -> bool:
    """Whether TF_CONFIG holds any key."""
    return bool(self._config)

  def model_dir(self) -> Optional[str]:
    """TF_CONFIG's "model_dir", or None.

    Raises:
      TFConfigError: it is empty, or not a string (a TFConfigTypeError).
    """
    value = self._config.get("model_dir")
    if value == "":
      _fail("model_dir in TF_CONFIG should be non-empty.",
            '"model_dir" is "": remove the key, or give the directory all tasks share.',
            self._raw)
    if value is not None and not isinstance(value, str):
      _fail(None, f'"model_dir" must be a directory path (a string), got {value!r}.',
            self._raw, TFConfigTypeError)
    return value

  def service(self) -> Optional[Dict[str, Any]]:
    """TF_CONFIG's "service" (the platform's description of its service), or None.

    Raises:
      TFConfigTypeError: it is not a JSON object.
    """
    value = self._config.get("service")
    if value is not None and not isinstance(value, dict):
      _fail(f'If "service" is set in TF_CONFIG, it must be a dict. Given {type(value)}',
            f'"service" must be a JSON object, got {value!r}.', self._raw, TFConfigTypeError)
    return value

  def role(self) -> ClusterRole:
    """This process's role, from "cluster", "task" and the session masters.

    Raises:
      TFConfigError: (a ValueError) a malformed "cluster" or "task"; a
        TFConfigTypeError (also a TypeError) for a value of the wrong type.
    """
    config, raw = self._config, self._raw
    for key in ("session_master", "eval_session_master", "rpc_layer"):
      if key in config and not isinstance(config[key], str):
        _fail(None, f'"{key}" must be a string, got {config[key]!r}.', raw, TFConfigTypeError)
    task = config.get("task", {})
    if not isinstance(task, dict):
      _fail(None, f'"task" must be an object like {{"type": "worker", "index": 0}}, got '
            f"{task!r}.", raw, TFConfigTypeError)
    cluster = config.get("cluster", {})
    try:
      tf.train.ClusterSpec(cluster)  # TensorFlow's own checks of names and addresses
    except (TypeError, ValueError) as e:
      _fail(str(e), '"cluster" must map each job name to its list of "host:port" '
            f"addresses, got {cluster!r}.", raw,
            TFConfigTypeError if isinstance(e, TypeError) else TFConfigError)
    _check_addresses(cluster, raw)
    if not cluster:
      return self._local_role(task)
    return self._cluster_role(cluster, task)

  def _local_role(self, task):
    config, raw = self._config, self._raw
    task_type = task.get("type", WORKER)
    task_id = _task_index(task.get("index", 0), raw)
    if task_type != WORKER:
      _fail('If "cluster" is not set in TF_CONFIG, task type must be WORKER.',
            f'task type {task_type!r} needs a "cluster" listing the tasks; without '
            'one, a process trains alone as worker 0 (leave "task" out).', raw)
    if task_id != 0:
      _fail('If "cluster" is not set in TF_CONFIG, task index must be 0.',
            f'task index {task_id} needs a "cluster" listing the tasks; without one, a '
            'process trains alone as worker 0 (leave "task" out).', raw)
    return ClusterRole(
        cluster_spec=tf.train.ClusterSpec({}), task_type=WORKER, task_id=0,
        master=config.get("session_master", LOCAL_MASTER),
        evaluation_master=config.get("eval_session_master", LOCAL_MASTER),
        num_ps_replicas=0, num_worker_replicas=1, is_chief=True, global_id_in_cluster=0,
        environment=config.get("environment", "local"))

  def _cluster_role(self, cluster, task):
    config, raw = self._config, self._raw
    # Kubeflow's TFJob lists the evaluator inside "cluster"; it is not part of
    # the training cluster, and servers must not wait for it. A job with no
    # tasks is left out (tf.estimator kept it; TensorFlow 2.21's ClusterSpec
    # cannot describe one).
    cluster_spec = tf.train.ClusterSpec(
        {job: tasks for job, tasks in cluster.items() if job != EVALUATOR and tasks})
    jobs = cluster_spec.jobs
    if MASTER in jobs and CHIEF in jobs:
      _fail("If `master` node exists in `cluster`, job `chief` is not supported.",
            '"cluster" has both "master" and "chief"; use "chief" (master is its old '
            "name).", raw)
    chief_type = MASTER if MASTER in jobs else CHIEF
    if chief_type not in jobs:
      _fail(f'If "cluster" is set in TF_CONFIG, it must have one "{chief_type}" node.',
            f'"cluster" has no "{chief_type}" (the task that initialises the variables and '
            f"saves checkpoints); jobs given: {sorted(cluster)}.", raw)
    if len(cluster_spec.job_tasks(chief_type)) > 1:
      _fail(f'The "cluster" in TF_CONFIG must have only one "{chief_type}" node.',
            f'"cluster" lists {cluster_spec.job_tasks(chief_type)} as "{chief_type}"; make '
            f'one of them the "{chief_type}" and the others "worker"s.', raw)

    task_type = task.get("type")
    if not task_type:
      # A misspelt "task" ("tasks", "Task") is ignored as an unknown key: say so.
      hint = (f' (there is no "task" key, but there is {self._unknown_keys}: a misspelling?)'
              if self._unknown_keys and "task" not in config else "")
      _fail('If "cluster" is set in TF_CONFIG, task type must be set.',
            '"cluster" is set but "task" has no "type"; every process needs its own '
            f'"task": {{"type": ..., "index": ...}}{hint}.', raw)
    if task.get("index") is None:
      _fail('If "cluster" is set in TF_CONFIG, task index must be set.',
            f'"task" {task!r} has no "index".', raw)
    task_id = _task_index(task["index"], raw)
    if task_id < 0:
      _fail("Task index must be non-negative number.",
            f"the task index is {task_id}; tasks are numbered from 0.", raw)
    if task_type == EVALUATOR:
      if chief_type == MASTER:
        _fail("If `master` node exists in `cluster`, task_type `evaluator` is not supported.",
              'a "master" evaluates itself; to evaluate in a separate task, rename '
              '"master" to "chief".', raw)
      # The evaluator is not part of the training cluster.
      return ClusterRole(
          cluster_spec=tf.train.ClusterSpec({}), task_type=EVALUATOR, task_id=task_id,
          master=LOCAL_MASTER,
          evaluation_master=config.get("eval_session_master", LOCAL_MASTER),
          num_ps_replicas=0, num_worker_replicas=0, is_chief=False,
          global_id_in_cluster=None, environment=config.get("environment", "local"))
    if not isinstance(task_type, str) or task_type not in jobs:
      _fail(f"{task_type} is not a valid task_type in the cluster_spec:\n{cluster_spec}\n\n"
            f"{_FROM_TF_CONFIG_NOTE}",
            f'task type {task_type!r} is not a job in "cluster" (jobs: {sorted(jobs)}).', raw)
    num_tasks = len(cluster_spec.job_tasks(task_type))
    if task_id >= num_tasks:
      _fail(f"{task_id} is not a valid task_id for task_type {task_type} in the "
            f"cluster_spec:\n{cluster_spec}\n\n{_FROM_TF_CONFIG_NOTE}",
            f"task index {task_id} is out of range for job {task_type!r} with {num_tasks} "
            "task(s).", raw)
    return ClusterRole(
        cluster_spec=cluster_spec, task_type=task_type, task_id=task_id,
        master=self._session_master(cluster_spec, task_type, task_id),
        # As tf.estimator: only an evaluator evaluates against eval_session_master;
        # a chief or master evaluates in-process.
        evaluation_master=LOCAL_MASTER,
        # Tasks listed (a job given as {index: address} may skip indices).
        num_ps_replicas=cluster_spec.num_tasks(PS) if PS in jobs else 0,
        num_worker_replicas=cluster_spec.num_tasks(chief_type) + (
            cluster_spec.num_tasks(WORKER) if WORKER in jobs else 0),
        is_chief=task_type == chief_type,
        global_id_in_cluster=_global_id(cluster_spec, task_type, task_id, chief_type),
        environment=config.get("environment", "local"))

  def _session_master(self, cluster_spec, task_type, task_id):
    """The session target of a training task, by tf.estimator's precedence."""
    if "session_master" in self._config:
      return self._config["session_master"]
    jobs = cluster_spec.jobs
    # A one-node cluster trains in-process: a direct session is faster than one
    # through this task's own gRPC server, and no server needs to start.
    if len(jobs) == 1 and len(cluster_spec.job_tasks(jobs[0])) == 1:
      return LOCAL_MASTER
    address = cluster_spec.job_tasks(task_type)[task_id]
    if address is None:  # a job given as {index: address} without this index
      _fail(None, f"job {task_type!r} has no address for task index {task_id}.", self._raw)
    rpc_layer = self._config.get("rpc_layer", "grpc")
    return f"{rpc_layer}://{address}"


def parse_tf_config(raw: Optional[str]) -> ClusterRole:
  """This process's role from a TF_CONFIG string.

  Args:
    raw: the value of TF_CONFIG, or None/"" when unset.

  Returns:
    A `ClusterRole`.

  Raises:
    TFConfigError: (a ValueError) for any malformed value; a TFConfigTypeError
      (also a TypeError) for a value of the wrong type.
  """
  return TFConfig(raw).role()
