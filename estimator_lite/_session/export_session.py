"""Estimator's SavedModel exports: a checkpoint and model_fn's graphs written as a TF1 SavedModel.

For each exported mode (TRAIN, EVAL, PREDICT, in that order): a fresh graph
with the receiver's placeholders, model_fn in that mode on its features (and
labels), the checkpoint restored by a Saver, and
`tf.compat.v1.saved_model.Builder` adding the MetaGraph (tag 'train', 'eval'
or 'serve') with its SignatureDefs. The first mode's graph writes the
variables; the others share them.
"""
from __future__ import annotations

import os
import time
from typing import Any, Callable, Dict, Mapping, Optional, Union

import tensorflow as tf

from estimator_lite._session import checkpoints
from estimator_lite._session import signatures
from estimator_lite._session import targets
from estimator_lite._util import export_dirs
from estimator_lite._util import quiet
from estimator_lite._util import tf_internals
from estimator_lite.export import export_output
from estimator_lite.export import receiver_fn_checks
from estimator_lite.mode_keys import ModeKeys

_logging = tf.compat.v1.logging
_ASSETS_EXTRA = "assets.extra"
# The modes in the order they are exported: TRAIN first, because the
# checkpoint was written by the training graph, so its variables (optimizer
# slots included) are the ones saved with the export.
EXPORT_ORDER = (ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT)
# The MetaGraph tag and default signature key of each mode, as tf.estimator
# wrote them (TensorFlow 2.21 exports 'serve' and 'train' tags only).
EXPORT_TAGS = {ModeKeys.TRAIN: ["train"], ModeKeys.EVAL: ["eval"],
               ModeKeys.PREDICT: [tf.compat.v1.saved_model.tag_constants.SERVING]}
SIGNATURE_KEYS = {ModeKeys.TRAIN: "train", ModeKeys.EVAL: "eval",
                  ModeKeys.PREDICT: "serving_default"}
# The collection of a TRAIN export's train op (TensorFlow's
# saved_model constants.TRAIN_OP_KEY, no longer public).
TRAIN_OP_KEY = "saved_model_train_op"

PathLike = Union[str, bytes, "os.PathLike[str]"]


def _check_assets_extra(assets_extra: Optional[dict]) -> Dict[str, str]:
  if assets_extra is None:
    return {}
  if not isinstance(assets_extra, dict):
    raise ValueError(
        f"assets_extra must be a dict of destination path (relative to "
        f"assets.extra/) to source file; given {assets_extra!r}.")
  checked = {}
  for dest, source in assets_extra.items():
    dest = os.fspath(dest)
    parts = dest.replace("\\", "/").split("/")
    if os.path.isabs(dest) or ".." in parts or not dest:
      raise ValueError(
          f"assets_extra key {dest!r} must be a relative path inside assets.extra/ "
          "(e.g. 'my_asset_file.txt'), without '..'.")
    source = os.fspath(source)
    if not tf.io.gfile.exists(source):
      raise ValueError(
          f"assets_extra[{dest!r}] = {source!r}: no such file. Give the full "
          "path of the file to copy.")
    checked[dest] = source
  return checked


def _call_receiver_fn(input_receiver_fn: Callable[[], Any], mode: str) -> Any:
  receiver = input_receiver_fn()
  missing = [f for f in ("features", "receiver_tensors") if not hasattr(receiver, f)]
  if missing:
    if mode == ModeKeys.PREDICT:
      expected = ("serving_input_receiver_fn must return a ServingInputReceiver or "
                  "TensorServingInputReceiver")
    else:
      expected = (f"the input_receiver_fn for mode {mode!r} must return a "
                  "SupervisedInputReceiver (or UnsupervisedInputReceiver), e.g. from "
                  "estimator_lite.experimental.build_raw_supervised_input_receiver_fn")
    raise ValueError(f"{expected}; it returned {receiver!r}.")
  return receiver


def _export_outputs(spec: Any, mode: str) -> Dict[str, export_output.ExportOutput]:
  """The signatures' outputs of `mode`'s graph, as tf.estimator chose them.

  PREDICT: the model's export_outputs (EstimatorSpec fills in
  serving_default). TRAIN and EVAL: one supervised signature with the loss,
  the predictions and the eval metrics.
  """
  if mode == ModeKeys.PREDICT:
    return dict(spec.export_outputs)
  output_class = (export_output.TrainOutput if mode == ModeKeys.TRAIN
                  else export_output.EvalOutput)
  return {SIGNATURE_KEYS[mode]: output_class(
      loss=spec.loss, predictions=spec.predictions, metrics=spec.eval_metric_ops or None)}


def _add_train_op(train_op: Any) -> None:
  """Keeps a TRAIN export's train op where a loader finds it, as tf.estimator did."""
  if train_op is None:
    return
  if isinstance(train_op, tf.Variable):
    # The collection holds tensors and operations; tf.estimator's EstimatorSpec
    # replaced a Variable train_op by its op.
    train_op = train_op.op
  tf.compat.v1.add_to_collection(TRAIN_OP_KEY, train_op)


