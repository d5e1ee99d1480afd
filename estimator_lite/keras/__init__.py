"""estimator_lite.keras: `model_to_estimator`, as `tf.keras.estimator` in TensorFlow 2.15.

`estimator_lite.keras.v1.model_to_estimator` is `tf.compat.v1.keras.estimator`'s
(name-based checkpoints by default).
"""
from __future__ import annotations

import importlib
import os
from typing import Any, Dict, Mapping, Optional, Union

from estimator_lite.estimator import Estimator
from estimator_lite.keras import conversion
from estimator_lite.keras.errors import FormattedKeyError
from estimator_lite.run_config import RunConfig

__all__ = ["model_to_estimator", "FormattedKeyError"]


def model_to_estimator(keras_model: Any = None,
                       keras_model_path: Optional[Union[str, "os.PathLike[str]"]] = None,
                       custom_objects: Optional[Dict[str, Any]] = None,
                       model_dir: Optional[Union[str, "os.PathLike[str]"]] = None,
                       config: Optional[RunConfig] = None,
                       checkpoint_format: str = "checkpoint",
                       metric_names_map: Optional[Mapping[str, str]] = None,
                       export_outputs: Optional[Mapping[str, Any]] = None) -> Estimator:
  """Turns a compiled Keras model into an Estimator.

  The Estimator trains with the model's compiled optimizer and loss, evaluates
  its compiled metrics (plus `loss`), predicts a dict keyed by the model's
  output names and exports a SavedModel whose `serving_default` signature
  returns that dict. Training starts from the model's current weights: they
  are written once to `model_dir/keras/keras_model.ckpt` and warm-started
  from (Functional and Sequential models; a subclassed model starts freshly
  initialised, as with tf.estimator).

  Features reach the model by input name when the input_fn gives a dict, in
  order when it gives a list, as the only input when it gives a tensor;
  labels likewise by output name. A features dict of exactly `features` and
  `sample_weights` passes per-example weights.

  Both tf-keras (`tf.keras` under estimator_lite) and Keras 3 (`import keras`)
  models are accepted; a Keras 3 model that uses what Keras 3 cannot do in a
  graph (moving statistics of BatchNormalization, random layers such as
  Dropout) is refused with an error that says so.

  Args:
    keras_model: a compiled Keras model. Exclusive with `keras_model_path`.
    keras_model_path: path of a compiled tf-keras model saved with `model.save()`.
    custom_objects: dict of name -> class or function, for cloning or loading
      custom layers, losses and metrics.
    model_dir: the Estimator's directory; if `config.model_dir` is set too,
      they must be equal; a temporary directory when neither is set.
    config: a `RunConfig`. Its session_config (the default one when None)
      also becomes tf-keras's backend session's for a model built in graph
      mode whose weights have no values yet, as in tf.estimator.
    checkpoint_format: "checkpoint": object-based keys as Keras writes them
      (`layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE`; Functional
      and Sequential models only); "saver": variable names (`dense/kernel`).
    metric_names_map: Keras metric name -> Estimator metric key, for every
      compiled metric.
    export_outputs: output name -> ExportOutput class (`RegressionOutput`,
      `ClassificationOutput`, `PredictOutput`): an extra signature of that
      name over that output, beside `serving_default`.

  Returns:
    An `estimator_lite.Estimator`.

  Raises:
    ValueError: neither or both of `keras_model` and `keras_model_path`; the
      model is not compiled; `checkpoint_format` is unknown or "checkpoint"
      with a subclassed model; a subclassed model lacks get_config/from_config;
      a Keras 3 model needs what Keras 3 cannot do in a graph; `model_dir`
      differs from `config.model_dir`; `config` is not a RunConfig.
  """
  return conversion.model_to_estimator(
      keras_model=keras_model, keras_model_path=keras_model_path,
      custom_objects=custom_objects, model_dir=model_dir, config=config,
      checkpoint_format=checkpoint_format, metric_names_map=metric_names_map,
      export_outputs=export_outputs)


def __getattr__(name: str) -> Any:
  # `estimator_lite.keras.v1` without importing it first, as
  # `tf.compat.v1.keras.estimator` was reached by attribute.
  if name == "v1":
    return importlib.import_module(f"{__name__}.v1")
  raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
