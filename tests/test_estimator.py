"""Estimator end to end: model code styles, files on disk, resume, model_fn arguments, logs.

Each model code style a tf.estimator user wrote (raw tf.compat.v1,
tf.compat.v1.layers, Keras layer objects, Keras 3) trains, evaluates and
predicts here on real TensorFlow. Programs that must start from a fresh
interpreter (TensorFlow imported first, Keras 3, resuming in a new process)
run in their own process.
"""
import json
import os
import re
import textwrap

import numpy as np
import pytest

import estimator_lite as est
import tensorflow as tf


def _config(**kwargs):
  kwargs.setdefault("tf_random_seed", 1)
  return est.RunConfig(**kwargs)


def _exact_auc(labels, scores):
  """ROC AUC as the probability that a positive scores above a negative."""
  labels, scores = np.asarray(labels), np.asarray(scores)
  pos, neg = scores[labels == 1], scores[labels == 0]
  diff = pos[:, None] - neg[None, :]
  return float(np.mean((diff > 0) + 0.5 * (diff == 0)))


def _last_json_line(completed):
  """The JSON object a child program printed last; fails with its output otherwise."""
  assert completed.returncode == 0, (
      f"child failed (rc {completed.returncode}):\n{completed.stdout}\n{completed.stderr[-6000:]}")
  lines = [l for l in completed.stdout.splitlines() if l.startswith("{")]
  assert lines, f"no result printed:\n{completed.stdout}\n{completed.stderr[-6000:]}"
  return json.loads(lines[-1])


# -- model code styles --------------------------------------------------------

def test_raw_compat_v1_model_trains_evaluates_predicts(
    tmp_path, linear_data, make_input_fn, linear_model_fn):
  x, y = linear_data
  estimator = est.Estimator(linear_model_fn, model_dir=str(tmp_path),
                            config=_config(), params={"learning_rate": 0.2})
  eval_input_fn = make_input_fn(x, y, repeat=False)

  # No checkpoint yet: evaluate runs on the initialised model (w = b = 0).
  before = estimator.evaluate(eval_input_fn)
  assert before["global_step"] == 0
  np.testing.assert_allclose(before["loss"], np.mean(y ** 2), rtol=1e-5)

  estimator.train(make_input_fn(x, y), steps=200)
  after = estimator.evaluate(eval_input_fn)
  assert after["global_step"] == 200
  assert after["loss"] < 0.01 * before["loss"]
  # The tf.compat.v1.metrics RMSE over equal batches is the root of the mean loss.
  np.testing.assert_allclose(after["rmse"], np.sqrt(after["loss"]), rtol=1e-4)

  predictions = list(estimator.predict(make_input_fn(x, repeat=False)))
  assert len(predictions) == len(x)
  assert set(predictions[0]) == {"y"} and predictions[0]["y"].shape == (1,)
  np.testing.assert_allclose(np.stack([p["y"] for p in predictions]), y, atol=0.1)
  np.testing.assert_allclose(estimator.get_variable_value("w"), [[2.0], [-3.0]], atol=0.1)

  batches = list(estimator.predict(make_input_fn(x, repeat=False, batch_size=16),
                                   yield_single_examples=False))
  assert [b["y"].shape for b in batches] == [(16, 1)] * 4


_COMPAT_V1_LAYERS_PROGRAM = textwrap.dedent("""
    import json, sys
    import numpy as np
    import tensorflow as tf          # TensorFlow first, as many programs do
    import estimator_lite as est

    def input_fn(repeat=True):
      rng = np.random.RandomState(0)
      x = (rng.randn(64, 4) * 3 + 2).astype(np.float32)
      y = (x[:, :1] > 2).astype(np.int32)
      ds = tf.data.Dataset.from_tensor_slices(({"x": x}, y))
      return (ds.repeat() if repeat else ds).batch(16)

    def model_fn(features, labels, mode):
      training = mode == est.ModeKeys.TRAIN
      h = tf.compat.v1.layers.dense(features["x"], 8, name="hidden")
      # momentum 0.9: after 60 steps the moving statistics that eval uses
      # have converged (0.99, the default, leaves them 45% of the way there,
      # and the eval loss then depends on thread timing more than on training).
      h = tf.compat.v1.layers.batch_normalization(h, training=training, momentum=0.9,
                                                  name="bn")
      h = tf.compat.v1.layers.dropout(tf.nn.relu(h), rate=0.2, training=training)
      logits = tf.compat.v1.layers.dense(h, 1, name="logits")
      if mode == est.ModeKeys.PREDICT:
        return est.EstimatorSpec(mode, predictions={"prob": tf.sigmoid(logits)})
      loss = tf.compat.v1.losses.sigmoid_cross_entropy(labels, logits)
      with tf.control_dependencies(
          tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.UPDATE_OPS)):
        train_op = tf.compat.v1.train.AdamOptimizer(0.05).minimize(
            loss, global_step=tf.compat.v1.train.get_global_step())
      accuracy = tf.compat.v1.metrics.accuracy(labels, tf.cast(logits > 0, tf.int32))
      return est.EstimatorSpec(mode, loss=loss, train_op=train_op,
                               eval_metric_ops={"accuracy": accuracy})

    estimator = est.Estimator(model_fn, model_dir=sys.argv[1],
                              config=est.RunConfig(tf_random_seed=3))
    first = estimator.evaluate(lambda: input_fn(False))
    estimator.train(input_fn, steps=60)
    metrics = estimator.evaluate(lambda: input_fn(False))
    preds = list(estimator.predict(lambda: input_fn(False)))
    print(json.dumps({
        "tf_keras_module": tf.keras.layers.Dense.__module__,
        "first_loss": float(first["loss"]),
        "loss": float(metrics["loss"]),
        "accuracy": float(metrics["accuracy"]),
        "moving_mean": estimator.get_variable_value("bn/moving_mean").tolist(),
        "moving_variance": estimator.get_variable_value("bn/moving_variance").tolist(),
        "num_predictions": len(preds),
        "prob_shape": list(preds[0]["prob"].shape),
    }))
""")


