"""RegressionHead, PoissonRegressionHead: a custom loss_fn, and training through the Estimator.

Their numbers and error texts against tf.estimator 2.15 (LogisticRegressionHead's
too) are test_head_parity.py's.
"""
import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from estimator_lite.estimator import Estimator
from estimator_lite.head.regression_head import PoissonRegressionHead
from estimator_lite.head.regression_head import RegressionHead

from head_model_fn import keras_model_fn  # pylint: disable=g-bad-import-order

def test_custom_loss_fn_gets_features_and_its_shape_is_checked():
  def loss_fn(labels, logits, features):
    return tf.abs(labels - logits) * features["scale"]

  def flat_loss_fn(labels, logits):
    return tf.reduce_sum(tf.abs(labels - logits), axis=-1)  # drops the label dimension

  with tf.Graph().as_default():
    features = {"scale": tf.constant([[2.0], [3.0]])}
    logits, labels = tf.constant([[1.0], [4.0]]), tf.constant([[0.0], [2.0]])
    loss = RegressionHead(loss_fn=loss_fn).loss(labels, logits, features=features)
    bad = RegressionHead(loss_fn=flat_loss_fn).loss(labels, logits, features=features)
    with tf.compat.v1.Session() as session:
      assert session.run(loss) == pytest.approx((1 * 2 + 2 * 3) / 2)
      with pytest.raises(tf.errors.InvalidArgumentError,
                         match=r"loss_fn must return Tensor of shape \[D0, D1, ... DN, 1\]"):
        session.run(bad)
  with pytest.raises(ValueError, match=r"^loss_fn has unexpected args: \['weights'\]"):
    RegressionHead(loss_fn=lambda labels, logits, weights: labels)


def test_regression_and_poisson_heads_train_through_the_estimator(tmp_path):
  x = np.linspace(-1, 1, 32, dtype=np.float32).reshape(-1, 1)
  targets = {"regression": np.hstack([3 * x + 1, -x]),
             "poisson": np.round(np.exp(x + 1)).astype(np.float32)}
  heads = {"regression": RegressionHead(label_dimension=2, weight_column="w"),
           "poisson": PoissonRegressionHead()}
  for kind, head in heads.items():
    def input_fn(repeat=False, labels=targets[kind]):
      data = tf.data.Dataset.from_tensor_slices(({"x": x, "w": np.ones_like(x)}, labels)).batch(8)
      return data.repeat() if repeat else data

    model_fn = keras_model_fn(head, lambda: tf_keras.optimizers.legacy.SGD(learning_rate=0.1))
    estimator = Estimator(model_fn, model_dir=str(tmp_path / kind))
    estimator.train(lambda: input_fn(repeat=True), max_steps=1)
    first = estimator.evaluate(input_fn)
    estimator.train(lambda: input_fn(repeat=True), max_steps=60)
    last = estimator.evaluate(input_fn)
    assert set(last) == {"average_loss", "label/mean", "prediction/mean", "loss", "global_step"}
    assert last["loss"] < first["loss"], kind
    assert last["label/mean"] == pytest.approx(float(np.mean(targets[kind])), rel=1e-5)
    predictions = list(estimator.predict(
        lambda: tf.data.Dataset.from_tensor_slices({"x": x}).batch(8)))
    values = np.array([p["predictions"] for p in predictions])
    assert float(np.mean(values)) == pytest.approx(last["prediction/mean"], rel=1e-4)
    if kind == "poisson":  # predictions are exp(logits)
      np.testing.assert_allclose(values, np.exp([p["logits"] for p in predictions]), rtol=1e-5)
