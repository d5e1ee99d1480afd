"""estimator_lite.compat.v1 offers what tf.compat.v1.estimator offered (tf.estimator 2.15)."""
import json

import pytest

import estimator_lite as est

# dir(tf.compat.v1.estimator) in tensorflow-estimator 2.15, split into what
# the plain Estimator API, the canned parts, and TPU (estimator_lite.tpu: use_tpu=False).
_V1_PROVIDED = [
    "BestExporter", "CheckpointSaverHook", "CheckpointSaverListener", "Estimator",
    "EstimatorSpec", "EvalSpec", "Exporter", "FeedFnHook", "FinalExporter", "FinalOpsHook",
    "GlobalStepWaiterHook", "LatestExporter", "LoggingTensorHook", "ModeKeys",
    "NanLossDuringTrainingError", "NanTensorHook", "ProfilerHook", "RunConfig",
    "SecondOrStepTimer", "SessionRunArgs", "SessionRunContext", "SessionRunHook",
    "SessionRunValues", "StepCounterHook", "StopAtStepHook", "SummarySaverHook",
    "TrainSpec", "VocabInfo", "WarmStartSettings", "experimental", "export", "inputs",
    "train_and_evaluate",
]
# The canned estimators (v1 classes under compat.v1, v2 at the top level) and
# the names shared by both namespaces (heads, add_metrics, parsing specs).
_CANNED_ESTIMATORS = [
    kind + task for kind in ("Baseline", "DNN", "DNNLinearCombined", "Linear")
    for task in ("Classifier", "Estimator", "Regressor")]
_CANNED_SHARED = [
    "BinaryClassHead", "Head", "LogisticRegressionHead", "MultiClassHead", "MultiHead",
    "MultiLabelHead", "PoissonRegressionHead", "RegressionHead", "add_metrics",
    "classifier_parse_example_spec", "regressor_parse_example_spec",
]
# tf.compat.v1.estimator.{inputs, export, experimental} in 2.15, less canned parts.
_V1_INPUTS = ["numpy_input_fn", "pandas_input_fn"]
_V1_EXPORT = [
    "ClassificationOutput", "EvalOutput", "ExportOutput", "PredictOutput", "RegressionOutput",
    "ServingInputReceiver", "TensorServingInputReceiver",
    "build_parsing_serving_input_receiver_fn", "build_raw_serving_input_receiver_fn",
]
_V1_EXPERIMENTAL = [
    "InMemoryEvaluatorHook", "build_raw_supervised_input_receiver_fn", "call_logit_fn",
    "make_early_stopping_hook", "make_stop_at_checkpoint_step_hook",
    "stop_if_higher_hook", "stop_if_lower_hook", "stop_if_no_decrease_hook",
    "stop_if_no_increase_hook", "KMeans", "LinearSDCA", "RNNClassifier", "RNNEstimator",
]
# tf.estimator.experimental / tf.compat.v1.estimator.experimental names that
# estimator_lite leaves out (removed before 2.15), with the hint its error gives.
_EXPERIMENTAL_NOT_PROVIDED = {"SavedModelEstimator": "tf.saved_model.load"}


def test_v1_module_has_tf_compat_v1_estimator_names_as_the_same_objects():
  v1 = est.compat.v1
  for name in _V1_PROVIDED:
    assert getattr(v1, name) is getattr(est, name), name
  assert set(_V1_PROVIDED) <= set(dir(v1))
  # `tf.compat.v1.estimator.X` -> `estimator_lite.compat.v1.estimator.X`.
  assert v1.estimator is v1
  # The v1 Estimator keeps the v1 method name for exports.
  assert callable(v1.Estimator.export_savedmodel)
  for module, names in ((v1.inputs, _V1_INPUTS), (v1.export, _V1_EXPORT),
                        (v1.experimental, _V1_EXPERIMENTAL)):
    for name in names:
      assert callable(getattr(module, name)), (module.__name__, name)
  # The v1 canned estimators are their own classes (tf.compat.v1.estimator's
  # defaults); heads and helpers are the top level's objects.
  for name in _CANNED_ESTIMATORS:
    assert getattr(v1, name) is not getattr(est, name), name
    assert issubclass(getattr(v1, name), est.Estimator), name
    assert name in dir(v1)
  for name in _CANNED_SHARED:
    assert getattr(v1, name) is getattr(est, name), name
  for name in ("dnn_logit_fn_builder", "linear_logit_fn_builder"):
    assert callable(getattr(v1.experimental, name)), name
  import estimator_lite.tpu  # pylint: disable=g-import-not-at-top
  assert v1.tpu is estimator_lite.tpu
  assert "tpu" in dir(v1)
  with pytest.raises(AttributeError, match="has no attribute 'NoSuchThing'"):
    v1.NoSuchThing  # pylint: disable=pointless-statement


def test_top_level_offers_tf_estimator_names():
  # tf.estimator's (v2) names, less the canned ones; plus `inputs`, which
  # tf.estimator 2.x had only under tf.compat.v1.estimator.
  for name in _V1_PROVIDED:
    assert hasattr(est, name), name
  for name in _V1_EXPERIMENTAL:
    assert hasattr(est.experimental, name), name


def test_top_level_offers_the_canned_estimators_and_heads():
  for name in _CANNED_ESTIMATORS:
    assert issubclass(getattr(est, name), est.Estimator), name
  for name in _CANNED_SHARED:
    assert callable(getattr(est, name)), name
  with pytest.raises(AttributeError, match="has no attribute 'NoSuchThing'"):
    est.NoSuchThing  # pylint: disable=pointless-statement
  # Submodules still import through the package's __getattr__.
  from estimator_lite import launch  # pylint: disable=import-outside-toplevel
  assert callable(launch.main)


def test_experimental_names_left_out_say_what_to_use_instead():
  for module in (est.experimental, est.compat.v1.experimental,
                 est.compat.v1.estimator.experimental):
    for name, hint in _EXPERIMENTAL_NOT_PROVIDED.items():
      # Code probing for the name with hasattr still sees it missing.
      assert not hasattr(module, name), name
      with pytest.raises(AttributeError) as raised:
        getattr(module, name)
      message = str(raised.value)
      assert f"has no '{name}'" in message and "not part of estimator_lite" in message
      assert hint in message, message
    with pytest.raises(AttributeError, match="has no attribute 'NoSuchThing'"):
      module.NoSuchThing  # pylint: disable=pointless-statement


def test_v1_imports_first_in_a_fresh_program(run_python):
  completed = run_python(
      "import json\n"
      "from estimator_lite.compat.v1 import Estimator, inputs, experimental\n"
      "import estimator_lite.compat.v1 as est\n"
      "import tensorflow as tf\n"
      "print(json.dumps({'same': est.Estimator is Estimator,\n"
      "                  'layers': hasattr(tf.compat.v1.layers, 'conv2d'),\n"
      "                  'np': inputs.numpy_input_fn.__module__,\n"
      "                  'hook': experimental.stop_if_no_decrease_hook.__name__}))\n",
      timeout=120)
  assert completed.returncode == 0, completed.stderr[-4000:]
  result = json.loads(completed.stdout.strip().splitlines()[-1])
  assert result == {"same": True, "layers": True, "np": "estimator_lite.inputs.numpy_io",
                    "hook": "stop_if_no_decrease_hook"}
