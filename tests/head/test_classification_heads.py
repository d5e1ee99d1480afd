"""BinaryClassHead, MultiClassHead, MultiLabelHead in a user's model_fn on the Estimator.

Their numbers and error texts against tf.estimator 2.15 are test_head_parity.py's.
"""
import os

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import estimator_lite as est
from estimator_lite.estimator import Estimator
from estimator_lite.head import head_utils
from estimator_lite.head.binary_class_head import BinaryClassHead
from estimator_lite.head.multi_class_head import MultiClassHead

from head_model_fn import keras_model_fn  # pylint: disable=g-bad-import-order

def test_binary_or_multi_class_head_picks_by_n_classes():
  binary = head_utils.binary_or_multi_class_head(2, "w", ["a", "b"], "sum")
  multi = head_utils.binary_or_multi_class_head(4, None, None, "sum_over_batch_size")
  assert isinstance(binary, BinaryClassHead) and binary.logits_dimension == 1
  assert binary.loss_reduction == "sum"
  assert isinstance(multi, MultiClassHead) and multi.logits_dimension == 4


_X = np.random.RandomState(0).randn(40, 2).astype(np.float32)
_LABELS = ((_X[:, 0] > 0).astype(np.int64) + (_X[:, 1] > 0)).reshape(-1, 1)
_EXPECTED_EVAL_KEYS = {"accuracy", "average_loss", "loss", "global_step"}


def _input_fn():
  return tf.data.Dataset.from_tensor_slices(({"x": _X}, _LABELS)).batch(10)


def _train_input_fn():
  return _input_fn().repeat()


def _predict_input_fn():
  return tf.data.Dataset.from_tensor_slices({"x": _X}).batch(10)


_keras_model_fn = keras_model_fn(
    MultiClassHead(n_classes=3), lambda: tf_keras.optimizers.legacy.Adagrad(learning_rate=0.3))


def test_multi_class_head_in_a_users_model_fn_trains_evaluates_predicts_and_exports(tmp_path):
  estimator = Estimator(_keras_model_fn, model_dir=str(tmp_path / "model"))
  before = estimator.train(_train_input_fn, steps=1).evaluate(_input_fn)
  estimator.train(_train_input_fn, max_steps=40)
  after = estimator.evaluate(_input_fn)
  assert set(after) == _EXPECTED_EVAL_KEYS
  assert after["global_step"] == 40
  # Half the examples are of the commonest class; the linear model gets 29 of 40.
  assert after["loss"] < before["loss"] and after["accuracy"] > 0.6
  # Without weights and with equal batches, the mean loss is the loss.
  np.testing.assert_allclose(after["loss"], after["average_loss"], rtol=1e-5)

  predictions = list(estimator.predict(_predict_input_fn))
  assert len(predictions) == len(_X)
  assert set(predictions[0]) == {"logits", "probabilities", "class_ids", "classes",
                                 "all_class_ids", "all_classes"}
  class_ids = np.array([p["class_ids"][0] for p in predictions])
  assert np.mean(class_ids == _LABELS[:, 0]) == pytest.approx(after["accuracy"])
  assert predictions[0]["classes"][0] == str(class_ids[0]).encode()
  assert list(predictions[0]["all_classes"]) == [b"0", b"1", b"2"]

  receiver = est.export.build_parsing_serving_input_receiver_fn(
      {"x": tf.io.FixedLenFeature([2], tf.float32)})
  export_dir = estimator.export_saved_model(str(tmp_path / "export"), receiver)
  loaded = tf.saved_model.load(export_dir.decode())
  assert set(loaded.signatures) == {"serving_default", "classification", "predict"}
  examples = tf.constant([
      tf.train.Example(features=tf.train.Features(feature={
          "x": tf.train.Feature(float_list=tf.train.FloatList(value=row))})).SerializeToString()
      for row in _X[:3]])
  served = loaded.signatures["serving_default"](inputs=examples)
  np.testing.assert_allclose(served["scores"].numpy(),
                             [p["probabilities"] for p in predictions[:3]], rtol=1e-5)
  assert served["classes"].numpy()[0].tolist() == [b"0", b"1", b"2"]


