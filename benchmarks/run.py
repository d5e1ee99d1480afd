"""The benchmark: tf.estimator 2.15 vs estimator_lite vs a bare Session.run loop vs an in-graph loop.

    python benchmarks/run.py            # full run (~30 min): writes benchmarks/RESULTS.md,
                                        # benchmarks/results.json, benchmarks/steps_per_sec.png
    python benchmarks/run.py --quick    # one short run of everything (~4 min), to a temp dir
    python benchmarks/run.py --smoke    # seconds: the harness still works (used by a test)

Run it with the current venv's python (estimator_lite's TensorFlow); the
tf.estimator 2.15 parts run with the reference venv's python
(tests/reference/ref_env.py; created when missing, except with --smoke,
which skips them when it is missing). Every measurement is a fresh process,
started one at a time (except the pairs, and the multi-process cluster and
evaluator runs), the order of the systems rotating from run to run.

Systems, on the models of benchmarks/models.py (linear, mlp, wide_deep):
  tf.estimator 2.15      tf.estimator.Estimator, default RunConfig;
  estimator_lite         estimator_lite.Estimator, default RunConfig;
  estimator_lite K=100   RunConfig(steps_per_loop=100);
  bare Session.run       Session.run(train_op) in a Python loop, same graph;
  in-graph loop K=100    the same graph in a tf.while_loop, 100 steps a run.
  bare Session.run, TF 2.15   the bare loop on the reference venv's TF 2.15.
The targets are also measured in pairs (PAIRS): the two systems of a pair
start in two fresh processes that train in turns of 100 steps (workloads/
train.py's Turns), so each turn of one is next in time to a turn of the
other; their ratio turn by turn is the steadier measure on a noisy machine.
Pairs of two TF 2.21 systems also train in turns as two threads of one
process (train.py --partner), which share the process's luck in where its
threads run.
Plus the evaluator task's latency and asynchronous ps training (see
workloads/evaluator.py and workloads/cluster_task.py), and a cProfile of
estimator_lite on the linear model (profile_linear.py), each TensorFlow's
step cost layer by layer (step_costs.py) and op by op (op_costs.py).
"""
import argparse
import datetime
import importlib.util
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
WORKLOADS = os.path.join(HERE, "workloads")
sys.path.insert(0, HERE)

import report  # pylint: disable=g-import-not-at-top,wrong-import-position

# (key, label, system, steps_per_loop, uses the reference python)
SYSTEMS = (
    ("tf_estimator", "tf.estimator 2.15", "tf_estimator", 1, True),
    ("estimator_lite", "estimator_lite", "estimator_lite", 1, False),
    ("estimator_lite_k100", "estimator_lite K=100", "estimator_lite", 100, False),
    ("bare", "bare Session.run", "bare", 1, False),
    ("in_graph", "in-graph loop K=100", "in_graph", 100, False),
    # The bare loop on TF 2.15: what TensorFlow itself gained or lost since.
    ("bare_tf215", "bare Session.run, TF 2.15", "bare", 1, True),
)
MODELS = ("linear", "mlp", "wide_deep")

# Per mode: runs per (system, model), training steps per model (multiples of
# 100), the pairs' steps and rounds per model, and the evaluator/cluster
# settings.
PROFILES = {
    # The linear model's steps are a fraction of a millisecond, so its figures
    # swing the most from process to process; its pair rounds take seconds,
    # so it gets more of them.
    "full": dict(runs=5, steps={"linear": 4000, "mlp": 600, "wide_deep": 600},
                 pair_steps={"linear": 10000, "mlp": 1000, "wide_deep": 1000},
                 pair_rounds={"linear": 11, "mlp": 5, "wide_deep": 5},
                 eval_ckpts=5, dist_runs=3, dist_secs=6.0, floor_steps=2000,
                 profile_steps=2000, models=MODELS, dist_workers=2),
    "quick": dict(runs=1, steps={"linear": 2000, "mlp": 300, "wide_deep": 300},
                  pair_steps={"linear": 2000, "mlp": 300, "wide_deep": 300},
                  pair_rounds={"linear": 1, "mlp": 1, "wide_deep": 1},
                  eval_ckpts=3, dist_runs=1, dist_secs=4.0, floor_steps=1000,
                  profile_steps=1000, models=MODELS, dist_workers=2),
    "smoke": dict(runs=1, steps={"linear": 300}, pair_steps={"linear": 300},
                  pair_rounds={"linear": 1}, eval_ckpts=0, dist_runs=0, dist_secs=0,
                  floor_steps=0, profile_steps=0, models=("linear",), dist_workers=0),
}
_TRAIN_TIMEOUT = 600


