"""LinearClassifier, LinearRegressor, LinearEstimator (and compat.v1's) against tf.estimator 2.15.

The cases of tests/reference/make_linear_fixture.py (every argument of the
classes, every feature column kind) are trained here as tf.estimator 2.15
trained them; tests/data/linear_expected.json is what 2.15 wrote and computed.
Checkpoint variable names and shapes must be identical, metrics, predictions
and exported predictions within 1e-4.
"""
import json
import os
import sys

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import estimator_lite as est
from estimator_lite.canned import linear

TESTS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TESTS_DIR, "reference"))

import make_linear_fixture as lf  # pylint: disable=g-import-not-at-top,wrong-import-position

fc = tf.feature_column
LINEAR_CASES = [name for name in lf.CASES if "linear" in name]


@pytest.fixture(scope="module")
def expected():
  with open(os.path.join(TESTS_DIR, "data", "linear_expected.json")) as f:
    return json.load(f)["cases"]


@pytest.fixture
def api(tmp_path):
  return lf.Api(tf, est, est.compat.v1, tf_keras.optimizers.legacy,
                lf.write_vocabulary_file(str(tmp_path)))


@pytest.mark.parametrize("name", LINEAR_CASES)
def test_trains_evaluates_predicts_and_exports_as_tf_estimator_2_15(name, api, expected, tmp_path):
  got = lf.run_case(api, name, str(tmp_path / "model"))
  want = json.loads(json.dumps(expected[name]))
  # Names first: a checkpoint is only portable if they are identical.
  assert got["variables"] == want["variables"]
  assert lf.differences(got, want) == []


def _input_fn(features=None, labels=None):
  features = features or {"x": [[1.0], [2.0], [3.0], [4.0]],
                          "c": [["a"], ["b"], ["a"], ["c"]]}
  labels = labels if labels is not None else [[0], [1], [1], [0]]
  return lambda: tf.data.Dataset.from_tensors(
      ({k: tf.constant(v) for k, v in features.items()}, tf.constant(labels))).repeat()


def _columns():
  return [fc.numeric_column("x"),
          fc.categorical_column_with_vocabulary_list("c", ["a", "b", "c"])]


def test_default_optimizer_slots_and_no_iter_variable(tmp_path):
  classifier = est.LinearClassifier(_columns(), model_dir=str(tmp_path))
  classifier.train(_input_fn(), steps=2)
  names = [name for name, _ in tf.train.list_variables(str(tmp_path))]
  assert "training/Ftrl/linear/linear_model/x/weights/accumulator" in names
  assert "training/Ftrl/linear/linear_model/c/weights/linear" in names
  assert "training/Ftrl/learning_rate_power" in names
  assert "training/Ftrl/iter" not in names  # the global step counts the steps
  assert classifier.get_variable_value("global_step") == 2
  assert classifier.get_variable_value("training/Ftrl/learning_rate") == pytest.approx(0.2)


def test_export_reloads_with_saved_model_load_and_predicts_as_predict(tmp_path):
  columns = _columns()
  classifier = est.LinearClassifier(columns, model_dir=str(tmp_path / "model"), n_classes=3)
  classifier.train(_input_fn(labels=[[0], [2], [1], [2]]), steps=3)
  export_dir = classifier.export_saved_model(
      str(tmp_path / "export"), est.export.build_parsing_serving_input_receiver_fn(
          fc.make_parse_example_spec(columns)))
  loaded = tf.saved_model.load(export_dir.decode())
  assert sorted(loaded.signatures) == ["classification", "predict", "serving_default"]
  example = tf.train.Example(features=tf.train.Features(feature={
      "x": tf.train.Feature(float_list=tf.train.FloatList(value=[2.0])),
      "c": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"b"]))}))
  served = loaded.signatures["serving_default"](
      inputs=tf.constant([example.SerializeToString()]))
  predicted = next(classifier.predict(lambda: tf.data.Dataset.from_tensors(
      {"x": tf.constant([[2.0]]), "c": tf.constant([["b"]])})))
  np.testing.assert_allclose(served["scores"].numpy()[0], predicted["probabilities"], atol=1e-6)
  assert served["classes"].numpy()[0].tolist() == [b"0", b"1", b"2"]
  outputs = loaded.signatures["predict"](examples=tf.constant([example.SerializeToString()]))
  np.testing.assert_allclose(outputs["logits"].numpy()[0], predicted["logits"], atol=1e-6)


def test_regressor_serving_default_is_regression(tmp_path):
  columns = [fc.numeric_column("x")]
  regressor = est.LinearRegressor(columns, model_dir=str(tmp_path / "model"))
  regressor.train(_input_fn({"x": [[1.0], [2.0]]}, [[1.0], [2.0]]), steps=1)
  export_dir = regressor.export_saved_model(
      str(tmp_path / "export"), est.export.build_parsing_serving_input_receiver_fn(
          fc.make_parse_example_spec(columns)))
  loaded = tf.saved_model.load(export_dir.decode())
  assert sorted(loaded.signatures) == ["predict", "regression", "serving_default"]
  assert sorted(loaded.signatures["serving_default"].structured_outputs) == ["outputs"]


