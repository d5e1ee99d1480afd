"""A warning when training stops making steps: what the task waits for, and if it can reach it.

In a ps cluster a training step, and the creation of a session after a
fault, wait for the ps tasks without a time limit and without a word: a ps
that crashed, a network partition or a firewall show only as silence
(TensorFlow's own "CreateSession still waiting" is a C++ INFO line, hidden
by default). `StallWatchHook` logs a warning once no step has finished for
`STALL_SECS` (or ten times the usual step time, if longer) after the first
step, again every
`STALL_SECS` while it lasts, and a line when steps resume. Each warning
names the tasks the session depends on and what a TCP connection to each
from this process gives: refused (not running, or a firewall that rejects),
timed out (unreachable: a partition or a firewall that drops) or accepted (running and reachable: busy, or
waiting on another task). It only watches; training resumes on its own once
the tasks answer, as in tf.estimator.

Before the first step it says nothing: waiting then is expected and has its
own log lines (a worker waiting for the chief's initialisation, a launched
cluster's tasks waiting for every worker to join).
"""
from __future__ import annotations

import socket
import statistics
import threading
import time
from typing import Any, Callable, List, Optional, Sequence, Tuple

import tensorflow as tf

_logging = tf.compat.v1.logging
STALL_SECS = 20.0
_PROBE_TIMEOUT_SECS = 2.0
_USUAL_STEPS = 20   # the recent steps whose median is the usual step time


def probe(address: str, timeout: float = _PROBE_TIMEOUT_SECS) -> str:
  """What a TCP connection to `address` ("host:port") from this process gives, in words."""
  host, _, port = address.rpartition(":")
  try:
    with socket.create_connection((host, int(port)), timeout=timeout):
      return "accepts connections"
  except socket.timeout:
    return f"no answer to a connection in {timeout:g} s: unreachable from here"
  except ConnectionRefusedError:
    return "connection refused: not running, or a firewall refuses it"
  except OSError as e:
    return f"cannot connect: {e.strerror or e}"


class StallWatchHook(tf.compat.v1.train.SessionRunHook):
  """Logs a warning while no training step finishes; see the module docstring.

  Args:
    peers: (task name, "host:port") of each task the session depends on.
    stall_secs: the shortest stall that is reported.
    clock: the monotonic clock (a parameter for tests of the rule).
  """

  def __init__(self, peers: Sequence[Tuple[str, str]], *, stall_secs: float = STALL_SECS,
               clock: Callable[[], float] = time.monotonic):
    self._peers = list(peers)
    self._stall_secs = stall_secs
    self._clock = clock
    self._lock = threading.Lock()
    self._last_progress = clock()
    self._step_started: Optional[float] = None
    self._steps: List[float] = []
    self._warned_at: Optional[float] = None
    self._stop = threading.Event()
    self._thread: Optional[threading.Thread] = None

  @property
  def peers(self) -> List[Tuple[str, str]]:
    """(task name, "host:port") of each task the session depends on."""
    return list(self._peers)

  def begin(self) -> None:
    with self._lock:
      self._last_progress = self._clock()
    if self._thread is None:
      self._thread = threading.Thread(target=self._watch, daemon=True,
                                      name="estimator_lite_stall_watch")
      self._thread.start()

  def after_create_session(self, session: Any, coord: Any) -> None:
    self._progress()

  def before_run(self, run_context: Any) -> None:
    with self._lock:
      self._step_started = self._clock()

  def after_run(self, run_context: Any, run_values: Any) -> None:
    with self._lock:
      if self._step_started is not None:
        self._steps = (self._steps + [self._clock() - self._step_started])[-_USUAL_STEPS:]
    self._progress()

  def end(self, session: Any) -> None:
    self.stop()

  def stop(self) -> None:
    """Ends the watch (also when training ends with an exception, before `end`)."""
    self._stop.set()

  def _progress(self) -> None:
    with self._lock:
      now = self._clock()
      if self._warned_at is not None:
        _logging.info("Training goes on after a stall of %.0f s.", now - self._last_progress)
      self._last_progress, self._warned_at = now, None

  def threshold(self) -> float:
    """How long without progress counts as a stall: STALL_SECS, or 10 usual steps if longer."""
    with self._lock:
      usual = statistics.median(self._steps) if self._steps else 0.0
    return max(self._stall_secs, 10 * usual)

  def check(self) -> Optional[str]:
    """The warning due now, or None; called by the watch thread once a second."""
    now = self._clock()
    with self._lock:
      stalled = now - self._last_progress
      due = self._warned_at is None or now - self._warned_at >= self._stall_secs
      started = bool(self._steps)
    if not started or stalled < self.threshold() or not due:
      return None
    with self._lock:
      self._warned_at = now
    peers = "; ".join(f"{name} at {address}: {probe(address)}" for name, address in self._peers)
    return (f"No training step has finished for {stalled:.0f} s. This task's session waits "
            f"for the ps tasks, without a time limit, until they answer ({peers}). If one is "
            "down or cut off from this machine (network partition, firewall), training "
            "resumes once it is back.")

  def _watch(self) -> None:
    while not self._stop.wait(1.0):
      message = self.check()
      if message:
        _logging.warning(message)


def for_cluster(config: Any) -> Optional[StallWatchHook]:
  """The watch of a ps cluster's chief or worker; None for other training (local, strategies)."""
  if config.train_distribute is not None or not config.cluster_spec:
    return None
  ps_tasks = config.cluster_spec.as_dict().get("ps", [])
  if not ps_tasks:
    return None
  return StallWatchHook([(f"ps:{i}", address) for i, address in enumerate(ps_tasks)])