def log(message):
  print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def _load_ref_env():
  path = os.path.join(REPO, "tests", "reference", "ref_env.py")
  spec = importlib.util.spec_from_file_location("ref_env", path)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def reference_python(create):
  """The reference venv's python; created when missing if `create`, else None.

  Without `create` (--smoke) the venv is only looked for, not probed: probing
  imports TensorFlow, which takes seconds.
  """
  ref_env = _load_ref_env()
  if not create:
    python = ref_env.venv_python()
    return python if os.path.exists(python) else None
  return ref_env.ensure_ref_python(log=log)


def child_env(reference):
  env = dict(os.environ)
  env.pop("TF_CONFIG", None)
  env["TF_CPP_MIN_LOG_LEVEL"] = "2"
  env["PYTHONUNBUFFERED"] = "1"
  if reference:
    env.pop("PYTHONPATH", None)
    # Set by estimator_lite (in a parent that imported it, e.g. pytest): the
    # reference venv has no tf-keras, and TF 2.15's tf.keras would fail.
    env.pop("TF_USE_LEGACY_KERAS", None)
  else:
    env["PYTHONPATH"] = REPO + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
  return env


def _tail(text, lines=15):
  return "\n".join((text or "").strip().splitlines()[-lines:])


class Runner:
  """Starts workload processes and collects their JSON."""

  def __init__(self, python, ref_python, work_dir):
    self.python = python
    self.ref_python = ref_python
    self.work_dir = work_dir
    self._count = 0

  def _path(self, name):
    self._count += 1
    return os.path.join(self.work_dir, f"{self._count:04d}_{name}")

  def start(self, script, args, reference, name, pass_fds=()):
    """Starts a workload; returns (Popen, out_json_path, log_path, launch_time)."""
    out = self._path(name + ".json")
    log_path = self._path(name + ".log")
    python = self.ref_python if reference else self.python
    cmd = [python, os.path.join(WORKLOADS, script), *args, "--out", out]
    log_file = open(log_path, "w")  # pylint: disable=consider-using-with
    launch = time.time()
    proc = subprocess.Popen(cmd, stdout=log_file, stderr=subprocess.STDOUT,
                            env=child_env(reference), cwd=REPO, pass_fds=pass_fds)
    log_file.close()
    return proc, out, log_path, launch

  @staticmethod
  def finish(proc, out, log_path, timeout):
    """Waits; returns (result dict or None, error text or None)."""
    try:
      proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
      stop(proc)
      return None, f"timed out after {timeout} s"
    with open(log_path) as f:
      output = f.read()
    if proc.returncode != 0 or not os.path.exists(out):
      return None, f"exit {proc.returncode}: {_tail(output)}"
    with open(out) as f:
      return json.load(f), None


def stop(proc, grace=5):
  """Terminates a process this harness started (and waits for it)."""
  if proc.poll() is not None:
    return
  proc.terminate()
  try:
    proc.wait(timeout=grace)
  except subprocess.TimeoutExpired:
    proc.kill()
    proc.wait()


def free_port():
  with socket.socket() as s:
    s.bind(("localhost", 0))
    return s.getsockname()[1]


