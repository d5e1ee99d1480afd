"""DNNClassifier / DNNRegressor / DNNEstimator and their compat.v1 variants against tf.estimator 2.15.

DNN weights are random, so the numbers are checked by loading: the model_dirs
in tests/data/canned/dnn_tf215/ were trained by tf.estimator 2.15
(tests/reference/make_dnn_fixture.py, whose docstring has the command), and
expected.json holds what 2.15 evaluated, predicted and exported from them.
estimator_lite evaluates and predicts from a copy without training (within
1e-4), exports it, and resumes training it with the same checkpoint
variables. The variable names of fresh models are 2.15's (recorded from
2.15 below).
"""
import json
import os
import shutil
import sys

import numpy as np
import pytest

TESTS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE_DIR = os.path.join(TESTS_DIR, "data", "canned", "dnn_tf215")
sys.path.insert(0, os.path.join(TESTS_DIR, "reference"))

import estimator_lite as est  # pylint: disable=g-import-not-at-top,wrong-import-position
import make_dnn_fixture as fixture  # pylint: disable=g-import-not-at-top,wrong-import-position
import tensorflow as tf  # pylint: disable=g-import-not-at-top,wrong-import-position
import tf_keras  # pylint: disable=g-import-not-at-top,wrong-import-position

fc = tf.feature_column
fc1 = tf.compat.v1.feature_column
TOL = 1e-4


@pytest.fixture(scope="module")
def expected():
  with open(os.path.join(FIXTURE_DIR, "expected.json")) as f:
    return json.load(f)["cases"]


def _copy(name, tmp_path):
  model_dir = str(tmp_path / name)
  shutil.copytree(os.path.join(FIXTURE_DIR, name), model_dir)
  return model_dir


def _assert_close(actual, wanted, where="", tols=None):
  """Same keys and structure; numbers within TOL (relative above 1)."""
  tols = tols or {}
  if isinstance(wanted, dict):
    assert sorted(actual) == sorted(wanted), where
    for key in wanted:
      _assert_close(actual[key], wanted[key], f"{where}/{key}",
                    {**tols, "_tol": tols.get(key, tols.get("_tol", TOL))})
  elif isinstance(wanted, list):
    assert len(actual) == len(wanted), where
    for index, (a, w) in enumerate(zip(actual, wanted)):
      _assert_close(a, w, f"{where}[{index}]", tols)
  elif isinstance(wanted, float):
    tol = tols.get("_tol", TOL)
    assert abs(actual - wanted) <= tol * max(1.0, abs(wanted)), (where, actual, wanted)
  else:
    assert actual == wanted, (where, actual, wanted)


def _variables(model_dir):
  return {name: shape for name, shape in tf.train.list_variables(model_dir)}


@pytest.mark.parametrize("name", ["dnn_classifier", "dnn_classifier_v1"])
def test_tf215_model_dir_evaluates_predicts_and_resumes(name, expected, tmp_path):
  """A model_dir tf.estimator 2.15 trained gives 2.15's numbers here, then trains on."""
  wanted = expected[name]
  model_dir = _copy(name, tmp_path)
  estimator = fixture.make_estimator(name, est, est.compat.v1, fc, model_dir)

  metrics = fixture.to_json(estimator.evaluate(fixture.input_fn(tf, name)))
  _assert_close(metrics, wanted["evaluate"], "evaluate")
  predictions = fixture.to_json(list(estimator.predict(
      fixture.input_fn(tf, name, with_labels=False))))
  _assert_close(predictions, wanted["predict"], "predict")

  estimator.train(fixture.input_fn(tf, name, repeat=True), steps=2)
  assert estimator.get_variable_value("global_step") == fixture.TRAIN_STEPS + 2
  # The same variables (no optimizer `iter`, no renamed slot): 2.15 reads it back.
  assert _variables(model_dir) == {k: v for k, v in wanted["variables"].items()}
  assert np.isfinite(estimator.evaluate(fixture.input_fn(tf, name))["loss"])


