"""TPUEstimator with use_tpu=False: what tf.estimator 2.15 gave a program on CPU, and what it refuses.

The same-results-as-2.15 check on a whole program is test_tf215_tpu_compat.py;
here each contract on its own: the params input_fn and model_fn receive, a
TPUEstimatorSpec run as the EstimatorSpec it stands for (an Estimator on the
same model gives the same model), scaffold_fn's init_from_checkpoint, the
step-rate log, exports, train_and_evaluate, the steps_per_loop opt-in, and
the refusals of what needs a TPU (nothing written).
"""
import os

import numpy as np
import pytest
import tensorflow as tf

import estimator_lite as est

tpu = est.tpu

X = np.array([[0.1, 0.9], [0.8, 0.2], [0.5, 0.5], [0.9, 0.7],
              [0.2, 0.3], [0.7, 0.1], [0.4, 0.8], [0.6, 0.4]], np.float32)
Y = (X[:, 0] > X[:, 1]).astype(np.int32)


def _input_fn(params):
  dataset = tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).repeat()
  return dataset.batch(params["batch_size"], drop_remainder=True)


def _eval_input_fn(params):
  return tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).batch(params["batch_size"])


def _predict_input_fn(params):
  return tf.data.Dataset.from_tensor_slices({"x": X}).batch(params["batch_size"])


def _serving_input_receiver_fn():
  x = tf.compat.v1.placeholder(tf.float32, [None, 2], name="x")
  return est.export.ServingInputReceiver({"x": x}, {"x": x})


def _logits(features):
  weights = tf.compat.v1.get_variable("w", [2, 2], initializer=tf.compat.v1.zeros_initializer())
  bias = tf.compat.v1.get_variable("b", [2], initializer=tf.compat.v1.zeros_initializer())
  return tf.matmul(features["x"], weights) + bias


def _train_op(loss):
  return tf.compat.v1.train.GradientDescentOptimizer(0.5).minimize(
      loss, tf.compat.v1.train.get_global_step())


def _metric_fn(labels, logits):
  return {"accuracy": tf.compat.v1.metrics.accuracy(labels, tf.argmax(logits, 1))}


def _tpu_model_fn(features, labels, mode, params):
  """A TPU program's model_fn: TPUEstimatorSpec, eval_metrics as a list."""
  del params
  logits = _logits(features)
  if mode == est.ModeKeys.PREDICT:
    return tpu.TPUEstimatorSpec(mode, predictions={"logits": logits})
  loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
  return tpu.TPUEstimatorSpec(mode, loss=loss, train_op=_train_op(loss),
                              eval_metrics=(_metric_fn, [labels, logits]))


def _estimator_model_fn(features, labels, mode):
  """The same model for a plain Estimator."""
  logits = _logits(features)
  if mode == est.ModeKeys.PREDICT:
    return est.EstimatorSpec(mode, predictions={"logits": logits})
  loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
  return est.EstimatorSpec(mode, loss=loss, train_op=_train_op(loss),
                           eval_metric_ops=_metric_fn(labels, logits))


def _config(model_dir, **kwargs):
  kwargs.setdefault("save_checkpoints_steps", 5)
  return tpu.RunConfig(model_dir=str(model_dir), **kwargs)


def _estimator(model_dir, model_fn=_tpu_model_fn, config=None, **kwargs):
  kwargs.setdefault("train_batch_size", 4)
  kwargs.setdefault("eval_batch_size", 2)
  kwargs.setdefault("predict_batch_size", 2)
  return tpu.TPUEstimator(model_fn=model_fn, config=config or _config(model_dir),
                          use_tpu=False, **kwargs)


def test_input_fn_and_model_fn_get_2_15s_params_in_each_mode(tmp_path):
  seen = []

  def input_fn(params, config):
    seen.append(("input_fn", dict(params), type(config)))
    return _input_fn(params) if params["batch_size"] == 4 else _eval_input_fn(params)

  def model_fn(features, labels, mode, params):
    seen.append(("model_fn", mode, dict(params)))
    return _tpu_model_fn(features, labels, mode, params)

  estimator = _estimator(tmp_path, model_fn, params={"lr": 0.5})
  estimator.train(input_fn, max_steps=2)
  estimator.evaluate(input_fn)
  list(estimator.predict(_predict_input_fn))
  estimator.export_saved_model(str(tmp_path / "export"), _serving_input_receiver_fn)

  assert seen == [
      ("input_fn", {"lr": 0.5, "batch_size": 4}, tpu.RunConfig),
      ("model_fn", "train", {"lr": 0.5, "batch_size": 4, "use_tpu": False}),
      ("input_fn", {"lr": 0.5, "batch_size": 2}, tpu.RunConfig),
      ("model_fn", "eval", {"lr": 0.5, "batch_size": 2, "use_tpu": False}),
      ("model_fn", "infer", {"lr": 0.5, "batch_size": 2, "use_tpu": False}),
      # An export calls no input_fn: model_fn gets no batch size, as in 2.15.
      ("model_fn", "infer", {"lr": 0.5, "use_tpu": False}),
  ]
  # The Estimator's params stay the user's.
  assert estimator.params == {"lr": 0.5}


