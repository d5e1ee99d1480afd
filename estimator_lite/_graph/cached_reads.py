"""An in-graph loop's variable reads from a copy on the trainer, refreshed by each update.

In RunConfig(steps_per_loop=K)'s loop on a parameter-server cluster, an
iteration that reads its variables from the ps at its start waits for four
messages in turn: the loop's condition to the ps, the values to the trainer,
the gradients to the ps, and word that the update is done back to the
trainer (which starts the next iteration). Each costs a gRPC round on
TensorFlow 2.21 (benchmarks/RESULTS.md, "Parameter-server clusters").

`cache_reads` rewrites a loop body, after model_fn has built it, so that an
iteration needs two: the trainer reads the variables from a copy on its own
CPU, and once the update is done the ps reads them again and the trainer
writes them into the copy. Those values travel back in the message that says
the update is done (packed_transfers.py packs them into one), and the next
iteration starts from them at once. Before the loop's first iteration the
copy is filled from the ps (`fills`: one message a variable, a loop).

The ps reads a variable again once the step's writes of that variable are
done, not the whole train op: with variables on two ps tasks, a read on one
that waited for the global step's increment on the other would wait for a
message between them every iteration. The train op's own task sends word
that the train op is done with its values (`done`).

Each iteration reads what the previous iteration's update left: with one
trainer, the same values as one step a run, bit for bit
(tests/graph/test_cached_reads.py). With other trainers the values are read
just after this trainer's update instead of just before its next step: the
updates that land in between wait for the next iteration, as asynchronous
training has them wait anyway.

Only the reads that begin the step are cached: a dense read (ReadVariableOp)
of a variable on another task, with no control inputs, used on the trainer,
of a shape known when the graph is built, of a type packed_transfers packs,
up to its size limit. Left alone: a read ordered after something (a read
after the update), embedding lookups (rows chosen at run time), ref
variables, and anything on one machine (the devices name no job).
"""
from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple

import attrs
import tensorflow as tf

from estimator_lite._graph import packed_transfers
from estimator_lite._graph import placement
from estimator_lite._util import tf_internals

_SCOPE = "cached_reads"
# Ops of a step that take a variable's handle: reads of it, and writes of it
# (an optimizer's update, an assignment).
_READS = frozenset(["ReadVariableOp", "ResourceGather", "ResourceGatherNd", "VariableShape",
                    "VarIsInitializedOp"])
_WRITES = frozenset(["AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp",
                     "ResourceStridedSliceAssign"])
_WRITE_PREFIXES = ("ResourceApply", "ResourceSparseApply", "ResourceScatter")
# (consumer, input index, consumer's task): a use of a read on another task.
_Use = Tuple[tf.Operation, int, str]


@attrs.frozen
class CachedReads:
  """What the loop around a rewritten body must run.

  Attributes:
    done: what the body's outputs must wait for: the writes of the updated
      values into the copies (the next iteration reads the copies), and the
      train op where no refresh waits for it.
    fills: ops of the outer graph that copy the variables from their tasks;
      each run of the loop must run them before its first iteration.
  """

  done: Tuple[tf.Operation, ...]
  fills: Tuple[tf.Operation, ...]


def cache_reads(body: tf.Graph, train_op: tf.Operation, step_fetches: List[object]) -> CachedReads:
  """Makes the loop body read its variables from copies on the trainer.

  Args:
    body: the loop body (a while_v2 function graph) as model_fn built it,
      before the loop is made of it.
    train_op: the step's train op: each variable is read again after the
      step's writes of it (after the whole train op where they are not known,
      or where it lives on the variable's task).
    step_fetches: what the body returns, or needs (the train op and the
      loss): the step is what they need.

  Returns:
    A CachedReads; empty where nothing is read from another task.
  """
  captured = placement.captured_ops(body)
  train_op_task = placement.task(placement.placed_on(train_op, captured))
  step = placement.step_ops(body, step_fetches)
  # One copy a variable and trainer, however many reads the step makes.
  uses_by_copy: Dict[Tuple[tf.Operation, str], List[_Use]] = {}
  for op in body.get_operations():
    if op.type != "ReadVariableOp" or op not in step:
      continue
    uses = _remote_uses(op, captured)
    if _cacheable(op, uses, captured):
      uses_by_copy.setdefault((op.inputs[0].op, uses[0][2]), []).extend(uses)
  if not uses_by_copy:
    return CachedReads((), ())
  done, fills = [], []
  train_op_awaited = False
  for (handle, trainer), uses in uses_by_copy.items():
    after = _writes(captured[handle], captured, step)
    # Word that the train op is done rides with the values of its own task.
    if after is None or placement.task(placement.placed_on(handle, captured)) == train_op_task:
      after = (after or []) + [train_op]
      train_op_awaited = True
    refresh, fill = _cache(body, captured[handle], handle.outputs[0], trainer, uses, after)
    done.append(refresh)
    fills.append(fill)
  if not train_op_awaited:
    done.append(train_op)
  return CachedReads(tuple(done), tuple(fills))