def test_export_has_215_signatures_and_serves_its_predictions(expected, tmp_path):
  """serving_default (classification), classification and predict, as 2.15 exported."""
  name = "dnn_classifier"
  estimator = fixture.make_estimator(name, est, est.compat.v1, fc, _copy(name, tmp_path))
  export_dir = estimator.export_saved_model(
      str(tmp_path / "export"), fixture.serving_input_receiver_fn(tf, est, fc, name))
  loaded = tf.saved_model.load(export_dir)
  assert sorted(loaded.signatures.keys()) == expected[name]["signatures"]
  assert sorted(loaded.signatures.keys()) == ["classification", "predict", "serving_default"]
  served = loaded.signatures["predict"](examples=tf.constant(fixture.serialized_examples(tf)))
  _assert_close(fixture.to_json({k: v.numpy() for k, v in served.items()}),
                expected[name]["served_predict"], "served")
  scores = loaded.signatures["serving_default"](
      inputs=tf.constant(fixture.serialized_examples(tf)))["scores"].numpy()
  np.testing.assert_allclose(scores, expected[name]["served_predict"]["probabilities"],
                             atol=TOL)


def test_warm_start_from_215_model_dir(expected, tmp_path):
  """warm_start_from a 2.15 model_dir: after a step at learning rate 0 the weights are 2.15's."""
  name = "dnn_classifier"
  _, _, _, kwargs = fixture.CASES[name]
  columns = fixture.feature_columns(fc)
  estimator = est.DNNClassifier(
      **{**kwargs, "feature_columns": [columns[c] for c in kwargs["feature_columns"]]},
      optimizer=tf_keras.optimizers.legacy.SGD(learning_rate=0.0),
      model_dir=str(tmp_path / "warm"), warm_start_from=_copy(name, tmp_path))
  # (Batch norm's moving statistics move even at learning rate 0, so the
  # weights are compared, not the predictions.)
  estimator.train(fixture.input_fn(tf, name, repeat=True), steps=1)
  reader = tf.train.load_checkpoint(os.path.join(FIXTURE_DIR, name))
  for variable in ("dnn/hiddenlayer_0/kernel", "dnn/logits/bias",
                   "dnn/input_from_feature_columns/input_layer/c_embedding/embedding_weights"):
    np.testing.assert_allclose(estimator.get_variable_value(variable),
                               reader.get_tensor(variable), atol=1e-6)


# -- variable names of fresh models (tf.estimator 2.15's, recorded from it) -----------

_SHARED_V2 = {
    "c_d_shared_embedding", "dnn/hiddenlayer_0/bias", "dnn/hiddenlayer_0/kernel",
    "dnn/logits/bias", "dnn/logits/kernel", "global_step", "training/Adagrad/decay",
    "training/Adagrad/dnn/hiddenlayer_0/bias/accumulator",
    "training/Adagrad/dnn/hiddenlayer_0/kernel/accumulator",
    "training/Adagrad/dnn/logits/bias/accumulator",
    "training/Adagrad/dnn/logits/kernel/accumulator", "training/Adagrad/learning_rate"}
_SHARED_V1 = {
    "dnn/hiddenlayer_0/bias", "dnn/hiddenlayer_0/bias/t_0/Adagrad",
    "dnn/hiddenlayer_0/kernel", "dnn/hiddenlayer_0/kernel/t_0/Adagrad",
    "dnn/input_from_feature_columns/input_layer/c_d_shared_embedding/embedding_weights",
    "dnn/input_from_feature_columns/input_layer/c_d_shared_embedding/embedding_weights/t_0/Adagrad",
    "dnn/logits/bias", "dnn/logits/bias/t_0/Adagrad", "dnn/logits/kernel",
    "dnn/logits/kernel/t_0/Adagrad", "global_step"}
_MISC_V2_EMBEDDINGS = {
    "dnn/input_from_feature_columns/input_layer/c_X_h_embedding/embedding_weights": [5, 2],
    "dnn/input_from_feature_columns/input_layer/c_weighted_by_w_embedding/embedding_weights":
        [3, 2],
    "dnn/input_from_feature_columns/input_layer/f_embedding/embedding_weights": [4, 2],
}


def _train_input_fn(labels=None):
  labels = labels if labels is not None else [[0], [1], [2], [1]]

  def input_fn():
    features = {
        "x": tf.constant([[1.0], [2.0], [3.0], [4.0]]),
        "c": tf.constant([["a"], ["b"], ["a"], ["c"]]),
        "d": tf.constant([["b"], ["b"], ["a"], ["c"]]),
        "h": tf.constant([["p"], ["q"], ["r"], ["s"]]),
        "f": tf.constant([["u"], ["v"], ["w"], ["u"]]),
        "w": tf.constant([[1.0], [2.0], [1.0], [0.5]]),
        "i": tf.constant([[0], [1], [2], [1]], dtype=tf.int64),
    }
    return tf.data.Dataset.from_tensors((features, tf.constant(labels))).repeat()

  return input_fn


