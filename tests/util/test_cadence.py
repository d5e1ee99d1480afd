"""Cadence: due at once, then every N steps, at multiples of N, or every N seconds."""
import math

import pytest

from estimator_lite._util.cadence import Cadence


class FakeClock:
  """A clock the test moves by hand."""

  def __init__(self):
    self.now = 100.0

  def __call__(self):
    return self.now


def test_every_n_steps_counts_from_the_step_it_last_fired_at():
  cadence = Cadence(every_steps=10)
  assert cadence.is_due(0) and cadence.next_step == -math.inf  # due at once
  cadence.fire(3)
  assert cadence.next_step == 13
  assert [step for step in range(3, 30) if cadence.is_due(step)][0] == 13
  cadence.fire(15)  # late: counts from where it fired, as SecondOrStepTimer
  assert not cadence.is_due(24) and cadence.is_due(25)
  cadence.reset()
  assert cadence.is_due(0)


def test_aligned_cadence_is_due_at_the_next_multiple():
  cadence = Cadence(every_steps=20, aligned=True)
  cadence.skip_to(13)  # a baseline: the work did not run
  assert cadence.next_step == 20
  assert not cadence.is_due(19) and cadence.is_due(20)
  cadence.fire(47)
  assert cadence.next_step == 60
  assert cadence.is_due(None)  # an unknown step is due
  assert cadence.describe() == "at multiples of 20 steps"


def test_every_n_secs_waits_and_never_fires_twice_at_one_step():
  clock = FakeClock()
  cadence = Cadence(every_secs=5, clock=clock)
  assert cadence.is_due(7) and cadence.secs_until_due() == 0.0
  assert cadence.next_step == math.inf  # a step comparison never sees it due
  cadence.fire(7)
  clock.now += 2
  assert not cadence.is_due(8) and cadence.secs_until_due() == pytest.approx(3.0)
  clock.now += 3
  assert cadence.is_due(8)
  assert not cadence.is_due(7)  # the step it fired at
  start = clock.now
  clock.now += 4  # the work took 4 s; the cadence counts from its start
  cadence.fire(8, at=start)
  assert cadence.secs_until_due() == pytest.approx(1.0)
  assert cadence.describe() == "every 5 secs"


def test_a_step_cadence_never_reads_the_clock():
  def clock():
    raise AssertionError("the training path must not read the clock")
  cadence = Cadence(every_steps=2, clock=clock)
  cadence.fire(1)
  assert cadence.is_due(3) and cadence.secs_until_due() == 0.0


@pytest.mark.parametrize("kwargs, message", [
    ({}, "Exactly one of every_steps and every_secs"),
    ({"every_steps": 1, "every_secs": 1}, "Exactly one of every_steps and every_secs"),
    ({"every_steps": 0}, "every_steps must be > 0"),
    ({"every_secs": -1}, "every_secs must be >= 0"),
])
def test_bad_settings(kwargs, message):
  with pytest.raises(ValueError, match=message):
    Cadence(**kwargs)
