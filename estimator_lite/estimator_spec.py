"""EstimatorSpec: what a model_fn returns, validated against the mode it was called in."""
from __future__ import annotations

import collections.abc
from typing import Any, Dict, Iterable, Mapping, NamedTuple, Optional, Tuple

import tensorflow as tf

from estimator_lite._util import metrics
from estimator_lite._util import tf_internals
from estimator_lite._util import validation
from estimator_lite.export import export_output as _export_output
from estimator_lite.mode_keys import ModeKeys

_DEFAULT_SERVING_KEY = tf.compat.v1.saved_model.signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY


# tf.estimator's text for a tensor, op or metric built in another graph; {0}
# names the field and {1} the tensor.
_GRAPH_ERROR = (
    '{0} with "{1}" must be from the default graph. Possible causes of this error '
    'include: \n\n1) {0} was created outside the context of the default graph.\n\n'
    '2) The object passed through to EstimatorSpec was not created in the most '
    'recent call to "model_fn".')
_GRAPH_FIX = (" Build every tensor inside model_fn, in the graph it is called in; do not "
              "keep tensors from an earlier call, another graph or eager mode.")


def _tensor_or_operation(value: Any) -> bool:
  """A Tensor, Variable or Operation: what a train_op or update_op may be."""
  return isinstance(value, tf.Operation) or tf_internals.is_dense_tensor(value)


def _check_default_graph(value: Any, field: str, name: str) -> None:
  """Raises tf.estimator's ValueError when `value` belongs to a graph other than the default."""
  # Eager tensors have no graph: tf.estimator checked graphs only when building one.
  if tf.executing_eagerly():
    return
  graph = getattr(value, "graph", None)
  if graph is not None and graph is not tf.compat.v1.get_default_graph():
    raise ValueError(_GRAPH_ERROR.format(field, name) + _GRAPH_FIX)


class _EstimatorSpecFields(NamedTuple):
  mode: Optional[str]
  predictions: Any = None
  loss: Any = None
  train_op: Any = None
  eval_metric_ops: Dict[str, Any] = {}
  export_outputs: Optional[Dict[str, _export_output.ExportOutput]] = None
  training_chief_hooks: Tuple[tf.compat.v1.train.SessionRunHook, ...] = ()
  training_hooks: Tuple[tf.compat.v1.train.SessionRunHook, ...] = ()
  scaffold: Any = None
  evaluation_hooks: Tuple[tf.compat.v1.train.SessionRunHook, ...] = ()
  prediction_hooks: Tuple[tf.compat.v1.train.SessionRunHook, ...] = ()


