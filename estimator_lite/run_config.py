"""RunConfig: where and how an Estimator runs (model_dir, checkpoints, cluster role)."""
from __future__ import annotations

import copy
import os
from typing import Any, Callable, Dict, Generic, Optional, TypeVar, Union, overload

import tensorflow as tf
from tensorflow.core.protobuf import rewriter_config_pb2

from estimator_lite._cluster import strategy_checks as _strategy_checks
from estimator_lite._cluster import tf_config as _tf_config

# Any: the sentinel default of arguments typed Optional[int] / Optional[float].
_USE_DEFAULT: Any = object()
_DEFAULT_CHECKPOINT_SECS = 600
_RunConfigT = TypeVar("_RunConfigT", bound="RunConfig")
_T = TypeVar("_T")

_REPLACEABLE = (
    "model_dir", "tf_random_seed", "save_summary_steps", "save_checkpoints_steps",
    "save_checkpoints_secs", "session_config", "keep_checkpoint_max",
    "keep_checkpoint_every_n_hours", "log_step_count_steps", "train_distribute",
    "device_fn", "protocol", "eval_distribute", "experimental_distribute",
    "experimental_max_worker_delay_secs", "session_creation_timeout_secs",
    "checkpoint_save_graph_def", "steps_per_loop")


class TaskType:
  """Names of the jobs in TF_CONFIG's cluster."""
  MASTER = _tf_config.MASTER
  PS = _tf_config.PS
  WORKER = _tf_config.WORKER
  CHIEF = _tf_config.CHIEF
  EVALUATOR = _tf_config.EVALUATOR


def _check_count(name: str, value: Optional[float], minimum: float, allow_none: bool = True
                 ) -> None:
  if value is None and allow_none:
    return
  if isinstance(value, bool) or not isinstance(value, (int, float)) or value < minimum:
    raise ValueError(
        f"RunConfig({name}={value!r}): {name} must be a number >= {minimum}"
        + (" or None." if allow_none else "."))


def _default_session_config(role: _tf_config.ClusterRole) -> tf.compat.v1.ConfigProto:
  # tf.estimator's default: one Grappler pass keeps graph setup (time to the
  # first step) short without changing results.
  config = tf.compat.v1.ConfigProto(
      allow_soft_placement=True,
      graph_options=tf.compat.v1.GraphOptions(
          rewrite_options=rewriter_config_pb2.RewriterConfig(
              meta_optimizer_iterations=rewriter_config_pb2.RewriterConfig.ONE)))
  if role.distributed and role.task_type in (TaskType.CHIEF, TaskType.MASTER, TaskType.WORKER):
    # A worker talks to the ps tasks and itself only, so it neither waits for
    # nor depends on the other workers being up.
    config.device_filters.extend(
        ["/job:ps", f"/job:{role.task_type}/task:{role.task_id}"])
  return config


class _Setting(Generic[_T]):
  """A read-only RunConfig property: a constructor argument, or a field of the TF_CONFIG role.

  `name = _Setting[T]()` reads `self._name`, which __init__ stores;
  `_Setting[T](from_tf_config=True)` reads `self._role.name` (tf_config.py).

  Args:
    from_tf_config: read the value from the cluster role TF_CONFIG gives.
  """

  def __init__(self, from_tf_config: bool = False) -> None:
    self._from_tf_config = from_tf_config
    self._name = ""

  def __set_name__(self, owner: type, name: str) -> None:
    self._name = name

  @overload
  def __get__(self, config: None, owner: type) -> "_Setting[_T]": ...

  @overload
  def __get__(self, config: "RunConfig", owner: type) -> _T: ...

  def __get__(self, config: Optional["RunConfig"], owner: type) -> Any:
    if config is None:  # the class's attribute, as a property's
      return self
    if self._from_tf_config:
      return getattr(config._role, self._name)
    return getattr(config, "_" + self._name)

  def __set__(self, config: "RunConfig", value: Any) -> None:
    raise AttributeError(f"can't set attribute {self._name!r}: RunConfig is read-only; "
                         "use RunConfig.replace(...)")


