"""The benchmark harness still runs: `python benchmarks/run.py --smoke` (about a minute).

Runs the harness end to end on the linear model: estimator_lite (default and
steps_per_loop=100), the bare Session.run loop and the in-graph loop, always,
and its pairs (plan.pairs) once each, two fresh processes training in turns;
tf.estimator 2.15 and the TF 2.15 bare loop only if the reference venv
(~/.cache/estimator_lite/ref-venv-2.15, or $ESTIMATOR_LITE_REF_VENV) already
exists: --smoke never creates it. It checks that the report is written with a
figure for every system; it asserts nothing about speed (the full benchmark,
`python benchmarks/run.py`, is not part of the test suite).
"""
import importlib.util
import json
import os
import subprocess
import sys

import pytest

# Tier `long` (tests/tiers.py): runs with --tier long.
pytestmark = pytest.mark.long

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _reference_venv_exists():
  spec = importlib.util.spec_from_file_location(
      "ref_env", os.path.join(REPO_ROOT, "tests", "reference", "ref_env.py"))
  ref_env = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(ref_env)
  return os.path.exists(ref_env.venv_python())


def test_smoke_run_writes_a_report_for_every_system(tmp_path):
  env = dict(os.environ)
  env.pop("TF_CONFIG", None)
  proc = subprocess.run(
      [sys.executable, os.path.join(REPO_ROOT, "benchmarks", "run.py"), "--smoke",
       "--results-dir", str(tmp_path)],
      capture_output=True, text=True, timeout=180, cwd=REPO_ROOT, env=env, check=False)
  assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

  with open(tmp_path / "results.json") as f:
    data = json.load(f)
  measured = {row["key"]: row for row in data["train"]}
  expected = {"estimator_lite", "estimator_lite_k100", "bare", "in_graph"}
  if _reference_venv_exists():
    expected |= {"tf_estimator", "bare_tf215"}
  assert set(measured) == expected
  for key, row in measured.items():
    assert row["error"] is None, (key, row["error"])
    result = row["result"]
    assert result["steps_per_sec"] > 0, key
    assert result["final_step"] == 300, key   # max_steps is exact, with loops too
    assert result["first_step_s"] > 0 and result["train_s"] >= result["first_step_s"], key
  # The in-graph loops ran 100 steps per Session.run.
  assert measured["estimator_lite_k100"]["result"]["session_runs"] == 3
  assert measured["in_graph"]["result"]["session_runs"] == 3
  assert measured["estimator_lite"]["result"]["export_s"] > 0

  # The pairs ran once each, the two processes of a pair in turns of 100
  # steps: both had the same number of turns, and each turn a rate.
  pairs = {(pair["a"], pair["b"]): pair for pair in data["pairs"]}
  expected_pairs = {("estimator_lite", "bare"), ("estimator_lite_k100", "in_graph"),
                    ("in_graph", "in_graph")}
  if "tf_estimator" in expected:
    expected_pairs |= {("estimator_lite", "tf_estimator"), ("estimator_lite_k100", "tf_estimator")}
  assert set(pairs) == expected_pairs
  for pair in pairs.values():
    assert pair["error"] is None, pair["error"]
    [one_round] = pair["rounds"]
    assert len(one_round["rates_a"]) == len(one_round["rates_b"]) >= 1
    assert min(one_round["rates_a"] + one_round["rates_b"]) > 0
    assert pair["median_ratio"] == one_round["ratio"] > 0

  report = (tmp_path / "RESULTS.md").read_text()
  assert "| estimator_lite | " in report and "| bare Session.run | " in report
  assert "### Targets" in report
  assert "| linear | estimator_lite K=100 / in-graph loop K=100 | ≥ 0.9 |" in report
  # The control pair: the in-graph loop against itself, without a target.
  assert "| linear | in-graph loop K=100 / in-graph loop K=100 | none |" in report
  assert "estimator_lite K=100 ≥ 0.9× in-graph loop K=100, in turns" in report


