"""The evaluation half of train_and_evaluate.

* `Evaluator`: evaluates one checkpoint (writing eval[_NAME] events through
  Estimator.evaluate) and runs the EvalSpec's exporters on it.
* `EvalCadence`: when the next evaluation may happen; EvalSpec.throttle_secs
  between evaluation starts, or EvalSpec.every_n_steps.
* `NewCheckpointListenerForEvaluate`: local and master mode; evaluates after
  checkpoint saves, as the cadence allows, and once at the end of training.
* `run_continuous_evaluation`: the evaluator task; watches model_dir and
  evaluates each new checkpoint once, until the one at or past max_steps.
"""
import os
import re
import time

import attrs
import tensorflow as tf

from estimator_lite.experimental import early_stopping

_logging = tf.compat.v1.logging
_GLOBAL_STEP = "global_step"
# How often the evaluator looks at model_dir/checkpoint (a stat of one small
# file while nothing changes): a new checkpoint is seen within this much time.
_POLL_SECS = 0.25
# Re-read the checkpoint index at least this often even if its stat looks
# unchanged (a file system whose timestamps are coarse, or a remote one).
_FORCED_REREAD_SECS = 5.0
_WAITING_LOG_SECS = 600
_STEP_SUFFIX = re.compile(r"-(\d+)$")


class EvalStatus:
  """What an evaluation attempt did."""
  EVALUATED = "evaluated"
  MISSING_CHECKPOINT = "missing checkpoint"
  NO_NEW_CHECKPOINT = "no new checkpoint"
  CHECKPOINT_DELETED = "checkpoint deleted"


@attrs.frozen
class EvalResult:
  """The outcome of one evaluation attempt: status, metrics dict, checkpoint path."""
  status: str
  metrics: dict = None
  checkpoint_path: str = None


def checkpoint_step(checkpoint_path):
  """The global step in a checkpoint path's `-N` suffix, or None when it has none."""
  match = _STEP_SUFFIX.search(os.path.basename(checkpoint_path or ""))
  return int(match.group(1)) if match else None