class EstimatorSpec(validation.Replaceable, _EstimatorSpecFields):
  """Ops and objects returned from a `model_fn` and passed to an `Estimator`.

  Which fields are required depends on `mode`:

  * TRAIN: `loss` (a scalar) and `train_op`.
  * EVAL: `loss`; `eval_metric_ops` optional.
  * PREDICT: `predictions`; `export_outputs` optional (by default the
    `serving_default` signature returns all predictions).

  A namedtuple of the eleven fields, as tf.estimator's was: it unpacks and
  indexes in that order, and `replace(**changes)` (or `_replace`) returns a
  validated copy for the same mode.

  Args:
    mode: a `ModeKeys` value, or None (the mode model_fn was called in).
    predictions: a `Tensor` or dict of `Tensor` (not `SparseTensor`).
    loss: scalar `Tensor` (shape [] or [1]).
    train_op: the op that runs one training step.
    eval_metric_ops: dict of metric name to `(metric_value, update_op)`, where
      `metric_value` is a `Tensor` or a nested tuple of them, or to a Keras
      metric object whose `update_state` was called in model_fn (its variables
      join the LOCAL_VARIABLES and METRIC_VARIABLES collections, and the spec
      holds `(metric.result(), update_op)` in its place, as tf.estimator's did).
    export_outputs: dict of signature name to `ExportOutput`.
    training_chief_hooks: hooks run on the chief only, in TRAIN.
    training_hooks: hooks run on every worker, in TRAIN.
    scaffold: a `tf.compat.v1.train.Scaffold` (saver, init ops, summary op).
    evaluation_hooks: hooks run in EVAL.
    prediction_hooks: hooks run in PREDICT.

  Raises:
    ValueError: a field the mode needs is missing or malformed, a tensor is
      from another graph, or a Keras metric was never updated; the message
      starts with tf.estimator's text.
    TypeError: a field has the wrong type (a `SparseTensor` loss or
      prediction, a hook that is not a `SessionRunHook`, ...).
  """

  __slots__ = ()

  def __new__(cls, mode: Optional[str], predictions: Any = None, loss: Any = None,
              train_op: Any = None, eval_metric_ops: Optional[Mapping[str, Any]] = None,
              export_outputs: Optional[Mapping[str, _export_output.ExportOutput]] = None,
              training_chief_hooks: Optional[Iterable[Any]] = None,
              training_hooks: Optional[Iterable[Any]] = None,
              scaffold: Optional[tf.compat.v1.train.Scaffold] = None,
              evaluation_hooks: Optional[Iterable[Any]] = None,
              prediction_hooks: Optional[Iterable[Any]] = None) -> EstimatorSpec:
    # None: tf.estimator's spec from a model_fn without a `mode` argument; the
    # Estimator takes it as one for the mode it called model_fn in.
    if mode is not None and mode not in ModeKeys.all():
      raise ValueError(
          f"mode={mode!r} is not one of ModeKeys.TRAIN ('train'), ModeKeys.EVAL "
          "('eval') or ModeKeys.PREDICT ('infer'); pass the mode model_fn was "
          "called with (or None from a model_fn without a mode argument).")
    # tf.estimator's order, so that of several mistakes the same one is reported.
    train_op = _validate_train_op(train_op, mode)
    loss = _validate_loss(loss, mode)
    predictions = _validate_predictions(predictions, mode)
    checked_outputs = _validate_export_outputs(export_outputs, predictions, mode)
    training_hooks = _check_hooks(training_hooks, "training_hooks")
    evaluation_hooks = _check_hooks(evaluation_hooks, "evaluation_hooks")
    prediction_hooks = _check_hooks(prediction_hooks, "prediction_hooks")
    training_chief_hooks = _check_hooks(training_chief_hooks, "training_chief_hooks")
    checked_metrics = _validate_eval_metric_ops(eval_metric_ops, mode)
    if scaffold is None:
      scaffold = tf.compat.v1.train.Scaffold()
    elif not isinstance(scaffold, tf.compat.v1.train.Scaffold):
      raise TypeError(
          f"scaffold must be tf.train.Scaffold. Given: {scaffold}. Pass a "
          "tf.compat.v1.train.Scaffold, or None for a default one.")
    return super().__new__(
        cls, mode=mode, predictions=predictions, loss=loss, train_op=train_op,
        eval_metric_ops=checked_metrics, export_outputs=checked_outputs,
        training_chief_hooks=training_chief_hooks, training_hooks=training_hooks,
        scaffold=scaffold, evaluation_hooks=evaluation_hooks,
        prediction_hooks=prediction_hooks)

  def replace(self, **changes: Any) -> EstimatorSpec:
    """Returns a validated copy with `changes` applied; the mode stays the same.

    Args:
      **changes: field name to new value.

    Returns:
      A new EstimatorSpec.

    Raises:
      ValueError: `mode` is changed (tf.estimator's text), a name is not a
        field, or the copy is not valid for its mode.
      TypeError: a new value has the wrong type.
    """
    if "mode" in changes and changes["mode"] != self.mode:
      # tf.estimator's rule: a spec describes the graph model_fn built for one
      # mode (its metrics, its default export outputs); another mode needs
      # model_fn called for it.
      raise ValueError(
          f"mode of EstimatorSpec cannot be changed. This spec is for mode "
          f"{self.mode!r}; build a new EstimatorSpec for mode {changes['mode']!r} "
          "instead.")
    return super().replace(**changes)

  _replace = replace

  def __repr__(self) -> str:
    # The fields set, not all eleven: a spec's repr is read in logs and errors.
    shown = ", ".join(f"{name}={value!r}" for name, value in zip(self._fields, self)
                      if value is not None and not (isinstance(value, tuple) and not value))
    return f"EstimatorSpec({shown})"


def _check_hooks(hooks: Optional[Iterable[Any]], field: str) -> tuple:
  return validation.check_hooks(hooks, f"EstimatorSpec.{field}")


