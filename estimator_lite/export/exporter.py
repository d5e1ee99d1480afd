"""Exporters: what train_and_evaluate runs after each evaluation to export the model.

`train_and_evaluate` calls `exporter.export(estimator, export_path,
checkpoint_path, eval_result, is_the_final_export)` with
`export_path = model_dir/export/<exporter.name>`; each export is a numeric
version directory there, the layout TensorFlow Serving watches.
"""
from __future__ import annotations

import abc
import json
import os
from typing import Any, Callable, Dict, Optional, Tuple, Union

import numpy as np
import tensorflow as tf

from estimator_lite._util import events
from estimator_lite._util import fn_args as _fn_args
from estimator_lite._util.validation import GLOBAL_STEP_KEY
from estimator_lite._util.validation import LOSS_KEY
from estimator_lite._util import export_dirs
from estimator_lite.export import receiver_fn_checks

_logging = tf.compat.v1.logging
# BestExporter's memory of the best exported eval result. A dot file: TensorFlow
# Serving ignores every child of the base directory that is not a number.
BEST_EVAL_RESULT_FILE = ".best_eval_result.json"


class Exporter(abc.ABC):
  """A kind of model export, run by train_and_evaluate after each evaluation."""

  @property
  @abc.abstractmethod
  def name(self) -> str:
    """Directory name under model_dir/export/ where this exporter writes; non-empty."""

  @abc.abstractmethod
  def export(self, estimator: Any, export_path: str, checkpoint_path: Optional[str],
             eval_result: Optional[Dict[str, Any]], is_the_final_export: bool
             ) -> Optional[Union[str, bytes]]:
    """Exports the given `Estimator` to a specific format.

    Args:
      estimator: the `Estimator` to export.
      export_path: directory under which to write the export.
      checkpoint_path: the checkpoint path to export.
      eval_result: the output of `Estimator.evaluate` on this checkpoint.
      is_the_final_export: True for the export at the end of training; always
        False when `TrainSpec.max_steps` is None.

    Returns:
      The path of the exported directory, or None if export is skipped. The
      built-in exporters return what `Estimator.export_saved_model` returns:
      bytes, as in tf.estimator.
    """


def _check_name(name: str) -> str:
  if not isinstance(name, str) or not name:
    raise ValueError(
        f"Exporter name must be a non-empty string (the directory under "
        f"model_dir/export/); given {name!r}.")
  return name


def _check_receiver_fn(fn: Optional[Callable[[], Any]]) -> Callable[[], Any]:
  if not callable(fn):
    raise ValueError(
        f"serving_input_receiver_fn must be a function taking no arguments and "
        f"returning a ServingInputReceiver; given {fn!r}. Use e.g. "
        "estimator_lite.export.build_parsing_serving_input_receiver_fn(spec)."
        f"{receiver_fn_checks.not_callable_hint(fn)}")
  return fn


def _check_exports_to_keep(exports_to_keep: Optional[int]) -> Optional[int]:
  if exports_to_keep is None:
    return None
  if (isinstance(exports_to_keep, bool) or
      not isinstance(exports_to_keep, (int, np.integer)) or exports_to_keep <= 0):
    raise ValueError(
        f"`exports_to_keep`, if provided, must be a positive number. Got "
        f"{exports_to_keep!r}; pass None to keep every export.")
  return int(exports_to_keep)


def _check_assets_extra(assets_extra: Optional[Dict[str, str]]) -> Optional[Dict[str, str]]:
  if assets_extra is not None and not isinstance(assets_extra, dict):
    raise ValueError(
        f"assets_extra must be None or a dict of destination path (relative to "
        f"assets.extra/) to source file; given {assets_extra!r}.")
  return dict(assets_extra) if assets_extra else None


