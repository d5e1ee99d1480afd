"""The hook by which the training tasks of a launched cluster make their first steps together.

See `join_markers.py` for why. A worker marks itself joined when its training
session exists (so the chief has initialized the variables and the worker's
next step is a real one). Every training task, chief and workers, then waits
before its first step until every worker has joined, or until the launcher's
bound passes: the chief waits so that it does not reach max_steps alone, and
the workers so that the first to join does not. Outside the launcher the hook
is not added, and training starts as in tf.estimator.
"""
from __future__ import annotations

import os
import time
from typing import Any, List, Optional

import tensorflow as tf

from estimator_lite._cluster import join_markers
from estimator_lite._cluster import tf_config
from estimator_lite._util import cadence as cadence_lib

_logging = tf.compat.v1.logging
_POLL_SECS = 0.1
_LOG_EVERY_SECS = 10


def launcher_hooks(config: Any) -> List[tf.compat.v1.train.SessionRunHook]:
  """The join hook for this task of a launched ps cluster (none when not launched).

  Args:
    config: the task's RunConfig (task_type, task_id, cluster_spec).

  Returns:
    [the hook] on the chief and on each worker of a launched cluster with
    workers, else [].
  """
  settings = join_markers.settings_from(os.environ)
  num_workers = len(config.cluster_spec.as_dict().get(tf_config.WORKER, []))
  if settings is None or not num_workers:
    return []
  if config.task_type == tf_config.WORKER:
    return [_JoinHook(settings, num_workers, config.task_id)]
  if config.task_type == tf_config.CHIEF:
    return [_JoinHook(settings, num_workers, None)]
  return []


class _JoinHook(tf.compat.v1.train.SessionRunHook):
  """Marks a worker joined; holds the first step until every worker has, at most `wait_secs`.

  Args:
    settings: the launcher's directory and bound.
    num_workers: the cluster's workers (the chief not counted).
    worker_index: this task's index if it is a worker, None on the chief.
  """

  def __init__(self, settings: join_markers.JoinSettings, num_workers: int,
               worker_index: Optional[int]) -> None:
    self._settings = settings
    self._num_workers = num_workers
    self._worker_index = worker_index
    self._task = "chief" if worker_index is None else f"worker:{worker_index}"
    self._waited = False

  def after_create_session(self, session: tf.compat.v1.Session, coord: Any) -> None:
    del session, coord
    if self._worker_index is not None:
      join_markers.mark_joined(self._settings.directory, self._worker_index)

  def before_run(self, run_context: tf.compat.v1.train.SessionRunContext) -> None:
    del run_context
    if self._waited:
      return
    self._waited = True
    start = time.monotonic()
    progress_log = cadence_lib.Cadence(every_secs=_LOG_EVERY_SECS)
    missing = join_markers.missing_workers(self._settings.directory, self._num_workers)
    while missing and time.monotonic() - start < self._settings.wait_secs:
      if progress_log.is_due():
        progress_log.fire()
        _logging.info("%s: waiting for %s to join before the first step (%.0f of at most "
                      "%g secs).", self._task, _names(missing), time.monotonic() - start,
                      self._settings.wait_secs)
      time.sleep(_POLL_SECS)
      missing = join_markers.missing_workers(self._settings.directory, self._num_workers)
    waited = time.monotonic() - start
    if missing:
      _logging.warning("%s: %s had not joined after %.0f secs; training without waiting "
                       "longer (launch --join-secs).", self._task, _names(missing), waited)
    else:
      _logging.info("%s: all %d worker(s) joined the launched cluster; training starts "
                    "(waited %.1f secs).", self._task, self._num_workers, waited)


def _names(indices: List[int]) -> str:
  return ", ".join(f"worker:{i}" for i in indices)
