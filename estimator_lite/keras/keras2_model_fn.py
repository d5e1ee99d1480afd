"""model_fn and warm-start checkpoint for a tf-keras (Keras 2) model, as tf.estimator built them.

Each Estimator call clones the user's compiled model into the new graph on
the input_fn's tensors (tf-keras builds graph-mode models there: loss, train
op and metric objects in that graph), with the optimizer's `iterations` tied
to the global step. Variable names are the layers' names, so they match what
tf.estimator 2.15 wrote; with the object-based format the Saver writes the
clone's object-graph keys instead.
"""
from __future__ import annotations

import os
import warnings
from typing import Any, Callable, Dict, Mapping, Optional

import tensorflow as tf

from estimator_lite.estimator_spec import EstimatorSpec
from estimator_lite.keras import export_outputs as export_outputs_lib
from estimator_lite.keras import io_mapping
from estimator_lite.keras import metric_names
from estimator_lite.mode_keys import ModeKeys
from estimator_lite.run_config import RunConfig
from estimator_lite._util import tf_internals

WARM_START_DIR = "keras"
WARM_START_PREFIX = "keras_model.ckpt"


def _tf_keras() -> Any:
  import tf_keras  # pylint: disable=g-import-not-at-top
  return tf_keras


def legacy_optimizer(model: Any) -> None:
  """Replaces a tf-keras 2.11+ optimizer on `model` by its legacy twin, as tf.estimator did.

  The new optimizers cannot build graph-mode train ops; tf.estimator converted
  them with a warning.
  """
  tf_keras = _tf_keras()
  if isinstance(model.optimizer, tf_keras.optimizers.Optimizer) and not isinstance(
      model.optimizer, tf_keras.optimizers.legacy.Optimizer):
    tf.compat.v1.logging.warning(
        "You are using `tf.keras.optimizers.experimental.Optimizer` in TF estimator, which "
        "only supports `tf.keras.optimizers.legacy.Optimizer`. Automatically converting your "
        "optimizer to `tf.keras.optimizers.legacy.Optimizer`.")
    model.optimizer = tf_keras.__internal__.optimizers.convert_to_legacy_optimizer(
        model.optimizer)


def optimizer_config(model: Any) -> Any:
  """The optimizer's config, read eagerly once (a graph-mode read would hit the wrong graph)."""
  try:
    if isinstance(model.optimizer, (list, tuple)):
      return [opt.get_config() for opt in model.optimizer]
    return model.optimizer.get_config()
  except (NotImplementedError, AttributeError):
    return None  # optimizers without a config are cloned as they are


def clone_in_graph(mode: str, keras_model: Any, custom_objects: Optional[Dict[str, Any]],
                   features: Any = None, labels: Any = None, config: Any = None) -> Any:
  """A clone of `keras_model` built on `features` / `labels` in the current graph.

  Args:
    mode: a ModeKeys value; TRAIN and EVAL clones are compiled, PREDICT not.
    keras_model: the user's compiled tf-keras model.
    custom_objects: for cloning custom layers.
    features: the input_fn's features (dict by input name, list, or tensor).
    labels: the input_fn's labels (dict by output name, list, or tensor).
    config: `optimizer_config(keras_model)`.

  Returns:
    The clone (a graph-mode tf-keras model).
  """
  tf_keras = _tf_keras()
  with warnings.catch_warnings():
    # Deprecated in Keras 2 but what its graph-mode clones read (Dropout, BatchNormalization).
    warnings.simplefilter("ignore", UserWarning)
    tf_keras.backend.set_learning_phase(mode == ModeKeys.TRAIN)
  features, sample_weights = io_mapping.split_sample_weights(features)
  graph_network = tf_internals.keras2_is_graph_network(keras_model)
  input_names = output_names = None
  if isinstance(features, dict):
    input_names = (keras_model.input_names if graph_network else
                   [f"input_{i}" for i in range(1, len(features) + 1)])
  if isinstance(labels, dict):
    output_names = (keras_model.output_names if graph_network else
                    [f"output_{i}" for i in range(1, len(labels) + 1)])
  if isinstance(keras_model.inputs, dict):
    inputs: Any = {k: io_mapping.as_tensor(features[k]) for k in keras_model.inputs}
  elif keras_model.inputs is None and isinstance(features, dict):
    inputs = {k: io_mapping.as_tensor(v) for k, v in features.items()}
  else:
    inputs = io_mapping.ordered_tensors(features, input_names, "features", "inputs")
  targets = io_mapping.ordered_tensors(labels, output_names, "labels", "outputs")
  compile_clone = mode != ModeKeys.PREDICT
  global_step = None
  if compile_clone:
    global_step = tf.compat.v1.train.get_or_create_global_step()
    tf_keras.__internal__.backend.track_variable(global_step)
  clone = tf_keras.__internal__.models.clone_and_build_model(
      keras_model, inputs, targets, custom_objects, compile_clone=compile_clone,
      in_place_reset=not graph_network, optimizer_iterations=global_step,
      optimizer_config=config)
  if sample_weights is not None:
    tf_internals.keras2_weight_loss_by(
        clone, io_mapping.weights_per_output(sample_weights, clone.output_names))
  return clone