# -- the runs ------------------------------------------------------------------
def _train_args(system, model, steps, k, model_dir):
  args = ["--system", system, "--model", model, "--steps", str(steps), "--steps-per-loop",
          str(k)]
  if model_dir:
    args += ["--model-dir", model_dir]
  if system in ("tf_estimator", "estimator_lite") and k == 1:
    args.append("--export")
  return args


def _collect(meta, started, results):
  result, error = Runner.finish(*started[:3], timeout=_TRAIN_TIMEOUT)
  metas = meta if isinstance(meta, list) else [meta]
  if result is None:
    result = [None] * len(metas)
  for one_meta, one in zip(metas, result if isinstance(result, list) else [result]):
    if one is not None and one.get("first_step_wall"):
      one["launch_to_first_step_s"] = one["first_step_wall"] - started[3]
    sps = one and one.get("steps_per_sec")
    log(f"  {one_meta['label']:25s} {one_meta['model']:9s} run {one_meta['run'] + 1}: "
        + (f"{sps:9.1f} steps/s" if sps else f"FAILED: {error}"))
    results.append(dict(one_meta, result=one, error=error))


def runs_of(settings, model):
  """How many runs `model` gets: `runs`, plus its `extra_runs`."""
  return settings["runs"] + settings.get("extra_runs", {}).get(model, 0)


def run_training(runner, settings, systems):
  """Every (system, model) runs_of() times, one fresh process each, one at a time.

  The order of the systems rotates from run to run, so that each takes every
  place in the order (a system always run right after another, or always
  last, could gain or lose from it).
  """
  results = []
  for run in range(max(runs_of(settings, model) for model in settings["models"])):
    shift = run % len(systems)
    for model in settings["models"]:
      if run >= runs_of(settings, model):
        continue
      for key, label, system, k, reference in systems[shift:] + systems[:shift]:
        model_dir = tempfile.mkdtemp(prefix=f"{key}_{model}_", dir=runner.work_dir)
        started = runner.start("train.py", _train_args(system, model, settings["steps"][model],
                                                       k, model_dir),
                               reference, f"{key}_{model}")
        _collect(dict(key=key, label=label, model=model, run=run), started, results)
  return results


# The pairs of systems each model is measured in, as (A, B, the target
# for A's steps/s over B's): estimator_lite against tf.estimator and against the
# loops it wraps. Pairs without a target explain: the in-graph loop against
# itself shows how far two identical systems' ratios spread on this machine;
# on wide_deep, estimator_lite against TF 2.21's bare loop and that loop against
# TF 2.15's split estimator_lite's cost from TensorFlow's.
PAIRS = {
    "linear": (("estimator_lite", "tf_estimator", 1.0), ("estimator_lite", "bare", 0.9),
               ("estimator_lite_k100", "tf_estimator", 3.0),
               ("estimator_lite_k100", "in_graph", 0.9), ("in_graph", "in_graph", None)),
    "mlp": (("estimator_lite", "tf_estimator", 1.0), ("estimator_lite_k100", "in_graph", 0.9)),
    "wide_deep": (("estimator_lite", "tf_estimator", 1.0),
                  ("estimator_lite_k100", "in_graph", 0.9),
                  ("estimator_lite", "bare", None), ("bare", "bare_tf215", None)),
}


