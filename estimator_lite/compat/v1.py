"""estimator_lite.compat.v1: what `tf.compat.v1.estimator` offered, for TF1-style programs.

Code that did `est = tf.compat.v1.estimator` (or ran through `tf_upgrade_v2`)
switches with `est = estimator_lite.compat.v1`; `estimator_lite.compat.v1.estimator`
is this module again, so `tf.compat.v1.estimator.X` becomes
`estimator_lite.compat.v1.estimator.X` by replacing the leading `tf`.

The names resolve lazily to the top-level package's objects (the same
classes: a v1 `Estimator` is an `estimator_lite.Estimator`, which keeps the v1
method name `export_savedmodel`). The v1-only parts are `inputs`
(numpy_input_fn, pandas_input_fn) and the v1 `experimental` names.
"""
from __future__ import annotations

import importlib
import sys
from typing import Any, List

from estimator_lite._util.not_provided import not_provided_error

# tf.compat.v1.estimator's names that estimator_lite provides, and where.
_TOP_LEVEL = (
    "BestExporter", "CheckpointSaverHook", "CheckpointSaverListener", "Estimator",
    "EstimatorSpec", "EvalSpec", "Exporter", "FeedFnHook", "FinalExporter",
    "FinalOpsHook", "GlobalStepWaiterHook", "LatestExporter", "LoggingTensorHook",
    "ModeKeys", "NanLossDuringTrainingError", "NanTensorHook", "ProfilerHook",
    "RunConfig", "SecondOrStepTimer", "SessionRunArgs", "SessionRunContext",
    "SessionRunHook", "SessionRunValues", "StepCounterHook", "StopAtStepHook",
    "SummarySaverHook", "TrainSpec", "VocabInfo", "WarmStartSettings",
    "train_and_evaluate",
)
_SUBMODULES = ("export", "experimental", "inputs")

# tf.compat.v1.estimator's other names: canned estimators, heads and TPU
# support, which are not part of estimator_lite's core. Asking for one of them
# says so instead of a bare AttributeError (unless the top-level package has
# gained it, in which case it is returned).
_NOT_PROVIDED = dict.fromkeys(
    ("BaselineClassifier", "BaselineEstimator", "BaselineRegressor", "BinaryClassHead",
     "DNNClassifier", "DNNEstimator", "DNNLinearCombinedClassifier",
     "DNNLinearCombinedEstimator", "DNNLinearCombinedRegressor", "DNNRegressor", "Head",
     "LinearClassifier", "LinearEstimator", "LinearRegressor", "LogisticRegressionHead",
     "MultiClassHead", "MultiHead", "MultiLabelHead", "PoissonRegressionHead",
     "RegressionHead", "add_metrics", "classifier_parse_example_spec",
     "regressor_parse_example_spec", "tpu"),
    ("tf.compat.v1.estimator", "canned estimators, heads, TPU",
     "Write a model_fn for estimator_lite.Estimator instead."))


__all__ = sorted(_TOP_LEVEL + _SUBMODULES + ("estimator",))


def __getattr__(name: str) -> Any:
  if name == "estimator":
    return sys.modules[__name__]
  top = importlib.import_module("estimator_lite")
  if name in _SUBMODULES:
    return importlib.import_module("estimator_lite." + name)
  if name in _TOP_LEVEL or (name in _NOT_PROVIDED and hasattr(top, name)):
    return getattr(top, name)
  raise not_provided_error(__name__, name, _NOT_PROVIDED)


def __dir__() -> List[str]:
  return __all__
