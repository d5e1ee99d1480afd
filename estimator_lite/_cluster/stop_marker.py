"""The early-stopping marker: how the chief tells the evaluator task that training ended early.

When an early-stopping hook (experimental/early_stopping.py) ends training,
the chief writes model_dir/early_stopping.json with the global step reached,
`{"global_step": N}`. The evaluator task reads it after each evaluation and
exits once it has evaluated a checkpoint at or past that step, as it does at
TrainSpec.max_steps. A marker left by an earlier run (its step not past the
newest checkpoint when the evaluator started) is ignored.
"""
from __future__ import annotations

import json
import os
import time
from typing import Optional

import tensorflow as tf

MARKER_FILENAME = "early_stopping.json"


def marker_path(model_dir: str) -> str:
  """The path of the file the chief writes when it stops training early."""
  return os.path.join(os.fspath(model_dir), MARKER_FILENAME)


def write_stop_marker(model_dir: str, global_step: int) -> None:
  """Records that training stopped early at `global_step` (readers see all of it or none)."""
  path = marker_path(model_dir)
  temp = path + ".tmp"
  with tf.io.gfile.GFile(temp, "w") as f:
    json.dump({"global_step": int(global_step)}, f)
  tf.io.gfile.rename(temp, path, overwrite=True)


def read_stop_marker(model_dir: str) -> Optional[int]:
  """The global step at which early stopping ended training in model_dir, or None."""
  try:
    with tf.io.gfile.GFile(marker_path(model_dir)) as f:
      return int(json.load(f)["global_step"])
  except (tf.errors.NotFoundError, ValueError, KeyError, TypeError):
    return None


class StopMarkerWatcher:
  """The evaluator's view of the chief's early-stopping marker.

  Create it when the evaluator starts, passing the step of the newest
  checkpoint then (None if none): a marker at or before that step was left by
  an earlier run and is ignored. The marker file is read at most every
  `min_interval_secs`.

  Args:
    model_dir: the model directory.
    baseline_step: step of the newest checkpoint when the evaluator started.
    min_interval_secs: least time between two reads of the marker file.
  """

  def __init__(self, model_dir: str, baseline_step: Optional[int] = None,
               min_interval_secs: float = 5.0):
    self._model_dir = model_dir
    self._baseline = -1 if baseline_step is None else baseline_step
    self._min_interval_secs = min_interval_secs
    self._read_at: Optional[float] = None
    self._stop_step: Optional[int] = None

  def stop_step(self) -> Optional[int]:
    """The step training stopped early at in this run, or None (yet)."""
    now = time.monotonic()
    if self._stop_step is None and (
        self._read_at is None or now - self._read_at >= self._min_interval_secs):
      self._read_at = now
      step = read_stop_marker(self._model_dir)
      if step is not None and step > self._baseline:
        self._stop_step = step
    return self._stop_step

  def is_final(self, step: Optional[int], force_read: bool = False) -> bool:
    """Whether a checkpoint at `step` is the last one: training stopped early at or before it."""
    if force_read and self._stop_step is None:
      self._read_at = None
    stop_step = self.stop_step()
    return stop_step is not None and step is not None and step >= stop_step
