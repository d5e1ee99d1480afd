"""The eval graph: eval_metric_ops become evaluate()'s results, beside `loss` and `global_step`.

Through the public Estimator, as users meet it: a metric's value may be a
nested tuple of tensors (evaluate() returns the same structure), and a metric
may not take a name evaluate() reports itself.
"""
import numpy as np
import pytest
import tensorflow as tf

import estimator_lite as est


def _input_fn():
  """Three batches of x (1, 2, 3, 4, 5, 6) with y = 2x, then the end of input."""
  x = np.arange(1.0, 7.0, dtype=np.float32).reshape(6, 1)
  return tf.data.Dataset.from_tensor_slices(({"x": x}, 2.0 * x)).batch(2)


def _model_fn_with_metrics(make_metrics):
  """A one-weight model whose eval_metric_ops are make_metrics(features, labels)."""
  def model_fn(features, labels, mode):
    weight = tf.compat.v1.get_variable("w", [1, 1], initializer=tf.compat.v1.ones_initializer())
    prediction = tf.matmul(features["x"], weight)
    loss = tf.compat.v1.losses.mean_squared_error(labels, prediction)
    train_op = tf.compat.v1.train.GradientDescentOptimizer(0.01).minimize(
        loss, global_step=tf.compat.v1.train.get_global_step())
    return est.EstimatorSpec(mode, loss=loss, train_op=train_op,
                             eval_metric_ops=make_metrics(features, labels))
  return model_fn


def test_a_nested_metric_value_comes_back_with_its_structure(tmp_path, read_scalars):
  def metrics(features, labels):
    mean_x, update = tf.compat.v1.metrics.mean(features["x"])
    total_y, update_y = tf.compat.v1.metrics.mean(labels)
    value = ((mean_x, tf.constant(7, tf.int64)), tf.cast(total_y, tf.float64))
    return {"nested": (value, tf.group(update, update_y)),
            "mean_x": (mean_x, update)}

  estimator = est.Estimator(_model_fn_with_metrics(metrics), model_dir=str(tmp_path))
  results = estimator.evaluate(_input_fn)
  (mean_x, seven), mean_y = results["nested"]
  assert mean_x == pytest.approx(3.5) and seven == 7 and mean_y == pytest.approx(7.0)
  assert results["mean_x"] == pytest.approx(3.5)
  # A nested value has no scalar summary; the other results still get theirs.
  scalars = read_scalars(str(tmp_path / "eval"))
  assert "nested" not in scalars and {"loss", "mean_x"} <= set(scalars)


@pytest.mark.parametrize("name, text", [
    ("loss", 'Metric with name "loss" is not allowed, because Estimator already defines '
             "a default metric with the same name."),
    ("global_step", "Metric with name `global_step` is not allowed, because Estimator "
                    "already defines a default metric with the same name."),
])
def test_a_metric_may_not_take_a_name_evaluate_reports(tmp_path, name, text):
  def metrics(features, labels):
    del labels
    return {name: tf.compat.v1.metrics.mean(features["x"])}

  estimator = est.Estimator(_model_fn_with_metrics(metrics), model_dir=str(tmp_path))
  with pytest.raises(ValueError) as raised:
    estimator.evaluate(_input_fn)
  assert str(raised.value).startswith(text)