def _checkpoint_exists(checkpoint_path):
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

  def __init__(self, estimator, eval_spec, max_training_steps):
    self._estimator = estimator
    self._eval_spec = eval_spec
    self._max_training_steps = max_training_steps
    self._previous_checkpoint_path = None
    self._last_warning_time = 0
    # Early stopping ends training like max_steps (see experimental.early_stopping).
    self.stop_marker = early_stopping.StopMarkerWatcher(
        estimator.model_dir, checkpoint_step(estimator.latest_checkpoint()))

  def evaluate_and_export(self, checkpoint_path=None):
    """Evaluates `checkpoint_path` (the latest one by default) and exports it.

    A checkpoint deleted before it could be read (keep_checkpoint_max on a
    chief that saves faster than this evaluates) is not an error: the result
    has status CHECKPOINT_DELETED and the caller moves on to a newer one.

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
    except (tf.errors.NotFoundError, tf.errors.DataLossError, ValueError):
      # Saver.restore raises ValueError for a checkpoint gone before the
      # restore, NotFoundError/DataLossError for one going during it. Anything
      # else (or these errors on a checkpoint that still exists) is real.
      if _checkpoint_exists(checkpoint_path):
        raise
      _logging.warning(
          "Checkpoint %s was deleted before it could be evaluated (the chief keeps "
          "only RunConfig.keep_checkpoint_max checkpoints); moving on to the newest "
          "one.", checkpoint_path)
      return EvalResult(EvalStatus.CHECKPOINT_DELETED), []
    result = EvalResult(EvalStatus.EVALUATED, metrics, checkpoint_path)
    is_the_final_export = (bool(self._max_training_steps) and (
        metrics[_GLOBAL_STEP] >= self._max_training_steps)) or self.stop_marker.is_final(
            metrics[_GLOBAL_STEP], force_read=True)
    export_results = self._export(result, is_the_final_export)
    self._last_warning_time = 0
    self._previous_checkpoint_path = checkpoint_path
    return result, export_results

  def _export(self, eval_result, is_the_final_export):
    export_dir_base = os.path.join(os.fspath(self._estimator.model_dir), "export")
    results = []
    for exporter in self._eval_spec.exporters:
      results.append(exporter.export(
          self._estimator, os.path.join(export_dir_base, exporter.name),
          eval_result.checkpoint_path, eval_result.metrics, is_the_final_export))
    return results

  def _log_throttled(self, message):
    now = time.time()
    if now - self._last_warning_time > _WAITING_LOG_SECS:
      _logging.warning(message)
      self._last_warning_time = now


class EvalCadence:
  """When the next evaluation may start.

  With `every_n_steps`, a checkpoint is due when its step crosses a multiple
  of N past the last evaluated step (so with checkpoints every 10 steps and
  N=20, steps 20, 40, ...); `throttle_secs` is then ignored. Otherwise an
  evaluation may start `throttle_secs` after the previous one started.

  Args:
    throttle_secs: seconds between evaluation starts.
    every_n_steps: None, or evaluate every N global steps.
  """

  def __init__(self, throttle_secs, every_n_steps=None):
    self._throttle_secs = throttle_secs
    self._every_n_steps = every_n_steps
    self._last_step = None
    self._last_start = None

  @property
  def by_steps(self):
    return self._every_n_steps is not None

  def set_baseline(self, step):
    """Counts steps from `step` (the first checkpoint of a training run)."""
    self._last_step = step

  def step_is_due(self, step):
    """Whether a checkpoint at `step` (None: unknown) should be evaluated."""
    if not self.by_steps or step is None or self._last_step is None:
      return True
    return step // self._every_n_steps > self._last_step // self._every_n_steps

  def secs_until_allowed(self):
    """Seconds until the throttle lets the next evaluation start (0: now)."""
    if self.by_steps or self._last_start is None:
      return 0.0
    return max(0.0, self._last_start + self._throttle_secs - time.monotonic())

  def started(self):
    self._last_start = time.monotonic()

  def evaluated(self, step):
    self._last_step = step

  def describe(self):
    if self.by_steps:
      return f"every {self._every_n_steps} global steps (EvalSpec.every_n_steps)"
    return f"at most every {self._throttle_secs} secs (EvalSpec.throttle_secs)"


class NewCheckpointListenerForEvaluate(tf.compat.v1.train.CheckpointSaverListener):
  """Evaluates after checkpoint saves (as the cadence allows) and at the end of training.

  The save made when the session starts is skipped: the model has not
  trained since it was last saved.

  Args:
    evaluator: an `Evaluator`.
    throttle_secs, every_n_steps: the EvalSpec's cadence (see EvalCadence).
  """

  def __init__(self, evaluator, throttle_secs, every_n_steps=None):
    self._evaluator = evaluator
    self._throttle_secs = throttle_secs
    self._every_n_steps = every_n_steps
    self.eval_result, self.export_results = None, None

  def begin(self):
    self._cadence = EvalCadence(self._throttle_secs, self._every_n_steps)
    self._is_first_run = True
    self._last_evaluated_step = None

  def after_save(self, session, global_step_value):
    del session
    if self._is_first_run:
      self._is_first_run = False
      self._cadence.set_baseline(global_step_value)
      return
    if self._cadence.step_is_due(global_step_value) and self._cadence.secs_until_allowed() == 0:
      self._evaluate(global_step_value)
    else:
      _logging.info("Skip the current checkpoint eval: evaluating %s.",
                    self._cadence.describe())

  def end(self, session, global_step_value):
    del session
    if global_step_value != self._last_evaluated_step:
      self._evaluate(global_step_value)

  def _evaluate(self, global_step_value):
    self._last_evaluated_step = global_step_value
    self._cadence.started()
    self.eval_result, self.export_results = self._evaluator.evaluate_and_export()
    if self.eval_result.status != EvalStatus.EVALUATED:
      raise RuntimeError(
          "There was no new checkpoint after the training. Eval status: "
          f"{self.eval_result.status}")
    self._cadence.evaluated(self.eval_result.metrics[_GLOBAL_STEP])


class _CheckpointWatcher:
  """The newest checkpoint of a model_dir, re-read only when its index file changes."""

  def __init__(self, model_dir):
    self._model_dir = model_dir
    self._index = os.path.join(model_dir, "checkpoint")
    self._local = "://" not in model_dir
    self._signature = None
    self._read_at = None
    self._newest = None

  def _stat(self):
    if not self._local:
      return None
    try:
      info = os.stat(self._index)
    except OSError:
      return "missing"
    # Saver replaces the index by renaming a new file over it: a new inode.
    return (info.st_ino, info.st_mtime_ns, info.st_size)

  def newest(self):
    signature = self._stat()
    now = time.monotonic()
    if (signature is None or signature != self._signature or self._read_at is None or
        now - self._read_at >= _FORCED_REREAD_SECS):
      self._signature, self._read_at = signature, now
      # None while there is none, or while the newest one's files are missing.
      self._newest = tf.train.latest_checkpoint(self._model_dir)
    return self._newest


def _evaluated_before(checkpoint_path, name_step, evaluated_steps):
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


def run_continuous_evaluation(estimator, eval_spec, max_training_steps,
                              poll_secs=_POLL_SECS):
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
    (EvalResult, export results) of the last evaluation.
  """
  # Created before the delay: the newest checkpoint now tells an early stop of
  # this run from one of an earlier run.
  evaluator = Evaluator(estimator, eval_spec, max_training_steps)
  if eval_spec.start_delay_secs:
    _logging.info("Waiting %g secs before starting eval.", eval_spec.start_delay_secs)
    time.sleep(eval_spec.start_delay_secs)
  if not max_training_steps:
    _logging.info("TrainSpec.max_steps is None: evaluating new checkpoints until stopped.")
  cadence = EvalCadence(eval_spec.throttle_secs, eval_spec.every_n_steps)
  watcher = _CheckpointWatcher(estimator.model_dir)
  _logging.info("Evaluating new checkpoints in %s %s.", estimator.model_dir, cadence.describe())
  # An evaluator killed and restarted must not evaluate again what its earlier
  # run did (a second point per step in TensorBoard, and wasted time): the
  # eval events record every evaluated step. The final checkpoint is the
  # exception: the earlier run may have died before its final export.
  eval_dir = estimator.eval_dir(eval_spec.name)
  evaluated_before = set(early_stopping.read_eval_metrics(eval_dir))
  if evaluated_before:
    _logging.info("%s already holds evaluations of %d checkpoints (up to global step %d): "
                  "those are not evaluated again.", eval_dir, len(evaluated_before),
                  max(evaluated_before))
  tried = set()
  last_waiting_log = time.monotonic()
  last = None
  while True:
    path = watcher.newest()
    if path in tried and evaluator.stop_marker.is_final(checkpoint_step(path)):
      if last and evaluator.stop_marker.is_final(last[0].metrics[_GLOBAL_STEP]):
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
    is_final = ((bool(max_training_steps) and step is not None and step >= max_training_steps)
                or evaluator.stop_marker.is_final(step))
    if not is_final and _evaluated_before(path, step, evaluated_before):
      tried.add(path)
      cadence.evaluated(step)  # the every_n_steps cadence goes on from there
      _logging.info("Skipping checkpoint %s: already evaluated (see %s).", path, eval_dir)
      continue
    if not is_final and not cadence.step_is_due(step):
      tried.add(path)
      _logging.info("Skipping checkpoint %s: evaluating %s.", path, cadence.describe())
      continue
    wait = cadence.secs_until_allowed()
    if wait > 0:
      # Look again when allowed: by then the newest checkpoint may be another.
      time.sleep(min(wait, poll_secs))
      continue
    tried.add(path)
    cadence.started()
    result, export_results = evaluator.evaluate_and_export(path)
    last_waiting_log = time.monotonic()
    if result.status != EvalStatus.EVALUATED:
      continue
    global_step = result.metrics[_GLOBAL_STEP]
    cadence.evaluated(global_step)
    last = (result, export_results)
    if max_training_steps and global_step >= max_training_steps:
      _logging.info("Exiting evaluation, global_step=%s >= train max_steps=%s",
                    global_step, max_training_steps)
      return result, export_results
