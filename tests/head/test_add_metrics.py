"""add_metrics: a new Estimator whose evaluation adds a metric_fn's metrics (tf.estimator 2.15's)."""
import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import estimator_lite as est
from estimator_lite.canned.add_metrics import add_metrics
from estimator_lite.estimator import Estimator
from estimator_lite.head.binary_class_head import BinaryClassHead

_X = np.random.RandomState(2).randn(30, 1).astype(np.float32)
_Y = (_X > 0).astype(np.int64)


def _input_fn(repeat=False):
  data = tf.data.Dataset.from_tensor_slices(({"x": _X, "w": np.abs(_X) + 1}, _Y)).batch(10)
  return data.repeat() if repeat else data


def _model_fn(features, labels, mode, params):
  head = BinaryClassHead()
  logits = tf.compat.v1.layers.dense(features["x"], 1, name="logits")
  optimizer = tf.compat.v1.train.GradientDescentOptimizer(params["learning_rate"])
  return head.create_estimator_spec(
      features=features, mode=mode, logits=logits, labels=labels,
      train_op_fn=lambda loss: optimizer.minimize(
          loss, global_step=tf.compat.v1.train.get_global_step()))


def test_metric_fn_metrics_join_the_models_and_share_its_model_dir(tmp_path):
  config = est.RunConfig(model_dir=str(tmp_path), tf_random_seed=3)
  estimator = Estimator(_model_fn, config=config, params={"learning_rate": 0.5})
  estimator.train(lambda: _input_fn(repeat=True), max_steps=20)
  seen = {}

  def metric_fn(labels, predictions, features, config):
    seen["config"] = config
    auc = tf_keras.metrics.AUC(name="my_auc")
    auc.update_state(y_true=labels, y_pred=predictions["logistic"], sample_weight=features["w"])
    return {"my_auc": auc,
            # a (value, update_op) tuple replaces the head's metric of the same name
            "accuracy": tf.compat.v1.metrics.accuracy(labels, predictions["class_ids"]),
            "mean_logit": tf.compat.v1.metrics.mean(predictions["logits"])}

  extended = add_metrics(estimator, metric_fn)
  assert isinstance(extended, Estimator) and extended is not estimator
  assert extended.model_dir == estimator.model_dir
  plain = estimator.evaluate(_input_fn)
  metrics = extended.evaluate(_input_fn)
  assert set(metrics) == set(plain) | {"my_auc", "mean_logit"}
  assert metrics["global_step"] == 20
  assert metrics["loss"] == pytest.approx(plain["loss"])
  assert metrics["accuracy"] == pytest.approx(plain["accuracy"])
  assert metrics["my_auc"] > 0.9
  assert seen["config"].tf_random_seed == 3
  logits = [p["logits"][0] for p in extended.predict(lambda: _input_fn().map(lambda f, l: f))]
  assert metrics["mean_logit"] == pytest.approx(np.mean(logits), rel=1e-5)
  # Training goes on through the new Estimator, from the same checkpoints.
  extended.train(lambda: _input_fn(repeat=True), max_steps=25)
  assert estimator.get_variable_value("global_step") == 25


def test_metric_fn_with_other_arguments_is_refused_with_tf215_text():
  estimator = Estimator(_model_fn, params={"learning_rate": 0.1})
  with pytest.raises(ValueError, match=r"^metric_fn \(.*\) has following not expected args: "
                                       r"\['mode'\]"):
    add_metrics(estimator, lambda labels, mode: {})
