"""Where a cluster task's time goes, from process start to first step and from last step to exit.

    python benchmarks/startup.py                       # 3 rounds, both systems (~4 min on 2 cores)
    python benchmarks/startup.py --rounds 1 --steps 8000 --out benchmarks/startup.json
    python benchmarks/startup.py --steps 200 --rounds 1 --systems estimator_lite  # a smoke run

The job: one ps, a chief, a worker and an evaluator, each a fresh process
started through benchmarks/cluster.py, running the same program under either
system: `train_and_evaluate` of the linear model of benchmarks/models.py,
asynchronous between-graph training to TrainSpec(max_steps=--steps), and an
EvalSpec whose LatestExporter exports the final evaluation's checkpoint.

  tf_estimator    tf.estimator 2.15 (reference venv, TF 2.15): `api = tf.estimator`
  estimator_lite  this checkout on TF 2.21 (this venv): `import estimator_lite as api`

Both run with the default RunConfig (model_dir aside): a user's start-up,
the worker's start-up delay and the evaluator's polling included. The EvalSpec
is EvalSpec(input_fn, steps=100, exporters=[LatestExporter], start_delay_secs=0,
throttle_secs=1) in both: tf.estimator's defaults (start_delay_secs=120,
throttle_secs=600) would make the evaluator wait two minutes and then evaluate
the last checkpoint only, so the job would end minutes after training did;
with no delay and a 1 s throttle the evaluator evaluates each checkpoint as it
comes (RunConfig's default save_checkpoints_secs=600 writes two here: step 0
at the start, --steps at the end), exports after the last one and exits, and
the job ends when training does. The evaluations a run made are counted and
shown, so that a table compares the same work.

Each task records time.time() and its CPU seconds (time.process_time(): all
its threads) around its own imports and tf.distribute.Server's construction,
a hook records the first and the last step, and a logging.Handler on the
"tensorflow" logger records every record's time and message (both systems log
tf.estimator's messages); boundary_finders() maps them to phase boundaries.
The process start comes from /proc/self/stat; the exit, and the CPU seconds
then, from the harness (polling every 20 ms). The ps never exits (it serves
until stopped); the job ends when chief, worker and evaluator have exited.
A phase's wall time counts whatever else the machine runs (the job's own four
processes share its cores); its CPU seconds are the task's own work.

Each round also times `import tensorflow` of each version alone, in fresh
processes (--imports of them a version, interleaved), so that the end-to-end
job time can be shown less TensorFlow's own import difference: the bare
imports' difference, and the difference of the chief's import within the job
(where four processes import at once).

Both systems import from bytecode: compile_sources() writes this checkout's
before the rounds (see _python_for).

Rounds interleave the systems, each round in another order; a figure is the
median over rounds [min-max]. Output: JSON (--out, default
benchmarks/startup.json) and markdown tables on stdout.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import cluster as harness  # pylint: disable=g-import-not-at-top,wrong-import-position

SYSTEMS: Dict[str, Tuple[str, bool]] = {  # name: (label, runs on the reference venv)
    "tf_estimator": ("tf.estimator 2.15", True),
    "estimator_lite": ("estimator_lite", False),
}
JOBS = {"ps": 1, "chief": 1, "worker": 1, "evaluator": 1}
ROLES = ("ps", "chief", "worker", "evaluator")
FINISHING = ("chief0", "worker0", "evaluator0")  # the tasks whose exit ends the job
EVAL_STEPS = 100
THROTTLE_SECS = 1
JOB_TIMEOUT_SECS = 600
EXIT_POLL_SECS = 0.02
IMPORT_TIMEOUT_SECS = 120


# ---------------------------------------------------------------------------
# One task of the job (a fresh process, under either TensorFlow).

class _Events:
  """The task's record: (time, what, message) lines, appended and flushed as they come.

  Written as it goes, so that the ps, which is stopped rather than exits,
  leaves its record too.
  """

  def __init__(self, path: str) -> None:
    self._file = open(path, "a", buffering=1)

  def mark(self, what: str, at: Optional[float] = None, message: str = "",
           cpu: Optional[float] = None) -> None:
    """Records `what` at `at` (default now), with the process's CPU seconds then."""
    self._file.write(json.dumps({"t": time.time() if at is None else at, "what": what,
                                 "msg": message,
                                 "cpu": time.process_time() if cpu is None else cpu}) + "\n")


