"""DNNLinearCombined{Classifier,Regressor,Estimator} and compat.v1 variants against tf.estimator 2.15.

As in test_dnn.py: model_dirs tf.estimator 2.15 trained
(tests/data/canned/dnn_tf215/, from tests/reference/make_dnn_fixture.py)
evaluate and predict here with 2.15's numbers and resume training with the
same checkpoint variables; fresh models get 2.15's variable names (recorded
from 2.15 below), its constructor signatures and its error texts.
"""
import inspect
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
TOL = 1e-4


@pytest.fixture(scope="module")
def expected():
  with open(os.path.join(FIXTURE_DIR, "expected.json")) as f:
    return json.load(f)["cases"]


def _close(actual, wanted, where=""):
  if isinstance(wanted, dict):
    assert sorted(actual) == sorted(wanted), where
    for key in wanted:
      _close(actual[key], wanted[key], f"{where}/{key}")
  elif isinstance(wanted, list):
    assert len(actual) == len(wanted), where
    for index, (a, w) in enumerate(zip(actual, wanted)):
      _close(a, w, f"{where}[{index}]")
  elif isinstance(wanted, float):
    assert abs(actual - wanted) <= TOL * max(1.0, abs(wanted)), (where, actual, wanted)
  else:
    assert actual == wanted, (where, actual, wanted)


def _variables(model_dir):
  return {name: shape for name, shape in tf.train.list_variables(str(model_dir))}


@pytest.mark.parametrize("name", ["dnn_linear_combined_classifier",
                                  "dnn_linear_combined_classifier_v1"])
def test_tf215_model_dir_evaluates_predicts_and_resumes(name, expected, tmp_path):
  """2.15's model_dir: its evaluate/predict numbers, training resumes on its variables, its exports."""
  wanted = expected[name]
  model_dir = str(tmp_path / name)
  shutil.copytree(os.path.join(FIXTURE_DIR, name), model_dir)
  estimator = fixture.make_estimator(name, est, est.compat.v1, fc, model_dir)
  _close(fixture.to_json(estimator.evaluate(fixture.input_fn(tf, name))), wanted["evaluate"])
  _close(fixture.to_json(list(estimator.predict(fixture.input_fn(tf, name, with_labels=False)))),
         wanted["predict"])
  estimator.train(fixture.input_fn(tf, name, repeat=True), steps=2)
  assert estimator.get_variable_value("global_step") == fixture.TRAIN_STEPS + 2
  assert _variables(model_dir) == wanted["variables"]
  if name.endswith("_v1"):
    assert "linear/linear_model/c/weights/Ftrl_1" in wanted["variables"]
  else:
    # The linear Ftrl counts its own steps; the DNN's Adagrad uses the global step.
    assert estimator.get_variable_value("training/Ftrl/iter") == fixture.TRAIN_STEPS + 2
    assert "training/Adagrad/iter" not in wanted["variables"]

  export_dir = estimator.export_saved_model(
      str(tmp_path / "export"), fixture.serving_input_receiver_fn(tf, est, fc, name))
  loaded = tf.saved_model.load(export_dir)
  # 2.15's: a binary classifier also exports "regression" (the logistic score).
  assert sorted(loaded.signatures.keys()) == wanted["signatures"]


def _input_fn(labels):
  def input_fn():
    features = {"x": tf.constant([[1.0], [2.0], [3.0], [4.0]]),
                "c": tf.constant([["a", "b"], ["b", ""], ["a", "a"], ["c", ""]]),
                "w": tf.constant([[1.0], [2.0], [1.0], [0.5]])}
    return tf.data.Dataset.from_tensors((features, tf.constant(labels))).repeat()
  return input_fn


_X = fc.numeric_column("x")
_C = fc.categorical_column_with_vocabulary_list("c", ["a", "b", "c"])
_EMB = fc.embedding_column(_C, 2)
_FTRL = {"training/Ftrl/beta", "training/Ftrl/decay", "training/Ftrl/l1_regularization_strength",
         "training/Ftrl/l2_regularization_strength", "training/Ftrl/learning_rate",
         "training/Ftrl/learning_rate_power"}
_LINEAR = {"linear/linear_model/bias_weights", "linear/linear_model/x/weights"}
_DNN = {"dnn/hiddenlayer_0/bias", "dnn/hiddenlayer_0/kernel", "dnn/logits/bias",
        "dnn/logits/kernel"}
_ADAGRAD = {"training/Adagrad/decay", "training/Adagrad/learning_rate"} | {
    f"training/Adagrad/{v}/accumulator" for v in _DNN}


def _slots(variables, *names):
  return {f"training/Ftrl/{v}/{slot}" for v in variables for slot in names}


