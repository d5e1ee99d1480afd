"""The error a tf.estimator name that estimator_lite leaves out raises, and the names left out.

Every estimator_lite module mirroring a tf.estimator namespace (the top level,
estimator_lite.compat.v1, estimator_lite.experimental) raises it from its
`__getattr__`, so a program asking for a tf.estimator name that estimator_lite
does not provide learns what to do instead of seeing a bare AttributeError,
and code probing with `hasattr` still sees the name missing.
"""
from typing import Dict, Tuple

# tf.estimator name -> (the tf.estimator namespace that had it, what it was,
# what to use instead).
NotProvided = Dict[str, Tuple[str, str, str]]

_TF_ESTIMATOR = "tf.estimator"
_MODEL_FN = "Write a model_fn for estimator_lite.Estimator"
_DNN = ("hidden layers of tf.compat.v1.layers.dense over "
        "tf.compat.v1.feature_column.input_layer(features, feature_columns)")
_LINEAR = "tf.compat.v1.feature_column.linear_model(features, feature_columns)"
_HEAD = ("Compute the loss, predictions, export outputs and eval_metric_ops in "
         "your model_fn and return them in an estimator_lite.EstimatorSpec.")


def _estimators(kind: str, instead: str) -> NotProvided:
  return {f"{kind}{task}": (_TF_ESTIMATOR, f"a canned {kind} estimator", instead)
          for task in ("Classifier", "Regressor", "Estimator")}


# The canned estimators and heads of tf.estimator and tf.compat.v1.estimator
# (the same names in both).
CANNED: NotProvided = {
    **_estimators("DNN", f"{_MODEL_FN} with {_DNN}."),
    **_estimators("Linear", f"{_MODEL_FN} with logits = {_LINEAR}."),
    **_estimators("DNNLinearCombined",
                  f"{_MODEL_FN} that adds the logits of {_LINEAR} to those of {_DNN}."),
    **_estimators("Baseline", f"{_MODEL_FN} whose logits are one bias variable."),
    **{name: (_TF_ESTIMATOR, "a canned head", _HEAD) for name in (
        "Head", "BinaryClassHead", "MultiClassHead", "MultiLabelHead", "MultiHead",
        "RegressionHead", "LogisticRegressionHead", "PoissonRegressionHead")},
    "add_metrics": (
        _TF_ESTIMATOR, "a wrapper adding metrics to an estimator",
        "Add the metrics to the eval_metric_ops of the EstimatorSpec your model_fn "
        "returns (tf.compat.v1.metrics.* or Keras metric objects)."),
    "classifier_parse_example_spec": (
        _TF_ESTIMATOR, "a parsing spec for canned classifiers",
        "Use tf.compat.v1.feature_column.make_parse_example_spec(feature_columns) and "
        "add the label, e.g. spec['label'] = tf.io.FixedLenFeature([1], tf.int64)."),
    "regressor_parse_example_spec": (
        _TF_ESTIMATOR, "a parsing spec for canned regressors",
        "Use tf.compat.v1.feature_column.make_parse_example_spec(feature_columns) and "
        "add the label, e.g. spec['label'] = tf.io.FixedLenFeature([1], tf.float32)."),
}


def not_provided_error(module_name: str, name: str, not_provided: NotProvided
                       ) -> AttributeError:
  """Returns the AttributeError for `name`, missing from module `module_name`.

  Args:
    module_name: the estimator_lite module's name.
    name: the attribute asked for.
    not_provided: the tf.estimator names the module leaves out (see `NotProvided`).

  Returns:
    An AttributeError to raise: Python's usual one for a name tf.estimator
    did not have either, else one saying what it was and what to use.
  """
  if name not in not_provided:
    return AttributeError(f"module {module_name!r} has no attribute {name!r}")
  tf_module, what, instead = not_provided[name]
  return AttributeError(
      f"{module_name} has no {name!r}: {tf_module}.{name} ({what}) is not part "
      f"of estimator_lite. {instead}")