def _process_start_time() -> float:
  """This process's start (time.time() scale) from /proc: its start tick after boot."""
  with open("/proc/self/stat") as f:
    start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
  with open("/proc/stat") as f:
    boot = next(int(line.split()[1]) for line in f if line.startswith("btime"))
  return boot + start_ticks / os.sysconf("SC_CLK_TCK")


def _task(spec: Dict[str, Any]) -> None:
  python_ready, python_ready_cpu = time.time(), time.process_time()
  events = _Events(spec["events"])
  events.mark("process_start", _process_start_time(), cpu=0.0)
  events.mark("python_ready", python_ready, cpu=python_ready_cpu)
  import logging  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  events.mark("tensorflow_imported")

  class Recorder(logging.Handler):

    def emit(self, record: logging.LogRecord) -> None:
      events.mark("log", record.created, record.getMessage())

  tf.get_logger().addHandler(Recorder())
  tf.get_logger().setLevel("INFO")
  _record_server_start(tf, events)
  if spec["reference"]:
    api = tf.estimator
    api.Estimator  # pylint: disable=pointless-statement  # tf.estimator loads lazily
  else:
    import estimator_lite as api  # pylint: disable=g-import-not-at-top
  events.mark("api_imported")
  sys.path.insert(0, HERE)
  import models  # pylint: disable=g-import-not-at-top
  model = models.MODELS["linear"]
  input_fn = models.make_input_fn(model)
  estimator = api.Estimator(models.make_model_fn(model, api),
                            config=api.RunConfig(model_dir=spec["model_dir"]))
  exporter = api.LatestExporter("latest", models.serving_input_receiver_fn(model, api))
  api.train_and_evaluate(
      estimator,
      api.TrainSpec(input_fn, max_steps=spec["steps"], hooks=[_step_hook(tf, events)]),
      api.EvalSpec(input_fn, steps=EVAL_STEPS, exporters=[exporter], start_delay_secs=0,
                   throttle_secs=THROTTLE_SECS))
  events.mark("main_returned")


def _record_server_start(tf: Any, events: _Events) -> None:
  """Marks when each tf.distribute.Server is constructed (started): both systems make one."""
  server_class = tf.distribute.Server
  construct = server_class.__init__

  def recording_init(self: Any, *args: Any, **kwargs: Any) -> None:
    events.mark("server_construct")
    construct(self, *args, **kwargs)
    events.mark("server_started")

  server_class.__init__ = recording_init


def _step_hook(tf: Any, events: _Events) -> Any:
  """A hook marking the first step's end and, at the session's end, the last step's."""

  class StepHook(tf.compat.v1.train.SessionRunHook):

    def __init__(self) -> None:
      self._last: Optional[Tuple[float, float]] = None

    def after_run(self, run_context: Any, run_values: Any) -> None:
      if self._last is None:
        events.mark("first_step")
      self._last = time.time(), time.process_time()

    def end(self, session: Any) -> None:
      if self._last is not None:
        events.mark("last_step", self._last[0], cpu=self._last[1])

  return StepHook()


# ---------------------------------------------------------------------------
# Phase boundaries: a task's marks and log messages, by name.

Event = Dict[str, Any]  # {"t": time.time(), "cpu": the process's CPU seconds, "what", "msg"}
Finder = Callable[[List[Event]], Optional[Event]]


def _mark(what: str) -> Finder:
  """Finds the task's own mark `what`."""
  return lambda events: next((e for e in events if e["what"] == what), None)


def _message(pattern: str, last: bool = False) -> Finder:
  """Finds the first (or last) log record whose message matches `pattern`."""
  regex = re.compile(pattern)

  def find(events: List[Event]) -> Optional[Event]:
    found = [e for e in events if e["what"] == "log" and regex.search(e["msg"])]
    return (found[-1] if last else found[0]) if found else None

  return find


def _final_checkpoint(steps: int, prefix: str) -> Finder:
  """The last log record `prefix` N with N >= steps: asynchronous training may end past max_steps."""
  regex = re.compile("^" + re.escape(prefix) + r" (\d+)")

  def find(events: List[Event]) -> Optional[Event]:
    found = [e for e in events if e["what"] == "log"
             and (m := regex.search(e["msg"])) and int(m.group(1)) >= steps]
    return found[-1] if found else None

  return find


