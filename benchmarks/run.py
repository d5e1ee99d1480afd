"""The benchmark: tf.estimator 2.15, estimator_lite and bare TensorFlow loops, in fresh processes.

    python benchmarks/run.py            # full run (~30 min): writes benchmarks/RESULTS.md,
                                        # benchmarks/results.json, benchmarks/steps_per_sec.png
    python benchmarks/run.py --quick    # one short run of everything (~4 min), to a temp dir
    python benchmarks/run.py --smoke    # seconds: the harness still works (used by a test)
    python benchmarks/run.py --report-from benchmarks/results.json  # the report, from saved figures
    python benchmarks/run.py TOOL [--steps N --rounds N --model M --top N]   # one measure:
      ab-fixes    estimator_lite with its per-step fixes undone, before/after (ab_fixes.py)
      step-costs  a step's cost layer by layer, each TensorFlow (workload.step_costs)
      op-costs    a graph's op times per step, each TensorFlow (workload.op_costs)

Every measurement is a fresh process (workload.py), one at a time; TF 2.15
runs with the reference venv's python (tests/reference/ref_env.py; created
when missing, except with --smoke, which then leaves it out). Parameter-server
clusters are measured by benchmarks/ps_cluster.py (on benchmarks/cluster.py),
not here.
"""
import argparse
import datetime
import importlib.util
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import ab_fixes  # pylint: disable=g-import-not-at-top,wrong-import-position
import plan  # pylint: disable=g-import-not-at-top,wrong-import-position
import report  # pylint: disable=g-import-not-at-top,wrong-import-position

TOOL_OPTIONS = {"steps": int, "rounds": int, "model": str, "top": int}


def log(message):
  print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def reference_python(create):
  """The reference venv's python: created when missing if `create`, else None when missing."""
  spec = importlib.util.spec_from_file_location(
      "ref_env", os.path.join(REPO, "tests", "reference", "ref_env.py"))
  ref_env = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(ref_env)
  if create:
    return ref_env.ensure_ref_python(log=log)
  return ref_env.venv_python() if os.path.exists(ref_env.venv_python()) else None


def child_env(reference, lite_root=None):
  """A workload's environment; `lite_root`: an estimator_lite checkout in place of this one."""
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONUNBUFFERED="1")
  env.pop("TF_CONFIG", None)
  if reference:
    env.pop("PYTHONPATH", None)
    # Set by estimator_lite in a parent that imported it (pytest): the
    # reference venv has no tf-keras, and TF 2.15's tf.keras would fail.
    env.pop("TF_USE_LEGACY_KERAS", None)
  else:  # this checkout's estimator_lite, whatever the venv's install points at
    env["PYTHONPATH"] = os.pathsep.join([lite_root or REPO, env.get("PYTHONPATH", "")]).rstrip(
        os.pathsep)
  return env


def stop(proc):
  """Ends a process this harness started (and waits for it)."""
  if proc.poll() is None:
    proc.terminate()
    try:
      proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
      proc.kill()
      proc.wait()


class Runner:
  """Starts `PROGRAM ROLE KWARGS_JSON OUT_JSON` processes and reads OUT_JSON.

  PROGRAM is workload.py unless `program` (a script and its leading arguments)
  names another; a `lite_root` in KWARGS goes first on the process's
  PYTHONPATH (workload.run checks it).
  """

  def __init__(self, python, ref_python, work_dir, *, program=(os.path.join(HERE, "workload.py"),)):
    self.python, self.ref_python, self.work_dir, self._count = python, ref_python, work_dir, 0
    self.program = tuple(program)

  def start(self, role, kwargs, reference=False, name=None, pass_fds=(), env=None):
    """Returns (Popen, out path, log path, launch time); `env`: changes to child_env's
    environment, where None removes a variable."""
    self._count += 1
    out, log_path = (os.path.join(self.work_dir, f"{self._count:04d}_{name or role}{ext}")
                     for ext in (".json", ".log"))
    cmd = [self.ref_python if reference else self.python, *self.program, role, json.dumps(kwargs),
           out]
    environ = child_env(reference, kwargs.get("lite_root"))
    for key, value in (env or {}).items():
      if value is None:
        environ.pop(key, None)
      else:
        environ[key] = value
    launch = time.time()
    with open(log_path, "w") as log_file:
      proc = subprocess.Popen(cmd, stdout=log_file, stderr=subprocess.STDOUT, cwd=REPO,
                              env=environ, pass_fds=pass_fds)
    return proc, out, log_path, launch

  @staticmethod
  def finish(started, timeout=600):
    """Waits for a started process; returns (its result or None, error text or None)."""
    proc, out, log_path, _ = started
    try:
      proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
      stop(proc)
      return None, f"timed out after {timeout} s"
    if proc.returncode != 0 or not os.path.exists(out):
      with open(log_path) as f:
        return None, f"exit {proc.returncode}: " + "\n".join(f.read().strip().splitlines()[-15:])
    with open(out) as f:
      return json.load(f), None

  def on_each_tensorflow(self, role, **kwargs):
    """The texts workload.py's `role` returns with this TensorFlow and TF 2.15, or why not."""
    outcomes = [self.finish(self.start(role, kwargs, reference))
                for reference in (False, True)[:1 + bool(self.ref_python)]]
    return "\n\n".join(text or f"{role} failed: {error}" for text, error in outcomes)