def test_compat_v1_layers_work_when_tensorflow_is_imported_first(tmp_path, run_python):
  result = _last_json_line(run_python(_COMPAT_V1_LAYERS_PROGRAM, tmp_path / "model"))
  # tf.keras resolved to Keras 2 (tf-keras), which tf.compat.v1.layers needs.
  assert result["tf_keras_module"].startswith("tf_keras")
  assert result["loss"] < 0.5 * result["first_loss"]
  assert result["accuracy"] > 0.8
  # The UPDATE_OPS ran with each step: batch-norm statistics left their
  # initial values (mean 0, variance 1) and follow the data (inputs ~ 2 +- 3).
  assert np.max(np.abs(result["moving_mean"])) > 0.1
  assert np.max(np.abs(np.subtract(result["moving_variance"], 1.0))) > 0.1
  assert result["num_predictions"] == 64 and result["prob_shape"] == [1]


def test_keras_layer_objects_and_keras_metrics(tmp_path):
  """tf.keras (Keras 2) layer objects called in model_fn; Keras metric objects in eval."""
  rng = np.random.RandomState(0)
  x = (rng.randn(64, 4) * 3 + 2).astype(np.float32)
  y = (x[:, :1] > 2).astype(np.float32)
  model_variables = {}

  def input_fn(repeat=True):
    ds = tf.data.Dataset.from_tensor_slices(({"x": x}, y))
    return (ds.repeat() if repeat else ds).batch(16)

  def model_fn(features, labels, mode):
    training = mode == est.ModeKeys.TRAIN
    hidden = tf.keras.layers.Dense(8, activation="relu")
    # momentum 0.9, as in the compat.v1 layers test: after 60 steps the
    # moving statistics that eval uses have converged.
    norm = tf.keras.layers.BatchNormalization(momentum=0.9)
    drop = tf.keras.layers.Dropout(0.2)
    out = tf.keras.layers.Dense(1)
    logits = out(drop(norm(hidden(features["x"]), training=training), training=training))
    model_variables[mode] = sorted(v.op.name for v in tf.compat.v1.global_variables()
                                   if v.op.name != "global_step")
    if mode == est.ModeKeys.PREDICT:
      return est.EstimatorSpec(mode, predictions={"prob": tf.sigmoid(logits)})
    loss = tf.compat.v1.losses.sigmoid_cross_entropy(labels, logits)
    with tf.control_dependencies(norm.updates):
      train_op = tf.compat.v1.train.AdamOptimizer(0.05).minimize(
          loss, global_step=tf.compat.v1.train.get_global_step())
    mean_loss = tf.keras.metrics.Mean()
    mean_loss.update_state(loss)
    auc = tf.keras.metrics.AUC()
    auc.update_state(labels, tf.sigmoid(logits))
    return est.EstimatorSpec(mode, loss=loss, train_op=train_op,
                             eval_metric_ops={"mean_loss": mean_loss, "auc": auc})

  estimator = est.Estimator(model_fn, model_dir=str(tmp_path), config=_config())
  first = estimator.evaluate(lambda: input_fn(False))
  estimator.train(input_fn, steps=60)
  metrics = estimator.evaluate(lambda: input_fn(False))
  predictions = list(estimator.predict(lambda: input_fn(False)))

  # The Keras Mean over the 4 eval batches equals Estimator's own loss mean.
  np.testing.assert_allclose(metrics["mean_loss"], metrics["loss"], rtol=1e-5)
  np.testing.assert_allclose(first["mean_loss"], first["loss"], rtol=1e-5)
  assert metrics["loss"] < 0.5 * first["loss"]
  assert 0.9 < metrics["auc"] <= 1.0 + 1e-6
  assert len(predictions) == 64 and predictions[0]["prob"].shape == (1,)
  # Same variable names in the train, eval and predict graphs (else restoring fails).
  assert model_variables[est.ModeKeys.TRAIN] == model_variables[est.ModeKeys.PREDICT]
  assert set(model_variables[est.ModeKeys.PREDICT]) <= set(model_variables[est.ModeKeys.EVAL])
  # Keras 2 batch norm updates moving statistics; metric state is not checkpointed.
  names = estimator.get_variable_names()
  moving_mean = [n for n in names if n.endswith("moving_mean")]
  assert len(moving_mean) == 1
  assert np.max(np.abs(estimator.get_variable_value(moving_mean[0]))) > 0.1
  assert not [n for n in names if "auc" in n or "mean/" in n], names