def run_pair_round(runner, model, steps, a, b, a_first):
  """One round of a pair: two fresh processes training in turns (workloads/train.py's Turns).

  Args:
    a, b: entries of SYSTEMS.
    a_first: whether A holds the first turn.
  Returns:
    (A's turn rates, B's turn rates, error text or None).
  """
  to_a, to_b = os.pipe(), os.pipe()
  os.write((to_a if a_first else to_b)[1], b"t")
  started = []
  try:
    for side, (key, _, system, k, reference), (read_fd, write_fd) in (
        ("a", a, (to_a[0], to_b[1])), ("b", b, (to_b[0], to_a[1]))):
      args = ["--system", system, "--model", model, "--steps", str(steps),
              "--steps-per-loop", str(k), "--turns", f"{read_fd},{write_fd}"]
      started.append(runner.start("train.py", args, reference, f"pair_{side}_{key}_{model}",
                                  pass_fds=(read_fd, write_fd)))
  finally:
    # Only the two workloads hold the pipes now: when one exits, the other
    # reads end of file and goes on alone instead of waiting for its turn.
    for fd in (*to_a, *to_b):
      os.close(fd)
  outcomes = [Runner.finish(*one[:3], timeout=_TRAIN_TIMEOUT) for one in started]
  errors = [f"{meta[0]}: {error}" for meta, (_, error) in zip((a, b), outcomes) if error]
  if errors:
    return None, None, "; ".join(errors)
  return _turn_rates_of(*(result for result, _ in outcomes))


def run_pair_round_in_process(runner, model, steps, a, b, a_first):
  """One round of a pair in one fresh process, two threads training in turns.

  Same figures as run_pair_round; only for pairs of systems on this venv.
  """
  first, second = (a, b) if a_first else (b, a)
  args = ["--system", first[2], "--model", model, "--steps", str(steps),
          "--steps-per-loop", str(first[3]), "--partner", f"{second[2]}:{second[3]}"]
  results, error = Runner.finish(
      *runner.start("train.py", args, False, f"pair_in_process_{a[0]}_{b[0]}_{model}")[:3],
      timeout=_TRAIN_TIMEOUT)
  if error:
    return None, None, error
  return _turn_rates_of(*(results if a_first else results[::-1]))


def _turn_rates_of(result_a, result_b):
  rates_a, rates_b = result_a["turn_rates"], result_b["turn_rates"]
  if not rates_a or len(rates_a) != len(rates_b):
    return None, None, f"turns do not match: {len(rates_a)} and {len(rates_b)}"
  return rates_a, rates_b, None


def run_pairs(runner, settings, systems):
  """Each model's PAIRS (those whose systems are in `systems`), its pair_rounds rounds each.

  A pair of two systems on this venv also runs its rounds in one process
  (run_pair_round_in_process): the process's own luck (where its threads
  land, below) is then shared by both, and what is left is the code around
  the graph.

  Returns [{model, steps, a, b, target, rounds: [{a_first, rates_a, rates_b,
  ratio (median over the round's turns of A's rate / B's next to it)}],
  median_ratio (over the rounds), rounds_in_process, median_ratio_in_process
  (both None for pairs with tf.estimator), error}].
  """
  by_key = {system[0]: system for system in systems}
  results = []
  for model in settings["models"]:
    steps = settings["pair_steps"].get(model)
    for key_a, key_b, target in PAIRS[model] if steps else ():
      if key_a not in by_key or key_b not in by_key:
        continue
      a, b = by_key[key_a], by_key[key_b]
      result = dict(model=model, steps=steps, a=key_a, b=key_b, target=target, error=None,
                    rounds_in_process=None, median_ratio_in_process=None)
      kinds = [("", "", run_pair_round)]
      if not (a[4] or b[4]):  # neither runs on the reference venv
        kinds.append(("_in_process", " in process", run_pair_round_in_process))
      for suffix, kind, round_fn in kinds:
        rounds, error = _pair_rounds(runner, settings["pair_rounds"][model], model, steps, a, b,
                                     round_fn, kind)
        result["rounds" + suffix] = rounds
        result["median_ratio" + suffix] = (
            statistics.median(r["ratio"] for r in rounds) if rounds else None)
        result["error"] = result["error"] or error
      results.append(result)
  return results


