"""model_to_estimator: checks the arguments and builds the Estimator of a compiled Keras model.

The checks, their order and their texts are tf.estimator 2.15's, each text
followed by what to do. tf-keras (Keras 2) models take tf.estimator's own
route (keras2_model_fn); Keras 3 models are run in the graph by
keras3_model_fn, which refuses what Keras 3 cannot do there.
"""
from __future__ import annotations

import os
from typing import Any, Dict, Mapping, Optional, Union

import tensorflow as tf

from estimator_lite.estimator import Estimator
from estimator_lite.keras import keras2_model_fn
from estimator_lite.keras import keras3_model_fn
from estimator_lite.run_config import RunConfig
from estimator_lite.run_config import get_default_session_config
from estimator_lite._util import tf_internals

CHECKPOINT = "checkpoint"
SAVER = "saver"
PathLike = Union[str, "os.PathLike[str]"]


def _load(path: PathLike, custom_objects: Optional[Dict[str, Any]]) -> Any:
  tf.compat.v1.logging.info("Loading models from %s", path)
  import tf_keras  # pylint: disable=g-import-not-at-top
  return tf_keras.models.load_model(os.fspath(path), custom_objects=custom_objects)


def _check_subclassed(model: Any, custom_objects: Optional[Dict[str, Any]]) -> None:
  """A subclassed tf-keras model must rebuild from its config (it is cloned per call)."""
  import tf_keras  # pylint: disable=g-import-not-at-top
  if tf_internals.keras2_is_graph_network(model) or isinstance(model, tf_keras.Sequential):
    return
  try:
    with tf_keras.utils.custom_object_scope(custom_objects or {}):
      model.__class__.from_config(model.get_config())
  except NotImplementedError as e:
    raise ValueError(
        "Subclassed `Model`s passed to `model_to_estimator` must implement "
        "`Model.get_config` and `Model.from_config`. Define both on "
        f"{type(model).__name__} (from_config(get_config()) must rebuild the model).") from e


def _config_with_model_dir(config: Optional[RunConfig], model_dir: Optional[PathLike]
                           ) -> RunConfig:
  """The RunConfig to use: `model_dir` in it, and a session_config (the default when None).

  As tf.estimator: a `model_dir` that differs from `config.model_dir` is an
  error; a temporary directory is used when neither is set.
  """
  if config is None:
    config = RunConfig()
    tf.compat.v1.logging.info("Using default config.")
  if not isinstance(config, RunConfig):
    raise ValueError(
        f"config must be an instance of `RunConfig`, but provided {config}. Pass "
        "estimator_lite.RunConfig(...) or None.")
  if config.session_config is None:
    config = config.replace(session_config=get_default_session_config())
  if model_dir is not None:
    model_dir = os.fspath(model_dir)
    if config.model_dir is not None and config.model_dir != model_dir:
      raise ValueError(
          "`model_dir` are set both in constructor and `RunConfig`, but with different "
          f"values. In constructor: '{model_dir}', in `RunConfig`: '{config.model_dir}' "
          "Pass the directory once: as model_dir=, or in RunConfig(model_dir=...).")
  if model_dir:
    config = config.replace(model_dir=model_dir)
  elif config.model_dir is None:
    import tempfile  # pylint: disable=g-import-not-at-top
    config = config.replace(model_dir=tempfile.mkdtemp())
    tf.compat.v1.logging.warning("Using temporary folder as model directory: %s",
                                 config.model_dir)
  return config


def _share_session_config(keras_model: Any, config: RunConfig) -> None:
  """Gives tf-keras's backend session the RunConfig's session_config, as tf.estimator did.

  Only possible while the model's weights have no values yet (a model built in
  graph mode): the first session's GPU options stick, so otherwise GPU
  options in the config only earn a warning.
  """
  session_config = config.session_config
  if tf_internals.keras2_any_weight_initialized(keras_model):
    if session_config is not None and session_config.HasField("gpu_options"):
      tf.compat.v1.logging.warning(
          "The Keras backend session has already been set. The _session_config passed "
          "to model_to_estimator will not be used. Its gpu_options apply to the "
          "Estimator's own sessions only.")
  else:
    tf_internals.keras2_set_session(tf.compat.v1.Session(config=session_config))


