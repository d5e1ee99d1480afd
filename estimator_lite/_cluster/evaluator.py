"""The evaluation half of train_and_evaluate.

* `Evaluator`: evaluates one checkpoint (writing eval[_NAME] events through
  Estimator.evaluate) and runs the EvalSpec's exporters on it.
* `eval_cadence`: when the next evaluation may happen; EvalSpec.throttle_secs
  between evaluation starts, or EvalSpec.every_n_steps (a `Cadence`).
* `NewCheckpointListenerForEvaluate`: local and master mode; evaluates after
  checkpoint saves, as the cadence allows, and once at the end of training.
* `run_continuous_evaluation`: the evaluator task; watches model_dir and
  evaluates each new checkpoint once, until the one at or past max_steps.
"""
from __future__ import annotations

import os
import re
import time
from typing import Any, List, Optional, Set, Tuple

import attrs
import tensorflow as tf

from estimator_lite._cluster import stop_marker
from estimator_lite._util import cadence as cadence_lib
from estimator_lite._util import events
from estimator_lite._util import op_errors
from estimator_lite._util.validation import GLOBAL_STEP_KEY

_logging = tf.compat.v1.logging
# How often the evaluator looks at model_dir/checkpoint (a stat of one small
# file while nothing changes): a new checkpoint is seen within this much time.
_POLL_SECS = 0.25
# Re-read the checkpoint index at least this often even if its stat looks
# unchanged (a file system whose timestamps are coarse, or a remote one).
_FORCED_REREAD_SECS = 5.0
_WAITING_LOG_SECS = 600
_STEP_SUFFIX = re.compile(r"-(\d+)$")
# What restoring a checkpoint raises when its files are gone, cut short
# (OutOfRange: "Read less bytes than requested"), damaged or not readable.
_UNREADABLE = (tf.errors.NotFoundError, tf.errors.DataLossError, tf.errors.OutOfRangeError,
               tf.errors.PermissionDeniedError)


class EvalStatus:  # pylint: disable=too-few-public-methods
  """What an evaluation attempt did."""
  EVALUATED = "evaluated"
  MISSING_CHECKPOINT = "missing checkpoint"
  NO_NEW_CHECKPOINT = "no new checkpoint"
  CHECKPOINT_DELETED = "checkpoint deleted"
  CHECKPOINT_UNREADABLE = "checkpoint unreadable"


@attrs.frozen
class EvalResult:
  """The outcome of one evaluation attempt: status, metrics dict, checkpoint path."""
  status: str
  metrics: Optional[dict] = None
  checkpoint_path: Optional[str] = None

  @property
  def global_step(self) -> int:
    """The evaluated checkpoint's global step.

    Raises:
      ValueError: the attempt evaluated nothing.
    """
    if self.metrics is None:
      raise ValueError(f"No global step: the evaluation attempt ended with {self.status!r}.")
    return int(self.metrics[GLOBAL_STEP_KEY])


def checkpoint_step(checkpoint_path: Optional[str]) -> Optional[int]:
  """The global step in a checkpoint path's `-N` suffix, or None when it has none."""
  match = _STEP_SUFFIX.search(os.path.basename(checkpoint_path or ""))
  return int(match.group(1)) if match else None


def _checkpoint_exists(checkpoint_path: str) -> bool:
  # V2 checkpoints have an .index file; V1 ones are a single file.
  return tf.io.gfile.exists(checkpoint_path + ".index") or tf.io.gfile.exists(checkpoint_path)


