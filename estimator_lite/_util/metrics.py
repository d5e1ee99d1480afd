"""Turns eval_metric_ops (tuples or Keras metric objects) into value and update ops."""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Tuple

import tensorflow as tf

from estimator_lite._util import tf_internals

_ASSIGN_OP_TYPES = frozenset(
    ("AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp", "Assign",
     "AssignAdd", "AssignSub"))


def _is_keras_metric(value: Any) -> bool:
  return not isinstance(value, tuple)


def keras_metric_update_op(metric: Any, graph: tf.Graph) -> tf.Operation:
  """The op that applies every update_state() call made on `metric` in model_fn.

  tf-keras metrics record their update ops in `metric.updates`. Keras 3 metrics
  return None from update_state() in graph mode, so their updates are found as
  the assignments to the metric's variables that are not its initialisers.
  """
  updates = list(getattr(metric, "updates", None) or ())
  if not updates:
    handles = set()
    initializers = set()
    for variable in metric.variables:
      # A Keras 3 Variable proxies `handle` but has no `initializer`: unwrap it
      # to its tf.Variable, or the initialiser's Assign would be taken for an
      # update and reset the metric on every batch (result 0).
      variable = variable if hasattr(variable, "initializer") else getattr(variable, "value", variable)
      handle = getattr(variable, "handle", None)
      if handle is not None:
        handles.add(handle.name)
      init = getattr(variable, "initializer", None)
      if init is not None:
        initializers.add(init.name)
    for op in graph.get_operations():
      if (op.type in _ASSIGN_OP_TYPES and op.name not in initializers and op.inputs and
          op.inputs[0].name in handles):
        updates.append(op)
    # Some Keras 3 updates do not read the data (Mean's count += batch size
    # from a static shape), so they would still run in the Session.run whose
    # input iterator hits end-of-input and count one batch too many. Make
    # them wait for the input, as tf.compat.v1.metrics do.
    input_ops = [op for op in graph.get_operations() if op.type == "IteratorGetNext"]
    for op in updates:
      tf_internals.add_control_inputs(op, input_ops)
  if not updates:
    raise ValueError(
        f"Please call update_state(...) on the {metric.name!r} metric inside "
        "model_fn before returning it in eval_metric_ops.")
  return tf.group(*updates)


def _track_metric_variables(metric: Any, graph: tf.Graph) -> None:
  """Makes the metric's variables local variables, so the Scaffold initialises them."""
  local = {id(v) for v in graph.get_collection(tf.compat.v1.GraphKeys.LOCAL_VARIABLES)}
  global_ = {id(v) for v in graph.get_collection(tf.compat.v1.GraphKeys.GLOBAL_VARIABLES)}
  for variable in metric.variables:
    variable = variable if hasattr(variable, "initializer") else getattr(variable, "value", variable)
    if id(variable) in local:
      continue
    if id(variable) in global_:
      # A metric's state must not be saved or restored with the model.
      global_list = graph.get_collection_ref(tf.compat.v1.GraphKeys.GLOBAL_VARIABLES)
      global_list[:] = [v for v in global_list if v is not variable]
    graph.add_to_collection(tf.compat.v1.GraphKeys.LOCAL_VARIABLES, variable)
    graph.add_to_collection(tf.compat.v1.GraphKeys.METRIC_VARIABLES, variable)


def metric_value_and_update_ops(eval_metric_ops: Mapping[str, Any], graph: tf.Graph
                                ) -> Tuple[Dict[str, tf.Tensor], List[Any]]:
  """Splits eval_metric_ops into ({name: value tensor}, [update ops]).

  Args:
    eval_metric_ops: dict name -> (value, update_op) or Keras metric object.
    graph: the evaluation graph.

  Returns:
    (dict of name to value tensor, list of update ops).
  """
  values, updates = {}, []
  for name, metric in eval_metric_ops.items():
    if _is_keras_metric(metric):
      _track_metric_variables(metric, graph)
      values[name] = metric.result()
      updates.append(keras_metric_update_op(metric, graph))
    else:
      values[name], update = metric
      updates.append(update)
  return values, updates
