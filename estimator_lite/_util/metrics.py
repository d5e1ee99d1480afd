"""Keras metric objects in eval_metric_ops: their update ops, graph and collections."""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Tuple

import tensorflow as tf

from estimator_lite._util import tf_internals

_ASSIGN_OP_TYPES = frozenset(
    ("AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp", "Assign",
     "AssignAdd", "AssignSub"))
# tf.estimator's text for a metric object whose update_state() was never called.
NO_UPDATES_ERROR = 'Please call update_state(...) on the "{}" metric'


def is_keras_metric(value: Any) -> bool:
  """True for a Keras metric object (tf-keras or Keras 3), duck-typed."""
  return (callable(getattr(value, "update_state", None)) and
          callable(getattr(value, "result", None)) and hasattr(value, "variables"))


def _tf_variable(variable: Any) -> Any:
  # A Keras 3 Variable proxies `handle` but has no `initializer`: unwrap it to
  # its tf.Variable, or its initialiser's Assign would be taken for an update.
  return variable if hasattr(variable, "initializer") else getattr(variable, "value", variable)


def metric_graph(metric: Any) -> tf.Graph:
  """The graph the metric's variables live in (the default graph if it has none)."""
  for variable in metric.variables:
    graph = getattr(_tf_variable(variable), "graph", None)
    if graph is not None:
      return graph
  return tf.compat.v1.get_default_graph()


def keras_metric_updates(metric: Any) -> List[tf.Operation]:
  """The ops every update_state() call made on `metric` added to its graph.

  tf-keras metrics record their update ops in `metric.updates`. Keras 3 metrics
  return None from update_state() in graph mode, so their updates are found as
  the assignments to the metric's variables that are not its initialisers.
  Nothing is changed in the graph.

  Raises:
    ValueError: update_state() was not called (tf.estimator's text).
  """
  updates = list(getattr(metric, "updates", None) or ())
  if not updates:
    handles, initializers = set(), set()
    for variable in metric.variables:
      variable = _tf_variable(variable)
      handle = getattr(variable, "handle", None)
      if handle is not None:
        handles.add(handle.name)
      init = getattr(variable, "initializer", None)
      if init is not None:
        initializers.add(init.name)
    updates = [op for op in metric_graph(metric).get_operations()
               if op.type in _ASSIGN_OP_TYPES and op.name not in initializers and op.inputs
               and op.inputs[0].name in handles]
  if not updates:
    raise ValueError(
        NO_UPDATES_ERROR.format(metric.name) + ". Call it inside model_fn, on the "
        "tensors model_fn was given, before returning the metric in eval_metric_ops.")
  return updates


def keras_metric_update_op(metric: Any, graph: tf.Graph,
                           updates: Optional[List[tf.Operation]] = None) -> Any:
  """One op (or tensor) that applies every update_state() call made on `metric` in model_fn.

  One recorded update is returned itself, as tf.estimator returned
  `metric.updates[0]`; several (update_state() called more than once, which
  tf.estimator ran only the first of) are grouped.

  Args:
    metric: the Keras metric object.
    graph: the graph of its updates.
    updates: `keras_metric_updates(metric)`, if the caller has them already
      (for Keras 3 metrics they are found by scanning the graph).

  Raises:
    ValueError: update_state() was not called.
  """
  updates = updates if updates is not None else keras_metric_updates(metric)
  if not getattr(metric, "updates", None):  # found by scanning the graph (Keras 3)
    # Some Keras 3 updates do not read the data (Mean's count += batch size
    # from a static shape), so they would still run in the Session.run whose
    # input iterator hits end-of-input and count one batch too many. Make
    # them wait for the input, as tf.compat.v1.metrics do.
    input_ops = [op for op in graph.get_operations() if op.type == "IteratorGetNext"]
    for op in updates:
      tf_internals.add_control_inputs(op, input_ops)
  elif len(updates) == 1:
    return updates[0]
  return tf.group(*updates)


def add_to_metric_collections(metric: Any, graph: tf.Graph) -> None:
  """Puts the metric's variables in LOCAL_VARIABLES and METRIC_VARIABLES, as tf.estimator did.

  LOCAL_VARIABLES gets them initialised by the Scaffold (and not restored from
  a checkpoint); METRIC_VARIABLES is where tools such as TFMA look for them.
  A metric's state must not be saved with the model, so a variable Keras 3
  put in GLOBAL_VARIABLES is taken out of it.
  """
  local = {id(v) for v in graph.get_collection(tf.compat.v1.GraphKeys.LOCAL_VARIABLES)}
  in_metrics = {id(v) for v in graph.get_collection(tf.compat.v1.GraphKeys.METRIC_VARIABLES)}
  global_list = graph.get_collection_ref(tf.compat.v1.GraphKeys.GLOBAL_VARIABLES)
  for variable in metric.variables:
    variable = _tf_variable(variable)
    if any(v is variable for v in global_list):
      global_list[:] = [v for v in global_list if v is not variable]
    if id(variable) not in local:
      graph.add_to_collection(tf.compat.v1.GraphKeys.LOCAL_VARIABLES, variable)
    if id(variable) not in in_metrics:
      graph.add_to_collection(tf.compat.v1.GraphKeys.METRIC_VARIABLES, variable)


def metric_value_and_update_ops(eval_metric_ops: Mapping[str, Tuple[Any, Any]]
                                ) -> Tuple[Dict[str, Any], List[Any]]:
  """Splits an EstimatorSpec's eval_metric_ops into ({name: value}, [update ops]).

  Args:
    eval_metric_ops: name -> (value, update_op), where value may be a nested
      structure of tensors (EstimatorSpec turned Keras metric objects into
      such pairs).

  Returns:
    (dict of name to value (a tensor or nested structure), list of update ops).
  """
  values, updates = {}, []
  for name, (value, update) in eval_metric_ops.items():
    values[name] = value
    updates.append(update)
  return values, updates
