"""One message each way between two tasks a training step, however many tensors cross.

On a parameter-server cluster each tensor that an op on one task hands to an
op on another is its own RecvTensor RPC every step: every variable a worker
reads from a ps, every gradient it sends back. On TensorFlow 2.21 such a
message costs hundreds of µs of CPU across the two processes, far more than
the bytes of a small tensor (benchmarks/RESULTS.md, "Parameter-server
clusters"): a linear model's step made five messages of a few bytes each.

`pack_transfers` rewrites a built training graph so that the small tensors
one task sends another within the step travel as one: on the sending task's
CPU each is bitcast to bytes and the bytes concatenated, on the receiving
task's CPU they are split, shaped and bitcast back, and the consumers read
those. The values are bit for bit the same. A consumer now waits for its
whole packet, not only its own tensor; the step needs all of them anyway.

The in-graph loop of RunConfig(steps_per_loop=K) packs its body the same
way, before the loop is made of it (`loop_body=True`): each iteration then
sends one message each way too.

Left alone: tensors of unknown shape (an embedding lookup's rows, a sparse
gradient), over _MAX_PACKED_BYTES, of types with no bytes to cast to
(strings, bools, resources); outside a loop body, values known when the graph
is built (constants, static shapes), which the partition graphs show cost no
message a step; ops inside v1 control flow (a v1 tf.cond or tf.while_loop of
the model's); a loop body's captured tensors, which enter the loop once; and
every edge outside the step (`step_fetches` and what they need): an
initializer, a summary or a checkpoint save runs in a Session.run of its own
and must not wait for reads of variables that may not be initialised yet. A
tensor is not packed where that would make a cycle: where it is computed
after one of the packet's consumers (a read ordered after an update).

Grappler optimizes the new graph as it did the old, except around the new
ops: a model that computes on constants may see arithmetic regrouped there,
and round differently in the last bit.
"""
from __future__ import annotations

import collections
from typing import Dict, Iterable, List, Set, Tuple

import attrs
import tensorflow as tf

from estimator_lite._graph import placement
from estimator_lite._util import tf_internals

# Types that tf.bitcast turns into bytes and back.
_PACKABLE_DTYPES = frozenset([
    tf.float16, tf.bfloat16, tf.float32, tf.float64, tf.int8, tf.int16, tf.int32, tf.int64,
    tf.uint8, tf.uint16, tf.uint32, tf.uint64, tf.complex64, tf.complex128])
# Larger tensors travel alone: their bytes, not the message, are the cost, and
# packing would add a copy of them on the sending side.
_MAX_PACKED_BYTES = 256 * 1024
_SCOPE = "packed_transfers"


@attrs.frozen
class Packet:
  """Tensors that now cross from one task to another as one message a step.

  Attributes:
    source: the sending task ("/job:ps/task:0").
    destination: the receiving task.
    tensors: the names of the tensors it carries, in packing order.
  """

  source: str
  destination: str
  tensors: Tuple[str, ...]


# (tensor, consumer op, input index): one edge of the graph.
_Edge = Tuple[tf.Tensor, tf.Operation, int]


def pack_transfers(graph: tf.Graph, step_fetches: Iterable[object], *,
                   loop_body: bool = False) -> List[Packet]:
  """Packs the step's cross-task tensors, a packet per pair of tasks.

  Args:
    graph: the training graph, fully built (model_fn has run, hooks have not),
      or the body of an in-graph training loop (a while_v2 function graph)
      before the loop is made of it.
    step_fetches: the tensors and ops every training Session.run fetches
      (the train op, the loss, the global-step read), or that the loop body
      returns: the step is what they need.
    loop_body: `graph` is a loop body. Its values known when the graph is
      built are packed too: the loop computes them each iteration, and each
      that crosses tasks is a message an iteration. Tensors the body captures
      from outside enter the loop once, and are left alone.

  Returns:
    The packets made (pairs of tasks with two tensors or more to send).
  """
  step = placement.step_ops(graph, step_fetches)
  captured = placement.captured_ops(graph)
  groups: Dict[Tuple[str, str], List[_Edge]] = collections.defaultdict(list)
  for op in graph.get_operations():
    if op not in step or tf_internals.in_control_flow(op):
      continue
    destination = placement.task(placement.placed_on(op, captured))
    for index, tensor in enumerate(op.inputs):
      source = placement.task(placement.placed_on(tensor.op, captured))
      if (source and destination and source != destination
          and packable(tensor, known_values_travel=loop_body)
          and tensor.op not in captured and not tf_internals.in_control_flow(tensor.op)):
        groups[(source, destination)].append((tensor, op, index))
  packets = []
  for (source, destination), edges in groups.items():
    edges = _without_cycles(graph, edges)
    # By reference: a function graph's tensors cannot be hashed.
    tensors = [ref.deref() for ref in dict.fromkeys(tensor.ref() for tensor, _, _ in edges)]
    if len(tensors) < 2:
      continue
    _pack(graph, source, destination, tensors, edges)
    packets.append(Packet(source, destination, tuple(t.name for t in tensors)))
  return packets


