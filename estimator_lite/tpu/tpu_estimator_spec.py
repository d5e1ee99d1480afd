"""TPUEstimatorSpec: what a TPUEstimator's model_fn returns (tf.estimator 2.15's namedtuple)."""
from __future__ import annotations

import collections
from typing import Any, Callable, Dict, Iterable, Optional, Tuple

from estimator_lite._util import validation
from estimator_lite.estimator_spec import EstimatorSpec
from estimator_lite.tpu import host_calls


class TPUEstimatorSpec(collections.namedtuple("TPUEstimatorSpec", [
    "mode", "predictions", "loss", "train_op", "eval_metrics", "export_outputs",
    "scaffold_fn", "host_call", "training_hooks", "evaluation_hooks", "prediction_hooks"])):
  """Ops and objects returned from a `model_fn` and passed to `TPUEstimator`.

  See `EstimatorSpec` for `mode`, `predictions`, `loss`, `train_op` and
  `export_outputs`, which are checked as EstimatorSpec checks them.

  Without a TPU (`use_tpu=False`), as in tf.estimator 2.15, `as_estimator_spec`
  turns it into the `EstimatorSpec` that runs:

  * `eval_metrics`: `(metric_fn, tensors)`, tensors a list (passed
    positionally) or a dict (passed by name); `metric_fn` returns the dict of
    `(metric_value, update_op)` that becomes `eval_metric_ops`.
  * `scaffold_fn`: a no-argument function returning the `Scaffold`; called
    right after model_fn, in its graph (so `init_from_checkpoint` in it
    initialises the variables model_fn made).
  * `host_call`: `(host_fn, tensors)` as for eval_metrics; `host_fn` is called
    once, in the graph, and what it returns runs on every step of training,
    evaluation and prediction (TF2 summary writers it creates are initialised
    and flushed).

  Args:
    mode: a `ModeKeys` value.
    predictions: a Tensor or dict of Tensors.
    loss: scalar Tensor.
    train_op: the op of one training step.
    eval_metrics: `(metric_fn, tensors)`.
    export_outputs: dict of signature name to `ExportOutput`.
    scaffold_fn: function returning a `tf.compat.v1.train.Scaffold`.
    host_call: `(host_fn, tensors)`.
    training_hooks: SessionRunHooks run in TRAIN.
    evaluation_hooks: SessionRunHooks run in EVAL.
    prediction_hooks: SessionRunHooks run in PREDICT.

  Raises:
    ValueError, TypeError, RuntimeError: an `eval_metrics` or `host_call` 2.15
      refused, a hook that is not a SessionRunHook, or a field EstimatorSpec
      refuses for `mode`; each with tf.estimator's text first.
  """

  def __new__(cls, mode: Optional[str], predictions: Any = None, loss: Any = None,
              train_op: Any = None, eval_metrics: Any = None, export_outputs: Any = None,
              scaffold_fn: Optional[Callable[[], Any]] = None, host_call: Any = None,
              training_hooks: Optional[Iterable[Any]] = None,
              evaluation_hooks: Optional[Iterable[Any]] = None,
              prediction_hooks: Optional[Iterable[Any]] = None) -> "TPUEstimatorSpec":
    host_calls.validate(_host_calls(eval_metrics, host_call))
    hooks = {}
    for field, given in (("training_hooks", training_hooks),
                         ("evaluation_hooks", evaluation_hooks),
                         ("prediction_hooks", prediction_hooks)):
      hooks[field] = validation.check_hooks(given, f"TPUEstimatorSpec.{field}")
    # The fields the two specs share are checked, in tf.estimator's order and
    # with its texts, by EstimatorSpec; its normalised values are kept (a
    # loss of shape [1] made a scalar, the default serving signature added).
    checked = EstimatorSpec(mode, predictions=predictions, loss=loss, train_op=train_op,
                            export_outputs=export_outputs)
    return super().__new__(
        cls, mode=mode, predictions=checked.predictions, loss=checked.loss,
        train_op=checked.train_op, eval_metrics=eval_metrics,
        export_outputs=checked.export_outputs, scaffold_fn=scaffold_fn, host_call=host_call,
        **hooks)

  def as_estimator_spec(self) -> EstimatorSpec:
    """The equivalent `EstimatorSpec` that CPU/GPU training, evaluation and prediction run.

    Calls `eval_metrics`' and `host_call`'s functions and `scaffold_fn` in the
    current graph.

    Returns:
      An `EstimatorSpec`.
    """
    results = host_calls.call_on_cpu(_host_calls(self.eval_metrics, self.host_call))
    extra_hooks: Tuple[Any, ...] = ()
    if self.host_call is not None:
      extra_hooks = (host_calls.HostCallHook(results["host_call"]),)
    scaffold = self.scaffold_fn() if self.scaffold_fn else None
    return EstimatorSpec(
        mode=self.mode, predictions=self.predictions, loss=self.loss, train_op=self.train_op,
        eval_metric_ops=results.get("eval_metrics"), export_outputs=self.export_outputs,
        scaffold=scaffold, training_hooks=self.training_hooks + extra_hooks,
        evaluation_hooks=self.evaluation_hooks + extra_hooks,
        prediction_hooks=self.prediction_hooks + extra_hooks)


def _host_calls(eval_metrics: Any, host_call: Any) -> Dict[str, Any]:
  calls = {}
  if eval_metrics is not None:
    calls["eval_metrics"] = eval_metrics
  if host_call is not None:
    calls["host_call"] = host_call
  return calls
