"""estimator_lite.keras.v1: `tf.compat.v1.keras.estimator.model_to_estimator` of TensorFlow 2.15.

The same conversion as `estimator_lite.keras.model_to_estimator`; only the
default checkpoint format differs: name-based ("saver"), as TF1 programs wrote.
"""
from __future__ import annotations

import os
from typing import Any, Dict, Mapping, Optional, Union

from estimator_lite.estimator import Estimator
from estimator_lite.keras import conversion
from estimator_lite.run_config import RunConfig

__all__ = ["model_to_estimator"]


def model_to_estimator(keras_model: Any = None,
                       keras_model_path: Optional[Union[str, "os.PathLike[str]"]] = None,
                       custom_objects: Optional[Dict[str, Any]] = None,
                       model_dir: Optional[Union[str, "os.PathLike[str]"]] = None,
                       config: Optional[RunConfig] = None,
                       checkpoint_format: str = "saver",
                       metric_names_map: Optional[Mapping[str, str]] = None,
                       export_outputs: Optional[Mapping[str, Any]] = None) -> Estimator:
  """Turns a compiled Keras model into an Estimator with name-based checkpoints by default.

  Args:
    keras_model: a compiled Keras model. Exclusive with `keras_model_path`.
    keras_model_path: path of a compiled tf-keras model saved with `model.save()`.
    custom_objects: dict of name -> class or function for custom objects.
    model_dir: the Estimator's directory; wins over `config.model_dir`.
    config: a `RunConfig`.
    checkpoint_format: "saver" (variable names, the default here) or
      "checkpoint" (object-based keys; Functional and Sequential models only).
    metric_names_map: Keras metric name -> Estimator metric key.
    export_outputs: output name -> ExportOutput class, an extra signature each.

  Returns:
    An `estimator_lite.Estimator`.

  Raises:
    ValueError: as `estimator_lite.keras.model_to_estimator`.
  """
  return conversion.model_to_estimator(
      keras_model=keras_model, keras_model_path=keras_model_path,
      custom_objects=custom_objects, model_dir=model_dir, config=config,
      checkpoint_format=checkpoint_format, metric_names_map=metric_names_map,
      export_outputs=export_outputs)