_KERAS3_PROGRAM = textwrap.dedent("""
    import json, sys
    import numpy as np
    import keras                     # Keras 3, imported directly
    import estimator_lite as est
    import tensorflow as tf

    rng = np.random.RandomState(0)
    x = (rng.randn(64, 4) * 3 + 2).astype(np.float32)
    y = (x[:, :1] > 2).astype(np.float32)
    names = {}

    def input_fn(repeat=True):
      ds = tf.data.Dataset.from_tensor_slices(({"x": x}, y))
      return (ds.repeat() if repeat else ds).batch(16)

    def make_model_fn(batch_norm):
      def model_fn(features, labels, mode):
        h = keras.layers.Dense(8, activation="relu")(features["x"])
        if batch_norm:
          h = keras.layers.BatchNormalization()(h, training=mode == est.ModeKeys.TRAIN)
        logits = keras.layers.Dense(1)(h)
        if not batch_norm:
          names[mode] = sorted(v.op.name for v in tf.compat.v1.trainable_variables())
        if mode == est.ModeKeys.PREDICT:
          return est.EstimatorSpec(mode, predictions={"prob": tf.sigmoid(logits)})
        loss = tf.compat.v1.losses.sigmoid_cross_entropy(labels, logits)
        train_op = tf.compat.v1.train.AdamOptimizer(0.05).minimize(
            loss, global_step=tf.compat.v1.train.get_global_step())
        metrics = {}
        if mode == est.ModeKeys.EVAL:
          mean_loss = keras.metrics.Mean()
          mean_loss.update_state(loss)
          auc = keras.metrics.AUC(num_thresholds=1000)
          auc.update_state(labels, tf.sigmoid(logits))
          metrics.update(mean_loss=mean_loss, auc=auc)
        return est.EstimatorSpec(mode, loss=loss, train_op=train_op,
                                 eval_metric_ops=metrics)
      return model_fn

    config = est.RunConfig(tf_random_seed=3)
    estimator = est.Estimator(make_model_fn(False), model_dir=sys.argv[1] + "/dense",
                              config=config)
    first = estimator.evaluate(lambda: input_fn(False))
    estimator.train(input_fn, steps=60)
    metrics = estimator.evaluate(lambda: input_fn(False))
    preds = list(estimator.predict(lambda: input_fn(False)))

    # A Keras 3 model's variables as var_list of a tf.compat.v1 optimizer.
    def var_list_model_fn(features, labels, mode, params):
      model = keras.Sequential([keras.layers.Dense(1, name="out")])
      loss = tf.reduce_mean(tf.square(model(features["x"]) - labels))
      var_list = model.trainable_variables
      if unwrap:
        var_list = [v.value for v in var_list]
      train_op = tf.compat.v1.train.GradientDescentOptimizer(params["lr"]).minimize(
          loss, var_list=var_list, global_step=tf.compat.v1.train.get_global_step())
      return est.EstimatorSpec(mode, loss=loss, train_op=train_op)

    unwrap = False
    try:
      est.Estimator(var_list_model_fn, model_dir=sys.argv[1] + "/var_list",
                    params={"lr": 0.01}).train(input_fn, steps=1)
      var_list_error = None
    except TypeError as error:
      var_list_error = str(error)
    unwrap = True
    unwrapped = est.Estimator(var_list_model_fn, model_dir=sys.argv[1] + "/var_list",
                              params={"lr": 0.01})
    unwrapped.train(input_fn, steps=5)
    kernel_name = [n for n in unwrapped.get_variable_names() if n.endswith("out/kernel")][0]
    # A step with learning rate 0 keeps the warm-started kernel as it is.
    warm = est.Estimator(var_list_model_fn, model_dir=sys.argv[1] + "/warm",
                         warm_start_from=sys.argv[1] + "/var_list", params={"lr": 0.0})
    warm.train(input_fn, steps=1)

    with_bn = est.Estimator(make_model_fn(True), model_dir=sys.argv[1] + "/bn", config=config)
    with_bn.train(input_fn, steps=20)
    variables = with_bn.get_variable_names()
    mm = [n for n in variables if n.endswith("moving_mean")][0]
    mv = [n for n in variables if n.endswith("moving_variance")][0]
    print(json.dumps({
        "keras_version": keras.__version__,
        "first_loss": float(first["loss"]),
        "loss": float(metrics["loss"]),
        "mean_loss": float(metrics["mean_loss"]),
        "auc": float(metrics["auc"]),
        "labels": y[:, 0].tolist(),
        "probs": [float(p["prob"][0]) for p in preds],
        "names": names,
        "num_predictions": len(preds),
        "prob_shape": list(preds[0]["prob"].shape),
        "moving_mean": with_bn.get_variable_value(mm).tolist(),
        "moving_variance": with_bn.get_variable_value(mv).tolist(),
        "var_list_error": var_list_error,
        "var_list_steps": int(unwrapped.get_variable_value("global_step")),
        "kernel_moved": float(np.abs(unwrapped.get_variable_value(kernel_name)).sum()),
        "warm_kernel_delta": float(np.abs(warm.get_variable_value(kernel_name)
                                          - unwrapped.get_variable_value(kernel_name)).max()),
    }))
""")


