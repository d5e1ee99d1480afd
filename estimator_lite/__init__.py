"""estimator_lite: the tf.estimator API on current TensorFlow.

Replace `tf.estimator` with `estimator_lite` (`import estimator_lite as est`).

The names below are imported on first use: `import estimator_lite` alone does
not import TensorFlow, so the command-line tools (`python -m
estimator_lite.launch`, `.run`, `.migrate`) answer `--help` at once and the
migration tool never loads TensorFlow.
"""
from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any, Dict, List

from estimator_lite._util import legacy_keras
from estimator_lite._util import single_log_lines
from estimator_lite._util import stderr_guard

# Must run before anything resolves tf.keras / tf.compat.v1.layers.
legacy_keras.select_legacy_keras()


def _started_as_a_tool() -> bool:
  """Whether this process is `python -m estimator_lite.TOOL` (launch, migrate, run)."""
  argv = getattr(sys, "orig_argv", [])
  return any(flag == "-m" and module.startswith(__name__ + ".")
             for flag, module in zip(argv, argv[1:]))


# Plain runs are quiet (docs/logs.md): each TensorFlow log record
# printed once, and TensorFlow's C++ start-up noise left out of stderr, which
# works best before TensorFlow is imported. The command-line tools decide for
# themselves: `run` filters the program it runs, the launcher its tasks.
single_log_lines.install()
if not _started_as_a_tool():
  stderr_guard.start()

__version__ = "0.1.0"

# Every public name of the package, and the module it lives in: the one list.
# (The TYPE_CHECKING block below repeats it for type checkers;
# tests/test_package_names.py checks the two agree.)
_NAMES: Dict[str, str] = {
    "Estimator": "estimator_lite.estimator",
    "EstimatorSpec": "estimator_lite.estimator_spec",
    "BestExporter": "estimator_lite.export.exporter",
    "Exporter": "estimator_lite.export.exporter",
    "FinalExporter": "estimator_lite.export.exporter",
    "LatestExporter": "estimator_lite.export.exporter",
    "CheckpointSaverHook": "estimator_lite.hooks",
    "CheckpointSaverListener": "estimator_lite.hooks",
    "FeedFnHook": "estimator_lite.hooks",
    "FinalOpsHook": "estimator_lite.hooks",
    "GlobalStepWaiterHook": "estimator_lite.hooks",
    "LoggingTensorHook": "estimator_lite.hooks",
    "NanLossDuringTrainingError": "estimator_lite.hooks",
    "NanTensorHook": "estimator_lite.hooks",
    "ProfilerHook": "estimator_lite.hooks",
    "SecondOrStepTimer": "estimator_lite.hooks",
    "SessionRunArgs": "estimator_lite.hooks",
    "SessionRunContext": "estimator_lite.hooks",
    "SessionRunHook": "estimator_lite.hooks",
    "SessionRunValues": "estimator_lite.hooks",
    "StepCounterHook": "estimator_lite.hooks",
    "StopAtStepHook": "estimator_lite.hooks",
    "StopAtTimeHook": "estimator_lite.hooks",
    "SummarySaverHook": "estimator_lite.hooks",
    "Preempted": "estimator_lite._session.preemption",
    "ModeKeys": "estimator_lite.mode_keys",
    "RunConfig": "estimator_lite.run_config",
    "EvalSpec": "estimator_lite.training",
    "TrainSpec": "estimator_lite.training",
    "train_and_evaluate": "estimator_lite.training",
    "VocabInfo": "estimator_lite.warm_starting",
    "WarmStartSettings": "estimator_lite.warm_starting",
}
# Subpackages reachable as attributes (`est.export.ServingInputReceiver`).
_SUBMODULES = ("canned", "compat", "experimental", "export", "inputs", "keras", "tpu")

if TYPE_CHECKING:
  # pylint: disable=g-import-not-at-top,unused-import
  from estimator_lite import canned
  from estimator_lite import compat
  from estimator_lite import experimental
  from estimator_lite import export
  from estimator_lite import inputs
  from estimator_lite import keras
  from estimator_lite import tpu
  from estimator_lite._session.preemption import Preempted
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
  from estimator_lite.mode_keys import ModeKeys
  from estimator_lite.run_config import RunConfig
  from estimator_lite.training import EvalSpec
  from estimator_lite.training import TrainSpec
  from estimator_lite.training import train_and_evaluate
  from estimator_lite.warm_starting import VocabInfo
  from estimator_lite.warm_starting import WarmStartSettings


def install() -> None:
  """Makes an unmodified tf.estimator program use estimator_lite, in this process.

  For a notebook or any running interpreter (`python -m estimator_lite.run
  prog.py` does the same for a whole program): afterwards `tf.estimator`,
  `tf.compat.v1.estimator`, `tf.compat.v2.estimator`, the imports
  `from tensorflow.estimator import ...`, `import tensorflow_estimator` and
  `tf.keras.estimator.model_to_estimator` resolve to estimator_lite. Works
  whether or not TensorFlow was imported before (it imports it); calling it
  again does nothing. Logs one INFO line (TensorFlow's logger) saying what it
  installed.

  Raises:
    ImportError: afterwards, from importing tensorflow_estimator's private
      modules (`tensorflow_estimator.python.estimator.estimator`, ...), which
      have no estimator_lite counterpart; the message says what to import.
  """
  # pylint: disable=g-import-not-at-top
  from estimator_lite._porting import install as hooks
  hooks.install()


def __getattr__(name: str) -> Any:
  # PEP 562: called for names not yet in the module's namespace; each is
  # imported once, then cached as a plain attribute.
  if name in _NAMES:
    value = getattr(importlib.import_module(_NAMES[name]), name)
  elif name in _SUBMODULES:
    value = importlib.import_module(f"{__name__}.{name}")
  else:
    canned = importlib.import_module(f"{__name__}.canned")
    if name not in canned.V2_NAMES:
      not_provided = importlib.import_module(f"{__name__}._util.not_provided")
      raise not_provided.not_provided_error(
          __name__, name, canned.removed_estimators("tf.estimator"))
    value = canned.resolve(canned.V2_NAMES, name)
  globals()[name] = value
  return value


def __dir__() -> List[str]:
  return sorted(set(globals()) | set(_NAMES) | set(_SUBMODULES))