def _shared(make):
  # shared embedding columns are built outside eager execution (TensorFlow's
  # rule, in 2.15 too).
  with tf.Graph().as_default():
    return make()


@pytest.fixture
def vocabulary_file(tmp_path):
  path = tmp_path / "vocab.txt"
  path.write_text("u\nv\nw\nx\n")
  return str(path)


def test_feature_column_kinds_train_with_215_names(tmp_path, vocabulary_file):
  """Numeric, bucketized, embedding of a crossed / weighted / vocabulary-file column, indicators."""
  c = fc.categorical_column_with_vocabulary_list("c", ["a", "b", "c"])
  columns = [
      fc.numeric_column("x"), fc.bucketized_column(fc.numeric_column("x"), [2.0, 3.0]),
      fc.indicator_column(fc.categorical_column_with_identity("i", 3)),
      fc.indicator_column(fc.categorical_column_with_hash_bucket("h", 4)),
      fc.embedding_column(fc.weighted_categorical_column(c, "w"), 2),
      fc.embedding_column(fc.crossed_column(["c", "h"], 5), 2),
      fc.embedding_column(fc.categorical_column_with_vocabulary_file(
          "f", vocabulary_file, vocabulary_size=4), 2),
  ]
  classifier = est.DNNClassifier([3], columns, n_classes=3, model_dir=str(tmp_path))
  classifier.train(_train_input_fn(), steps=2)
  variables = _variables(str(tmp_path))
  for name, shape in _MISC_V2_EMBEDDINGS.items():
    assert variables[name] == shape
    assert variables[f"training/Adagrad/{name}/accumulator"] == shape
  # x, 3 buckets, 3 ids, 4 hashes, three 2-wide embeddings.
  assert variables["dnn/hiddenlayer_0/kernel"] == [1 + 3 + 3 + 4 + 6, 3]
  assert "training/Adagrad/iter" not in variables
  # tf.keras's Adagrad default learning rate, as 2.15's v2 DNN used for a name.
  assert classifier.get_variable_value("training/Adagrad/learning_rate") == pytest.approx(0.001)


def test_shared_embeddings_v2_and_v1_columns(tmp_path):
  """tf.feature_column.shared_embeddings (v2) and shared_embedding_columns (v1): 2.15's names."""
  def pair(module, shared):
    return _shared(lambda: shared([module.categorical_column_with_vocabulary_list(
        key, ["a", "b", "c"]) for key in ("c", "d")], 2))

  v2 = est.DNNClassifier([3], [fc.numeric_column("x")] + pair(fc, fc.shared_embeddings),
                         n_classes=3, model_dir=str(tmp_path / "v2"))
  v2.train(_train_input_fn(), steps=1)
  # 2.15's v2 DNN created the shared table outside its Keras model: no slot,
  # and it does not train; estimator_lite keeps that.
  assert set(_variables(str(tmp_path / "v2"))) == _SHARED_V2

  v1 = est.compat.v1.DNNClassifier(
      [3], [fc1.numeric_column("x")] + pair(fc1, fc1.shared_embedding_columns),
      n_classes=3, model_dir=str(tmp_path / "v1"))
  v1.train(_train_input_fn(), steps=1)
  assert set(_variables(str(tmp_path / "v1"))) == _SHARED_V1
  assert len(list(v1.predict(lambda: _train_input_fn()().map(lambda f, l: f).take(1)))) == 4

  with pytest.raises(ValueError, match="Received a feature column from TensorFlow v1, but "
                     "this is a TensorFlow v2 Estimator"):
    est.DNNClassifier([3], pair(fc1, fc1.shared_embedding_columns),
                      model_dir=str(tmp_path / "bad")).train(_train_input_fn([[0]] * 4), steps=1)