def _remote_uses(read: tf.Operation, captured: Dict[tf.Operation, tf.Tensor]) -> List[_Use]:
  """(consumer, input index, consumer's task) for each use of `read` on another task."""
  home = placement.task(placement.placed_on(read, captured))
  uses = []
  for consumer in read.outputs[0].consumers():
    destination = placement.task(placement.placed_on(consumer, captured))
    for index, tensor in enumerate(consumer.inputs):
      if tensor.op is read and destination and destination != home:
        uses.append((consumer, index, destination))
  return uses


def _writes(variable: tf.Tensor, captured: Dict[tf.Operation, tf.Tensor],
            step: Set[tf.Operation]) -> Optional[List[tf.Operation]]:
  """The step's ops that write `variable` (an outer handle); None where that is not known.

  Not known where an op of the step takes the handle and is neither a read
  nor a write that TensorFlow's ops for resource variables name (a function
  call, an Identity of the handle), or where nothing in the step writes it.
  """
  handles = [inner for inner, outer in captured.items()
             if outer.op is variable.op and outer.value_index == variable.value_index]
  writes = []
  for handle in handles:
    for op in handle.outputs[0].consumers():
      if op not in step or op.type in _READS:
        continue
      if not (op.type in _WRITES or op.type.startswith(_WRITE_PREFIXES)):
        return None
      writes.append(op)
  return writes or None


def _cacheable(read: tf.Operation, uses: List[_Use],
               captured: Dict[tf.Operation, tf.Tensor]) -> bool:
  return (read.inputs[0].op in captured and not read.control_inputs
          and placement.task(placement.placed_on(read, captured)) is not None
          and len({destination for _, _, destination in uses}) == 1
          and packed_transfers.packable(read.outputs[0], known_values_travel=True))


def _cache(body: tf.Graph, variable: tf.Tensor, body_handle: tf.Tensor, trainer: str,
           uses: List[_Use], after: List[tf.Operation]) -> Tuple[tf.Operation, tf.Operation]:
  """Gives `uses` of reads of `variable` (an outer handle) a copy on `trainer`.

  The copy is refreshed from a read of the variable that waits for `after`.
  Returns (refresh, fill).
  """
  value = uses[0][0].inputs[uses[0][1]]  # the read's value, as its first use takes it
  outer = body.outer_graph
  # The copy and its first fill live in the outer graph, outside any control
  # dependency or device scope of the loop's.
  with outer.as_default(), outer.control_dependencies(None), outer.name_scope(None), \
      outer.name_scope(_SCOPE):
    with outer.device(None), outer.device(placement.cpu_of(trainer)):
      # Named after the variable: a trainer's copies are resources of its
      # own task, one per variable.
      copy = tf.raw_ops.VarHandleOp(dtype=value.dtype, shape=value.shape,
                                    shared_name=outer.unique_name(
                                        f"{_SCOPE}/{variable.op.name}", mark_as_used=True))
    with outer.device(None):
      current = tf.raw_ops.ReadVariableOp(resource=variable, dtype=value.dtype)
    with outer.device(None), outer.device(placement.cpu_of(trainer)):
      fill = tf.raw_ops.AssignVariableOp(resource=copy, value=current)
  with body.control_dependencies(None), tf.name_scope(_SCOPE):
    with body.device(None), body.device(placement.cpu_of(trainer)):
      cached = tf.raw_ops.ReadVariableOp(resource=copy, dtype=value.dtype)
    for consumer, index, _ in uses:
      tf_internals.replace_input(consumer, index, cached)
    # Runs where the variable lives (a reader is placed with its resource).
    with body.device(None), body.control_dependencies(after):
      updated = tf.raw_ops.ReadVariableOp(resource=body_handle, dtype=value.dtype)
    # After the iteration's reads of the copy: the copy keeps their values.
    with body.device(None), body.device(placement.cpu_of(trainer)), \
        body.control_dependencies([cached.op]):
      refresh = tf.raw_ops.AssignVariableOp(resource=copy, value=updated)
  return refresh, fill
