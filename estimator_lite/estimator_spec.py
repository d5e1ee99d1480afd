"""EstimatorSpec: what a model_fn returns, validated against the mode it was called in."""
from __future__ import annotations

import collections.abc
from typing import Any, Dict, Iterable, Iterator, Mapping, Optional, Tuple

import attrs
import tensorflow as tf

from estimator_lite._util import validation
from estimator_lite.export import export_output as _export_output
from estimator_lite.mode_keys import ModeKeys

_DEFAULT_SERVING_KEY = tf.compat.v1.saved_model.signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY
_FIELDS_IN_ORDER = (
    "mode", "predictions", "loss", "train_op", "eval_metric_ops",
    "export_outputs", "training_chief_hooks", "training_hooks", "scaffold",
    "evaluation_hooks", "prediction_hooks")


def _is_keras_metric(value: Any) -> bool:
  # Keras 2 (tf-keras) and Keras 3 metric objects both have update_state/result.
  return hasattr(value, "update_state") and hasattr(value, "result") and hasattr(
      value, "variables")


def _is_tensor(value: Any) -> bool:
  return isinstance(value, (tf.Tensor, tf.Variable)) or (
      hasattr(value, "graph") and hasattr(value, "dtype") and hasattr(value, "shape"))


def _tensor_like(value: Any) -> bool:
  """A Tensor, Variable or Operation: what a train_op or update_op may be."""
  return isinstance(value, tf.Operation) or _is_tensor(value)


@attrs.frozen(init=False, repr=False)
class EstimatorSpec(validation.Replaceable):
  """Ops and objects returned from a `model_fn` and passed to an `Estimator`.

  Which fields are required depends on `mode`:

  * TRAIN: `loss` (a scalar) and `train_op`.
  * EVAL: `loss`; `eval_metric_ops` optional.
  * PREDICT: `predictions`; `export_outputs` optional (by default the
    `serving_default` signature returns all predictions).

  The object is immutable; `replace(**changes)` (or `_replace`, as on
  tf.estimator's namedtuple) returns a validated copy.

  Args:
    mode: a `ModeKeys` value.
    predictions: a `Tensor` or dict of `Tensor`.
    loss: scalar `Tensor` (shape [] or [1]).
    train_op: the op that runs one training step.
    eval_metric_ops: dict of metric name to `(value, update_op)` or to a Keras
      metric object whose `update_state` was called in model_fn.
    export_outputs: dict of signature name to `ExportOutput`.
    training_chief_hooks: hooks run on the chief only, in TRAIN.
    training_hooks: hooks run on every worker, in TRAIN.
    scaffold: a `tf.compat.v1.train.Scaffold` (saver, init ops, summary op).
    evaluation_hooks: hooks run in EVAL.
    prediction_hooks: hooks run in PREDICT.

  Raises:
    ValueError: a field the mode needs is missing or malformed; the message
      names the mode and the field.
    TypeError: a hook is not a `SessionRunHook`.
  """

  mode: str
  predictions: Any = None
  loss: Any = None
  train_op: Any = None
  eval_metric_ops: Dict[str, Any] = attrs.field(factory=dict)
  export_outputs: Optional[Dict[str, _export_output.ExportOutput]] = None
  training_chief_hooks: Tuple[tf.compat.v1.train.SessionRunHook, ...] = ()
  training_hooks: Tuple[tf.compat.v1.train.SessionRunHook, ...] = ()
  scaffold: Any = None
  evaluation_hooks: Tuple[tf.compat.v1.train.SessionRunHook, ...] = ()
  prediction_hooks: Tuple[tf.compat.v1.train.SessionRunHook, ...] = ()

  def __init__(self, mode: str, predictions: Any = None, loss: Any = None, train_op: Any = None,
               eval_metric_ops: Optional[Mapping[str, Any]] = None,
               export_outputs: Optional[Mapping[str, _export_output.ExportOutput]] = None,
               training_chief_hooks: Optional[Iterable[Any]] = None,
               training_hooks: Optional[Iterable[Any]] = None,
               scaffold: Optional[tf.compat.v1.train.Scaffold] = None,
               evaluation_hooks: Optional[Iterable[Any]] = None,
               prediction_hooks: Optional[Iterable[Any]] = None) -> None:
    if mode not in ModeKeys.all():
      raise ValueError(
          f"mode={mode!r} is not one of ModeKeys.TRAIN ('train'), ModeKeys.EVAL "
          "('eval') or ModeKeys.PREDICT ('infer'); pass the mode model_fn was "
          "called with.")
    loss = _validate_loss(loss, mode)
    predictions = _validate_predictions(predictions, mode)
    train_op = _validate_train_op(train_op, mode)
    checked_metrics = _validate_eval_metric_ops(eval_metric_ops, mode)
    checked_outputs = _validate_export_outputs(export_outputs, predictions, mode)
    if scaffold is None:
      scaffold = tf.compat.v1.train.Scaffold()
    elif not isinstance(scaffold, tf.compat.v1.train.Scaffold):
      raise TypeError(
          f"scaffold must be a tf.compat.v1.train.Scaffold; given: {scaffold!r}.")
    _check_same_graph(mode, loss=loss, train_op=train_op, predictions=predictions,
                      eval_metric_ops=checked_metrics)
    self.__attrs_init__(
        mode=mode, predictions=predictions, loss=loss, train_op=train_op,
        eval_metric_ops=checked_metrics, export_outputs=checked_outputs,
        training_chief_hooks=_check_hooks(training_chief_hooks, "training_chief_hooks"),
        training_hooks=_check_hooks(training_hooks, "training_hooks"),
        scaffold=scaffold,
        evaluation_hooks=_check_hooks(evaluation_hooks, "evaluation_hooks"),
        prediction_hooks=_check_hooks(prediction_hooks, "prediction_hooks"))

  def __repr__(self) -> str:
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in _FIELDS_IN_ORDER
                      if getattr(self, name) not in (None, ()))
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