class RunConfig:
  """Configuration of an Estimator run: tf.estimator's RunConfig, argument for argument.

  The cluster role (task_type, task_id, is_chief, master, ...) is read from the
  TF_CONFIG environment variable at construction; see DESIGN.md, "Roles from
  TF_CONFIG".

  Args:
    model_dir: directory for checkpoints, summaries and exports.
    tf_random_seed: graph-level random seed.
    save_summary_steps: write summaries every this many steps (None: never).
    save_checkpoints_steps: save every this many steps; excludes
      save_checkpoints_secs.
    save_checkpoints_secs: save every this many seconds; 600 when neither is
      given. Both explicitly None disables periodic checkpoints.
    session_config: a `tf.compat.v1.ConfigProto`.
    keep_checkpoint_max: newest checkpoints to keep (None or 0: all).
    keep_checkpoint_every_n_hours: also keep one checkpoint every N hours.
    log_step_count_steps: log loss and global_step/sec every N steps.
    train_distribute: a `tf.distribute.Strategy` for training, or None:
      `MirroredStrategy` (this machine's devices), `MultiWorkerMirroredStrategy`
      (TF_CONFIG chief and workers, no ps), `OneDeviceStrategy` or
      `CentralStorageStrategy`. input_fn's batch is per replica. See README,
      "Distribution strategies".
    device_fn: function of an Operation returning its device, overriding the
      default placement (e.g. `replica_device_setter`).
    protocol: server protocol, "grpc" by default.
    eval_distribute: a `tf.distribute.Strategy` for evaluation (one process:
      not a MultiWorkerMirroredStrategy across several workers), or None.
    experimental_distribute: accepted for signature compatibility; unused.
    experimental_max_worker_delay_secs: cap on the staggered start of workers.
    session_creation_timeout_secs: how long a worker waits for the chief's
      session (initialisation) before failing.
    checkpoint_save_graph_def: write graph.pbtxt and the graph into .meta files.
    steps_per_loop: keyword-only, estimator_lite's own: train this many steps
      per `Session.run` in an in-graph loop (TPUEstimator's
      iterations_per_loop). Hooks, logging, summaries and checkpoints then
      happen every K steps; input_fn must return a `tf.data.Dataset`. See
      README, "steps_per_loop".

  Raises:
    ValueError: a value out of range, both checkpoint cadences given, a
      malformed TF_CONFIG (the message quotes it), or a distribution strategy
      that cannot run in graph mode or does not fit TF_CONFIG (the message says
      what to use instead).
  """

  def __init__(self,
               model_dir: Optional[Union[str, os.PathLike[str]]] = None,
               tf_random_seed: Optional[int] = None,
               save_summary_steps: Optional[int] = 100,
               save_checkpoints_steps: Optional[int] = _USE_DEFAULT,
               save_checkpoints_secs: Optional[float] = _USE_DEFAULT,
               session_config: Optional[tf.compat.v1.ConfigProto] = None,
               keep_checkpoint_max: Optional[int] = 5,
               keep_checkpoint_every_n_hours: Optional[float] = 10000,
               log_step_count_steps: Optional[int] = 100,
               train_distribute: Optional[tf.distribute.Strategy] = None,
               device_fn: Optional[Callable[[tf.Operation], str]] = None,
               protocol: Optional[str] = None,
               eval_distribute: Optional[tf.distribute.Strategy] = None,
               experimental_distribute: Any = None,
               experimental_max_worker_delay_secs: Optional[float] = None,
               session_creation_timeout_secs: float = 7200,
               checkpoint_save_graph_def: bool = True,
               *,
               steps_per_loop: int = 1) -> None:
    if (save_checkpoints_steps not in (_USE_DEFAULT, None) and
        save_checkpoints_secs not in (_USE_DEFAULT, None)):
      raise ValueError(
          # tf.estimator's wording, which users' tests match on.
          "`save_checkpoints_steps` and `save_checkpoints_secs` cannot be both set: got "
          f"save_checkpoints_steps={save_checkpoints_steps!r} and "
          f"save_checkpoints_secs={save_checkpoints_secs!r}; pass only one.")
    if save_checkpoints_steps is _USE_DEFAULT and save_checkpoints_secs is _USE_DEFAULT:
      save_checkpoints_steps, save_checkpoints_secs = None, _DEFAULT_CHECKPOINT_SECS
    if save_checkpoints_steps is _USE_DEFAULT:
      save_checkpoints_steps = None
    if save_checkpoints_secs is _USE_DEFAULT:
      save_checkpoints_secs = None
    if model_dir is not None:
      model_dir = os.fspath(model_dir)
      if not isinstance(model_dir, str) or not model_dir:
        raise ValueError(f"RunConfig(model_dir={model_dir!r}): model_dir must be a non-empty path.")
    _check_count("save_summary_steps", save_summary_steps, 0)
    _check_count("save_checkpoints_steps", save_checkpoints_steps, 1)
    _check_count("save_checkpoints_secs", save_checkpoints_secs, 0)
    _check_count("keep_checkpoint_max", keep_checkpoint_max, 0)
    _check_count("keep_checkpoint_every_n_hours", keep_checkpoint_every_n_hours, 0)
    _check_count("log_step_count_steps", log_step_count_steps, 1)
    _check_count("session_creation_timeout_secs", session_creation_timeout_secs, 0, allow_none=False)
    _check_count("experimental_max_worker_delay_secs", experimental_max_worker_delay_secs, 0)
    if isinstance(steps_per_loop, bool) or not isinstance(steps_per_loop, int) or steps_per_loop < 1:
      raise ValueError(
          f"RunConfig(steps_per_loop={steps_per_loop!r}): steps_per_loop must be an int >= 1 "
          "(1 runs one step per Session.run, as tf.estimator did).")
    if tf_random_seed is not None and (isinstance(tf_random_seed, bool) or
                                       not isinstance(tf_random_seed, int)):
      raise ValueError(f"RunConfig(tf_random_seed={tf_random_seed!r}): the seed must be an int or None.")
    if session_config is not None and not isinstance(session_config, tf.compat.v1.ConfigProto):
      raise ValueError(
          f"RunConfig(session_config={session_config!r}): pass a tf.compat.v1.ConfigProto or None.")
    if device_fn is not None and not callable(device_fn):
      raise ValueError(f"RunConfig(device_fn={device_fn!r}): device_fn must be callable (op -> device string).")

    self._model_dir = model_dir
    self._tf_random_seed = tf_random_seed
    self._save_summary_steps = save_summary_steps
    self._save_checkpoints_steps = save_checkpoints_steps
    self._save_checkpoints_secs = save_checkpoints_secs
    self._user_session_config = session_config
    self._keep_checkpoint_max = keep_checkpoint_max
    self._keep_checkpoint_every_n_hours = keep_checkpoint_every_n_hours
    self._log_step_count_steps = log_step_count_steps
    self._train_distribute = train_distribute
    self._device_fn = device_fn
    self._protocol = protocol
    self._eval_distribute = eval_distribute
    self._experimental_distribute = experimental_distribute
    self._experimental_max_worker_delay_secs = experimental_max_worker_delay_secs
    self._session_creation_timeout_secs = session_creation_timeout_secs
    self._checkpoint_save_graph_def = checkpoint_save_graph_def
    self._steps_per_loop = steps_per_loop
    self._role = _tf_config.parse_tf_config(os.environ.get("TF_CONFIG"))
    _strategy_checks.check(train_distribute, eval_distribute, self._role,
                           steps_per_loop=steps_per_loop, device_fn=device_fn)

  # -- what the user set (read-only) -------------------------------------------
  model_dir = _Setting[Optional[str]]()
  tf_random_seed = _Setting[Optional[int]]()
  save_summary_steps = _Setting[Optional[int]]()
  save_checkpoints_steps = _Setting[Optional[int]]()
  save_checkpoints_secs = _Setting[Optional[float]]()
  keep_checkpoint_max = _Setting[Optional[int]]()
  keep_checkpoint_every_n_hours = _Setting[Optional[float]]()
  log_step_count_steps = _Setting[Optional[int]]()
  train_distribute = _Setting[Optional[tf.distribute.Strategy]]()
  eval_distribute = _Setting[Optional[tf.distribute.Strategy]]()
  experimental_distribute = _Setting[Any]()
  device_fn = _Setting[Optional[Callable[[tf.Operation], str]]]()
  protocol = _Setting[Optional[str]]()
  experimental_max_worker_delay_secs = _Setting[Optional[float]]()
  session_creation_timeout_secs = _Setting[float]()
  checkpoint_save_graph_def = _Setting[bool]()
  steps_per_loop = _Setting[int]()

  @property
  def session_config(self) -> tf.compat.v1.ConfigProto:
    if self._user_session_config is not None:
      return self._user_session_config
    return _default_session_config(self._role)

  # -- what TF_CONFIG says (read-only) ------------------------------------------
  cluster_spec = _Setting[tf.train.ClusterSpec](from_tf_config=True)
  task_type = _Setting[str](from_tf_config=True)
  task_id = _Setting[int](from_tf_config=True)
  master = _Setting[str](from_tf_config=True)
  evaluation_master = _Setting[str](from_tf_config=True)
  num_ps_replicas = _Setting[int](from_tf_config=True)
  num_worker_replicas = _Setting[int](from_tf_config=True)
  is_chief = _Setting[bool](from_tf_config=True)
  global_id_in_cluster = _Setting[Optional[int]](from_tf_config=True)

  @property
  def service(self) -> Optional[Dict[str, Any]]:
    return None

  def replace(self: _RunConfigT, **kwargs: Any) -> _RunConfigT:
    """Returns a new RunConfig with the given properties replaced.

    Only the constructor's arguments can be replaced; the cluster role is read
    from TF_CONFIG again.

    Raises:
      ValueError: a property that cannot be replaced, or an invalid value.
    """
    unknown = sorted(set(kwargs) - set(_REPLACEABLE))
    if unknown:
      raise ValueError(
          f"Replacing {unknown} is not supported. Allowed properties are "
          f"{list(_REPLACEABLE)}.")
    new = copy.copy(self)
    values = self._constructor_values()
    values.update(kwargs)
    # Re-run validation (and the both-cadences rule) through __init__ on the
    # copy, so subclasses keep their type and their own attributes.
    if "save_checkpoints_steps" in kwargs and "save_checkpoints_secs" not in kwargs:
      values["save_checkpoints_secs"] = None if kwargs["save_checkpoints_steps"] is not None else values["save_checkpoints_secs"]
    if "save_checkpoints_secs" in kwargs and "save_checkpoints_steps" not in kwargs:
      values["save_checkpoints_steps"] = None if kwargs["save_checkpoints_secs"] is not None else values["save_checkpoints_steps"]
    RunConfig.__init__(new, **values)
    return new

  def __deepcopy__(self: _RunConfigT, memo: Dict[int, Any]) -> _RunConfigT:
    # A tf.distribute strategy is not a value: it owns devices, collective
    # state and (MultiWorkerMirroredStrategy) this task's server, and some
    # refuse deepcopy. Copies of a RunConfig (Estimator.config) share it.
    new = type(self).__new__(type(self))
    memo[id(self)] = new
    for name, value in self.__dict__.items():
      if name not in ("_train_distribute", "_eval_distribute"):
        value = copy.deepcopy(value, memo)
      setattr(new, name, value)
    return new

  def _constructor_values(self) -> Dict[str, Any]:
    values = {name: getattr(self, "_" + name) for name in _REPLACEABLE
              if name != "session_config"}
    values["session_config"] = self._user_session_config
    return values

  def __repr__(self) -> str:
    return ("RunConfig(" + ", ".join(
        f"{name}={value!r}" for name, value in sorted(self._constructor_values().items()))
            + f", task_type={self.task_type!r}, task_id={self.task_id!r})")