class _SavedModelExporter(Exporter):
  """What the exporters share: a name, the serving input, and a SavedModel export.

  Subclasses decide when to export (`export`) and what to keep.
  """

  def __init__(self, name: str, serving_input_receiver_fn: Optional[Callable[[], Any]],
               assets_extra: Optional[Dict[str, str]] = None, as_text: bool = False) -> None:
    self._name = _check_name(name)
    self._serving_input_receiver_fn = _check_receiver_fn(serving_input_receiver_fn)
    self._assets_extra = _check_assets_extra(assets_extra)
    self._as_text = bool(as_text)

  @property
  def name(self) -> str:
    return self._name

  def _export_saved_model(self, estimator: Any, export_path: str,
                          checkpoint_path: Optional[str]) -> Any:
    return estimator.export_saved_model(
        export_path, self._serving_input_receiver_fn,
        assets_extra=self._assets_extra, as_text=self._as_text,
        checkpoint_path=checkpoint_path)


class LatestExporter(_SavedModelExporter):
  """Exports the model after every evaluation and keeps the newest few exports.

  Args:
    name: unique name of this exporter, the directory under model_dir/export/.
    serving_input_receiver_fn: no-argument function returning a
      `ServingInputReceiver`.
    assets_extra: dict of destination path (relative to assets.extra/) to
      source file, copied into each export; e.g.
      `{'my_asset_file.txt': '/path/to/my_asset_file.txt'}`.
    as_text: write the SavedModel proto in text format.
    exports_to_keep: number of newest exports to keep; older ones are deleted.
      None keeps all.

  Raises:
    ValueError: an argument is invalid.
  """

  def __init__(self, name: str, serving_input_receiver_fn: Callable[[], Any],
               assets_extra: Optional[Dict[str, str]] = None, as_text: bool = False,
               exports_to_keep: Optional[int] = 5) -> None:
    super().__init__(name, serving_input_receiver_fn, assets_extra, as_text)
    self._exports_to_keep = _check_exports_to_keep(exports_to_keep)

  def export(self, estimator: Any, export_path: str, checkpoint_path: Optional[str],
             eval_result: Optional[Dict[str, Any]], is_the_final_export: bool
             ) -> Optional[bytes]:
    del eval_result, is_the_final_export
    export_result = self._export_saved_model(estimator, export_path, checkpoint_path)
    export_dirs.garbage_collect(export_path, self._exports_to_keep)
    return export_result


class FinalExporter(_SavedModelExporter):
  """Exports the model once, at the end of training.

  Args:
    name: unique name of this exporter, the directory under model_dir/export/.
    serving_input_receiver_fn: no-argument function returning a
      `ServingInputReceiver`.
    assets_extra: as for `LatestExporter`.
    as_text: write the SavedModel proto in text format.

  Raises:
    ValueError: an argument is invalid.
  """

  def __init__(self, name: str, serving_input_receiver_fn: Callable[[], Any],
               assets_extra: Optional[Dict[str, str]] = None, as_text: bool = False) -> None:
    super().__init__(name, serving_input_receiver_fn, assets_extra, as_text)

  def export(self, estimator: Any, export_path: str, checkpoint_path: Optional[str],
             eval_result: Optional[Dict[str, Any]], is_the_final_export: bool
             ) -> Optional[bytes]:
    del eval_result
    if not is_the_final_export:
      return None
    _logging.info("Performing the final export in the end of training.")
    return self._export_saved_model(estimator, export_path, checkpoint_path)


def _loss_smaller(best_eval_result: Optional[Dict[str, Any]],
                  current_eval_result: Optional[Dict[str, Any]]) -> bool:
  """Returns True if current_eval_result's loss is smaller than best_eval_result's.

  Raises:
    ValueError: either result is empty or has no 'loss'.
  """
  if not best_eval_result or LOSS_KEY not in best_eval_result:
    raise ValueError("best_eval_result cannot be empty or no loss is found in it.")
  if not current_eval_result or LOSS_KEY not in current_eval_result:
    raise ValueError("current_eval_result cannot be empty or no loss is found in it.")
  return best_eval_result[LOSS_KEY] > current_eval_result[LOSS_KEY]


