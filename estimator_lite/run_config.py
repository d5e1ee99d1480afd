"""RunConfig: where and how an Estimator runs (model_dir, checkpoints, cluster role)."""
from __future__ import annotations

import copy
import functools
import inspect
import numbers
import os
from typing import Any, Callable, Dict, Generic, List, Optional, TypeVar, Union, overload

import tensorflow as tf

from estimator_lite._cluster import session_config as _session_config
from estimator_lite._cluster import strategy_checks as _strategy_checks
from estimator_lite._cluster import tf_config as _tf_config
from estimator_lite._graph import ps_placement as _ps_placement
from estimator_lite._util import validation
# pylint: disable=unused-import
# tf.estimator's run_config module had get_default_session_config; with it,
# the effective config that sessions and servers run with.
from estimator_lite._cluster.session_config import effective_session_config
from estimator_lite._cluster.session_config import get_default_session_config
# pylint: enable=unused-import

_logging = tf.compat.v1.logging

# Any: the sentinel default of arguments typed Optional[int] / Optional[float].
_USE_DEFAULT: Any = object()
_DEFAULT_CHECKPOINT_SECS = 600
_RunConfigT = TypeVar("_RunConfigT", bound="RunConfig")
_T = TypeVar("_T")

# What tf.estimator's replace() allowed, in its order (its error lists them).
_TF_REPLACEABLE = [
    "model_dir", "tf_random_seed", "save_summary_steps", "save_checkpoints_steps",
    "save_checkpoints_secs", "session_config", "keep_checkpoint_max",
    "keep_checkpoint_every_n_hours", "log_step_count_steps", "train_distribute",
    "device_fn", "protocol", "eval_distribute", "experimental_distribute",
    "experimental_max_worker_delay_secs", "session_creation_timeout_secs",
    "checkpoint_save_graph_def"]
# estimator_lite's own constructor arguments are replaceable too.
_REPLACEABLE = _TF_REPLACEABLE + ["steps_per_loop", "pack_ps_transfers", "ps_placement"]
_FROM_TF_CONFIG = ("cluster_spec", "task_type", "task_id", "master", "evaluation_master",
                   "num_ps_replicas", "num_worker_replicas", "is_chief",
                   "global_id_in_cluster", "service")
_SAVE_CKPT_ERR = "`save_checkpoints_steps` and `save_checkpoints_secs` cannot be both set."
_PROTOCOLS = (None, "grpc", "grpc+verbs")
_MODEL_DIR_EMPTY = ("model_dir should be non-empty. RunConfig(model_dir=''): pass a directory, "
                    "or None for a temporary one.")

# (name, tf.estimator's text, the bound, whether the bound itself is allowed, what to pass).
_BOUNDED_NUMBERS = (
    ("save_summary_steps", "save_summary_steps should be >= 0", 0, True,
     "pass a number of steps, or None (or 0) to write no summaries."),
    ("save_checkpoints_steps", "save_checkpoints_steps should be >= 0", 0, True,
     "pass a number of steps, or None."),
    ("save_checkpoints_secs", "save_checkpoints_secs should be >= 0", 0, True,
     "pass a number of seconds, or None."),
    ("keep_checkpoint_max", "keep_checkpoint_max should be >= 0", 0, True,
     "pass how many checkpoints to keep, or None (or 0) to keep them all."),
    ("keep_checkpoint_every_n_hours", "keep_checkpoint_every_n_hours should be > 0", 0, False,
     "pass a number of hours (the default, 10000, keeps none this way), or None."),
    ("log_step_count_steps", "log_step_count_steps should be > 0", 0, False,
     "pass a number of steps, or None to log no step rate."),
    ("session_creation_timeout_secs", "session_creation_timeout_secs should be > 0", 0, False,
     "pass a number of seconds, or None to wait without limit."),
)


class TaskType:
  """Names of the jobs in TF_CONFIG's cluster."""
  MASTER = _tf_config.MASTER
  PS = _tf_config.PS
  WORKER = _tf_config.WORKER
  CHIEF = _tf_config.CHIEF
  EVALUATOR = _tf_config.EVALUATOR