@pytest.mark.parametrize("kwargs, names", [
    # tf.estimator 2.15's checkpoints: with only a linear part, its Ftrl has the
    # global step as `iterations` (no iter); with both parts the DNN's has.
    ({"linear_feature_columns": [_X]},
     {"global_step"} | _LINEAR | _FTRL | _slots(_LINEAR, "accumulator", "linear")),
    ({"dnn_feature_columns": [_X], "dnn_hidden_units": [3]},
     {"global_step"} | _DNN | _ADAGRAD),
    ({"linear_feature_columns": [_X], "dnn_feature_columns": [_X], "dnn_hidden_units": [3]},
     {"global_step", "training/Ftrl/iter"} | _DNN | _ADAGRAD | _LINEAR | _FTRL
     | _slots(_LINEAR, "accumulator", "linear")),
])
def test_v2_checkpoint_names_per_part(kwargs, names, tmp_path):
  regressor = est.DNNLinearCombinedRegressor(model_dir=str(tmp_path), **kwargs)
  regressor.train(_input_fn([[1.0], [0.0], [2.0], [1.0]]), steps=2)
  assert set(_variables(tmp_path)) == names
  assert regressor.get_variable_value("global_step") == 2
  if "linear_feature_columns" in kwargs:
    # Ftrl named by its string: min(0.005, 1 / sqrt(number of linear columns)).
    assert regressor.get_variable_value("training/Ftrl/learning_rate") == pytest.approx(0.005)
  if "dnn_feature_columns" in kwargs:
    assert regressor.get_variable_value("training/Adagrad/learning_rate") == pytest.approx(0.001)


def test_v1_adam_both_parts_names_and_partitioner(tmp_path):
  """v1: slots beside their variables, Adam's powers under head/ (2.15's names)."""
  classifier = est.compat.v1.DNNLinearCombinedClassifier(
      model_dir=str(tmp_path), linear_feature_columns=[_X], dnn_feature_columns=[_X],
      dnn_hidden_units=[2], dnn_optimizer="Adam", linear_optimizer="Adam", n_classes=3,
      input_layer_partitioner=tf.compat.v1.fixed_size_partitioner(1))
  classifier.train(_input_fn([[0], [1], [2], [1]]), steps=2)
  variables = set(_variables(tmp_path))
  for name in ("head/beta1_power", "head/beta1_power_1", "head/beta2_power",
               "head/beta2_power_1", "dnn/hiddenlayer_0/kernel/Adam_1",
               "linear/linear_model/x/weights/Adam", "linear/linear_model/bias_weights/Adam_1"):
    assert name in variables, name
  assert classifier.get_variable_value("global_step") == 2


def test_regressor_and_estimator_arguments(tmp_path):
  """sparse combiner, batch norm, dropout, weights, optimizer instances/callables, a head."""
  labels = [[1.0], [0.0], [2.0], [1.0]]
  regressor = est.DNNLinearCombinedRegressor(
      model_dir=str(tmp_path / "r"), linear_feature_columns=[_C, _X],
      linear_optimizer=lambda: tf_keras.optimizers.legacy.SGD(0.1),
      dnn_feature_columns=[_EMB, _X], dnn_optimizer=tf_keras.optimizers.legacy.Adam(0.01),
      dnn_hidden_units=[4, 2], dnn_activation_fn=tf.nn.elu, dnn_dropout=0.3, weight_column="w",
      batch_norm=True, linear_sparse_combiner="mean",
      loss_reduction=tf_keras.losses.Reduction.SUM, config=est.RunConfig(tf_random_seed=1))
  regressor.train(_input_fn(labels), steps=3)
  variables = _variables(tmp_path / "r")
  assert "dnn/hiddenlayer_1/batchnorm_1/moving_variance" in variables
  assert "training/Adam/dnn/hiddenlayer_0/kernel/m" in variables
  assert "training/SGD/iter" in variables  # the linear part's own counter, as in 2.15
  metrics = regressor.evaluate(_input_fn(labels), steps=1)
  assert metrics["global_step"] == 3 and np.isfinite(metrics["average_loss"])
  export_dir = regressor.export_saved_model(
      str(tmp_path / "export"), est.export.build_parsing_serving_input_receiver_fn(
          fc.make_parse_example_spec([_C, _X])))
  assert sorted(tf.saved_model.load(export_dir).signatures.keys()) == [
      "predict", "regression", "serving_default"]

  estimator = est.DNNLinearCombinedEstimator(
      est.MultiLabelHead(n_classes=2), model_dir=str(tmp_path / "e"),
      linear_feature_columns=[_C], dnn_feature_columns=[_EMB], dnn_hidden_units=[2])
  estimator.train(_input_fn([[1, 0], [0, 1], [1, 1], [0, 0]]), steps=1)
  prediction = next(estimator.predict(lambda: _input_fn(labels)().map(lambda f, l: f)))
  assert prediction["probabilities"].shape == (2,)

  v1 = est.compat.v1.DNNLinearCombinedEstimator(
      est.RegressionHead(), model_dir=str(tmp_path / "v1"), linear_feature_columns=[_X],
      dnn_feature_columns=[_X], dnn_hidden_units=[2], linear_sparse_combiner="sqrtn")
  v1.train(_input_fn(labels), steps=1)
  assert "linear/linear_model/x/weights/Ftrl_1" in _variables(tmp_path / "v1")


