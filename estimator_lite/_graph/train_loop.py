"""The in-graph training loop behind RunConfig(steps_per_loop=K).

With K > 1, model_fn is called inside the body of a `tf.while_loop` that reads
the next batch and runs one training step per iteration, so one `Session.run`
trains up to K steps (TPUEstimator's iterations_per_loop, on any device). The
per-step cost of Python, `Session.run` and hooks is paid once per loop.

What changes for the user (docs/performance.md, "steps_per_loop"):
* hooks, logging, summaries and checkpoints happen at loop boundaries: a hook's
  before_run/after_run is called once per K steps, and the `loss` it sees is
  the loss of the loop's last step;
* tensors created in model_fn live inside the loop, so hooks cannot fetch them
  (LoggingTensorHook on a model_fn tensor, say); only `loss` and the global
  step are available outside;
* summaries created in model_fn are not written (only `loss` is);
* max_steps and steps stay exact: the last loop runs only the steps left.
  Where other trainers move the global step too (the chief and workers of a
  ps cluster), each iteration also reads the global step after its update and
  the loop ends at the last step, so training stops there as with one step a
  run: past it by at most the steps other trainers had in flight (one each).
"""
from typing import Any, List, NamedTuple

import numpy as np
import tensorflow as tf

from estimator_lite._graph import cached_reads
from estimator_lite._graph import control_joins
from estimator_lite._graph import packed_transfers
from estimator_lite._util import tf_internals


def _create_outside_loop(next_creator, **kwargs):
  # Variables must live outside the loop body (a function graph): create them
  # in the outer graph, as tf.function does on its first trace.
  with tf.init_scope():
    return next_creator(**kwargs)


class LoopSizeHook(tf.compat.v1.train.SessionRunHook):
  """Feeds how many steps the next loop may run and stops at the last step.

  Args:
    loop: the TrainingLoop (its size and last-step placeholders, the global
      step after it).
    steps_per_loop: K.
    num_steps: train this many steps from the restored step, or None.
    last_step: train until this global step, or None.
  """

  def __init__(self, loop, steps_per_loop, num_steps, last_step):
    self._loop_size = loop.size
    self._loop_last_step = loop.last_step
    self._loop_global_step = loop.global_step
    self._steps_per_loop = steps_per_loop
    self._num_steps = num_steps
    self._last_step = last_step
    self._current = None

  def begin(self):
    self._global_step_read = tf.compat.v1.train.get_global_step().read_value()

  def after_create_session(self, session, coord):
    del coord
    self._current = int(session.run(self._global_step_read))
    if self._num_steps is not None:
      self._last_step = self._current + self._num_steps

  def before_run(self, run_context):
    size = self._steps_per_loop
    if self._last_step is not None:
      size = max(0, min(size, self._last_step - self._current))
    # Only a shorter last loop is fed: a run with a feed goes past
    # FastSession's compiled callable (about 10% of a K=100 loop's time on
    # the linear benchmark model; benchmarks/RESULTS.md).
    feed = {} if size == self._steps_per_loop else {self._loop_size: size}
    # A max_steps is the last-step placeholder's default already; only a
    # last step counted from the restored step (`steps`) is fed.
    if self._loop_last_step is not None and self._num_steps is not None:
      feed[self._loop_last_step] = self._last_step
    return tf.compat.v1.train.SessionRunArgs(self._loop_global_step, feed_dict=feed or None)

  def after_run(self, run_context, run_values):
    self._current = int(run_values.results)
    if self._last_step is not None and self._current >= self._last_step:
      run_context.request_stop()


# Ops of synchronous training (SyncReplicasOptimizer): they gather every
# replica's gradients for one update, a step at a time across processes.
_ACCUMULATOR_OPS = frozenset({"ConditionalAccumulator", "SparseConditionalAccumulator",
                              "ResourceConditionalAccumulator"})


def _refuse_gradient_accumulators(steps_per_loop, error=None):
  """Raises ValueError if model_fn made gradient accumulators in the loop body.

  SyncReplicasOptimizer's accumulators and token queue need every step to be
  its own Session.run (its ops are not built to live in a loop; with them
  model_fn fails with an unrelated-looking graph error), so the loop refuses
  them with a message that says what to do.
  """
  graph = tf.compat.v1.get_default_graph()
  graphs = [graph, getattr(graph, "outer_graph", None)]
  if any(op.type in _ACCUMULATOR_OPS for g in graphs if g is not None
         for op in g.get_operations()):
    raise ValueError(
        f"RunConfig(steps_per_loop={steps_per_loop}): model_fn trains synchronously "
        "(SyncReplicasOptimizer, or another optimizer that accumulates gradients across "
        "replicas), which needs one step a Session.run. Use steps_per_loop=1 for "
        "synchronous training.") from error


def _drop_loop_body_members(graph):
  """Removes tensors/ops of the loop body from the outer graph's collections.

  The body's function graph shares the outer graph's collections, so
  summaries, UPDATE_OPS or LOSSES added in model_fn land there; the outer
  graph cannot run them (merge_all would fail), and they are not needed there.
  """
  dropped_summaries = []
  for key in graph.get_all_collection_keys():
    members = graph.get_collection_ref(key)
    kept = [m for m in members if getattr(m, "graph", graph) is graph]
    if len(kept) != len(members):
      if key == tf.compat.v1.GraphKeys.SUMMARIES:
        dropped_summaries = [m.name for m in members if m not in kept]
      members[:] = kept
  if dropped_summaries:
    tf.compat.v1.logging.warning(
        "With steps_per_loop > 1, summaries created in model_fn are not written: %s",
        dropped_summaries)