def _verify_compare_fn_args(compare_fn: Optional[Callable[..., Any]]) -> None:
  if compare_fn is None:
    raise ValueError("`compare_fn` must not be None.")
  if not callable(compare_fn):
    raise ValueError(
        f"compare_fn must be callable as compare_fn(best_eval_result, "
        f"current_eval_result); given {compare_fn!r}.")
  args = set(_fn_args.fn_args(compare_fn))
  for required in ("best_eval_result", "current_eval_result"):
    if required not in args:
      raise ValueError(
          f"compare_fn ({_fn_args.describe(compare_fn)}) must include {required} "
          "argument.")
  unexpected = sorted(set(_fn_args.required_args(compare_fn)) -
                      {"best_eval_result", "current_eval_result"})
  if unexpected:
    raise ValueError(
        f"compare_fn ({_fn_args.describe(compare_fn)}) has following not expected "
        f"args: {unexpected}")


def _scalars(eval_result: Optional[dict]) -> Dict[str, Any]:
  """The numeric scalars of an eval result as plain Python numbers (JSON-able)."""
  scalars: Dict[str, Any] = {}
  for key, value in (eval_result or {}).items():
    if isinstance(value, (bool, np.bool_)) or np.ndim(value) != 0:
      continue
    if isinstance(value, (int, np.integer)):
      scalars[str(key)] = int(value)
    elif isinstance(value, (float, np.floating)):
      scalars[str(key)] = float(value)
  return scalars


