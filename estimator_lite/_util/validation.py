"""Rules that several public objects share, each stated once: keys, hook types, counts, replace().

tf.estimator worded the same rule differently in different places (its
`Estimator.train` and its `TrainSpec` each have their own text for a bad
saving listener); users' tests match on those texts, so a check that several
APIs share takes the caller's text where tf.estimator's differed.
"""
from __future__ import annotations

import math
import numbers
from typing import Any, Dict, Iterable, Optional, Tuple, cast

import tensorflow as tf

# The keys evaluate() adds to every result (and a model_fn's metrics may not use).
LOSS_KEY = "loss"
GLOBAL_STEP_KEY = "global_step"

# tf.estimator's texts for a hook that is not a SessionRunHook, by caller:
# Estimator.train/evaluate/predict and InMemoryEvaluatorHook; TrainSpec and
# EvalSpec; EstimatorSpec. `{}` is the bad value as str(), as tf.estimator
# formatted it.
ESTIMATOR_HOOKS_ERROR = "Hooks must be a SessionRunHook, given: {}"
SPEC_HOOKS_ERROR = "All hooks must be `SessionRunHook` instances, given: {}"
HOOKS_ERROR = "All hooks must be SessionRunHook instances, given: {}"
# Its texts for a saving listener that is not a CheckpointSaverListener:
# Estimator.train; TrainSpec.
ESTIMATOR_LISTENERS_ERROR = "saving_listeners must be a list of CheckpointSaverListener, given: {}"
SPEC_LISTENERS_ERROR = "All saving_listeners must be `CheckpointSaverListener` instances, given: {}"
# Its text for an `estimator` argument that is not an Estimator
# (train_and_evaluate, the early-stopping hooks); `{}` is the type given.
ESTIMATOR_TYPE_ERROR = "`estimator` must have type `tf.estimator.Estimator`. Got: {}"


def check_hooks(hooks: Optional[Iterable[Any]], where: str, message: str = HOOKS_ERROR
                ) -> Tuple[tf.compat.v1.train.SessionRunHook, ...]:
  """Returns `hooks` (None: none) as a tuple of `SessionRunHook`s.

  Args:
    hooks: an iterable of hooks, or None.
    where: the argument that held them, e.g. "Estimator.train(hooks=...)".
    message: tf.estimator's text for this caller, with `{}` for the bad value
      (ESTIMATOR_HOOKS_ERROR, SPEC_HOOKS_ERROR or HOOKS_ERROR); the error
      starts with it.

  Raises:
    TypeError: `hooks` is not iterable, or an element is not a SessionRunHook.
  """
  try:
    hooks = tuple(hooks or ())
  except TypeError:  # not iterable, or a graph Tensor (which refuses bool())
    raise TypeError(message.format(hooks) + f" in {where}: pass a list of "
                    "tf.compat.v1.train.SessionRunHook objects.") from None
  for hook in hooks:
    if not isinstance(hook, tf.compat.v1.train.SessionRunHook):
      raise TypeError(
          f"{message.format(hook)}. Every hook in {where} must be an instance of "
          "tf.compat.v1.train.SessionRunHook (estimator_lite.SessionRunHook); this one "
          f"is a {type(hook).__name__}.")
  return hooks


def check_saving_listeners(listeners: Optional[Iterable[Any]], message: str
                           ) -> Tuple[tf.compat.v1.train.CheckpointSaverListener, ...]:
  """Returns `listeners` (None: none) as a tuple of `CheckpointSaverListener`s.

  Args:
    listeners: an iterable of listeners, or None.
    message: tf.estimator's text for this caller, with `{}` for the bad value
      (ESTIMATOR_LISTENERS_ERROR or SPEC_LISTENERS_ERROR); the error starts with it.

  Raises:
    TypeError: an element is not a CheckpointSaverListener.
  """
  listeners = tuple(listeners or ())
  for listener in listeners:
    if not isinstance(listener, tf.compat.v1.train.CheckpointSaverListener):
      raise TypeError(
          f"{message.format(listener)}. Subclass tf.compat.v1.train.CheckpointSaverListener;"
          f" this one is a {type(listener).__name__}.")
  return listeners


