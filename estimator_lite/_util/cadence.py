"""Cadence: when periodic work is next due, every N steps, every N seconds, or at multiples of N.

One primitive for every "every N steps or every N seconds" decision in
estimator_lite: the step hook's step counter, summaries and loss log, the
evaluation cadence of train_and_evaluate (EvalSpec.throttle_secs or
every_n_steps), early stopping's checks and the in-memory evaluator. Like
TensorFlow's `SecondOrStepTimer`, which it replaces, a cadence counts either
steps or seconds, is due at once before it first fires, and then:

* `every_steps=N`: again N steps after the step it last fired at;
* `every_steps=N, aligned=True`: again at the next multiple of N past that
  step (the evaluator's "first checkpoint at or past each multiple of N");
* `every_secs=S`: again S seconds after it last fired, but never twice at the
  same step.

The step rule keeps the step it is next due at in `next_step`, so a caller on
the per-step path decides with one comparison (`step >= cadence.next_step`)
and calls `fire` only on the steps where the work runs.
"""
from __future__ import annotations

import math
import time
from typing import Callable, Optional

_AT_ONCE = -math.inf


class Cadence:
  """When periodic work is next due.

  Args:
    every_steps: due every this many steps (or iterations: whatever the
      caller counts), or None.
    every_secs: due every this many seconds, or None.
    aligned: with every_steps, due at multiples of it rather than every_steps
      after the last firing.
    clock: seconds, monotonic; `time.monotonic` by default.

  Raises:
    ValueError: both or neither of every_steps and every_secs, or a value <= 0
      (every_secs may be 0: always due).
  """

  def __init__(self, *, every_steps: Optional[int] = None, every_secs: Optional[float] = None,
               aligned: bool = False, clock: Callable[[], float] = time.monotonic):
    if (every_steps is None) == (every_secs is None):
      raise ValueError("Exactly one of every_steps and every_secs must be provided, got "
                       f"every_steps={every_steps!r}, every_secs={every_secs!r}.")
    if every_steps is not None and every_steps <= 0:
      raise ValueError(f"every_steps must be > 0, given: {every_steps!r}.")
    if every_secs is not None and every_secs < 0:
      raise ValueError(f"every_secs must be >= 0, given: {every_secs!r}.")
    self._every_steps = every_steps
    self._every_secs = every_secs
    self._aligned = aligned
    self._clock = clock
    self.reset()

  @property
  def by_steps(self) -> bool:
    """True when the cadence counts steps, False when it counts seconds."""
    return self._every_steps is not None

  def reset(self) -> None:
    """Forgets every firing: due at once again."""
    # The step the step rule is next due at; -inf: at once; inf for a
    # seconds cadence (callers comparing steps then never see it due).
    self.next_step: float = _AT_ONCE if self.by_steps else math.inf
    self._last_step: Optional[int] = None
    self._last_time: Optional[float] = None

  def now(self) -> float:
    """The cadence's clock, for `fire(..., at=...)`."""
    return self._clock()

  def is_due(self, step: Optional[int] = None) -> bool:
    """Whether the work is due at `step` (None: a step not known; due by steps then)."""
    if self._every_secs is None:
      return step is None or step >= self.next_step
    if self._last_time is None:
      return True
    if step is not None and step == self._last_step:
      return False
    return self._clock() >= self._last_time + self._every_secs

  def secs_until_due(self) -> float:
    """Seconds until a seconds cadence is due (0: now); always 0 for a step cadence."""
    if self._every_secs is None or self._last_time is None:
      return 0.0
    return max(0.0, self._last_time + self._every_secs - self._clock())

  def fire(self, step: Optional[int] = None, *, at: Optional[float] = None) -> None:
    """Records that the work ran at `step`, started at time `at` (default: now).

    A step cadence never reads the clock (fire runs on the training path).
    """
    if not self.by_steps:
      self._last_time = self._clock() if at is None else at
    self.skip_to(step)

  def skip_to(self, step: Optional[int]) -> None:
    """Counts the steps from `step` on, as if the work had run there (a baseline)."""
    self._last_step = step
    every = self._every_steps
    if every is None or step is None:
      return
    self.next_step = (step // every + 1) * every if self._aligned else step + every

  def describe(self) -> str:
    """`every 100 steps`, `at multiples of 100 steps` or `every 60 secs`, for logs."""
    if not self.by_steps:
      return f"every {self._every_secs:g} secs"
    if self._aligned:
      return f"at multiples of {self._every_steps} steps"
    return f"every {self._every_steps} steps"
