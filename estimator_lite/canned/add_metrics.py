"""add_metrics: an Estimator whose evaluation also reports a user's metrics (tf.estimator 2.15's)."""
from __future__ import annotations

from typing import Any, Callable, Dict

from estimator_lite._util import fn_args as fn_args_lib
from estimator_lite.estimator import Estimator
from estimator_lite.estimator_spec import EstimatorSpec
from estimator_lite.mode_keys import ModeKeys
from estimator_lite.run_config import RunConfig

_VALID_METRIC_FN_ARGS = ("features", "labels", "predictions", "config")


def add_metrics(estimator: Estimator, metric_fn: Callable[..., Dict[str, Any]]) -> Estimator:
  """Returns a new Estimator: `estimator`'s model, whose evaluation adds `metric_fn`'s metrics.

  The new Estimator shares `estimator`'s model_fn (with its params),
  model_dir, config and warm-start settings; train and predict are
  unchanged. In EVAL, `metric_fn` is called with the tensors of the batch and
  its metrics are merged into the model's (a metric of the same name
  replaces the model's).

  ```python
  def my_auc(labels, predictions):
    auc = tf_keras.metrics.AUC(name="my_auc")
    auc.update_state(y_true=labels, y_pred=predictions["logistic"])
    return {"my_auc": auc}

  estimator = estimator_lite.add_metrics(estimator_lite.DNNClassifier(...), my_auc)
  ```

  Args:
    estimator: an `Estimator` (a canned one or your own).
    metric_fn: a function taking any of these arguments, by name:
      `predictions` (the model's predictions: a `Tensor` or dict of them),
      `features` and `labels` (what input_fn returned) and `config` (the
      estimator's `RunConfig`). It returns a dict of metric name to a Keras
      metric object it has updated, or to a `(value, update_op)` tuple such
      as a `tf.compat.v1.metrics` function returns.

  Returns:
    A new `Estimator`.

  Raises:
    ValueError: `metric_fn` takes an argument other than those four
      (tf.estimator's text).
  """
  _verify_metric_fn_args(metric_fn)

  def new_model_fn(features: Any, labels: Any, mode: str, config: RunConfig) -> EstimatorSpec:
    spec = estimator.model_fn(features, labels, mode, config)
    if mode != ModeKeys.EVAL:
      return spec
    new_metrics = _call_metric_fn(metric_fn, features, labels, spec.predictions, config)
    all_metrics = dict(spec.eval_metric_ops or {})
    all_metrics.update(new_metrics)
    return spec.replace(eval_metric_ops=all_metrics)

  return Estimator(model_fn=new_model_fn, model_dir=estimator.model_dir,
                   config=estimator.config, warm_start_from=estimator.warm_start_settings)


def _verify_metric_fn_args(metric_fn: Callable[..., Any]) -> None:
  invalid_args = [name for name in fn_args_lib.fn_args(metric_fn)
                  if name not in _VALID_METRIC_FN_ARGS]
  if invalid_args:
    raise ValueError(
        f"metric_fn ({metric_fn}) has following not expected args: {invalid_args}. It may "
        "take only features, labels, predictions and config, by name.")


def _call_metric_fn(metric_fn: Callable[..., Dict[str, Any]], features: Any, labels: Any,
                    predictions: Any, config: RunConfig) -> Dict[str, Any]:
  available = {"features": features, "labels": labels, "predictions": predictions,
               "config": config}
  names = fn_args_lib.fn_args(metric_fn)
  return metric_fn(**{name: value for name, value in available.items() if name in names})
