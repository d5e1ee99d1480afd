"""The per-step work Estimator.train does by default, as one hook.

tf.estimator trained with five TensorFlow hooks that each fetch the loss or
the global step on every step and decide in Python whether their work is due:
`NanTensorHook(loss)`, `LoggingTensorHook({"loss", "step"})`, `StopAtStepHook`,
and, on the chief, MonitoredTrainingSession's `StepCounterHook` and
`SummarySaverHook`. On a small model that protocol is most of the per-step
cost above `Session.run` (benchmarks/RESULTS.md, "Step cost"): about 50 µs of
Python a step for five requests, five results and five due-checks.

`TrainingStepHook` does the same work with one request, `(loss, step)` (plus
the summary op on the steps it is due), and integer comparisons. It keeps
each hook's contract: the same log lines ("loss = ..., step = ... (... sec)",
"global_step/sec: ..."), the same events at the same steps (the session-start
log, summaries at the first step and every `save_summary_steps` after,
`global_step/sec` every `log_step_count_steps`), the same stop step, and the
NaN guard's `NanLossAtStepError`. Where those hooks read the global step again
before acting on a due step (another worker may have moved it), so does this
one, once a step.

With RunConfig(steps_per_loop=K > 1) each Session.run trains K steps and
`step` is the global step after the run (read once the loop has run), so no
part reads it again; the parts act at loop boundaries as StepCounterHook with
`steps_per_run=K` did (see `steps_per_run` below).

Its parts run in the order tf.estimator's hooks ran within a step: step
counter and summaries (MonitoredTrainingSession put them first), the NaN
guard, the stop check, the loss log. Estimator runs this hook before every
other hook, so the NaN guard raises before a user's hook or a checkpoint saver
sees the failed step (see Estimator._training_hooks).
"""
import time

import numpy as np
import tensorflow as tf
from tensorflow.python.training import training_util  # pylint: disable=g-direct-tensorflow-import

from estimator_lite import _nan_loss

_logging = tf.compat.v1.logging
# TensorFlow's StepCounterHook warns this many times, then stays quiet.
_STALE_STEP_WARNINGS = 5


# Each part keeps the step (or iteration) at which it is next due, so the
# per-step check is one comparison. It is what SecondOrStepTimer's
# should_trigger_for_step decides for a step-only timer: due at once, then
# `every` after the step it last triggered at (steps and iterations only grow,
# so its "not the same step again" test never decides anything here).
_AT_ONCE = float("-inf")