class BestExporter(_SavedModelExporter):
  """Exports the model whenever its evaluation beats the best exported so far.

  The best result survives restarts: after each export it is written to
  `<export_path>/.best_eval_result.json`, and a new BestExporter (a restarted
  job) reads it on its first export, so it never exports a worse model than
  one already exported. For an export directory written without that file
  (e.g. by tf.estimator), the event files matching `event_file_pattern` are
  read once, on first use, instead; after that the best value is kept in
  memory, never re-read.

  Args:
    name: unique name of this exporter, the directory under model_dir/export/.
    serving_input_receiver_fn: no-argument function returning a
      `ServingInputReceiver`.
    event_file_pattern: event files, relative to model_dir, holding earlier
      evaluation results; None to not read them.
    compare_fn: function `(best_eval_result, current_eval_result) -> bool`,
      True if the current result is better. Defaults to a smaller 'loss'.
    assets_extra: as for `LatestExporter`.
    as_text: write the SavedModel proto in text format.
    exports_to_keep: number of newest exports to keep; None keeps all.

  Raises:
    ValueError: an argument is invalid.
  """

  def __init__(self, name: str = "best_exporter",
               serving_input_receiver_fn: Optional[Callable[[], Any]] = None,
               event_file_pattern: Optional[str] = "eval/*.tfevents.*",
               compare_fn: Callable[..., bool] = _loss_smaller,
               assets_extra: Optional[Dict[str, str]] = None, as_text: bool = False,
               exports_to_keep: Optional[int] = 5) -> None:
    _verify_compare_fn_args(compare_fn)
    if event_file_pattern is not None and not isinstance(event_file_pattern, str):
      raise ValueError(
          f"event_file_pattern must be a glob relative to model_dir (e.g. "
          f"'eval/*.tfevents.*') or None; given {event_file_pattern!r}.")
    super().__init__(name, serving_input_receiver_fn, assets_extra, as_text)
    self._compare_fn = compare_fn
    self._event_file_pattern = event_file_pattern
    self._exports_to_keep = _check_exports_to_keep(exports_to_keep)
    # The best result is loaded once per (model_dir, export_path), then cached.
    self._loaded_for: Optional[Tuple[str, str]] = None
    self._best_eval_result: Optional[Dict[str, Any]] = None

  def export(self, estimator: Any, export_path: str, checkpoint_path: Optional[str],
             eval_result: Optional[Dict[str, Any]], is_the_final_export: bool
             ) -> Optional[bytes]:
    export_path = os.fsdecode(export_path)
    key = (estimator.model_dir, export_path)
    if self._loaded_for != key:
      self._best_eval_result = self._load_best(estimator.model_dir, export_path,
                                               eval_result)
      self._loaded_for = key
    if self._best_eval_result is not None and not self._compare_fn(
        best_eval_result=self._best_eval_result, current_eval_result=eval_result):
      _logging.info("Skipping best model export: %s is not better than the best "
                    "so far, %s.", _scalars(eval_result), _scalars(self._best_eval_result))
      return None
    _logging.info("Performing best model export.")
    export_result = self._export_saved_model(estimator, export_path, checkpoint_path)
    self._best_eval_result = eval_result
    self._save_best(export_path, eval_result, export_result)
    export_dirs.garbage_collect(export_path, self._exports_to_keep)
    return export_result

  def _load_best(self, model_dir: str, export_path: str,
                 eval_result: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    state_path = os.path.join(export_path, BEST_EVAL_RESULT_FILE)
    if tf.io.gfile.exists(state_path):
      try:
        with tf.io.gfile.GFile(state_path) as f:
          best = json.load(f)["eval_result"]
        _logging.info("Loaded best eval result from %s: %s", state_path, best)
        return best
      except (ValueError, KeyError, TypeError, OSError, tf.errors.OpError) as e:
        _logging.warning("Ignoring unreadable %s: %s", state_path, e)
    if not export_dirs.list_versions(export_path):
      # Nothing exported yet: the first candidate is exported, whatever earlier
      # evaluations scored, so that there is a model to serve.
      return None
    if not self._event_file_pattern:
      return None
    _logging.info("Loading best metric from event files.")
    current_step = (eval_result or {}).get(GLOBAL_STEP_KEY)
    return self._best_from_event_files(
        os.path.join(model_dir, self._event_file_pattern), current_step)

  def _best_from_event_files(self, pattern: str, skip_step: Optional[int]) -> Optional[dict]:
    """Best earlier result in the event files.

    `skip_step`'s result is left out: evaluate() already wrote the result
    being judged; it is the candidate, not the best to beat.
    """
    best = None
    for step, result in events.scalar_results(
        pattern, skip_step=None if skip_step is None else int(skip_step)):
      try:
        if best is None or self._compare_fn(best_eval_result=best, current_eval_result=result):
          best = result
      except (ValueError, KeyError) as e:
        _logging.warning("Skipping eval result %s at step %d of %s: %s", result, step,
                         pattern, e)
    return best

  def _save_best(self, export_path: str, eval_result: Optional[Dict[str, Any]],
                 export_dir: Any) -> None:
    """Persists the best result; a failure only loses that memory, never the export.

    tf.estimator kept the best result in memory alone, so an export never
    failed for it: the result is still kept in memory, and a value JSON
    cannot hold is left out of the file (eval results keep only their
    numeric scalars; the export directory, if not a path).
    """
    if isinstance(export_dir, (str, bytes, os.PathLike)):
      export_dir = os.fsdecode(export_dir)
    else:
      export_dir = None
    state = {"eval_result": _scalars(eval_result), "export_dir": export_dir}
    state_path = os.path.join(export_path, BEST_EVAL_RESULT_FILE)
    temp_path = state_path + ".tmp"
    try:
      text = json.dumps(state, indent=2, sort_keys=True)
      with tf.io.gfile.GFile(temp_path, "w") as f:
        f.write(text)
      # Replaced in one step so a crash leaves the old or the new file, never half.
      tf.io.gfile.rename(temp_path, state_path, overwrite=True)
    except (TypeError, ValueError, OSError, tf.errors.OpError) as e:
      _logging.warning(
          "BestExporter could not write %s (%s): the best result is kept in memory "
          "only, and a restarted job will not know it.",
          state_path, e)
