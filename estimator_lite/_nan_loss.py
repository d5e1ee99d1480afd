"""The error Estimator.train raises on a NaN loss: it names the step.

The NaN guard is part of the step hook (_step_hook.TrainingStepHook), which
Estimator runs before every other training hook (see Estimator._training_hooks),
so it is the one that raises, with the step, even when a user's own
NanTensorHook watches the loss, and no CheckpointSaverHook saves the weights of
the failed step first.
"""
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
