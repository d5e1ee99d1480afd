"""estimator_lite.experimental: early stopping, in-memory evaluation, export inputs, call_logit_fn.

Also `tf.compat.v1.estimator.experimental` (estimator_lite.compat.v1.experimental
is this module), with the canned logit builders `dnn_logit_fn_builder` and
`linear_logit_fn_builder`. LinearSDCA, RNNClassifier, RNNEstimator and KMeans
are not provided: asking for one raises an AttributeError saying what to use
instead.
"""
from __future__ import annotations

from typing import Any

from estimator_lite import canned
from estimator_lite._util.not_provided import not_provided_error
from estimator_lite.experimental.early_stopping import make_early_stopping_hook
from estimator_lite.experimental.early_stopping import stop_if_higher_hook
from estimator_lite.experimental.early_stopping import stop_if_lower_hook
from estimator_lite.experimental.early_stopping import stop_if_no_decrease_hook
from estimator_lite.experimental.early_stopping import stop_if_no_increase_hook
from estimator_lite.experimental.in_memory_evaluator_hook import InMemoryEvaluatorHook
from estimator_lite.experimental.logit_fn import call_logit_fn
from estimator_lite.experimental.stop_at_checkpoint_step import make_stop_at_checkpoint_step_hook
from estimator_lite.export.supervised_input_receiver import build_raw_supervised_input_receiver_fn

_V2 = "tf.estimator.experimental"
_V1 = "tf.compat.v1.estimator.experimental"
_WRITE_MODEL_FN = "Write a model_fn for estimator_lite.Estimator"
# tf.estimator.experimental's (and the v1 namespace's) names estimator_lite
# leaves out: the canned-estimator parts.
_NOT_PROVIDED = {
    "LinearSDCA": (
        _V2, "the SDCA optimizer of the canned linear estimators",
        f"{_WRITE_MODEL_FN} with a linear model and a tf.compat.v1.train optimizer "
        "(e.g. FtrlOptimizer) instead."),
    "RNNClassifier": (
        _V2, "a canned RNN estimator",
        f"{_WRITE_MODEL_FN} that builds the RNN itself instead."),
    "RNNEstimator": (
        _V2, "a canned RNN estimator",
        f"{_WRITE_MODEL_FN} that builds the RNN itself instead."),
    "KMeans": (
        _V1, "a canned clustering estimator",
        f"{_WRITE_MODEL_FN} around your clustering step, or cluster outside the "
        "Estimator (e.g. sklearn.cluster.KMeans)."),
}


def __getattr__(name: str) -> Any:
  # The canned logit builders, imported on first use.
  if name in canned.EXPERIMENTAL_NAMES:
    value = canned.resolve(canned.EXPERIMENTAL_NAMES, name)
    globals()[name] = value
    return value
  raise not_provided_error(__name__, name, _NOT_PROVIDED)
