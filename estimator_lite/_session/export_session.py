"""Estimator.export_saved_model's work: the serving graph and a checkpoint written as a TF1 SavedModel.

What it runs: a fresh graph with the serving
receiver's placeholders, model_fn in PREDICT mode on its features, variables
restored from the checkpoint by a Saver, and `tf.compat.v1.saved_model.Builder`
writing the MetaGraph (tag 'serve') with one SignatureDef per export output.
"""
from __future__ import annotations

import os
import time
from typing import Any, Callable, Dict, Optional, Union

import tensorflow as tf

from estimator_lite._session import checkpoints
from estimator_lite._session import signatures
from estimator_lite._session import targets
from estimator_lite._util import export_dirs
from estimator_lite._util import quiet
from estimator_lite.mode_keys import ModeKeys

_logging = tf.compat.v1.logging
_ASSETS_EXTRA = "assets.extra"


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


def _call_receiver_fn(serving_input_receiver_fn: Callable[[], Any]) -> Any:
  receiver = serving_input_receiver_fn()
  missing = [f for f in ("features", "receiver_tensors") if not hasattr(receiver, f)]
  if missing:
    raise ValueError(
        f"serving_input_receiver_fn must return a ServingInputReceiver or "
        f"TensorServingInputReceiver; it returned {receiver!r}.")
  return receiver


def _add_meta_graph(builder: Any, model_fn: Callable[..., Any], config: Any,
                    serving_input_receiver_fn: Callable[[], Any], checkpoint_path: str,
                    strip_default_attrs: bool) -> None:
  with tf.Graph().as_default() as graph:
    tf.compat.v1.train.get_or_create_global_step(graph)
    tf.compat.v1.set_random_seed(config.tf_random_seed)
    receiver = _call_receiver_fn(serving_input_receiver_fn)
    spec = model_fn(receiver.features, None, ModeKeys.PREDICT, config)
    # EstimatorSpec fills in serving_default (all predictions) when the
    # model_fn gave no export_outputs.
    signature_def_map = signatures.build_signature_defs(
        receiver.receiver_tensors, spec.export_outputs,
        getattr(receiver, "receiver_tensors_alternatives", None))
    scaffold = spec.scaffold
    # Tables (vocabulary lookups) and local variables are initialised by the
    # main op when a server loads the model; Scaffold's default does both.
    main_op = scaffold.local_init_op
    if main_op is None:
      main_op = tf.compat.v1.train.Scaffold.default_local_init_op()
    # The same saver restores now and is written into the MetaGraph, so a
    # custom saver from the Scaffold is what the loader uses too.
    saver = scaffold.saver or tf.compat.v1.train.Saver(sharded=True)
    with tf.compat.v1.Session(config=targets.in_process_session_config(config)) as session:
      try:
        saver.restore(session, checkpoint_path)
      except tf.errors.NotFoundError as e:
        raise ValueError(
            "Could not load all requested variables from checkpoint. Please make "
            "sure your model_fn does not expect variables that were not saved in "
            f"the checkpoint.\n\nEncountered error with mode `{ModeKeys.PREDICT}` "
            f"while restoring checkpoint from: `{checkpoint_path}`. Full "
            f"Traceback:\n\n{e}") from e
      builder.add_meta_graph_and_variables(
          session,
          tags=[tf.compat.v1.saved_model.tag_constants.SERVING],
          signature_def_map=signature_def_map,
          assets_collection=tf.compat.v1.get_collection(
              tf.compat.v1.GraphKeys.ASSET_FILEPATHS),
          main_op=main_op,
          saver=saver,
          strip_default_attrs=strip_default_attrs)


def _copy_assets_extra(temp_dir: str, assets_extra: Dict[str, str]) -> None:
  for dest, source in assets_extra.items():
    dest_path = os.path.join(temp_dir, _ASSETS_EXTRA, dest)
    tf.io.gfile.makedirs(os.path.dirname(dest_path))
    tf.io.gfile.copy(source, dest_path, overwrite=False)


def export_saved_model(model_fn: Callable[..., Any], config: Any,
                       export_dir_base: Union[str, "os.PathLike[str]"],
                       serving_input_receiver_fn: Optional[Callable[[], Any]], *,
                       checkpoint_path: Union[None, str, "os.PathLike[str]"], warm_start: Any,
                       assets_extra: Optional[dict] = None, as_text: bool = False,
                       mode: str = ModeKeys.PREDICT, strip_default_attrs: bool = True) -> str:
  """Exports model_fn's PREDICT graph and a checkpoint as a SavedModel.

  Args:
    model_fn: the Estimator's `ModelFn`.
    config: the Estimator's RunConfig.
    export_dir_base: directory under which a new numeric version directory is
      created.
    serving_input_receiver_fn: no-argument function returning a
      `ServingInputReceiver` or `TensorServingInputReceiver`.
    assets_extra: dict of destination path (relative to assets.extra/) to
      source file, copied into the export; or None.
    as_text: write saved_model.pbtxt instead of saved_model.pb.
    checkpoint_path: checkpoint to export; None: the latest in
      config.model_dir, else the warm-start checkpoint.
    warm_start: the Estimator's WarmStartSettings, or None.
    mode: must be `ModeKeys.PREDICT` (TRAIN/EVAL graph exports are not
      supported).
    strip_default_attrs: remove default-valued attributes from the NodeDefs.

  Returns:
    The new export directory, a str.

  Raises:
    ValueError: no serving_input_receiver_fn, an unsupported mode, bad
      assets_extra, no checkpoint, or a checkpoint missing model variables.
  """
  if not serving_input_receiver_fn:
    raise ValueError(
        "An input_receiver_fn must be defined: pass serving_input_receiver_fn, "
        "e.g. estimator_lite.export.build_parsing_serving_input_receiver_fn(spec).")
  if not callable(serving_input_receiver_fn):
    raise ValueError(
        f"serving_input_receiver_fn must be a function taking no arguments; "
        f"given {serving_input_receiver_fn!r}.")
  if mode != ModeKeys.PREDICT:
    raise ValueError(
        f"experimental_mode={mode!r} is not supported: estimator_lite exports the "
        f"serving (ModeKeys.PREDICT, {ModeKeys.PREDICT!r}) graph only.")
  assets_extra = _check_assets_extra(assets_extra)
  checkpoint_path = checkpoints.checkpoint_to_export(config.model_dir, checkpoint_path,
                                                     warm_start)
  export_dir_base = os.fspath(export_dir_base)

  final_dir, temp_dir = export_dirs.reserve_export_dir(export_dir_base)
  start = time.time()
  try:
    with quiet.quiet_deprecations():
      builder = tf.compat.v1.saved_model.Builder(temp_dir)
      _add_meta_graph(builder, model_fn, config, serving_input_receiver_fn,
                      checkpoint_path, strip_default_attrs)
      builder.save(as_text)
    _copy_assets_extra(temp_dir, assets_extra)
    export_dirs.publish(temp_dir, final_dir)
  except BaseException:
    # Leave nothing half-written behind (Serving ignores temp-* names, but
    # people and garbage collection would not).
    if tf.io.gfile.exists(temp_dir):
      tf.io.gfile.rmtree(temp_dir)
    raise
  _logging.info("Exported SavedModel from checkpoint %s to %s in %.2fs.",
                checkpoint_path, final_dir, time.time() - start)
  return final_dir