def model_to_estimator(keras_model: Any = None, keras_model_path: Optional[PathLike] = None,
                       custom_objects: Optional[Dict[str, Any]] = None,
                       model_dir: Optional[PathLike] = None,
                       config: Optional[RunConfig] = None,
                       checkpoint_format: Optional[str] = CHECKPOINT,
                       metric_names_map: Optional[Mapping[str, str]] = None,
                       export_outputs: Optional[Mapping[str, Any]] = None) -> Estimator:
  """An Estimator that trains, evaluates, predicts and exports a compiled Keras model.

  See `estimator_lite.keras.model_to_estimator` for the arguments.

  Raises:
    ValueError: neither or both of keras_model / keras_model_path, an
      uncompiled model, an unknown checkpoint_format, a subclassed model with
      the object-based format or without get_config/from_config, or a Keras 3
      model using what Keras 3 cannot do in a graph, or a model_dir that
      differs from config.model_dir.
  """
  if not (keras_model or keras_model_path):
    raise ValueError(
        "Either `keras_model` or `keras_model_path` needs to be provided. Pass the compiled "
        "model, or the path it was saved to with model.save().")
  if keras_model and keras_model_path:
    raise ValueError(
        "Please specity either `keras_model` or `keras_model_path`, but not both. Pass "
        "only one of them.")
  keras3 = keras_model is not None and keras3_model_fn.is_keras3_model(keras_model)
  if keras_model and not keras3:
    _check_subclassed(keras_model, custom_objects)
  config = _config_with_model_dir(config, model_dir)
  if keras_model is None:
    keras_model = _load(keras_model_path, custom_objects)  # type: ignore[arg-type]
  else:
    tf.compat.v1.logging.info("Using the Keras model provided.")

  if checkpoint_format is None or checkpoint_format == CHECKPOINT:
    graph_like = (keras3_model_fn.is_graph_network(keras_model) if keras3 else
                  tf_internals.keras2_is_graph_network(keras_model))
    if not graph_like:
      raise ValueError(
          "Object-based checkpoints are currently not supported with subclassed models. "
          "Pass checkpoint_format='saver' for a subclassed model.")
    object_checkpoint = True
  elif checkpoint_format == SAVER:
    object_checkpoint = False
  else:
    raise ValueError(
        f'Checkpoint format must be one of "checkpoint" or "saver". Got {checkpoint_format}. '
        "Use 'checkpoint' (object-based keys, as Keras writes) or 'saver' (variable names).")

  if not getattr(keras_model, "optimizer", None):
    raise ValueError(
        "The given keras model has not been compiled yet. Please compile the model with "
        "`model.compile()` before calling `model_to_estimator()`. The Estimator trains "
        "with the compiled optimizer and loss and evaluates the compiled metrics.")

  if keras3:
    model_fn = keras3_model_fn.make_model_fn(
        keras_model, object_checkpoint, metric_names_map, export_outputs)
  else:
    model_fn = keras2_model_fn.make_model_fn(
        keras_model, custom_objects, object_checkpoint, metric_names_map, export_outputs)

  if not keras3:
    _share_session_config(keras_model, config)

  warm_start_path = None
  graph_network = (keras3_model_fn.is_graph_network(keras_model) if keras3 else
                   tf_internals.keras2_is_graph_network(keras_model))
  if graph_network and config.is_chief:
    if keras3:
      warm_start_path = keras3_model_fn.write_warm_start_checkpoint(
          keras_model, config, object_checkpoint)
    else:
      warm_start_path = keras2_model_fn.write_warm_start_checkpoint(
          keras_model, custom_objects, config, object_checkpoint)
  elif getattr(keras_model, "built", False):
    tf.compat.v1.logging.warning(
        "You are creating an Estimator from a Keras model manually subclassed from `Model`, "
        "that was already called on some inputs (and thus already had weights). We are "
        "currently unable to preserve the model's state (its weights) as part of the "
        "estimator in this case. Be warned that the estimator has been created using a "
        "freshly initialized version of your model.\nNote that this doesn't affect the "
        "state of the model instance you passed as `keras_model` argument.")
  return Estimator(model_fn, config=config, warm_start_from=warm_start_path)
