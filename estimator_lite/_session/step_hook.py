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
guard, the stop check, the loss log. The training session runs this hook
before every other hook, so the NaN guard raises before a user's hook or a
checkpoint saver sees the failed step (see training_session.py).

Each part's cadence is a `Cadence` (estimator_lite/_util/cadence.py) whose
`next_step` the per-step check compares with: one comparison a part.
"""
from __future__ import annotations

import time
from typing import Any, Optional, Tuple

import numpy as np
import tensorflow as tf

from estimator_lite._util import cadence as cadence_lib
from estimator_lite._util import tf_internals

_logging = tf.compat.v1.logging
# TensorFlow's StepCounterHook warns this many times, then stays quiet.
_STALE_STEP_WARNINGS = 5


class NanLossAtStepError(tf.compat.v1.train.NanLossDuringTrainingError):
  """A NanLossDuringTrainingError (so existing `except` clauses catch it) that names the step."""

  def __init__(self, step: int):
    super().__init__()
    self.step = step

  def __str__(self) -> str:
    return (f"NaN loss during training at global step {self.step}. The latest "
            "checkpoint holds the weights from before it; lower the learning rate, "
            "clip gradients or check the input for NaN/inf, then restart.")


def _every(steps: Optional[int]) -> Optional[cadence_lib.Cadence]:
  return cadence_lib.Cadence(every_steps=steps) if steps else None


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

  def __init__(self, loss: tf.Tensor, step: tf.Tensor, *, num_steps: Optional[int] = None,
               last_step: Optional[int] = None, log_every_n_iter: Optional[int] = None,
               output_dir: Optional[str] = None, count_every_n_steps: Optional[int] = None,
               summary_every_n_steps: Optional[int] = None,
               scaffold: Optional[tf.compat.v1.train.Scaffold] = None, steps_per_run: int = 1):
    if num_steps is not None and last_step is not None:
      raise ValueError("Only one of num_steps or last_step can be specified.")
    if summary_every_n_steps and output_dir and scaffold is None:
      raise ValueError("Summaries need the Scaffold whose summary_op they write.")
    self._loss = loss
    self._step = step
    self._num_steps = num_steps
    self._last_step = last_step
    self._output_dir = output_dir
    # None: the part is off.
    self._log_cadence = _every(log_every_n_iter)
    self._count_cadence = _every(count_every_n_steps) if output_dir else None
    self._summary_cadence = _every(summary_every_n_steps) if output_dir else None
    self._scaffold = scaffold
    self._steps_per_run = steps_per_run

  def begin(self) -> None:
    # The read TensorFlow's hooks share, for the extra read on due steps
    # (`step` may be a loop output, which must not run again alone).
    self._global_step_read = tf_internals.global_step_read()
    self._writer: Any = None
    if self._count_cadence or self._summary_cadence:
      self._writer = tf.compat.v1.summary.FileWriterCache.get(self._output_dir)
      self._rate_tag = tf.compat.v1.train.get_global_step().op.name + "/sec"
    for cadence in (self._log_cadence, self._count_cadence, self._summary_cadence):
      if cadence is not None:
        cadence.reset()
    # StepCounterHook's last rate point (step, time) and last stale step.
    self._count_last: Optional[Tuple[int, float]] = None
    self._previous_step: Optional[int] = None
    # SummarySaverHook's next step.
    self._summary_next_step: Optional[int] = None
    # LoggingTensorHook's iteration count and time of the last log.
    self._iterations = 0
    self._log_last_time: Optional[float] = None
    # The global step after the current run, once read (see _read_step).
    self._current_step: Optional[int] = None
    self._plain_args = tf.compat.v1.train.SessionRunArgs((self._loss, self._step))
    self._summary_args = self._plain_args

  def after_create_session(self, session: Any, coord: Any) -> None:
    del coord
    if self._last_step is None and self._num_steps is not None:
      self._last_step = int(session.run(self._global_step_read)) + self._num_steps
    # The scaffold is finalized (its summary op merged) when the session is created.
    if self._summary_cadence and self._scaffold is not None:
      summary_op = self._scaffold.summary_op
      if summary_op is not None:
        summary_ops = summary_op if isinstance(summary_op, list) else [summary_op]
        self._summary_args = tf.compat.v1.train.SessionRunArgs(
            (self._loss, self._step, summary_ops))

  def before_run(self, run_context: Any) -> Any:
    del run_context
    self._summarize = self._summary_cadence is not None and (
        self._summary_next_step is None or
        self._summary_next_step >= self._summary_cadence.next_step)
    self._log = self._log_cadence is not None and self._iterations >= self._log_cadence.next_step
    return self._summary_args if self._summarize else self._plain_args

  def after_run(self, run_context: Any, run_values: Any) -> None:
    results = run_values.results
    loss, stale_step = results[0], int(results[1])
    if self._steps_per_run == 1:
      self._current_step = None
    else:
      # `step` was read after the run: it is the current step, and the step
      # the run's last training step ran at is one less.
      self._current_step, stale_step = stale_step, stale_step - 1
    session = run_context.session
    count_cadence, summary_cadence = self._count_cadence, self._summary_cadence
    if count_cadence is not None:
      self._count_steps(count_cadence, stale_step, session)
    if summary_cadence is not None:
      self._write_summaries(summary_cadence, stale_step, session, results)
    if loss != loss:  # NaN: the only value unequal to itself
      _logging.error("Model diverged with loss = NaN at global step %d.", stale_step)
      raise NanLossAtStepError(stale_step)
    if self._last_step is not None and stale_step + 1 >= self._last_step:
      if self._read_step(session) >= self._last_step:
        run_context.request_stop()
    if self._log:
      self._log_loss(loss, results[1])
    self._iterations += 1

  def end(self, session: Any) -> None:
    del session
    if self._writer is not None:
      self._writer.flush()

  def _read_step(self, session: Any) -> int:
    """The global step after this step ran, read once a step and only when a part needs it."""
    if self._current_step is None:
      self._current_step = int(session.run(self._global_step_read))
    return self._current_step

  def _count_steps(self, cadence: cadence_lib.Cadence, stale_step: int, session: Any) -> None:
    """StepCounterHook.after_run."""
    if stale_step + 1 >= cadence.next_step:
      step = self._read_step(session)
      if step >= cadence.next_step:
        now = time.time()
        if self._count_last is not None:
          last_step, last_time = self._count_last
          rate = (step - last_step) / (now - last_time)
          self._writer.add_summary(
              tf.compat.v1.Summary(value=[tf.compat.v1.Summary.Value(
                  tag=self._rate_tag, simple_value=rate)]), step)
          _logging.info("%s: %g", self._rate_tag, rate)
        self._count_last = (step, now)
        cadence.fire(step)
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

  def _write_summaries(self, cadence: cadence_lib.Cadence, stale_step: int, session: Any,
                       results: Any) -> None:
    """SummarySaverHook.after_run."""
    step = stale_step + 1
    if self._summary_next_step is None or self._summarize:
      step = self._read_step(session)
    if self._summary_next_step is None:
      self._writer.add_session_log(
          tf.compat.v1.SessionLog(status=tf.compat.v1.SessionLog.START), step)
    if self._summarize:
      cadence.fire(step)
      if len(results) > 2:
        for summary in results[2]:
          self._writer.add_summary(summary, step)
    self._summary_next_step = step + self._steps_per_run

  def _log_loss(self, loss: Any, step: Any) -> None:
    """LoggingTensorHook._log_tensors for {"loss": loss, "step": step}."""
    original = np.get_printoptions()
    np.set_printoptions(suppress=True)
    now = time.time()
    elapsed = None if self._log_last_time is None else now - self._log_last_time
    if self._log_cadence is not None:
      self._log_cadence.fire(self._iterations)
    self._log_last_time = now
    # "%s" (str), not an f-string: format() prints a float32 as a float64.
    stats = "loss = %s, step = %s" % (loss, step)
    if elapsed is None:
      _logging.info("%s", stats)
    else:
      _logging.info("%s (%.3f sec)", stats, elapsed)
    np.set_printoptions(**original)