def train_kwargs(system, model, steps, **more):
  return dict(system=system.kind, model=model, steps=steps, steps_per_loop=system.steps_per_loop,
              **(system.options or {}), **more)


def run_training(runner, settings, systems, all_at_once=False):
  """Every (system, model) `runs` times, a fresh process each, one at a time (`all_at_once`:
  together, for --smoke, whose timings mean nothing). The order of the systems rotates from
  run to run, so that none is always right after the same one, or always last."""
  results = []

  def collect(system, model, run, started):
    result, error = Runner.finish(started)
    if result:
      result["launch_to_first_step_s"] = result["first_step_wall"] - started[3]
    log(f"  {system.label:25s} {model:9s} run {run + 1}: "
        + (f"{result['steps_per_sec']:9.1f} steps/s" if result else f"FAILED: {error}"))
    results.append(dict(key=system.key, label=system.label, model=model, run=run,
                        result=result, error=error))

  for run in range(settings["runs"]):
    for model in settings["models"]:
      started = []
      for system in systems[run % len(systems):] + systems[:run % len(systems)]:
        model_dir = tempfile.mkdtemp(prefix=f"{system.key}_{model}_", dir=runner.work_dir)
        export = (system.kind in ("tf_estimator", "estimator_lite") and
                  system.steps_per_loop == 1 and not system.options)
        started.append((system, model, run, runner.start("train", train_kwargs(
            system, model, settings["steps"][model], model_dir=model_dir, export=export),
                                                          system.reference, system.key)))
        if not all_at_once:
          collect(*started.pop())
      for one in started:
        collect(*one)
  return results


def run_pair_round(runner, model, steps, a, b, a_first):
  """One round of a pair, two fresh processes training in turns (workload._Clock), the token
  over two pipes; returns (A's turn rates, B's turn rates, error text or None)."""
  to_a, to_b = os.pipe(), os.pipe()
  os.write((to_a if a_first else to_b)[1], b"t")
  try:
    started = [runner.start("train", train_kwargs(system, model, steps, turns=fds),
                            system.reference, f"pair_{side}_{system.key}", pass_fds=fds)
               for side, system, fds in (("a", a, (to_a[0], to_b[1])),
                                         ("b", b, (to_b[0], to_a[1])))]
  finally:
    # Only the workloads hold the pipes now: when one exits, the other reads
    # end of file and goes on alone instead of waiting for its turn.
    for fd in (*to_a, *to_b):
      os.close(fd)
  (result_a, error_a), (result_b, error_b) = [Runner.finish(one) for one in started]
  if error_a or error_b:
    return None, None, "; ".join(f"{s.key}: {e}" for s, e in ((a, error_a), (b, error_b)) if e)
  rates_a, rates_b = result_a["turn_rates"], result_b["turn_rates"]
  if not rates_a or len(rates_a) != len(rates_b):
    return None, None, f"turns do not match: {len(rates_a)} and {len(rates_b)}"
  return rates_a, rates_b, None