def boundary_finders(steps: int) -> Tuple[Tuple[str, Tuple[str, ...], Finder], ...]:
  """The boundaries of a task's phases, in order: (name, roles that have it, finder).

  A phase is the time from one boundary a task has to its next one.

  Args:
    steps: the job's max_steps (the final checkpoint's step).

  Returns:
    The boundaries: the task's own marks (imports, server, steps, exit) and
    tf.estimator's log messages, which estimator_lite logs too.
  """
  trainers = ("chief", "worker")
  return (
      ("process start", ROLES, _mark("process_start")),
      ("Python ready", ROLES, _mark("python_ready")),
      ("`import tensorflow` done", ROLES, _mark("tensorflow_imported")),
      ("estimator API imported", ROLES, _mark("api_imported")),
      ("server starts", ROLES[:3], _mark("server_construct")),
      ("server started", ROLES[:3], _mark("server_started")),
      ("graph finalized", trainers, _message(r"^Graph was finalized")),
      ("session ready (local_init_op done)", trainers, _message(r"^Done running local_init_op")),
      ("first checkpoint starts", ("chief",), _message(r"^Saving checkpoints for 0 ")),
      ("first step done", trainers, _mark("first_step")),
      ("last step done", trainers, _mark("last_step")),
      ("final checkpoint starts", ("chief",), _final_checkpoint(steps, "Saving checkpoints for")),
      ("final evaluation starts", ("evaluator",), _message(r"^Starting evaluation at", last=True)),
      ("final evaluation done", ("evaluator",), _message(r"^Finished evaluation at", last=True)),
      ("export written", ("evaluator",), _message(r"^SavedModel written to", last=True)),
      ("train_and_evaluate returned", ROLES[1:], _mark("main_returned")),
      ("process exit", ROLES[1:], _mark("exit")),
  )


# ---------------------------------------------------------------------------
# The harness: jobs, bare imports, rounds.

def run_job(system: str, steps: int, keep: bool = False) -> Dict[str, Any]:
  """Runs one job of `system` to its end.

  Args:
    system: a key of SYSTEMS.
    steps: TrainSpec.max_steps.
    keep: keep the job's temp dir (logs, model_dir, records) rather than remove it.

  Returns:
    {"tasks": {task name: [event, ...]}, "job_start": the first process start}:
    each event {"t": time.time(), "cpu": the task's CPU seconds, "what": ...,
    "msg": ...}; the finishing tasks' exits are events "exit".

  Raises:
    RuntimeError: a task failed, or the job ran past JOB_TIMEOUT_SECS.
  """
  python, env = _python_for(system)
  with harness.Cluster(JOBS, prefix=f"startup_{system}_") as job:
    try:
      for role in ROLES:
        spec = {"reference": SYSTEMS[system][1], "steps": steps,
                "model_dir": os.path.join(job.dir, "model"),
                "events": os.path.join(job.dir, f"{role}0.events.jsonl")}
        job.start(role, 0, [python, os.path.abspath(__file__), "--task", json.dumps(spec)], env)
      exits = job.wait_exits(FINISHING, JOB_TIMEOUT_SECS, poll=EXIT_POLL_SECS)
      tasks = {f"{role}0": _read_events(os.path.join(job.dir, f"{role}0.events.jsonl"))
               for role in ROLES}
    finally:
      job.stop()
      if not keep:
        shutil.rmtree(job.dir, ignore_errors=True)
  for name, (at, cpu) in exits.items():
    tasks[name].append({"t": at, "what": "exit", "msg": "", "cpu": cpu})
  return {"tasks": tasks, "job_start": min(event["t"] for events in tasks.values()
                                           for event in events if event["what"] == "process_start")}


def _read_events(path: str) -> List[Dict[str, Any]]:
  try:
    with open(path) as f:
      return [json.loads(line) for line in f if line.endswith("\n")]
  except OSError:
    return []


def _python_for(system: str) -> Tuple[str, Dict[str, str]]:
  """cluster.python_for's interpreter and environment, Python's bytecode cache on.

  An installed package imports from bytecode compiled at install time, as
  tf.estimator 2.15 and both TensorFlows do here; this checkout's sources
  (estimator_lite, benchmarks/models.py) would be compiled again by every
  process where PYTHONDONTWRITEBYTECODE is set (it is on the machines this
  project runs on), which no user's start-up pays. compile_sources() writes
  their bytecode once, before the rounds.
  """
  python, env = harness.python_for(reference=SYSTEMS[system][1])
  env.pop("PYTHONDONTWRITEBYTECODE", None)
  return python, env


