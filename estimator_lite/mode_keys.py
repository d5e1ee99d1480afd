"""ModeKeys: the three modes a model_fn is called in."""


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
  def all(cls):
    return (cls.TRAIN, cls.EVAL, cls.PREDICT)