def test_a_column_in_both_parts_trains_as_in_215(tmp_path):
  """2.15 did not forbid a column in both lists: it feeds both parts."""
  classifier = est.DNNLinearCombinedClassifier(
      model_dir=str(tmp_path), linear_feature_columns=[_X], dnn_feature_columns=[_X],
      dnn_hidden_units=[2], label_vocabulary=["n", "y"])
  classifier.train(_input_fn([["n"], ["y"], ["y"], ["n"]]), steps=1)
  variables = _variables(tmp_path)
  assert variables["linear/linear_model/x/weights"] == [1, 1]
  assert variables["dnn/hiddenlayer_0/kernel"] == [1, 2]


_BOTH_EMPTY = ("Either linear_feature_columns or dnn_feature_columns must be defined. Give "
               "linear_feature_columns")


@pytest.mark.parametrize("make", [
    lambda: est.DNNLinearCombinedClassifier(),
    lambda: est.DNNLinearCombinedRegressor(linear_feature_columns=[], dnn_feature_columns=[]),
    lambda: est.DNNLinearCombinedEstimator(est.RegressionHead()),
    lambda: est.compat.v1.DNNLinearCombinedClassifier(),
    lambda: est.compat.v1.DNNLinearCombinedRegressor(dnn_hidden_units=[2]),
    lambda: est.compat.v1.DNNLinearCombinedEstimator(est.RegressionHead()),
])
def test_no_feature_columns_at_construction(make):
  with pytest.raises(ValueError, match=_BOTH_EMPTY):
    make()


@pytest.mark.parametrize("make, text", [
    (lambda d: est.DNNLinearCombinedClassifier(d, dnn_feature_columns=[_X]),
     "dnn_hidden_units must be defined when dnn_feature_columns is specified."),
    (lambda d: est.compat.v1.DNNLinearCombinedClassifier(d, dnn_feature_columns=[_X]),
     "dnn_hidden_units must be defined when dnn_feature_columns is specified."),
    (lambda d: est.compat.v1.DNNLinearCombinedClassifier(
        d, linear_feature_columns=[_X], linear_optimizer=tf.compat.v1.train.SyncReplicasOptimizer(
            tf.compat.v1.train.GradientDescentOptimizer(0.1), 1)),
     "SyncReplicasOptimizer does not support multi optimizers case. Therefore, it is not "
     "supported in DNNLinearCombined model."),
    (lambda d: est.DNNLinearCombinedClassifier(
        d, linear_feature_columns=[_X], dnn_feature_columns=[fc.numeric_column("z")],
        dnn_hidden_units=[2]),
     r"Feature z is not in features dictionary\. The key 'z' \(read by feature column 'z'\) "
     r"is not among the features the input_fn returned: \['c', 'w', 'x'\]"),
    (lambda d: est.DNNLinearCombinedClassifier(
        d, dnn_feature_columns=_v1_shared(), dnn_hidden_units=[2]),
     "Received a feature column from TensorFlow v1, but this is a TensorFlow v2 Estimator."),
])
def test_bad_arguments_at_train_raise_215_texts(make, text, tmp_path):
  with pytest.raises(ValueError, match=text):
    make(str(tmp_path)).train(_input_fn([[0], [1], [1], [0]]), steps=1)


def _v1_shared():
  with tf.Graph().as_default():
    return tf.compat.v1.feature_column.shared_embedding_columns(
        [tf.compat.v1.feature_column.categorical_column_with_vocabulary_list("c", ["a", "b"])], 2)