@pytest.mark.parametrize("v1", [False, True], ids=["v2", "v1_partitioned"])
def test_warm_start_from_a_trained_model_dir(v1, tmp_path):
  make = est.compat.v1.LinearClassifier if v1 else est.LinearClassifier
  frozen = ((lambda: tf.compat.v1.train.GradientDescentOptimizer(0.0)) if v1 else
            (lambda: tf_keras.optimizers.legacy.SGD(0.0)))
  trained = make(_columns(), model_dir=str(tmp_path / "first"))
  trained.train(_input_fn(), steps=3)
  # A learning rate of 0 keeps the warm-started values through a step.
  second = make(_columns(), model_dir=str(tmp_path / "second"), optimizer=frozen,
                warm_start_from=str(tmp_path / "first"))
  second.train(_input_fn(), steps=1)
  for name in ("linear/linear_model/x/weights", "linear/linear_model/c/weights",
               "linear/linear_model/bias_weights"):
    np.testing.assert_allclose(second.get_variable_value(name),
                               trained.get_variable_value(name), atol=1e-7)
  assert np.any(trained.get_variable_value("linear/linear_model/c/weights") != 0)


def test_missing_feature_names_the_column_and_the_keys_present(tmp_path):
  columns = _columns() + [fc.numeric_column("age")]
  for make in (est.LinearClassifier, est.compat.v1.LinearClassifier):
    with pytest.raises(ValueError) as error:
      make(columns, model_dir=str(tmp_path / make.__name__)).train(_input_fn(), steps=1)
    message = str(error.value)
    assert message.startswith("Feature age is not in features dictionary.")
    assert "'age'" in message and "['c', 'x']" in message


def test_missing_weight_column_fails_with_tf_estimator_text(tmp_path):
  classifier = est.LinearClassifier(_columns(), model_dir=str(tmp_path), weight_column="w")
  with pytest.raises(ValueError, match="Feature w is not in features dictionary."):
    classifier.train(_input_fn(), steps=1)


def test_unknown_optimizer_name_lists_the_valid_ones(tmp_path):
  for make in (est.LinearRegressor, est.compat.v1.LinearRegressor):
    regressor = make([fc.numeric_column("x")], model_dir=str(tmp_path / make.__name__),
                     optimizer="Nesterov")
    with pytest.raises(ValueError, match=r"Unsupported optimizer name: Nesterov\. Supported "
                       r"names are: \('Adagrad', 'Adam', 'Ftrl', 'RMSProp', 'SGD'\)"):
      regressor.train(_input_fn({"x": [[1.0]]}, [[1.0]]), steps=1)


def test_v2_estimator_refuses_v1_only_columns(tmp_path):
  with tf.Graph().as_default():
    shared = tf.compat.v1.feature_column.shared_embedding_columns(
        [fc.categorical_column_with_identity("i", 3)], 2)
  classifier = est.LinearClassifier(shared, model_dir=str(tmp_path))
  with pytest.raises(ValueError, match="Received a feature column from TensorFlow v1"):
    classifier.train(_input_fn({"i": [[0], [1]]}, [[0], [1]]), steps=1)


def test_label_outside_n_classes_fails_at_run_time(tmp_path):
  classifier = est.LinearClassifier(_columns(), model_dir=str(tmp_path), n_classes=3)
  with pytest.raises(tf.errors.InvalidArgumentError, match="[Ll]abels must"):
    classifier.train(_input_fn(labels=[[0], [5], [1], [2]]), steps=1)


def test_build_linear_logits_names_variables_under_the_scope():
  # The contract with DNNLinearCombined: logits plus the trainable variables,
  # under <scope_name>/linear_model/.
  with tf.Graph().as_default():
    features = {"x": tf.constant([[1.0], [2.0]]), "c": tf.constant([["a"], ["b"]])}
    logits, variables = linear.build_linear_logits(
        units=3, feature_columns=_columns(), sparse_combiner="mean", features=features,
        scope_name="linear")
    assert logits.shape.as_list() == [2, 3]
    assert sorted(v.name for v in variables) == [
        "linear/linear_model/bias_weights:0", "linear/linear_model/c/weights:0",
        "linear/linear_model/x/weights:0"]
    assert all(v.trainable for v in variables)


def test_linear_logit_fn_builder_in_a_custom_model_fn(tmp_path):
  def model_fn(features, labels, mode):
    with tf.compat.v1.variable_scope("linear"):
      logits = est.compat.v1.experimental.linear_logit_fn_builder(
          units=1, feature_columns=_columns())(features)
    loss = tf.compat.v1.losses.sigmoid_cross_entropy(labels, logits)
    train_op = tf.compat.v1.train.GradientDescentOptimizer(0.5).minimize(
        loss, global_step=tf.compat.v1.train.get_global_step())
    return est.EstimatorSpec(mode, loss=loss, train_op=train_op, predictions=logits)

  estimator = est.Estimator(model_fn, model_dir=str(tmp_path))
  estimator.train(_input_fn(), steps=2)
  names = dict(tf.train.list_variables(str(tmp_path)))
  assert names["linear/linear_model/x/weights"] == [1, 1]
  assert names["linear/linear_model/c/weights"] == [3, 1]
  assert names["linear/linear_model/bias_weights"] == [1]


def test_an_optimizer_instance_trains_once_and_the_error_says_what_to_pass(tmp_path):
  regressor = est.LinearRegressor([fc.numeric_column("x")], model_dir=str(tmp_path),
                                  optimizer=tf_keras.optimizers.legacy.Ftrl(0.1))
  input_fn = _input_fn({"x": [[1.0], [2.0]]}, [[1.0], [2.0]])
  regressor.train(input_fn, steps=1)
  with pytest.raises(RuntimeError, match="Cannot set `iterations`.*pass a callable"):
    regressor.train(input_fn, steps=1)  # as tf.estimator 2.15, whose text this keeps