def test_keras3_layers_train_evaluate_predict_and_batch_norm_limitation(tmp_path, run_python):
  result = _last_json_line(run_python(_KERAS3_PROGRAM, tmp_path))
  assert result["keras_version"].startswith("3.")
  # Trains: the eval loss dropped well below the initialised model's.
  assert result["loss"] < 0.5 * result["first_loss"]
  # A Keras 3 metric object in eval_metric_ops reports the right value (the
  # mean of the batch losses), not 0.
  np.testing.assert_allclose(result["mean_loss"], result["loss"], rtol=1e-5)
  # Keras AUC (thresholded) agrees with the exact AUC of the predictions.
  exact_auc = _exact_auc(result["labels"], result["probs"])
  assert result["auc"] == pytest.approx(exact_auc, abs=0.01) and result["auc"] > 0.8
  assert result["num_predictions"] == 64 and result["prob_shape"] == [1]
  # Layer (variable) names are the same in each mode's graph, so eval and
  # predict restore what train saved.
  names = result["names"]
  assert names[est.ModeKeys.TRAIN] == names[est.ModeKeys.EVAL] == names[est.ModeKeys.PREDICT]
  # Documented limitation: Keras 3 BatchNormalization in a tf.compat.v1 graph
  # never updates its moving statistics (no UPDATE_OPS, no layer.updates).
  # They stay at their initial values after training, so eval and predict
  # normalise with mean 0 / variance 1. Use tf-keras layers (tf.keras with
  # TF_USE_LEGACY_KERAS=1) or tf.compat.v1.layers for batch norm.
  assert result["moving_mean"] == [0.0] * 8
  assert result["moving_variance"] == [1.0] * 8
  # var_list=model.trainable_variables (Keras 3 variables) with a
  # tf.compat.v1 optimizer: an error at model_fn time that says what to pass.
  assert "var_list=[v.value for v in model.trainable_variables]" in result["var_list_error"]
  # ...and with that, it trains; get_variable_value and warm starting work
  # on the Keras 3 model's variables.
  assert result["var_list_steps"] == 5 and result["kernel_moved"] > 0
  assert result["warm_kernel_delta"] == 0


# -- files on disk, events, logs ----------------------------------------------

def test_files_events_and_logs_match_tf_estimator(
    tmp_path, linear_data, make_input_fn, linear_model_fn, read_scalars, tf_logs):
  x, y = linear_data
  model_dir = str(tmp_path / "model")
  estimator = est.Estimator(
      linear_model_fn, model_dir=model_dir, params={"learning_rate": 0.1},
      config=_config(save_checkpoints_steps=10, save_summary_steps=5, log_step_count_steps=5))
  estimator.train(make_input_fn(x, y), steps=20)

  files = set(os.listdir(model_dir))
  for step in (0, 10, 20):
    assert {f"model.ckpt-{step}.index", f"model.ckpt-{step}.meta",
            f"model.ckpt-{step}.data-00000-of-00001"} <= files
  assert {"checkpoint", "graph.pbtxt"} <= files
  assert estimator.latest_checkpoint() == os.path.join(model_dir, "model.ckpt-20")
  assert isinstance(estimator.latest_checkpoint(), str)
  assert tf.train.get_checkpoint_state(model_dir).model_checkpoint_path.endswith("model.ckpt-20")

  train_scalars = read_scalars(model_dir)
  assert {"loss", "global_step/sec"} <= set(train_scalars)
  assert [step for step, _ in train_scalars["loss"]][:4] == [1, 6, 11, 16]
  assert all(np.isfinite(v) for _, v in train_scalars["global_step/sec"])

  text = tf_logs.text
  # Every 5th of 20 steps; the first line has no timing. (The logged step
  # reads the variable the optimizer increments in the same run, unordered
  # in TensorFlow as under tf.estimator, so the numbers are not asserted.)
  assert re.search(r"^loss = [-+.e\d]+, step = \d+$", text, re.M), text
  assert len(re.findall(r"^loss = [-+.e\d]+, step = \d+ \([\d.]+ sec\)$", text, re.M)) == 3, text
  assert re.search(r"^global_step/sec: [\d.e+-]+$", text, re.M), text
  assert "Saving checkpoints for 20 into " + os.path.join(model_dir, "model.ckpt") in text
  assert "Loss for final step:" in text

  tf_logs.clear()
  eval_input_fn = make_input_fn(x, y, repeat=False)
  results = estimator.evaluate(eval_input_fn)
  assert set(results) == {"loss", "rmse", "global_step"}
  assert results["global_step"] == 20
  assert "Restoring parameters from " + os.path.join(model_dir, "model.ckpt-20") in tf_logs.text
  assert re.search(r"Saving dict for global step 20: global_step = 20, loss = [\d.e+-]+, "
                   r"rmse = [\d.e+-]+", tf_logs.text), tf_logs.text
  eval_scalars = read_scalars(os.path.join(model_dir, "eval"))
  assert eval_scalars["loss"] == [(20, pytest.approx(float(results["loss"]), rel=1e-6))]
  assert eval_scalars["rmse"] == [(20, pytest.approx(float(results["rmse"]), rel=1e-6))]
  assert estimator.eval_dir() == os.path.join(model_dir, "eval")

  named = estimator.evaluate(eval_input_fn, steps=1, name="foo")
  assert estimator.eval_dir("foo") == os.path.join(model_dir, "eval_foo")
  foo_scalars = read_scalars(os.path.join(model_dir, "eval_foo"))
  assert set(foo_scalars) == {"loss", "rmse"}
  assert foo_scalars["loss"] == [(20, pytest.approx(float(named["loss"]), rel=1e-6))]
  # The named evaluation did not add a point to eval/.
  assert len(read_scalars(os.path.join(model_dir, "eval"))["loss"]) == 1