def packable(tensor: tf.Tensor, known_values_travel: bool) -> bool:
  """Whether `tensor` may travel in a packet: small, of a known shape, castable to bytes.

  Args:
    tensor: a tensor that crosses from one task to another.
    known_values_travel: whether a value known when the graph is built is
      sent at all. Outside a loop it is not: TensorFlow makes it a constant
      where it is used (tests/graph/test_packed_transfers.py counts the
      messages); in a loop body it is computed, and sent, each iteration.

  Returns:
    True where the tensor may be packed.
  """
  return (tensor.dtype in _PACKABLE_DTYPES and tensor.shape.is_fully_defined()
          and _size_in_bytes(tensor) <= _MAX_PACKED_BYTES
          and (known_values_travel or tf.get_static_value(tensor) is None))


def _size_in_bytes(tensor: tf.Tensor) -> int:
  return tensor.shape.num_elements() * tensor.dtype.size


def _successors(graph: tf.Graph) -> Dict[tf.Operation, List[tf.Operation]]:
  successors: Dict[tf.Operation, List[tf.Operation]] = collections.defaultdict(list)
  for op in graph.get_operations():
    for tensor in op.inputs:
      successors[tensor.op].append(op)
    for control in op.control_inputs:
      successors[control].append(op)
  return successors


def _without_cycles(graph: tf.Graph, edges: List[_Edge]) -> List[_Edge]:
  """`edges` less those whose tensor runs after one of the others' consumers.

  Packing makes every consumer wait for every tensor of the packet; a tensor
  produced downstream of a consumer would then wait for itself. The graph is
  read afresh for each packet: an earlier packet's ops are paths too.
  """
  successors = _successors(graph)
  while True:
    downstream: Set[tf.Operation] = set()
    pending = [consumer for _, consumer, _ in edges]
    while pending:
      op = pending.pop()
      if op in downstream:
        continue
      downstream.add(op)
      pending.extend(successors.get(op, ()))
    kept = [edge for edge in edges if edge[0].op not in downstream]
    if len(kept) == len(edges):
      return edges
    edges = kept


def _to_bytes(tensor: tf.Tensor) -> tf.Tensor:
  if tensor.dtype != tf.uint8:
    tensor = tf.bitcast(tensor, tf.uint8)
  return tf.reshape(tensor, [-1])


def _from_bytes(data: tf.Tensor, like: tf.Tensor) -> tf.Tensor:
  shape = like.shape.as_list()
  if like.dtype.size > 1:
    shape.append(like.dtype.size)
  data = tf.reshape(data, shape)
  return data if like.dtype == tf.uint8 else tf.bitcast(data, like.dtype)


def _pack(graph: tf.Graph, source: str, destination: str, tensors: List[tf.Tensor],
          edges: List[_Edge]) -> None:
  # Outside any control_dependencies scope: the packet depends on its tensors
  # alone. On each task's CPU: a worker's GPUs share one packet, whose bytes
  # pass through host memory on their way anyway.
  with graph.as_default(), tf.control_dependencies(None), tf.name_scope(_SCOPE):
    with graph.device(None), graph.device(placement.cpu_of(source)):
      packed = tf.concat([_to_bytes(t) for t in tensors], axis=0)
    with graph.device(None), graph.device(placement.cpu_of(destination)):
      parts = tf.split(packed, [_size_in_bytes(t) for t in tensors])
      unpacked = {t.ref(): _from_bytes(part, t) for t, part in zip(tensors, parts)}
  for tensor, consumer, index in edges:
    tf_internals.replace_input(consumer, index, unpacked[tensor.ref()])