def test_tpu_estimator_spec_trains_as_an_estimator_on_the_same_model(tmp_path):
  tpu_estimator = _estimator(tmp_path / "tpu")
  estimator = est.Estimator(_estimator_model_fn, str(tmp_path / "plain"),
                            config=est.RunConfig(save_checkpoints_steps=5))
  tpu_estimator.train(_input_fn, max_steps=12)
  estimator.train(lambda: _input_fn({"batch_size": 4}), max_steps=12)

  assert tpu_estimator.get_variable_names() == estimator.get_variable_names()
  for name in estimator.get_variable_names():
    np.testing.assert_array_equal(tpu_estimator.get_variable_value(name),
                                  estimator.get_variable_value(name))
  assert tpu_estimator.evaluate(_eval_input_fn) == estimator.evaluate(
      lambda: _eval_input_fn({"batch_size": 2}))
  tpu_predictions = [p["logits"] for p in tpu_estimator.predict(_predict_input_fn)]
  predictions = [p["logits"] for p in estimator.predict(
      lambda: _predict_input_fn({"batch_size": 2}))]
  np.testing.assert_array_equal(tpu_predictions, predictions)

  export_dir = tpu_estimator.export_saved_model(str(tmp_path / "export"),
                                                _serving_input_receiver_fn)
  assert isinstance(export_dir, bytes)
  loaded = tf.saved_model.load(export_dir.decode())  # one MetaGraph: no tags needed
  served = loaded.signatures["serving_default"](x=tf.constant(X))["logits"].numpy()
  np.testing.assert_allclose(served, predictions, atol=1e-6)


def test_eval_metrics_take_a_list_or_a_dict_of_tensors(tmp_path):

  def dict_model_fn(features, labels, mode, params):
    spec = _tpu_model_fn(features, labels, mode, params)
    if mode != est.ModeKeys.EVAL:
      return spec
    metric_fn, (label_tensor, logits) = spec.eval_metrics
    return spec._replace(eval_metrics=(metric_fn, {"logits": logits, "labels": label_tensor}))

  as_list = _estimator(tmp_path / "list")
  as_dict = _estimator(tmp_path / "dict", dict_model_fn)
  for estimator in (as_list, as_dict):
    estimator.train(_input_fn, max_steps=6)
  results = as_list.evaluate(_eval_input_fn)
  assert set(results) == {"accuracy", "loss", "global_step"}
  assert results == as_dict.evaluate(_eval_input_fn)


def test_scaffold_fn_initialises_from_a_pretraining_checkpoint(tmp_path):
  # BERT's way: model_fn maps the pre-trained variables, scaffold_fn calls
  # init_from_checkpoint, which 2.15 ran right after model_fn, in its graph.
  pretrained = _estimator(tmp_path / "pretrained")
  pretrained.train(_input_fn, max_steps=8)
  init_checkpoint = pretrained.latest_checkpoint()
  seen_scaffold = []

  def model_fn(features, labels, mode, params):
    with tf.compat.v1.variable_scope("bert"):
      logits = _logits(features)
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    train_op = tf.compat.v1.train.GradientDescentOptimizer(0.0).minimize(
        loss, tf.compat.v1.train.get_global_step())

    def scaffold_fn():
      tf.compat.v1.train.init_from_checkpoint(init_checkpoint, {"w": "bert/w", "b": "bert/b"})
      seen_scaffold.append(mode)
      return tf.compat.v1.train.Scaffold()

    return tpu.TPUEstimatorSpec(mode, loss=loss, train_op=train_op, scaffold_fn=scaffold_fn)

  fine_tuned = _estimator(tmp_path / "fine_tuned", model_fn)
  fine_tuned.train(_input_fn, steps=1)
  assert seen_scaffold == ["train"]
  for name in ("w", "b"):
    np.testing.assert_array_equal(fine_tuned.get_variable_value("bert/" + name),
                                  pretrained.get_variable_value(name))


