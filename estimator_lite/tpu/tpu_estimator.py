"""TPUEstimator on CPU and GPU: tf.estimator 2.15's `use_tpu=False` fallback, on the public Estimator.

With `use_tpu=False` tf.estimator 2.15's TPUEstimator was an Estimator whose
input_fn and model_fn receive `params["batch_size"]` (the global batch size of
the mode), whose model_fn also receives `params["use_tpu"] = False` and may
return a `TPUEstimatorSpec`, and whose step-rate log is ExamplesPerSecondHook's.
This module is that, built on `estimator_lite.Estimator`:

* `TPUEstimator._tpu_input_fn` wraps the user's input_fn: it adds the batch
  size and marks the graph it is called in;
* the model_fn given to Estimator adds the params (none of the batch size in
  an export graph: no input_fn ran there, as 2.15 told the two apart), calls
  the user's model_fn and turns a TPUEstimatorSpec into the EstimatorSpec that
  runs (`TPUEstimatorSpec.as_estimator_spec`), and adds the step-rate hook.

What needs a TPU (use_tpu=True, TPU embeddings, a TPU-only export) is refused
when the TPUEstimator is built, with the text 2.15 raised where it had one.
"""
from __future__ import annotations

import contextlib
import enum
import math
import weakref
from typing import Any, Callable, Dict, Iterator, Optional, Sequence

import attrs
import tensorflow as tf

from estimator_lite._graph import input_fn as input_fn_lib
from estimator_lite._graph.model_fn import ModelFn
from estimator_lite._util import fn_args
from estimator_lite.estimator import Estimator
from estimator_lite.estimator import ExportPath
from estimator_lite.estimator_spec import EstimatorSpec
from estimator_lite.mode_keys import ModeKeys
from estimator_lite.tpu import host_calls
from estimator_lite.tpu import tpu_config as tpu_config_lib
from estimator_lite.tpu.examples_per_second import ExamplesPerSecondHook
from estimator_lite.tpu.tpu_estimator_spec import TPUEstimatorSpec

_logging = tf.compat.v1.logging
_BATCH_SIZE_KEY = "batch_size"
_USE_TPU_KEY = "use_tpu"
_CTX_KEY = "context"
_RESERVED_PARAMS_KEYS = [_BATCH_SIZE_KEY, _CTX_KEY]
_BATCH_SIZE_ARGUMENT = {ModeKeys.TRAIN: "train_batch_size", ModeKeys.EVAL: "eval_batch_size",
                        ModeKeys.PREDICT: "predict_batch_size"}

_USE_TPU_TRUE_ERROR = (
    "Cannot find any TPU cores in the system. TPUEstimator(use_tpu=True) runs on a TPU, and "
    "estimator_lite runs TPUEstimator on CPU and GPU only, as tf.estimator 2.15 did with "
    "use_tpu=False: pass use_tpu=False (as those programs' --use_tpu=False flag does) and "
    "the same program trains, evaluates, predicts and exports on CPU/GPU, with "
    "params['batch_size'] the global batch size. For TPUs, use tf.distribute.TPUStrategy.")
_EMBEDDING_ERROR = (
    "TPUEstimator(embedding_config_spec=...): TPU embeddings (tf.compat.v1.estimator.tpu."
    "experimental.EmbeddingConfigSpec) need a TPU's embedding engine, which estimator_lite "
    "does not drive. Pass embedding_config_spec=None and build the same features with "
    "tf.compat.v1.feature_column.embedding_column (or shared_embedding_columns) in "
    "model_fn: on CPU/GPU they train the same embedding tables.")
_TPU_ONLY_EXPORT_ERROR = (
    "TPUEstimator(export_to_cpu=False, export_to_tpu=True) exports a MetaGraph for serving "
    "on a TPU only (tags 'serve', 'tpu'), which estimator_lite does not build. Pass "
    "export_to_cpu=True (the default) to export the MetaGraph for serving on CPU/GPU "
    "(tag 'serve').")


class ExportSavedModelApiVersion(enum.Enum):
  """How tf.estimator 2.15 built a TPU export (V1: for the user; V2: in model_fn)."""
  V1 = 1
  V2 = 2


class _ParamsWithoutBatchSize(dict):
  """Params of a mode whose batch size was not given: `params["batch_size"]` says which argument.

  2.15 left the key out, and the input_fn failed with a bare KeyError.
  """

  def __init__(self, params: Dict[str, Any], argument: str):
    super().__init__(params)
    self.argument = argument

  def __missing__(self, key: Any) -> Any:
    if key == _BATCH_SIZE_KEY:
      raise KeyError(f"'batch_size': TPUEstimator was built without {self.argument}, so "
                     f"params has no 'batch_size' here. Pass TPUEstimator({self.argument}=N), "
                     "the global batch size.")
    raise KeyError(key)

  def __reduce__(self) -> Any:
    return (type(self), (dict(self), self.argument))


