"""ExamplesPerSecondHook: the step-rate log and events of a TPUEstimator (2.15's)."""
from __future__ import annotations

from typing import Any, Optional

import tensorflow as tf

_logging = tf.compat.v1.logging


class ExamplesPerSecondHook(tf.compat.v1.train.StepCounterHook):
  """A StepCounterHook that also reports examples/sec, as TPUEstimator 2.15 did.

  TPUEstimator turns Estimator's own loss log and step counter off and trains
  with this hook instead: it logs `global_step/sec` and `examples/sec`, and
  writes both as events (tags `global_step/sec`, `examples/sec`).

  Args:
    batch_size: the global batch size, or None (then only the step rate is
      reported; 2.15 failed on None at the first report).
    every_n_steps: report every this many global steps.
    every_n_secs: or every this many seconds.
    output_dir: where the events go; None writes none.
    summary_writer: a FileWriter to use instead of output_dir's.
  """

  def __init__(self, batch_size: Optional[int], every_n_steps: Optional[int] = 100,
               every_n_secs: Optional[float] = None, output_dir: Optional[str] = None,
               summary_writer: Any = None):
    self._batch_size = batch_size
    super().__init__(every_n_steps=every_n_steps, every_n_secs=every_n_secs,
                     output_dir=output_dir, summary_writer=summary_writer)

  # StepCounterHook calls this with each new rate: the one method it leaves
  # to subclasses (TensorFlow's own hooks override it the same way).
  def _log_and_record(self, elapsed_steps: int, elapsed_time: float, global_step: int) -> None:
    steps_per_sec = elapsed_steps / elapsed_time
    rates = [("global_step/sec", steps_per_sec)]
    if self._batch_size is not None:
      rates.append(("examples/sec", self._batch_size * steps_per_sec))
    for tag, rate in rates:
      if self._summary_writer is not None:
        self._summary_writer.add_summary(
            tf.compat.v1.Summary(value=[tf.compat.v1.Summary.Value(tag=tag, simple_value=rate)]),
            global_step)
      _logging.info("%s: %g", tag, rate)