def _pair_rounds(runner, count, model, steps, a, b, round_fn, kind):
  """`count` rounds of round_fn; returns (rounds, error text or None)."""
  rounds = []
  for index in range(count):
    a_first = index % 2 == 0
    rates_a, rates_b, error = round_fn(runner, model, steps, a, b, a_first)
    if error:
      log(f"  {model:9s} {a[0]} / {b[0]}{kind} round {index + 1}: FAILED: {error}")
      return rounds, error
    ratio = statistics.median(x / y for x, y in zip(rates_a, rates_b))
    rounds.append(dict(a_first=a_first, rates_a=rates_a, rates_b=rates_b, ratio=ratio))
    log(f"  {model:9s} {a[0]} / {b[0]}{kind} round {index + 1}: "
        f"{statistics.median(rates_a):.1f} / {statistics.median(rates_b):.1f} steps/s, "
        f"ratio {ratio:.2f}")
  return rounds, None


def run_training_smoke(runner, settings, systems):
  """--smoke: every system once on the linear model, in two concurrent processes.

  Checks the harness end to end in seconds; the timings mean nothing.
  """
  model, steps = "linear", settings["steps"]["linear"]
  groups = {}
  for key, label, system, k, reference in systems:
    groups.setdefault(reference, []).append(
        (dict(key=key, label=label, model=model, run=0), system, k))
  started = []
  for reference, members in groups.items():
    _, system, k = members[0]
    args = _train_args(system, model, steps, k, None)
    for _, other, other_k in members[1:]:
      args += ["--also", f"{other}:{other_k}"]
    metas = [meta for meta, _, _ in members]
    started.append((metas if len(metas) > 1 else metas[0],
                    runner.start("train.py", args, reference, f"smoke_{reference}")))
  results = []
  for meta, proc in started:
    _collect(meta, proc, results)
  return results


def run_evaluator_latency(runner, system, reference, checkpoints):
  """Trainer + evaluator task on one model_dir; returns latencies per checkpoint."""
  save_every = 200
  max_steps = save_every * checkpoints
  model_dir = tempfile.mkdtemp(prefix=f"eval_{system}_", dir=runner.work_dir)
  common = ["--system", system, "--model-dir", model_dir, "--max-steps", str(max_steps),
            "--save-every", str(save_every)]
  evaluator = runner.start("evaluator.py", common + ["--role", "evaluator"], reference,
                           f"evaluator_{system}")
  trainer = runner.start("evaluator.py", common + ["--role", "trainer"], reference,
                         f"trainer_{system}")
  try:
    trained, error = Runner.finish(*trainer[:3], timeout=300)
    evaluated, eval_error = Runner.finish(*evaluator[:3], timeout=120)
  finally:
    stop(trainer[0])
    stop(evaluator[0])
  error = error or eval_error
  if error:
    return dict(system=system, error=error, latencies=[])
  saves = dict(trained["saves"])
  latencies = [(step, wall - saves[step]) for step, wall in evaluated["eval_events"]
               if step in saves and step > 0]
  return dict(system=system, error=None, latencies=latencies,
              evaluated_steps=[s for s, _ in evaluated["eval_events"]])


def _wait_for(path, procs, timeout=180):
  """Waits until `path` exists (False if a process ended or time ran out first)."""
  wait_until = time.time() + timeout
  while not os.path.exists(path):
    if time.time() > wait_until or any(p[0].poll() is not None for p in procs):
      return False
    time.sleep(0.1)
  return True


def _global_rate(samples, start, end):
  """Global steps/s from the chief's (time, global step) samples within [start, end]."""
  inside = [(t, s) for t, s in samples if start <= t <= end]
  if end - start < 1.0 or len(inside) < 2:
    return None, f"the trainers stepped together for only {end - start:.1f} s"
  (t0, s0), (t1, s1) = inside[0], inside[-1]
  return (s1 - s0) / (t1 - t0), None