class Evaluator:
  """Evaluates checkpoints with an EvalSpec and exports them with its exporters.

  Args:
    estimator: the Estimator.
    eval_spec: the EvalSpec.
    max_training_steps: TrainSpec.max_steps; a checkpoint at or past it is the
      final export (`is_the_final_export=True`), as is one at or past the step
      where an early-stopping hook ended training (`stop_marker`).
  """

  def __init__(self, estimator: Any, eval_spec: Any, max_training_steps: Optional[int]):
    self._estimator = estimator
    self._eval_spec = eval_spec
    self._max_training_steps = max_training_steps
    self._previous_checkpoint_path: Optional[str] = None
    self._last_warning_time = 0.0
    # Early stopping ends training like max_steps (see stop_marker.py).
    self.stop_marker = stop_marker.StopMarkerWatcher(
        estimator.model_dir, checkpoint_step(estimator.latest_checkpoint()))

  def is_final(self, step: Optional[int], force_read: bool = False) -> bool:
    """Whether a checkpoint at `step` is the last: at or past max_steps, or an early stop.

    Args:
      step: the checkpoint's global step (None: unknown, never final by max_steps).
      force_read: read the early-stopping marker now, not at its interval.
    """
    if self._max_training_steps and step is not None and step >= self._max_training_steps:
      return True
    return self.stop_marker.is_final(step, force_read=force_read)

  def evaluate_and_export(self, checkpoint_path: Optional[str] = None
                          ) -> Tuple[EvalResult, List[Any]]:
    """Evaluates `checkpoint_path` (the latest one by default) and exports it.

    A checkpoint deleted before it could be read (keep_checkpoint_max on a
    chief that saves faster than this evaluates) is not an error: the result
    has status CHECKPOINT_DELETED and the caller moves on to a newer one.
    Nor is one whose files exist but cannot be read (damaged or unreadable
    storage), unless it is the final one: status CHECKPOINT_UNREADABLE, with
    a warning naming it and the cause; training goes on and saves newer ones.

    Returns:
      (EvalResult, list of export results, one per exporter).
    """
    checkpoint_path = checkpoint_path or self._estimator.latest_checkpoint()
    if not checkpoint_path:
      self._log_throttled("Estimator is not trained yet. Will start an evaluation when "
                          "a checkpoint is ready.")
      return EvalResult(EvalStatus.MISSING_CHECKPOINT), []
    if checkpoint_path == self._previous_checkpoint_path:
      self._log_throttled(
          "No new checkpoint ready for evaluation. Skip the current evaluation pass as "
          "evaluation results are expected to be same for the same checkpoint.")
      return EvalResult(EvalStatus.NO_NEW_CHECKPOINT), []
    try:
      metrics = self._estimator.evaluate(
          input_fn=self._eval_spec.input_fn, steps=self._eval_spec.steps,
          name=self._eval_spec.name, checkpoint_path=checkpoint_path,
          hooks=list(self._eval_spec.hooks))
    except _UNREADABLE + (ValueError,) as e:
      # Saver.restore raises ValueError for a checkpoint gone before the
      # restore, NotFoundError/DataLossError for one going during it. Anything
      # else (or a ValueError on a checkpoint that still exists: a model that
      # does not fit it) is real.
      if _checkpoint_exists(checkpoint_path):
        if isinstance(e, ValueError) or self.is_final(checkpoint_step(checkpoint_path)):
          raise
        _logging.warning(
            "Checkpoint %s cannot be read (%s); skipping it. Training goes on, and the "
            "next checkpoint will be evaluated.", checkpoint_path, op_errors.summary(e))
        return EvalResult(EvalStatus.CHECKPOINT_UNREADABLE), []
      _logging.warning(
          "Checkpoint %s was deleted before it could be evaluated (the chief keeps "
          "only RunConfig.keep_checkpoint_max checkpoints); moving on to the newest "
          "one.", checkpoint_path)
      return EvalResult(EvalStatus.CHECKPOINT_DELETED), []
    result = EvalResult(EvalStatus.EVALUATED, metrics, checkpoint_path)
    export_results = self._export(result, self.is_final(metrics[GLOBAL_STEP_KEY],
                                                        force_read=True))
    self._last_warning_time = 0
    self._previous_checkpoint_path = checkpoint_path
    return result, export_results

  def _export(self, eval_result: EvalResult, is_the_final_export: bool) -> List[Any]:
    export_dir_base = os.path.join(os.fspath(self._estimator.model_dir), "export")
    results = []
    for exporter in self._eval_spec.exporters:
      results.append(exporter.export(
          self._estimator, os.path.join(export_dir_base, exporter.name),
          eval_result.checkpoint_path, eval_result.metrics, is_the_final_export))
    return results

  def _log_throttled(self, message: str) -> None:
    now = time.time()
    if now - self._last_warning_time > _WAITING_LOG_SECS:
      _logging.warning(message)
      self._last_warning_time = now


