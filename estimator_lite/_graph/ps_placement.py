"""Which ps task each variable of a between-graph cluster lives on.

tf.estimator's replica_device_setter dealt the variables to the ps tasks in
turn (round robin), whatever their size: a model with one large embedding and
a few dense layers put the embedding and every other large variable on one
task, which then did most of the work of each step and saturated first.
"by_size" (the default) puts each variable, as it is created, on the task
that holds the fewest bytes so far, as TensorFlow's former
GreedyLoadBalancingStrategy did. Either way only devices change: variable
names, checkpoints and results are the same, and a model_dir written under
one placement restores under the other (the Saver restores by name).
"""
from __future__ import annotations

from typing import Any, Callable, List, Optional

import tensorflow as tf

BY_SIZE = "by_size"
ROUND_ROBIN = "round_robin"
PLACEMENTS = (BY_SIZE, ROUND_ROBIN)


def variable_bytes(op: Any) -> int:
  """The bytes a variable op holds (an Operation or a NodeDef); 0 where its size is unknown.

  A hash table, or a variable of unknown shape or of a dtype without a fixed
  size (string), counts 0: it then goes to the task with the fewest bytes.
  """
  node_def = op.node_def if isinstance(op, tf.Operation) else op
  attrs = node_def.attr
  if "shape" not in attrs or "dtype" not in attrs:
    return 0
  shape = tf.TensorShape(attrs["shape"].shape)
  if not shape.is_fully_defined():
    return 0
  return shape.num_elements() * tf.as_dtype(attrs["dtype"].type).size


class BySize:
  """A replica_device_setter `ps_strategy`: each variable to the ps task holding the fewest bytes.

  Ties go to the task with fewer variables, then the lower index, so that
  every task gets a variable before any gets a second one (as round robin
  did): a checkpoint is sharded over as many ps tasks under either placement.

  Args:
    num_tasks: the number of ps tasks.
  """

  def __init__(self, num_tasks: int) -> None:
    self._bytes: List[int] = [0] * num_tasks
    self._count: List[int] = [0] * num_tasks

  def __call__(self, op: Any) -> int:
    task = min(range(len(self._bytes)), key=lambda i: (self._bytes[i], self._count[i], i))
    self._bytes[task] += variable_bytes(op)
    self._count[task] += 1
    return task


def replica_device_setter(placement: str, ps_tasks: int, worker_device: str,
                          cluster: tf.train.ClusterSpec) -> Callable[..., str]:
  """tf.estimator's device function for a ps cluster, with the variables placed by `placement`.

  Args:
    placement: BY_SIZE or ROUND_ROBIN (tf.estimator's).
    ps_tasks: the number of ps tasks (> 0).
    worker_device: this task's device ("/job:worker/task:1"); every op that
      is not a variable runs there.
    cluster: the cluster's ClusterSpec.

  Returns:
    A device function for `tf.Graph.device`.

  Raises:
    ValueError: an unknown placement.
  """
  strategy: Optional[Callable[[Any], int]]
  if placement == BY_SIZE:
    strategy = BySize(ps_tasks)
  elif placement == ROUND_ROBIN:
    strategy = None  # replica_device_setter's own, tf.estimator's
  else:
    raise ValueError(f"ps_placement must be one of {PLACEMENTS}; got {placement!r}.")
  return tf.compat.v1.train.replica_device_setter(
      ps_tasks=ps_tasks, worker_device=worker_device, merge_devices=True, cluster=cluster,
      ps_strategy=strategy)
