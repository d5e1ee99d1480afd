"""estimator_lite: the tf.estimator API on current TensorFlow.

Replace `tf.estimator` with `estimator_lite` (`import estimator_lite as est`).
"""
from typing import Any

from estimator_lite._util import legacy_keras

# Must run before anything resolves tf.keras / tf.compat.v1.layers.
legacy_keras.select_legacy_keras()

# pylint: disable=g-import-not-at-top,wrong-import-position
from estimator_lite import compat
from estimator_lite import experimental
from estimator_lite import export
from estimator_lite import inputs
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
from estimator_lite.hooks import StopAtTimeHook
from estimator_lite.hooks import SummarySaverHook
from estimator_lite._session.preemption import Preempted
from estimator_lite import canned
from estimator_lite.mode_keys import ModeKeys
from estimator_lite.run_config import RunConfig
from estimator_lite.training import EvalSpec
from estimator_lite.training import TrainSpec
from estimator_lite.training import train_and_evaluate
from estimator_lite.warm_starting import VocabInfo
from estimator_lite.warm_starting import WarmStartSettings

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
  # The canned estimators and heads are imported on first use.
  if name in canned.V2_NAMES:
    value = canned.resolve(canned.V2_NAMES, name)
    globals()[name] = value
    return value
  raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
