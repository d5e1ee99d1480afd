"""The global step's reads in a training graph: the one hooks share, and its order against the increment.

Every training hook of TensorFlow's (StepCounterHook, CheckpointSaverHook,
StopAtStepHook, ...) and estimator_lite's step hook fetch the read that
`GLOBAL_STEP_READ_KEY` holds, on every step. TensorFlow's default read is a
`tf.cond` on `is_variable_initialized` that runs as a function call: tens of
µs locally, and about 1 ms a step over gRPC with the global step on a ps.
`create_shared_read` makes it a plain read instead.

The optimizer's increment of the global step and that read run in the same
Session.run with nothing ordering them, so a hook could see either value
(tf.estimator's "global step has not been increased" warnings came from
that). `order_read_before_increments` adds a control edge from the read to
each increment: every hook sees the step as it was when the step ran.
"""
from __future__ import annotations

from typing import Iterable, Optional

import tensorflow as tf

from estimator_lite._util import tf_internals

_INCREMENT_OP_TYPES = ("AssignAddVariableOp", "AssignAdd")


def create_shared_read(graph: tf.Graph, read: Optional[tf.Tensor] = None) -> Optional[tf.Tensor]:
  """Creates (or returns) the global-step read that the hooks share.

  Unlike TensorFlow's own it does not fall back to the initial value when the
  variable is uninitialised: hooks only run it in sessions whose variables
  are initialised (the chief's after initialisation, a worker's once the
  chief has). Under a strategy the read is the strategy's own (`read`): the
  default one would read the initial value broadcast from the chief, and a
  chief-only hook would then wait forever for the workers.

  Args:
    graph: the training graph, with a global step.
    read: the read to share, or None for a plain read of the global step.

  Returns:
    The shared read, or None when the graph has no global step.
  """
  existing = graph.get_collection(tf_internals.GLOBAL_STEP_READ_KEY)
  if existing:
    return existing[0]
  if read is None:
    global_step = tf.compat.v1.train.get_global_step(graph)
    if global_step is None:
      return None
    with graph.as_default(), graph.name_scope(None), graph.name_scope(
        global_step.op.name + "/"):
      read = global_step.read_value()
  graph.add_to_collection(tf_internals.GLOBAL_STEP_READ_KEY, read)
  return read


def order_read_before_increments(graph: tf.Graph, read: tf.Tensor,
                                 step_variables: Iterable[tf.Variable]) -> tf.Tensor:
  """Makes every increment of the global step run after `read`; returns `read`.

  Args:
    graph: the training graph, fully built (model_fn has run).
    read: the shared global-step read.
    step_variables: the global step variable, or every replica's copy of it.
  """
  handles = set()
  for variable in step_variables:
    handles.update(tf_internals.variable_handle_names(variable))
  reader = _reading_op(read)
  for op in graph.get_operations():
    if op.type in _INCREMENT_OP_TYPES and op.inputs and op.inputs[0].name in handles:
      tf_internals.add_control_inputs(op, [reader])
  return read


def _reading_op(read: tf.Tensor) -> tf.Operation:
  """The op that reads the variable for `read`: the ReadVariableOp behind an Identity.

  A resource variable's `read_value()` is an Identity of a ReadVariableOp.
  On a ps cluster the Identity runs on the worker and the read on the ps,
  beside the increment: ordering the increment after the read itself keeps
  that order off the network (one message a step less).
  """
  op = read.op
  if op.type == "Identity" and op.inputs and op.inputs[0].op.type == "ReadVariableOp":
    return op.inputs[0].op
  return op