def _root_graph(graph: tf.Graph) -> tf.Graph:
  """The tf.Graph a function graph (a loop body, say) is built inside."""
  while getattr(graph, "outer_graph", None) is not None:
    graph = graph.outer_graph
  return graph


class TPUEstimator(Estimator):
  """Estimator with TPU support (tf.estimator 2.15's), run on CPU and GPU with `use_tpu=False`.

  TPUEstimator transforms a global batch size in params to a per-shard batch
  size when calling the `input_fn` and `model_fn`; without a TPU there is one
  shard, so `params["batch_size"]` is the global batch size of the mode:
  `train_batch_size` for training, `eval_batch_size` for evaluation,
  `predict_batch_size` for prediction (and none in an export graph). The
  model_fn also gets `params["use_tpu"]`, False. Both must take `params`.

  model_fn returns a `TPUEstimatorSpec` (or an `EstimatorSpec`): its
  `eval_metrics`, `host_call` and `scaffold_fn` run as 2.15 ran them on CPU
  (see TPUEstimatorSpec). Training logs `global_step/sec` and `examples/sec`
  (and writes them as events) every `ceil(log_step_count_steps /
  iterations_per_loop)` steps, and not the loss, as 2.15 did.

  `export_saved_model` writes the MetaGraph for CPU/GPU serving (tag 'serve');
  the MetaGraph for serving on a TPU, which 2.15 added with export_to_tpu=True,
  is not written.

  Args:
    model_fn: `(features, labels, mode, params[, config]) -> TPUEstimatorSpec`.
    model_dir: as Estimator's.
    config: a `estimator_lite.tpu.RunConfig` (required).
    params: dict of hyperparameters for input_fn and model_fn; may not hold
      'batch_size' or 'context'.
    use_tpu: must be False: estimator_lite runs on CPU/GPU.
    train_batch_size: the global training batch size.
    eval_batch_size: the evaluation batch size.
    predict_batch_size: the prediction batch size.
    batch_axis: how a TPU splits the inputs; unused on CPU/GPU.
    eval_on_tpu: ignored with use_tpu=False (logged, as in 2.15).
    export_to_tpu: 2.15 also exported a TPU serving MetaGraph; not written here.
    export_to_cpu: export the MetaGraph for CPU/GPU serving; must be True
      when export_to_tpu is.
    warm_start_from: as Estimator's.
    embedding_config_spec: TPU embeddings; must be None.
    export_saved_model_api_version: `ExportSavedModelApiVersion` (or 1, 2);
      how 2.15 built a TPU export, so checked and otherwise unused.

  Raises:
    ValueError: config is not a tpu.RunConfig, params hold a reserved key, a
      batch size or setting 2.15 refused, TPU embeddings, or a TPU-only export.
    RuntimeError: use_tpu=True.
    TypeError: a batch size that is not an int (with use_tpu=True, as 2.15).
  """

  def __init__(self, model_fn: Optional[Callable[..., Any]] = None, model_dir: Any = None,
               config: Optional[tpu_config_lib.RunConfig] = None,
               params: Optional[Dict[str, Any]] = None, use_tpu: bool = True,
               train_batch_size: Optional[int] = None, eval_batch_size: Optional[int] = None,
               predict_batch_size: Optional[int] = None, batch_axis: Any = None,
               eval_on_tpu: bool = True, export_to_tpu: bool = True, export_to_cpu: bool = True,
               warm_start_from: Any = None, embedding_config_spec: Any = None,
               export_saved_model_api_version: Any = ExportSavedModelApiVersion.V1):
    # 2.15's checks in its order (programs and their tests match on its
    # texts), then what needs a TPU.
    if config is None or not isinstance(config, tpu_config_lib.RunConfig):
      raise ValueError("`config` must be provided with type `tpu_config.RunConfig`: pass "
                       "estimator_lite.tpu.RunConfig(...) (tf.compat.v1.estimator.tpu."
                       f"RunConfig), given {config!r}.")
    if params is not None and any(k in params for k in _RESERVED_PARAMS_KEYS):
      raise ValueError(f"{_RESERVED_PARAMS_KEYS} are reserved keys but existed in params "
                       f"{params}. TPUEstimator sets params['batch_size'] from "
                       "train_batch_size / eval_batch_size / predict_batch_size.")
    if use_tpu:
      _check_tpu_arguments(config, train_batch_size, eval_batch_size, predict_batch_size,
                           embedding_config_spec)
    if (not (use_tpu and eval_on_tpu) and embedding_config_spec and
        embedding_config_spec.partition_strategy == "mod"):
      raise ValueError("Mod sharding of embedding tables not supported on CPU. Use "
                       "partition_strategy='div'.")
    # Checked as Estimator checks a model_fn (2.15 did, before wrapping it).
    self._user_model = ModelFn.wrap(model_fn, params, to_estimator_spec=_to_estimator_spec)
    if use_tpu:
      raise RuntimeError(_USE_TPU_TRUE_ERROR)
    if embedding_config_spec is not None:
      raise ValueError(_EMBEDDING_ERROR)
    if export_to_tpu and not export_to_cpu:
      raise ValueError(_TPU_ONLY_EXPORT_ERROR)
    if not (isinstance(export_saved_model_api_version, ExportSavedModelApiVersion)
            or export_saved_model_api_version in (1, 2)):
      raise ValueError("export_saved_model_api_version should be 1 or 2; got "
                       f"{export_saved_model_api_version}.")
    self._batch_sizes = {ModeKeys.TRAIN: train_batch_size, ModeKeys.EVAL: eval_batch_size,
                         ModeKeys.PREDICT: predict_batch_size}
    self._export_to_cpu = export_to_cpu
    self._export_to_tpu = export_to_tpu
    # Graphs in which the input_fn ran: a model_fn call in another graph is an export's.
    self._input_graphs: "weakref.WeakSet[tf.Graph]" = weakref.WeakSet()
    iterations = tpu_config_lib.parse_iterations_per_loop(config.tpu_config.iterations_per_loop)
    # Estimator's own loss log and step counter are off; ExamplesPerSecondHook
    # reports the rate instead, every log_step_count_steps / iterations_per_loop
    # steps (a TPU ran iterations_per_loop steps a session run), as 2.15 did.
    self._log_every_n_secs: Optional[int] = None
    self._log_every_n_steps: Optional[int] = None
    if iterations.unit == "seconds":
      self._log_every_n_secs = iterations.value
    elif config.log_step_count_steps is not None:
      self._log_every_n_steps = int(math.ceil(config.log_step_count_steps / iterations.value))
    super().__init__(model_fn=self._cpu_model_fn, model_dir=model_dir,
                     config=config.replace(log_step_count_steps=None), params=params or {},
                     warm_start_from=warm_start_from)
    _logging.info("_TPUContext: eval_on_tpu %s", eval_on_tpu)
    if eval_on_tpu:
      _logging.warning("eval_on_tpu ignored because use_tpu is False.")

  # -- input_fn and model_fn, as 2.15 called them on CPU ----------------------------
  def _tpu_input_fn(self, input_fn: Callable[..., Any], mode: str) -> Callable[..., Any]:
    """The input_fn Estimator calls: the user's, with params['batch_size'] added."""

    def tpu_input_fn(params: Dict[str, Any], config: Any,
                     input_context: Optional[tf.distribute.InputContext] = None) -> Any:
      if callable(input_fn) and "params" not in fn_args.fn_args(input_fn):
        raise ValueError(
            f"input_fn ({input_fn}) does not include params argument, required by "
            "TPUEstimator to pass batch size as params[\"batch_size\"]. Add a params "
            "argument: def input_fn(params): batch_size = params['batch_size'] ...")
      self._input_graphs.add(_root_graph(tf.compat.v1.get_default_graph()))
      return input_fn_lib.call_input_fn(input_fn, mode, self._with_batch_size(params, mode),
                                        config, input_context)

    return tpu_input_fn

  def _with_batch_size(self, params: Dict[str, Any], mode: str) -> Dict[str, Any]:
    batch_size = self._batch_sizes.get(mode)
    if batch_size is None:
      return _ParamsWithoutBatchSize(params, _BATCH_SIZE_ARGUMENT.get(mode, "a batch size"))
    return dict(params, **{_BATCH_SIZE_KEY: batch_size})

  def _cpu_model_fn(self, features: Any, labels: Any, mode: str, config: Any,
                    params: Dict[str, Any]) -> EstimatorSpec:
    """The model_fn Estimator calls: the user's, with 2.15's params, its spec made an EstimatorSpec."""
    graph = _root_graph(tf.compat.v1.get_default_graph())
    is_export = graph not in self._input_graphs
    if not is_export:
      params = self._with_batch_size(params, mode)
    params[_USE_TPU_KEY] = False
    if "params" not in self._user_model.accepted_args:
      raise ValueError(
          f"model_fn ({self._user_model.function}) does not include params argument, "
          "required by TPUEstimator to pass batch size as params['batch_size']. Add a "
          "params argument to model_fn.")
    _logging.info("Running %s on CPU/GPU", mode)
    user_model = attrs.evolve(self._user_model, params=params)
    spec = user_model(features, labels, mode, config, announce=False)
    if config.steps_per_loop > 1 and any(
        isinstance(hook, host_calls.HostCallHook) for hook in spec.training_hooks):
      raise ValueError(
          f"TPUEstimatorSpec.host_call with RunConfig(steps_per_loop={config.steps_per_loop}): "
          "host_call's result runs every step, and with steps_per_loop > 1 model_fn's "
          "tensors live inside the in-graph loop, where a session cannot fetch them. "
          "Leave steps_per_loop at 1 (the default) for a model_fn with a host_call.")
    if self._log_every_n_steps is None and self._log_every_n_secs is None:
      return spec
    rate_hook = ExamplesPerSecondHook(
        None if is_export else self._batch_sizes.get(mode),
        output_dir=self.model_dir if config.save_summary_steps and config.is_chief else None,
        every_n_steps=self._log_every_n_steps, every_n_secs=self._log_every_n_secs)
    return spec.replace(training_hooks=spec.training_hooks + (rate_hook,))

  # -- train, evaluate, predict: the input_fn wrapped ---------------------------------
  def train(self, input_fn: Callable[..., Any],
            hooks: Optional[Sequence[tf.compat.v1.train.SessionRunHook]] = None,
            steps: Optional[int] = None, max_steps: Optional[int] = None,
            saving_listeners: Optional[Sequence[Any]] = None) -> "TPUEstimator":
    """As `Estimator.train`; input_fn gets params['batch_size'] = train_batch_size.

    Returns:
      self.
    """
    with _loop_logged("training_loop"):
      super().train(self._tpu_input_fn(input_fn, ModeKeys.TRAIN), hooks=hooks, steps=steps,
                    max_steps=max_steps, saving_listeners=saving_listeners)
    return self

  def evaluate(self, input_fn: Callable[..., Any], steps: Optional[int] = None,
               hooks: Optional[Sequence[tf.compat.v1.train.SessionRunHook]] = None,
               checkpoint_path: Any = None, name: Optional[str] = None) -> Dict[str, Any]:
    """As `Estimator.evaluate`; input_fn gets params['batch_size'] = eval_batch_size.

    Returns:
      dict with `loss`, each metric, and `global_step`.
    """
    with _loop_logged("evaluation_loop"):
      return super().evaluate(self._tpu_input_fn(input_fn, ModeKeys.EVAL), steps=steps,
                              hooks=hooks, checkpoint_path=checkpoint_path, name=name)

  def predict(self, input_fn: Callable[..., Any], predict_keys: Optional[Sequence[str]] = None,
              hooks: Optional[Sequence[tf.compat.v1.train.SessionRunHook]] = None,
              checkpoint_path: Any = None, yield_single_examples: bool = True) -> Iterator[Any]:
    """As `Estimator.predict`; input_fn gets params['batch_size'] = predict_batch_size.

    Yields:
      Predictions, as Estimator.predict yields them.
    """
    with _loop_logged("prediction_loop"):
      yield from super().predict(
          self._tpu_input_fn(input_fn, ModeKeys.PREDICT), predict_keys=predict_keys,
          hooks=hooks, checkpoint_path=checkpoint_path,
          yield_single_examples=yield_single_examples)

  # -- export: the CPU MetaGraph ------------------------------------------------------
  def _check_export(self, modes: Sequence[str]) -> None:
    """2.15's export_to_cpu/export_to_tpu rules, before anything is written.

    Raises:
      ValueError: neither export_to_cpu nor export_to_tpu.
    """
    if not self._export_to_cpu and not self._export_to_tpu:
      raise ValueError("One of export_to_cpu and export_to_tpu must be true. Pass "
                       "export_to_cpu=True to TPUEstimator to export for CPU/GPU serving.")
    if not self._export_to_tpu:
      return
    for mode in modes:
      if mode != ModeKeys.PREDICT:
        _logging.warning(
            "TPUEstimator only handles mode PREDICT for exporting when `export_to_tpu` is "
            "`True`; Mode %s will be ignored for TPU.", mode)
    if ModeKeys.PREDICT in modes:
      _logging.info("export_to_tpu=True: the MetaGraph for serving on a TPU (tags 'serve', "
                    "'tpu') is not written; estimator_lite exports the MetaGraph for CPU/GPU "
                    "serving (tag 'serve').")

  def export_saved_model(self, export_dir_base: ExportPath,
                         serving_input_receiver_fn: Callable[[], Any],
                         assets_extra: Optional[Dict[str, str]] = None, as_text: bool = False,
                         checkpoint_path: Any = None,
                         experimental_mode: str = ModeKeys.PREDICT) -> bytes:
    """As `Estimator.export_saved_model` (tag 'serve'; model_fn gets no params['batch_size']).

    Returns:
      The export directory, as bytes.
    """
    self._check_export([experimental_mode])
    return super().export_saved_model(export_dir_base, serving_input_receiver_fn,
                                      assets_extra=assets_extra, as_text=as_text,
                                      checkpoint_path=checkpoint_path,
                                      experimental_mode=experimental_mode)

  def export_savedmodel(self, export_dir_base: ExportPath,
                        serving_input_receiver_fn: Callable[[], Any],
                        assets_extra: Optional[Dict[str, str]] = None, as_text: bool = False,
                        checkpoint_path: Any = None, strip_default_attrs: bool = False) -> bytes:
    """As `Estimator.export_savedmodel`.

    Returns:
      The export directory, as bytes.
    """
    self._check_export([ModeKeys.PREDICT])
    return super().export_savedmodel(export_dir_base, serving_input_receiver_fn,
                                     assets_extra=assets_extra, as_text=as_text,
                                     checkpoint_path=checkpoint_path,
                                     strip_default_attrs=strip_default_attrs)

  def experimental_export_all_saved_models(
      self, export_dir_base: ExportPath, input_receiver_fn_map: Dict[str, Callable[[], Any]],
      assets_extra: Optional[Dict[str, str]] = None, as_text: bool = False,
      checkpoint_path: Any = None) -> bytes:
    """As `Estimator.experimental_export_all_saved_models`.

    Returns:
      The export directory, as bytes.
    """
    self._check_export([mode for mode in input_receiver_fn_map])
    return super().experimental_export_all_saved_models(
        export_dir_base, input_receiver_fn_map, assets_extra=assets_extra, as_text=as_text,
        checkpoint_path=checkpoint_path)