def _add_meta_graph(builder: Any, model_fn: Callable[..., Any], config: Any,
                    input_receiver_fn: Callable[[], Any], mode: str, checkpoint_path: str,
                    save_variables: bool, strip_default_attrs: bool) -> None:
  with tf.Graph().as_default() as graph:
    tf.compat.v1.train.get_or_create_global_step(graph)
    tf.compat.v1.set_random_seed(config.tf_random_seed)
    receiver = _call_receiver_fn(input_receiver_fn, mode)
    spec = model_fn(receiver.features, getattr(receiver, "labels", None), mode, config)
    signature_def_map = signatures.build_signature_defs(
        receiver.receiver_tensors, _export_outputs(spec, mode),
        getattr(receiver, "receiver_tensors_alternatives", None),
        serving_only=mode == ModeKeys.PREDICT)
    scaffold = spec.scaffold
    # Tables (vocabulary lookups) and local variables are initialised by the
    # main op when a server loads the model; Scaffold's default does both.
    main_op = scaffold.local_init_op
    if main_op is None:
      main_op = tf.compat.v1.train.Scaffold.default_local_init_op()
    # The same saver restores now and is written into the MetaGraph, so a
    # custom saver from the Scaffold is what the loader uses too.
    saver = (tf_internals.name_based_saver(scaffold.saver) if scaffold.saver is not None
             else tf.compat.v1.train.Saver(sharded=True))
    if mode == ModeKeys.TRAIN:
      _add_train_op(spec.train_op)
    with tf.compat.v1.Session(config=targets.in_process_session_config(config)) as session:
      try:
        saver.restore(session, checkpoint_path)
      except tf.errors.NotFoundError as e:
        raise ValueError(
            "Could not load all requested variables from checkpoint. Please make "
            "sure your model_fn does not expect variables that were not saved in "
            f"the checkpoint.\n\nEncountered error with mode `{mode}` "
            f"while restoring checkpoint from: `{checkpoint_path}`. Full "
            f"Traceback:\n\n{e}") from e
      meta_graph_kwargs = dict(
          tags=EXPORT_TAGS[mode],
          signature_def_map=signature_def_map,
          assets_collection=tf.compat.v1.get_collection(
              tf.compat.v1.GraphKeys.ASSET_FILEPATHS),
          main_op=main_op,
          saver=saver,
          strip_default_attrs=strip_default_attrs)
      if save_variables:
        builder.add_meta_graph_and_variables(session, **meta_graph_kwargs)
      else:
        builder.add_meta_graph(**meta_graph_kwargs)


def _copy_assets_extra(temp_dir: str, assets_extra: Dict[str, str]) -> None:
  for dest, source in assets_extra.items():
    dest_path = os.path.join(temp_dir, _ASSETS_EXTRA, dest)
    tf.io.gfile.makedirs(os.path.dirname(dest_path))
    tf.io.gfile.copy(source, dest_path, overwrite=False)


def _modes_to_export(input_receiver_fn_map: Mapping[str, Any]) -> list:
  """[(mode, receiver fn)] in EXPORT_ORDER; a mode mapped to None is skipped, as in tf.estimator.

  Raises:
    ValueError: not a dict, or no mode of ModeKeys has a receiver fn.
    TypeError: a receiver fn is not callable (what calling it raised in tf.estimator).
  """
  if not isinstance(input_receiver_fn_map, Mapping):
    raise ValueError(
        f"input_receiver_fn_map must be a dict of ModeKeys to input_receiver_fn; "
        f"given {input_receiver_fn_map!r}.")
  modes = [(mode, input_receiver_fn_map[mode]) for mode in EXPORT_ORDER
           if input_receiver_fn_map.get(mode)]
  if not modes:
    raise ValueError(
        f"No valid modes for exporting found. Got {input_receiver_fn_map.keys()}. "
        f"Map one or more of ModeKeys.TRAIN ({ModeKeys.TRAIN!r}), EVAL "
        f"({ModeKeys.EVAL!r}) and PREDICT ({ModeKeys.PREDICT!r}) to its receiver fn.")
  unknown = sorted(str(k) for k in input_receiver_fn_map if k not in EXPORT_ORDER)
  if unknown:
    _logging.warning("Not exporting modes %s: they are not ModeKeys values.", unknown)
  for mode, fn in modes:
    if not callable(fn):
      raise TypeError(
          f"{type(fn).__name__!r} object is not callable: the input_receiver_fn for "
          f"mode {mode!r} must be a function taking no arguments; given {fn!r}."
          f"{receiver_fn_checks.not_callable_hint(fn)}")
  return modes