def _check_required(field: str, mode: str) -> None:
  """Raises ValueError when `field`, which is None, is one that `mode` requires."""
  modes, how = _REQUIRED[field]
  if mode in modes:
    raise ValueError(f"Missing {field}. model_fn returned an EstimatorSpec for mode {mode!r} "
                     f"without `{field}`: {how}.")


def _validate_loss(loss: Any, mode: str) -> Any:
  if loss is None:
    return _check_required("loss", mode)
  if not _is_tensor(loss):
    raise TypeError(
        f"loss must be Tensor, given: {loss!r} (mode {mode!r}). Return the loss "
        "tensor built in model_fn, not a Python number.")
  shape = loss.shape
  if shape.num_elements() not in (None, 1):
    raise ValueError(
        f"Loss must be scalar, given: {loss!r} (mode {mode!r}, shape {shape}). "
        "Reduce it, e.g. tf.reduce_mean(per_example_loss).")
  if shape.rank is not None and shape.rank > 0:
    loss = tf.reshape(loss, [])
  return loss


def _validate_predictions(predictions: Any, mode: str) -> Any:
  if predictions is None:
    return _check_required("predictions", mode)
  if isinstance(predictions, collections.abc.Mapping):
    predictions = dict(predictions)
    for key, value in predictions.items():
      if not _is_tensor(value):
        raise TypeError(
            f"predictions[{key!r}] must be Tensor, given: {value!r} (mode {mode!r}).")
  elif not _is_tensor(predictions):
    raise TypeError(
        f"predictions must be Tensor or dict of Tensor, given: {predictions!r} "
        f"(mode {mode!r}).")
  return predictions


def _validate_train_op(train_op: Any, mode: str) -> Any:
  if train_op is None:
    return _check_required("train_op", mode)
  if not _tensor_like(train_op):
    raise TypeError(
        f"train_op must be Operation or Tensor, given: {train_op!r} (mode {mode!r}).")
  return train_op


def _validate_eval_metric_ops(eval_metric_ops: Optional[Mapping[str, Any]], mode: str
                              ) -> Dict[str, Any]:
  if eval_metric_ops is None:
    return {}
  if not isinstance(eval_metric_ops, collections.abc.Mapping):
    raise TypeError(
        f"eval_metric_ops must be a dict, given: {eval_metric_ops!r} (mode {mode!r}).")
  checked = {}
  for key, value in eval_metric_ops.items():
    if _is_keras_metric(value):
      checked[key] = value
      continue
    if (not isinstance(value, (tuple, list)) or len(value) != 2 or
        not all(_tensor_like(v) for v in value)):
      raise TypeError(
          "Values of eval_metric_ops must be (metric_value, update_op) tuples, "
          f"given: {value!r} for key: {key!r} (mode {mode!r}). Use a "
          "tf.compat.v1.metrics function or a Keras metric object.")
    checked[key] = tuple(value)
  return checked


def _validate_export_outputs(export_outputs: Optional[Mapping[str, Any]], predictions: Any,
                             mode: str) -> Optional[Dict[str, Any]]:
  if mode != ModeKeys.PREDICT:
    return dict(export_outputs) if export_outputs is not None else None
  if export_outputs is None:
    return {_DEFAULT_SERVING_KEY: _export_output.PredictOutput(predictions)}
  if not isinstance(export_outputs, collections.abc.Mapping):
    raise TypeError(
        f"export_outputs must be dict, given: {export_outputs!r}; map signature "
        "names to PredictOutput / ClassificationOutput / RegressionOutput.")
  export_outputs = dict(export_outputs)
  for key, value in export_outputs.items():
    if not isinstance(value, _export_output.ExportOutput):
      raise TypeError(
          f"Values in export_outputs must be ExportOutput objects, given "
          f"{value!r} for key {key!r}. Use estimator_lite.export.PredictOutput, "
          "ClassificationOutput or RegressionOutput.")
  if len(export_outputs) == 1 and _DEFAULT_SERVING_KEY not in export_outputs:
    (only,) = export_outputs.values()
    export_outputs[_DEFAULT_SERVING_KEY] = only
  elif _DEFAULT_SERVING_KEY not in export_outputs:
    raise ValueError(
        f"Multiple export_outputs were provided ({sorted(export_outputs)}), but "
        f"none of them is specified as the default. Use '{_DEFAULT_SERVING_KEY}' "
        "(signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY) for one of them.")
  return export_outputs


def _flatten_graph_members(**named: Any) -> Iterator[Tuple[str, Any]]:
  for name, value in named.items():
    if value is None:
      continue
    if isinstance(value, dict):
      for key, item in value.items():
        if _is_keras_metric(item):
          continue
        for element in (item if isinstance(item, tuple) else (item,)):
          yield f"{name}[{key!r}]", element
    else:
      yield name, value


def _check_same_graph(mode: str, **named: Any) -> None:
  default_graph = tf.compat.v1.get_default_graph()
  for name, value in _flatten_graph_members(**named):
    graph = getattr(value, "graph", None)
    if graph is not None and graph is not default_graph:
      raise ValueError(
          f"{name} with {value!r} must be from the default graph (mode {mode!r}). "
          "Build every tensor inside model_fn; do not reuse tensors from another "
          "graph or from eager mode.")
