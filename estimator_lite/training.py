"""TrainSpec, EvalSpec and train_and_evaluate: one program for every machine of a cluster.

train_and_evaluate reads the process's role from RunConfig (TF_CONFIG) and
runs it: local training with evaluation, or the cluster's chief, worker, ps,
master or evaluator task. See DESIGN.md, "Roles from TF_CONFIG", and README,
"Run on a cluster".
"""
import numbers

import attrs
import tensorflow as tf

from estimator_lite import _evaluator_loop
from estimator_lite import _server
from estimator_lite import _strategy_checks
from estimator_lite import _tf_config
from estimator_lite.estimator import Estimator

_logging = tf.compat.v1.logging


# -- validation -----------------------------------------------------------------
def _check_input_fn(instance, attribute, input_fn):
  del instance, attribute
  if not callable(input_fn):
    raise TypeError(
        f"`input_fn` must be callable, given: {input_fn!r}. Pass the function "
        "itself (input_fn=my_input_fn), not its result.")


def _is_int(value):
  return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _check_positive_int_or_none(instance, attribute, value):
  del instance
  if value is None:
    return
  if not _is_int(value):
    raise TypeError(f"{attribute.name} must be an int or None, given: {value!r}.")
  if value <= 0:
    raise ValueError(f"Must specify {attribute.name} > 0, given: {value}")


def _check_non_negative_secs(instance, attribute, value):
  del instance
  if isinstance(value, bool) or not isinstance(value, numbers.Real):
    raise TypeError(f"{attribute.name} must be a number of seconds, given: {value!r}.")
  if value < 0:
    raise ValueError(f"Must specify {attribute.name} >= 0, given: {value}")


def _check_name(instance, attribute, name):
  del instance, attribute
  if name is not None and not isinstance(name, str):
    raise TypeError(f"`name` must be string, given: {name!r}")


def _hooks_tuple(hooks):
  hooks = tuple(hooks or ())
  for hook in hooks:
    if not isinstance(hook, tf.compat.v1.train.SessionRunHook):
      raise TypeError(f"All hooks must be `SessionRunHook` instances, given: {hook!r}")
  return hooks


def _listeners_tuple(listeners):
  listeners = tuple(listeners or ())
  for listener in listeners:
    if not isinstance(listener, tf.compat.v1.train.CheckpointSaverListener):
      raise TypeError(
          "All saving_listeners must be `CheckpointSaverListener` instances, given: "
          f"{listener!r}")
  return listeners


def _is_exporter(value):
  return hasattr(value, "name") and callable(getattr(value, "export", None))