def _to_estimator_spec(spec: Any) -> Any:
  """What 2.15 ran on CPU: a TPUEstimatorSpec's EstimatorSpec; any other spec as it is."""
  if isinstance(spec, TPUEstimatorSpec):
    return spec.as_estimator_spec()
  return spec


def _check_tpu_arguments(config: tpu_config_lib.RunConfig, train_batch_size: Any,
                         eval_batch_size: Any, predict_batch_size: Any,
                         embedding_config_spec: Any) -> None:
  """2.15's checks of a use_tpu=True TPUEstimator's arguments (raised before the refusal)."""
  if train_batch_size is None:
    raise ValueError("`train_batch_size` cannot be `None`")
  tpu_config_lib.check_positive_integer(train_batch_size, "train_batch_size")
  if (config.tpu_config.per_host_input_for_training is
      tpu_config_lib.InputPipelineConfig.PER_SHARD_V1 and
      config.tpu_config.num_cores_per_replica):
    raise ValueError("Model parallelism only supports per host input for training. "
                     "Please adjust TPURunconfig.per_host_input_for_training.")
  if eval_batch_size is not None:
    tpu_config_lib.check_positive_integer(eval_batch_size, "eval_batch_size")
  if predict_batch_size is not None:
    tpu_config_lib.check_positive_integer(predict_batch_size, "predict_batch_size")
  per_host_input = config.tpu_config.per_host_input_for_training
  if embedding_config_spec and per_host_input not in (
      tpu_config_lib.InputPipelineConfig.PER_HOST_V1,
      tpu_config_lib.InputPipelineConfig.PER_HOST_V2):
    raise ValueError("Only PER_HOST_V1 and PER_HOST_V2 is supported when using TPU "
                     f"Embedding; got {per_host_input}.")


@contextlib.contextmanager
def _loop_logged(name: str) -> Iterator[None]:
  """2.15's log of a finished loop ("training_loop marked as finished"), after an error too."""
  failed = False
  try:
    yield
  except Exception:
    failed = True
    raise
  finally:
    _logging.info("%s marked as finished", name)
    if failed:
      _logging.warning("Reraising captured error")
