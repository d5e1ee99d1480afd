"""ModeKeys: the three modes a model_fn is called in."""
from __future__ import annotations

from typing import Tuple


class ModeKeys:
  """Standard names for model modes, the same strings tf.estimator used.

  * `TRAIN`: training/fitting mode.
  * `EVAL`: testing/evaluation mode.
  * `PREDICT`: prediction/inference mode.
  """

  TRAIN = "train"
  EVAL = "eval"
  PREDICT = "infer"

  @classmethod
  def all(cls) -> Tuple[str, str, str]:
    return (cls.TRAIN, cls.EVAL, cls.PREDICT)
