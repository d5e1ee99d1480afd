"""A training step's joins of other tasks' ops run on the task that waits for them.

`tf.group` of ops on several devices (an optimizer's updates of variables on
two ps tasks) makes a NoOp on each device and a last NoOp that waits for
them, placed where the graph's device scope says: on the worker. The global
step's increment, on a ps, waits for that last NoOp. So every step each ps
tells the worker that its update is done and the worker tells the ps, a
round trip through the worker in the step's critical path, each way a
message (benchmarks/RESULTS.md, "Two ps tasks").

`run_joins_where_awaited` places such a join on the one task whose ops wait
for it: there the other tasks' word reaches it directly, and the worker is
out of the path. Only a NoOp is moved, which computes nothing: the graph's
edges, and so what runs after what, are unchanged.
"""
from __future__ import annotations

import collections
from typing import Dict, Iterable, List

import tensorflow as tf

from estimator_lite._graph import placement
from estimator_lite._util import tf_internals


def run_joins_where_awaited(graph: tf.Graph, step_fetches: Iterable[object]) -> List[str]:
  """Moves each NoOp of the step that joins other tasks' ops for one task onto that task.

  A NoOp is moved where none of the ops it waits for is on its own task (the
  move then adds no message), every op that waits for it is on one other
  task, and it is placed by device alone (no colocation, no control flow).

  Args:
    graph: the training graph, or an in-graph loop's body, fully built.
    step_fetches: what every training Session.run fetches (or the loop body
      returns): the step is what they need.

  Returns:
    The names of the NoOps moved.
  """
  step = placement.step_ops(graph, step_fetches)
  captured = placement.captured_ops(graph)
  waiting: Dict[tf.Operation, List[tf.Operation]] = collections.defaultdict(list)
  for op in graph.get_operations():
    for control in op.control_inputs:
      waiting[control].append(op)
  moved = []
  for op in graph.get_operations():
    home = placement.task(op.device)
    if (op.type != "NoOp" or op not in step or home is None or op.inputs
        or tf_internals.in_control_flow(op)
        or op.colocation_groups() != [f"loc:@{op.name}".encode()]):
      continue
    destinations = {placement.task(placement.placed_on(w, captured)) for w in waiting[op]}
    sources = {placement.task(placement.placed_on(c, captured)) for c in op.control_inputs}
    if len(destinations) != 1 or home in destinations or home in sources:
      continue
    (destination,) = destinations
    if destination is not None:
      tf_internals.set_device(op, placement.cpu_of(destination))
      moved.append(op.name)
  return moved