def run_cluster(runner, system, reference, max_workers, measure_secs):
  """ps + chief, then workers added one at a time: global steps/s with 1..N workers.

  One cluster serves every worker count: with k workers stepping, the chief's
  global step is measured for `measure_secs`, then worker k+1 is started (the
  phase ends at its launch, before its start-up takes CPU from the others).
  Returns one result per worker count.
  """
  ports = {"ps": [free_port()], "chief": [free_port()],
           "worker": [free_port() for _ in range(max_workers)]}
  cluster = {job: [f"localhost:{p}" for p in job_ports] for job, job_ports in ports.items()}
  model_dir = tempfile.mkdtemp(prefix=f"dist_{system}_", dir=runner.work_dir)
  deadline_file = os.path.join(model_dir + "_deadline")

  def start(task_type, index):
    tf_config = json.dumps({"cluster": cluster, "task": {"type": task_type, "index": index}})
    return runner.start("cluster_task.py", ["--system", system, "--tf-config", tf_config,
                                            "--model-dir", model_dir,
                                            "--deadline-file", deadline_file],
                        reference, f"{task_type}{index}_{system}")

  def failed(message):
    return [dict(system=system, workers=w, error=message) for w in range(1, max_workers + 1)]

  procs = []
  phases = []  # (workers, start marker, end time)
  try:
    procs.append(start("ps", 0))
    chief = start("chief", 0)
    procs.append(chief)
    # Workers start once the chief has initialised the variables (its first
    # checkpoint): tf.estimator's worker would otherwise recheck only every
    # 30 s, which says nothing about steps/s.
    if not _wait_for(os.path.join(model_dir, "checkpoint"), procs):
      stop(chief[0])
      with open(chief[2]) as f:
        return failed("chief wrote no checkpoint: " + _tail(f.read()))
    workers = []
    for index in range(max_workers):
      if index:
        phases[-1] = phases[-1][:2] + (time.time(),)
      workers.append(start("worker", index))
      procs.append(workers[-1])
      marker = f"{deadline_file}.started.worker{index}"
      if not _wait_for(marker, procs):
        break
      phases.append((index + 1, os.path.getmtime(marker), None))
      if index + 1 < max_workers:
        time.sleep(measure_secs)
    # Every trainer stops at the deadline.
    with open(deadline_file + ".tmp", "w") as f:
      f.write(repr(time.time() + measure_secs))
    os.replace(deadline_file + ".tmp", deadline_file)
    finished = [Runner.finish(*proc[:3], timeout=measure_secs + 120)
                for proc in workers + [chief]]
  finally:
    for proc in reversed(procs):
      stop(proc[0])
  errors = [e for _, e in finished if e]
  if errors:
    return failed(errors[0])
  trainers = [r for r, _ in finished]
  chief_result = trainers[-1]
  end_all = min(t["last_wall"] for t in trainers)
  results = []
  for workers_stepping, phase_start, phase_end in phases:
    # The phase starts when its newest worker has made its first step.
    start_all = max([phase_start, chief_result["first_wall"]] +
                    [t["first_wall"] for t in trainers[:workers_stepping]])
    rate, error = _global_rate(chief_result["samples"], start_all, phase_end or end_all)
    results.append(dict(system=system, workers=workers_stepping, error=error,
                        global_steps_per_sec=rate,
                        window_s=(phase_end or end_all) - start_all))
  return results + failed("worker did not start")[len(results):]


def run_grpc_floor(runner, system, reference, steps):
  """Bare Session.run against an in-process ps with this system's TensorFlow."""
  started = runner.start("grpc_floor.py", ["--steps", str(steps)], reference,
                         f"grpc_floor_{system}")
  result, error = Runner.finish(*started[:3], timeout=_TRAIN_TIMEOUT)
  return dict(system=system, error=error,
              steps_per_sec=result["steps_per_sec"] if result else None,
              tf_version=result["tf_version"] if result else None)