def eval_cadence(eval_spec: Any) -> cadence_lib.Cadence:
  """When evaluations may start: every EvalSpec.every_n_steps (at its multiples), else
  at most every EvalSpec.throttle_secs.

  With every_n_steps a checkpoint is due when its step reaches the next
  multiple of N past the last evaluated step (so with checkpoints every 10
  steps and N=20, steps 20, 40, ...); throttle_secs is then ignored.
  """
  if eval_spec.every_n_steps is not None:
    return cadence_lib.Cadence(every_steps=eval_spec.every_n_steps, aligned=True)
  return cadence_lib.Cadence(every_secs=eval_spec.throttle_secs)


def _describe(cadence: cadence_lib.Cadence) -> str:
  setting = "EvalSpec.every_n_steps" if cadence.by_steps else "EvalSpec.throttle_secs"
  return f"{cadence.describe()} ({setting})"


class NewCheckpointListenerForEvaluate(tf.compat.v1.train.CheckpointSaverListener):
  """Evaluates after checkpoint saves (as the cadence allows) and at the end of training.

  The save made when the session starts is skipped: the model has not
  trained since it was last saved.

  Args:
    evaluator: an `Evaluator`.
    cadence: the EvalSpec's cadence (eval_cadence).
  """

  def __init__(self, evaluator: Evaluator, cadence: cadence_lib.Cadence):
    self._evaluator = evaluator
    self._cadence = cadence
    self.eval_result: Optional[EvalResult] = None
    self.export_results: Optional[List[Any]] = None

  def begin(self) -> None:
    self._cadence.reset()
    self._is_first_run = True
    self._last_evaluated_step: Optional[int] = None

  def after_save(self, session: Any, global_step_value: int) -> None:
    del session
    if self._is_first_run:
      self._is_first_run = False
      self._cadence.skip_to(global_step_value)
      return
    if self._cadence.is_due(global_step_value):
      self._evaluate(global_step_value)
    else:
      _logging.info("Skip the current checkpoint eval: evaluating %s.", _describe(self._cadence))

  def end(self, session: Any, global_step_value: int) -> None:
    del session
    if global_step_value != self._last_evaluated_step:
      self._evaluate(global_step_value)

  def _evaluate(self, global_step_value: int) -> None:
    self._last_evaluated_step = global_step_value
    start = self._cadence.now()
    self.eval_result, self.export_results = self._evaluator.evaluate_and_export()
    if self.eval_result.status != EvalStatus.EVALUATED:
      raise RuntimeError(
          "There was no new checkpoint after the training. Eval status: "
          f"{self.eval_result.status}")
    self._cadence.fire(self.eval_result.global_step, at=start)


class _CheckpointWatcher:
  """The newest checkpoint of a model_dir, re-read only when its index file changes."""

  def __init__(self, model_dir: str):
    self._model_dir = model_dir
    self._index = os.path.join(model_dir, "checkpoint")
    self._local = "://" not in model_dir
    self._signature: Any = None
    self._read_at: Optional[float] = None
    self._newest: Optional[str] = None

  def _stat(self) -> Any:
    if not self._local:
      return None
    try:
      info = os.stat(self._index)
    except OSError:
      return "missing"
    # Saver replaces the index by renaming a new file over it: a new inode.
    return (info.st_ino, info.st_mtime_ns, info.st_size)

  def newest(self) -> Optional[str]:
    signature = self._stat()
    now = time.monotonic()
    if (signature is None or signature != self._signature or self._read_at is None or
        now - self._read_at >= _FORCED_REREAD_SECS):
      self._signature, self._read_at = signature, now
      # None while there is none, or while the newest one's files are missing.
      self._newest = tf.train.latest_checkpoint(self._model_dir)
    return self._newest


def _evaluated_before(checkpoint_path: str, name_step: Optional[int],
                      evaluated_steps: Set[int]) -> bool:
  """Whether `evaluated_steps` (from the eval events) holds this checkpoint's evaluation.

  Eval events carry the global step stored *in* the checkpoint. On a cluster
  that can be past the step in its name (a worker's steps land while the
  chief saves; never before it), so the checkpoint is read when its name
  alone cannot tell.
  """
  if not evaluated_steps or (name_step is not None and name_step > max(evaluated_steps)):
    return False
  try:
    step = int(tf.train.load_variable(checkpoint_path, tf.compat.v1.GraphKeys.GLOBAL_STEP))
  except (tf.errors.OpError, ValueError):
    return False  # gone or unreadable: evaluate_and_export handles it
  return step in evaluated_steps