# The fields a mode requires, and how to give one (after tf.estimator's "Missing <field>.").
_REQUIRED = {
    "loss": ((ModeKeys.TRAIN, ModeKeys.EVAL), "TRAIN and EVAL need a scalar loss tensor: "
             "EstimatorSpec(mode, loss=loss, ...)"),
    "train_op": ((ModeKeys.TRAIN,), "pass optimizer.minimize(loss, "
                 "global_step=tf.compat.v1.train.get_global_step())"),
    "predictions": ((ModeKeys.PREDICT,), "EstimatorSpec(mode, predictions={'name': tensor})"),
}


def _check_required(field: str, mode: Optional[str]) -> None:
  """Raises ValueError when `field`, which is None, is one that `mode` requires."""
  modes, how = _REQUIRED[field]
  if mode in modes:
    raise ValueError(f"Missing {field}. model_fn returned an EstimatorSpec for mode {mode!r} "
                     f"without `{field}`: {how}.")


def _validate_train_op(train_op: Any, mode: Optional[str]) -> Any:
  if train_op is None:
    return _check_required("train_op", mode)
  if not _tensor_or_operation(train_op):
    raise TypeError(
        f"train_op must be Operation or Tensor, given: {train_op} (mode {mode!r}). "
        "Return the op that runs one step, e.g. optimizer.minimize(loss, ...).")
  _check_default_graph(train_op, "train_op", train_op.name)
  return train_op


def _validate_loss(loss: Any, mode: Optional[str]) -> Any:
  if loss is None:
    return _check_required("loss", mode)
  if not tf_internals.is_dense_tensor(loss):
    raise TypeError(
        f"loss must be Tensor, given: {loss} (mode {mode!r}). Return the loss "
        "tensor built in model_fn: not a Python number, and not a SparseTensor "
        "(tf.sparse.to_dense converts one).")
  shape = loss.shape
  if shape.num_elements() not in (None, 1):
    raise ValueError(
        f"Loss must be scalar, given: {loss} (mode {mode!r}, shape {shape}). "
        "Reduce it, e.g. tf.reduce_mean(per_example_loss).")
  if shape.rank is not None and shape.rank > 0:
    loss = tf.reshape(loss, [])
  _check_default_graph(loss, "loss", loss.name)
  return loss


def _validate_predictions(predictions: Any, mode: Optional[str]) -> Any:
  if predictions is None:
    return _check_required("predictions", mode)
  how = ("Predictions are dense tensors built in model_fn (tf.sparse.to_dense "
         "converts a SparseTensor).")
  if isinstance(predictions, collections.abc.Mapping):
    predictions = dict(predictions)
    for key, value in predictions.items():
      if not tf_internals.is_dense_tensor(value):
        raise TypeError(
            f"predictions[{key}] must be Tensor, given: {value} (mode {mode!r}). {how}")
    # Eager tensors have no name (and no graph to check).
    for key, value in ({} if tf.executing_eagerly() else predictions).items():
      _check_default_graph(value, "prediction values", f"{key}: {value.name}")
  else:
    if not tf_internals.is_dense_tensor(predictions):
      raise TypeError(
          f"predictions must be Tensor, given: {predictions} (mode {mode!r}). Return a "
          f"Tensor or a dict of name to Tensor. {how}")
    _check_default_graph(predictions, "prediction values", predictions.name)
  return predictions