def compile_sources() -> None:
  """Writes the bytecode of estimator_lite and benchmarks/ (__pycache__, git-ignored)."""
  python, env = _python_for("estimator_lite")
  subprocess.run([python, "-m", "compileall", "-q", os.path.join(os.path.dirname(HERE),
                                                                  "estimator_lite"), HERE],
                 env=env, check=True, capture_output=True, timeout=IMPORT_TIMEOUT_SECS)


_IMPORT_PROGRAM = ("import time; t, c = time.time(), time.process_time(); import tensorflow; "
                   "print(time.time() - t, time.process_time() - c, time.process_time())")


def import_seconds(system: str) -> Dict[str, float]:
  """`import tensorflow` in a fresh process of the system's TensorFlow.

  Returns:
    {"import_s": the import itself, "import_cpu_s": its CPU seconds, "process_s": the
     whole process, start to exit, "exit_cpu_s": the CPU seconds of its exit (the
     process's, less what it had used when its program ended)}.

  Raises:
    subprocess.CalledProcessError, subprocess.TimeoutExpired: the import failed or hung.
  """
  python, env = _python_for(system)
  start, children = time.time(), resource.getrusage(resource.RUSAGE_CHILDREN)
  done = subprocess.run([python, "-c", _IMPORT_PROGRAM], env=env, capture_output=True,
                        text=True, check=True, timeout=IMPORT_TIMEOUT_SECS)
  process_s = time.time() - start
  after = resource.getrusage(resource.RUSAGE_CHILDREN)  # this harness runs one child at a time
  import_s, import_cpu_s, program_cpu_s = (float(x) for x in done.stdout.split()[-3:])
  process_cpu_s = (after.ru_utime - children.ru_utime) + (after.ru_stime - children.ru_stime)
  return {"import_s": import_s, "import_cpu_s": import_cpu_s, "process_s": process_s,
          "exit_cpu_s": process_cpu_s - program_cpu_s}


def phases(run: Dict[str, Any], steps: int) -> Dict[str, Dict[str, Dict[str, Optional[float]]]]:
  """A job's phases: the wall and CPU seconds from each boundary of a task to its next one.

  Args:
    run: run_job's result.
    steps: the job's max_steps.

  Returns:
    {task name: {"<boundary> → <next boundary>": {"t": wall seconds, "cpu": the
    task's CPU seconds}}}, None where a boundary was not found; each task also
    has "total", from its process start to its exit (the ps: to its last boundary).
  """
  found: Dict[str, Dict[str, Dict[str, Optional[float]]]] = {}
  for name, events in run["tasks"].items():
    role = name.rstrip("0123456789")
    marks = [(boundary, finder(events)) for boundary, roles, finder in boundary_finders(steps)
             if role in roles]
    seen = [event for _, event in marks if event is not None]
    pairs = [(f"{before} → {after}", start, end)
             for (before, start), (after, end) in zip(marks, marks[1:])]
    pairs.append(("total", marks[0][1], seen[-1] if seen else None))
    found[name] = {label: {key: None if start is None or end is None else end[key] - start[key]
                           for key in ("t", "cpu")}
                   for label, start, end in pairs}
  return found


def job_figures(run: Dict[str, Any], steps: int) -> Dict[str, Optional[float]]:
  """The job's end-to-end figures.

  Args:
    run: run_job's result.
    steps: the job's max_steps.

  Returns:
    {figure: seconds (CPU seconds, or a count, where the name says so)}, None
    where a boundary was not found.
  """
  tasks = run["tasks"]
  finders = {name: finder for name, _, finder in boundary_finders(steps)}

  def at(task: str, find: Finder) -> Optional[float]:
    event = find(tasks[task])
    return None if event is None else event["t"]

  def since(start: Optional[float], stop: Optional[float]) -> Optional[float]:
    return None if start is None or stop is None else stop - start

  exits = [at(name, finders["process exit"]) for name in FINISHING]
  end = None if None in exits else max(exits)  # type: ignore[type-var]
  first_step = at("chief0", finders["first step done"])
  last_step = at("chief0", finders["last step done"])
  final_checkpoint = at("chief0", _final_checkpoint(
      steps, "Calling checkpoint listeners after saving checkpoint"))
  final_eval = at("evaluator0", finders["final evaluation starts"])
  evaluations = sum(1 for e in tasks["evaluator0"]
                    if e["what"] == "log" and e["msg"].startswith("Finished evaluation at"))
  cpu = [task[-1]["cpu"] for name, task in tasks.items() if task]
  return {
      "job: first process start → chief, worker and evaluator exited": since(run["job_start"], end),
      "job: first process start → chief's first step": since(run["job_start"], first_step),
      "chief: first step → last step (training)": since(first_step, last_step),
      "chief's final checkpoint written → evaluator's final evaluation starts":
          since(final_checkpoint, final_eval),
      "chief's last step → job end": since(last_step, end),
      "CPU seconds of the job's 4 processes (ps: to its last record)": sum(cpu),
      "evaluations the evaluator ran": float(evaluations),
  }


