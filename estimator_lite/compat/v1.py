"""estimator_lite.compat.v1: what `tf.compat.v1.estimator` offered, for TF1-style programs.

Code that did `est = tf.compat.v1.estimator` (or ran through `tf_upgrade_v2`)
switches with `est = estimator_lite.compat.v1`; `estimator_lite.compat.v1.estimator`
is this module again, so `tf.compat.v1.estimator.X` becomes
`estimator_lite.compat.v1.estimator.X` by replacing the leading `tf`.

The names are the top-level package's objects (the same classes: a v1
`Estimator` is an `estimator_lite.Estimator`, which keeps the v1 method name
`export_savedmodel`). The v1-only parts are `inputs`
(numpy_input_fn, pandas_input_fn) and the v1 `experimental` names; `tpu` is
estimator_lite.tpu (TPUEstimator with use_tpu=False, on CPU and GPU).
"""
from __future__ import annotations

import importlib
import sys
from typing import Any, List

# pylint: disable=unused-import
# tf.compat.v1.estimator's names that estimator_lite provides: the very objects
# of the top-level package.
from estimator_lite import experimental
from estimator_lite import export
from estimator_lite import inputs
from estimator_lite import canned
from estimator_lite._porting import names
from estimator_lite._util import module_alias
from estimator_lite._util.not_provided import not_provided_error
from estimator_lite._util.not_provided import NotProvided
from estimator_lite.estimator import Estimator
from estimator_lite.estimator_spec import EstimatorSpec
from estimator_lite.export.exporter import BestExporter
from estimator_lite.export.exporter import Exporter
from estimator_lite.export.exporter import FinalExporter
from estimator_lite.export.exporter import LatestExporter
from estimator_lite.hooks import CheckpointSaverHook
from estimator_lite.hooks import CheckpointSaverListener
from estimator_lite.hooks import FeedFnHook
from estimator_lite.hooks import FinalOpsHook
from estimator_lite.hooks import GlobalStepWaiterHook
from estimator_lite.hooks import LoggingTensorHook
from estimator_lite.hooks import NanLossDuringTrainingError
from estimator_lite.hooks import NanTensorHook
from estimator_lite.hooks import ProfilerHook
from estimator_lite.hooks import SecondOrStepTimer
from estimator_lite.hooks import SessionRunArgs
from estimator_lite.hooks import SessionRunContext
from estimator_lite.hooks import SessionRunHook
from estimator_lite.hooks import SessionRunValues
from estimator_lite.hooks import StepCounterHook
from estimator_lite.hooks import StopAtStepHook
from estimator_lite.hooks import SummarySaverHook
from estimator_lite.mode_keys import ModeKeys
from estimator_lite.run_config import RunConfig
from estimator_lite.training import EvalSpec
from estimator_lite.training import TrainSpec
from estimator_lite.training import train_and_evaluate
from estimator_lite.warm_starting import VocabInfo
from estimator_lite.warm_starting import WarmStartSettings
# pylint: enable=unused-import

_PROVIDED = (
    "BestExporter", "CheckpointSaverHook", "CheckpointSaverListener", "Estimator",
    "EstimatorSpec", "EvalSpec", "Exporter", "FeedFnHook", "FinalExporter",
    "FinalOpsHook", "GlobalStepWaiterHook", "LatestExporter", "LoggingTensorHook",
    "ModeKeys", "NanLossDuringTrainingError", "NanTensorHook", "ProfilerHook",
    "RunConfig", "SecondOrStepTimer", "SessionRunArgs", "SessionRunContext",
    "SessionRunHook", "SessionRunValues", "StepCounterHook", "StopAtStepHook",
    "SummarySaverHook", "TrainSpec", "VocabInfo", "WarmStartSettings",
    "train_and_evaluate", "export", "experimental", "inputs", "tpu",
)

# tf.compat.v1.estimator names that estimator_lite leaves out (those removed
# before 2.15); asking for one says what to use instead of a bare AttributeError.
_NOT_PROVIDED: NotProvided = canned.removed_estimators("tf.compat.v1.estimator")


__all__ = sorted(_PROVIDED + ("estimator",) + tuple(canned.V1_NAMES))

# An empty search path makes this module a package to the import system, so
# that `import estimator_lite.compat.v1.export` (and `.inputs`,
# `.experimental`, `.tpu`, `.estimator`), and the tf.estimator paths
# install() aliases to this module, ask the finders on sys.meta_path for the
# child instead of failing with "is not a package"; this one serves the
# children as the package's modules that stand in for them.
__path__: List[str] = []
module_alias.register(names.compat_v1_child)


def __getattr__(name: str) -> Any:
  if name == "estimator":
    return sys.modules[__name__]
  if name == "tpu":
    # TPUEstimator on CPU/GPU, imported on first use.
    value = importlib.import_module("estimator_lite.tpu")
    globals()[name] = value
    return value
  # The canned estimators (their v1 classes) and heads, imported on first use.
  if name in canned.V1_NAMES:
    value = canned.resolve(canned.V1_NAMES, name)
    globals()[name] = value
    return value
  raise not_provided_error(__name__, name, _NOT_PROVIDED)


def __dir__() -> List[str]:
  return __all__
