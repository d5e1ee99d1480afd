"""A receiver fn must reach export as the function, not as what calling it gave.

`export_saved_model(dir, fn)` calls `fn` inside the export graph, where its
placeholders belong. A common slip is `export_saved_model(dir, fn())`:
calling the fn in the user's own (eager) code fails in tf.estimator 2.15 with
TensorFlow's bare "tf.placeholder() is not compatible with eager execution",
and a receiver built in a graph by hand reaches export as an object that is
not callable. Both errors keep tf.estimator's text, then say what happened
and the fix.
"""
from __future__ import annotations

from typing import Any

import tensorflow as tf

# TensorFlow's text for a placeholder made eagerly, which tf.estimator 2.15
# users saw for this mistake.
_EAGER_PLACEHOLDER_TEXT = "tf.placeholder() is not compatible with eager execution."
_FIX = ("pass the function: export_saved_model(dir, fn) not fn(), and likewise "
        "LatestExporter(name, fn), BestExporter(..., serving_input_receiver_fn=fn) "
        "and FinalExporter(name, fn).")


def refuse_eager_call(kind: str = "serving_input_receiver_fn") -> None:
  """Raises, with the fix, when a built receiver fn is called outside a graph.

  Args:
    kind: the name of the receiver fn, as the error shows it.

  Raises:
    RuntimeError: executing eagerly (tf.estimator's text, then the fix).
  """
  if tf.executing_eagerly():
    raise RuntimeError(
        f"{_EAGER_PLACEHOLDER_TEXT} {kind} must be a function that returns a "
        f"ServingInputReceiver (or another receiver), called by export inside the "
        f"graph it builds; it was called eagerly, most likely because you passed the "
        f"result of calling it. Fix: {_FIX}")


def is_receiver_result(value: Any) -> bool:
  """Whether `value` is what a receiver fn returns (a receiver), not a fn.

  Every receiver (Serving, TensorServing, Supervised, Unsupervised) is a
  named tuple with `receiver_tensors`; checked by that field, so that the
  receiver modules, which use this one, are not imported here.
  """
  return isinstance(value, tuple) and hasattr(value, "receiver_tensors")


def not_callable_hint(value: Any) -> str:
  """The sentence to add to a "not callable" error about a receiver fn."""
  if is_receiver_result(value):
    return (f" You passed the result of calling the receiver fn (a {type(value).__name__}); "
            f"{_FIX}")
  return ""
