"""make_stop_at_checkpoint_step_hook: stop workers only once the chief has saved the last step."""
from __future__ import annotations

import time
from typing import Any

import tensorflow as tf

from estimator_lite._session import checkpoints
from estimator_lite._util import tf_internals

_logging = tf.compat.v1.logging


class _StopAtCheckpointStepHook(tf.compat.v1.train.SessionRunHook):
  """Requests stop once the latest checkpoint in model_dir is at or past `last_step`.

  The checkpoint is read only once the session's global step is about to reach
  last_step; while it is behind, the hook waits `wait_after_file_check_secs`
  between reads so many workers do not hammer the file system.

  Args:
    model_dir: directory whose latest checkpoint is checked.
    last_step: global step after which to stop.
    wait_after_file_check_secs: seconds to wait after a read that found the
      checkpoint still behind.

  Raises:
    ValueError: model_dir or last_step is None.
  """

  def __init__(self, model_dir: str, last_step: int, wait_after_file_check_secs: float = 30):
    if last_step is None:
      raise ValueError("last_step must be specified.")
    if model_dir is None:
      raise ValueError("model_dir must be specified.")
    self._model_dir = model_dir
    self._last_step = last_step
    self._wait_after_file_check_secs = wait_after_file_check_secs

  def begin(self) -> None:
    self._global_step_tensor = tf_internals.global_step_read()
    if self._global_step_tensor is None:
      raise RuntimeError("Global step should be created to use StopAtCheckpointStepHook.")

  def before_run(self, run_context: Any) -> Any:
    del run_context
    return tf.compat.v1.train.SessionRunArgs(self._global_step_tensor)

  def after_run(self, run_context: Any, run_values: Any) -> None:
    global_step = run_values.results + 1
    if global_step < self._last_step:
      return
    # Stop only once the chief has written the last step to disk, so the work
    # of this worker up to it is saved.
    if checkpoints.latest_global_step(self._model_dir) >= self._last_step:
      run_context.request_stop()
    else:
      time.sleep(self._wait_after_file_check_secs)


def make_stop_at_checkpoint_step_hook(estimator: Any, last_step: int,
                                      wait_after_file_check_secs: float = 30
                                      ) -> tf.compat.v1.train.SessionRunHook:
  """Creates a hook that stops training at `last_step`, workers only once it is checkpointed.

  On the chief (or locally) this is `StopAtStepHook(last_step=last_step)`; on a
  worker, a hook that stops once the latest checkpoint in model_dir is at or
  past last_step.

  Args:
    estimator: the `Estimator` being trained.
    last_step: global step after which to stop.
    wait_after_file_check_secs: (workers) seconds between checkpoint reads once
      the step is reached but not yet saved.

  Returns:
    A `SessionRunHook`.
  """
  if estimator.config.is_chief:
    return tf.compat.v1.train.StopAtStepHook(last_step=last_step)
  return _StopAtCheckpointStepHook(model_dir=estimator.model_dir, last_step=last_step,
                                   wait_after_file_check_secs=wait_after_file_check_secs)