def test_canned_census_smoke_run_reports_every_system():
  """benchmarks/canned_census.py --smoke: the canned estimators' benchmark still runs."""
  proc = subprocess.run(
      [sys.executable, os.path.join(REPO_ROOT, "benchmarks", "canned_census.py"), "--smoke"],
      capture_output=True, text=True, timeout=300, cwd=REPO_ROOT, check=False,
      env={k: v for k, v in os.environ.items() if k != "TF_CONFIG"})
  assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
  labels = ["estimator_lite", "bare Session.run, TF 2.21, estimator_lite's graph"]
  if _reference_venv_exists():
    labels.append("tf.estimator 2.15")
  for label in labels:  # a row of figures for each system, and a pair in turns
    assert f"\n| {label} | " in proc.stdout, proc.stdout
  assert "\n| dnn_linear | estimator_lite / " in proc.stdout, proc.stdout


def test_ps_cluster_benchmark_measures_worker_scaling(tmp_path):
  """benchmarks/ps_cluster.py --trainers 2 --ps 2, one short window each: estimator_lite and
  TF 2.21's floor on a real cluster of 2 ps, a chief and a worker give global steps/s, CPU a
  step of each task (each ps apart), peak RSS a role, and the worker-scaling table."""
  out = tmp_path / "ps_cluster.json"
  proc = subprocess.run(
      [sys.executable, os.path.join(REPO_ROOT, "benchmarks", "ps_cluster.py"), "--trainers",
       "2", "--ps", "2", "--systems", "estimator_lite,bare_tf221", "--rounds", "1", "--secs",
       "3", "--py-new", sys.executable, "--out", str(out)],
      capture_output=True, text=True, timeout=600, cwd=REPO_ROOT, check=False,
      env={k: v for k, v in os.environ.items() if k != "TF_CONFIG"})
  assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
  with open(out) as f:
    data = json.load(f)
  assert data["clusters"] == ["t2_ps2"] and data["cores"] == os.cpu_count()
  results = {(r["system"], r["cluster"]): r for r in data["results"]}
  assert set(results) == {("estimator_lite", "t2_ps2"), ("bare_tf221", "t2_ps2")}
  tasks = {"ps0", "ps1", "chief0", "worker0"}
  for result in results.values():
    assert "error" not in result, result
    assert result["steps_per_sec"] > 0 and result["cpu_us_per_step"] > 0, result
    assert set(result["cpu_us_per_step_by_task"]) == tasks, result
    assert set(result["peak_rss_mb"]) == tasks, result
    assert all(rss > 100 for rss in result["peak_rss_mb"].values()), result
    assert all(runs > 0 for runs in result["runs_in_window"].values()), result
  assert "\n| estimator_lite / bare Session.run, TF 2.21 | " in proc.stdout, proc.stdout
  for row in ("global steps/s", "CPU a global step, all tasks", "CPU a global step, ps0 / ps1",
              "machine's CPU bound", "cores used / fraction of"):
    for label in ("estimator_lite", "bare Session.run, TF 2.21"):
      assert f"\n| {label}: {row}" in proc.stdout, proc.stdout
  # Two runs' rounds, pooled: the same measurements, twice as many rounds.
  pooled = subprocess.run(
      [sys.executable, os.path.join(REPO_ROOT, "benchmarks", "ps_cluster.py"), "--report-from",
       f"{out},{out}"], capture_output=True, text=True, timeout=60, cwd=REPO_ROOT, check=False)
  assert pooled.returncode == 0, pooled.stderr[-3000:]
  assert ", 2 round(s);" in pooled.stdout, pooled.stdout


def test_cluster_harness_stops_what_it_started_and_fails_early(tmp_path):
  """benchmarks/cluster.py: each task gets its TF_CONFIG on free ports; a wait fails at once,
  with the log tail, when a task ended; leaving stops every process it started."""
  spec = importlib.util.spec_from_file_location(
      "benchmarks_cluster", os.path.join(REPO_ROOT, "benchmarks", "cluster.py"))
  cluster = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(cluster)
  jobs = cluster.cluster_spec({"ps": 2, "chief": 1, "worker": 1, "evaluator": 1})
  assert list(jobs) == ["ps", "chief", "worker"] and len(jobs["ps"]) == 2
  assert len({address for addresses in jobs.values() for address in addresses}) == 4
  env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
  with cluster.Cluster({"ps": 1, "evaluator": 1}, prefix=str(tmp_path / "c_")) as c:
    ps = c.start("ps", 0, [sys.executable, "-c", "import time; time.sleep(600)"], env)
    c.start("evaluator", 0, [sys.executable, "-c",
                             "import os; print(os.environ['TF_CONFIG']); raise SystemExit(3)"],
            env)
    assert c.wait_exit("evaluator0", timeout=60) == 3
    assert json.loads(c.tail("evaluator0"))["task"] == {"type": "evaluator", "index": 0}
    with pytest.raises(RuntimeError, match="evaluator0 ended"):
      c.wait_for(lambda: False, timeout=60, what="nothing")
    with pytest.raises(RuntimeError, match="1 s passed"):
      c.wait_for(lambda: False, timeout=1, what="nothing", watch=["ps0"])
  assert ps.poll() is not None


