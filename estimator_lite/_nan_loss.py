"""The default NaN guard of Estimator.train: stops with an error that names the step.

Estimator runs it before every other training hook (see
Estimator._training_hooks), so it is the one that raises, with the step, even
when a user's own NanTensorHook watches the loss, and no CheckpointSaverHook
saves the weights of the failed step first.
"""
import numpy as np
import tensorflow as tf


class NanLossAtStepError(tf.compat.v1.train.NanLossDuringTrainingError):
  """A NanLossDuringTrainingError (so existing `except` clauses catch it) that names the step."""

  def __init__(self, step):
    super().__init__()
    self.step = step

  def __str__(self):
    return (f"NaN loss during training at global step {self.step}. The latest "
            "checkpoint holds the weights from before it; lower the learning rate, "
            "clip gradients or check the input for NaN/inf, then restart.")


class NanLossHook(tf.compat.v1.train.NanTensorHook):
  """NanTensorHook (fail_on_nan_loss=True) whose error says at which global step.

  Args:
    loss_tensor: the scalar loss.
    step_tensor: the global step as the step ran (its value before the
      increment, as StepCounterHook reads it).
  """

  def __init__(self, loss_tensor, step_tensor):
    super().__init__(loss_tensor, fail_on_nan_loss=True)
    self._step_tensor = step_tensor

  def before_run(self, run_context):
    del run_context
    return tf.compat.v1.train.SessionRunArgs((self._loss_tensor, self._step_tensor))

  def after_run(self, run_context, run_values):
    loss, step = run_values.results
    if np.isnan(loss):
      tf.compat.v1.logging.error("Model diverged with loss = NaN at global step %d.", step)
      raise NanLossAtStepError(int(step))
