"""Canned estimators (DNN, Linear, DNNLinearCombined, Baseline, RNN, KMeans) and the names that reach them.

The public namespaces (estimator_lite, estimator_lite.compat.v1,
estimator_lite.experimental) resolve these names on first use: a program that
never uses a canned estimator or a head does not pay for importing them.
"""
from __future__ import annotations

import importlib
from typing import Any, Dict, Mapping, Tuple

from estimator_lite._util.not_provided import NotProvided

_HEADS = {
    "Head": "estimator_lite.head.base_head",
    "BinaryClassHead": "estimator_lite.head.binary_class_head",
    "MultiClassHead": "estimator_lite.head.multi_class_head",
    "MultiLabelHead": "estimator_lite.head.multi_label_head",
    "MultiHead": "estimator_lite.head.multi_head",
    "RegressionHead": "estimator_lite.head.regression_head",
    "LogisticRegressionHead": "estimator_lite.head.regression_head",
    "PoissonRegressionHead": "estimator_lite.head.regression_head",
}
_SHARED = {
    **_HEADS,
    "add_metrics": "estimator_lite.canned.add_metrics",
    "classifier_parse_example_spec": "estimator_lite.canned.parse_example_spec",
    "regressor_parse_example_spec": "estimator_lite.canned.parse_example_spec",
}
_ESTIMATOR_MODULES = {
    "DNN": "estimator_lite.canned.dnn",
    "Linear": "estimator_lite.canned.linear",
    "DNNLinearCombined": "estimator_lite.canned.dnn_linear_combined",
    "Baseline": "estimator_lite.canned.baseline",
}
_TASKS = ("Classifier", "Regressor", "Estimator")

# name -> (module, attribute) for the top level (tf.estimator's v2 classes).
V2_NAMES: Dict[str, tuple] = {
    **{name: (module, name) for name, module in _SHARED.items()},
    **{kind + task: (module, kind + task)
       for kind, module in _ESTIMATOR_MODULES.items() for task in _TASKS},
}
# name -> (module, attribute) for compat.v1 (tf.compat.v1.estimator's classes:
# the v1 estimators are the `...V1` classes of the same modules).
V1_NAMES: Dict[str, tuple] = {
    **{name: (module, name) for name, module in _SHARED.items()},
    **{kind + task: (module, kind + task + "V1")
       for kind, module in _ESTIMATOR_MODULES.items() for task in _TASKS},
}
# tf.compat.v1.estimator.experimental's logit builders (offered in both
# experimental namespaces: estimator_lite has one module for both).
# The experimental estimators too: LinearSDCA (the linear estimators'
# optimizer), the RNN estimators, and KMeans (tf.compat.v1.estimator.experimental's
# only; 2.15's class is KMeansClustering).
EXPERIMENTAL_NAMES: Dict[str, tuple] = {
    "dnn_logit_fn_builder": ("estimator_lite.canned.dnn", "dnn_logit_fn_builder"),
    "linear_logit_fn_builder": ("estimator_lite.canned.linear", "linear_logit_fn_builder"),
    "LinearSDCA": ("estimator_lite.canned.linear_sdca", "LinearSDCA"),
    "RNNClassifier": ("estimator_lite.canned.rnn", "RNNClassifier"),
    "RNNEstimator": ("estimator_lite.canned.rnn", "RNNEstimator"),
    "KMeans": ("estimator_lite.canned.kmeans", "KMeansClustering"),
}


# tf.estimator's estimators removed before 2.15 (programs written for earlier
# releases still ask for them; TensorFlow 2.21 has no kernels for the
# boosted-trees ops), by their path under a tf.estimator namespace: what each
# was and what to use instead.
_BOOSTED_TREES_INSTEAD = (
    "Use TensorFlow Decision Forests (tensorflow_decision_forests.keras."
    "GradientBoostedTreesModel), which tf.estimator pointed to when it removed them, "
    "or scikit-learn's {sklearn}.")
REMOVED: Dict[str, Tuple[str, str]] = {
    "BoostedTreesClassifier": (
        "a gradient-boosted trees classifier, removed in tf.estimator 2.9",
        _BOOSTED_TREES_INSTEAD.format(sklearn="HistGradientBoostingClassifier")),
    "BoostedTreesRegressor": (
        "a gradient-boosted trees regressor, removed in tf.estimator 2.9",
        _BOOSTED_TREES_INSTEAD.format(sklearn="HistGradientBoostingRegressor")),
    "BoostedTreesEstimator": (
        "a gradient-boosted trees estimator with a custom head, removed in "
        "tf.estimator 2.9",
        _BOOSTED_TREES_INSTEAD.format(sklearn="HistGradientBoostingClassifier or "
                                      "HistGradientBoostingRegressor")),
    "experimental.SavedModelEstimator": (
        "an Estimator serving a SavedModel's signatures, removed in tf.estimator 2.15",
        "Load the SavedModel with tf.saved_model.load and call its signatures, or "
        "warm-start an estimator_lite Estimator from it (WarmStartSettings takes a "
        "SavedModel directory)."),
}


def removed_estimators(namespace: str, submodule: str = "") -> NotProvided:
  """The estimators tf.estimator removed before 2.15 that `namespace` had.

  Args:
    namespace: the tf.estimator namespace the error names
      (`tf.estimator`, `tf.compat.v1.estimator.experimental`, ...).
    submodule: which of its namespaces: "" for the top level, or
      "experimental".

  Returns:
    The not-provided table (see estimator_lite._util.not_provided).
  """
  prefix = f"{submodule}." if submodule else ""
  return {path[len(prefix):]: (namespace, what, instead)
          for path, (what, instead) in REMOVED.items()
          if path.startswith(prefix) and "." not in path[len(prefix):]}


def resolve(names: Mapping[str, tuple], name: str) -> Any:
  """Imports and returns the object `names` maps `name` to.

  Args:
    names: one of V2_NAMES, V1_NAMES, EXPERIMENTAL_NAMES.
    name: the public name asked for.

  Returns:
    The class or function.

  Raises:
    KeyError: `name` is not in `names`.
  """
  module, attribute = names[name]
  return getattr(importlib.import_module(module), attribute)