def _exporters_tuple(exporters):
  if not exporters:
    return ()
  if _is_exporter(exporters):
    exporters = [exporters]
  bad_type = TypeError(
      "`exporters` must be an Exporter, an iterable of Exporter, or `None`, found "
      f"{exporters!r}. An exporter has a `name` and an `export(estimator, export_path, "
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


class _Replaceable:
  """replace()/_replace() for the frozen specs (tf.estimator's were namedtuples)."""

  def replace(self, **changes):
    """Returns a copy with `changes` applied, validated like the constructor's arguments."""
    return attrs.evolve(self, **changes)

  _replace = replace


# -- specs ----------------------------------------------------------------------
@attrs.frozen
class TrainSpec(_Replaceable):
  """The "train" part of train_and_evaluate: input, duration and hooks.

  Args:
    input_fn: returns a `tf.data.Dataset` of (features, labels), or a
      (features, labels) tuple; may take mode, params, config and
      `input_context` (see README, "Run on a cluster", for sharding).
    max_steps: positive int, the global step to train to; None trains forever
      (then the evaluator task never exits on its own).
    hooks: `SessionRunHook`s to run on every training task (chief included).
    saving_listeners: `CheckpointSaverListener`s to run on the chief.

  Raises:
    TypeError: input_fn not callable, a hook or listener of the wrong type, or
      a non-integer max_steps.
    ValueError: max_steps <= 0.
  """
  input_fn: object = attrs.field(validator=_check_input_fn)
  max_steps: object = attrs.field(default=None, validator=_check_positive_int_or_none)
  hooks: tuple = attrs.field(default=(), converter=_hooks_tuple)
  saving_listeners: tuple = attrs.field(default=(), converter=_listeners_tuple)


@attrs.frozen
class EvalSpec(_Replaceable):
  """The "evaluate" part of train_and_evaluate: input, cadence and exporters.

  Evaluation happens after checkpoints (the chief's, in local and master
  mode; the newest one in model_dir, on the evaluator task), at most every
  `throttle_secs` seconds, or, with `every_n_steps`, every N global steps.

  Args:
    input_fn: as for TrainSpec; evaluation stops at end of input or `steps`.
    steps: batches per evaluation; None evaluates until input ends.
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
  input_fn: object = attrs.field(validator=_check_input_fn)
  steps: object = attrs.field(default=100, validator=_check_positive_int_or_none)
  name: object = attrs.field(default=None, validator=_check_name)
  hooks: tuple = attrs.field(default=(), converter=_hooks_tuple)
  exporters: tuple = attrs.field(default=(), converter=_exporters_tuple)
  start_delay_secs: object = attrs.field(default=120, validator=_check_non_negative_secs)
  throttle_secs: object = attrs.field(default=600, validator=_check_non_negative_secs)
  every_n_steps: object = attrs.field(default=None, kw_only=True,
                                      validator=_check_positive_int_or_none)


# -- train_and_evaluate -----------------------------------------------------------
def train_and_evaluate(estimator, train_spec, eval_spec):
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
  if not isinstance(estimator, Estimator):
    raise TypeError(f"`estimator` must have type `estimator_lite.Estimator`. Got: "
                    f"{type(estimator)}")
  if not isinstance(train_spec, TrainSpec):
    raise TypeError(f"`train_spec` must have type `estimator_lite.TrainSpec`. Got: "
                    f"{type(train_spec)}")
  if not isinstance(eval_spec, EvalSpec):
    raise TypeError(f"`eval_spec` must have type `estimator_lite.EvalSpec`. Got: "
                    f"{type(eval_spec)}")
  config = estimator.config
  if config.task_type == _tf_config.EVALUATOR and config.task_id > 0:
    raise ValueError(
        "For distributed training, there can only be one `evaluator` task (with task "
        f"id 0).  Given task id {config.task_id}")
  if not config.cluster_spec.jobs and config.task_type != _tf_config.EVALUATOR:
    _logging.info("Running training and evaluation locally (non-distributed).")
    return _run_local(estimator, train_spec, eval_spec)
  runners = {
      _tf_config.CHIEF: _run_chief,
      _tf_config.WORKER: _run_worker,
      _tf_config.MASTER: _run_master,
      _tf_config.PS: _run_ps,
      _tf_config.EVALUATOR: _run_evaluator,
  }
  if config.task_type not in runners:
    raise ValueError(f"Task type {config.task_type} is not supported. Supported task "
                     f"types are {sorted(runners)}")
  _logging.info("Running train_and_evaluate as %s:%d.", config.task_type, config.task_id)
  runners[config.task_type](estimator, train_spec, eval_spec)
  return None


def _eval_listener(estimator, train_spec, eval_spec):
  evaluator = _evaluator_loop.Evaluator(estimator, eval_spec, train_spec.max_steps)
  return _evaluator_loop.NewCheckpointListenerForEvaluate(
      evaluator, eval_spec.throttle_secs, eval_spec.every_n_steps)


def _run_local(estimator, train_spec, eval_spec):
  config = estimator.config
  _logging.info(
      "Start train and evaluate loop. The evaluate will happen after every checkpoint. "
      "Checkpoint frequency is determined based on RunConfig arguments: "
      "save_checkpoints_steps %s or save_checkpoints_secs %s.",
      config.save_checkpoints_steps, config.save_checkpoints_secs)
  listener = _eval_listener(estimator, train_spec, eval_spec)
  estimator.train(input_fn=train_spec.input_fn, max_steps=train_spec.max_steps,
                  hooks=list(train_spec.hooks),
                  saving_listeners=list(train_spec.saving_listeners) + [listener])
  metrics = listener.eval_result.metrics if listener.eval_result else None
  return metrics, listener.export_results


def _train_in_cluster(estimator, train_spec, saving_listeners):
  config = estimator.config
  if _strategy_checks.is_multi_worker(config.train_distribute):
    # All-reduce training (estimator_lite/_distributed.py): each task serves
    # itself and all start together, with no stagger.
    server = None
  else:
    server = _server.start_std_server(config)  # pylint: disable=unused-variable
    _server.wait_before_training(config)
  estimator.train(input_fn=train_spec.input_fn, max_steps=train_spec.max_steps,
                  hooks=list(train_spec.hooks), saving_listeners=saving_listeners)
  del server  # kept alive until training is done


def _run_chief(estimator, train_spec, eval_spec):
  del eval_spec
  _train_in_cluster(estimator, train_spec, list(train_spec.saving_listeners))


def _run_worker(estimator, train_spec, eval_spec):
  del eval_spec
  # As tf.estimator: saving listeners belong to the chief, the only task that saves.
  _train_in_cluster(estimator, train_spec, None)


def _run_master(estimator, train_spec, eval_spec):
  listener = _eval_listener(estimator, train_spec, eval_spec)
  _train_in_cluster(estimator, train_spec, list(train_spec.saving_listeners) + [listener])


def _run_ps(estimator, train_spec, eval_spec):
  del train_spec, eval_spec
  server = _server.start_std_server(estimator.config)
  _logging.info("ps task serving variables until stopped.")
  server.join()


def _run_evaluator(estimator, train_spec, eval_spec):
  _evaluator_loop.run_continuous_evaluation(estimator, eval_spec, train_spec.max_steps)
