"""TrainSpec, EvalSpec and train_and_evaluate: one program for every machine of a cluster.

train_and_evaluate reads the process's role from RunConfig (TF_CONFIG) and
runs it: local training with evaluation, or the cluster's chief, worker, ps,
master or evaluator task. See DESIGN.md, "Roles from TF_CONFIG", and
docs/distributed.md.
"""
from __future__ import annotations

import numbers
from typing import Any, Callable, Dict, Iterable, List, NamedTuple, Optional, Tuple

import tensorflow as tf

from estimator_lite._cluster import roles
from estimator_lite._util import validation
from estimator_lite.estimator import Estimator
from estimator_lite.export.exporter import Exporter


# -- validation -----------------------------------------------------------------
def _check_input_fn(input_fn: Any) -> None:
  if not callable(input_fn):
    raise TypeError(
        f"`input_fn` must be callable, given: {input_fn}. Pass the function "
        "itself (input_fn=my_input_fn), not its result.")


def _check_non_negative_secs(field: str, value: Any) -> None:
  if isinstance(value, bool) or not isinstance(value, numbers.Real):
    raise TypeError(f"{field} must be a number of seconds, given: {value!r}.")
  if value < 0:
    raise ValueError(f"Must specify {field} >= 0, given: {value}")


def _check_name(name: Any) -> None:
  if name is not None and not isinstance(name, str):
    raise TypeError(f"`name` must be string, given: {name}")


def _hooks_tuple(hooks: Any) -> Tuple[tf.compat.v1.train.SessionRunHook, ...]:
  return validation.check_hooks(hooks, "TrainSpec or EvalSpec (hooks=...)",
                                validation.SPEC_HOOKS_ERROR)


def _listeners_tuple(listeners: Any) -> Tuple[tf.compat.v1.train.CheckpointSaverListener, ...]:
  return validation.check_saving_listeners(listeners, validation.SPEC_LISTENERS_ERROR)


def _is_exporter(value: Any) -> bool:
  return hasattr(value, "name") and callable(getattr(value, "export", None))


def _exporters_tuple(exporters: Any) -> Tuple[Exporter, ...]:
  if not exporters:
    return ()
  if _is_exporter(exporters):
    exporters = [exporters]
  bad_type = TypeError(
      "`exporters` must be an Exporter, an iterable of Exporter, or `None`, found "
      f"{exporters}. An exporter has a `name` and an `export(estimator, export_path, "
      "checkpoint_path, eval_result, is_the_final_export)` method.")
  try:
    exporters = tuple(exporters)
  except TypeError:
    raise bad_type from None
  names = [getattr(e, "name", None) for e in exporters]
  seen = set()
  for exporter in exporters:
    if not _is_exporter(exporter):
      raise bad_type
    if not exporter.name:
      raise ValueError("An Exporter cannot have a name that is `None` or empty. All "
                       f"exporter names: {names}")
    if not isinstance(exporter.name, str):
      raise ValueError(f"An Exporter must have a string name. Given: {type(exporter.name)}")
    if exporter.name in seen:
      raise ValueError("`exporters` must have unique names. Such a name cannot be "
                       f"`None`. All exporter names: {names}")
    seen.add(exporter.name)
  return exporters


# -- specs ----------------------------------------------------------------------
# tf.estimator's fields, in its order: the specs are namedtuples of them.
class _TrainSpecFields(NamedTuple):
  input_fn: Callable[..., Any]
  max_steps: Optional[int] = None
  hooks: Tuple[tf.compat.v1.train.SessionRunHook, ...] = ()
  saving_listeners: Tuple[tf.compat.v1.train.CheckpointSaverListener, ...] = ()


class TrainSpec(validation.Replaceable, _TrainSpecFields):
  """The "train" part of train_and_evaluate: input, duration and hooks.

  A namedtuple of the four fields, as tf.estimator's was (`_replace` checks
  the copy).

  Args:
    input_fn: returns a `tf.data.Dataset` of (features, labels), or a
      (features, labels) tuple; may take mode, params, config and
      `input_context` (see docs/distributed.md, for sharding).
    max_steps: positive int, the global step to train to; None trains forever
      (then the evaluator task never exits on its own).
    hooks: `SessionRunHook`s to run on every training task (chief included).
    saving_listeners: `CheckpointSaverListener`s to run on the chief.

  Raises:
    TypeError: input_fn not callable, a hook or listener of the wrong type, or
      a non-integer max_steps.
    ValueError: max_steps <= 0.
  """

  __slots__ = ()

  def __new__(cls, input_fn: Callable[..., Any], max_steps: Optional[int] = None,
              hooks: Optional[Iterable[Any]] = None,
              saving_listeners: Optional[Iterable[Any]] = None) -> TrainSpec:
    _check_input_fn(input_fn)
    validation.check_positive_int("max_steps", max_steps)
    return super().__new__(cls, input_fn, max_steps, _hooks_tuple(hooks),
                           _listeners_tuple(saving_listeners))


class _EvalSpecFields(NamedTuple):
  input_fn: Callable[..., Any]
  steps: Optional[int] = 100
  name: Optional[str] = None
  hooks: Tuple[tf.compat.v1.train.SessionRunHook, ...] = ()
  exporters: Tuple[Exporter, ...] = ()
  start_delay_secs: float = 120
  throttle_secs: float = 600