def run_pairs(runner, settings, systems, pairs_of=plan.pairs):
  """pairs_of(model) for each model, pair_rounds rounds each, alternating which side starts:
  [{model, steps, a, b, target, rounds: [{a_first, rates_a, rates_b, ratio (median over the
  round's turns of A's rate / B's next to it)}], median_ratio, error}]."""
  by_key, results = {system.key: system for system in systems}, []
  for model in settings["models"]:
    for key_a, key_b, target in pairs_of(model):
      if key_a not in by_key or key_b not in by_key:
        continue
      pair = dict(model=model, steps=settings["pair_steps"][model], a=key_a, b=key_b,
                  target=target, error=None, rounds=[], median_ratio=None)
      for index in range(settings["pair_rounds"][model]):
        rates_a, rates_b, error = run_pair_round(runner, model, pair["steps"], by_key[key_a],
                                                 by_key[key_b], index % 2 == 0)
        what = f"  {model:9s} {key_a} / {key_b} round {index + 1}:"
        if error:
          log(f"{what} FAILED: {error}")
          pair["error"] = error
          break
        ratio = statistics.median(x / y for x, y in zip(rates_a, rates_b))
        pair["rounds"].append(dict(a_first=index % 2 == 0, rates_a=rates_a, rates_b=rates_b,
                                   ratio=ratio))
        log(f"{what} {statistics.median(rates_a):.1f} / {statistics.median(rates_b):.1f} "
            f"steps/s, ratio {ratio:.2f}")
      if pair["rounds"]:
        pair["median_ratio"] = statistics.median(r["ratio"] for r in pair["rounds"])
      results.append(pair)
  return results


def run_evaluator_latency(runner, system, checkpoints):
  """A trainer and an evaluator task on one model_dir: eval events written - checkpoint written."""
  common = dict(system=system.kind, max_steps=200 * checkpoints, save_every=200,
                model_dir=tempfile.mkdtemp(prefix="eval_", dir=runner.work_dir))
  evaluator = runner.start("evaluator", common, system.reference, f"evaluator_{system.kind}")
  trainer = runner.start("trainer", common, system.reference, f"trainer_{system.kind}")
  try:
    trained, error = Runner.finish(trainer, timeout=300)
    evaluated, eval_error = Runner.finish(evaluator, timeout=120)
  finally:
    stop(trainer[0])
    stop(evaluator[0])
  if error or eval_error:
    return dict(system=system.kind, error=error or eval_error, latencies=[])
  saves, events = dict(trained["saves"]), evaluated["eval_events"]
  return dict(system=system.kind, error=None, evaluated_steps=[s for s, _ in events],
              latencies=[(s, wall - saves[s]) for s, wall in events if s in saves and s > 0])


def run_benchmark(runner, systems, settings, parts, smoke):
  """Every part asked for; returns the results (results.json's content)."""
  data = dict(systems=[s[:2] for s in systems], models=list(settings["models"]),
              settings={k: v for k, v in settings.items() if k != "models"},
              train=[], pairs=[], evaluator=[])
  if "train" in parts:
    log("training runs (steps/s, time to first step, train(), checkpoint save, export)")
    data["train"] = run_training(runner, settings, systems, all_at_once=smoke)
  if "pairs" in parts:
    log("pairs of systems training in turns, 100 steps a turn")
    data["pairs"] = run_pairs(runner, settings, systems)
  estimators = [s for s in systems if s.key in ("tf_estimator", "estimator_lite")]
  for system in estimators if settings["eval_ckpts"] and "evaluator" in parts else ():
    result = run_evaluator_latency(runner, system, settings["eval_ckpts"])
    log(f"evaluator latency, {system.kind}: "
        f"{result['error'] or [round(l, 3) for _, l in result['latencies']]}")
    data["evaluator"].append(result)
  if settings["cost_steps"] and "costs" in parts:
    log("step costs and op costs, with each TensorFlow")
    data["step_costs"] = runner.on_each_tensorflow("step_costs", steps=settings["cost_steps"])
    data["op_costs"] = runner.on_each_tensorflow("op_costs", model="wide_deep")
  return data


def run_tool(tool, options, runner):
  """One measure on its own, with the tool options given; prints its report."""
  if tool != "ab-fixes":
    print(runner.on_each_tensorflow(tool.replace("-", "_"), **options))
    return

  def train(system, model, steps, undo):
    result, error = Runner.finish(runner.start("train", dict(
        system=system, model=model, steps=steps, undo=undo,
        model_dir=tempfile.mkdtemp(dir=runner.work_dir)), name=f"ab_{system}"))
    if error:
      raise SystemExit(f"{system} (undo {undo!r}) failed: {error}")
    return result
  print(ab_fixes.measure(train, **options))