def _validate_export_outputs(export_outputs: Any, predictions: Any,
                             mode: Optional[str]) -> Optional[Dict[str, Any]]:
  if mode != ModeKeys.PREDICT:
    # Only PREDICT exports; other modes keep what they were given, as tf.estimator did.
    if isinstance(export_outputs, collections.abc.Mapping):
      return dict(export_outputs)
    return export_outputs
  if export_outputs is None:
    return {_DEFAULT_SERVING_KEY: _export_output.PredictOutput(predictions)}
  if not isinstance(export_outputs, collections.abc.Mapping):
    raise TypeError(
        f"`export_outputs` must be dict, received: {export_outputs}. Map signature "
        "names to PredictOutput / ClassificationOutput / RegressionOutput.")
  export_outputs = dict(export_outputs)
  # TensorFlow's own ExportOutput classes were tf.estimator 2.15's; they export alike.
  accepted = (_export_output.ExportOutput, tf_internals.tensorflow_export_output_class())
  for key, value in export_outputs.items():
    if not isinstance(value, accepted):
      raise TypeError(
          f"Values in `export_outputs` must be ExportOutput objects, received: "
          f"{export_outputs}. The value for {key!r} is {value!r}; use "
          "estimator_lite.export.PredictOutput, ClassificationOutput or RegressionOutput.")
  if len(export_outputs) == 1 and _DEFAULT_SERVING_KEY not in export_outputs:
    (only,) = export_outputs.values()
    export_outputs[_DEFAULT_SERVING_KEY] = only
  elif _DEFAULT_SERVING_KEY not in export_outputs:
    # tf.estimator's text, its missing space after "Use" included.
    raise ValueError(
        "Multiple `export_outputs` were provided, but none of them are specified "
        "as the default. Use`tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY` to "
        f"specify a default. The signatures given are {sorted(export_outputs)}: "
        f"name one of them {_DEFAULT_SERVING_KEY!r}.")
  return export_outputs


def _validate_eval_metric_ops(eval_metric_ops: Any, mode: Optional[str]) -> Dict[str, Any]:
  """Checks each metric; a Keras metric object becomes a `(result, update_op)` tuple.

  As in tf.estimator, a Keras metric's variables join the LOCAL_VARIABLES and
  METRIC_VARIABLES collections, and (building a graph) the spec holds the
  tuple `(metric.result(), update_op)` in its place, so that code reading or
  merging `eval_metric_ops` (`spec.eval_metric_ops[key][0]`) sees one kind of
  value. Executing eagerly there is no graph to build them in: the object stays.

  Returns:
    dict of name to `(metric_value, update_op)` tuple (or, eagerly, Keras
    metric object).
  """
  if eval_metric_ops is None:
    return {}
  if not isinstance(eval_metric_ops, collections.abc.Mapping):
    raise TypeError(
        f"eval_metric_ops must be a dict, given: {eval_metric_ops} (mode {mode!r}). "
        "Map metric names to (metric_value, update_op) tuples or Keras metric objects.")
  checked: Dict[str, Any] = {}
  keras_updates: Dict[str, Any] = {}  # a Keras metric's update ops, found once
  for key, value in eval_metric_ops.items():
    if metrics.is_keras_metric(value):
      updates = keras_updates[key] = metrics.keras_metric_updates(value)
      for op in updates:
        _check_default_graph(op, "eval_metric_ops", f"{key}: {op.name}")
      # Also the variables: tf.estimator read the metric's result() here,
      # which reads them in the default graph.
      if (not tf.executing_eagerly() and
          metrics.metric_graph(value) is not tf.compat.v1.get_default_graph()):
        raise ValueError(_GRAPH_ERROR.format("eval_metric_ops", f"{key}: {value.name}")
                         + _GRAPH_FIX)
      if not tf.executing_eagerly():
        # tf.estimator built each result here, to check its graph, before the
        # one the spec holds: the names programs fetch (`Identity_3:0`) count both.
        value.result()
      checked[key] = value
      continue
    # The value may be a nested structure of tensors (a metric of several values).
    if (not isinstance(value, tuple) or len(value) != 2 or
        not all(_tensor_or_operation(v) for v in tf.nest.flatten(value))):
      raise TypeError(
          "Values of eval_metric_ops must be (metric_value, update_op) tuples, "
          f"given: {value} for key: {key}. Use a tf.compat.v1.metrics function, "
          "which returns that pair (metric_value may be a nested tuple of Tensors), "
          "or a Keras metric object whose update_state() model_fn called.")
    for element in tf.nest.flatten(value):
      _check_default_graph(element, "eval_metric_ops", f"{key}: {element.name}")
    checked[key] = value
  # Only once every metric is valid, so a failed spec leaves the collections alone.
  graph = tf.compat.v1.get_default_graph()
  for key, value in checked.items():
    if not isinstance(value, tuple):
      metrics.add_to_metric_collections(value, graph)
      if not tf.executing_eagerly():
        checked[key] = (value.result(),
                        metrics.keras_metric_update_op(value, graph, keras_updates[key]))
  return checked