# -- resume ---------------------------------------------------------------------

def test_second_train_resumes_steps_add_and_max_steps_reached_returns(
    tmp_path, linear_data, make_input_fn, linear_model_fn, tf_logs):
  x, y = linear_data
  model_dir = str(tmp_path)
  estimator = est.Estimator(linear_model_fn, model_dir=model_dir, config=_config(),
                            params={"learning_rate": 0.1})
  input_fn = make_input_fn(x, y)
  estimator.train(input_fn, steps=10)
  w_at_10 = estimator.get_variable_value("w")

  tf_logs.clear()
  estimator.train(input_fn, steps=5)  # adds to the restored step
  assert estimator.get_variable_value("global_step") == 15
  assert "Restoring parameters from " + os.path.join(model_dir, "model.ckpt-10") in tf_logs.text
  assert not np.allclose(estimator.get_variable_value("w"), w_at_10)

  tf_logs.clear()
  calls = []
  estimator.train(lambda: calls.append(1) or input_fn(), max_steps=15)
  assert calls == [], "training built a graph although max_steps was reached"
  assert re.search(r"Skipping training since max_steps has already saved.*15", tf_logs.text)
  assert estimator.latest_checkpoint().endswith("model.ckpt-15")

  estimator.train(input_fn, max_steps=18)  # max_steps is absolute
  assert estimator.latest_checkpoint().endswith("model.ckpt-18")


def test_untrained_warm_started_estimator_evaluates_and_predicts_warm_weights(
    tmp_path, linear_data, make_input_fn, linear_model_fn):
  # tf.estimator 2.15 warm-started evaluate() and predict() when model_dir had
  # no checkpoint (model_to_estimator relies on it: its Estimator evaluates
  # the Keras model's weights before any training).
  x, y = linear_data
  trained = est.Estimator(linear_model_fn, model_dir=str(tmp_path / "a"), params={})
  trained.train(make_input_fn(x, y), steps=5)
  warm = est.Estimator(linear_model_fn, model_dir=str(tmp_path / "b"), params={},
                       warm_start_from=trained.model_dir)
  eval_input_fn = make_input_fn(x, y, repeat=False)
  expected = trained.evaluate(eval_input_fn)
  result = warm.evaluate(eval_input_fn)
  assert result["global_step"] == 0  # only trainable variables are warm-started
  assert result["loss"] == expected["loss"] and result["rmse"] == expected["rmse"]
  predict_input_fn = make_input_fn(x, repeat=False)
  np.testing.assert_array_equal(
      [p["y"] for p in warm.predict(predict_input_fn)],
      [p["y"] for p in trained.predict(predict_input_fn)])
  assert warm.latest_checkpoint() is None


class _CountRuns(tf.compat.v1.train.SessionRunHook):

  def __init__(self):
    self.runs = 0

  def after_run(self, run_context, run_values):
    self.runs += 1


def test_fractional_steps_round_up_and_bad_steps_raise_as_in_tf_estimator(
    tmp_path, linear_data, make_input_fn, linear_model_fn):
  # Keras examples call train(steps=n_examples / batch_size). tf.estimator 2.15
  # only compared steps with 0 and stopped at the first count >= steps; the
  # numbers and texts here are what it gave (run in the reference venv).
  x, y = linear_data
  estimator = est.Estimator(linear_model_fn, model_dir=str(tmp_path), config=_config(),
                            params={})
  input_fn = make_input_fn(x, y)
  for kwargs, global_step in ((dict(steps=2.5), 3), (dict(steps=0.5), 4),
                              (dict(steps=np.float32(1.2)), 6), (dict(max_steps=7.5), 8),
                              (dict(max_steps=7.5), 8), (dict(steps=True), 9)):
    estimator.train(input_fn, **kwargs)
    assert estimator.get_variable_value("global_step") == global_step, kwargs
  for steps, batches in ((2.5, 3), (0.5, 1), (3.0, 3), (True, 1)):
    counter = _CountRuns()
    estimator.evaluate(input_fn, steps=steps, hooks=[counter])
    assert counter.runs == batches, steps
  # Unbounded training steps ran to the end of the input, as steps=None does.
  estimator.train(make_input_fn(x, y, repeat=False), steps=float("inf"))
  assert estimator.get_variable_value("global_step") == 9 + len(x) // 16

  for call, error, text in (
      (lambda: estimator.train(input_fn, steps=False), ValueError,
       r"^Must specify steps > 0, given: False"),
      (lambda: estimator.train(input_fn, steps=-0.5), ValueError,
       r"^Must specify steps > 0, given: -0\.5"),
      (lambda: estimator.train(input_fn, max_steps=-1.5), ValueError,
       r"^Must specify max_steps > 0, given: -1\.5"),
      (lambda: estimator.evaluate(input_fn, steps=0.0), ValueError,
       r"^Must specify steps > 0, given: 0\.0"),
      (lambda: estimator.train(input_fn, steps="3"), TypeError,
       r"^'<=' not supported between instances of 'str' and 'int'\. "),
      (lambda: estimator.evaluate(input_fn, steps=[2]), TypeError,
       r"^'<=' not supported between instances of 'list' and 'int'\. "),
      (lambda: estimator.evaluate(input_fn, steps=float("inf")), OverflowError,
       r"^cannot convert float infinity to integer\. "),
      (lambda: estimator.evaluate(input_fn, steps=float("nan")), ValueError,
       r"^cannot convert float NaN to integer\. ")):
    with pytest.raises(error, match=text):
      call()