def run_continuous_evaluation(estimator: Any, eval_spec: Any, max_training_steps: Optional[int],
                              poll_secs: float = _POLL_SECS
                              ) -> Optional[Tuple[EvalResult, List[Any]]]:
  """The evaluator task: evaluates each new checkpoint in model_dir once.

  Waits `eval_spec.start_delay_secs`, then polls model_dir every `poll_secs`;
  evaluates the newest checkpoint when the cadence allows (never one it has
  already tried), and returns after evaluating one at or past
  `max_training_steps` (never, if that is None), or at or past the step where
  an early-stopping hook ended training (experimental.early_stopping).
  Checkpoints whose global step already has results in the eval directory
  (an earlier run of this evaluator, killed and restarted) are skipped; the
  final one is evaluated and exported regardless.

  Returns:
    (EvalResult, export results) of the last evaluation (None: never returns
    without one).
  """
  # Created before the delay: the newest checkpoint now tells an early stop of
  # this run from one of an earlier run.
  evaluator = Evaluator(estimator, eval_spec, max_training_steps)
  if eval_spec.start_delay_secs:
    _logging.info("Waiting %g secs before starting eval.", eval_spec.start_delay_secs)
    time.sleep(eval_spec.start_delay_secs)
  if not max_training_steps:
    _logging.info("TrainSpec.max_steps is None: evaluating new checkpoints until stopped.")
  cadence = eval_cadence(eval_spec)
  watcher = _CheckpointWatcher(estimator.model_dir)
  _logging.info("Evaluating new checkpoints in %s %s.", estimator.model_dir, _describe(cadence))
  # An evaluator killed and restarted must not evaluate again what its earlier
  # run did (a second point per step in TensorBoard, and wasted time): the
  # eval events record every evaluated step. The final checkpoint is the
  # exception: the earlier run may have died before its final export.
  eval_dir = estimator.eval_dir(eval_spec.name)
  evaluated_before = set(events.read_eval_metrics(eval_dir))
  if evaluated_before:
    _logging.info("%s already holds evaluations of %d checkpoints (up to global step %d): "
                  "those are not evaluated again.", eval_dir, len(evaluated_before),
                  max(evaluated_before))
  tried: Set[Optional[str]] = set()
  last_waiting_log = time.monotonic()
  last: Optional[Tuple[EvalResult, List[Any]]] = None
  while True:
    path = watcher.newest()
    if path in tried and evaluator.stop_marker.is_final(checkpoint_step(path)):
      if last and evaluator.stop_marker.is_final(last[0].global_step):
        _logging.info("Exiting evaluation: training stopped early at global_step=%s.",
                      evaluator.stop_marker.stop_step())
        return last
      tried.discard(path)  # skipped by the cadence before the stop was known
      continue
    if path is None or path in tried:
      if time.monotonic() - last_waiting_log >= _WAITING_LOG_SECS:
        _logging.info("Waiting for a new checkpoint in %s.", estimator.model_dir)
        last_waiting_log = time.monotonic()
      time.sleep(poll_secs)
      continue
    step = checkpoint_step(path)
    is_final = evaluator.is_final(step)
    if not is_final and _evaluated_before(path, step, evaluated_before):
      tried.add(path)
      cadence.skip_to(step)  # the every_n_steps cadence goes on from there
      _logging.info("Skipping checkpoint %s: already evaluated (see %s).", path, eval_dir)
      continue
    if not is_final and cadence.by_steps and not cadence.is_due(step):
      tried.add(path)
      _logging.info("Skipping checkpoint %s: evaluating %s.", path, _describe(cadence))
      continue
    wait = cadence.secs_until_due()
    if wait > 0:
      # Look again when allowed: by then the newest checkpoint may be another.
      time.sleep(min(wait, poll_secs))
      continue
    tried.add(path)
    start = cadence.now()
    result, export_results = evaluator.evaluate_and_export(path)
    last_waiting_log = time.monotonic()
    evaluated = result.status == EvalStatus.EVALUATED
    # The throttle counts from the start of every attempt, evaluated or not.
    cadence.fire(result.global_step if evaluated else None, at=start)
    if not evaluated:
      continue
    global_step = result.global_step
    last = (result, export_results)
    if max_training_steps and global_step >= max_training_steps:
      _logging.info("Exiting evaluation, global_step=%s >= train max_steps=%s",
                    global_step, max_training_steps)
      return result, export_results