class TrainingLoop(NamedTuple):
  """What the hooks feed and fetch around the loop.

  Attributes:
    size: the placeholder giving the number of iterations of a run (K unless fed).
    last_step: the placeholder giving the global step at which the loop ends
      (max_steps unless fed), or None when the loop does not read the global step.
    global_step: the global step after the loop (read once the loop has run, or by
      its last iteration where each iteration reads it).
  """
  size: Any
  last_step: Any
  global_step: Any


def build_training_loop(next_batch, call_model_fn, steps_per_loop, stop_at_global_step,
                        max_steps=None, pack_transfers=False):
  """Builds the while loop; model_fn is called once, inside its body.

  Args:
    next_batch: function returning (features, labels) for one step.
    call_model_fn: function (features, labels) -> TRAIN EstimatorSpec.
    steps_per_loop: default number of iterations per Session.run.
    stop_at_global_step: whether each iteration first reads the global step
      and the loop ends at the last step (other trainers move it too).
    max_steps: the last step, when known now (the placeholder's default, so
      that runs need no feed: a feed goes past FastSession's compiled callable).
    pack_transfers: send the small tensors an iteration passes between tasks
      as one message each way (RunConfig.pack_ps_transfers, packed_transfers.py).

  Returns:
    (spec, TrainingLoop): `spec` is model_fn's EstimatorSpec with `train_op`
    replaced by the whole loop and `loss` by the loss of its last step
    (float32), both usable outside the loop.
  """
  global_step = tf.compat.v1.train.get_global_step()
  loop_size = tf.compat.v1.placeholder_with_default(
      tf.constant(steps_per_loop, tf.int32), [], name="steps_per_loop")
  last_step = None
  if stop_at_global_step:
    last_step = tf.compat.v1.placeholder_with_default(
        tf.constant(np.iinfo(np.int64).max if max_steps is None else max_steps, tf.int64),
        [], name="last_step")
  specs = []
  fills: List[tf.Operation] = []

  # The loop carries the counter, the loss of the last step and, where the
  # condition needs it, the global step after the last step; every value it
  # carries costs a few ops an iteration.
  def cond(i, loss, *step_after):
    del loss
    more = i < loop_size
    if last_step is None:
      return more
    return tf.logical_and(more, step_after[0] < last_step)

  def body(i, loss, *step_after):
    del loss, step_after
    features, labels = next_batch()
    try:
      with tf.variable_creator_scope(_create_outside_loop):
        spec = call_model_fn(features, labels)
    except Exception as error:
      _refuse_gradient_accumulators(steps_per_loop, error)
      raise
    _refuse_gradient_accumulators(steps_per_loop)
    specs.append(spec)
    graph = tf.compat.v1.get_default_graph()
    # What the next iteration must wait for: this one's update.
    update_done = [spec.train_op]
    if pack_transfers:
      cached = cached_reads.cache_reads(graph, spec.train_op, [spec.train_op, spec.loss])
      fills.extend(cached.fills)
      # The updated values reach the copies after the update.
      update_done = list(cached.done) or update_done
    carried = []
    if last_step is not None:
      # The global step as this iteration's update left it, for the next
      # condition: it comes with the message that says the update is done
      # (with the updated values), where a read in the condition would cost
      # one more round trip to the ps an iteration.
      with tf.control_dependencies([spec.train_op]):
        carried.append(global_step.read_value())
    if pack_transfers:
      packed_transfers.pack_transfers(graph, [spec.loss, *update_done, *carried],
                                      loop_body=True)
      control_joins.run_joins_where_awaited(graph, [spec.loss, *update_done, *carried])
    with tf.control_dependencies(update_done):
      return (i + 1, tf.cast(spec.loss, tf.float32), *carried)

  # Each run of the loop copies the variables it caches before its first
  # iteration: the counter's start waits for the copies (cached_reads.py).
  counter_start = tf.identity(tf.constant(0), name="train_loop_start")
  loop_vars = [counter_start, tf.constant(0.0)]
  if last_step is not None:
    loop_vars.append(global_step.read_value())
  outputs = tf.compat.v1.while_loop(cond, body, loop_vars, parallel_iterations=1,
                                    name="train_loop")
  tf_internals.add_control_inputs(counter_start.op, fills)
  last_loss = outputs[1]
  if last_step is None:
    with tf.control_dependencies([last_loss]):
      loop_global_step = tf.identity(global_step.read_value(), name="loop_global_step")
  else:
    loop_global_step = tf.identity(outputs[2], name="loop_global_step")
  _drop_loop_body_members(tf.compat.v1.get_default_graph())
  spec = specs[0]
  loop_op = tf.group(last_loss, loop_global_step, name="train_loop_op")
  # The spec's hooks and scaffold stay; its tensors are replaced by loop
  # outputs, and tensors only the loop body can see are dropped.
  spec = spec.replace(loss=last_loss, train_op=loop_op, predictions=None,
                      eval_metric_ops=None)
  return spec, TrainingLoop(loop_size, last_step, loop_global_step)