_RESUME_PROGRAM = textwrap.dedent("""
    import json, sys
    import numpy as np
    import estimator_lite as est
    import tensorflow as tf

    def model_fn(features, labels, mode):
      w = tf.compat.v1.get_variable("w", [2, 1], initializer=tf.compat.v1.zeros_initializer())
      b = tf.compat.v1.get_variable("b", [1], initializer=tf.compat.v1.zeros_initializer())
      loss = tf.compat.v1.losses.mean_squared_error(labels, tf.matmul(features["x"], w) + b)
      train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
          loss, global_step=tf.compat.v1.train.get_global_step())
      return est.EstimatorSpec(mode, loss=loss, train_op=train_op)

    def input_fn():
      x = np.linspace(-1, 1, 32, dtype=np.float32).reshape(16, 2)
      y = x @ np.array([[2.0], [-3.0]], np.float32) + 0.5
      return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat().batch(8)

    if __name__ == "__main__":
      tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)
      estimator = est.Estimator(model_fn, model_dir=sys.argv[1])
      estimator.train(input_fn, steps=int(sys.argv[2]))
      print(json.dumps({"global_step": int(estimator.get_variable_value("global_step")),
                        "w": estimator.get_variable_value("w").tolist()}))
""")


def test_new_process_resumes_from_latest_checkpoint(tmp_path, run_python):
  # This process trains 10 steps with the program's model_fn; a new process
  # running the same program continues from model.ckpt-10.
  program = {"__name__": "resume_program"}
  exec(compile(_RESUME_PROGRAM, "resume_program", "exec"), program)  # pylint: disable=exec-used
  model_dir = tmp_path / "model"
  estimator = est.Estimator(program["model_fn"], model_dir=str(model_dir))
  estimator.train(program["input_fn"], steps=10)
  w_at_10 = estimator.get_variable_value("w").tolist()

  completed = run_python(_RESUME_PROGRAM, model_dir, 5)
  resumed = _last_json_line(completed)
  assert resumed["global_step"] == 15
  assert ("Restoring parameters from " + str(model_dir / "model.ckpt-10")) in completed.stderr
  assert resumed["w"] != w_at_10
  assert estimator.latest_checkpoint() == str(model_dir / "model.ckpt-15")


def test_no_model_dir_uses_a_logged_temporary_directory(linear_model_fn, tf_logs):
  estimator = est.Estimator(linear_model_fn, params={})
  assert os.path.isdir(estimator.model_dir)
  assert estimator.config.model_dir == estimator.model_dir
  assert ("Using temporary folder as model directory: " + estimator.model_dir) in tf_logs.text
  os.rmdir(estimator.model_dir)  # nothing was written; leave no trace


# -- RunConfig / Estimator knobs --------------------------------------------------