def _positional_names(fn: Any) -> Optional[List[str]]:
  """The names `fn` takes positionally (after a partial's bound ones), or None if unknown."""
  if isinstance(fn, functools.partial):
    names = _positional_names(fn.func)
    if names is None:
      return None
    return [name for name in names[len(fn.args):] if name not in fn.keywords]
  try:
    parameters = inspect.signature(fn).parameters.values()
  except (TypeError, ValueError):
    return None
  return [p.name for p in parameters
          if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)]


def _path(model_dir: Any) -> Optional[str]:
  """model_dir as a str (an os.PathLike resolved), or None."""
  if isinstance(model_dir, os.PathLike):
    model_dir = os.fspath(model_dir)
    if isinstance(model_dir, bytes):
      model_dir = model_dir.decode()
  if model_dir is not None and not isinstance(model_dir, str):
    raise TypeError(f"RunConfig(model_dir={model_dir!r}): model_dir must be a path (a str "
                    "or os.PathLike), or None.")
  if model_dir == "":
    raise ValueError(_MODEL_DIR_EMPTY)
  return model_dir


def _check_settings(values: Dict[str, Any]) -> None:
  """Raises for a bad setting, in tf.estimator's order, with its text first."""
  for name, tf_text, bound, bound_allowed, advice in _BOUNDED_NUMBERS:
    value = values[name]
    if value is None:
      continue
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
      raise TypeError(f"{tf_text}. RunConfig({name}={value!r}) is a {type(value).__name__}: "
                      f"{advice}")
    if not (float(value) >= bound if bound_allowed else float(value) > bound):
      raise ValueError(f"{tf_text}. RunConfig({name}={value!r}): {advice}")
  session_config = values["session_config"]
  if session_config is not None and not isinstance(session_config, tf.compat.v1.ConfigProto):
    raise ValueError(
        f"session_config must be instance of ConfigProto. RunConfig(session_config="
        f"{session_config!r}): pass a tf.compat.v1.ConfigProto, or None for the default.")
  seed = values["tf_random_seed"]
  if seed is not None and not validation.is_int(seed):
    raise ValueError(f"tf_random_seed must be integer. RunConfig(tf_random_seed={seed!r}): "
                     "pass an int, or None.")
  delay = values["experimental_max_worker_delay_secs"]
  if delay is not None and not validation.is_int(delay):
    raise ValueError(
        "experimental_max_worker_delay_secs must be an integer if set. RunConfig("
        f"experimental_max_worker_delay_secs={delay!r}): pass a whole number of seconds, "
        "or None (workers then wait up to 60).")
  device_fn = values["device_fn"]
  if device_fn is not None and (not callable(device_fn) or
                                _positional_names(device_fn) != ["op"]):
    raise ValueError(
        'device_fn must be callable with exactly one argument "op". RunConfig(device_fn='
        f"{device_fn!r}): pass a function of the Operation that returns its device, "
        "e.g. `def device_fn(op): return '/cpu:0'`.")
  if values["protocol"] not in _PROTOCOLS:
    raise ValueError(f"protocol should be grpc or grpc+verbs. RunConfig(protocol="
                     f"{values['protocol']!r}): None means grpc.")
  steps_per_loop = values["steps_per_loop"]
  if not validation.is_int(steps_per_loop) or steps_per_loop < 1:
    raise ValueError(
        f"RunConfig(steps_per_loop={steps_per_loop!r}): steps_per_loop must be an int >= 1 "
        "(1 runs one step per Session.run, as tf.estimator did).")
  if not isinstance(values["pack_ps_transfers"], bool):
    raise TypeError(f"RunConfig(pack_ps_transfers={values['pack_ps_transfers']!r}): "
                    "pack_ps_transfers must be True or False.")
  if values["ps_placement"] not in _ps_placement.PLACEMENTS:
    raise ValueError(f"RunConfig(ps_placement={values['ps_placement']!r}): ps_placement must "
                     f"be {_ps_placement.BY_SIZE!r} (each variable to the ps task holding the "
                     f"fewest bytes) or {_ps_placement.ROUND_ROBIN!r} (tf.estimator's).")