def test_a_plain_estimator_spec_runs_with_its_chief_hooks_and_scaffold(tmp_path):
  # 2.15 accepted an EstimatorSpec from a TPUEstimator's model_fn on CPU, its
  # training_chief_hooks included (only a TPU refused them).
  calls = []

  class ChiefHook(est.SessionRunHook):

    def end(self, session):
      calls.append("chief end")

  def model_fn(features, labels, mode, params):
    spec = _estimator_model_fn(features, labels, mode)
    if mode != est.ModeKeys.TRAIN:
      return spec
    return spec.replace(training_chief_hooks=[ChiefHook()],
                        scaffold=tf.compat.v1.train.Scaffold())

  estimator = _estimator(tmp_path, model_fn)
  estimator.train(_input_fn, max_steps=3)
  assert calls == ["chief end"]
  assert estimator.evaluate(_eval_input_fn)["global_step"] == 3


def test_training_logs_and_records_the_step_rate_as_tpu_estimator_did(tmp_path, tf_logs,
                                                                      read_scalars):
  # log_step_count_steps=6 with iterations_per_loop=3: every ceil(6/3) = 2
  # steps; Estimator's own "loss = ..." log is off, as 2.15 turned it off.
  config = _config(tmp_path, log_step_count_steps=6,
                   tpu_config=tpu.TPUConfig(iterations_per_loop=3))
  estimator = _estimator(tmp_path, config=config)
  estimator.train(_input_fn, max_steps=9)
  assert "training_loop marked as finished" in tf_logs.messages
  assert "Running train on CPU/GPU" in tf_logs.messages
  assert sum(m.startswith("global_step/sec: ") for m in tf_logs.messages) == 4
  assert sum(m.startswith("examples/sec: ") for m in tf_logs.messages) == 4
  assert not [m for m in tf_logs.messages if m.startswith("loss = ")]
  scalars = read_scalars(str(tmp_path))
  assert [step for step, _ in scalars["global_step/sec"]] == [3, 5, 7, 9]
  rates = dict(scalars["global_step/sec"])
  for step, examples_per_sec in scalars["examples/sec"]:
    assert examples_per_sec == pytest.approx(4 * rates[step], rel=1e-5)  # train_batch_size 4


def test_iterations_per_loop_in_seconds_logs_by_time(tmp_path, tf_logs):
  config = _config(tmp_path, tpu_config=tpu.TPUConfig(iterations_per_loop="1h"))
  estimator = _estimator(tmp_path, config=config)
  estimator.train(_input_fn, max_steps=5)
  # Every hour: the first trigger starts the clock, none reports in 5 steps.
  assert not [m for m in tf_logs.messages if m.startswith("global_step/sec")]


def test_what_needs_a_tpu_is_refused_when_built_and_nothing_is_written(tmp_path):
  model_dir = tmp_path / "model"
  config = _config(model_dir)
  with pytest.raises(RuntimeError, match="Cannot find any TPU cores.*pass use_tpu=False"):
    tpu.TPUEstimator(_tpu_model_fn, config=config, train_batch_size=4)  # use_tpu=True default
  spec = tpu.experimental.EmbeddingConfigSpec(
      feature_columns=[tf.feature_column.numeric_column("x")])
  with pytest.raises(ValueError, match="TPU embeddings.*embedding_column"):
    tpu.TPUEstimator(_tpu_model_fn, config=config, use_tpu=False,
                     embedding_config_spec=spec)
  with pytest.raises(ValueError, match="Mod sharding of embedding tables not supported on CPU"):
    tpu.TPUEstimator(_tpu_model_fn, config=config, use_tpu=False,
                     embedding_config_spec=spec._replace(partition_strategy="mod"))
  with pytest.raises(ValueError, match="export_to_cpu=False, export_to_tpu=True.*"
                                       "export_to_cpu=True"):
    tpu.TPUEstimator(_tpu_model_fn, config=config, use_tpu=False, export_to_cpu=False)
  assert not model_dir.exists()


