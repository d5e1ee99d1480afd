"""model_fn and warm-start checkpoint for a Keras 3 model (`import keras`).

Keras 3 layers build and run in a tf.Graph, so each Estimator call rebuilds
the model from its config in the new graph (variables `hidden/kernel`, ... as
tf-keras names them). What Keras 3 cannot do there is replaced or refused:
- its optimizers build no graph-mode train op: the compiled optimizer is
  translated to the tf-keras legacy optimizer of the same class and config
  (the optimizer tf.estimator 2.15 itself converted Keras 2 models to), so
  slot variables are named as 2.15 named them (`training/Adam/hidden/kernel/m`);
- BatchNormalization's moving statistics never update in a graph and random
  layers (Dropout, GaussianNoise, ...) draw the same numbers on every step:
  such models are refused with the advice to build them with tf.keras;
- the loss and metrics are rebuilt from the compile() arguments; one model
  output only (several outputs: use tf.keras).
"""
from __future__ import annotations

import copy
import inspect
import os
import sys
from typing import Any, Callable, Dict, List, Mapping, Optional

import numpy as np
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
_USE_TF_KERAS = ("Build the model with tf.keras (tf-keras, Keras 2: `tf.keras` once estimator_lite "
                 "is imported) instead of `import keras`.")
# Keras 3 optimizer options the legacy optimizers lack, with their "off" values.
_UNSUPPORTED_OPTIMIZER_OPTIONS = {"weight_decay": None, "use_ema": False,
                                  "loss_scale_factor": None, "gradient_accumulation_steps": None}


def _keras() -> Any:
  return sys.modules["keras"]


def is_keras3_model(model: Any) -> bool:
  """Whether `model` is a Keras 3 model (only if the user imported Keras 3)."""
  keras = sys.modules.get("keras")
  if keras is None or not getattr(keras, "__version__", "").startswith("3."):
    return False
  return isinstance(model, keras.Model)


def is_graph_network(model: Any) -> bool:
  """Whether a Keras 3 model is Sequential or Functional (not a Model subclass)."""
  return isinstance(model, _keras().Sequential) or type(model).__name__ == "Functional"


def _all_layers(model: Any) -> List[Any]:
  layers, todo = [], list(getattr(model, "layers", []))
  while todo:
    layer = todo.pop()
    layers.append(layer)
    todo.extend(getattr(layer, "layers", []))
  return layers


def check_supported(model: Any) -> None:
  """Refuses a Keras 3 model that would train wrongly in a graph.

  Raises:
    ValueError: BatchNormalization or a random layer, several outputs or
      losses, or an optimizer without a tf-keras legacy twin.
  """
  keras = _keras()
  for layer in _all_layers(model):
    if isinstance(layer, keras.layers.BatchNormalization):
      raise ValueError(
          f"Keras 3 layer {layer.name!r} (BatchNormalization) cannot be used by "
          "model_to_estimator: in a TensorFlow graph its moving mean and variance never "
          f"update, so evaluation and serving would use the initial values. {_USE_TF_KERAS}")
    if hasattr(layer, "seed_generator"):
      raise ValueError(
          f"Keras 3 layer {layer.name!r} ({type(layer).__name__}) cannot be used by "
          "model_to_estimator: in a TensorFlow graph its random numbers (a Dropout mask, "
          f"noise) are the same on every training step. {_USE_TF_KERAS}")
  if len(model.outputs if is_graph_network(model) else [None]) != 1 or isinstance(
      model.loss, (dict, list, tuple)):
    raise ValueError(
        "model_to_estimator takes Keras 3 models with one output and one loss. "
        f"{_USE_TF_KERAS}")


def _input_names(model: Any) -> List[str]:
  return [t.name for t in model.inputs] if is_graph_network(model) else []


def _output_names(model: Any) -> List[str]:
  if isinstance(model, _keras().Sequential):
    return [model.layers[-1].name]
  if is_graph_network(model):
    return list(model.output_names)
  return ["output_1"]