class EvalSpec(validation.Replaceable, _EvalSpecFields):
  """The "evaluate" part of train_and_evaluate: input, cadence and exporters.

  Evaluation happens after checkpoints (the chief's, in local and master
  mode; the newest one in model_dir, on the evaluator task), at most every
  `throttle_secs` seconds, or, with `every_n_steps`, every N global steps.

  A namedtuple of tf.estimator's seven fields, as its was (`_replace` checks
  the copy); estimator_lite's keyword-only `every_n_steps` is an attribute
  beside them, so unpacking sees tf.estimator's fields, while equality,
  `repr` and `_replace` include it.

  Args:
    input_fn: as for TrainSpec; evaluation stops at end of input or `steps`.
    steps: batches per evaluation; None evaluates until input ends, so then
      input_fn must not return an infinite dataset (`repeat()` with no count):
      the first evaluation raises a ValueError naming `steps`.
    name: evaluation name; events go to model_dir/eval_NAME.
    hooks: `SessionRunHook`s to run during evaluation.
    exporters: an exporter or iterable of them, with unique `name`s; each
      `exporter.export(estimator, model_dir/export/NAME, checkpoint_path,
      eval_result, is_the_final_export)` runs after every evaluation.
    start_delay_secs: seconds the evaluator task waits before its first look.
    throttle_secs: minimum seconds between the starts of two evaluations (a
      new checkpoint arriving sooner waits; the newest one is then taken).
    every_n_steps: keyword-only, estimator_lite's own. Evaluate every N global
      steps instead of every `throttle_secs` (which is then ignored): the
      first checkpoint at or past each multiple of N is evaluated, plus the
      final one. Checkpoints come every RunConfig.save_checkpoints_steps, so
      make N a multiple of it for an exact cadence.

  Raises:
    TypeError: input_fn not callable, name not a string, a hook or exporter
      of the wrong type.
    ValueError: steps <= 0, negative delays, every_n_steps <= 0, exporters
      with missing or duplicate names.
  """

  # No __slots__: every_n_steps lives in the instance's __dict__, outside the
  # tuple (a tuple subclass cannot have slots of its own).
  every_n_steps: Optional[int]

  def __new__(cls, input_fn: Callable[..., Any], steps: Optional[int] = 100,
              name: Optional[str] = None, hooks: Optional[Iterable[Any]] = None,
              exporters: Any = None, start_delay_secs: float = 120,
              throttle_secs: float = 600, *, every_n_steps: Optional[int] = None) -> EvalSpec:
    _check_input_fn(input_fn)
    validation.check_positive_int("steps", steps)
    _check_name(name)
    checked_hooks = _hooks_tuple(hooks)
    checked_exporters = _exporters_tuple(exporters)
    _check_non_negative_secs("start_delay_secs", start_delay_secs)
    _check_non_negative_secs("throttle_secs", throttle_secs)
    validation.check_positive_int("every_n_steps", every_n_steps)
    spec = super().__new__(cls, input_fn, steps, name, checked_hooks, checked_exporters,
                           start_delay_secs, throttle_secs)
    spec.__dict__["every_n_steps"] = every_n_steps
    return spec

  def __setattr__(self, name: str, value: Any) -> None:
    raise AttributeError(f"EvalSpec is immutable: use _replace({name}=...) for a copy.")

  def constructor_arguments(self) -> Dict[str, Any]:
    return {**super().constructor_arguments(), "every_n_steps": self.every_n_steps}

  def __eq__(self, other: object) -> bool:
    if isinstance(other, EvalSpec):
      return tuple(self) == tuple(other) and self.every_n_steps == other.every_n_steps
    return tuple.__eq__(self, other)

  def __ne__(self, other: object) -> bool:
    return not self == other

  __hash__ = _EvalSpecFields.__hash__

  def __repr__(self) -> str:
    text = super().__repr__()
    if self.every_n_steps is None:
      return text
    return f"{text[:-1]}, every_n_steps={self.every_n_steps!r})"


# -- train_and_evaluate -----------------------------------------------------------
def train_and_evaluate(estimator: Estimator, train_spec: TrainSpec, eval_spec: EvalSpec
                       ) -> Optional[Tuple[Optional[dict], Optional[List[Any]]]]:
  """Trains and evaluates the Estimator as this process's role in TF_CONFIG says.

  * No cluster (local): trains, evaluating after checkpoint saves (at the
    EvalSpec's cadence) and once at the end.
  * chief: trains; the only task that initialises and writes checkpoints and
    summaries. worker: trains against the ps tasks after a staggered start
    (RunConfig.experimental_max_worker_delay_secs caps it). master: a chief
    that also evaluates, like local mode.
  * ps: serves variables until the process is stopped.
  * evaluator: evaluates each new checkpoint once, runs the exporters, and
    returns after the checkpoint at or past train_spec.max_steps.

  Args:
    estimator: an `Estimator`.
    train_spec: a `TrainSpec`.
    eval_spec: an `EvalSpec`.

  Returns:
    Local mode: (eval_result, export_results): the metrics dict of the last
    evaluation (None if none happened) and the list its exporters returned.
    Cluster roles: None, as tf.estimator.

  Raises:
    TypeError: arguments of the wrong type.
    ValueError: an evaluator task other than index 0, or an unsupported role.
  """
  # tf.estimator's texts, each followed by the estimator_lite class to pass.
  if not isinstance(estimator, Estimator):
    raise TypeError(validation.ESTIMATOR_TYPE_ERROR.format(type(estimator)) +
                    ". Pass an estimator_lite.Estimator.")
  if not isinstance(train_spec, TrainSpec):
    raise TypeError("`train_spec` must have type `tf.estimator.TrainSpec`. Got: "
                    f"{type(train_spec)}. Pass an estimator_lite.TrainSpec.")
  if not isinstance(eval_spec, EvalSpec):
    raise TypeError("`eval_spec` must have type `tf.estimator.EvalSpec`. Got: "
                    f"{type(eval_spec)}. Pass an estimator_lite.EvalSpec.")
  return roles.run(estimator, train_spec, eval_spec)