def test_run_config_and_estimator_knobs_behave_as_in_tf_estimator(
    tmp_path, linear_data, make_input_fn):
  """Each knob as tf.estimator 2.15 documents it, and as it behaved there on this program.

  keep_checkpoint_max with save_checkpoints_steps, predict_keys,
  checkpoint_path for evaluate and predict, params, device_fn, a model_fn's
  Scaffold(init_fn=...), and session_config.
  """
  x, y = linear_data
  model_dir = str(tmp_path / "model")
  seen = {"params": [], "variable_devices": {}, "session_devices": {}, "init_fn": []}

  class SessionDevicesHook(tf.compat.v1.train.SessionRunHook):
    """Records the devices of the session each mode runs in."""

    def __init__(self, mode):
      self._mode = mode

    def after_create_session(self, session, coord):
      seen["session_devices"][self._mode] = sorted(d.device_type for d in session.list_devices())

  def model_fn(features, labels, mode, params):
    seen["params"].append(params)
    w = tf.compat.v1.get_variable("w", [2, 1], initializer=tf.compat.v1.zeros_initializer())
    b = tf.compat.v1.get_variable("b", [1], initializer=tf.compat.v1.zeros_initializer())
    seen["variable_devices"][mode] = {v.op.name: v.device for v in (w, b)}

    def init_fn(scaffold, session):
      # Runs after init_op, only when nothing was restored: start from w = [1, 1].
      del scaffold
      seen["init_fn"].append(mode)
      w.load([[1.0], [1.0]], session)

    scaffold = tf.compat.v1.train.Scaffold(init_fn=init_fn)
    prediction = tf.matmul(features["x"], w) + b
    predictions = {"y": prediction, "doubled": 2.0 * prediction}
    hooks = [SessionDevicesHook(mode)]
    if mode == est.ModeKeys.PREDICT:
      return est.EstimatorSpec(mode, predictions=predictions, scaffold=scaffold,
                               prediction_hooks=hooks)
    loss = tf.compat.v1.losses.mean_squared_error(labels, prediction)
    train_op = tf.compat.v1.train.GradientDescentOptimizer(params["learning_rate"]).minimize(
        loss, global_step=tf.compat.v1.train.get_global_step())
    return est.EstimatorSpec(mode, loss=loss, train_op=train_op, scaffold=scaffold,
                             training_hooks=hooks, evaluation_hooks=hooks)

  def device_fn(op):
    # Variables on a second CPU, which exists only with the session_config below.
    return "/device:CPU:1" if op.type in ("VarHandleOp", "VariableV2") else ""

  # Two CPU devices and no soft placement: training only works if both the
  # device_fn and this session_config are applied.
  session_config = tf.compat.v1.ConfigProto(device_count={"CPU": 2, "GPU": 0},
                                            allow_soft_placement=False)
  params = {"learning_rate": 0.1}
  estimator = est.Estimator(model_fn, model_dir=model_dir, params=params, config=_config(
      save_checkpoints_steps=2, keep_checkpoint_max=2, device_fn=device_fn,
      session_config=session_config))

  # params: a copy of what was given, passed to model_fn.
  assert estimator.params == params and estimator.params is not params
  estimator.params["learning_rate"] = 5.0
  assert estimator.params == params

  # No checkpoint: evaluate runs init_op, then the model's init_fn (w = [1, 1]).
  eval_input_fn = make_input_fn(x, y, repeat=False)
  before = estimator.evaluate(eval_input_fn)
  np.testing.assert_allclose(before["loss"], np.mean((x.sum(axis=1, keepdims=True) - y) ** 2),
                             rtol=1e-5)
  estimator.train(make_input_fn(x, y), steps=7)
  # init_fn ran once per session built from scratch: never once a checkpoint exists.
  assert seen["init_fn"] == [est.ModeKeys.EVAL, est.ModeKeys.TRAIN]
  assert seen["params"] and all(p == params for p in seen["params"])

  # device_fn applies to the training graph only (as in tf.estimator);
  # session_config to every session.
  assert seen["variable_devices"][est.ModeKeys.TRAIN] == {"w": "/device:CPU:1",
                                                         "b": "/device:CPU:1"}
  assert seen["variable_devices"][est.ModeKeys.EVAL] == {"w": "", "b": ""}

  # Saved at 0, 2, 4, 6 and 7; only the newest 2 remain, on disk and in the index.
  checkpoint_files = sorted(f for f in os.listdir(model_dir) if f.startswith("model.ckpt-"))
  assert checkpoint_files == [f"model.ckpt-{step}.{suffix}" for step in (6, 7)
                              for suffix in ("data-00000-of-00001", "index", "meta")]
  state = tf.train.get_checkpoint_state(model_dir)
  older, latest = (os.path.join(model_dir, f"model.ckpt-{step}") for step in (6, 7))
  assert state.model_checkpoint_path == latest
  assert list(state.all_model_checkpoint_paths) == [older, latest]

  # checkpoint_path picks an older checkpoint for evaluate and predict.
  assert estimator.evaluate(eval_input_fn)["global_step"] == 7
  at_6 = estimator.evaluate(eval_input_fn, checkpoint_path=older)
  assert at_6["global_step"] == 6
  # tf.estimator 2.15 running this same program reports 2.4837124.
  np.testing.assert_allclose(at_6["loss"], 2.4837124, rtol=1e-5)
  predict_input_fn = make_input_fn(x, repeat=False)
  at_latest = np.stack([p["y"] for p in estimator.predict(predict_input_fn)])
  at_older = np.stack([p["y"] for p in estimator.predict(predict_input_fn,
                                                         checkpoint_path=older)])
  assert not np.allclose(at_older, at_latest)
  assert seen["init_fn"] == [est.ModeKeys.EVAL, est.ModeKeys.TRAIN]

  # predict_keys keeps only those keys. As in tf.estimator, a key the model
  # does not predict is dropped (with a warning) when another one is kept,
  # and an error names the keys when none is.
  for keys in (["doubled"], ["doubled", "nope"]):
    doubled = list(estimator.predict(predict_input_fn, predict_keys=keys))
    assert {tuple(p) for p in doubled} == {("doubled",)}
    np.testing.assert_allclose(np.stack([p["doubled"] for p in doubled]), 2 * at_latest,
                               rtol=1e-6)
  with pytest.raises(ValueError, match=r"provided \['nope'\]"):
    next(estimator.predict(predict_input_fn, predict_keys=["nope"]))

  # Every session had the two CPUs that session_config asked for (the default has one).
  assert seen["session_devices"] == {mode: ["CPU", "CPU"] for mode in (
      est.ModeKeys.TRAIN, est.ModeKeys.EVAL, est.ModeKeys.PREDICT)}


