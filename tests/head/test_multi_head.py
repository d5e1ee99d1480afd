"""MultiHead: argument checks, and two heads trained on one model through the Estimator.

Its merged loss, metric keys, prediction keys and signatures against
tf.estimator 2.15 are test_head_parity.py's.
"""
import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from estimator_lite.estimator import Estimator
from estimator_lite.head.binary_class_head import BinaryClassHead
from estimator_lite.head.multi_class_head import MultiClassHead
from estimator_lite.head.multi_head import MultiHead
from estimator_lite.head.regression_head import RegressionHead

from head_model_fn import keras_model_fn  # pylint: disable=g-bad-import-order


def test_name_logits_dimension_and_loss_reduction():
  head = MultiHead([MultiClassHead(3, name="a"), BinaryClassHead(name="b")])
  assert head.name == "a_b" and head.logits_dimension == 4
  assert head.loss_reduction == "sum_over_batch_size"
  mixed = MultiHead([RegressionHead(name="r", loss_reduction="sum"), BinaryClassHead(name="b")])
  with pytest.raises(ValueError, match="^The loss_reduction must be the same for different heads"):
    mixed.loss_reduction  # pylint: disable=pointless-statement


def test_two_heads_train_evaluate_and_predict_through_the_estimator(tmp_path):
  x = np.random.RandomState(1).randn(40, 2).astype(np.float32)
  labels = {"kind": (x[:, :1] > 0).astype(np.int64) + (x[:, 1:] > 0),
            "spam": (x[:, :1] > 0.5).astype(np.float32)}
  head = MultiHead([MultiClassHead(n_classes=3, name="kind"), BinaryClassHead(name="spam")],
                   head_weights=[1.0, 0.5])

  def input_fn(repeat=False):
    data = tf.data.Dataset.from_tensor_slices(({"x": x}, labels)).batch(10)
    return data.repeat() if repeat else data

  # One logits tensor, split between the heads.
  model_fn = keras_model_fn(head, lambda: tf_keras.optimizers.legacy.Adagrad(learning_rate=0.3))
  estimator = Estimator(model_fn, model_dir=str(tmp_path))
  estimator.train(lambda: input_fn(repeat=True), max_steps=40)
  metrics = estimator.evaluate(input_fn)
  assert {"loss", "loss/kind", "loss/spam", "accuracy/kind", "average_loss/kind",
          "accuracy/spam", "auc/spam", "accuracy_baseline/spam", "global_step"} <= set(metrics)
  assert metrics["loss"] == pytest.approx(metrics["loss/kind"] + 0.5 * metrics["loss/spam"],
                                          rel=1e-5)
  # Half the examples are of the commonest kind; the linear model gets 30 of 40.
  assert metrics["accuracy/kind"] > 0.6
  first = next(iter(estimator.predict(
      lambda: tf.data.Dataset.from_tensor_slices({"x": x[:4]}).batch(4))))
  assert ("kind", "probabilities") in first and ("spam", "logistic") in first
  assert first[("kind", "probabilities")].shape == (3,)
