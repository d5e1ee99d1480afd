"""estimator_lite.experimental: early stopping, in-memory evaluation, export inputs, call_logit_fn.

Also `tf.compat.v1.estimator.experimental` (estimator_lite.compat.v1.experimental
is this module), with the canned logit builders `dnn_logit_fn_builder` and
`linear_logit_fn_builder`, and the experimental estimators: LinearSDCA (the
linear estimators' SDCA optimizer, in both namespaces in 2.15), RNNClassifier
and RNNEstimator (tf.estimator.experimental's in 2.15), KMeans
(tf.compat.v1.estimator.experimental's). One module serves both namespaces,
so each namespace also offers the names 2.15 had only in the other.
SavedModelEstimator, removed in tf.estimator 2.15, is not provided: asking for
it raises an error saying what to use instead.
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

# tf.estimator.experimental's (and the v1 namespace's) names estimator_lite
# leaves out: removed before 2.15.
_NOT_PROVIDED = canned.removed_estimators("tf.estimator.experimental", "experimental")


def __getattr__(name: str) -> Any:
  # The canned logit builders, imported on first use.
  if name in canned.EXPERIMENTAL_NAMES:
    value = canned.resolve(canned.EXPERIMENTAL_NAMES, name)
    globals()[name] = value
    return value
  raise not_provided_error(__name__, name, _NOT_PROVIDED)
