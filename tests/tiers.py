"""Test tiers: what `pytest` runs by default, and what it runs only when asked.

`pytest` alone runs the default tier: every test not marked with a tier, in
about a quarter of an hour on 2 cores, with nothing to install beyond the
package's test extras. A test that needs more is marked with its tier and
runs only when asked, `pytest --tier NAME` (repeatable) or `--tier all`:

- `long`: long multi-process runs (clusters of real processes, crash loops,
  the benchmark smoke runs), minutes each;
- `reference`: compares with tf.estimator 2.15 run in its own venv, which the
  first such test builds (tests/reference/ref_env.py: a 1.3 GB download);
  a test is in it when it uses the `reference_python` fixture;
- `netfault`: network faults injected with iptables; needs root and iptables.

A tier not asked for, or asked for where its needs are missing, is skipped
with one line saying how to run it. `--every-tier` (CI) asks for all of them
and fails the run if any test skipped, so that nothing goes untested there.
"""
import dataclasses
from typing import Callable, Optional

from netfault import rules
import pytest


@dataclasses.dataclass(frozen=True)
class Tier:
  """A named group of tests that run only when asked for.

  Attributes:
    name: the pytest marker, and the value of `--tier`.
    what: what its tests do and cost, for the skip reason.
    missing: returns what this machine lacks to run them, or None.
  """
  name: str
  what: str
  missing: Callable[[], Optional[str]] = lambda: None


TIERS = (
    Tier("long", "long multi-process runs, about 6 min"),
    Tier("reference", "compares with tf.estimator 2.15; the first run builds its "
         "1.3 GB venv in ~/.cache/estimator_lite (7 min); then about 3 min"),
    Tier("netfault", "network faults with iptables, about 10 min",
         lambda: rules.iptables_missing() or None),
)
_BY_NAME = {tier.name: tier for tier in TIERS}
# Tests that use this fixture compare with tf.estimator 2.15: tier `reference`.
REFERENCE_FIXTURE = "reference_python"


def add_options(parser: pytest.Parser) -> None:
  group = parser.getgroup("tiers", "test tiers (tests/tiers.py)")
  group.addoption("--tier", action="append", default=[], metavar="NAME",
                  choices=[*_BY_NAME, "all"],
                  help="also run this tier's tests: " + ", ".join(_BY_NAME) +
                  ", or all (repeatable)")
  group.addoption("--every-tier", action="store_true",
                  help="run every tier, and fail the run if any test skipped (CI)")


def register_markers(config: pytest.Config) -> None:
  for tier in TIERS:
    config.addinivalue_line(
        "markers", f"{tier.name}: tier '{tier.name}' ({tier.what}); runs with --tier {tier.name}")


def _asked(config: pytest.Config) -> set:
  names = set(config.getoption("tier"))
  if "all" in names or config.getoption("every_tier"):
    return set(_BY_NAME)
  return names


def skip_tiers_not_asked(config: pytest.Config, items: list) -> None:
  """Marks each tier's tests to skip, with how to run them, unless asked for and possible."""
  asked = _asked(config)
  reasons = {}
  for tier in TIERS:
    if tier.name not in asked:
      reasons[tier.name] = (f"tier '{tier.name}' ({tier.what}): "
                            f"run with `.venv/bin/python -m pytest --tier {tier.name}`")
    else:
      missing = tier.missing()
      if missing:
        reasons[tier.name] = f"tier '{tier.name}' cannot run here: {missing}"
  for item in items:
    if REFERENCE_FIXTURE in item.fixturenames:
      item.add_marker("reference")
    for name, reason in reasons.items():
      if item.get_closest_marker(name) is not None:
        item.add_marker(pytest.mark.skip(reason=reason))
        break


def _skipped(config: pytest.Config) -> int:
  reporter = config.pluginmanager.get_plugin("terminalreporter")
  return len(reporter.stats.get("skipped", [])) if reporter else 0


def fail_on_skips(session: pytest.Session) -> None:
  """With --every-tier, a run in which any test skipped fails."""
  if (session.config.getoption("every_tier") and _skipped(session.config)
      and session.exitstatus == pytest.ExitCode.OK):
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


def report_skips(reporter) -> None:
  """With --every-tier, says at the end of the summary why a run with skips failed."""
  skipped = _skipped(reporter.config)
  if reporter.config.getoption("every_tier") and skipped:
    reporter.write_line(f"--every-tier: {skipped} test(s) skipped (listed below); every tier "
                        "must run here, so this run fails", red=True, bold=True)
