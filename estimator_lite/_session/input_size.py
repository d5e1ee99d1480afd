"""How many batches an input holds, as tf.data tells without reading it.

Evaluation without `steps` and predict both run until the input ends; an
input tf.data knows to be infinite (`repeat()` with no count) never does.
Evaluation refuses it, predict warns (its caller may stop iterating on
purpose), and evaluation's progress lines say "N batches so far of M" from
the same count, read once.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import tensorflow as tf

from estimator_lite._session import targets


def _size_or_none(read: Callable[[], Any]) -> Optional[int]:
  """The cardinality `read()` returns, as a count; INFINITE stays; None when unknown or unreadable."""
  try:
    value = int(read())
  except tf.errors.OpError:
    # A pipeline that needs a feed or an initialised variable to be built.
    return None
  return None if value == tf.data.UNKNOWN_CARDINALITY else value


def input_size(cardinality: Optional[tf.Tensor], config: Any) -> Optional[int]:
  """The number of batches behind `cardinality` (input_fn.cardinality's tensor), read at once.

  Evaluates it in a short-lived local session of its graph, before any
  checkpoint is restored or hook begins.

  Returns:
    The count, tf.data.INFINITE_CARDINALITY, or None: unknown (not a
    Dataset, a count tf.data cannot tell, or a pipeline that needs a feed).
  """
  if cardinality is None:
    return None

  def read() -> Any:
    with tf.compat.v1.Session(graph=cardinality.graph,
                              config=targets.in_process_session_config(config)) as session:
      return session.run(cardinality)

  return _size_or_none(read)


def is_infinite(cardinality: Optional[tf.Tensor], config: Any) -> bool:
  """Whether tf.data knows the input behind `cardinality` never ends."""
  return input_size(cardinality, config) == tf.data.INFINITE_CARDINALITY