def _model_dir(model_dir: Any, tf_config: _tf_config.TFConfig) -> Optional[str]:
  """The constructor's model_dir, or TF_CONFIG's; both must agree (as tf.estimator)."""
  model_dir = _path(model_dir)
  from_tf_config = tf_config.model_dir()
  if from_tf_config:
    if model_dir and model_dir != from_tf_config:
      raise ValueError(
          "`model_dir` provided in RunConfig construct, if set, must have the same value as "
          f'the model_dir in TF_CONFIG. model_dir: {model_dir}\nTF_CONFIG["model_dir"]: '
          f"{from_tf_config}.\nPass the same directory, or leave model_dir out of RunConfig "
          "to use TF_CONFIG's.")
    _logging.info("Using model_dir in TF_CONFIG: %s", from_tf_config)
  return model_dir or from_tf_config


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

  The cluster role (task_type, task_id, is_chief, master, ...), `service` and
  possibly `model_dir` are read from the TF_CONFIG environment variable at
  construction, as tf.estimator did; see docs/distributed.md.

  Args:
    model_dir: directory for checkpoints, summaries and exports; None: TF_CONFIG's
      "model_dir" if set (both given must agree), else the Estimator's.
    tf_random_seed: graph-level random seed.
    save_summary_steps: write summaries every this many steps (None: never).
    save_checkpoints_steps: save every this many steps; excludes
      save_checkpoints_secs.
    save_checkpoints_secs: save every this many seconds; 600 when neither is
      given. Both explicitly None disables periodic checkpoints.
    session_config: a `tf.compat.v1.ConfigProto`, or None. None in a TF_CONFIG
      cluster becomes tf.estimator's default with the task's device filters
      (and thread spinning off where TF_CONFIG puts another task on this
      task's host: docs/distributed.md); otherwise sessions use
      `get_default_session_config()`.
    keep_checkpoint_max: newest checkpoints to keep (None or 0: all).
    keep_checkpoint_every_n_hours: also keep one checkpoint every N hours.
    log_step_count_steps: log loss and global_step/sec every N steps.
    train_distribute: a `tf.distribute.Strategy` for training, or None:
      `MirroredStrategy` (this machine's devices), `MultiWorkerMirroredStrategy`
      (TF_CONFIG chief and workers, no ps), `OneDeviceStrategy` or
      `CentralStorageStrategy`. input_fn's batch is per replica. See
      docs/strategies.md.
    device_fn: function of an Operation (one argument, named `op`) returning
      its device, overriding the default placement (e.g. `replica_device_setter`).
    protocol: server protocol: None or "grpc" (the default), or "grpc+verbs".
    eval_distribute: a `tf.distribute.Strategy` for evaluation (one process:
      not a MultiWorkerMirroredStrategy across several workers), or None.
    experimental_distribute: accepted for signature compatibility; unused.
    experimental_max_worker_delay_secs: cap (an int) on the staggered start of
      workers.
    session_creation_timeout_secs: how long a worker waits for the chief's
      session (initialisation) before failing; None: without limit.
    checkpoint_save_graph_def: write graph.pbtxt and the graph into .meta files.
    steps_per_loop: keyword-only, estimator_lite's own: train this many steps
      per `Session.run` in an in-graph loop (TPUEstimator's
      iterations_per_loop). Hooks, logging, summaries and checkpoints then
      happen every K steps; input_fn must return a `tf.data.Dataset`. See
      docs/performance.md, "steps_per_loop".
    pack_ps_transfers: keyword-only, estimator_lite's own: on a cluster,
      send the small tensors that a training step moves between two tasks
      (variable reads from a ps, gradients to it) as one message each way
      instead of one message a tensor, and make a small constant that one
      task makes and another uses (a learning rate) on both, and run
      an optimizer's join of its updates on several ps tasks on the ps
      that waits for it rather than on the worker; with
      steps_per_loop > 1, each iteration's, and each iteration reads the
      variables from a copy on the trainer that the values sent back after
      the previous update refresh. Values are unchanged; False sends each
      tensor alone, as tf.estimator did. See docs/distributed.md and
      "steps_per_loop".
    ps_placement: keyword-only, estimator_lite's own: how a ps cluster's
      variables are spread over the ps tasks (when device_fn is None).
      "by_size": each variable, as it is created, to the ps task holding the
      fewest bytes so far, so that the large variables are spread over the
      tasks however they come; "round_robin": to the tasks in turn, as
      tf.estimator's replica_device_setter did. Only devices differ:
      names, checkpoints and results are the same, and a model_dir written
      under either restores under the other. See docs/distributed.md.

  Raises:
    ValueError: a value out of range or an unknown ps_placement, both
      checkpoint cadences given, a model_dir other than TF_CONFIG's, a
      malformed TF_CONFIG (the message quotes it), or a distribution
      strategy that cannot run in graph mode or does not fit TF_CONFIG (the
      message says what to use instead). Each
      starts with tf.estimator's text where tf.estimator raised too.
    TypeError: a count or duration that is not a number, a model_dir that is
      not a path, a pack_ps_transfers that is not a bool, or a TF_CONFIG
      value of the wrong type (a `TFConfigTypeError`, also a ValueError).
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
               experimental_max_worker_delay_secs: Optional[int] = None,
               session_creation_timeout_secs: Optional[float] = 7200,
               checkpoint_save_graph_def: bool = True,
               *,
               steps_per_loop: int = 1,
               pack_ps_transfers: bool = True,
               ps_placement: str = "by_size") -> None:
    if save_checkpoints_steps is _USE_DEFAULT and save_checkpoints_secs is _USE_DEFAULT:
      save_checkpoints_steps, save_checkpoints_secs = None, _DEFAULT_CHECKPOINT_SECS
    elif save_checkpoints_secs is _USE_DEFAULT:
      save_checkpoints_secs = None
    elif save_checkpoints_steps is _USE_DEFAULT:
      save_checkpoints_steps = None
    elif save_checkpoints_steps is not None and save_checkpoints_secs is not None:
      raise ValueError(
          f"{_SAVE_CKPT_ERR} Got save_checkpoints_steps={save_checkpoints_steps!r} and "
          f"save_checkpoints_secs={save_checkpoints_secs!r}; pass only one.")
    tf_config = _tf_config.TFConfig(os.environ.get("TF_CONFIG"))
    values = dict(
        model_dir=_model_dir(model_dir, tf_config), tf_random_seed=tf_random_seed,
        save_summary_steps=save_summary_steps, save_checkpoints_steps=save_checkpoints_steps,
        save_checkpoints_secs=save_checkpoints_secs, session_config=session_config,
        keep_checkpoint_max=keep_checkpoint_max,
        keep_checkpoint_every_n_hours=keep_checkpoint_every_n_hours,
        log_step_count_steps=log_step_count_steps, train_distribute=train_distribute,
        device_fn=device_fn, protocol=protocol, eval_distribute=eval_distribute,
        experimental_distribute=experimental_distribute,
        experimental_max_worker_delay_secs=experimental_max_worker_delay_secs,
        session_creation_timeout_secs=session_creation_timeout_secs,
        checkpoint_save_graph_def=checkpoint_save_graph_def, steps_per_loop=steps_per_loop,
        pack_ps_transfers=pack_ps_transfers, ps_placement=ps_placement)
    _check_settings(values)
    self._service = tf_config.service()
    self._role = tf_config.role()
    _strategy_checks.check(train_distribute, eval_distribute, self._role,
                           steps_per_loop=steps_per_loop, device_fn=device_fn)
    self._set(values)
    self._maybe_overwrite_session_config_for_distributed_training()

  def _maybe_overwrite_session_config_for_distributed_training(self) -> None:
    """As tf.estimator: a between-graph cluster task without a session_config gets its device filters.

    A train_distribute strategy across a chief/worker cluster sets its own.
    tf.estimator's name: a subclass overrides it to keep session_config as
    given (its tpu.RunConfig did; so does estimator_lite.tpu.RunConfig).
    """
    if (self.session_config is None and self._role.distributed and
        (self.train_distribute is None or TaskType.MASTER in self._role.cluster_spec.jobs)):
      self._set({"session_config": _session_config.cluster_session_config(self._role)})

  def _set(self, values: Dict[str, Any]) -> None:
    for name, value in values.items():
      setattr(self, "_" + name, value)

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
  experimental_max_worker_delay_secs = _Setting[Optional[int]]()
  session_creation_timeout_secs = _Setting[Optional[float]]()
  checkpoint_save_graph_def = _Setting[bool]()
  steps_per_loop = _Setting[int]()
  pack_ps_transfers = _Setting[bool]()
  ps_placement = _Setting[str]()
  # None when none was given outside a cluster; `effective_session_config()`
  # is what sessions then use.
  session_config = _Setting[Optional[tf.compat.v1.ConfigProto]]()

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
  # TF_CONFIG's "service": the platform's description of its service, or None.
  service = _Setting[Optional[Dict[str, Any]]]()

  def replace(self: _RunConfigT, **kwargs: Any) -> _RunConfigT:
    """Returns a copy with the given constructor arguments replaced, as tf.estimator's replace().

    The copy keeps this RunConfig's TF_CONFIG role, service and subclass
    attributes. Replacing one of save_checkpoints_steps / save_checkpoints_secs
    with a value clears the other.

    Args:
      **kwargs: constructor arguments (tf.estimator's replaceable ones,
        steps_per_loop, pack_ps_transfers and ps_placement) and their new
        values.

    Returns:
      A new RunConfig of this RunConfig's class.

    Raises:
      ValueError: a name that cannot be replaced (TF_CONFIG's properties, or
        not a RunConfig argument), both checkpoint cadences set, or an invalid
        value (a TypeError for a count that is not a number).
    """
    for name in kwargs:
      if name not in _REPLACEABLE:
        why = (f"{name} comes from the TF_CONFIG environment variable; set TF_CONFIG before "
               "building the RunConfig." if name in _FROM_TF_CONFIG else
               f"{name} is not a RunConfig argument.")
        raise ValueError(f"Replacing {name} is not supported. Allowed properties are "
                         f"{_TF_REPLACEABLE}. {why} (estimator_lite also allows "
                         "steps_per_loop, pack_ps_transfers and ps_placement.)")
    values = self._constructor_values()
    values.update(kwargs)
    if "model_dir" in kwargs:
      values["model_dir"] = _path(kwargs["model_dir"])
    steps, secs = values["save_checkpoints_steps"], values["save_checkpoints_secs"]
    if "save_checkpoints_steps" in kwargs and "save_checkpoints_secs" in kwargs:
      if steps is not None and secs is not None:
        raise ValueError(f"{_SAVE_CKPT_ERR} Got save_checkpoints_steps={steps!r} and "
                         f"save_checkpoints_secs={secs!r}; replace one, or set the other "
                         "to None.")
    elif "save_checkpoints_steps" in kwargs and steps is not None:
      values["save_checkpoints_secs"] = None
    elif "save_checkpoints_secs" in kwargs and secs is not None:
      values["save_checkpoints_steps"] = None
    _check_settings(values)
    if {"train_distribute", "eval_distribute", "device_fn", "steps_per_loop"} & set(kwargs):
      _strategy_checks.check(values["train_distribute"], values["eval_distribute"],
                             self._role, steps_per_loop=values["steps_per_loop"],
                             device_fn=values["device_fn"])
    new = copy.deepcopy(self)
    new._set(values)
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
    return {name: getattr(self, "_" + name) for name in _REPLACEABLE}

  def __repr__(self) -> str:
    return ("RunConfig(" + ", ".join(
        f"{name}={value!r}" for name, value in sorted(self._constructor_values().items()))
            + f", task_type={self.task_type!r}, task_id={self.task_id!r})")
