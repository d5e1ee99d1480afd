"""The evaluation graph: input, model_fn in EVAL mode, its metrics and the mean loss.

One result (`EvalGraph`) for plain evaluation, built here, and for
RunConfig's eval_distribute strategy, built by strategy.py. The eval session
(estimator_lite/_session/eval_session.py) runs either, and so does the
in-memory evaluator, which builds the graph once and runs it many times.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, Optional, Tuple

import attrs
import tensorflow as tf

from estimator_lite._graph import input_fn as input_fn_lib
from estimator_lite._util import metrics
from estimator_lite._util import validation
from estimator_lite.estimator_spec import EstimatorSpec
from estimator_lite.mode_keys import ModeKeys


@attrs.frozen
class EvalGraph:
  """An evaluation graph ready for a session.

  Attributes:
    scaffold: the model_fn's Scaffold (the replicas' combined, under a strategy).
    update_op: runs one batch: every metric's update and the loss mean's.
    values: the results' tensors: each metric's value (a tensor, or a nested
      tuple of them for a metric of several values), `loss` (the mean loss)
      and `global_step`.
    hooks: the input's hooks, the caller's and the EstimatorSpec's
      evaluation_hooks, in that order.
    input_cardinality: when input_fn returned a tf.data.Dataset, the scalar
      int64 tensor of its number of batches (`input_fn.cardinality`: a count,
      tf.data.INFINITE_CARDINALITY or UNKNOWN_CARDINALITY); None otherwise
      (and under a strategy, which reads the dataset through its own iterator).
    input_batches: the number of batches that cardinality stands for, when
      an evaluation without steps has read it (eval_session.build_graph);
      None when not read or not known.
  """

  scaffold: tf.compat.v1.train.Scaffold
  update_op: tf.Operation
  values: Dict[str, Any]
  hooks: Tuple[tf.compat.v1.train.SessionRunHook, ...]
  input_cardinality: Optional[tf.Tensor] = None
  input_batches: Optional[int] = None


def build(model_fn: Callable[..., EstimatorSpec], input_fn: Callable[..., Any], config: Any,
          params: dict, hooks: Iterable[tf.compat.v1.train.SessionRunHook]) -> EvalGraph:
  """Builds the eval graph (no strategy) in the current default graph.

  Args:
    model_fn: `ModelFn` (features, labels, mode, config) -> EstimatorSpec.
    input_fn: the user's input_fn.
    config: the RunConfig.
    params: the Estimator's params (passed to input_fn).
    hooks: the caller's evaluation hooks.

  Returns:
    An EvalGraph.

  Raises:
    ValueError: a metric named "loss" or "global_step" (the keys evaluate()
      adds).
  """
  graph = tf.compat.v1.get_default_graph()
  tf.compat.v1.set_random_seed(config.tf_random_seed)
  global_step = tf.compat.v1.train.get_or_create_global_step(graph)
  # The input_fn's result itself, not only its features: a Dataset's
  # cardinality tells evaluation whether the input ever ends.
  result = input_fn_lib.call_input_fn(input_fn, ModeKeys.EVAL, params, config)
  features, labels, input_hooks = input_fn_lib.parse_input_fn_result(result)
  spec = model_fn(features, labels, ModeKeys.EVAL, config)
  validation.check_metric_names(spec.eval_metric_ops)
  values, updates = metrics.metric_value_and_update_ops(spec.eval_metric_ops)
  values[validation.LOSS_KEY], loss_update = tf.compat.v1.metrics.mean(spec.loss)
  values[validation.GLOBAL_STEP_KEY] = global_step
  return EvalGraph(scaffold=spec.scaffold, update_op=tf.group(loss_update, *updates),
                   values=values,
                   hooks=tuple(input_hooks) + tuple(hooks) + tuple(spec.evaluation_hooks),
                   input_cardinality=input_fn_lib.cardinality(result))
