"""The one place that calls a user's model_fn and checks what it returns.

`ModelFn` is what `Estimator.model_fn` returns: the user's function bound to
the Estimator's params, called as `model_fn(features, labels, mode, config)`
as tf.estimator's public `model_fn` property was. Every graph estimator_lite
builds calls the model through it: training (one step a run, the in-graph
loop, each replica of a strategy), evaluation, prediction, export and the
in-memory evaluator.
"""
from __future__ import annotations

import copy
from typing import Any, Callable, Optional, Tuple

import attrs
import tensorflow as tf

from estimator_lite._util import fn_args
from estimator_lite._util import tf_internals
from estimator_lite.estimator_spec import EstimatorSpec
from estimator_lite.mode_keys import ModeKeys

_MODEL_FN_ARGS = ("features", "labels", "mode", "params", "config")
_logging = tf.compat.v1.logging
# Keras 3 variables work in model_fn except where tf.compat.v1 code needs a
# tf.Variable itself: say which tf.Variables to pass instead.
_KERAS3_VARIABLES_ERROR = (
    "model_fn passed Keras 3 variables (keras.Variable, e.g. the trainable_variables "
    "of a Keras 3 model) to tf.compat.v1 code that needs tf.Variables, such as "
    "optimizer.minimize(loss, var_list=...) of a tf.compat.v1.train optimizer. "
    "Pass the tf.Variables they hold: var_list=[v.value for v in "
    "model.trainable_variables]; or leave var_list out (the graph's trainable "
    "variables); or build the model with tf.keras layers (tf-keras, which "
    "estimator_lite selects), whose variables are tf.Variables.")


@attrs.frozen(eq=False)
class ModelFn:
  """A user's model_fn with the Estimator's params, callable as `(features, labels, mode, config)`.

  Build it with `ModelFn.wrap`, which checks the function's arguments.

  Attributes:
    function: the user's model_fn.
    params: the hyperparameters passed to it (a copy is passed on each call).
    accepted_args: the names model_fn takes among features, labels, mode,
      params and config.
    to_estimator_spec: converts what model_fn returns before it is checked,
      or None: an Estimator subclass whose model_fn returns another spec
      (TPUEstimator's TPUEstimatorSpec) gives the conversion here.
  """

  function: Callable[..., Any]
  params: dict
  accepted_args: Tuple[str, ...]
  to_estimator_spec: Optional[Callable[[Any], Any]] = None

  @classmethod
  def wrap(cls, model_fn: Optional[Callable[..., Any]], params: Optional[dict], *,
           to_estimator_spec: Optional[Callable[[Any], Any]] = None) -> "ModelFn":
    """Checks model_fn's arguments against what an Estimator passes.

    Args:
      model_fn: the user's model_fn.
      params: dict of hyperparameters, or None (deep-copied).
      to_estimator_spec: see the attribute.

    Returns:
      A ModelFn.

    Raises:
      ValueError: model_fn is None, lacks `features`, takes an argument
        Estimator does not pass, or params are given to a model_fn without
        `params`.
      TypeError: model_fn is not callable.
    """
    # tf.estimator's texts and order, each followed by what to do.
    if model_fn is None:
      raise ValueError("model_fn must be provided to Estimator. Pass a function "
                       f"taking some of {list(_MODEL_FN_ARGS)} and returning an EstimatorSpec.")
    if not callable(model_fn):
      raise TypeError(f"unsupported callable: model_fn must be a function or callable "
                      f"object, given {model_fn!r}.")
    args = fn_args.fn_args(model_fn)
    if "features" not in args:
      raise ValueError(f"model_fn ({model_fn}) must include features argument. "
                       f"{fn_args.describe(model_fn)} takes {list(args)}.")
    if params is not None and "params" not in args:
      raise ValueError(f"model_fn ({model_fn}) does not include params argument, but "
                       f"params ({params}) is passed to Estimator. Add a params argument "
                       "to model_fn, or pass no params.")
    if params is None and "params" in args:
      _logging.warning("Estimator's model_fn (%s) includes params argument, but params "
                       "are not passed to Estimator.", model_fn)
    # Defaulted ones too: Estimator never passes them (tf.estimator refused them).
    unknown = [a for a in args if a not in _MODEL_FN_ARGS]
    if unknown:
      raise ValueError(
          f"model_fn ({model_fn}) has following not expected args: {unknown}. It may "
          f"take only {list(_MODEL_FN_ARGS)}; bind others with functools.partial.")
    return cls(function=model_fn, params=copy.deepcopy(params or {}),
               accepted_args=tuple(a for a in _MODEL_FN_ARGS if a in args),
               to_estimator_spec=to_estimator_spec)

  def __call__(self, features: Any, labels: Any, mode: str, config: Any, *,
               announce: bool = True) -> EstimatorSpec:
    """Calls model_fn in the current graph with the arguments it names.

    Args:
      features: what input_fn gave (or the serving receiver's features).
      labels: likewise, or None.
      mode: a ModeKeys value.
      config: the Estimator's RunConfig.
      announce: log "Calling model_fn." and "Done calling model_fn." around
        the call; False for a model_fn called by another one that did.

    Returns:
      The EstimatorSpec model_fn returned, for `mode`.

    Raises:
      ValueError: labels for a model_fn without `labels`, a model_fn that
        failed for lack of labels, or a return value that is not an
        EstimatorSpec for `mode`.
      TypeError: model_fn gave Keras 3 variables to a tf.compat.v1 optimizer.
    """
    kwargs: dict = {}
    if "labels" in self.accepted_args:
      kwargs["labels"] = labels
    elif labels is not None:
      raise ValueError(
          "model_fn does not take labels, but input_fn returns labels. Add a "
          "labels argument to model_fn or return only features from input_fn.")
    if "mode" in self.accepted_args:
      kwargs["mode"] = mode
    if "params" in self.accepted_args:
      kwargs["params"] = copy.deepcopy(self.params)
    if "config" in self.accepted_args:
      kwargs["config"] = config
    tf_internals.reset_keras3_layer_names()
    if announce:
      _logging.info("Calling model_fn.")
    try:
      spec = self.function(features=features, **kwargs)
    except (TypeError, ValueError, AttributeError) as e:
      if tf_internals.is_keras3_variable_in_v1_code(e):
        raise TypeError(_KERAS3_VARIABLES_ERROR) from e
      if labels is None and "labels" in self.accepted_args and mode != ModeKeys.PREDICT:
        raise ValueError(
            f"model_fn raised {type(e).__name__} in mode {mode!r} with labels=None: "
            "input_fn returned features only, and this model_fn needs labels to "
            f"{'train' if mode == ModeKeys.TRAIN else 'evaluate'}. Return "
            "(features, labels) from input_fn, or a Dataset of (features, labels). "
            f"Original error: {e}") from e
      raise
    if self.to_estimator_spec is not None:
      spec = self.to_estimator_spec(spec)
    if announce:
      _logging.info("Done calling model_fn.")
    if not isinstance(spec, EstimatorSpec):
      raise ValueError(
          f"model_fn should return an EstimatorSpec. In mode {mode!r} it returned "
          f"{spec!r}; return estimator_lite.EstimatorSpec(mode, ...).")
    if spec.mode is None:
      # tf.estimator's rule for a model_fn without a `mode` argument: its spec
      # is for the mode model_fn was called in (and must hold what that needs).
      spec = EstimatorSpec(mode, *spec[1:])
    if spec.mode != mode:
      raise ValueError(
          f"model_fn was called with mode {mode!r} but returned an EstimatorSpec "
          f"for mode {spec.mode!r}; pass the mode argument through.")
    return spec
