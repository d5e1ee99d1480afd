"""call_logit_fn: calls a logit function with the model_fn arguments it accepts."""
from __future__ import annotations

from typing import Any, Callable, Dict, Union

import tensorflow as tf

from estimator_lite._util import fn_args

# The arguments besides `features` a logit_fn may take, each passed only when
# the function names it (as Estimator does for a model_fn).
_OPTIONAL_ARGS = ("mode", "params", "config")


def call_logit_fn(logit_fn: Callable[..., Any], features: Any, mode: str, params: Any,
                  config: Any) -> Union[tf.Tensor, Dict[str, tf.Tensor]]:
  """Calls `logit_fn` with `features` and whichever of mode, params and config it accepts.

  Experimental, as in tf.estimator (`tf.estimator.experimental.call_logit_fn`):
  Keras layers and models are the recommended way to compose logits.

  Args:
    logit_fn: a function with a `features` argument and optionally `mode`,
      `params` and `config`; it returns a logits Tensor, or a dict of head
      name (a string) to logits Tensor for a multi-head model.
    features: the features, passed as `features=`.
    mode: a `ModeKeys` value, passed if `logit_fn` takes `mode`.
    params: the hyperparameters, passed if `logit_fn` takes `params`.
    config: the `RunConfig`, passed if `logit_fn` takes `config`.

  Returns:
    What `logit_fn` returned: a Tensor or a dict of string to Tensor.

  Raises:
    ValueError: `logit_fn` returned anything else (tf.estimator's text).
  """
  accepted = fn_args.fn_args(logit_fn)
  given = {"mode": mode, "params": params, "config": config}
  kwargs = {name: given[name] for name in _OPTIONAL_ARGS if name in accepted}
  logits = logit_fn(features=features, **kwargs)
  if isinstance(logits, tf.Tensor):
    return logits
  if isinstance(logits, dict) and all(
      isinstance(key, str) and isinstance(value, tf.Tensor) for key, value in logits.items()):
    return logits
  raise ValueError(
      "logit_fn should return a Tensor or a dictionary mapping strings to Tensors.  "
      f"logit_fn returned: {logits}. Return the logits Tensor itself, or for several "
      "heads a dict of head name to logits Tensor (not a list, and not values that "
      "are Python objects or SparseTensors).")
