"""TPUEstimatorSpec's `eval_metrics` and `host_call`: checked, and run on the CPU as 2.15 ran them.

Both are `(function, tensors)`: on a TPU the tensors travel to the host and the
function runs there; without one (`use_tpu=False`) tf.estimator 2.15 called the
function on the tensors directly, in the graph model_fn built. `eval_metrics`
gives the EstimatorSpec's `eval_metric_ops`; `host_call`'s result is fetched on
every step of training, evaluation and prediction by `HostCallHook`, which also
initialises and flushes the TF2 summary writers the function made.
"""
from __future__ import annotations

import inspect
from typing import Any, Dict, List, Mapping, Sequence

import tensorflow as tf

from estimator_lite._util import fn_args
from estimator_lite._util import tf_internals

_logging = tf.compat.v1.logging


def validate(host_calls: Mapping[str, Any]) -> None:
  """2.15's checks of `{"eval_metrics": ..., "host_call": ...}` (the ones given).

  Raises:
    ValueError: not a pair, or tensors neither a list/tuple nor a dict.
    TypeError: the function is not callable.
    RuntimeError: a list of tensors whose length differs from the function's
      arguments.
  """
  for name, host_call in host_calls.items():
    if not isinstance(host_call, (tuple, list)):
      raise ValueError(f"{name} should be tuple or list. Pass ({name}_fn, tensors).")
    if len(host_call) != 2:
      raise ValueError(f"{name} should have two elements. Pass ({name}_fn, tensors): "
                       f"got {len(host_call)}.")
    function, tensors = host_call
    if not callable(function):
      raise TypeError(f"{name}[0] should be callable. Got {function!r}.")
    if not isinstance(tensors, (tuple, list, dict)):
      raise ValueError(f"{name}[1] should be tuple or list, or dict. Got {tensors!r}.")
    if isinstance(tensors, (tuple, list)):
      takes_varargs = any(p.kind == p.VAR_POSITIONAL
                          for p in inspect.signature(function).parameters.values())
      arguments = fn_args.fn_args(function)
      if not takes_varargs and len(tensors) != len(arguments):
        raise RuntimeError(
            f"In TPUEstimatorSpec.{name}, length of tensors {len(tensors)} does not match "
            f"method args of the function, which takes {len(arguments)}. Pass one tensor "
            f"for each of {list(arguments)}, or a dict keyed by them.")


def call_on_cpu(host_calls: Mapping[str, Any]) -> Dict[str, Any]:
  """Calls each function on its tensors in the current graph, as 2.15 did with use_tpu=False.

  Returns:
    {name: what the function returned}.

  Raises:
    TypeError: a dict of tensors whose keys are not the function's arguments
      (logged with 2.15's warning first).
  """
  validate(host_calls)
  results = {}
  for name, (function, tensors) in host_calls.items():
    if isinstance(tensors, (tuple, list)):
      results[name] = function(*tensors)
      continue
    try:
      results[name] = function(**tensors)
    except TypeError as e:
      _logging.warning(
          "Exception while calling %s: %s. It is likely the tensors (%s[1]) do not match "
          "the function's arguments", name, e, name)
      raise
  return results


class HostCallHook(tf.compat.v1.train.SessionRunHook):
  """Runs host_call's result on every step; initialises and flushes its TF2 summary writers.

  Args:
    fetches: what host_call's function returned (any fetchable structure).
  """

  def __init__(self, fetches: Any):
    self._fetches = fetches

  def begin(self) -> None:
    self._init_ops: List[tf.Operation] = tf_internals.summary_writer_init_ops()
    self._flush_ops: Sequence[tf.Operation] = [
        tf_internals.summary_writer_flush(op) for op in self._init_ops]

  def after_create_session(self, session: Any, coord: Any) -> None:
    del coord
    session.run(self._init_ops)

  def before_run(self, run_context: Any) -> Any:
    del run_context
    return tf.compat.v1.train.SessionRunArgs(self._fetches)

  def end(self, session: Any) -> None:
    session.run(self._flush_ops)