def make_model_fn(keras_model: Any, custom_objects: Optional[Dict[str, Any]],
                  object_checkpoint: bool, metric_names_map: Optional[Mapping[str, str]],
                  export_outputs: Optional[Mapping[str, Any]]) -> Callable[..., EstimatorSpec]:
  """The model_fn of a tf-keras model's Estimator.

  Args:
    keras_model: the user's compiled tf-keras model.
    custom_objects: for cloning custom layers.
    object_checkpoint: save object-based keys (checkpoint_format='checkpoint').
    metric_names_map: Keras metric name -> eval_metric_ops key, or None.
    export_outputs: output name -> ExportOutput class, or None.

  Returns:
    `model_fn(features, labels, mode) -> EstimatorSpec`.
  """
  legacy_optimizer(keras_model)
  config = optimizer_config(keras_model)

  def model_fn(features: Any, labels: Any, mode: str) -> EstimatorSpec:
    model = clone_in_graph(mode, keras_model, custom_objects, features, labels, config)
    predictions = dict(zip(model.output_names, model.outputs))
    loss = train_op = eval_metric_ops = None
    if mode == ModeKeys.TRAIN:
      loss, train_op = tf_internals.keras2_train_loss_and_op(model)
    elif mode == ModeKeys.EVAL:
      loss = tf_internals.keras2_eval_loss(model)
    if mode != ModeKeys.PREDICT:
      eval_metric_ops = metric_names.rename_metrics(
          tf_internals.keras2_compiled_metrics(model), metric_names_map) or None
    if not tf_internals.keras2_is_graph_network(model):
      # Cloning a subclassed model resets it in place; give the user's model back its state.
      tf_internals.keras2_restore_subclassed_state(keras_model)
    scaffold = None
    if object_checkpoint:
      tf_internals.keras2_track_global_step(model, tf.compat.v1.train.get_global_step())
      scaffold = tf.compat.v1.train.Scaffold(saver=tf_internals.object_based_saver(model))
    return EstimatorSpec(
        mode=mode, predictions=predictions, loss=loss, train_op=train_op,
        eval_metric_ops=eval_metric_ops,
        export_outputs=export_outputs_lib.build_export_outputs(
            predictions, model.output_names, export_outputs),
        scaffold=scaffold)

  return model_fn


def write_warm_start_checkpoint(keras_model: Any, custom_objects: Optional[Dict[str, Any]],
                                config: RunConfig, object_checkpoint: bool) -> str:
  """Saves the model's current weights under model_dir/keras/ (once) and returns the prefix.

  The Estimator warm-starts from it, so its first training step starts from
  the Keras model's weights. Kept if already there (a restarted program).
  """
  directory = os.path.join(str(config.model_dir), WARM_START_DIR)
  latest = tf.train.latest_checkpoint(directory)
  if latest:
    return latest
  # A graph-mode model with weights never initialised starts from the clone's
  # own initialisers (seeded by the RunConfig), as in tf.estimator.
  weights = (keras_model.get_weights()
             if tf_internals.keras2_any_weight_initialized(keras_model) else None)
  tf.io.gfile.makedirs(directory)
  prefix = os.path.join(directory, WARM_START_PREFIX)
  with tf.Graph().as_default():
    tf.compat.v1.random.set_random_seed(config.tf_random_seed)
    tf.compat.v1.train.create_global_step()
    model = clone_in_graph(ModeKeys.TRAIN, keras_model, custom_objects,
                           config=optimizer_config(keras_model))
    # Builds the optimizer's variables too, so the checkpoint has all of them.
    tf_internals.keras2_train_loss_and_op(model)
    with tf.compat.v1.Session(config=config.session_config) as session:
      if weights:
        model.set_weights(weights)
      _tf_keras().__internal__.backend.initialize_variables(session)
      if object_checkpoint:
        tf_internals.keras2_track_global_step(model, tf.compat.v1.train.get_global_step())
        model.save_weights(prefix)
      else:
        tf.compat.v1.train.Saver().save(session, prefix)
  return prefix