class TrainingStepHook(tf.compat.v1.train.SessionRunHook):
  """NaN guard, loss log, stop step, step rate and summaries in one hook.

  Args:
    loss: the scalar training loss.
    step: the global step as the step ran (read before its increment, as the
      hooks of tf.estimator shared it).
    num_steps: stop after this many steps from the step the session starts
      at (StopAtStepHook's num_steps), or None.
    last_step: stop once the global step reaches this (StopAtStepHook's
      last_step), or None.
    log_every_n_iter: log "loss = ..., step = ..." every this many
      `Session.run` calls (LoggingTensorHook's every_n_iter), or None.
    output_dir: where the step rate and the summaries are written; None
      writes neither (a non-chief task).
    count_every_n_steps: write and log `global_step/sec` every this many
      steps (StepCounterHook's every_n_steps), or None.
    summary_every_n_steps: run and write the scaffold's summary op every this
      many steps (SummarySaverHook's save_steps), or None.
    scaffold: the Scaffold whose `summary_op` is written.
    steps_per_run: training steps per Session.run. With more than one,
      `step` must be the global step after the run; the step rate and the
      summaries are then written at the first run boundary at or after each
      due step (a run's summaries are asked for when a run of this many
      steps would reach the due step).

  Raises:
    ValueError: both num_steps and last_step, or summaries without a scaffold.
  """

  def __init__(self, loss, step, *, num_steps=None, last_step=None, log_every_n_iter=None,
               output_dir=None, count_every_n_steps=None, summary_every_n_steps=None,
               scaffold=None, steps_per_run=1):
    if num_steps is not None and last_step is not None:
      raise ValueError("Only one of num_steps or last_step can be specified.")
    if summary_every_n_steps and output_dir and scaffold is None:
      raise ValueError("Summaries need the Scaffold whose summary_op they write.")
    self._loss = loss
    self._step = step
    self._num_steps = num_steps
    self._last_step = last_step
    self._log_every = log_every_n_iter or None
    self._output_dir = output_dir
    self._count_every = (count_every_n_steps or None) if output_dir else None
    self._summary_every = (summary_every_n_steps or None) if output_dir else None
    self._scaffold = scaffold
    self._steps_per_run = steps_per_run

  def begin(self):
    # The read TensorFlow's hooks share, for the extra read on due steps
    # (`step` may be a loop output, which must not run again alone).
    self._global_step_read = training_util._get_or_create_global_step_read()  # pylint: disable=protected-access
    self._writer = None
    if self._count_every or self._summary_every:
      self._writer = tf.compat.v1.summary.FileWriterCache.get(self._output_dir)
      self._rate_tag = tf.compat.v1.train.get_global_step().op.name + "/sec"
    # StepCounterHook's timer and last stale step.
    self._count_due_at = _AT_ONCE
    self._count_last_step = self._count_last_time = self._previous_step = None
    # SummarySaverHook's timer and next step.
    self._summary_due_at = _AT_ONCE
    self._summary_next_step = None
    # LoggingTensorHook's iteration count and timer.
    self._iterations = 0
    self._log_due_at = _AT_ONCE
    self._log_last_time = None
    self._plain_args = tf.compat.v1.train.SessionRunArgs((self._loss, self._step))
    self._summary_args = self._plain_args

  def after_create_session(self, session, coord):
    del coord
    if self._last_step is None and self._num_steps is not None:
      self._last_step = int(session.run(self._global_step_read)) + self._num_steps
    # The scaffold is finalized (its summary op merged) when the session is created.
    if self._summary_every:
      summary_op = self._scaffold.summary_op
      if summary_op is not None:
        summary_ops = summary_op if isinstance(summary_op, list) else [summary_op]
        self._summary_args = tf.compat.v1.train.SessionRunArgs(
            (self._loss, self._step, summary_ops))

  def before_run(self, run_context):
    del run_context
    self._summarize = self._summary_every is not None and (
        self._summary_next_step is None or self._summary_next_step >= self._summary_due_at)
    self._log = self._log_every is not None and self._iterations >= self._log_due_at
    return self._summary_args if self._summarize else self._plain_args

  def after_run(self, run_context, run_values):
    results = run_values.results
    loss, stale_step = results[0], int(results[1])
    if self._steps_per_run == 1:
      self._current_step = None
    else:
      # `step` was read after the run: it is the current step, and the step
      # the run's last training step ran at is one less.
      self._current_step, stale_step = stale_step, stale_step - 1
    session = run_context.session
    if self._count_every is not None:
      self._count_steps(stale_step, session)
    if self._summary_every is not None:
      self._write_summaries(stale_step, session, results)
    if loss != loss:  # NaN: the only value unequal to itself
      _logging.error("Model diverged with loss = NaN at global step %d.", stale_step)
      raise _nan_loss.NanLossAtStepError(stale_step)
    if self._last_step is not None and stale_step + 1 >= self._last_step:
      if self._read_step(session) >= self._last_step:
        run_context.request_stop()
    if self._log:
      self._log_loss(loss, results[1])
    self._iterations += 1

  def end(self, session):
    del session
    if self._writer is not None:
      self._writer.flush()

  def _read_step(self, session):
    """The global step after this step ran, read once a step and only when a part needs it."""
    if self._current_step is None:
      self._current_step = int(session.run(self._global_step_read))
    return self._current_step

  def _count_steps(self, stale_step, session):
    """StepCounterHook.after_run."""
    if stale_step + 1 >= self._count_due_at:
      step = self._read_step(session)
      if step >= self._count_due_at:
        now = time.time()
        if self._count_last_time is not None:
          rate = (step - self._count_last_step) / (now - self._count_last_time)
          self._writer.add_summary(
              tf.compat.v1.Summary(value=[tf.compat.v1.Summary.Value(
                  tag=self._rate_tag, simple_value=rate)]), step)
          _logging.info("%s: %g", self._rate_tag, rate)
        self._count_last_step, self._count_last_time = step, now
        self._count_due_at = step + self._count_every
    if stale_step == self._previous_step:
      # Some optimizers (SyncReplicasOptimizer on a worker) do not increase
      # the step on every run, so this is a warning, and only the first few.
      _logging.log_first_n(
          _logging.WARN,
          "It seems that global step (tf.train.get_global_step) has not been increased. "
          "Current value (could be stable): %s vs previous value: %s. You could "
          "increase the global step by passing tf.train.get_global_step() to "
          "Optimizer.apply_gradients or Optimizer.minimize.",
          _STALE_STEP_WARNINGS, stale_step, self._previous_step)
    self._previous_step = stale_step

  def _write_summaries(self, stale_step, session, results):
    """SummarySaverHook.after_run."""
    step = stale_step + 1
    if self._summary_next_step is None or self._summarize:
      step = self._read_step(session)
    if self._summary_next_step is None:
      self._writer.add_session_log(
          tf.compat.v1.SessionLog(status=tf.compat.v1.SessionLog.START), step)
    if self._summarize:
      self._summary_due_at = step + self._summary_every
      if len(results) > 2:
        for summary in results[2]:
          self._writer.add_summary(summary, step)
    self._summary_next_step = step + self._steps_per_run

  def _log_loss(self, loss, step):
    """LoggingTensorHook._log_tensors for {"loss": loss, "step": step}."""
    original = np.get_printoptions()
    np.set_printoptions(suppress=True)
    now = time.time()
    elapsed = None if self._log_last_time is None else now - self._log_last_time
    self._log_due_at, self._log_last_time = self._iterations + self._log_every, now
    # "%s" (str), not an f-string: format() prints a float32 as a float64.
    stats = "loss = %s, step = %s" % (loss, step)
    if elapsed is None:
      _logging.info("%s", stats)
    else:
      _logging.info("%s (%.3f sec)", stats, elapsed)
    np.set_printoptions(**original)

