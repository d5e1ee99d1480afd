"""Session hooks: TensorFlow's own classes under tf.estimator's names, plus StopAtTimeHook.

These are the very classes tf.estimator re-exported, so a hook written for
tf.estimator (a `tf.compat.v1.train.SessionRunHook` subclass) works unchanged.
"""
import math
import time
from typing import Any

import tensorflow as tf

_train = tf.compat.v1.train

SessionRunHook = _train.SessionRunHook
SessionRunArgs = _train.SessionRunArgs
SessionRunContext = _train.SessionRunContext
SessionRunValues = _train.SessionRunValues
CheckpointSaverHook = _train.CheckpointSaverHook
CheckpointSaverListener = _train.CheckpointSaverListener
FeedFnHook = _train.FeedFnHook
FinalOpsHook = _train.FinalOpsHook
GlobalStepWaiterHook = _train.GlobalStepWaiterHook
LoggingTensorHook = _train.LoggingTensorHook
NanLossDuringTrainingError = _train.NanLossDuringTrainingError
NanTensorHook = _train.NanTensorHook
ProfilerHook = _train.ProfilerHook
SecondOrStepTimer = _train.SecondOrStepTimer
StepCounterHook = _train.StepCounterHook
StopAtStepHook = _train.StopAtStepHook
SummarySaverHook = _train.SummarySaverHook


class StopAtTimeHook(tf.compat.v1.train.SessionRunHook):
  """Requests stop once `max_secs` of wall time have passed since the session was created.

  The check happens after each `Session.run`, so the last step in flight
  finishes; the regular end-of-training checkpoint is then written as for any
  other stop request.

  Args:
    max_secs: positive number of seconds to train for.

  Raises:
    ValueError: max_secs is not a positive number.
  """

  def __init__(self, max_secs: float):
    if isinstance(max_secs, bool) or not isinstance(max_secs, (int, float)) or not max_secs > 0:
      raise ValueError(
          f"StopAtTimeHook needs max_secs > 0 (seconds to train for); got {max_secs!r}.")
    self._max_secs = float(max_secs)
    self._deadline = math.inf  # set when the session is created

  def after_create_session(self, session: Any, coord: Any) -> None:
    del session, coord
    self._deadline = time.monotonic() + self._max_secs

  def after_run(self, run_context: Any, run_values: Any) -> None:
    del run_values
    if time.monotonic() >= self._deadline:
      tf.compat.v1.logging.info(
          "StopAtTimeHook: %.1f s elapsed, requesting stop.", self._max_secs)
      run_context.request_stop()