def legacy_optimizer_factory(model: Any) -> Callable[[], Any]:
  """A function that makes the tf-keras legacy twin of the model's Keras 3 optimizer.

  Raises:
    ValueError: no legacy optimizer of that class, a learning-rate schedule,
      or an option the legacy optimizers do not have.
  """
  import tf_keras  # pylint: disable=g-import-not-at-top
  optimizer = model.optimizer
  name = type(optimizer).__name__
  legacy_class = getattr(tf_keras.optimizers.legacy, name, None)
  if legacy_class is None:
    raise ValueError(
        f"The Keras 3 optimizer {name} has no graph-mode (tf-keras legacy) counterpart, so "
        "model_to_estimator cannot train with it. Compile with one of SGD, Adam, Adagrad, "
        f"Adadelta, Adamax, Nadam, RMSprop, Ftrl, or {_USE_TF_KERAS}")
  config = optimizer.get_config()
  for option, off in _UNSUPPORTED_OPTIMIZER_OPTIONS.items():
    if config.get(option, off) not in (off, None, False):
      raise ValueError(
          f"The Keras 3 optimizer option {option}={config[option]!r} has no graph-mode "
          f"(tf-keras legacy) counterpart. Compile without it, or {_USE_TF_KERAS}")
  if not isinstance(config.get("learning_rate"), (int, float)):
    raise ValueError(
        "model_to_estimator translates a Keras 3 optimizer to its tf-keras legacy twin, "
        "which takes a constant learning_rate here; got "
        f"{config.get('learning_rate')!r}. {_USE_TF_KERAS}")
  accepted = set(inspect.signature(legacy_class.__init__).parameters)
  kwargs = {k: v for k, v in config.items() if k in accepted and k != "name" and v is not None}
  return lambda: legacy_class(**kwargs)