def _median(values: Sequence[Optional[float]]) -> Optional[Tuple[float, float, float]]:
  kept = [v for v in values if v is not None]
  return (statistics.median(kept), min(kept), max(kept)) if kept else None


def _cell(figure: Optional[Tuple[float, float, float]]) -> str:
  if figure is None:
    return "—"
  median, low, high = figure
  return f"{median:.2f}" if low == high else f"{median:.2f} [{low:.2f}–{high:.2f}]"


def _less(figure: Optional[Tuple[float, float, float]], by: float
          ) -> Optional[Tuple[float, float, float]]:
  return None if figure is None else (figure[0] - by, figure[1] - by, figure[2] - by)


def _difference(a: Optional[Tuple[float, ...]], b: Optional[Tuple[float, ...]]) -> str:
  return "—" if a is None or b is None else f"{b[0] - a[0]:+.2f}"


_IMPORT_PHASE = "Python ready → `import tensorflow` done"


def report(result: Dict[str, Any]) -> str:
  """The markdown tables of a result: each task's phases, the job's figures, the imports.

  Args:
    result: measure()'s result (or the --out file's).

  Returns:
    The tables, markdown.
  """
  systems = [s for s in SYSTEMS if s in result["systems"]]
  labels = [SYSTEMS[s][0] for s in systems]
  rounds, steps = result["rounds"], result["steps"]
  compare = len(systems) == 2

  def cells(figures: List[Optional[Tuple[float, float, float]]]) -> List[str]:
    return [_cell(f) for f in figures] + ([_difference(*figures)] if compare else [])

  def table(first: str, kinds: Sequence[str], rows: List[Tuple[str, List[List[Any]]]]
            ) -> List[str]:
    heads = [first]
    for kind in kinds:
      heads += [f"{label}{kind}" for label in labels] + (
          [f"lite − tf.estimator{kind}"] if compare else [])
    lines = ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    for label, groups in rows:
      lines.append("| " + " | ".join([label] + [c for group in groups for c in cells(group)])
                   + " |")
    return lines + [""]

  lines = [f"Job: ps + chief + worker + evaluator, async, linear model, {steps} steps, "
           f"{len(rounds)} round(s) on {result['machine']['cpus']} cores; seconds, "
           "median [min–max]; wall: time.time() between the boundaries, CPU: the task "
           "process's CPU seconds (all its threads) between them.", ""]
  runs = {s: [phases(r["jobs"][s], steps) for r in rounds if s in r["jobs"]] for s in systems}
  for task in ("ps0", "chief0", "worker0", "evaluator0"):
    names = list(runs[systems[0]][0][task]) if runs[systems[0]] else []
    rows = [(name, [[_median([p[task][name][key] for p in runs[s] if name in p[task]])
                     for s in systems] for key in ("t", "cpu")]) for name in names]
    lines += [f"**{task}**", ""] + table("phase", (" wall", " CPU"), rows)
  jobs = {s: [job_figures(r["jobs"][s], steps) for r in rounds if s in r["jobs"]]
          for s in systems}
  imports = {s: [i for r in rounds for i in r["imports"].get(s, [])] for s in systems}
  import_s = {s: _median([i["import_s"] for i in imports[s]]) for s in systems}
  rows = [(name, [[_median([j[name] for j in jobs[s]]) for s in systems]])
          for name in jobs[systems[0]][0]]
  rows.append(("`import tensorflow` alone, fresh processes, wall", [[import_s[s] for s in systems]]))
  rows.append(("`import tensorflow` alone, fresh processes, CPU",
               [[_median([i["import_cpu_s"] for i in imports[s]]) for s in systems]]))
  rows.append(("a fresh process importing tensorflow, start to exit, wall",
               [[_median([i["process_s"] for i in imports[s]]) for s in systems]]))
  rows.append(("that process's exit (Python's and TensorFlow's teardown), CPU",
               [[_median([i.get("exit_cpu_s") for i in imports[s]]) for s in systems]]))
  end_to_end = "job: first process start → chief, worker and evaluator exited"
  jobs_s = {s: _median([j[end_to_end] for j in jobs[s]]) for s in systems}
  chief_import = {s: _median([p["chief0"][_IMPORT_PHASE]["t"] for p in runs[s]])
                  for s in systems}
  for what, figures in (("the bare imports' medians", import_s),
                        ("the chief's `import tensorflow` medians within the job", chief_import)):
    tf_import, lite_import = (figures[s] for s in systems) if compare else (None, None)
    if tf_import is not None and lite_import is not None:
      by = lite_import[0] - tf_import[0]
      rows.append((f"job less TF's import difference ({what}, {by:+.2f} s)",
                   [[jobs_s[systems[0]], _less(jobs_s[systems[1]], by)]]))
  lines += ["**The job**", ""] + table("figure", ("",), rows)
  return "\n".join(lines)