def test_regressor_and_estimator_arguments(tmp_path):
  """label_dimension, weight_column, optimizer instance / callable, activation, dropout, SUM."""
  labels = [[1.0, -1.0], [0.5, 2.0], [0.0, 1.0], [2.0, 0.0]]
  regressor = est.DNNRegressor(
      hidden_units=[4, 2], feature_columns=[fc.numeric_column("x")],
      model_dir=str(tmp_path / "r"), label_dimension=2, weight_column="w",
      optimizer=lambda: tf_keras.optimizers.legacy.Adam(learning_rate=0.01),
      activation_fn=tf.nn.tanh, dropout=0.5, loss_reduction=tf_keras.losses.Reduction.SUM,
      config=est.RunConfig(tf_random_seed=3))
  regressor.train(_train_input_fn(labels), steps=3)
  metrics = regressor.evaluate(_train_input_fn(labels), steps=1)
  assert sorted(metrics) == ["average_loss", "global_step", "label/mean", "loss",
                             "prediction/mean"]
  assert "training/Adam/dnn/hiddenlayer_1/kernel/m" in _variables(str(tmp_path / "r"))
  prediction = next(regressor.predict(lambda: _train_input_fn(labels)().map(lambda f, l: f)))
  assert prediction["predictions"].shape == (2,)

  head = est.MultiLabelHead(n_classes=3)
  multi_label = est.DNNEstimator(
      head, [3], [fc.numeric_column("x")], model_dir=str(tmp_path / "m"),
      optimizer=tf_keras.optimizers.legacy.RMSprop(learning_rate=0.01), batch_norm=True)
  multi_label.train(_train_input_fn([[1, 0, 1], [0, 1, 0], [1, 1, 0], [0, 0, 1]]), steps=2)
  assert "dnn/hiddenlayer_0/batchnorm_0/moving_mean" in _variables(str(tmp_path / "m"))


def test_classifier_label_vocabulary_and_v1_loss_sum(tmp_path):
  """String labels through label_vocabulary; the v1 loss is summed over the batch."""
  labels = [["no"], ["yes"], ["yes"], ["no"]]
  columns = [fc.numeric_column("x")]
  v2 = est.DNNClassifier([2], columns, label_vocabulary=["no", "yes"],
                         model_dir=str(tmp_path / "v2"))
  v1 = est.compat.v1.DNNClassifier([2], columns, label_vocabulary=["no", "yes"],
                                   model_dir=str(tmp_path / "v1"), optimizer="SGD")
  for estimator in (v2, v1):
    estimator.train(_train_input_fn(labels), steps=1)
  metrics = {name: e.evaluate(_train_input_fn(labels), steps=1) for name, e in
             (("v2", v2), ("v1", v1))}
  for m in metrics.values():
    assert m["loss"] > 0
  # 4 examples: the v1 loss is the sum, 4 times the mean (its average_loss).
  assert metrics["v1"]["loss"] == pytest.approx(4 * metrics["v1"]["average_loss"], rel=1e-5)
  assert metrics["v2"]["loss"] == pytest.approx(metrics["v2"]["average_loss"], rel=1e-5)
  prediction = next(v1.predict(lambda: _train_input_fn(labels)().map(lambda f, l: f)))
  assert prediction["classes"][0] in (b"no", b"yes")
  # The v1 SGD optimizer has no slots; the learning rate of a name is 0.05.
  assert sorted(_variables(str(tmp_path / "v1"))) == [
      "dnn/hiddenlayer_0/bias", "dnn/hiddenlayer_0/kernel", "dnn/logits/bias",
      "dnn/logits/kernel", "global_step"]


def test_v1_input_layer_partitioner_splits_the_input_variables(tmp_path):
  """input_layer_partitioner partitions the v1 input layer; the checkpoint names stay whole."""
  emb = fc.embedding_column(fc.categorical_column_with_hash_bucket("h", 8), 2)
  classifier = est.compat.v1.DNNClassifier(
      [2], [emb], n_classes=3, model_dir=str(tmp_path),
      input_layer_partitioner=tf.compat.v1.fixed_size_partitioner(2))
  classifier.train(_train_input_fn(), steps=1)
  name = "dnn/input_from_feature_columns/input_layer/h_embedding/embedding_weights"
  variables = _variables(str(tmp_path))
  assert variables[name] == [8, 2]
  assert variables[f"{name}/t_0/Adagrad"] == [8, 2]
  assert classifier.get_variable_value(name).shape == (8, 2)


