"""How the chief of a launched cluster knows that its workers have joined.

A fast model can reach max_steps on the chief before a worker's session is
up (workers also start 5 s apart, as tf.estimator's did), which leaves the
workers nothing to train. Under `python -m estimator_lite.launch`, each worker
drops a marker file once its training session exists, and the chief waits for
every worker's marker before its first step, for a bounded time
(`worker_join.py` has the hooks). This module is the contract between the
launcher and the tasks; it imports nothing heavy, because the launcher starts
without TensorFlow.
"""
from __future__ import annotations

import os
from typing import List, Mapping, NamedTuple, Optional

# Set by the launcher in every task's environment; a program started any
# other way has neither, and its chief does not wait.
DIR_ENV = "ESTIMATOR_LITE_LAUNCH_DIR"
WAIT_SECS_ENV = "ESTIMATOR_LITE_LAUNCH_JOIN_SECS"


class JoinSettings(NamedTuple):
  """Where the markers go, and the longest the chief waits for them."""
  directory: str
  wait_secs: float


def settings_from(environ: Mapping[str, str]) -> Optional[JoinSettings]:
  """The launcher's join settings in `environ`, or None when not launched (or turned off)."""
  directory = environ.get(DIR_ENV)
  if not directory:
    return None
  try:
    wait_secs = float(environ.get(WAIT_SECS_ENV, "0"))
  except ValueError:
    return None
  return JoinSettings(directory, wait_secs) if wait_secs > 0 else None


def marker_path(directory: str, worker_index: int) -> str:
  """The file worker `worker_index` creates when it has joined."""
  return os.path.join(directory, f"worker-{worker_index}.joined")


def mark_joined(directory: str, worker_index: int) -> None:
  """Creates worker `worker_index`'s marker (complete or absent: written, then renamed)."""
  path = marker_path(directory, worker_index)
  partial = f"{path}.{os.getpid()}.tmp"
  with open(partial, "w", encoding="utf-8") as f:
    f.write(f"{os.getpid()}\n")
  os.replace(partial, path)


def missing_workers(directory: str, num_workers: int) -> List[int]:
  """The indices of the workers (of `num_workers`) that have not joined yet."""
  return [i for i in range(num_workers) if not os.path.exists(marker_path(directory, i))]

