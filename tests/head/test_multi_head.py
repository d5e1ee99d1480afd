"""MultiHead: tf.estimator 2.15's merged loss, metric keys, prediction keys and signatures.

The parity tests replay tests/data/heads_expected.json (written by
tests/reference/make_head_fixture.py under tf.estimator 2.15); the end-to-end
test trains two heads on one model through estimator_lite's Estimator.
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

import head_fixture_cases as cases  # pylint: disable=g-bad-import-order


@pytest.mark.parametrize("case_id", cases.case_ids("MultiHead"))
def test_loss_predictions_metrics_and_exports_match_tf215(case_id):
  case = cases.DATA["cases"][case_id]
  cases.assert_matches_reference(cases.run_case(case), case["expected"])


@pytest.mark.parametrize("error_id", cases.error_ids("MultiHead"))
def test_bad_arguments_fail_with_tf215_text(error_id):
  cases.assert_error_matches_reference(cases.DATA["errors"][error_id])


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

  def model_fn(features, labels, mode):
    layer = tf_keras.layers.Dense(head.logits_dimension)  # one tensor, split between the heads
    logits = layer(features["x"])
    optimizer = tf_keras.optimizers.legacy.Adagrad(learning_rate=0.3)
    optimizer.iterations = tf.compat.v1.train.get_or_create_global_step()
    return head.create_estimator_spec(features=features, mode=mode, logits=logits,
                                      labels=labels, optimizer=optimizer,
                                      trainable_variables=layer.trainable_weights)

  estimator = Estimator(model_fn, model_dir=str(tmp_path))
  estimator.train(lambda: input_fn(repeat=True), max_steps=40)
  metrics = estimator.evaluate(input_fn)
  assert {"loss", "loss/kind", "loss/spam", "accuracy/kind", "average_loss/kind",
          "accuracy/spam", "auc/spam", "accuracy_baseline/spam", "global_step"} <= set(metrics)
  assert metrics["loss"] == pytest.approx(metrics["loss/kind"] + 0.5 * metrics["loss/spam"],
                                          rel=1e-5)
  assert metrics["accuracy/kind"] > 0.7
  first = next(iter(estimator.predict(
      lambda: tf.data.Dataset.from_tensor_slices({"x": x[:4]}).batch(4))))
  assert ("kind", "probabilities") in first and ("spam", "logistic") in first
  assert first[("kind", "probabilities")].shape == (3,)
