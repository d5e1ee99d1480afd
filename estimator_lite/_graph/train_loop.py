"""The in-graph training loop behind RunConfig(steps_per_loop=K).

With K > 1, model_fn is called inside the body of a `tf.while_loop` that reads
the next batch and runs one training step per iteration, so one `Session.run`
trains up to K steps (TPUEstimator's iterations_per_loop, on any device). The
per-step cost of Python, `Session.run` and hooks is paid once per loop.

What changes for the user (README, "steps_per_loop"):
* hooks, logging, summaries and checkpoints happen at loop boundaries: a hook's
  before_run/after_run is called once per K steps, and the `loss` it sees is
  the loss of the loop's last step;
* tensors created in model_fn live inside the loop, so hooks cannot fetch them
  (LoggingTensorHook on a model_fn tensor, say); only `loss` and the global
  step are available outside;
* summaries created in model_fn are not written (only `loss` is);
* max_steps and steps stay exact: the last loop runs only the steps left.
"""
import tensorflow as tf


def _create_outside_loop(next_creator, **kwargs):
  # Variables must live outside the loop body (a function graph): create them
  # in the outer graph, as tf.function does on its first trace.
  with tf.init_scope():
    return next_creator(**kwargs)


class LoopSizeHook(tf.compat.v1.train.SessionRunHook):
  """Feeds how many steps the next loop may run and stops at the last step.

  Args:
    loop_size: the placeholder giving the number of iterations of a run.
    loop_global_step: the global step after the loop (read once the loop has run).
    steps_per_loop: K.
    num_steps: train this many steps from the restored step, or None.
    last_step: train until this global step, or None.
  """

  def __init__(self, loop_size, loop_global_step, steps_per_loop, num_steps, last_step):
    self._loop_size = loop_size
    self._loop_global_step = loop_global_step
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
    feed = None if size == self._steps_per_loop else {self._loop_size: size}
    return tf.compat.v1.train.SessionRunArgs(self._loop_global_step, feed_dict=feed)

  def after_run(self, run_context, run_values):
    self._current = int(run_values.results)
    if self._last_step is not None and self._current >= self._last_step:
      run_context.request_stop()


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


def build_training_loop(next_batch, call_model_fn, steps_per_loop):
  """Builds the while loop; model_fn is called once, inside its body.

  Args:
    next_batch: function returning (features, labels) for one step.
    call_model_fn: function (features, labels) -> TRAIN EstimatorSpec.
    steps_per_loop: default number of iterations per Session.run.

  Returns:
    (spec, loop_size placeholder, loop_global_step): `spec` is model_fn's
    EstimatorSpec with `train_op` replaced by the whole loop and `loss` by the
    loss of its last step (float32), both usable outside the loop.
  """
  global_step = tf.compat.v1.train.get_global_step()
  loop_size = tf.compat.v1.placeholder_with_default(
      tf.constant(steps_per_loop, tf.int32), [], name="steps_per_loop")
  specs = []

  def body(i, loss):
    del loss
    features, labels = next_batch()
    with tf.variable_creator_scope(_create_outside_loop):
      spec = call_model_fn(features, labels)
    specs.append(spec)
    with tf.control_dependencies([spec.train_op]):
      return i + 1, tf.cast(spec.loss, tf.float32)

  # Every value the loop carries costs a few ops per iteration, so it carries
  # only the counter and the loss; the global step is read once, after it.
  _, last_loss = tf.compat.v1.while_loop(
      lambda i, loss: i < loop_size, body, [tf.constant(0), tf.constant(0.0)],
      parallel_iterations=1, name="train_loop")
  with tf.control_dependencies([last_loss]):
    loop_global_step = tf.identity(global_step.read_value(), name="loop_global_step")
  _drop_loop_body_members(tf.compat.v1.get_default_graph())
  spec = specs[0]
  loop_op = tf.group(last_loss, loop_global_step, name="train_loop_op")
  # The spec's hooks and scaffold stay; its tensors are replaced by loop
  # outputs, and tensors only the loop body can see are dropped.
  spec = spec.replace(loss=last_loss, train_op=loop_op, predictions=None,
                      eval_metric_ops=None)
  return spec, loop_size, loop_global_step
