"""The start-up benchmark still runs: `benchmarks/startup.py` on a short job (about a minute).

Runs one job of estimator_lite (ps + chief + worker + evaluator, 200 steps)
and one bare `import tensorflow`, and checks that the report holds every
phase of every task and the job's figures. It asserts nothing about speed
(the full benchmark, `python benchmarks/startup.py`, is not part of the test
suite).
"""
import json
import os
import subprocess
import sys

import pytest

# Tier `long` (tests/tiers.py): runs with --tier long.
pytestmark = pytest.mark.long

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO_ROOT, "benchmarks"))

import startup  # pylint: disable=g-import-not-at-top,wrong-import-position

STEPS = 200


def test_short_job_reports_every_phase(tmp_path):
  env = dict(os.environ)
  env.pop("TF_CONFIG", None)
  out = tmp_path / "startup.json"
  proc = subprocess.run(
      [sys.executable, os.path.join(REPO_ROOT, "benchmarks", "startup.py"), "--steps",
       str(STEPS), "--rounds", "1", "--imports", "1", "--systems", "estimator_lite",
       "--out", str(out)],
      capture_output=True, text=True, timeout=300, cwd=REPO_ROOT, env=env, check=False)
  assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

  with open(out) as f:
    result = json.load(f)
  run = result["rounds"][0]["jobs"]["estimator_lite"]
  phases = startup.phases(run, STEPS)
  for task, found in phases.items():
    role = task.rstrip("0123456789")
    names = [name for name, roles, _ in startup.boundary_finders(STEPS) if role in roles]
    expected = [f"{a} → {b}" for a, b in zip(names, names[1:])] + ["total"]
    assert list(found) == expected, task
    missing = [name for name, figures in found.items() if figures["t"] is None]
    # A worker can find training done before its first step (the chief is alone
    # and quick at 200 steps): its step phases may be missing, nothing else.
    if role == "worker":
      missing = [name for name in missing if "step" not in name and "session" not in name
                 and "graph" not in name]
    assert not missing, (task, missing)
  figures = startup.job_figures(run, STEPS)
  assert figures["evaluations the evaluator ran"] >= 1
  assert all(value is not None for value in figures.values()), figures
  assert result["rounds"][0]["imports"]["estimator_lite"][0]["import_s"] > 0
  for task in ("ps0", "chief0", "worker0", "evaluator0"):
    assert f"**{task}**" in proc.stdout
  assert "**The job**" in proc.stdout