def _loss_function(model: Any) -> Any:
  """The compiled loss as `fn(y_true, y_pred, sample_weight)` -> scalar."""
  loss = _keras().losses.get(model.loss)
  if isinstance(loss, _keras().losses.Loss):
    return loss

  def reduced(y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
    # A loss function gives one value per example; Keras reduces it as
    # "sum_over_batch_size": the weighted sum over the number of values.
    values = tf.cast(loss(y_true, y_pred), tf.float32)
    if sample_weight is not None:
      values = values * tf.cast(tf.reshape(sample_weight, tf.shape(values)), values.dtype)
    return tf.reduce_sum(values) / tf.cast(tf.size(values), values.dtype)

  reduced.name = getattr(loss, "__name__", "loss")  # type: ignore[attr-defined]
  return reduced


def _make_metric(identifier: Any, loss: Any, labels: Any, outputs: Any) -> Any:
  """A Keras 3 metric object for one compile(metrics=[...]) entry, named as Keras names it."""
  keras = _keras()
  if isinstance(identifier, str) and identifier in ("accuracy", "acc"):
    loss_name = getattr(loss, "name", "") or ""
    if outputs.shape[-1] == 1 or "binary" in loss_name:
      return keras.metrics.BinaryAccuracy(name=identifier)
    if "sparse" in loss_name or labels.shape.rank < outputs.shape.rank:
      return keras.metrics.SparseCategoricalAccuracy(name=identifier)
    return keras.metrics.CategoricalAccuracy(name=identifier)
  metric = keras.metrics.get(identifier)
  if isinstance(metric, keras.metrics.Metric):
    if isinstance(identifier, str):
      metric.name = identifier  # Keras reports a metric asked for by string under that string
    return metric
  name = identifier if isinstance(identifier, str) else getattr(metric, "__name__", "metric")
  return keras.metrics.MeanMetricWrapper(metric, name=name)


def _checkpoint_root(model: Any, global_step: Any, optimizer: Any) -> Any:
  """The object graph saved with checkpoint_format='checkpoint'.

  The legacy optimizer keys its slots by the tf.Variables inside Keras 3's
  variables, which the object graph does not reach, so the slots are added
  under `optimizer_slots` by variable and slot name.
  """
  children: Dict[str, Any] = {"model": model, "estimator_global_step": global_step}
  if optimizer is not None:
    children["optimizer"] = optimizer
    slots = tf.Module(name="optimizer_slots")
    slots.slots = {
        f"{v.value.name.split(':')[0]}/{slot}": optimizer.get_slot(v.value, slot)
        for v in model.trainable_variables for slot in optimizer.get_slot_names()}
    children["optimizer_slots"] = slots
  return tf.train.Checkpoint(**children)


class _Rebuilder:
  """Rebuilds the Keras 3 model from its config in the current graph."""

  def __init__(self, model: Any) -> None:
    self.model_class = type(model)
    self.config = model.get_config()
    self.input_names = _input_names(model)
    self.output_names = _output_names(model)
    self.graph_network = is_graph_network(model)

  def build(self) -> Any:
    tf_internals.reset_keras3_layer_names()
    # from_config consumes the dict it is given.
    return self.model_class.from_config(copy.deepcopy(self.config))


def make_model_fn(keras_model: Any, object_checkpoint: bool,
                  metric_names_map: Optional[Mapping[str, str]],
                  export_outputs: Optional[Mapping[str, Any]]) -> Callable[..., EstimatorSpec]:
  """The model_fn of a Keras 3 model's Estimator (see the module docstring).

  Raises:
    ValueError: the model uses what Keras 3 cannot do in a graph.
  """
  check_supported(keras_model)
  new_optimizer = legacy_optimizer_factory(keras_model)
  rebuilder = _Rebuilder(keras_model)
  metric_ids = list(keras_model.get_compile_config().get("metrics") or [])

  def model_fn(features: Any, labels: Any, mode: str) -> EstimatorSpec:
    features, sample_weights = io_mapping.split_sample_weights(features)
    model = rebuilder.build()
    names = rebuilder.input_names if isinstance(features, dict) else None
    inputs = io_mapping.ordered_tensors(features, names, "features", "inputs") or []
    output = model(inputs[0] if len(inputs) == 1 else inputs, training=mode == ModeKeys.TRAIN)
    predictions = {rebuilder.output_names[0]: output}
    loss = train_op = eval_metric_ops = optimizer = None
    global_step = tf.compat.v1.train.get_or_create_global_step()
    if mode != ModeKeys.PREDICT:
      names = rebuilder.output_names if isinstance(labels, dict) else None
      targets = io_mapping.ordered_tensors(labels, names, "labels", "outputs") or []
      weights = io_mapping.weights_per_output(sample_weights, rebuilder.output_names)[0]
      loss_fn = _loss_function(keras_model)
      with tf.name_scope("loss"):
        loss = loss_fn(targets[0], output, sample_weight=weights)
        if model.losses:
          loss = loss + tf.add_n(list(model.losses))
      metrics = []
      for identifier in metric_ids:
        metric = _make_metric(identifier, loss_fn, targets[0], output)
        metric.update_state(targets[0], output, sample_weight=weights)
        metrics.append(metric)
      eval_metric_ops = metric_names.rename_metrics(metrics, metric_names_map) or None
    if mode == ModeKeys.TRAIN:
      optimizer = new_optimizer()
      optimizer.iterations = global_step
      with tf.name_scope("training"):
        updates = optimizer.get_updates(loss, [v.value for v in model.trainable_variables])
      train_op = tf.group(*updates)
    scaffold = None
    if object_checkpoint:
      root = _checkpoint_root(model, global_step, optimizer)
      scaffold = tf.compat.v1.train.Scaffold(saver=tf_internals.object_based_saver(root))
    return EstimatorSpec(
        mode=mode, predictions=predictions, loss=loss, train_op=train_op,
        eval_metric_ops=eval_metric_ops,
        export_outputs=export_outputs_lib.build_export_outputs(
            predictions, rebuilder.output_names, export_outputs),
        scaffold=scaffold)

  return model_fn


def write_warm_start_checkpoint(keras_model: Any, config: RunConfig,
                                object_checkpoint: bool) -> str:
  """Saves the Keras 3 model's weights under model_dir/keras/ (once); returns the prefix."""
  directory = os.path.join(str(config.model_dir), WARM_START_DIR)
  latest = tf.train.latest_checkpoint(directory)
  if latest:
    return latest
  tf.io.gfile.makedirs(directory)
  prefix = os.path.join(directory, WARM_START_PREFIX)
  weights = [np.asarray(w) for w in keras_model.get_weights()]
  with tf.Graph().as_default():
    global_step = tf.compat.v1.train.create_global_step()
    model = _Rebuilder(keras_model).build()
    variables = [v.value for v in model.weights]
    # Placeholders, so the weights are not embedded in a graph.
    feeds = [tf.compat.v1.placeholder(v.dtype.base_dtype, v.shape) for v in variables]
    assign = tf.group(*[v.assign(p) for v, p in zip(variables, feeds)])
    if object_checkpoint:
      saver = tf_internals.object_based_saver(_checkpoint_root(model, global_step, None))
    else:
      saver = tf.compat.v1.train.Saver(variables + [global_step])
    with tf.compat.v1.Session(config=config.session_config) as session:
      session.run(tf.compat.v1.global_variables_initializer())
      session.run(assign, dict(zip(feeds, weights)))
      saver.save(session, prefix)
  return prefix
