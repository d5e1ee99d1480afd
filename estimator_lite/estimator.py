"""Estimator: trains, evaluates, predicts and exports a model_fn, each call in a fresh graph.

The public class only checks its arguments and hands the work to the layer
below: estimator_lite/_graph builds the graphs (input_fn and model_fn are
called there, through `ModelFn`), estimator_lite/_session runs them.
"""
from __future__ import annotations

import copy
import os
import tempfile
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Union

import tensorflow as tf

from estimator_lite import warm_starting
from estimator_lite._graph.model_fn import ModelFn
from estimator_lite._session import eval_session
from estimator_lite._session import prediction
from estimator_lite._session import training_session
from estimator_lite._util import validation
from estimator_lite._session import export_session
from estimator_lite.mode_keys import ModeKeys
from estimator_lite.run_config import RunConfig
from estimator_lite.run_config import TaskType

_logging = tf.compat.v1.logging
PathLike = Union[str, "os.PathLike[str]"]
# Export bases may also be bytes: tf.estimator returned export paths as bytes.
ExportPath = Union[str, bytes, "os.PathLike[str]"]


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
    ValueError: config is not a RunConfig, model_dir disagrees with
      config.model_dir, model_fn is None or its arguments are unusable, params
      are given to a model_fn without `params`, or warm_start_from is neither a
      path nor a WarmStartSettings.
    TypeError: model_fn is not callable.
  """

  def __init__(self, model_fn: Callable[..., Any], model_dir: Optional[PathLike] = None,
               config: Optional[RunConfig] = None, params: Optional[Dict[str, Any]] = None,
               warm_start_from: Union[None, PathLike, warm_starting.WarmStartSettings] = None):
    # tf.estimator's order: the config and model_dir first, then model_fn,
    # then warm_start_from; its texts, each followed by what to do.
    if config is None:
      config = RunConfig()
    elif not isinstance(config, RunConfig):
      raise ValueError(
          f"config must be an instance of `RunConfig`, but provided {config}. Pass "
          "estimator_lite.RunConfig(...) or None.")
    if model_dir is not None:
      model_dir = os.fspath(model_dir)
    if model_dir and config.model_dir and model_dir != config.model_dir:
      raise ValueError(
          "`model_dir` are set both in constructor and `RunConfig`, but with different "
          f"values. In constructor: '{model_dir}', in `RunConfig`: '{config.model_dir}' "
          "Set it in one place only.")
    model = ModelFn.wrap(model_fn, params)
    model_dir = model_dir or config.model_dir
    if not model_dir:
      model_dir = tempfile.mkdtemp()
      _logging.warning("Using temporary folder as model directory: %s", model_dir)
    if config.model_dir != model_dir:
      config = config.replace(model_dir=model_dir)
    _logging.info("Using config: %r", config)
    self._model = model
    self._config = config
    self._model_dir = model_dir
    self._warm_start_settings = warm_starting.resolve(warm_start_from)

  # -- properties ---------------------------------------------------------------
  @property
  def model_dir(self) -> str:
    return self._model_dir

  @property
  def config(self) -> RunConfig:
    return copy.deepcopy(self._config)

  @property
  def params(self) -> Dict[str, Any]:
    return copy.deepcopy(self._model.params)

  @property
  def model_fn(self) -> ModelFn:
    """The model_fn with this Estimator's params: `model_fn(features, labels, mode, config)`."""
    return self._model

  @property
  def warm_start_settings(self) -> Optional[warm_starting.WarmStartSettings]:
    """What `warm_start_from` resolved to (None without one); wrappers pass it on."""
    return self._warm_start_settings

  # -- checkpoint access --------------------------------------------------------
  def latest_checkpoint(self) -> Optional[str]:
    """Returns the path of the newest checkpoint in model_dir as str, or None."""
    return tf.train.latest_checkpoint(self.model_dir)

  def get_variable_names(self) -> List[str]:
    """Returns the names of all variables in the latest checkpoint.

    Raises:
      ValueError: no checkpoint in model_dir yet.
    """
    self._require_checkpoint()
    return [name for name, _ in tf.train.list_variables(self.model_dir)]

  def get_variable_value(self, name: str) -> Any:
    """Returns the value of variable `name` in the latest checkpoint (numpy).

    Raises:
      ValueError: no checkpoint in model_dir yet.
    """
    self._require_checkpoint()
    return tf.train.load_variable(self.model_dir, name)

  def eval_dir(self, name: Optional[str] = None) -> str:
    """Returns the directory evaluate(name=...) writes its events to."""
    return os.path.join(self.model_dir, "eval" if not name else "eval_" + name)

  def _require_checkpoint(self) -> None:
    if not self.latest_checkpoint():
      raise ValueError(
          f"Could not find trained model in model_dir: {self.model_dir}. Train first "
          "(Estimator.train) or point model_dir at a directory with checkpoints.")

  def _checkpoint_or_latest(self, checkpoint_path: Optional[PathLike], what: str) -> Optional[str]:
    if checkpoint_path:
      return os.fspath(checkpoint_path)
    latest = self.latest_checkpoint()
    if not latest:
      _logging.info("Could not find trained model in model_dir: %s, running "
                    "initialization to %s.", self._model_dir, what)
    return latest

  def _apply_warm_start(self) -> Optional[Callable[[], None]]:
    """Applies warm_start_from in the current graph; evaluate/predict call it with no checkpoint."""
    settings = self._warm_start_settings
    if settings is None:
      return None
    return lambda: warm_starting.apply(settings)

  # -- train, evaluate, predict -------------------------------------------------
  def train(self, input_fn: Callable[..., Any],
            hooks: Optional[Sequence[tf.compat.v1.train.SessionRunHook]] = None,
            steps: Optional[int] = None, max_steps: Optional[int] = None,
            saving_listeners: Optional[Sequence[tf.compat.v1.train.CheckpointSaverListener]] = None
            ) -> "Estimator":
    """Trains the model on data from input_fn.

    Args:
      input_fn: returns a `tf.data.Dataset` of (features, labels) or a
        (features, labels) tuple; may take params, config, mode, input_context.
      hooks: list of `SessionRunHook` run during training.
      steps: train this many more steps (adds to the restored step); a
        fraction rounds up, as tf.estimator stopped at the first step >= it.
      max_steps: train until the global step reaches this (a fraction rounds
        up); returns at once if the latest checkpoint is already there.
      saving_listeners: `CheckpointSaverListener`s called around each save.

    Returns:
      self, for chaining.

    Raises:
      ValueError: this process is an evaluator or ps task (run
        train_and_evaluate there), both steps and max_steps, or a non-positive one.
      TypeError: a hook or listener of the wrong type, or steps / max_steps
        not a number.
      NanLossDuringTrainingError: the loss became NaN.
      Preempted: SIGTERM was received; the checkpoint at the current step is saved.
    """
    if self._config.task_type in (TaskType.EVALUATOR, TaskType.PS):
      raise ValueError(
          "Train has been called wrong configuration. Please use "
          "tf.estimator.train_and_evaluate which calls proper API according to given "
          f"configuration. Current configuration: {self._config}. In estimator_lite: "
          f"estimator_lite.train_and_evaluate; a {self._config.task_type} task does not train.")
    if steps is not None and max_steps is not None:
      raise ValueError(
          f"Can not provide both steps and max_steps. Given steps={steps!r}, "
          f"max_steps={max_steps!r}: steps adds to the restored step; max_steps is absolute.")
    steps = validation.check_step_count("steps", steps, unbounded_ok=True)
    max_steps = validation.check_step_count("max_steps", max_steps, unbounded_ok=True)
    if training_session.max_steps_reached(self._model_dir, max_steps):
      return self
    training_session.train(
        self._model, input_fn, self._config, self._model_dir, self._model.params,
        hooks=validation.check_hooks(hooks, "Estimator.train(hooks=...)",
                                     validation.ESTIMATOR_HOOKS_ERROR),
        saving_listeners=validation.check_saving_listeners(
            saving_listeners, validation.ESTIMATOR_LISTENERS_ERROR),
        steps=steps, max_steps=max_steps, warm_start=self._warm_start_settings)
    return self

  def evaluate(self, input_fn: Callable[..., Any], steps: Optional[int] = None,
               hooks: Optional[Sequence[tf.compat.v1.train.SessionRunHook]] = None,
               checkpoint_path: Optional[PathLike] = None,
               name: Optional[str] = None) -> Dict[str, Any]:
    """Evaluates the model on data from input_fn and writes eval[_NAME] events.

    An evaluation that runs long logs its progress every 10 seconds: the
    batches so far, and of how many (steps, or the dataset's size when
    tf.data knows it).

    Args:
      input_fn: as for train(); evaluation stops at end of input or `steps`.
      steps: number of batches to evaluate (a fraction rounds up); None runs
        until input ends, so input_fn must not return an infinite dataset
        (`repeat()` with no count).
      hooks: list of `SessionRunHook` run during evaluation.
      checkpoint_path: checkpoint to evaluate; the latest one by default. With
        no checkpoint at all, evaluates the initialised model, warm-started
        from `warm_start_from` if given (as tf.estimator).
      name: evaluation name; events go to model_dir/eval_NAME.

    Returns:
      dict with `loss`, each metric, and `global_step`.

    Raises:
      TypeError: a hook of the wrong type, a name that is not a string, or
        steps not a number.
      ValueError: steps <= 0 or NaN, a metric named "loss" or "global_step",
        or steps is None and input_fn returned a tf.data.Dataset whose
        cardinality is infinite (raised before the checkpoint is read; pass
        steps, or end the dataset: no `repeat()`, or `take(N)`).
      OverflowError: infinite steps.
    """
    hooks = validation.check_hooks(hooks, "Estimator.evaluate(hooks=...)",
                                   validation.ESTIMATOR_HOOKS_ERROR)
    steps = validation.check_step_count("steps", steps, unbounded_ok=False)
    if name is not None and not isinstance(name, str):
      # tf.estimator failed here with a TypeError of Python's; EvalSpec's text.
      raise TypeError(f"`name` must be string, given: {name}. It names the "
                      "evaluation's directory, model_dir/eval_NAME.")
    return eval_session.evaluate(
        self._model, input_fn, self._config, self._model.params, hooks=hooks, steps=steps,
        checkpoint_path=self._checkpoint_or_latest(checkpoint_path, "evaluate"),
        eval_dir=self.eval_dir(name), warm_start=self._apply_warm_start())

  def predict(self, input_fn: Callable[..., Any], predict_keys: Optional[Sequence[str]] = None,
              hooks: Optional[Sequence[tf.compat.v1.train.SessionRunHook]] = None,
              checkpoint_path: Optional[PathLike] = None,
              yield_single_examples: bool = True) -> Iterator[Any]:
    """Yields predictions for the features from input_fn.

    Args:
      input_fn: returns features (labels, if any, are ignored); prediction
        stops at end of input.
      predict_keys: list of prediction keys to return; all by default.
      hooks: list of `SessionRunHook` run during prediction.
      checkpoint_path: checkpoint to use; the latest one by default, else the
        initialised model, warm-started from `warm_start_from` if given.
      yield_single_examples: yield one example at a time (True) or whole
        batches (False).

    Yields:
      A dict (or a value, if predictions is a single tensor) per example or batch.

    Raises:
      TypeError: a hook of the wrong type.
      ValueError: a predict_key that model_fn does not predict, or batch sizes
        that disagree when yielding single examples.
    """
    hooks = validation.check_hooks(hooks, "Estimator.predict(hooks=...)",
                                   validation.ESTIMATOR_HOOKS_ERROR)
    yield from prediction.predict(
        self._model, input_fn, self._config, self._model.params, predict_keys=predict_keys,
        hooks=hooks, checkpoint_path=self._checkpoint_or_latest(checkpoint_path, "predict"),
        yield_single_examples=yield_single_examples, warm_start=self._apply_warm_start())

  # -- export -------------------------------------------------------------------
  def export_saved_model(self, export_dir_base: ExportPath,
                         serving_input_receiver_fn: Callable[[], Any],
                         assets_extra: Optional[Dict[str, str]] = None, as_text: bool = False,
                         checkpoint_path: Optional[PathLike] = None,
                         experimental_mode: str = ModeKeys.PREDICT) -> bytes:
    """Exports the serving graph (or, experimentally, another mode's) and a checkpoint as a SavedModel.

    Calls serving_input_receiver_fn and model_fn (PREDICT) in a fresh graph,
    restores the checkpoint, and writes a SavedModel (tag 'serve', one
    signature per export output, `serving_default` included) into a new
    numeric version directory under export_dir_base, written to a `temp-`
    sibling first and renamed into place when complete.

    Args:
      export_dir_base: directory in which to create the version directory.
      serving_input_receiver_fn: no-argument function returning a
        `ServingInputReceiver` or `TensorServingInputReceiver` (for
        experimental_mode TRAIN or EVAL, a `SupervisedInputReceiver`).
      assets_extra: dict of destination path (relative to assets.extra/) to
        source file, or None.
      as_text: write the SavedModel proto in text format.
      checkpoint_path: checkpoint to export; the latest one by default (or,
        before any training, the warm-start checkpoint).
      experimental_mode: the `ModeKeys` value of the graph to export; see
        `experimental_export_all_saved_models`.

    Returns:
      The path of the new export directory, as bytes (as tf.estimator).

    Raises:
      ValueError: no serving_input_receiver_fn, an unknown mode, no
        checkpoint, or variables missing from the checkpoint.
      TypeError: serving_input_receiver_fn is not callable.
    """
    return export_session.export_saved_model(
        self._model, self._config, export_dir_base, serving_input_receiver_fn,
        checkpoint_path=checkpoint_path, warm_start=self._warm_start_settings,
        assets_extra=assets_extra, as_text=as_text, mode=experimental_mode,
        strip_default_attrs=True)

  def experimental_export_all_saved_models(
      self, export_dir_base: ExportPath, input_receiver_fn_map: Dict[str, Callable[[], Any]],
      assets_extra: Optional[Dict[str, str]] = None, as_text: bool = False,
      checkpoint_path: Optional[PathLike] = None) -> bytes:
    """Exports one SavedModel with a MetaGraph for each mode in input_receiver_fn_map.

    For each mode, in the order TRAIN, EVAL, PREDICT, calls its receiver fn
    and model_fn in that mode in a fresh graph, restores the checkpoint, and
    adds the graph with tag 'train', 'eval' or 'serve'. The first one writes
    the variables; all share them. TRAIN and EVAL graphs have one signature
    ('train' / 'eval') fed by the receiver tensors (features and labels),
    with the loss, predictions and eval metrics as outputs; a TRAIN graph's
    train op is in the 'saved_model_train_op' collection. The PREDICT graph
    is what `export_saved_model` writes.

    Args:
      export_dir_base: directory in which to create the version directory.
      input_receiver_fn_map: dict of `ModeKeys` value to a no-argument
        function returning the mode's receiver: a `SupervisedInputReceiver`
        (e.g. from
        `estimator_lite.experimental.build_raw_supervised_input_receiver_fn`)
        for TRAIN and EVAL, a `ServingInputReceiver` for PREDICT.
      assets_extra: dict of destination path (relative to assets.extra/) to
        source file, or None.
      as_text: write the SavedModel proto in text format.
      checkpoint_path: checkpoint to export; the latest one by default.

    Returns:
      The path of the new export directory, as bytes (as tf.estimator).

    Raises:
      ValueError: no mode of ModeKeys in the map, no checkpoint, or variables
        missing from the checkpoint.
      TypeError: a receiver fn is not callable.
    """
    return export_session.export_all_saved_models(
        self._model, self._config, export_dir_base, input_receiver_fn_map,
        checkpoint_path=checkpoint_path, warm_start=self._warm_start_settings,
        assets_extra=assets_extra, as_text=as_text, strip_default_attrs=True)

  def export_savedmodel(self, export_dir_base: ExportPath,
                        serving_input_receiver_fn: Callable[[], Any],
                        assets_extra: Optional[Dict[str, str]] = None, as_text: bool = False,
                        checkpoint_path: Optional[PathLike] = None,
                        strip_default_attrs: bool = False) -> bytes:
    """Deprecated name of export_saved_model (tf.estimator v1); same arguments.

    Returns:
      The path of the new export directory, as bytes (as tf.estimator).
    """
    _logging.warning("Estimator.export_savedmodel is deprecated; use "
                     "export_saved_model instead.")
    return export_session.export_saved_model(
        self._model, self._config, export_dir_base, serving_input_receiver_fn,
        checkpoint_path=checkpoint_path, warm_start=self._warm_start_settings,
        assets_extra=assets_extra, as_text=as_text, strip_default_attrs=strip_default_attrs)