def _machine():
  with open("/proc/cpuinfo") as f:
    cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "?")
  return dict(nproc=os.cpu_count(), cpu=cpu, platform=platform.platform(),
              ram_gib=os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30,
              python=platform.python_version())


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("tool", nargs="?", choices=("ab-fixes", "step-costs", "op-costs"))
  mode = parser.add_mutually_exclusive_group()
  mode.add_argument("--quick", action="store_true", help="one short run of everything")
  mode.add_argument("--smoke", action="store_true", help="seconds: the linear model only, no "
                    "evaluator or costs")
  mode.add_argument("--report-from", metavar="RESULTS_JSON", help="write the report again "
                    "from saved results (to --results-dir, default the JSON's directory)")
  parser.add_argument("--runs", type=int, help="runs per (system, model); default 5 (full)")
  parser.add_argument("--no-ref", action="store_true", help="leave out TF 2.15 (tf.estimator)")
  parser.add_argument("--parts", default="train,pairs,evaluator,costs",
                      help="comma-separated subset of train,pairs,evaluator,costs")
  parser.add_argument("--models", help="comma-separated subset of " + ",".join(plan.MODELS))
  parser.add_argument("--results-dir", help="where RESULTS.md, results.json and the chart go; "
                      "default benchmarks/ for a full run of everything, else a temporary one")
  for name, kind in TOOL_OPTIONS.items():
    parser.add_argument("--" + name.replace("_", "-"), type=kind, help="a TOOL's option")
  args = parser.parse_args(argv)
  options = {name: getattr(args, name) for name in TOOL_OPTIONS if getattr(args, name) is not None}
  if options and not args.tool:
    parser.error(f"{', '.join(options)}: options of a TOOL")
  if args.report_from:
    with open(args.report_from) as f:
      data = json.load(f)
    paths = report.write_all(data, args.results_dir or os.path.dirname(args.report_from))
    print(report.summary_text(data) + "\nwritten: " + ", ".join(paths))
    return 0
  mode_name = "smoke" if args.smoke else "quick" if args.quick else "full"
  settings = dict(plan.PROFILES[mode_name], runs=args.runs or plan.PROFILES[mode_name]["runs"])
  settings["models"] = tuple(m for m in settings["models"] if m in (args.models or m).split(","))
  narrowed = args.runs or args.models or args.no_ref or args.parts != parser.get_default("parts")
  results_dir = args.results_dir or (HERE if mode_name == "full" and not narrowed else
                                     tempfile.mkdtemp(prefix="estimator_lite_bench_"))
  ref_python = None
  try:
    ref_python = None if args.no_ref else reference_python(create=not args.smoke)
  except Exception as e:  # pylint: disable=broad-except
    log(f"the reference venv is unusable: {e}")
  if ref_python is None:
    log("tf.estimator 2.15 and TF 2.15 left out (python tests/reference/ref_env.py creates "
        "the reference venv)")
  systems = [s for s in plan.SYSTEMS if ref_python or not s.reference]
  runner = Runner(sys.executable, ref_python, tempfile.mkdtemp(prefix="estimator_lite_bench_work_"))
  started, load_before = time.time(), os.getloadavg()
  try:
    if args.tool:
      return run_tool(args.tool, options, runner) or 0
    log(f"mode {mode_name}; results to {results_dir}; work dir {runner.work_dir}")
    data = dict(mode=mode_name, machine=_machine(), load_before=load_before,
                command=" ".join(["python benchmarks/run.py",
                                  *(sys.argv[1:] if argv is None else argv)]),
                date=datetime.datetime.now().astimezone().isoformat(timespec="seconds"))
    data.update(run_benchmark(runner, systems, settings, set(args.parts.split(",")), args.smoke))
  finally:  # the model_dirs and the logs (a failure's error shows its log's tail)
    shutil.rmtree(runner.work_dir, ignore_errors=True)
  data.update(load_after=os.getloadavg(), wall_s=time.time() - started)
  os.makedirs(results_dir, exist_ok=True)
  paths = report.write_all(data, results_dir)
  print(report.summary_text(data))
  log(f"done in {data['wall_s']:.0f} s: " + ", ".join(paths))
  return 1 if any(r["error"] for r in data["train"] + data["pairs"]) else 0


if __name__ == "__main__":
  sys.exit(main())