# tf.estimator 2.15's constructor signatures (names, order, defaults), recorded from it.
_SIGNATURES = {
    "DNNLinearCombinedClassifier":
        "model_dir=None linear_feature_columns=None linear_optimizer='Ftrl' "
        "dnn_feature_columns=None dnn_optimizer='Adagrad' dnn_hidden_units=None "
        "dnn_activation_fn=relu dnn_dropout=None n_classes=2 weight_column=None "
        "label_vocabulary=None config=None warm_start_from=None "
        "loss_reduction='sum_over_batch_size' batch_norm=False linear_sparse_combiner='sum'",
    "DNNLinearCombinedRegressor":
        "model_dir=None linear_feature_columns=None linear_optimizer='Ftrl' "
        "dnn_feature_columns=None dnn_optimizer='Adagrad' dnn_hidden_units=None "
        "dnn_activation_fn=relu dnn_dropout=None label_dimension=1 weight_column=None "
        "config=None warm_start_from=None loss_reduction='sum_over_batch_size' "
        "batch_norm=False linear_sparse_combiner='sum'",
    "DNNLinearCombinedEstimator":
        "head model_dir=None linear_feature_columns=None linear_optimizer='Ftrl' "
        "dnn_feature_columns=None dnn_optimizer='Adagrad' dnn_hidden_units=None "
        "dnn_activation_fn=relu dnn_dropout=None config=None batch_norm=False "
        "linear_sparse_combiner='sum'",
    "v1.DNNLinearCombinedClassifier":
        "model_dir=None linear_feature_columns=None linear_optimizer='Ftrl' "
        "dnn_feature_columns=None dnn_optimizer='Adagrad' dnn_hidden_units=None "
        "dnn_activation_fn=relu dnn_dropout=None n_classes=2 weight_column=None "
        "label_vocabulary=None input_layer_partitioner=None config=None warm_start_from=None "
        "loss_reduction='weighted_sum' batch_norm=False linear_sparse_combiner='sum'",
    "v1.DNNLinearCombinedRegressor":
        "model_dir=None linear_feature_columns=None linear_optimizer='Ftrl' "
        "dnn_feature_columns=None dnn_optimizer='Adagrad' dnn_hidden_units=None "
        "dnn_activation_fn=relu dnn_dropout=None label_dimension=1 weight_column=None "
        "input_layer_partitioner=None config=None warm_start_from=None "
        "loss_reduction='weighted_sum' batch_norm=False linear_sparse_combiner='sum'",
    "v1.DNNLinearCombinedEstimator":
        "head model_dir=None linear_feature_columns=None linear_optimizer='Ftrl' "
        "dnn_feature_columns=None dnn_optimizer='Adagrad' dnn_hidden_units=None "
        "dnn_activation_fn=relu dnn_dropout=None input_layer_partitioner=None config=None "
        "batch_norm=False linear_sparse_combiner='sum'",
    "DNNClassifier":
        "hidden_units feature_columns model_dir=None n_classes=2 weight_column=None "
        "label_vocabulary=None optimizer='Adagrad' activation_fn=relu dropout=None "
        "config=None warm_start_from=None loss_reduction='sum_over_batch_size' "
        "batch_norm=False",
    "DNNRegressor":
        "hidden_units feature_columns model_dir=None label_dimension=1 weight_column=None "
        "optimizer='Adagrad' activation_fn=relu dropout=None config=None "
        "warm_start_from=None loss_reduction='sum_over_batch_size' batch_norm=False",
    "DNNEstimator":
        "head hidden_units feature_columns model_dir=None optimizer='Adagrad' "
        "activation_fn=relu dropout=None config=None warm_start_from=None batch_norm=False",
    "v1.DNNClassifier":
        "hidden_units feature_columns model_dir=None n_classes=2 weight_column=None "
        "label_vocabulary=None optimizer='Adagrad' activation_fn=relu dropout=None "
        "input_layer_partitioner=None config=None warm_start_from=None "
        "loss_reduction='weighted_sum' batch_norm=False",
    "v1.DNNRegressor":
        "hidden_units feature_columns model_dir=None label_dimension=1 weight_column=None "
        "optimizer='Adagrad' activation_fn=relu dropout=None input_layer_partitioner=None "
        "config=None warm_start_from=None loss_reduction='weighted_sum' batch_norm=False",
    "v1.DNNEstimator":
        "head hidden_units feature_columns model_dir=None optimizer='Adagrad' "
        "activation_fn=relu dropout=None input_layer_partitioner=None config=None "
        "warm_start_from=None batch_norm=False",
}


@pytest.mark.parametrize("name", sorted(_SIGNATURES))
def test_constructor_signatures_are_215s(name):
  namespace = est.compat.v1 if name.startswith("v1.") else est
  parameters = list(inspect.signature(
      getattr(namespace, name.split(".")[-1]).__init__).parameters.values())[1:]

  def shown(parameter):
    if parameter.default is inspect.Parameter.empty:
      return parameter.name
    default = parameter.default
    default = getattr(default, "__name__", None) if callable(default) else repr(default)
    return f"{parameter.name}={default}"

  assert " ".join(shown(p) for p in parameters) == _SIGNATURES[name]