def _run_script(python, reference, script, args):
  proc = subprocess.run([python, os.path.join(HERE, script), *args], capture_output=True,
                        text=True, env=child_env(reference), cwd=REPO, timeout=_TRAIN_TIMEOUT,
                        check=False)
  if proc.returncode != 0:
    return f"{script} failed (exit {proc.returncode}):\n{_tail(proc.stdout + proc.stderr)}"
  return proc.stdout.strip()


def run_profile(runner, steps):
  """cProfile of estimator_lite on the linear model (profile_linear.py's report)."""
  return _run_script(runner.python, False, "profile_linear.py",
                     ["--steps", str(steps), "--top", "22"])


def run_on_each_tensorflow(runner, script, args):
  """`script`'s report with this venv's TensorFlow, then the reference's (when there is one)."""
  pythons = [(runner.python, False)] + ([(runner.ref_python, True)] if runner.ref_python else [])
  return "\n\n".join(_run_script(python, reference, script, args)
                      for python, reference in pythons)


# -- machine -------------------------------------------------------------------
def _cpu_model():
  try:
    with open("/proc/cpuinfo") as f:
      for line in f:
        if line.startswith("model name"):
          return line.split(":", 1)[1].strip()
  except OSError:
    pass
  return platform.processor() or "unknown"


def _ram_gib():
  try:
    with open("/proc/meminfo") as f:
      for line in f:
        if line.startswith("MemTotal:"):
          return int(line.split()[1]) / 2**20
  except OSError:
    pass
  return None


def machine_info():
  return dict(nproc=os.cpu_count(), cpu=_cpu_model(), ram_gib=_ram_gib(),
              platform=platform.platform(), python=platform.python_version())


def load_average():
  try:
    return os.getloadavg()
  except OSError:
    return None


