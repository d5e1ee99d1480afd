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
  TrainSpec.max_steps. A marker left by an earlier run (its step not past the
  newest checkpoint when the evaluator started) is ignored.
"""
import collections
import json
import operator
import os
import time

import tensorflow as tf

_logging = tf.compat.v1.logging
_EVENT_FILE_GLOB_PATTERN = "events.out.tfevents.*"
MARKER_FILENAME = "early_stopping.json"
_STOP_SCOPE = "signal_early_stopping"
_STOP_NAME = "STOP"


def _check_estimator(estimator):
  from estimator_lite.estimator import Estimator  # pylint: disable=g-import-not-at-top
  if not isinstance(estimator, Estimator):
    raise TypeError("`estimator` must have type `estimator_lite.Estimator`. "
                    f"Got: {type(estimator)}")


def make_early_stopping_hook(estimator, should_stop_fn, run_every_secs=60,
                             run_every_steps=None):
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
    raise TypeError(f"`should_stop_fn` must be callable; got {should_stop_fn!r}.")
  if estimator.config.is_chief:
    return _StopOnPredicateHook(should_stop_fn, run_every_secs, run_every_steps,
                                model_dir=estimator.model_dir)
  return _CheckForStoppingHook()


def stop_if_higher_hook(estimator, metric_name, threshold, eval_dir=None, min_steps=0,
                        run_every_secs=60, run_every_steps=None):
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
  return _stop_if_threshold_crossed_hook(estimator, metric_name, threshold, True,
                                         eval_dir, min_steps, run_every_secs,
                                         run_every_steps)


def stop_if_lower_hook(estimator, metric_name, threshold, eval_dir=None, min_steps=0,
                       run_every_secs=60, run_every_steps=None):
  """Creates a hook that stops training once `metric_name` is lower than `threshold`.

  Args:
    estimator: the `Estimator` being trained.
    metric_name: str, the evaluation metric to watch.
    threshold: number; stop when any evaluation has metric < threshold.
    eval_dir: directory of the evaluation event files; default `estimator.eval_dir()`.
    min_steps: ignore evaluations of checkpoints before this global step.
    run_every_secs, run_every_steps: as `make_early_stopping_hook`.

  Returns:
    A `SessionRunHook`.
  """
  return _stop_if_threshold_crossed_hook(estimator, metric_name, threshold, False,
                                         eval_dir, min_steps, run_every_secs,
                                         run_every_steps)


def stop_if_no_increase_hook(estimator, metric_name, max_steps_without_increase,
                             eval_dir=None, min_steps=0, run_every_secs=60,
                             run_every_steps=None):
  """Creates a hook that stops training when `metric_name` has stopped increasing.

  Stops once an evaluation at least `max_steps_without_increase` global steps
  after the best one (the highest value) has been written.

  Args:
    estimator: the `Estimator` being trained.
    metric_name: str, the evaluation metric to watch.
    max_steps_without_increase: int, global steps allowed without a new best.
    eval_dir: directory of the evaluation event files; default `estimator.eval_dir()`.
    min_steps: ignore evaluations of checkpoints before this global step.
    run_every_secs, run_every_steps: as `make_early_stopping_hook`.

  Returns:
    A `SessionRunHook`.
  """
  return _stop_if_no_metric_improvement_hook(
      estimator, metric_name, max_steps_without_increase, True, eval_dir, min_steps,
      run_every_secs, run_every_steps)


def stop_if_no_decrease_hook(estimator, metric_name, max_steps_without_decrease,
                             eval_dir=None, min_steps=0, run_every_secs=60,
                             run_every_steps=None):
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
  return _stop_if_no_metric_improvement_hook(
      estimator, metric_name, max_steps_without_decrease, False, eval_dir, min_steps,
      run_every_secs, run_every_steps)


def read_eval_metrics(eval_dir):
  """Reads the scalar evaluation results in an eval directory's event files.

  Args:
    eval_dir: directory with `events.out.tfevents.*` files.

  Returns:
    OrderedDict global step -> {metric name: float}, by increasing step.
  """
  metrics_by_step = collections.defaultdict(dict)
  for event in _summaries(eval_dir):
    if not event.HasField("summary"):
      continue
    metrics = {value.tag: value.simple_value for value in event.summary.value
               if value.HasField("simple_value")}
    if metrics:
      metrics_by_step[event.step].update(metrics)
  return collections.OrderedDict(sorted(metrics_by_step.items()))


def _summaries(eval_dir):
  if not tf.io.gfile.exists(eval_dir):
    return
  for event_file in sorted(tf.io.gfile.glob(os.path.join(eval_dir, _EVENT_FILE_GLOB_PATTERN))):
    try:
      for event in tf.compat.v1.train.summary_iterator(event_file):
        yield event
    except tf.errors.DataLossError as e:
      # A file still being written ends with a partial record: keep what was read.
      _logging.warning("Skipping rest of the file due to encountering data corruption "
                       "error; file path: %s; error: %s", event_file, e)


def _metric(metrics, metric_name, step, eval_dir):
  if metric_name not in metrics:
    raise KeyError(
        f"Early stopping watches metric {metric_name!r}, but the evaluation at global "
        f"step {step} in {eval_dir} has only {sorted(metrics)}. Use one of those names "
        "(or pass eval_dir= for an EvalSpec with a name).")
  return metrics[metric_name]


def _stop_if_threshold_crossed_hook(estimator, metric_name, threshold, higher_is_better,
                                    eval_dir, min_steps, run_every_secs, run_every_steps):
  _check_estimator(estimator)
  eval_dir = eval_dir if eval_dir is not None else estimator.eval_dir()
  is_lhs_better = operator.gt if higher_is_better else operator.lt
  greater_or_lesser = "greater than" if higher_is_better else "less than"

  def stop_if_threshold_crossed_fn():
    for step, metrics in read_eval_metrics(eval_dir).items():
      if step < min_steps:
        continue
      value = _metric(metrics, metric_name, step, eval_dir)
      if is_lhs_better(value, threshold):
        _logging.info('At step %s, metric "%s" has value %s which is %s the configured '
                      "threshold (%s) for early stopping.", step, metric_name, value,
                      greater_or_lesser, threshold)
        return True
    return False

  return make_early_stopping_hook(estimator, stop_if_threshold_crossed_fn,
                                  run_every_secs=run_every_secs,
                                  run_every_steps=run_every_steps)


def _stop_if_no_metric_improvement_hook(estimator, metric_name, max_steps_without_improvement,
                                        higher_is_better, eval_dir, min_steps,
                                        run_every_secs, run_every_steps):
  _check_estimator(estimator)
  eval_dir = eval_dir if eval_dir is not None else estimator.eval_dir()
  is_lhs_better = operator.gt if higher_is_better else operator.lt
  increase_or_decrease = "increase" if higher_is_better else "decrease"

  def stop_if_no_metric_improvement_fn():
    best_value, best_step = None, None
    for step, metrics in read_eval_metrics(eval_dir).items():
      if step < min_steps:
        continue
      value = _metric(metrics, metric_name, step, eval_dir)
      if best_value is None or is_lhs_better(value, best_value):
        best_value, best_step = value, step
      if step - best_step >= max_steps_without_improvement:
        _logging.info('No %s in metric "%s" for %s steps, which is greater than or equal '
                      "to max steps (%s) configured for early stopping.",
                      increase_or_decrease, metric_name, step - best_step,
                      max_steps_without_improvement)
        return True
    return False

  return make_early_stopping_hook(estimator, stop_if_no_metric_improvement_fn,
                                  run_every_secs=run_every_secs,
                                  run_every_steps=run_every_steps)


# -- the cluster-wide stop signal ---------------------------------------------------
def _get_or_create_stop_var():
  # Not in GLOBAL_VARIABLES: not checkpointed (see the module docstring), and
  # not initialised by every task's init op; the chief initialises it.
  with tf.compat.v1.variable_scope(_STOP_SCOPE, values=[],
                                   reuse=tf.compat.v1.AUTO_REUSE):
    return tf.compat.v1.get_variable(
        _STOP_NAME, shape=[], dtype=tf.bool,
        initializer=tf.compat.v1.constant_initializer(False),
        collections=[], trainable=False, use_resource=True)


def marker_path(model_dir):
  """The path of the file the chief writes when it stops training early."""
  return os.path.join(os.fspath(model_dir), MARKER_FILENAME)


def read_stop_marker(model_dir):
  """The global step at which early stopping ended training in model_dir, or None.

  The evaluator task calls this after each evaluation; see the module docstring.
  """
  path = marker_path(model_dir)
  try:
    with tf.io.gfile.GFile(path) as f:
      return int(json.load(f)["global_step"])
  except (tf.errors.NotFoundError, ValueError, KeyError, TypeError):
    return None


class StopMarkerWatcher:
  """The evaluator's view of the chief's early-stopping marker.

  Create it when the evaluator starts, passing the step of the newest
  checkpoint then (None if none): a marker at or before that step was left by
  an earlier run and is ignored. The marker file is read at most every
  `min_interval_secs`.

  Args:
    model_dir: the model directory.
    baseline_step: step of the newest checkpoint when the evaluator started.
    min_interval_secs: least time between two reads of the marker file.
  """

  def __init__(self, model_dir, baseline_step=None, min_interval_secs=5.0):
    self._model_dir = model_dir
    self._baseline = -1 if baseline_step is None else baseline_step
    self._min_interval_secs = min_interval_secs
    self._read_at = None
    self._stop_step = None

  def stop_step(self):
    """The step training stopped early at in this run, or None (yet)."""
    now = time.monotonic()
    if self._stop_step is None and (
        self._read_at is None or now - self._read_at >= self._min_interval_secs):
      self._read_at = now
      step = read_stop_marker(self._model_dir)
      if step is not None and step > self._baseline:
        self._stop_step = step
    return self._stop_step

  def is_final(self, step, force_read=False):
    """Whether a checkpoint at `step` is the last one: training stopped early at or before it."""
    if force_read and self._stop_step is None:
      self._read_at = None
    stop_step = self.stop_step()
    return stop_step is not None and step is not None and step >= stop_step


def _write_stop_marker(model_dir, global_step):
  path = marker_path(model_dir)
  temp = path + ".tmp"
  with tf.io.gfile.GFile(temp, "w") as f:
    json.dump({"global_step": int(global_step)}, f)
  # Readers see either no marker or a complete one.
  tf.io.gfile.rename(temp, path, overwrite=True)


class _StopOnPredicateHook(tf.compat.v1.train.SessionRunHook):
  """Chief side: calls should_stop_fn periodically; on True signals every task and stops."""

  def __init__(self, should_stop_fn, run_every_secs=60, run_every_steps=None,
               model_dir=None):
    if not callable(should_stop_fn):
      raise TypeError("`should_stop_fn` must be callable.")
    self._should_stop_fn = should_stop_fn
    self._timer = tf.compat.v1.train.SecondOrStepTimer(
        every_secs=run_every_secs, every_steps=run_every_steps)
    self._model_dir = model_dir
    self._stopped_early = False

  def begin(self):
    self._global_step_tensor = tf.compat.v1.train.get_global_step()
    if self._global_step_tensor is None:
      raise RuntimeError("Global step should be created to use an early stopping hook.")
    self._stop_var = _get_or_create_stop_var()
    self._stop_op = self._stop_var.assign(True)
    self._stopped_early = False

  def after_create_session(self, session, coord):
    del coord
    # A new run starts undecided (the variable may hold True from an earlier run
    # when the ps outlived it).
    session.run(self._stop_var.initializer)

  def before_run(self, run_context):
    del run_context
    return tf.compat.v1.train.SessionRunArgs(self._global_step_tensor)

  def after_run(self, run_context, run_values):
    global_step = run_values.results
    if self._stopped_early or not self._timer.should_trigger_for_step(global_step):
      return
    self._timer.update_last_triggered_step(global_step)
    if self._should_stop_fn():
      _logging.info("Requesting early stopping at global step %d", global_step)
      run_context.session.run(self._stop_op)
      self._stopped_early = True
      run_context.request_stop()

  def end(self, session):
    if self._stopped_early and self._model_dir:
      step = session.run(self._global_step_tensor)
      _write_stop_marker(self._model_dir, step)
      _logging.info("Early stopping: wrote %s (global step %d) for the evaluator.",
                    marker_path(self._model_dir), step)


class _CheckForStoppingHook(tf.compat.v1.train.SessionRunHook):
  """Worker side: stops when the chief has set the shared STOP variable."""

  def begin(self):
    stop_var = _get_or_create_stop_var()
    # False until the chief has initialised the variable.
    self._should_stop = tf.cond(stop_var.is_initialized(), stop_var.read_value,
                                lambda: tf.constant(False))

  def before_run(self, run_context):
    del run_context
    return tf.compat.v1.train.SessionRunArgs(self._should_stop)

  def after_run(self, run_context, run_values):
    if run_values.results:
      _logging.info("Early stopping requested, suspending run.")
      run_context.request_stop()