def test_tpu_estimator_smoke_run_reports_every_system(tmp_path):
  """benchmarks/tpu_estimator.py --smoke: TPUEstimator(use_tpu=False), estimator_lite's (and
  tf.estimator 2.15's if the reference venv exists), the Estimator on the same model_fn and
  the steps_per_loop opt-in each train in a fresh process, and one pair trains in turns."""
  out = tmp_path / "tpu_estimator.json"
  proc = subprocess.run(
      [sys.executable, os.path.join(REPO_ROOT, "benchmarks", "tpu_estimator.py"), "--smoke",
       "--json", str(out)], capture_output=True, text=True, timeout=180, cwd=REPO_ROOT,
      check=False, env={k: v for k, v in os.environ.items() if k != "TF_CONFIG"})
  assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
  with open(out) as f:
    data = json.load(f)
  measured = {row["key"]: row for row in data["train"]}
  expected = {"lite_tpu", "lite_estimator", "lite_tpu_k100"}
  if _reference_venv_exists():
    expected.add("tf_tpu")
  assert set(measured) == expected
  for key, row in measured.items():
    assert row["error"] is None, (key, row["error"])
    result = row["result"]
    assert result["steps_per_sec"] > 0 and result["peak_rss_mb"] > 100, key
    assert result["final_step"] == 300, key
    # One step a Session.run, or 100 with the opt-in (the probe ticks once a run).
    assert result["session_runs"] == (3 if key == "lite_tpu_k100" else 300), key
  [pair] = data["pairs"]
  assert (pair["a"], pair["b"]) == ("lite_tpu", "tf_tpu" if "tf_tpu" in expected
                                    else "lite_estimator")
  assert pair["error"] is None and len(pair["rounds"]) == 1 and pair["median_ratio"] > 0
  assert ("| estimator_lite TPUEstimator / estimator_lite Estimator | ≥ 0.95 | "
          in proc.stdout), proc.stdout
  assert "| estimator_lite TPUEstimator | " in proc.stdout, proc.stdout


def test_numpy_input_smoke_run_trains_through_both_input_paths(tmp_path):
  """benchmarks/numpy_input.py --smoke: numpy_input_fn-fed training, the input_fn passed to
  train() (the Estimator takes its Dataset) and wrapped in a user's input_fn (its tensors),
  beside the bare TF 2.21 floor, and one pair in turns. (lite_before needs a git worktree of
  an older commit, and tf215 the reference venv: the full run has them.)"""
  out = tmp_path / "numpy_input.json"
  proc = subprocess.run(
      [sys.executable, os.path.join(REPO_ROOT, "benchmarks", "numpy_input.py"), "--smoke",
       "--systems", "lite,lite_wrapped,bare", "--json", str(out)],
      capture_output=True, text=True, timeout=180, cwd=REPO_ROOT, check=False,
      env={k: v for k, v in os.environ.items() if k != "TF_CONFIG"})
  assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
  with open(out) as f:
    data = json.load(f)
  measured = {row["key"]: row for row in data["train"]}
  assert set(measured) == {"lite", "lite_wrapped", "bare"}
  for key, row in measured.items():
    assert row["error"] is None, (key, row["error"])
    assert row["result"]["steps_per_sec"] > 0 and row["result"]["final_step"] == 300, key
  # Each system ran the input path it names.
  assert "IteratorV2" in measured["lite"]["result"]["seen"]["input_ops"]
  assert "OneShotIterator" in measured["lite_wrapped"]["result"]["seen"]["input_ops"]
  [pair] = data["pairs"]
  assert pair["error"] is None and pair["median_ratio"] > 0
