"""WarmStartSettings and VocabInfo: initialise a new model from another's checkpoint."""
from __future__ import annotations

import os
from typing import Any, Dict, List, NamedTuple, Optional, Union

import tensorflow as tf

from estimator_lite._util import validation

# TensorFlow's own class, as tf.estimator re-exported it.
VocabInfo = tf.compat.v1.train.VocabInfo


def _path_as_str(value: Any) -> Any:
  """A path-like or bytes value as str; anything else as given (for _check_path to judge)."""
  if isinstance(value, (bytes, os.PathLike)):
    return os.fsdecode(value)
  return value


def _dict_or_empty(value: Optional[Dict[str, Any]]) -> Dict[str, Any]:
  return dict(value or {})


def _check_path(value: Any) -> None:
  advice = ("Pass a checkpoint prefix, a model_dir holding checkpoints, or a SavedModel "
            "directory")
  if not value:
    raise ValueError("`ckpt_to_initialize_from` MUST be set in WarmStartSettings. "
                     f"{advice}; given {value!r}.")
  if not isinstance(value, str):
    raise ValueError(f"WarmStartSettings(ckpt_to_initialize_from={value!r}): {advice}.")


class _WarmStartSettingsFields(NamedTuple):
  ckpt_to_initialize_from: str
  vars_to_warm_start: Optional[Union[str, List[Any]]] = ".*"
  var_name_to_vocab_info: Dict[str, Any] = {}
  var_name_to_prev_var_name: Dict[str, str] = {}


class WarmStartSettings(validation.Replaceable, _WarmStartSettingsFields):
  """Which variables to initialise from which checkpoint, when there is no checkpoint yet.

  Warm-starting only sets initial values: once model_dir has a checkpoint,
  training restores from it instead. A namedtuple of the four fields, as
  tf.estimator's was (`_replace` checks the copy).

  Args:
    ckpt_to_initialize_from: checkpoint prefix, directory with checkpoints, or
      SavedModel directory.
    vars_to_warm_start: regex (or list of names/variables) of the trainable
      variables to warm-start; ".*" by default; None for none.
    var_name_to_vocab_info: dict of variable name -> `VocabInfo`, for
      embeddings whose vocabulary changed.
    var_name_to_prev_var_name: dict of new variable name -> name in the old
      checkpoint, for renamed variables.

  Raises:
    ValueError: ckpt_to_initialize_from is empty or not a path.
  """

  __slots__ = ()

  def __new__(cls, ckpt_to_initialize_from: Any,
              vars_to_warm_start: Optional[Union[str, List[Any]]] = ".*",
              var_name_to_vocab_info: Optional[Dict[str, Any]] = None,
              var_name_to_prev_var_name: Optional[Dict[str, str]] = None) -> WarmStartSettings:
    path = _path_as_str(ckpt_to_initialize_from)
    _check_path(path)
    return super().__new__(cls, path, vars_to_warm_start,
                           _dict_or_empty(var_name_to_vocab_info),
                           _dict_or_empty(var_name_to_prev_var_name))


def resolve(warm_start_from: Union[None, str, os.PathLike[str], WarmStartSettings]
            ) -> Optional[WarmStartSettings]:
  """Turns Estimator's warm_start_from (path or settings) into WarmStartSettings or None.

  Raises:
    ValueError: warm_start_from is neither a path nor a WarmStartSettings, or
      is an empty path.
  """
  if warm_start_from is None:
    return None
  if isinstance(warm_start_from, (str, bytes, os.PathLike)):
    settings = WarmStartSettings(ckpt_to_initialize_from=warm_start_from)
  elif isinstance(warm_start_from, WarmStartSettings):
    settings = warm_start_from
  else:
    raise ValueError(
        "warm_start_from must be a string or a WarmStartSettings, instead got "
        f"{type(warm_start_from)}. Pass a checkpoint or SavedModel path (str or "
        "os.PathLike) or an estimator_lite.WarmStartSettings.")
  path = settings.ckpt_to_initialize_from
  saved_model_vars = os.path.join(path, "variables", "variables")
  if tf.io.gfile.exists(saved_model_vars + ".index"):
    settings = settings.replace(ckpt_to_initialize_from=saved_model_vars)
  return settings


def apply(settings: WarmStartSettings) -> None:
  """Overrides the initialisers of the current graph's variables per `settings`."""
  tf.compat.v1.logging.info("Warm-starting with WarmStartSettings: %r", settings)
  tf.compat.v1.train.warm_start(
      ckpt_to_initialize_from=settings.ckpt_to_initialize_from,
      vars_to_warm_start=settings.vars_to_warm_start,
      var_name_to_vocab_info=settings.var_name_to_vocab_info or None,
      var_name_to_prev_var_name=settings.var_name_to_prev_var_name or None)