def test_binary_head_with_v1_optimizer_and_sum_reduction_as_compat_v1_estimators_use(tmp_path):
  """What the compat.v1 canned estimators do: Reduction.SUM and a tf.compat.v1.train optimizer."""
  head = BinaryClassHead(weight_column="w", label_vocabulary=["no", "yes"],
                         loss_reduction=tf_keras.losses.Reduction.SUM)
  x = _X[:, :1]
  labels = np.where(x > 0, b"yes", b"no")
  weights = np.full_like(x, 2.0)

  def input_fn(repeat=False):
    dataset = tf.data.Dataset.from_tensor_slices(({"x": x, "w": weights}, labels)).batch(10)
    return dataset.repeat() if repeat else dataset

  def model_fn(features, labels, mode):
    logits = tf.compat.v1.layers.dense(features["x"], 1, name="logits")
    optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.05)
    return head.create_estimator_spec(
        features=features, mode=mode, logits=logits, labels=labels,
        train_op_fn=lambda loss: optimizer.minimize(
            loss, global_step=tf.compat.v1.train.get_global_step()))

  estimator = Estimator(model_fn, model_dir=str(tmp_path))
  estimator.train(lambda: input_fn(repeat=True), max_steps=30)
  metrics = estimator.evaluate(input_fn)
  assert metrics["global_step"] == 30
  # SUM: the loss of a batch is the weighted sum, 10 examples of weight 2.
  assert metrics["loss"] == pytest.approx(20 * metrics["average_loss"], rel=1e-4)
  assert metrics["accuracy"] > 0.9 and metrics["auc"] > 0.9
  first = next(iter(estimator.predict(lambda: tf.data.Dataset.from_tensor_slices(
      {"x": x[:2]}).batch(2))))
  assert first["classes"][0] == (b"yes" if x[0, 0] > 0 else b"no")
  assert list(first["all_classes"]) == [b"no", b"yes"]


def test_training_summaries_and_runtime_label_check_through_the_estimator(tmp_path):
  """The loss summary is written under the head's name; bad labels stop training with 2.15's text."""
  head = MultiClassHead(n_classes=3, name="kind")

  def model_fn(features, labels, mode):
    logits = tf.compat.v1.layers.dense(features["x"], 3)
    return head.create_estimator_spec(
        features=features, mode=mode, logits=logits, labels=labels,
        train_op_fn=lambda loss: tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
            loss, global_step=tf.compat.v1.train.get_global_step()))

  estimator = Estimator(model_fn, model_dir=str(tmp_path),
                        config=est.RunConfig(save_summary_steps=1))
  estimator.train(_input_fn, max_steps=2)
  tags = set()
  for name in os.listdir(tmp_path):
    if name.startswith("events.out.tfevents"):
      for event in tf.compat.v1.train.summary_iterator(str(tmp_path / name)):
        tags.update(value.tag for value in event.summary.value)
  assert "loss/kind" in tags

  def bad_input_fn():
    return tf.data.Dataset.from_tensor_slices(({"x": _X}, _LABELS + 1)).batch(40)

  with pytest.raises(tf.errors.InvalidArgumentError, match=r"Labels must be <= n_classes - 1"):
    Estimator(model_fn, model_dir=str(tmp_path / "bad")).train(bad_input_fn, steps=1)


def _model_fn_reading_the_heads_metrics(features, labels, mode):
  # A program's model_fn that wraps a head and builds on its eval_metric_ops,
  # as tf.estimator allowed: each is a (value, update_op) pair.
  spec = _keras_model_fn(features, labels, mode)
  if mode != est.ModeKeys.EVAL:
    return spec
  accuracy, update_op = spec.eval_metric_ops["accuracy"]
  error = (1.0 - accuracy, update_op)
  return spec.replace(eval_metric_ops=dict(spec.eval_metric_ops, error=error))


def test_a_model_fn_can_read_and_merge_a_heads_eval_metric_ops(tmp_path):
  estimator = Estimator(_keras_model_fn, model_dir=str(tmp_path / "model"))
  estimator.train(_train_input_fn, max_steps=20)
  plain = estimator.evaluate(_input_fn)
  reading = Estimator(_model_fn_reading_the_heads_metrics, model_dir=str(tmp_path / "model"))
  metrics = reading.evaluate(_input_fn, name="reading")
  assert set(metrics) == _EXPECTED_EVAL_KEYS | {"error"}
  # The head's metrics keep their values, and the derived one follows them.
  for key in _EXPECTED_EVAL_KEYS:
    assert metrics[key] == pytest.approx(plain[key], rel=1e-6), key
  assert metrics["error"] == pytest.approx(1.0 - plain["accuracy"], abs=1e-6)