def test_dnn_logit_fn_builder_in_a_model_fn(tmp_path):
  """tf.compat.v1.estimator.experimental.dnn_logit_fn_builder in a user's model_fn."""
  builder = est.experimental.dnn_logit_fn_builder
  with pytest.raises(ValueError, match=r"units must be an int.  Given type: <class 'float'>"):
    builder(2.0, [2], [fc.numeric_column("x")], tf.nn.relu, None, None, False)

  def model_fn(features, labels, mode):
    with tf.compat.v1.variable_scope("dnn"):
      logits = builder(units=1, hidden_units=[3], feature_columns=[fc.numeric_column("x")],
                       activation_fn=tf.nn.relu, dropout=None, input_layer_partitioner=None,
                       batch_norm=False)(features=features, mode=mode)
    loss = tf.reduce_mean(tf.square(logits - labels))
    train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
        loss, global_step=tf.compat.v1.train.get_global_step())
    return est.EstimatorSpec(mode, loss=loss, train_op=train_op, predictions=logits)

  estimator = est.Estimator(model_fn, model_dir=str(tmp_path))
  estimator.train(_train_input_fn([[1.0], [2.0], [3.0], [4.0]]), steps=2)
  assert sorted(_variables(str(tmp_path))) == [
      "dnn/hiddenlayer_0/bias", "dnn/hiddenlayer_0/kernel", "dnn/logits/bias",
      "dnn/logits/kernel", "global_step"]


@pytest.mark.parametrize("make, text", [
    (lambda d: est.DNNClassifier([3], [], model_dir=d), "feature_columns must not be empty."),
    (lambda d: est.compat.v1.DNNClassifier([3], None, model_dir=d),
     "feature_columns must not be empty."),
    (lambda d: est.DNNClassifier([3], [fc.numeric_column("x"), fc.numeric_column("z")],
                                 model_dir=d),
     r"Feature z is not in features dictionary\. The key 'z' \(read by feature column "
     r"'z'\) is not among the features the input_fn returned: \['c', 'd', 'f', 'h', 'i', "
     r"'w', 'x'\]"),
    (lambda d: est.compat.v1.DNNRegressor(
        [3], [fc.embedding_column(fc.categorical_column_with_hash_bucket("q", 5), 2)],
        model_dir=d),
     r"Feature q is not in features dictionary\. The key 'q' \(read by feature column "
     r"'q_embedding'\)"),
    (lambda d: est.DNNClassifier([3], [fc.numeric_column("x")], model_dir=d, optimizer="Foo"),
     r"Unsupported optimizer name: Foo\. Supported names are: \('Adagrad', 'Adam', 'Ftrl', "
     r"'RMSProp', 'SGD'\)"),
])
def test_bad_arguments_raise_215_texts(make, text, tmp_path):
  with pytest.raises(ValueError, match=text):
    make(str(tmp_path)).train(_train_input_fn([[0]] * 4), steps=1)


def test_no_hidden_layers_and_features_not_a_dict(tmp_path):
  """hidden_units=[] gives logits straight from the input (as in 2.15); features must be a dict."""
  linear_like = est.DNNClassifier([], [fc.numeric_column("x")], model_dir=str(tmp_path / "a"))
  linear_like.train(_train_input_fn([[0], [1], [1], [0]]), steps=1)
  assert sorted(_variables(str(tmp_path / "a")))[:2] == ["dnn/logits/bias", "dnn/logits/kernel"]

  def not_a_dict():
    return tf.data.Dataset.from_tensors((tf.constant([[1.0]]), tf.constant([[0]]))).repeat()

  with pytest.raises(ValueError, match="features should be a dictionary of `Tensor`s. Given "
                     "type: "):
    est.DNNClassifier([2], [fc.numeric_column("x")],
                      model_dir=str(tmp_path / "b")).train(not_a_dict, steps=1)


def test_an_optimizer_instance_trains_once_a_callable_every_time(tmp_path):
  """2.15's rule (the instance's variables live in one graph), with the fix in the text."""
  input_fn = _train_input_fn([[0], [1], [1], [0]])
  once = est.DNNClassifier([2], [fc.numeric_column("x")], model_dir=str(tmp_path / "a"),
                           optimizer=tf_keras.optimizers.legacy.Adagrad(0.1))
  once.train(input_fn, steps=1)
  with pytest.raises(RuntimeError, match="Cannot set `iterations` to a new Variable after the "
                     "Optimizer weights have been created.*Pass a callable"):
    once.train(input_fn, steps=1)
  again = est.DNNClassifier([2], [fc.numeric_column("x")], model_dir=str(tmp_path / "b"),
                            optimizer=lambda: tf_keras.optimizers.legacy.Adagrad(0.1))
  again.train(input_fn, steps=1)
  again.train(input_fn, steps=1)
  assert again.get_variable_value("global_step") == 2
