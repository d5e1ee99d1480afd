"""Where the ops of a training step run: the task of a cluster each one is on.

The graph rewrites for parameter-server clusters (packed_transfers.py,
cached_reads.py) need to know which of a step's tensors cross from one task
to another before TensorFlow's placer has run; these are the placer's rules
that matter to them, and what a step is.
"""
from typing import Dict, Iterable, Optional, Set

import tensorflow as tf


def captured_ops(graph: tf.Graph) -> Dict[tf.Operation, tf.Tensor]:
  """A function graph's placeholders for captured tensors, each to the outer tensor.

  Empty for a graph that is not a function graph (a while_v2 loop body is one).
  """
  return {internal.op: external for external, internal in getattr(graph, "captures", ())}


def placed_on(op: tf.Operation, captured: Dict[tf.Operation, tf.Tensor]) -> str:
  """The device `op` runs on: a resource's reader or writer runs where the resource lives.

  TensorFlow's placer puts an op that takes a variable's handle on the
  handle's device, whatever the op's own device says (a read that
  replica_device_setter put on the worker runs on the ps). A captured
  placeholder (`captured`, from `captured_ops`) stands for its outer tensor.
  """
  if op in captured:
    return placed_on(captured[op].op, {})
  for tensor in op.inputs:
    if tensor.dtype == tf.resource:
      return placed_on(tensor.op, captured)
  return op.device


def task(device: str) -> Optional[str]:
  """The task of `device` ("/job:ps/task:0"), or None where the device names no job."""
  if not device:
    return None
  spec = tf.DeviceSpec.from_string(device)
  if spec.job is None:
    return None
  replica = f"/replica:{spec.replica}" if spec.replica else ""
  return f"/job:{spec.job}{replica}/task:{spec.task or 0}"


def cpu_of(task_name: str) -> str:
  """The CPU device of a task ("/job:ps/task:0" -> "/job:ps/task:0/device:CPU:0")."""
  return task_name + "/device:CPU:0"


def step_ops(graph: tf.Graph, fetches: Iterable[object]) -> Set[tf.Operation]:
  """The ops a Session.run of `fetches` runs: them and all they need (data and control)."""
  seen: Set[tf.Operation] = set()
  pending = [graph.as_graph_element(f) for f in fetches]
  pending = [op if isinstance(op, tf.Operation) else op.op for op in pending]
  while pending:
    op = pending.pop()
    if op in seen:
      continue
    seen.add(op)
    pending.extend(tensor.op for tensor in op.inputs)
    pending.extend(op.control_inputs)
  return seen
