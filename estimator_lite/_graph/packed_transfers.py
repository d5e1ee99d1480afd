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

A constant made on one task and used on another is a message of its own
every step too: TensorFlow copies no constant from task to task. An
optimizer's learning rate is one (the optimizer makes it on the worker, the
update uses it on the ps). Outside a loop body each such constant is made
again on the device that uses it, and nothing is sent.

Left alone: tensors of unknown shape (an embedding lookup's rows, a sparse
gradient), over _MAX_PACKED_BYTES, of types with no bytes to cast to
(strings, bools, resources); outside a loop body, other values known when the
graph is built (static shapes computed from constants), which Grappler folds
into a constant where they are used; ops inside v1 control flow (a v1
tf.cond or tf.while_loop of the model's); a loop body's captured tensors,
which enter the loop once; and every edge outside the step (`step_fetches`
and what they need): an initializer, a summary or a checkpoint save runs in a
Session.run of its own and must not wait for reads of variables that may not
be initialised yet. A constant that waits for something (made under
tf.control_dependencies) keeps its wait, and is sent.

Where a tensor is computed after one of the packet's consumers, packing it
with the others would make the step wait for itself: a gradient that follows
from the rows an embedding lookup on the ps returned for ids the worker
sent, or a read ordered after an update. Such tensors travel in a later
packet of the same two tasks, a second message in the step.

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
_COPIES_SCOPE = "copied_constants"


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
  """Packs the step's cross-task tensors, and copies its cross-task constants where used.

  Args:
    graph: the training graph, fully built (model_fn has run, hooks have not),
      or the body of an in-graph training loop (a while_v2 function graph)
      before the loop is made of it.
    step_fetches: the tensors and ops every training Session.run fetches
      (the train op, the loss, the global-step read), or that the loop body
      returns: the step is what they need.
    loop_body: `graph` is a loop body. Its values known when the graph is
      built are packed too, constants included (not copied): the loop
      computes them each iteration, and each that crosses tasks is a message
      an iteration. Tensors the body captures from outside enter the loop
      once, and are left alone.

  Returns:
    The packets made: each carries two tensors or more from one task to
    another; two tasks have a second packet where some of their tensors
    follow from the first packet's consumers.
  """
  step = placement.step_ops(graph, step_fetches)
  captured = placement.captured_ops(graph)
  groups: Dict[Tuple[str, str], List[_Edge]] = collections.defaultdict(list)
  constants: Dict[Tuple[object, str], List[_Edge]] = collections.defaultdict(list)
  for op in graph.get_operations():
    if op not in step or tf_internals.in_control_flow(op):
      continue
    device = placement.placed_on(op, captured)
    destination = placement.task(device)
    for index, tensor in enumerate(op.inputs):
      source = placement.task(placement.placed_on(tensor.op, captured))
      if (not source or not destination or source == destination or tensor.op in captured
          or tf_internals.in_control_flow(tensor.op)):
        continue
      if not loop_body and _copyable_constant(tensor):
        constants[(tensor.ref(), device)].append((tensor, op, index))
      elif packable(tensor, known_values_travel=loop_body):
        groups[(source, destination)].append((tensor, op, index))
  for (_, device), edges in constants.items():
    _copy_constant(graph, device, edges)
  packets = []
  for (source, destination), pending in groups.items():
    while pending:
      edges, pending = _first_wave(graph, pending)
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
  return (tensor.dtype in _PACKABLE_DTYPES and _small(tensor)
          and (known_values_travel or tf.get_static_value(tensor) is None))


def _copyable_constant(tensor: tf.Tensor) -> bool:
  """Whether `tensor` is a small constant that its consumer's task can make itself.

  A constant placed on one task and used on another (an optimizer's learning
  rate, made on the worker and used by the update on the ps) is sent every
  step, a message of its own: TensorFlow copies no constant across tasks.
  """
  return (tensor.op.type == "Const" and not tensor.op.control_inputs
          and tensor.dtype in _PACKABLE_DTYPES | {tf.bool} and _small(tensor))


def _small(tensor: tf.Tensor) -> bool:
  """Of a shape known when the graph is built, and at most _MAX_PACKED_BYTES."""
  return tensor.shape.is_fully_defined() and _size_in_bytes(tensor) <= _MAX_PACKED_BYTES


def _copy_constant(graph: tf.Graph, device: str, edges: List[_Edge]) -> None:
  """Gives the consumers in `edges`, all on `device`, a copy of their constant made there."""
  tensor = edges[0][0]
  with graph.as_default(), tf.control_dependencies(None), tf.name_scope(_COPIES_SCOPE):
    with graph.device(None), graph.device(device):
      copy = tf.constant(tf.get_static_value(tensor), dtype=tensor.dtype,
                         name=tensor.op.name.rsplit("/", 1)[-1])
  for _, consumer, index in edges:
    tf_internals.replace_input(consumer, index, copy)


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


def _first_wave(graph: tf.Graph, edges: List[_Edge]) -> Tuple[List[_Edge], List[_Edge]]:
  """(`edges` that can travel as one packet, the rest): the rest run after a consumer.

  Packing makes every consumer wait for every tensor of the packet; a tensor
  produced downstream of a consumer would then wait for itself. An embedding
  lookup on the ps takes the ids the worker computed, and the gradients
  follow from the rows it returns: the ids go first, the gradients in a
  later packet. The first wave is never empty (the graph has no cycle). The
  graph is read afresh for each packet: an earlier packet's ops are paths too.
  """
  successors = _successors(graph)
  later: List[_Edge] = []
  while True:
    downstream: Set[tf.Operation] = set()
    pending = [consumer for _, consumer, _ in edges]
    while pending:
      op = pending.pop()
      if op in downstream:
        continue
      downstream.add(op)
      pending.extend(successors.get(op, ()))
    first = [edge for edge in edges if edge[0].op not in downstream]
    later += [edge for edge in edges if edge[0].op in downstream]
    if len(first) == len(edges):
      return edges, later
    edges = first


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