def test_2_15s_constructor_errors_come_first_with_its_texts(tmp_path):
  config = _config(tmp_path)
  with pytest.raises(ValueError, match="`config` must be provided with type "
                                       "`tpu_config.RunConfig`"):
    tpu.TPUEstimator(_tpu_model_fn, config=est.RunConfig(), use_tpu=False)
  with pytest.raises(ValueError, match=r"\['batch_size', 'context'\] are reserved keys"):
    tpu.TPUEstimator(_tpu_model_fn, config=config, use_tpu=False, params={"batch_size": 2})
  # With use_tpu=True, 2.15's own checks of its arguments before the refusal.
  with pytest.raises(ValueError, match="`train_batch_size` cannot be `None`"):
    tpu.TPUEstimator(_tpu_model_fn, config=config)
  with pytest.raises(TypeError, match="train_batch_size must be int"):
    tpu.TPUEstimator(_tpu_model_fn, config=config, train_batch_size=2.0)
  # ... the model_fn's arguments too, as Estimator checks them.
  with pytest.raises(ValueError, match="model_fn .* has following not expected args"):
    tpu.TPUEstimator(lambda features, labels, invalid_arg: None, config=config,
                     train_batch_size=16)


def test_input_fn_and_model_fn_without_params_get_2_15s_errors(tmp_path):
  estimator = _estimator(tmp_path)
  with pytest.raises(ValueError, match="input_fn .* does not include params argument, "
                                       "required by TPUEstimator"):
    estimator.train(lambda: _input_fn({"batch_size": 4}), steps=1)

  def no_params(features, labels, mode):
    return _estimator_model_fn(features, labels, mode)

  with pytest.raises(ValueError, match="model_fn .* does not include params argument, "
                                       "required by TPUEstimator"):
    _estimator(tmp_path / "b", no_params).train(_input_fn, steps=1)


def test_a_batch_size_left_out_says_which_argument_to_pass(tmp_path):
  estimator = _estimator(tmp_path, eval_batch_size=None)
  estimator.train(_input_fn, max_steps=1)
  with pytest.raises(KeyError, match="without eval_batch_size.*TPUEstimator\\(eval_batch_size"):
    estimator.evaluate(_eval_input_fn)


def test_export_needs_one_of_export_to_cpu_and_export_to_tpu(tmp_path):
  estimator = _estimator(tmp_path, export_to_cpu=False, export_to_tpu=False)
  estimator.train(_input_fn, max_steps=1)
  with pytest.raises(ValueError, match="One of export_to_cpu and export_to_tpu must be true"):
    estimator.export_saved_model(str(tmp_path / "export"), _serving_input_receiver_fn)
  assert not (tmp_path / "export").exists()


def test_train_and_evaluate_with_an_exporter(tmp_path):
  estimator = _estimator(tmp_path, export_to_tpu=False)
  metrics, exports = est.train_and_evaluate(
      estimator, est.TrainSpec(_input_fn, max_steps=10),
      est.EvalSpec(_eval_input_fn, steps=None, throttle_secs=0,
                   exporters=[est.LatestExporter("latest", _serving_input_receiver_fn)]))
  assert metrics["global_step"] == 10 and "accuracy" in metrics
  # The last evaluation's export (earlier evaluations exported too).
  assert len(exports) == 1
  assert os.path.basename(exports[0].decode()) in os.listdir(tmp_path / "export" / "latest")


def test_steps_per_loop_is_an_opt_in_with_the_same_weights(tmp_path):
  # iterations_per_loop on CPU: RunConfig(steps_per_loop=K) trains K steps a
  # session run; the weights are those of one step a run.
  one = _estimator(tmp_path / "one")
  looped = _estimator(tmp_path / "looped", config=_config(tmp_path / "looped",
                                                          steps_per_loop=4))
  for estimator in (one, looped):
    estimator.train(_input_fn, max_steps=10)
  for name in ("w", "b", "global_step"):
    np.testing.assert_allclose(looped.get_variable_value(name), one.get_variable_value(name),
                               rtol=1e-6)

  def host_call_model_fn(features, labels, mode, params):
    spec = _tpu_model_fn(features, labels, mode, params)
    return spec._replace(host_call=(lambda loss: [tf.identity(loss)], [tf.reshape(spec.loss, [1])]))

  with pytest.raises(ValueError, match="host_call with RunConfig\\(steps_per_loop=4\\)"):
    _estimator(tmp_path / "host_call", host_call_model_fn,
               config=_config(tmp_path / "host_call", steps_per_loop=4)).train(
                   _input_fn, max_steps=4)
