"""What a fault must not break, checked from what the cluster leaves on disk and in its logs.

* `IndexWatch`: while training runs, every checkpoint the `checkpoint` index
  names has its files, and the latest never goes back to an older step.
* `ProgressLog`: each trainer's steps over time, from program.py's progress
  files; `disruption()` turns them into the time a role stalled and the
  time it took to recover after the heal.
* The evaluator's record (eval events) and the final export.
"""
from __future__ import annotations

import glob
import os
import statistics
import time
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf


class IndexWatch:
  """Polls model_dir's `checkpoint` index; records every problem it sees, with the time."""

  def __init__(self, model_dir: str):
    self.model_dir = model_dir
    self.latest: List[Tuple[float, str]] = []   # (first seen, path), each new latest
    self.missing: List[Tuple[float, str]] = []  # (when, path) named but without its files
    self.went_back: List[Tuple[float, str, str]] = []
    self._verified: set = set()
    self._stamp: Optional[Tuple[float, int]] = None

  def _named(self) -> List[str]:
    state = tf.train.get_checkpoint_state(self.model_dir)
    return list(state.all_model_checkpoint_paths) if state else []

  def poll(self) -> None:
    index = os.path.join(self.model_dir, "checkpoint")
    try:
      stat = os.stat(index)
    except FileNotFoundError:
      return
    if (stat.st_mtime, stat.st_size) == self._stamp:
      return
    self._stamp = (stat.st_mtime, stat.st_size)
    self.verify(self._named())

  def verify(self, named: Sequence[str]) -> None:
    """Checks that each checkpoint in `named` (the index's list) has its files."""
    now = time.time()
    for path in named:
      if path in self._verified:
        continue
      if not _has_files(path) and path in self._named():  # not deleted since the read
        self.missing.append((now, path))
      self._verified.add(path)
    if named:
      latest = named[-1]
      if self.latest and _step(latest) < _step(self.latest[-1][1]):
        self.went_back.append((now, self.latest[-1][1], latest))
      if not self.latest or self.latest[-1][1] != latest:
        self.latest.append((now, latest))

  def final_check(self) -> None:
    """Verifies the whole index once more, every checkpoint again."""
    self._verified.clear()
    self.verify(self._named())


def _has_files(path: str) -> bool:
  return os.path.exists(path + ".index") and bool(glob.glob(path + ".data-*"))


def _step(path: str) -> int:
  return int(path.rsplit("-", 1)[1])


class ProgressLog:
  """Each incarnation's steps: (time of the step, local steps, global step), in order."""

  def __init__(self, control_dir: str):
    self.control_dir = control_dir
    self.steps: Dict[str, List[Tuple[float, int, int]]] = {}

  def poll(self) -> None:
    for path in glob.glob(os.path.join(self.control_dir, "*.progress")):
      try:
        with open(path) as f:
          local, global_step, when = f.read().split()
      except (FileNotFoundError, ValueError):
        continue
      incarnation = os.path.basename(path)[:-len(".progress")]
      record = self.steps.setdefault(incarnation, [])
      if not record or record[-1][1] != int(local):
        record.append((float(when), int(local), int(global_step)))

  def step_times(self, role: str) -> List[float]:
    """When role `role` (every incarnation) finished a step, in order."""
    return sorted(t for name, record in self.steps.items() if name.rsplit("-", 1)[0] == role
                  for t, _, _ in record)

  def global_step(self) -> int:
    return max([record[-1][2] for record in self.steps.values() if record] + [0])

  def local_steps(self, incarnation: str) -> int:
    record = self.steps.get(incarnation)
    return record[-1][1] if record else 0


def disruption(times: Sequence[float], start: float, heal: float) -> Dict[str, float]:
  """How a fault from `start` to `heal` disturbed a role that stepped at `times`.

  Returns:
    stalled_secs: the longest time the role went without a step, from its
      last step before the fault to its first after the heal;
    recover_secs: from the heal until the role stepped at its usual pace
      again (5 steps in a row, each within 3 times its median interval
      before the fault); -1 if it did not within the times given;
    steps_during: the steps it made during the fault;
    usual_interval_secs: its median interval between steps before the fault.
  """
  before = [t for t in times if t < start]
  during = [t for t in times if start <= t < heal]
  after = [t for t in times if t >= heal]
  intervals = np.diff(before[-30:])
  usual = float(statistics.median(intervals)) if len(intervals) else 1.0
  points = before[-1:] + during + after[:1]
  gaps = np.diff(points) if len(points) > 1 else [heal - start]
  recovered = -1.0
  for i in range(len(after) - 5):
    if max(np.diff(after[i:i + 6])) <= 3 * usual:
      recovered = after[i] - heal
      break
  return {"stalled_secs": round(float(max(gaps)), 2), "recover_secs": round(recovered, 2),
          "steps_during": len(during), "usual_interval_secs": round(usual, 3)}


def _eval_events(model_dir: str):
  for path in sorted(glob.glob(os.path.join(model_dir, "eval", "events.out.tfevents.*"))):
    try:
      yield from tf.compat.v1.train.summary_iterator(path)
    except tf.errors.DataLossError:
      pass  # a killed evaluator's file may end in a partial record


def evaluations(model_dir: str) -> List[Tuple[str, int, float]]:
  """(checkpoint path, global step, loss) of every evaluation in the eval events.

  An evaluation writes its metrics, then an event with the checkpoint's path.
  """
  found, loss = [], None
  for event in _eval_events(model_dir):
    for value in event.summary.value:
      if value.tag == "loss":
        loss = value.simple_value
      elif value.tag == "checkpoint_path":
        found.append((value.tensor.string_val[0].decode(), event.step, loss))
  return found


def latest_export(model_dir: str, name: str = "linear") -> Optional[str]:
  versions = sorted(glob.glob(os.path.join(model_dir, "export", name, "[0-9]*")))
  return versions[-1] if versions else None


def export_error(export_dir: str, checkpoint: str) -> float:
  """Loads the export in TF2; returns its largest prediction error against `checkpoint`'s model."""
  x = np.array([[0.5, -0.25], [1.0, 1.0], [-1.0, 0.5]], np.float32)
  served = tf.saved_model.load(export_dir).signatures["serving_default"](x=tf.constant(x))
  predicted = next(iter(served.values())).numpy()
  expected = x @ tf.train.load_variable(checkpoint, "w") + tf.train.load_variable(checkpoint, "b")
  return float(np.max(np.abs(predicted - expected)))