def is_int(value: Any) -> bool:
  """True for Python and numpy integers, False for bools."""
  return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def check_positive_int(name: str, value: Any) -> Optional[int]:
  """Returns `value` as an int, or None for None.

  A float holding a whole number (`max_steps=1e6`, which tf.estimator took)
  counts as that integer.

  Raises:
    TypeError: not a whole number.
    ValueError: not > 0 (tf.estimator's "Must specify ... > 0" text).
  """
  if value is None:
    return None
  if isinstance(value, float) and value.is_integer():
    value = int(value)
  if not is_int(value):
    raise TypeError(f"{name} must be an int or None, given: {value!r}.")
  if value <= 0:
    raise ValueError(f"Must specify {name} > 0, given: {value}")
  return int(value)


def check_step_count(name: str, value: Any, unbounded_ok: bool) -> Optional[int]:
  """Estimator.train/evaluate's `steps` / `max_steps` as the whole number of steps to stop at.

  tf.estimator only compared the value with 0 and stopped at the first step
  (or batch) count >= it, so any real number > 0 was taken and a fraction
  rounds up: `steps=12.5` runs 13 steps (Keras examples passed
  `steps=n_examples / batch_size`). A bool counts as 0 or 1, as it did there.

  Args:
    name: "steps" or "max_steps", for the error texts.
    value: the caller's value.
    unbounded_ok: True for train(), where an infinite or NaN value never
      reached the stop step (returns None: run until the input ends); False for
      evaluate(), whose step counter raised on them.

  Returns:
    The step count, or None for no limit.

  Raises:
    TypeError: not a real number (Python's text of tf.estimator's `<=` test).
    ValueError: not > 0 (tf.estimator's text), or NaN in evaluate().
    OverflowError: infinite in evaluate().
  """
  if value is None:
    return None
  if not isinstance(value, numbers.Real):
    raise TypeError(
        f"'<=' not supported between instances of '{type(value).__name__}' and 'int'. "
        f"{name} must be a number or None, given: {value!r}.")
  if value <= 0:
    raise ValueError(f"Must specify {name} > 0, given: {value}")
  if math.isfinite(value):
    return int(math.ceil(value))
  if unbounded_ok:
    return None
  if math.isnan(value):
    raise ValueError(f"cannot convert float NaN to integer. Pass {name}=None to "
                     "evaluate until the input ends, or a number > 0.")
  raise OverflowError(f"cannot convert float infinity to integer. Pass {name}=None to "
                      "evaluate until the input ends.")


class Replaceable:
  """`replace()` and `_replace()` for the spec namedtuples, validated (a mixin before the tuple base).

  tf.estimator's EstimatorSpec, TrainSpec, EvalSpec, WarmStartSettings and
  receivers were namedtuples, and programs unpack, index and `_replace` them,
  so estimator_lite's are too. A namedtuple's own `_replace` skips the
  constructor; this one builds the copy through it, so a copy is checked like
  any new value.
  """

  __slots__ = ()

  def constructor_arguments(self) -> Dict[str, Any]:
    """The keyword arguments that rebuild this value: its fields (a subclass adds keyword-only ones)."""
    return cast(Any, self)._asdict()

  def replace(self, **changes: Any) -> Any:
    """Returns a validated copy with `changes` applied.

    Raises:
      ValueError: a name that is not a field (namedtuple's text).
    """
    arguments = self.constructor_arguments()
    unknown = sorted(set(changes) - set(arguments))
    if unknown:
      raise ValueError(f"Got unexpected field names: {unknown}: {type(self).__name__} has "
                       f"no field(s) {unknown}; its fields are {list(arguments)}.")
    return type(self)(**{**arguments, **changes})

  _replace = replace


def check_metric_names(names: Iterable[str]) -> None:
  """Raises ValueError for an eval metric that would hide one evaluate() adds itself.

  Args:
    names: the eval_metric_ops' names.

  Raises:
    ValueError: a metric named "loss" or "global_step" (tf.estimator's texts,
      which quote the two names differently).
  """
  names = set(names)
  if LOSS_KEY in names:
    raise ValueError(
        'Metric with name "loss" is not allowed, because Estimator already '
        "defines a default metric with the same name. Rename your metric.")
  if GLOBAL_STEP_KEY in names:
    raise ValueError(
        "Metric with name `global_step` is not allowed, because Estimator already "
        "defines a default metric with the same name. Rename your metric; evaluate() "
        "reports the evaluated checkpoint's global step under that key.")