# -- mistakes: tf.estimator's errors ----------------------------------------------
# Users' tests match these with assertRaisesRegex: each error has tf.estimator
# 2.15's type and starts with its text unchanged; estimator_lite's advice follows.

def test_constructor_mistakes_raise_tf_estimator_errors(tmp_path, linear_model_fn):
  # The config is checked first, as in tf.estimator: even before model_fn.
  for model_fn in (None, linear_model_fn):
    with pytest.raises(ValueError, match=r"^config must be an instance of `RunConfig`, but "
                                         r"provided NotARunConfig\. "):
      est.Estimator(model_fn, config="NotARunConfig")
  with pytest.raises(ValueError, match=re.escape(
      "`model_dir` are set both in constructor and `RunConfig`, but with different values. "
      f"In constructor: '{tmp_path / 'a'}', in `RunConfig`: '{tmp_path / 'b'}' ")):
    est.Estimator(linear_model_fn, model_dir=str(tmp_path / "a"),
                  config=est.RunConfig(model_dir=str(tmp_path / "b")))
  with pytest.raises(ValueError, match=r"^model_fn must be provided to Estimator\."):
    est.Estimator(None, model_dir=str(tmp_path))
  assert not os.listdir(tmp_path)


def test_train_evaluate_predict_mistakes_raise_tf_estimator_errors(
    tmp_path, linear_data, make_input_fn, linear_model_fn):
  x, y = linear_data
  input_fn = make_input_fn(x, y)
  estimator = est.Estimator(linear_model_fn, model_dir=str(tmp_path), params={})
  for call in (lambda: estimator.train(input_fn, steps=1, hooks=["NotAHook"]),
               lambda: estimator.evaluate(input_fn, steps=1, hooks=["NotAHook"]),
               lambda: next(estimator.predict(input_fn, hooks=["NotAHook"]))):
    with pytest.raises(TypeError, match=r"^Hooks must be a SessionRunHook, given: NotAHook\. "):
      call()
  with pytest.raises(TypeError, match=r"^saving_listeners must be a list of "
                                      r"CheckpointSaverListener, given: not-a-listener\. "):
    estimator.train(input_fn, steps=1, saving_listeners=["not-a-listener"])
  with pytest.raises(ValueError, match=r"^Can not provide both steps and max_steps\. "):
    estimator.train(input_fn, steps=1, max_steps=2)
  # tf.estimator failed on a non-string name with a TypeError (of Python's).
  with pytest.raises(TypeError, match=r"^`name` must be string, given: 123\. "):
    estimator.evaluate(input_fn, steps=1, name=123)
  assert estimator.latest_checkpoint() is None  # nothing ran


@pytest.mark.parametrize("task_type", ["evaluator", "ps"])
def test_train_on_an_evaluator_or_ps_task_points_to_train_and_evaluate(
    monkeypatch, tmp_path, linear_data, make_input_fn, linear_model_fn, task_type):
  monkeypatch.setenv("TF_CONFIG", json.dumps({
      "cluster": {"chief": ["localhost:1"], "ps": ["localhost:2"]},
      "task": {"type": task_type, "index": 0}}))
  x, y = linear_data
  estimator = est.Estimator(linear_model_fn, model_dir=str(tmp_path), params={})
  with pytest.raises(ValueError, match=r"^Train has been called wrong configuration\. Please "
                                       r"use tf\.estimator\.train_and_evaluate which calls "
                                       r"proper API according to given configuration\."):
    estimator.train(make_input_fn(x, y), steps=1)


def test_prediction_mistakes_raise_tf_estimator_errors(tmp_path, linear_data, make_input_fn):
  x, _ = linear_data

  def model_fn(features, mode, params):
    w = tf.compat.v1.get_variable("w", [2, 1])
    prediction = tf.matmul(features["x"], w)
    predictions = prediction if params["single"] else {
        "y": prediction, "first": prediction[:1]}
    return est.EstimatorSpec(mode, predictions=predictions)

  input_fn = make_input_fn(x, repeat=False)
  single = est.Estimator(model_fn, model_dir=str(tmp_path / "single"), params={"single": True})
  with pytest.raises(ValueError, match=r"^predict_keys argument is not valid in case of "
                                       r"non-dict predictions\. "):
    next(single.predict(input_fn, predict_keys=["y"]))
  two = est.Estimator(model_fn, model_dir=str(tmp_path / "two"), params={"single": False})
  with pytest.raises(ValueError, match=re.escape(
      "Expected to run at least one output from dict_keys(['y', 'first']), provided ['z'].")):
    next(two.predict(input_fn, predict_keys=["z"]))
  with pytest.raises(ValueError, match=r"^Batch length of predictions should be same\. first "
                                       r"has different batch length than others"):
    next(two.predict(input_fn))
  assert len(list(two.predict(input_fn, yield_single_examples=False))) == 4