def export_all_saved_models(model_fn: Callable[..., Any], config: Any,
                            export_dir_base: PathLike,
                            input_receiver_fn_map: Mapping[str, Any], *,
                            checkpoint_path: Union[None, str, "os.PathLike[str]"],
                            warm_start: Any, assets_extra: Optional[dict] = None,
                            as_text: bool = False, strip_default_attrs: bool = True) -> bytes:
  """Exports model_fn's graph of each mode in the map, with one checkpoint's variables.

  Args:
    model_fn: the Estimator's `ModelFn`.
    config: the Estimator's RunConfig.
    export_dir_base: directory under which a new numeric version directory is
      created.
    input_receiver_fn_map: dict of ModeKeys value to its receiver fn: a
      no-argument function returning a `ServingInputReceiver` (PREDICT) or a
      `SupervisedInputReceiver` (TRAIN, EVAL).
    checkpoint_path: checkpoint to export; None: the latest in
      config.model_dir, else the warm-start checkpoint.
    warm_start: the Estimator's WarmStartSettings, or None.
    assets_extra: dict of destination path (relative to assets.extra/) to
      source file, copied into the export; or None.
    as_text: write saved_model.pbtxt instead of saved_model.pb.
    strip_default_attrs: remove default-valued attributes from the NodeDefs.

  Returns:
    The new export directory, as bytes (as tf.estimator returned it).

  Raises:
    ValueError: no valid mode, bad assets_extra, no checkpoint, or a
      checkpoint missing model variables.
    TypeError: a receiver fn that is not callable.
  """
  modes = _modes_to_export(input_receiver_fn_map)
  assets_extra = _check_assets_extra(assets_extra)
  checkpoint_path = checkpoints.checkpoint_to_export(config.model_dir, checkpoint_path,
                                                     warm_start)
  export_dir_base = os.fsdecode(export_dir_base)

  final_dir, temp_dir = export_dirs.reserve_export_dir(export_dir_base)
  start = time.time()
  try:
    with quiet.quiet_deprecations():
      builder = tf.compat.v1.saved_model.Builder(temp_dir)
      for index, (mode, input_receiver_fn) in enumerate(modes):
        _add_meta_graph(builder, model_fn, config, input_receiver_fn, mode,
                        checkpoint_path, save_variables=index == 0,
                        strip_default_attrs=strip_default_attrs)
      builder.save(as_text)
    _copy_assets_extra(temp_dir, assets_extra)
    export_dirs.publish(temp_dir, final_dir)
  except BaseException:
    # Leave nothing half-written behind (Serving ignores temp-* names, but
    # people and garbage collection would not).
    if tf.io.gfile.exists(temp_dir):
      tf.io.gfile.rmtree(temp_dir)
    raise
  _logging.info("Exported SavedModel (%s) from checkpoint %s to %s in %.2fs.",
                ", ".join(mode for mode, _ in modes), checkpoint_path, final_dir,
                time.time() - start)
  return tf.compat.as_bytes(final_dir)


def export_saved_model(model_fn: Callable[..., Any], config: Any,
                       export_dir_base: PathLike,
                       serving_input_receiver_fn: Optional[Callable[[], Any]], *,
                       checkpoint_path: Union[None, str, "os.PathLike[str]"], warm_start: Any,
                       assets_extra: Optional[dict] = None, as_text: bool = False,
                       mode: str = ModeKeys.PREDICT, strip_default_attrs: bool = True) -> bytes:
  """Exports model_fn's graph in one mode (PREDICT by default) as a SavedModel.

  Args:
    model_fn: the Estimator's `ModelFn`.
    config: the Estimator's RunConfig.
    export_dir_base: directory under which a new numeric version directory is
      created.
    serving_input_receiver_fn: no-argument function returning a
      `ServingInputReceiver` or `TensorServingInputReceiver` (for TRAIN or
      EVAL, a `SupervisedInputReceiver`).
    checkpoint_path: as for export_all_saved_models.
    warm_start: the Estimator's WarmStartSettings, or None.
    assets_extra: as for export_all_saved_models.
    as_text: write saved_model.pbtxt instead of saved_model.pb.
    mode: the ModeKeys value of the graph to export.
    strip_default_attrs: remove default-valued attributes from the NodeDefs.

  Returns:
    The new export directory, as bytes.

  Raises:
    ValueError: no serving_input_receiver_fn, an unknown mode, and as
      export_all_saved_models.
    TypeError: serving_input_receiver_fn is not callable.
  """
  if not serving_input_receiver_fn:
    raise ValueError(
        "An input_receiver_fn must be defined. Pass serving_input_receiver_fn, "
        "e.g. estimator_lite.export.build_parsing_serving_input_receiver_fn(spec).")
  return export_all_saved_models(
      model_fn, config, export_dir_base, {mode: serving_input_receiver_fn},
      checkpoint_path=checkpoint_path, warm_start=warm_start, assets_extra=assets_extra,
      as_text=as_text, strip_default_attrs=strip_default_attrs)
