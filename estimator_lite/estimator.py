"""Estimator: builds a fresh graph per call and runs model_fn in tf.compat.v1 sessions."""
import contextlib
import copy
import functools
import os
import sys
import tempfile
import time

import numpy as np
import tensorflow as tf
from tensorflow.python.training import training_util

from estimator_lite import _checkpointing
from estimator_lite import _cluster_session
from estimator_lite import _distributed
from estimator_lite import _fast_session
from estimator_lite import _fn_args
from estimator_lite import _inputs
from estimator_lite import _metrics
from estimator_lite import _preemption
from estimator_lite import _quiet
from estimator_lite import _step_hook
from estimator_lite import _summaries
from estimator_lite import _train_loop
from estimator_lite import warm_starting
from estimator_lite.estimator_spec import EstimatorSpec
from estimator_lite.export import _saved_model_writer
from estimator_lite.mode_keys import ModeKeys
from estimator_lite.run_config import RunConfig

_logging = tf.compat.v1.logging
_MODEL_FN_ARGS = ("features", "labels", "mode", "params", "config")
_LOSS_METRIC_KEY = "loss"
_GLOBAL_STEP_KEY = "global_step"


class _StopAfterNEvalsHook(tf.compat.v1.train.SessionRunHook):
  """Stops evaluation after `num_evals` batches and logs progress every tenth."""

  def __init__(self, num_evals):
    self._num_evals = num_evals
    self._log_every = max(1, num_evals // 10)
    self._done = 0

  def begin(self):
    # Counts per evaluation: InMemoryEvaluatorHook reuses the hook.
    self._done = 0

  def after_run(self, run_context, run_values):
    del run_values
    self._done += 1
    if self._done % self._log_every == 0 or self._done == self._num_evals:
      _logging.info("Evaluation [%d/%d]", self._done, self._num_evals)
    if self._done >= self._num_evals:
      run_context.request_stop()


def _check_hooks_type(hooks, where):
  hooks = list(hooks or [])
  for hook in hooks:
    if not isinstance(hook, tf.compat.v1.train.SessionRunHook):
      raise TypeError(
          f"All hooks must be SessionRunHook instances, given: {hook!r} in {where}.")
  return hooks


def _check_listeners(listeners):
  listeners = list(listeners or [])
  for listener in listeners:
    if not isinstance(listener, tf.compat.v1.train.CheckpointSaverListener):
      raise TypeError(
          f"saving_listeners must be a list of CheckpointSaverListener, given: {listener!r}.")
  return listeners


def _check_positive(name, value):
  if value is None:
    return None
  if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
    raise ValueError(f"Must specify {name} > 0, given: {value!r}.")
  return int(value)


def _reset_keras3_names():
  # Keras 3 does not reset its automatic layer names for a new tf.Graph:
  # without this, the export graph's "dense" becomes "dense_1" and no longer
  # matches the checkpoint. Only touch Keras 3 if the user already imported it.
  # (keras.backend.clear_session() would also reset the default graph, which is
  # not allowed inside the graph being built, so reset only the name counters.)
  keras = sys.modules.get("keras")
  if keras is None or not getattr(keras, "__version__", "").startswith("3."):
    return
  try:
    from keras.src.utils import naming  # pylint: disable=g-import-not-at-top
  except ImportError:
    return
  naming.reset_uids()


class Estimator:
  """Trains, evaluates and predicts with a model_fn, as tf.estimator.Estimator did.

  Args:
    model_fn: function `(features, labels, mode, params, config) ->
      EstimatorSpec`; it may take any subset of those arguments by name
      (`features` is required).
    model_dir: directory for checkpoints and summaries. None: RunConfig's, else
      a new temporary directory (logged).
    config: a `RunConfig`.
    params: dict of hyperparameters passed to model_fn (deep-copied).
    warm_start_from: checkpoint path, model_dir, SavedModel dir or
      `WarmStartSettings` to initialise from when model_dir has no checkpoint.

  Raises:
    ValueError: model_fn's arguments are unusable, model_dir disagrees with
      config.model_dir, or params are given to a model_fn without `params`.
  """

  def __init__(self, model_fn, model_dir=None, config=None, params=None,
               warm_start_from=None):
    if not callable(model_fn):
      raise ValueError(f"model_fn must be provided to Estimator and be callable; given {model_fn!r}.")
    args = _fn_args.fn_args(model_fn)
    if "features" not in args:
      raise ValueError(
          f"model_fn ({_fn_args.describe(model_fn)}) must include features argument; "
          f"it takes {list(args)}.")
    unknown = [a for a in _fn_args.required_args(model_fn) if a not in _MODEL_FN_ARGS]
    if unknown:
      raise ValueError(
          f"model_fn ({_fn_args.describe(model_fn)}) has following not expected args: "
          f"{unknown}. It may take only {list(_MODEL_FN_ARGS)}; bind others with "
          "functools.partial.")
    if params is not None and "params" not in args:
      raise ValueError(
          f"model_fn ({_fn_args.describe(model_fn)}) does not include params argument, "
          f"but params ({params!r}) are passed to Estimator.")
    if config is None:
      config = RunConfig()
    elif not isinstance(config, RunConfig):
      raise ValueError(
          f"config must be an instance of RunConfig, but provided {config!r}.")
    if model_dir is not None:
      model_dir = os.fspath(model_dir)
    if model_dir and config.model_dir and model_dir != config.model_dir:
      raise ValueError(
          "model_dir are set both in constructor and RunConfig, but with different "
          f"values. In constructor: {model_dir}, in RunConfig: {config.model_dir}.")
    model_dir = model_dir or config.model_dir
    if not model_dir:
      model_dir = tempfile.mkdtemp()
      _logging.warning("Using temporary folder as model directory: %s", model_dir)
    if config.model_dir != model_dir:
      config = config.replace(model_dir=model_dir)
    _logging.info("Using config: %r", config)
    self._model_fn = model_fn
    self._model_fn_args = args
    self._config = config
    self._model_dir = model_dir
    self._params = copy.deepcopy(params or {})
    self._warm_start_settings = warm_starting.resolve(warm_start_from)

  # -- properties ---------------------------------------------------------------
  @property
  def model_dir(self):
    return self._model_dir

  @property
  def config(self):
    return copy.deepcopy(self._config)

  @property
  def params(self):
    return copy.deepcopy(self._params)

  @property
  def model_fn(self):
    """The model_fn, wrapped to be called with this Estimator's params and config."""
    def public_model_fn(features, labels, mode, config):
      return self._call_model_fn(features, labels, mode, config)
    return public_model_fn

  # -- checkpoint access --------------------------------------------------------
  def latest_checkpoint(self):
    """Returns the path of the newest checkpoint in model_dir as str, or None."""
    return tf.train.latest_checkpoint(self.model_dir)

  def get_variable_names(self):
    """Returns the names of all variables in the latest checkpoint.

    Raises:
      ValueError: no checkpoint in model_dir yet.
    """
    self._require_checkpoint()
    return [name for name, _ in tf.train.list_variables(self.model_dir)]

  def get_variable_value(self, name):
    """Returns the value of variable `name` in the latest checkpoint (numpy).

    Raises:
      ValueError: no checkpoint in model_dir yet.
    """
    self._require_checkpoint()
    return tf.train.load_variable(self.model_dir, name)

  def eval_dir(self, name=None):
    """Returns the directory evaluate(name=...) writes its events to."""
    return os.path.join(self.model_dir, "eval" if not name else "eval_" + name)

  def _require_checkpoint(self):
    if not self.latest_checkpoint():
      raise ValueError(
          f"Could not find trained model in model_dir: {self.model_dir}. Train first "
          "(Estimator.train) or point model_dir at a directory with checkpoints.")

  # -- train --------------------------------------------------------------------
  def train(self, input_fn, hooks=None, steps=None, max_steps=None,
            saving_listeners=None):
    """Trains the model on data from input_fn.

    Args:
      input_fn: returns a `tf.data.Dataset` of (features, labels) or a
        (features, labels) tuple; may take params, config, mode, input_context.
      hooks: list of `SessionRunHook` run during training.
      steps: train this many more steps (adds to the restored step).
      max_steps: train until the global step reaches this; returns at once if
        the latest checkpoint is already there.
      saving_listeners: `CheckpointSaverListener`s called around each save.

    Returns:
      self, for chaining.

    Raises:
      ValueError: both steps and max_steps, or a non-positive one.
      NanLossDuringTrainingError: the loss became NaN.
    """
    if steps is not None and max_steps is not None:
      raise ValueError(
          f"Can not provide both steps and max_steps: steps={steps!r}, "
          f"max_steps={max_steps!r}. steps adds to the restored step; max_steps is absolute.")
    steps = _check_positive("steps", steps)
    max_steps = _check_positive("max_steps", max_steps)
    if max_steps is not None:
      start_step = self._latest_global_step()
      if max_steps <= start_step:
        _logging.info("Skipping training since max_steps has already saved "
                      "(global step %d >= max_steps %d).", start_step, max_steps)
        return self
    hooks = _check_hooks_type(hooks, "Estimator.train(hooks=...)")
    saving_listeners = _check_listeners(saving_listeners)
    if self._config.is_chief:
      _checkpointing.check_model_dir_writable(self._model_dir)
    with _quiet.quiet_deprecations():
      loss = self._train_model(input_fn, hooks, saving_listeners, steps, max_steps)
    _logging.info("Loss for final step: %s.", loss)
    return self

  def _latest_global_step(self):
    path = self.latest_checkpoint()
    if not path:
      return 0
    return int(tf.train.load_variable(path, tf.compat.v1.GraphKeys.GLOBAL_STEP))

  def _device_fn(self):
    if self._config.device_fn is not None:
      return self._config.device_fn
    if self._config.num_ps_replicas > 0:
      worker = f"/job:{self._config.task_type}/task:{self._config.task_id}"
      return tf.compat.v1.train.replica_device_setter(
          ps_tasks=self._config.num_ps_replicas, worker_device=worker,
          merge_devices=True, cluster=self._config.cluster_spec)
    return None

  def _get_features_and_labels(self, input_fn, mode):
    result = _inputs.call_input_fn(input_fn, mode, self.params, self._config)
    return _inputs.parse_input_fn_result(result)

  def _call_model_fn(self, features, labels, mode, config):
    """Calls model_fn with the arguments it names; returns its EstimatorSpec."""
    kwargs = {}
    if "labels" in self._model_fn_args:
      kwargs["labels"] = labels
    elif labels is not None:
      raise ValueError(
          "model_fn does not take labels, but input_fn returns labels. Add a "
          "labels argument to model_fn or return only features from input_fn.")
    if "mode" in self._model_fn_args:
      kwargs["mode"] = mode
    if "params" in self._model_fn_args:
      kwargs["params"] = self.params
    if "config" in self._model_fn_args:
      kwargs["config"] = config
    _reset_keras3_names()
    _logging.info("Calling model_fn.")
    try:
      spec = self._model_fn(features=features, **kwargs)
    except (TypeError, ValueError, AttributeError) as e:
      if labels is None and "labels" in self._model_fn_args and mode != ModeKeys.PREDICT:
        raise ValueError(
            f"model_fn raised {type(e).__name__} in mode {mode!r} with labels=None: "
            "input_fn returned features only, and this model_fn needs labels to "
            f"{'train' if mode == ModeKeys.TRAIN else 'evaluate'}. Return "
            "(features, labels) from input_fn, or a Dataset of (features, labels). "
            f"Original error: {e}") from e
      raise
    _logging.info("Done calling model_fn.")
    if not isinstance(spec, EstimatorSpec):
      raise ValueError(
          f"model_fn should return an EstimatorSpec (mode {mode!r}); it returned "
          f"{spec!r}. Return estimator_lite.EstimatorSpec(mode, ...).")
    if spec.mode != mode:
      raise ValueError(
          f"model_fn was called with mode {mode!r} but returned an EstimatorSpec "
          f"for mode {spec.mode!r}; pass the mode argument through.")
    return spec

  def _default_saver(self, scaffold):
    """Installs tf.estimator's default Saver unless the model_fn brought its own.

    Returns:
      True when the default Saver (all global variables) is the one in use.
    """
    if scaffold.saver is not None or tf.compat.v1.get_collection(
        tf.compat.v1.GraphKeys.SAVERS):
      return False
    tf.compat.v1.add_to_collection(
        tf.compat.v1.GraphKeys.SAVERS,
        tf.compat.v1.train.Saver(
            sharded=True,
            max_to_keep=self._config.keep_checkpoint_max,
            keep_checkpoint_every_n_hours=self._config.keep_checkpoint_every_n_hours,
            defer_build=True,
            save_relative_paths=True))
    return True

  def _train_model(self, input_fn, hooks, saving_listeners, steps, max_steps):
    if self._config.train_distribute is not None:  # RunConfig(train_distribute=...)
      return _distributed.train(self, input_fn, hooks, saving_listeners, steps, max_steps)
    with tf.Graph().as_default() as graph, graph.device(self._device_fn()):
      tf.compat.v1.set_random_seed(self._config.tf_random_seed)
      tf.compat.v1.train.get_or_create_global_step(graph)
      # The read that hooks (StepCounterHook, LoggingTensorHook) share must
      # exist before model_fn, as tf.estimator made it; a plain read, not
      # TensorFlow's tf.cond (see _fast_session.create_global_step_read).
      _fast_session.create_global_step_read(graph)
      if self._config.steps_per_loop > 1:
        spec, input_hooks, stop_hooks, logged_step = self._build_training_loop(
            input_fn, steps, max_steps)
        return self._train_with_spec(spec, input_hooks + hooks + stop_hooks, logged_step,
                                     saving_listeners)
      features, labels, input_hooks = self._get_features_and_labels(input_fn, ModeKeys.TRAIN)
      spec = self._call_model_fn(features, labels, ModeKeys.TRAIN, self._config)
      if tf.compat.v1.train.get_global_step(graph) is None:
        raise ValueError("model_fn removed the global step; keep "
                         "tf.compat.v1.train.get_or_create_global_step().")
      logged_step = _read_step_before_increment(graph)
      return self._train_with_spec(spec, input_hooks + hooks, logged_step, saving_listeners,
                                   stop_at=(steps, max_steps))

  def _build_training_loop(self, input_fn, steps, max_steps):
    """Builds RunConfig(steps_per_loop=K)'s in-graph loop; see _train_loop."""
    result = _inputs.call_input_fn(input_fn, ModeKeys.TRAIN, self.params, self._config)
    iterator, input_hook = _inputs.dataset_iterator(
        result, f"RunConfig(steps_per_loop={self._config.steps_per_loop})")

    def next_batch():
      features, labels, _ = _inputs.parse_input_fn_result(iterator.get_next())
      return features, labels

    def call_model_fn(features, labels):
      return self._call_model_fn(features, labels, ModeKeys.TRAIN, self._config)

    spec, loop_size, loop_global_step = _train_loop.build_training_loop(
        next_batch, call_model_fn, self._config.steps_per_loop)
    stop_hook = _train_loop.LoopSizeHook(loop_size, loop_global_step,
                                         self._config.steps_per_loop, steps, max_steps)
    return spec, [input_hook], [stop_hook], loop_global_step

  def _train_with_spec(self, spec, worker_hooks, logged_step, saving_listeners,
                       stop_at=(None, None)):
    """Runs the training session; `logged_step` is the step the loss log shows.

    `stop_at` is _training_hooks'. MonitoredTrainingSession adds no
    StepCounterHook or SummarySaverHook: the step hook does their work.
    """
    config = self._config
    worker_hooks, chief_saver = self._training_hooks(
        spec, worker_hooks, logged_step, saving_listeners,
        check_checkpoint=config.is_chief, is_chief=config.is_chief, stop_at=stop_at)
    watcher = _preemption.SigtermWatcher()
    # MonitoredTrainingSession, except that a worker notices the chief's
    # initialisation within a second instead of 30 (see _cluster_session).
    open_session = functools.partial(
        _cluster_session.monitored_training_session,
        master=config.master,
        is_chief=config.is_chief,
        checkpoint_dir=self._model_dir,
        scaffold=spec.scaffold,
        hooks=worker_hooks + [watcher.hook()] + (chief_saver if config.is_chief else []),
        save_checkpoint_secs=0,
        save_summaries_steps=None,
        config=config.session_config,
        max_wait_secs=config.session_creation_timeout_secs,
        log_step_count_steps=None,
        save_graph_def=config.checkpoint_save_graph_def)
    return self._run_training_session(open_session, spec, watcher)

  def _training_hooks(self, spec, hooks, logged_step, saving_listeners, check_checkpoint,
                      is_chief, stop_at=(None, None)):
    """Builds the hooks of a training session (shared with _distributed).

    Also applies warm-starting and adds the `loss` summary to the graph.

    Args:
      spec: the TRAIN EstimatorSpec.
      hooks: the input's and the caller's hooks.
      logged_step: the global step tensor the NaN guard and the loss log show
        (read before the increment; with steps_per_loop > 1, after the loop).
      saving_listeners: CheckpointSaverListeners for the checkpoint saver.
      check_checkpoint: check that model_dir's checkpoint fits this graph.
      is_chief: include spec.training_chief_hooks.
      stop_at: (steps, max_steps) of train(), for the step hook to stop at;
        (None, None) when another hook stops training.

    Returns:
      (the hooks in the order they must run, [the default checkpoint saver]
      or []). The step hook (_step_hook: the NaN guard, the loss log and, as
      asked, the stop step, step rate and summaries) comes first, then the
      chief hooks (on the chief), then the others: a user's
      NanTensorHook(loss) would otherwise raise first, with TensorFlow's
      message that lacks the step, and a CheckpointSaverHook (the user's
      own, or one due on that step) would first save the NaN weights of the
      failed step, as tf.estimator 2.15 did. An exception out of a hook
      ends training without the savers' final save. On the chief the step
      hook also writes the step rate and the summaries.
      The caller passes the chief hooks nowhere else (MonitoredTrainingSession's
      chief_only_hooks would run them before the guard), and runs the default
      saver, on the chief only, after the other hooks.

    Raises:
      ValueError: saving_listeners without any checkpoint saver, or a
        checkpoint that does not fit the graph.
    """
    config = self._config
    if self._warm_start_settings:
      warm_starting.apply(self._warm_start_settings)
    tf.compat.v1.summary.scalar("loss", spec.loss)
    num_steps, last_step = stop_at
    step_hook = _step_hook.TrainingStepHook(
        spec.loss, logged_step, num_steps=num_steps, last_step=last_step,
        # The loss log counts Session.run calls, as LoggingTensorHook did;
        # with steps_per_loop each call is steps_per_loop steps.
        log_every_n_iter=(None if config.log_step_count_steps is None else
                          -(-config.log_step_count_steps // config.steps_per_loop)),
        output_dir=self._model_dir if is_chief else None,
        count_every_n_steps=config.log_step_count_steps,
        summary_every_n_steps=config.save_summary_steps, scaffold=spec.scaffold,
        steps_per_run=config.steps_per_loop)
    chief_hooks = list(spec.training_chief_hooks)
    others = list(hooks) + list(spec.training_hooks)
    hooks = [step_hook] + (chief_hooks if is_chief else []) + others
    if self._default_saver(spec.scaffold) and check_checkpoint:
      _checkpointing.check_checkpoint_matches_graph(
          self.latest_checkpoint(), tf.compat.v1.get_default_graph())

    chief_saver = []
    saver_hooks = [h for h in chief_hooks + others
                   if isinstance(h, tf.compat.v1.train.CheckpointSaverHook)]
    if (config.save_checkpoints_secs or config.save_checkpoints_steps) and not saver_hooks:
      chief_saver = [_checkpointing.SafeCheckpointSaverHook(
          self._model_dir,
          save_secs=config.save_checkpoints_secs,
          save_steps=config.save_checkpoints_steps,
          scaffold=spec.scaffold,
          save_graph_def=config.checkpoint_save_graph_def)]
      saver_hooks = chief_saver
    if saving_listeners:
      if not saver_hooks:
        raise ValueError(
            "There should be a CheckpointSaverHook to use saving_listeners. Please "
            "set one of the RunConfig.save_checkpoints_steps or "
            "RunConfig.save_checkpoints_secs.")
      # The hook keeps its listeners in a private list; adding ours there is
      # what tf.estimator did, and keeps a user's own CheckpointSaverHook.
      saver_hooks[0]._listeners.extend(saving_listeners)  # pylint: disable=protected-access
    return hooks, chief_saver

  def _run_training_session(self, open_session, spec, watcher):
    """Runs spec.train_op until a hook stops; returns the last loss (shared with _distributed).

    Args:
      open_session: function returning the MonitoredSession (created inside
        the SIGTERM watcher, so a SIGTERM during session creation counts).
      spec: the TRAIN EstimatorSpec.
      watcher: the SigtermWatcher whose hook the session runs, or None.

    Raises:
      Preempted: SIGTERM was received; the checkpoint at the current step is saved.
    """
    loss = None
    any_step_done = False
    fetches = [spec.train_op, spec.loss]  # built once: this loop is the per-step path
    with watcher or contextlib.nullcontext(), open_session() as session:
      while not session.should_stop():
        _, loss = session.run(fetches)
        any_step_done = True
    if not any_step_done:
      _logging.warning("Training with estimator made no steps. Perhaps input is "
                       "empty or misspecified.")
    if watcher is not None and watcher.requested:
      preempted = _preemption.Preempted(self._latest_global_step(), self.latest_checkpoint())
      _logging.warning("%s Exiting with status %d.", preempted, preempted.code)
      raise preempted
    return loss

  # -- evaluate -----------------------------------------------------------------
  def evaluate(self, input_fn, steps=None, hooks=None, checkpoint_path=None,
               name=None):
    """Evaluates the model on data from input_fn and writes eval[_NAME] events.

    Args:
      input_fn: as for train(); evaluation stops at end of input or `steps`.
      steps: number of batches to evaluate; None runs until input ends.
      hooks: list of `SessionRunHook` run during evaluation.
      checkpoint_path: checkpoint to evaluate; the latest one by default. With
        no checkpoint at all, evaluates the initialised model (as tf.estimator).
      name: evaluation name; events go to model_dir/eval_NAME.

    Returns:
      dict with `loss`, each metric, and `global_step`.

    Raises:
      ValueError: steps <= 0, or a metric named "loss".
    """
    steps = _check_positive("steps", steps)
    hooks = _check_hooks_type(hooks, "Estimator.evaluate(hooks=...)")
    if name is not None and not isinstance(name, str):
      raise ValueError(f"name must be a string or None, given {name!r}.")
    checkpoint_path = self._checkpoint_or_latest(checkpoint_path, "evaluate")
    if steps is not None:
      hooks.append(_StopAfterNEvalsHook(steps))
    with _quiet.quiet_deprecations():
      results = self._evaluate_model(input_fn, hooks, checkpoint_path)
    global_step = int(results[_GLOBAL_STEP_KEY])
    output_dir = self.eval_dir(name)
    _summaries.write_dict_to_summary(output_dir, results, global_step)
    if checkpoint_path:
      _summaries.write_checkpoint_path_to_summary(output_dir, checkpoint_path, global_step)
    return results

  def _checkpoint_or_latest(self, checkpoint_path, what):
    if checkpoint_path:
      return os.fspath(checkpoint_path)
    latest = self.latest_checkpoint()
    if not latest:
      _logging.info("Could not find trained model in model_dir: %s, running "
                    "initialization to %s.", self._model_dir, what)
    return latest

  def _evaluate_model(self, input_fn, hooks, checkpoint_path):
    if self._config.eval_distribute is not None:  # RunConfig(eval_distribute=...)
      return _distributed.evaluate(self, input_fn, hooks, checkpoint_path)
    with tf.Graph().as_default():
      scaffold, update_op, final_ops_hook, all_hooks = self._evaluate_build_graph(
          input_fn, hooks)
      return self._evaluate_run(checkpoint_path, scaffold, update_op, final_ops_hook,
                                all_hooks)

  def _evaluate_build_graph(self, input_fn, hooks):
    """Builds the eval graph in the default graph (InMemoryEvaluatorHook reuses it).

    Returns:
      (scaffold, update_op, FinalOpsHook of the results, all eval hooks)
    """
    graph = tf.compat.v1.get_default_graph()
    tf.compat.v1.set_random_seed(self._config.tf_random_seed)
    global_step = tf.compat.v1.train.get_or_create_global_step(graph)
    features, labels, input_hooks = self._get_features_and_labels(input_fn, ModeKeys.EVAL)
    spec = self._call_model_fn(features, labels, ModeKeys.EVAL, self._config)
    if _LOSS_METRIC_KEY in spec.eval_metric_ops:
      raise ValueError(
          'Metric with name "loss" is not allowed, because Estimator already '
          "defines a default metric with the same name. Rename your metric.")
    values, updates = _metrics.metric_value_and_update_ops(spec.eval_metric_ops, graph)
    loss_value, loss_update = tf.compat.v1.metrics.mean(spec.loss)
    values[_LOSS_METRIC_KEY] = loss_value
    values[_GLOBAL_STEP_KEY] = global_step
    update_op = tf.group(loss_update, *updates)
    final_ops_hook = tf.compat.v1.train.FinalOpsHook(values)
    all_hooks = input_hooks + hooks + list(spec.evaluation_hooks) + [final_ops_hook]
    return spec.scaffold, update_op, final_ops_hook, all_hooks

  def _evaluate_run(self, checkpoint_path, scaffold, update_op, final_ops_hook, all_hooks):
    """Runs the eval graph built by _evaluate_build_graph; returns the results dict."""
    _check_restorable(scaffold, checkpoint_path)
    session_creator = tf.compat.v1.train.ChiefSessionCreator(
        scaffold=scaffold,
        checkpoint_filename_with_path=checkpoint_path,
        master=self._config.evaluation_master,
        config=self._session_config_for_local_run())
    _logging.info("Starting evaluation at %s", time.strftime("%Y-%m-%dT%H:%M:%S"))
    start = time.time()
    with tf.compat.v1.train.MonitoredSession(session_creator=session_creator,
                                             hooks=all_hooks) as session:
      while not session.should_stop():
        session.run(update_op)
    _logging.info("Inference Time : %.5fs", time.time() - start)
    _logging.info("Finished evaluation at %s", time.strftime("%Y-%m-%d-%H:%M:%S"))
    return final_ops_hook.final_ops_values

  def _session_config_for_local_run(self):
    # Evaluation and prediction run in-process; device filters meant for a
    # cluster worker would hide the local devices.
    config = tf.compat.v1.ConfigProto()
    config.CopyFrom(self._config.session_config)
    del config.device_filters[:]
    return config

  # -- predict ------------------------------------------------------------------
  def predict(self, input_fn, predict_keys=None, hooks=None, checkpoint_path=None,
              yield_single_examples=True):
    """Yields predictions for the features from input_fn.

    Args:
      input_fn: returns features (labels, if any, are ignored); prediction
        stops at end of input.
      predict_keys: list of prediction keys to return; all by default.
      hooks: list of `SessionRunHook` run during prediction.
      checkpoint_path: checkpoint to use; the latest one by default.
      yield_single_examples: yield one example at a time (True) or whole
        batches (False).

    Yields:
      A dict (or a value, if predictions is a single tensor) per example or batch.

    Raises:
      ValueError: a predict_key that model_fn does not predict, or batch sizes
        that disagree when yielding single examples.
    """
    hooks = _check_hooks_type(hooks, "Estimator.predict(hooks=...)")
    checkpoint_path = self._checkpoint_or_latest(checkpoint_path, "predict")
    with _quiet.quiet_deprecations(), tf.Graph().as_default() as graph:
      tf.compat.v1.set_random_seed(self._config.tf_random_seed)
      tf.compat.v1.train.get_or_create_global_step(graph)
      features, _, input_hooks = self._get_features_and_labels(input_fn, ModeKeys.PREDICT)
      spec = self._call_model_fn(features, None, ModeKeys.PREDICT, self._config)
      predictions = _extract_keys(spec.predictions, predict_keys)
      _check_restorable(spec.scaffold, checkpoint_path)
      session_creator = tf.compat.v1.train.ChiefSessionCreator(
          scaffold=spec.scaffold,
          checkpoint_filename_with_path=checkpoint_path,
          master=self._config.master if not self._config.cluster_spec.jobs else "",
          config=self._session_config_for_local_run())
      all_hooks = input_hooks + hooks + list(spec.prediction_hooks)
      with tf.compat.v1.train.MonitoredSession(session_creator=session_creator,
                                               hooks=all_hooks) as session:
        while not session.should_stop():
          batch = session.run(predictions)
          if not yield_single_examples:
            yield batch
          elif not isinstance(batch, dict):
            for row in batch:
              yield row
          else:
            for i in range(_batch_length(batch)):
              yield {key: value[i] for key, value in batch.items()}

  # -- export -------------------------------------------------------------------
  def export_saved_model(self, export_dir_base, serving_input_receiver_fn,
                         assets_extra=None, as_text=False, checkpoint_path=None,
                         experimental_mode=ModeKeys.PREDICT):
    """Exports the serving graph and a checkpoint as a SavedModel.

    Calls serving_input_receiver_fn and model_fn (PREDICT) in a fresh graph,
    restores the checkpoint, and writes a SavedModel (tag 'serve', one
    signature per export output, `serving_default` included) into a new
    numeric version directory under export_dir_base, written to a `temp-`
    sibling first and renamed into place when complete.

    Args:
      export_dir_base: directory in which to create the version directory.
      serving_input_receiver_fn: no-argument function returning a
        `ServingInputReceiver` or `TensorServingInputReceiver`.
      assets_extra: dict of destination path (relative to assets.extra/) to
        source file, or None.
      as_text: write the SavedModel proto in text format.
      checkpoint_path: checkpoint to export; the latest one by default.
      experimental_mode: only `ModeKeys.PREDICT` is supported.

    Returns:
      The path of the new export directory, a str.

    Raises:
      ValueError: no serving_input_receiver_fn, no checkpoint, or variables
        missing from the checkpoint.
    """
    return _saved_model_writer.export_saved_model(
        self, export_dir_base, serving_input_receiver_fn,
        assets_extra=assets_extra, as_text=as_text,
        checkpoint_path=checkpoint_path, mode=experimental_mode,
        strip_default_attrs=True)

  def export_savedmodel(self, export_dir_base, serving_input_receiver_fn,
                        assets_extra=None, as_text=False, checkpoint_path=None,
                        strip_default_attrs=False):
    """Deprecated name of export_saved_model (tf.estimator v1); same arguments.

    Returns:
      The path of the new export directory, a str.
    """
    _logging.warning("Estimator.export_savedmodel is deprecated; use "
                     "export_saved_model instead.")
    return _saved_model_writer.export_saved_model(
        self, export_dir_base, serving_input_receiver_fn,
        assets_extra=assets_extra, as_text=as_text,
        checkpoint_path=checkpoint_path, strip_default_attrs=strip_default_attrs)


_INCREMENT_OP_TYPES = ("AssignAddVariableOp", "AssignAdd")


def _read_step_before_increment(graph):
  """Returns the global step read that hooks fetch, ordered before its increment.

  The optimizer's increment of the global step and the read that hooks
  (StepCounterHook, LoggingTensorHook, the NaN guard) fetch run in the same
  Session.run with nothing ordering them, so a hook could see either value
  (tf.estimator too: its "global step has not been increased" warnings). A
  control edge from the read to each increment makes every hook see the step
  as it was when the step ran.
  """
  global_step = tf.compat.v1.train.get_global_step(graph)
  read = training_util._get_or_create_global_step_read(graph)  # pylint: disable=protected-access
  handle = getattr(global_step, "handle", None)
  targets = {t.name for t in (handle, global_step._ref() if handle is None else None)  # pylint: disable=protected-access
             if t is not None}
  for op in graph.get_operations():
    if (op.type in _INCREMENT_OP_TYPES and op.inputs and op.inputs[0].name in targets and
        read.op not in op.control_inputs):
      op._add_control_inputs([read.op])  # pylint: disable=protected-access
  return read


def _check_restorable(scaffold, checkpoint_path):
  # Only the default Saver restores every global variable; a model_fn's own
  # Saver may restore a subset on purpose.
  if scaffold.saver is None and not tf.compat.v1.get_collection(
      tf.compat.v1.GraphKeys.SAVERS):
    _checkpointing.check_checkpoint_matches_graph(
        checkpoint_path, tf.compat.v1.get_default_graph())


def _extract_keys(predictions, predict_keys):
  if not predict_keys:  # None or empty: every prediction, as tf.estimator
    return predictions
  if isinstance(predict_keys, str):
    predict_keys = [predict_keys]
  if not isinstance(predictions, dict):
    raise ValueError(
        f"predict_keys argument is not valid in case of non-dict predictions "
        f"({predictions!r}); model_fn returned a single tensor.")
  missing = [k for k in predict_keys if k not in predictions]
  kept = {key: predictions[key] for key in predict_keys if key in predictions}
  if not kept:
    raise ValueError(
        f"Expected to run at least one output from {sorted(predictions)}, provided "
        f"{list(predict_keys)}: none of them is among the predictions.")
  if missing:
    # tf.estimator dropped unknown keys silently; a typo deserves a word.
    _logging.warning("predict_keys %s are not among the predictions %s; predicting %s.",
                     missing, sorted(predictions), sorted(kept))
  return kept


def _batch_length(batch):
  length = None
  for key, value in batch.items():
    size = np.shape(value)[0] if np.ndim(value) else None
    if size is None:
      raise ValueError(
          f"Prediction {key!r} is a scalar; with yield_single_examples=True every "
          "prediction needs a batch dimension. Use yield_single_examples=False.")
    if length is not None and size != length:
      raise ValueError(
          f"Batch length of predictions should be same. {key!r} has length {size}, "
          f"others {length}. Use yield_single_examples=False.")
    length = size
  return length or 0