# -- main ----------------------------------------------------------------------
def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  mode = parser.add_mutually_exclusive_group()
  mode.add_argument("--quick", action="store_true", help="one short run of everything")
  mode.add_argument("--smoke", action="store_true",
                    help="seconds: linear model only, no cluster/evaluator/profile")
  parser.add_argument("--runs", type=int, help="runs per (system, model); default 5 (full)")
  parser.add_argument("--no-ref", action="store_true", help="skip tf.estimator 2.15")
  parser.add_argument("--parts", default="train,pairs,evaluator,distributed,profile",
                      help="comma-separated subset of train,pairs,evaluator,distributed,profile")
  parser.add_argument("--models", help="comma-separated subset of " + ",".join(MODELS))
  parser.add_argument("--dist-workers", type=int,
                      help="measure ps clusters with 1 .. this many workers (default 2)")
  parser.add_argument("--results-dir",
                      help="where RESULTS.md, results.json and steps_per_sec.png go; "
                      "default benchmarks/ for a full run, a temporary directory otherwise")
  parser.add_argument("--keep-work-dir", action="store_true",
                      help="keep the model_dirs and the workload logs")
  args = parser.parse_args(argv)
  mode_name = "smoke" if args.smoke else "quick" if args.quick else "full"
  settings = dict(PROFILES[mode_name])
  if args.runs:
    settings["runs"] = args.runs
  if args.models:
    settings["models"] = tuple(m for m in MODELS if m in args.models.split(","))
  parts = set(args.parts.split(","))
  if args.dist_workers is not None:
    settings["dist_workers"] = args.dist_workers
  results_dir = args.results_dir or (HERE if mode_name == "full" else
                                     tempfile.mkdtemp(prefix="estimator_lite_bench_"))
  os.makedirs(results_dir, exist_ok=True)
  command = " ".join(["python benchmarks/run.py", *(sys.argv[1:] if argv is None else argv)])
  started = time.time()
  load_before = load_average()

  ref_python = None
  if not args.no_ref:
    try:
      ref_python = reference_python(create=not args.smoke)
    except Exception as e:  # pylint: disable=broad-except
      log(f"tf.estimator 2.15 skipped: the reference venv is unusable: {e}")
    if ref_python is None:
      log("tf.estimator 2.15 skipped: no reference venv (python tests/reference/ref_env.py "
          "creates it)")
  systems = [s for s in SYSTEMS if ref_python or not s[4]]
  work_dir = tempfile.mkdtemp(prefix="estimator_lite_bench_work_")
  runner = Runner(sys.executable, ref_python, work_dir)
  log(f"mode {mode_name}; results to {results_dir}; work dir {work_dir}; load {load_before}")
  data = dict(mode=mode_name, command=command, machine=machine_info(),
              date=datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
              load_before=load_before, systems=[s[:2] for s in systems],
              settings={k: v for k, v in settings.items() if k != "models"},
              models=list(settings["models"]))
  try:
    log("training runs (steps/s, time to first step, train(), checkpoint save, export)")
    data["train"] = []
    if "train" in parts:
      train_fn = run_training_smoke if args.smoke else run_training
      data["train"] = train_fn(runner, settings, systems)
    data["pairs"] = []
    if "pairs" in parts and settings["pair_rounds"]:
      log("pairs of systems training in turns, 100 steps a turn")
      data["pairs"] = run_pairs(runner, settings, systems)
    data["evaluator"] = []
    if settings["eval_ckpts"] and "evaluator" in parts:
      log("evaluator latency (checkpoint written -> eval events written)")
      for key, _, system, _, reference in systems:
        if key in ("tf_estimator", "estimator_lite"):
          result = run_evaluator_latency(runner, system, reference, settings["eval_ckpts"])
          log(f"  {system}: {result['error'] or [round(l, 3) for _, l in result['latencies']]}")
          data["evaluator"].append(result)
    data["distributed"] = []
    for run in range(settings["dist_runs"] if "distributed" in parts else 0):
      for key, _, system, _, reference in systems:
        if key in ("tf_estimator", "estimator_lite") and settings["dist_workers"]:
          log(f"async ps training: {system}, chief + 1..{settings['dist_workers']} "
              f"worker(s), run {run + 1}")
          for result in run_cluster(runner, system, reference, settings["dist_workers"],
                                    settings["dist_secs"]):
            result["run"] = run
            log(f"  {result['workers']} worker(s): "
                f"{result['error'] or round(result['global_steps_per_sec'], 1)}")
            data["distributed"].append(result)
    measure_floor = "distributed" in parts and settings["dist_runs"]
    for key, _, system, _, reference in systems:
      if key in ("tf_estimator", "estimator_lite") and measure_floor:
        result = run_grpc_floor(runner, system, reference, settings["floor_steps"])
        log(f"bare Session.run over gRPC, {system}'s TensorFlow: "
            f"{result['error'] or round(result['steps_per_sec'], 1)}")
        data.setdefault("grpc_floor", []).append(result)
    if settings["profile_steps"] and "profile" in parts:
      log("cProfile of estimator_lite, linear model")
      data["profile"] = run_profile(runner, settings["profile_steps"])
      log("step costs, layer by layer")
      data["step_costs"] = run_on_each_tensorflow(
          runner, "step_costs.py", ["--steps", str(settings["profile_steps"] // 2)])
      log("op costs of the wide_deep graph, each TensorFlow")
      data["op_costs"] = run_on_each_tensorflow(runner, "op_costs.py", ["--model", "wide_deep"])
  finally:
    if not args.keep_work_dir:
      shutil.rmtree(work_dir, ignore_errors=True)
  data["load_after"] = load_average()
  data["wall_s"] = time.time() - started
  paths = report.write_all(data, results_dir)
  print(report.summary_text(data))
  log(f"done in {data['wall_s']:.0f} s: " + ", ".join(paths))
  failures = [r for r in data["train"] + data["pairs"] if r["error"]]
  return 1 if failures else 0


if __name__ == "__main__":
  sys.exit(main())