def measure(systems: Sequence[str], rounds: int, steps: int, imports: int,
            keep: bool = False) -> Dict[str, Any]:
  """Runs the rounds: each a job and `imports` bare imports a system, in alternating order.

  Args:
    systems: keys of SYSTEMS.
    rounds: how many rounds.
    steps: each job's max_steps.
    imports: bare `import tensorflow` processes a system, a round.
    keep: keep each job's temp dir.

  Returns:
    The result (written to --out): settings, machine, and each round's jobs
    (run_job's results) and imports (import_seconds's).
  """
  result: Dict[str, Any] = {
      "steps": steps, "systems": list(systems), "rounds": [],
      "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
      "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
  log = harness.log
  compile_sources()
  for index in range(rounds):
    order = list(systems) if index % 2 == 0 else list(reversed(systems))
    done: Dict[str, Any] = {"order": order, "jobs": {}, "imports": {s: [] for s in order}}
    for system in order:
      log(f"round {index + 1}/{rounds}: {system} job, {steps} steps")
      done["jobs"][system] = run_job(system, steps, keep)
    for turn in range(imports):  # interleaved: each turn every system once, in turn's order
      for system in order if turn % 2 == 0 else reversed(order):
        done["imports"][system].append(import_seconds(system))
    log(f"round {index + 1}: imports " + ", ".join(
        f"{s} {statistics.median(i['import_s'] for i in done['imports'][s]):.2f} s"
        for s in order if done["imports"][s]))
    result["rounds"].append(done)
  return result


def main(argv: Optional[List[str]] = None) -> int:
  """Runs the benchmark (or, with --task, one task of a job); see the module docstring."""
  argv = sys.argv[1:] if argv is None else argv
  if argv[:1] == ["--task"]:
    _task(json.loads(argv[1]))
    return 0
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--rounds", type=int, default=3)
  # 8000: the chief still trains when worker 0's 5 s start-up delay ends (3000 steps took the
  # chief 4.1 s on 2 cores, and estimator_lite's worker then found training done).
  parser.add_argument("--steps", type=int, default=8000, help="TrainSpec.max_steps")
  parser.add_argument("--imports", type=int, default=3,
                      help="bare `import tensorflow` processes a version, a round")
  parser.add_argument("--systems", default=",".join(SYSTEMS))
  parser.add_argument("--out", default=os.path.join(HERE, "startup.json"))
  parser.add_argument("--report-from", help="print the tables of an earlier --out file")
  parser.add_argument("--keep", action="store_true", help="keep each job's temp dir (logs)")
  args = parser.parse_args(argv)
  if args.report_from:
    with open(args.report_from) as f:
      print(report(json.load(f)), end="")
    return 0
  systems = [s for s in args.systems.split(",") if s]
  unknown = set(systems) - set(SYSTEMS)
  if unknown:
    parser.error(f"unknown systems {sorted(unknown)}; known: {', '.join(SYSTEMS)}")
  result = measure(systems, args.rounds, args.steps, args.imports, args.keep)
  with open(args.out + ".tmp", "w") as f:
    json.dump(result, f)
  os.replace(args.out + ".tmp", args.out)
  print(report(result), end="")
  return 0


if __name__ == "__main__":
  sys.exit(main())
