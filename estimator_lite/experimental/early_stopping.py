"""Early stopping: hooks that end training when the evaluation results say so.

The `stop_if_*` hooks read the evaluation results that evaluate() (local
train_and_evaluate, or the evaluator task) writes to model_dir/eval[_NAME] and
call a stop condition every `run_every_secs` seconds or `run_every_steps` global
steps. Put them in `TrainSpec.hooks`, so every training task gets one.

How a whole cluster stops (tf.estimator stopped only the trainers and left a
separate evaluator waiting forever):

* chief (or master, or local): evaluates the condition. When it holds, the
  hook sets the boolean variable `signal_early_stopping/STOP` (placed on a ps
  by the replica device setter, so every worker sees it), requests the stop,
  and when its session ends writes the marker file model_dir/early_stopping.json
  with the global step reached: `{"global_step": N}`.
* worker: the hook fetches STOP with every step and stops when it is true.
  STOP is not saved in checkpoints (a model_dir trained without early stopping
  still resumes with it, and a resumed job does not find it already set); the
  chief sets it to false when its session starts, and a worker reads false
  until then.
* evaluator: after each evaluation it reads the marker and exits once it has
  evaluated a checkpoint at or past the marker's step, as it does at
  TrainSpec.max_steps (estimator_lite/_cluster/stop_marker.py). A marker left
  by an earlier run (its step not past the newest checkpoint when the
  evaluator started) is ignored.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Iterator, Optional, Tuple

import attrs
import tensorflow as tf

from estimator_lite._cluster import stop_marker
from estimator_lite._util import cadence as cadence_lib
from estimator_lite._util import validation
# tf.estimator's early_stopping module had it; programs call it from here.
from estimator_lite._util.events import read_eval_metrics
from estimator_lite.estimator import Estimator

_logging = tf.compat.v1.logging
_STOP_SCOPE = "signal_early_stopping"
_STOP_NAME = "STOP"


def _check_estimator(estimator: Any) -> None:
  if not isinstance(estimator, Estimator):
    raise TypeError(validation.ESTIMATOR_TYPE_ERROR.format(type(estimator)) +
                    ". Pass the estimator_lite.Estimator being trained.")


def make_early_stopping_hook(estimator: Estimator, should_stop_fn: Callable[[], bool],
                             run_every_secs: Optional[float] = 60,
                             run_every_steps: Optional[int] = None
                             ) -> tf.compat.v1.train.SessionRunHook:
  """Creates a hook that stops training when `should_stop_fn()` returns True.

  On the chief (or locally) the hook calls `should_stop_fn` periodically; on
  a worker it waits for the chief's decision (see the module docstring for
  how workers and the evaluator stop too).

  Args:
    estimator: the `Estimator` being trained.
    should_stop_fn: callable with no arguments returning a bool.
    run_every_secs: call should_stop_fn at most every this many seconds
      (default 60). Set it to None to use run_every_steps.
    run_every_steps: call should_stop_fn every this many global steps.

  Returns:
    A `SessionRunHook` for `TrainSpec.hooks` / `Estimator.train(hooks=...)`.

  Raises:
    TypeError: estimator is not an Estimator, or should_stop_fn not callable.
    ValueError: both run_every_secs and run_every_steps are set (pass
      run_every_secs=None with run_every_steps).
  """
  _check_estimator(estimator)
  if run_every_secs is not None and run_every_steps is not None:
    raise ValueError("Only one of `run_every_secs` and `run_every_steps` must be set. "
                     f"Got run_every_secs={run_every_secs}, run_every_steps="
                     f"{run_every_steps}; pass run_every_secs=None to check every N steps.")
  if not callable(should_stop_fn):
    raise TypeError(f"`should_stop_fn` must be callable. Got {should_stop_fn!r}; pass a "
                    "function of no arguments returning a bool.")
  if estimator.config.is_chief:
    return _StopOnPredicateHook(should_stop_fn, run_every_secs, run_every_steps,
                                model_dir=estimator.model_dir)
  return _CheckForStoppingHook()


def stop_if_higher_hook(estimator: Estimator, metric_name: str, threshold: float,
                        eval_dir: Optional[str] = None, min_steps: int = 0,
                        run_every_secs: Optional[float] = 60, run_every_steps: Optional[int] = None
                        ) -> tf.compat.v1.train.SessionRunHook:
  """Creates a hook that stops training once `metric_name` is higher than `threshold`.

  Args:
    estimator: the `Estimator` being trained.
    metric_name: str, the evaluation metric to watch ("accuracy", "loss", ...).
    threshold: number; stop when any evaluation has metric > threshold.
    eval_dir: directory of the evaluation event files; default
      `estimator.eval_dir()` (set it for an EvalSpec with a name).
    min_steps: ignore evaluations of checkpoints before this global step.
    run_every_secs, run_every_steps: as `make_early_stopping_hook`.

  Returns:
    A `SessionRunHook`.
  """
  return _stop_if_threshold_crossed_hook(_MetricWatch(
      estimator, metric_name, True, eval_dir, min_steps, run_every_secs, run_every_steps),
      threshold)


def stop_if_lower_hook(estimator: Estimator, metric_name: str, threshold: float,
                       eval_dir: Optional[str] = None, min_steps: int = 0,
                       run_every_secs: Optional[float] = 60, run_every_steps: Optional[int] = None
                       ) -> tf.compat.v1.train.SessionRunHook:
  """Creates a hook that stops training once `metric_name` is lower than `threshold`.

  The arguments are those of `stop_if_higher_hook`; training stops when any
  evaluation has metric < threshold.

  Returns:
    A `SessionRunHook`.
  """
  return _stop_if_threshold_crossed_hook(_MetricWatch(
      estimator, metric_name, False, eval_dir, min_steps, run_every_secs, run_every_steps),
      threshold)


def stop_if_no_increase_hook(estimator: Estimator, metric_name: str,
                             max_steps_without_increase: int,
                             eval_dir: Optional[str] = None, min_steps: int = 0,
                             run_every_secs: Optional[float] = 60,
                             run_every_steps: Optional[int] = None
                             ) -> tf.compat.v1.train.SessionRunHook:
  """Creates a hook that stops training when `metric_name` has stopped increasing.

  Stops once an evaluation at least `max_steps_without_increase` global steps
  after the best one (the highest value) has been written. The arguments
  are those of `stop_if_no_decrease_hook`.

  Returns:
    A `SessionRunHook`.
  """
  return _stop_if_no_metric_improvement_hook(_MetricWatch(
      estimator, metric_name, True, eval_dir, min_steps, run_every_secs, run_every_steps),
      max_steps_without_increase)


def stop_if_no_decrease_hook(estimator: Estimator, metric_name: str,
                             max_steps_without_decrease: int,
                             eval_dir: Optional[str] = None, min_steps: int = 0,
                             run_every_secs: Optional[float] = 60,
                             run_every_steps: Optional[int] = None
                             ) -> tf.compat.v1.train.SessionRunHook:
  """Creates a hook that stops training when `metric_name` has stopped decreasing.

  Stops once an evaluation at least `max_steps_without_decrease` global steps
  after the best one (the lowest value) has been written.

  Args:
    estimator: the `Estimator` being trained.
    metric_name: str, the evaluation metric to watch ("loss", ...).
    max_steps_without_decrease: int, global steps allowed without a new best.
    eval_dir: directory of the evaluation event files; default `estimator.eval_dir()`.
    min_steps: ignore evaluations of checkpoints before this global step.
    run_every_secs, run_every_steps: as `make_early_stopping_hook`.

  Returns:
    A `SessionRunHook`.
  """
  return _stop_if_no_metric_improvement_hook(_MetricWatch(
      estimator, metric_name, False, eval_dir, min_steps, run_every_secs, run_every_steps),
      max_steps_without_decrease)


def _metric(metrics: Dict[str, float], metric_name: str, step: int, eval_dir: str) -> float:
  if metric_name not in metrics:
    raise KeyError(
        f"Early stopping watches metric {metric_name!r}, but the evaluation at global "
        f"step {step} in {eval_dir} has only {sorted(metrics)}. Use one of those names "
        "(or pass eval_dir= for an EvalSpec with a name).")
  return metrics[metric_name]


@attrs.frozen
class _MetricWatch:
  """What the stop_if_* hooks share: which metric, where, from which step, how often."""

  estimator: Estimator
  metric_name: str
  higher_is_better: bool
  eval_dir: Optional[str]
  min_steps: int
  run_every_secs: Optional[float]
  run_every_steps: Optional[int]

  def values(self) -> Iterator[Tuple[int, float]]:
    """(global step, metric value) of each evaluation at or past min_steps, by step."""
    eval_dir = self.eval_dir if self.eval_dir is not None else self.estimator.eval_dir()
    for step, metrics in read_eval_metrics(eval_dir).items():
      if step >= self.min_steps:
        yield step, _metric(metrics, self.metric_name, step, eval_dir)

  def is_better(self, value: float, than: float) -> bool:
    return value > than if self.higher_is_better else value < than

  def hook(self, should_stop_fn: Callable[[], bool]) -> tf.compat.v1.train.SessionRunHook:
    return make_early_stopping_hook(self.estimator, should_stop_fn,
                                    run_every_secs=self.run_every_secs,
                                    run_every_steps=self.run_every_steps)


def _stop_if_threshold_crossed_hook(watch: _MetricWatch, threshold: float
                                    ) -> tf.compat.v1.train.SessionRunHook:
  _check_estimator(watch.estimator)

  def stop_if_threshold_crossed_fn() -> bool:
    for step, value in watch.values():
      if watch.is_better(value, threshold):
        _logging.info('At step %s, metric "%s" has value %s which is %s the configured '
                      "threshold (%s) for early stopping.", step, watch.metric_name, value,
                      "greater than" if watch.higher_is_better else "less than", threshold)
        return True
    return False

  return watch.hook(stop_if_threshold_crossed_fn)


def _stop_if_no_metric_improvement_hook(watch: _MetricWatch, max_steps_without_improvement: int
                                        ) -> tf.compat.v1.train.SessionRunHook:
  _check_estimator(watch.estimator)

  def stop_if_no_metric_improvement_fn() -> bool:
    best_value: Optional[float] = None
    best_step = 0
    for step, value in watch.values():
      if best_value is None or watch.is_better(value, best_value):
        best_value, best_step = value, step
      if step - best_step >= max_steps_without_improvement:
        _logging.info('No %s in metric "%s" for %s steps, which is greater than or equal '
                      "to max steps (%s) configured for early stopping.",
                      "increase" if watch.higher_is_better else "decrease",
                      watch.metric_name, step - best_step, max_steps_without_improvement)
        return True
    return False

  return watch.hook(stop_if_no_metric_improvement_fn)


# -- the cluster-wide stop signal ---------------------------------------------------
def _get_or_create_stop_var() -> tf.Variable:
  # Not in GLOBAL_VARIABLES: not checkpointed (see the module docstring), and
  # not initialised by every task's init op; the chief initialises it.
  with tf.compat.v1.variable_scope(_STOP_SCOPE, values=[],
                                   reuse=tf.compat.v1.AUTO_REUSE):
    return tf.compat.v1.get_variable(
        _STOP_NAME, shape=[], dtype=tf.bool,
        initializer=tf.compat.v1.constant_initializer(False),
        collections=[], trainable=False, use_resource=True)


class _StopOnPredicateHook(tf.compat.v1.train.SessionRunHook):
  """Chief side: calls should_stop_fn periodically; on True signals every task and stops."""

  def __init__(self, should_stop_fn: Callable[[], bool], run_every_secs: Optional[float] = 60,
               run_every_steps: Optional[int] = None, model_dir: Optional[str] = None) -> None:
    if not callable(should_stop_fn):
      raise TypeError("`should_stop_fn` must be callable.")
    self._should_stop_fn = should_stop_fn
    self._cadence = cadence_lib.Cadence(every_secs=run_every_secs, every_steps=run_every_steps)
    self._model_dir = model_dir
    self._stopped_early = False

  def begin(self) -> None:
    self._global_step_tensor = tf.compat.v1.train.get_global_step()
    if self._global_step_tensor is None:
      raise RuntimeError("Global step should be created to use an early stopping hook.")
    self._stop_var = _get_or_create_stop_var()
    self._stop_op = self._stop_var.assign(True)
    self._stopped_early = False
    self._cadence.reset()

  def after_create_session(self, session: tf.compat.v1.Session,
                           coord: tf.train.Coordinator) -> None:
    del coord
    # A new run starts undecided (the variable may hold True from an earlier run
    # when the ps outlived it).
    session.run(self._stop_var.initializer)

  def before_run(self, run_context: tf.compat.v1.train.SessionRunContext
                 ) -> tf.compat.v1.train.SessionRunArgs:
    del run_context
    return tf.compat.v1.train.SessionRunArgs(self._global_step_tensor)

  def after_run(self, run_context: tf.compat.v1.train.SessionRunContext,
                run_values: tf.compat.v1.train.SessionRunValues) -> None:
    global_step = run_values.results
    if self._stopped_early or not self._cadence.is_due(global_step):
      return
    self._cadence.fire(global_step)
    if self._should_stop_fn():
      _logging.info("Requesting early stopping at global step %d", global_step)
      run_context.session.run(self._stop_op)
      self._stopped_early = True
      run_context.request_stop()

  def end(self, session: tf.compat.v1.Session) -> None:
    if self._stopped_early and self._model_dir:
      step = session.run(self._global_step_tensor)
      stop_marker.write_stop_marker(self._model_dir, step)
      _logging.info("Early stopping: wrote %s (global step %d) for the evaluator.",
                    stop_marker.marker_path(self._model_dir), step)


class _CheckForStoppingHook(tf.compat.v1.train.SessionRunHook):
  """Worker side: stops when the chief has set the shared STOP variable."""

  def begin(self) -> None:
    stop_var = _get_or_create_stop_var()
    # False until the chief has initialised the variable.
    self._should_stop = tf.cond(stop_var.is_initialized(), stop_var.read_value,
                                lambda: tf.constant(False))

  def before_run(self, run_context: tf.compat.v1.train.SessionRunContext
                 ) -> tf.compat.v1.train.SessionRunArgs:
    del run_context
    return tf.compat.v1.train.SessionRunArgs(self._should_stop)

  def after_run(self, run_context: tf.compat.v1.train.SessionRunContext,
                run_values: tf.compat.v1.train.SessionRunValues) -> None:
    if run_values.results:
      _logging.info("Early stopping requested, suspending run.")
      run_context.request_stop()
