"""Parameter-server training speed: estimator_lite against tf.estimator 2.15 and TensorFlow's floor.

    python benchmarks/ps_cluster.py                  # every cluster, 3 rounds (~50 min on 2 cores)
    python benchmarks/ps_cluster.py --quick          # one round, shorter windows (~12 min)
    python benchmarks/ps_cluster.py --clusters async1,sync2 --systems estimator_lite,tf_estimator
    python benchmarks/ps_cluster.py --report-from benchmarks/ps_cluster.json
    python benchmarks/ps_cluster.py --report-from a.json,b.json  # two runs' rounds together

Each measurement is a fresh cluster on this machine: one ps (or two), a chief
and N workers, every task its own process on free localhost ports, talking gRPC.
The systems train the same graph (benchmarks/models.py, linear model unless
--model says otherwise) and differ only in what runs it:

  tf_estimator         tf.estimator 2.15's train_and_evaluate (reference venv, TF 2.15)
  estimator_lite       estimator_lite's train_and_evaluate, the defaults a user gets (here,
                       where every task is on localhost: thread spinning off)
  estimator_lite_unpacked
                       estimator_lite with RunConfig(pack_ps_transfers=False): each
                       tensor of a step its own message, as before packing
  estimator_lite_k100  the same with RunConfig(steps_per_loop=100)
  estimator_lite_spinning
                       estimator_lite with the role's session config less
                       experimental.disable_thread_spinning (TensorFlow's default):
                       what a cluster of one task a machine runs with
  bare_tf215           TF 2.15's floor: Session.run(train_op) in a Python loop, no
                       Estimator and no hooks (synchronous clusters: MonitoredTrainingSession
                       with only the SyncReplicasOptimizer's hook, which that training needs)
  bare_tf221           the same loop on TF 2.21 (this venv)
  in_graph_tf221       TF 2.21's floor for steps_per_loop=100: a tf.while_loop of 100
                       steps a Session.run, the variables on the ps

Both Estimators run with their default RunConfig except for the model_dir and
`experimental_max_worker_delay_secs=0` (no staggered start: the workers are
started once the chief trains, and the measurement waits until every trainer
has made its first steps).

Clusters: async1, async2, async4 (asynchronous training with 1, 2 and 4 workers
besides the chief) and sync2 (SyncReplicasOptimizer aggregating the chief's and
2 workers' gradients every step), each with one ps; and, when --clusters names
it, async2_ps2: async2 with two ps tasks, the variables spread over them
(replica_device_setter's round robin). A figure "by process" for the ps is the
mean of the ps tasks there, as it is for the workers.

A measurement: the chief and the workers record when each Session.run returns;
the chief also records the global step, every 100 runs (every run with
steps_per_loop > 1). Once every trainer has made its first 20 runs, and 2 s
more, a window of --secs seconds starts; global steps/s is the chief's global
step over that window. CPU seconds of all the cluster's processes over the
window, per global step (and each process's own), and each process's peak RSS
(VmHWM, read just before it is stopped) are recorded too. Rounds interleave
the systems, each round in another order; a figure is the median over rounds
[min-max]. A target's ratio is that of the two medians; beside it, the ratio
within each round (the two systems ran minutes apart), whose spread shows how
far the machine's drift moves it.

Output: a JSON file (--out, default benchmarks/ps_cluster.json) and markdown
tables on stdout (and --report, a file to write them to).
"""
from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import platform
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
NEW_PYTHON = os.path.join(REPO, ".venv", "bin", "python")

# key: (label, runs on the reference venv, what the task runs, steps a Session.run,
#       thread spinning left on though the tasks share the machine,
#       RunConfig(pack_ps_transfers=False))
SYSTEMS: Dict[str, tuple] = {
    "tf_estimator": ("tf.estimator 2.15", True, "estimator", 1, False, False),
    "estimator_lite": ("estimator_lite", False, "estimator", 1, False, False),
    "estimator_lite_unpacked": ("estimator_lite pack_ps_transfers=False", False, "estimator", 1,
                                False, True),
    "estimator_lite_k100": ("estimator_lite steps_per_loop=100", False, "estimator", 100, False,
                            False),
    "estimator_lite_spinning": ("estimator_lite, thread spinning on", False, "estimator", 1, True,
                              False),
    "bare_tf215": ("bare Session.run, TF 2.15", True, "bare", 1, False, False),
    "bare_tf221": ("bare Session.run, TF 2.21", False, "bare", 1, False, False),
    "in_graph_tf221": ("in-graph loop of 100, TF 2.21", False, "bare", 100, False, False),
}
# name: (workers besides the chief, synchronous, ps tasks)
CLUSTERS: Dict[str, tuple] = {
    "async1": (1, False, 1), "async2": (2, False, 1), "async4": (4, False, 1),
    "sync2": (2, True, 1), "async2_ps2": (2, False, 2),
}
# Issue 19's clusters, which a run measures unless --clusters says otherwise.
DEFAULT_CLUSTERS = ("async1", "async2", "async4", "sync2")
# Synchronous training runs one step a Session.run (SyncReplicasOptimizer's token queue).
ASYNC_ONLY = {"estimator_lite_k100", "in_graph_tf221"}
# The targets of issue 19: (cluster kind, A, B, bound) with A / B >= bound on steps/s.
TARGETS = (
    ("async", "estimator_lite", "tf_estimator", 1.2),
    ("async", "estimator_lite_k100", "tf_estimator", 2.0),
    ("sync", "estimator_lite", "tf_estimator", 1.0),
)
RSS_BOUND = 1.1  # estimator_lite's peak RSS a role, against tf.estimator's and TF 2.21's floor's
READY_RUNS = 20
SETTLE_SECS = 2.0
START_TIMEOUT_SECS = 240
STOP_TIMEOUT_SECS = 60
# absl's C++ log lines (I0000 00:00:..., W0000, E0000) and its preamble.
_CPP_LOG_LINE = re.compile(r"^([IWEF]\d{4} |WARNING: All log messages before absl)")


# ---------------------------------------------------------------------------
# One task of a cluster (a fresh process, under either TensorFlow).

def _task(spec: Dict[str, Any]) -> None:
  os.environ["TF_CONFIG"] = json.dumps(
      {"cluster": spec["cluster"], "task": {"type": spec["role"], "index": spec["index"]}})
  sys.path.insert(0, HERE)
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import models  # pylint: disable=g-import-not-at-top
  tf.get_logger().setLevel("ERROR")
  model = models.MODELS[spec["model"]]
  trainers = 1 + len(spec["cluster"].get("worker", []))
  sync_replicas = trainers if spec["sync"] else 0
  recorder = _Recorder(tf, spec)
  try:
    if spec["kind"] == "estimator":
      _estimator_task(tf, spec, models, model, sync_replicas, recorder)
    else:
      _bare_task(tf, spec, models, model, sync_replicas, recorder)
  finally:  # a synchronous trainer can fail once another one stopped, before its watcher woke
    recorder.write()


class _Recorder:
  """A trainer's record: when each run returned, and the global step the chief read.

  A thread watches for the harness's stop file and then writes the record at
  once: a trainer of a synchronous cluster can block for good in its next run
  once another trainer has stopped, and is killed there.
  """

  def __init__(self, tf: Any, spec: Dict[str, Any]) -> None:
    self.spec, self.runs, self.steps = spec, [], []
    self._step_reads = 1 if spec["steps_per_run"] > 1 else 100
    self._stopping = False
    self._writing = threading.Lock()
    self.hook = self._make_hook(tf)
    threading.Thread(target=self._write_on_stop, daemon=True).start()

  def _write_on_stop(self) -> None:
    while not os.path.exists(self.spec["stop"]):
      time.sleep(0.05)
    self.write()
    self._stopping = True

  def write(self) -> None:
    """Writes the record, once: a second caller waits for the first one's write."""
    with self._writing:
      if os.path.exists(self.spec["out"]):
        return
      runs, steps = list(self.runs), list(self.steps)  # the main thread goes on appending
      with open(self.spec["out"] + ".tmp", "w") as f:
        json.dump({"runs": runs, "steps": steps}, f)
      os.replace(self.spec["out"] + ".tmp", self.spec["out"])

  def reads_step(self) -> bool:
    return self.spec["role"] == "chief" and len(self.runs) % self._step_reads == 0

  def ran(self, global_step: Optional[int]) -> bool:
    """Records a run; True once the harness asks the trainers to stop."""
    now = time.time()
    self.runs.append(now)
    if global_step is not None:
      self.steps.append((now, int(global_step)))
    if len(self.runs) == READY_RUNS:
      open(self.spec["ready"], "w").close()
    return self._stopping

  def _make_hook(self, tf: Any) -> Any:
    recorder = self

    class RecordHook(tf.compat.v1.train.SessionRunHook):

      def begin(self):
        self._step = tf.compat.v1.train.get_global_step()

      def before_run(self, run_context):
        if recorder.reads_step():
          return tf.compat.v1.train.SessionRunArgs(self._step)
        return None

      def after_run(self, run_context, run_values):
        if recorder.ran(run_values.results):
          run_context.request_stop()

    return RecordHook()


def _estimator_task(tf: Any, spec: Dict[str, Any], models: Any, model: Any, sync_replicas: int,
                    recorder: _Recorder) -> None:
  if spec["reference"]:
    api = tf.estimator
  else:
    import estimator_lite as api  # pylint: disable=g-import-not-at-top
  extra = {"steps_per_loop": spec["steps_per_run"]} if spec["steps_per_run"] > 1 else {}
  if spec["unpacked"]:
    extra["pack_ps_transfers"] = False
  config = api.RunConfig(model_dir=spec["model_dir"], experimental_max_worker_delay_secs=0,
                         **extra)
  if spec["spinning"]:  # the role's own config (device filters), spinning on
    session_config = tf.compat.v1.ConfigProto()
    if config.session_config is not None:
      session_config.CopyFrom(config.session_config)
    session_config.experimental.disable_thread_spinning = False
    config = config.replace(session_config=session_config)
  estimator = api.Estimator(models.make_model_fn(model, api, sync_replicas), config=config)
  input_fn = models.make_input_fn(model)
  api.train_and_evaluate(estimator,
                         api.TrainSpec(input_fn, max_steps=10**12, hooks=[recorder.hook]),
                         api.EvalSpec(input_fn, steps=1))


def _bare_task(tf: Any, spec: Dict[str, Any], models: Any, model: Any, sync_replicas: int,
               recorder: _Recorder) -> None:
  v1 = tf.compat.v1
  role, index = spec["role"], spec["index"]
  cluster = tf.train.ClusterSpec(spec["cluster"])
  # tf.estimator's session config for the role: device filters, nothing else.
  config = v1.ConfigProto()
  if role != "ps":
    config.device_filters.extend(["/job:ps", f"/job:{role}/task:{index}"])
  server = tf.distribute.Server(cluster, job_name=role, task_index=index, config=config)
  if role == "ps":
    server.join()
    return
  hooks = []

  def sync(optimizer):
    optimizer = v1.train.SyncReplicasOptimizer(
        optimizer, replicas_to_aggregate=sync_replicas, total_num_replicas=sync_replicas)
    hooks.append(optimizer.make_session_run_hook(role == "chief"))
    return optimizer

  device_fn = v1.train.replica_device_setter(
      ps_tasks=cluster.num_tasks("ps"), worker_device=f"/job:{role}/task:{index}",
      merge_devices=True, cluster=cluster)
  if sync_replicas:
    with tf.Graph().as_default() as graph, graph.device(device_fn):
      step = v1.train.get_or_create_global_step()
      features, labels = v1.data.make_one_shot_iterator(models.dataset(model)).get_next()
      train_op = model.build(features, labels, True, sync).train_op
      hooks.append(recorder.hook)
      with v1.train.MonitoredTrainingSession(
          master=server.target, is_chief=role == "chief", hooks=hooks, config=config,
          save_checkpoint_secs=None, save_summaries_steps=None, save_summaries_secs=None,
          log_step_count_steps=None) as session:
        while not session.should_stop():
          session.run(train_op)
    return
  graph, iterator, train_op, init = models.training_graph(model, spec["steps_per_run"], device_fn)
  with graph.as_default():
    step = v1.train.get_global_step()
    # Global variables only: the model's metric variables are local, which the chief
    # does not initialise (and the training step does not use).
    ready = v1.report_uninitialized_variables(v1.global_variables())
  with v1.Session(server.target, graph=graph, config=config) as session:
    if role == "chief":
      session.run(init)
    else:  # wait for the chief to initialise, as a worker's session creator does
      while len(session.run(ready)):
        time.sleep(0.1)
    session.run(iterator.initializer)
    while True:
      read = recorder.reads_step()
      global_step = session.run([train_op, step])[1] if read else session.run(train_op)
      if recorder.ran(global_step if read else None):
        break


# ---------------------------------------------------------------------------
# The harness: clusters, windows, figures.

def log(message: str) -> None:
  print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def _free_port() -> int:
  with socket.socket() as s:
    s.bind(("localhost", 0))
    return s.getsockname()[1]


def _ref_env_module() -> Any:
  spec = importlib.util.spec_from_file_location(
      "ref_env", os.path.join(REPO, "tests", "reference", "ref_env.py"))
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def _cpu_secs(pid: int) -> Optional[float]:
  try:
    with open(f"/proc/{pid}/stat") as f:
      fields = f.read().rsplit(")", 1)[1].split()
  except OSError:
    return None
  return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _peak_rss_mb(pid: int) -> Optional[float]:
  try:
    with open(f"/proc/{pid}/status") as f:
      for line in f:
        if line.startswith("VmHWM:"):
          return int(line.split()[1]) / 1024
  except OSError:
    return None
  return None


class _Cluster:
  """One fresh cluster of one system; its processes are stopped on exit, whatever happens."""

  def __init__(self, system: str, cluster: str, args: argparse.Namespace, pythons: Dict[bool, str],
               env: Dict[bool, Dict[str, str]]) -> None:
    _, reference, kind, steps_per_run, spinning, unpacked = SYSTEMS[system]
    workers, self.sync, ps_tasks = CLUSTERS[cluster]
    self.dir = tempfile.mkdtemp(prefix=f"ps_cluster_{system}_{cluster}_")
    self.spec = {job: [f"localhost:{_free_port()}" for _ in range(n)]
                 for job, n in (("ps", ps_tasks), ("chief", 1), ("worker", workers)) if n}
    self.common = dict(cluster=self.spec, kind=kind, reference=reference, model=args.model,
                       steps_per_run=steps_per_run, spinning=spinning, unpacked=unpacked,
                       sync=self.sync,
                       model_dir=os.path.join(self.dir, "model"),
                       stop=os.path.join(self.dir, "stop"))
    self.python, self.env = pythons[reference], env[reference]
    self.procs: Dict[str, subprocess.Popen] = {}

  def __enter__(self) -> "_Cluster":
    return self

  def __exit__(self, *exc: Any) -> None:
    """Asks the trainers to stop; once each wrote its record (or ended), stops every task."""
    open(self.common["stop"], "w").close()
    deadline = time.time() + STOP_TIMEOUT_SECS
    for name, process in self.procs.items():
      while (not name.startswith("ps") and process.poll() is None
             and not os.path.exists(self._paths(name)["out"]) and time.time() < deadline):
        time.sleep(0.1)
    for process in self.procs.values():
      if process.poll() is None:
        process.kill()
      process.wait()

  def _paths(self, name: str) -> Dict[str, str]:
    return {"ready": os.path.join(self.dir, name + ".ready"),
            "out": os.path.join(self.dir, name + ".json")}

  def start(self, role: str, index: int) -> None:
    name = f"{role}{index}"
    spec = dict(self.common, role=role, index=index, **self._paths(name))
    with open(os.path.join(self.dir, name + ".log"), "w") as out:
      self.procs[name] = subprocess.Popen(
          [self.python, os.path.abspath(__file__), "task", json.dumps(spec)],
          env=self.env, stdout=out, stderr=subprocess.STDOUT)

  def wait_ready(self, names: List[str]) -> None:
    deadline = time.time() + START_TIMEOUT_SECS
    while not all(os.path.exists(self._paths(n)["ready"]) for n in names):
      ended = [n for n, p in self.procs.items() if p.poll() is not None]
      if ended or time.time() > deadline:
        why = f"{ended} ended" if ended else f"not all of {names} ran {READY_RUNS} steps"
        raise RuntimeError(f"{why} within {START_TIMEOUT_SECS} s; logs in {self.dir}: "
                           + self.tail(ended[0] if ended else names[-1]))
      time.sleep(0.1)

  def tail(self, name: str) -> str:
    """The last lines of a task's log, without TensorFlow's C++ start-up lines."""
    with open(os.path.join(self.dir, name + ".log")) as f:
      lines = [line for line in f if not _CPP_LOG_LINE.match(line)]
    return "".join(lines[-15:])

  def results(self, name: str) -> Dict[str, Any]:
    with open(self._paths(name)["out"]) as f:
      return json.load(f)


def measure(system: str, cluster: str, args: argparse.Namespace, pythons: Dict[bool, str],
            env: Dict[bool, Dict[str, str]]) -> Dict[str, Any]:
  """One fresh cluster of `system`: global steps/s over the window, CPU per step, peak RSS."""
  workers, sync, ps_tasks = CLUSTERS[cluster]
  trainer_names = ["chief0"] + [f"worker{i}" for i in range(workers)]
  with _Cluster(system, cluster, args, pythons, env) as c:
    for i in range(ps_tasks):
      c.start("ps", i)
    c.start("chief", 0)
    if not sync:  # a worker finds the variables initialised (tf.estimator's waits 30 s otherwise)
      c.wait_ready(["chief0"])
    for i in range(workers):
      c.start("worker", i)
    c.wait_ready(trainer_names)
    time.sleep(SETTLE_SECS)
    pids = {name: p.pid for name, p in c.procs.items()}
    cpu_start, start = {n: _cpu_secs(pid) for n, pid in pids.items()}, time.time()
    time.sleep(args.secs)
    cpu_end, end = {n: _cpu_secs(pid) for n, pid in pids.items()}, time.time()
    rss = {n: _peak_rss_mb(pid) for n, pid in pids.items()}
    directory = c.dir
  chief = c.results("chief0")
  samples = [(t, s) for t, s in chief["steps"] if start <= t <= end]
  if len(samples) < 2:
    raise RuntimeError(f"the chief read the global step {len(samples)} times in the window")
  (t0, s0), (t1, s1) = samples[0], samples[-1]
  steps_per_sec = (s1 - s0) / (t1 - t0)
  used: Dict[str, float] = {}  # CPU seconds each process used in the window
  for name in pids:
    before, after = cpu_start[name], cpu_end[name]
    if before is not None and after is not None:
      used[name] = after - before
  cpu = sum(used.values())
  runs = {n: sum(start <= t <= end for t in c.results(n)["runs"]) for n in trainer_names}
  by_task = {n: round(1e6 * secs / (end - start) / steps_per_sec)
             for n, secs in used.items() if steps_per_sec}
  return dict(system=system, cluster=cluster, steps_per_sec=steps_per_sec,
              cpu_cores=cpu / (end - start), cpu_us_per_step=1e6 * cpu / (end - start) /
              steps_per_sec if steps_per_sec else None, cpu_us_per_step_by_task=by_task,
              runs_in_window=runs, peak_rss_mb=rss, dir=directory)


def _median_range(values: List[float], fmt: str = "{:.0f}") -> str:
  values = [v for v in values if v is not None]
  if not values:
    return "failed"
  text = fmt.format(statistics.median(values))
  if len(values) > 1:
    text += f" [{fmt.format(min(values))}–{fmt.format(max(values))}]"
  return text


def _median(results: List[Dict[str, Any]], system: str, cluster: str, figure: str
            ) -> Optional[float]:
  values = [r[figure] for r in results if r["system"] == system and r["cluster"] == cluster
            and r.get(figure) is not None]
  return statistics.median(values) if values else None


def _role_rss(results: List[Dict[str, Any]], system: str, role: str) -> Optional[float]:
  """The median over runs of a role's peak RSS (workers: the largest worker of each run)."""
  values = []
  for r in results:
    if r["system"] == system and r.get("peak_rss_mb"):
      mine = [v for n, v in r["peak_rss_mb"].items() if _role(n) == role and v]
      if mine:
        values.append(max(mine))
  return statistics.median(values) if values else None


def _role(name: str) -> str:
  """A process's role: "worker3" -> "worker"."""
  return name.rstrip("0123456789")


def _role_cpu(result: Dict[str, Any], role: str) -> Optional[float]:
  """A role's CPU a global step in one measurement (workers: their mean)."""
  mine = [v for n, v in result["cpu_us_per_step_by_task"].items()
          if _role(n) == role]
  return statistics.mean(mine) if mine else None


def _round_ratios(results: List[Dict[str, Any]], a: str, b: str, cluster: str) -> List[float]:
  """A / B in global steps/s, round by round: the two ran minutes apart, on the same machine."""
  by_round: Dict[Any, Dict[str, float]] = {}
  for r in results:
    if r["cluster"] == cluster and r["system"] in (a, b) and "round" in r:
      by_round.setdefault(r["round"], {})[r["system"]] = r["steps_per_sec"]
  return [pair[a] / pair[b] for pair in by_round.values() if a in pair and b in pair and pair[b]]


def pooled(runs: List[Dict[str, Any]]) -> Dict[str, Any]:
  """Several runs' JSONs as one run of all their rounds (the same code, measured again).

  Raises:
    ValueError: the runs measured different models, windows, clusters or systems.
  """
  first, results, rounds = runs[0], [], 0
  for run in runs:
    for key in ("model", "secs", "clusters", "systems"):
      if run[key] != first[key]:
        raise ValueError(f"runs differ in {key}: {first[key]!r} and {run[key]!r}")
    results += [dict(r, round=r["round"] + rounds) if "round" in r else r
                for r in run["results"]]
    rounds += run["rounds"]
  return dict(first, rounds=rounds, results=results,
              started=", ".join(run["started"] for run in runs))


def report(data: Dict[str, Any]) -> str:
  """The markdown tables for a run's JSON."""
  results, clusters, systems = data["results"], data["clusters"], data["systems"]
  ok = [r for r in results if "error" not in r]
  lines = [f"Model `{data['model']}`, window {data['secs']} s, {data['rounds']} round(s); "
           f"{data['machine']}; started {data['started']}.", "",
           "### Global steps/s, median over rounds [min–max]", "",
           "| system | " + " | ".join(clusters) + " |",
           "|---" * (len(clusters) + 1) + "|"]
  for system in systems:
    cells = []
    for cluster in clusters:
      values = [r["steps_per_sec"] for r in ok if r["system"] == system and r["cluster"] == cluster]
      failed = sum(1 for r in results if r["system"] == system and r["cluster"] == cluster
                   and "error" in r)
      cell = _median_range(values) if values else ("—" if not failed else "failed")
      cells.append(cell + (f" ({failed} failed)" if failed and values else ""))
    lines.append(f"| {SYSTEMS[system][0]} | " + " | ".join(cells) + " |")
  lines += ["", "### CPU of all the cluster's processes, µs per global step (median)", "",
            "| system | " + " | ".join(clusters) + " |", "|---" * (len(clusters) + 1) + "|"]
  for system in systems:
    cells = [_median_range([r["cpu_us_per_step"] for r in ok if r["system"] == system
                            and r["cluster"] == cluster]) if any(
                                r["system"] == system and r["cluster"] == cluster for r in ok)
             else "—" for cluster in clusters]
    lines.append(f"| {SYSTEMS[system][0]} | " + " | ".join(cells) + " |")
  lines += ["", "### CPU a global step by process, µs (median; a worker, or a ps of two: "
            "the mean of them)",
            "", "| system | " + " | ".join(f"{c}: ps / chief / a worker" for c in clusters) + " |",
            "|---" * (len(clusters) + 1) + "|"]
  for system in systems:
    cells = []
    for cluster in clusters:
      mine = [r for r in ok if r["system"] == system and r["cluster"] == cluster
              and r.get("cpu_us_per_step_by_task")]
      per_role = [[v for v in (_role_cpu(r, role) for r in mine) if v is not None]
                  for role in ("ps", "chief", "worker")]
      cells.append(" / ".join(f"{statistics.median(v):.0f}" if v else "—" for v in per_role))
    lines.append(f"| {SYSTEMS[system][0]} | " + " | ".join(cells) + " |")
  lines += ["", "### Targets (ratio of the medians; each round's own ratio beside it)", "",
            "| target | cluster | ratio | met | a round's ratio, median [min–max] |",
            "|---|---|---|---|---|"]
  for kind, a, b, bound in TARGETS:
    for cluster in clusters:
      if not cluster.startswith(kind) or a not in systems or b not in systems:
        continue
      num, den = _median(ok, a, cluster, "steps_per_sec"), _median(ok, b, cluster, "steps_per_sec")
      ratio = num / den if num and den else None
      met = "—" if ratio is None else ("yes" if ratio >= bound else "**no**")
      paired = _round_ratios(ok, a, b, cluster)
      lines.append(f"| {SYSTEMS[a][0]} ≥ {bound}× {SYSTEMS[b][0]} | {cluster} | "
                   f"{'—' if ratio is None else f'{ratio:.2f}×'} | {met} | "
                   f"{_median_range(paired, '{:.2f}') if paired else '—'} |")
  floor_pairs = (("estimator_lite", "bare_tf221"), ("tf_estimator", "bare_tf215"),
                 ("estimator_lite", "estimator_lite_unpacked"),
                 ("estimator_lite", "estimator_lite_spinning"),
                 ("estimator_lite_k100", "in_graph_tf221"), ("bare_tf221", "bare_tf215"))
  lines += ["", "### Each system against its TensorFlow's floor (medians)", "",
            "| A / B | " + " | ".join(clusters) + " |", "|---" * (len(clusters) + 1) + "|"]
  for a, b in floor_pairs:
    if a not in systems or b not in systems:
      continue
    cells = []
    for cluster in clusters:
      num, den = _median(ok, a, cluster, "steps_per_sec"), _median(ok, b, cluster, "steps_per_sec")
      cells.append(f"{num / den:.2f}" if num and den else "—")
    lines.append(f"| {SYSTEMS[a][0]} / {SYSTEMS[b][0]} | " + " | ".join(cells) + " |")
  lines += ["", "### Peak RSS a role, MB (median over every run of the system)", "",
            "| system | ps | chief | worker (largest) |", "|---|---|---|---|"]
  for system in systems:
    rss = [_role_rss(ok, system, role) for role in ("ps", "chief", "worker")]
    lines.append(f"| {SYSTEMS[system][0]} | " + " | ".join(
        "—" if v is None else f"{v:.0f}" for v in rss) + " |")
  for a, b in (("estimator_lite", "tf_estimator"), ("estimator_lite", "bare_tf221")):
    if a in systems and b in systems:
      ratios = []
      for role in ("ps", "chief", "worker"):
        num, den = _role_rss(ok, a, role), _role_rss(ok, b, role)
        ratios.append(f"{role} {num / den:.2f}" if num and den else f"{role} —")
      lines.append(f"\nPeak RSS {SYSTEMS[a][0]} / {SYSTEMS[b][0]} (bound {RSS_BOUND}): "
                   + ", ".join(ratios) + ".")
  errors = [r for r in results if "error" in r]
  if errors:
    lines += ["", "Failed runs:"] + [f"- {r['system']} {r['cluster']}: {r['error'][:300]}"
                                     for r in errors]
  return "\n".join(lines) + "\n"


def main(argv: Optional[List[str]] = None) -> int:
  argv = sys.argv[1:] if argv is None else argv
  if argv[:1] == ["task"]:
    _task(json.loads(argv[1]))
    return 0
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--clusters", default=",".join(DEFAULT_CLUSTERS),
                      help=f"of {', '.join(CLUSTERS)}")
  parser.add_argument("--systems", default=",".join(SYSTEMS))
  parser.add_argument("--model", default="linear")
  parser.add_argument("--rounds", type=int, default=3)
  parser.add_argument("--secs", type=float, default=10.0)
  parser.add_argument("--quick", action="store_true", help="one round of 6 s windows")
  parser.add_argument("--out", default=os.path.join(HERE, "ps_cluster.json"))
  parser.add_argument("--report", help="also write the tables to this file")
  parser.add_argument("--report-from", help="print the tables of a saved JSON; run nothing. "
                      "Several, comma-separated: the tables of all their rounds together")
  parser.add_argument("--py-new", default=NEW_PYTHON)
  args = parser.parse_args(argv)
  if args.report_from:
    runs = []
    for path in args.report_from.split(","):
      with open(path) as f:
        runs.append(json.load(f))
    try:
      print(report(pooled(runs)))
    except ValueError as error:
      parser.error(str(error))
    return 0
  if args.quick:
    args.rounds, args.secs = 1, 6.0
  clusters = [c for c in args.clusters.split(",") if c]
  systems = [s for s in args.systems.split(",") if s]
  unknown = [c for c in clusters if c not in CLUSTERS] + [s for s in systems if s not in SYSTEMS]
  if unknown:
    parser.error(f"unknown cluster or system: {unknown}")
  ref_env = _ref_env_module()
  pythons = {False: args.py_new}
  env = {False: dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONUNBUFFERED="1")}
  if any(SYSTEMS[s][1] for s in systems):
    pythons[True] = ref_env.ensure_ref_python(log=log)
    env[True] = ref_env.subprocess_env(TF_CPP_MIN_LOG_LEVEL="2", PYTHONUNBUFFERED="1")
  for e in env.values():
    e.pop("TF_CONFIG", None)
  data = dict(model=args.model, secs=args.secs, rounds=args.rounds, clusters=clusters,
              systems=systems, started=datetime.datetime.now().isoformat(timespec="seconds"),
              machine=f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}",
              command="python benchmarks/ps_cluster.py " + " ".join(argv), results=[])
  began = time.time()
  for round_index in range(args.rounds):
    for cluster in clusters:
      order = [s for s in systems if not (CLUSTERS[cluster][1] and s in ASYNC_ONLY)]
      shift = round_index % len(order)
      for system in order[shift:] + order[:shift]:
        log(f"round {round_index + 1}/{args.rounds}: {cluster} {system}")
        try:
          result = measure(system, cluster, args, pythons, env)
        except Exception as e:  # pylint: disable=broad-except
          result = dict(system=system, cluster=cluster, error=f"{type(e).__name__}: {e}")
          log("  failed: " + result["error"][:500])
        else:
          log(f"  {result['steps_per_sec']:.0f} global steps/s, "
              f"{result['cpu_us_per_step']:.0f} µs CPU a step "
              f"{result['cpu_us_per_step_by_task']}, runs {result['runs_in_window']}")
        result["round"] = round_index
        data["results"].append(result)
        with open(args.out, "w") as f:
          json.dump(data, f, indent=1)
  data["elapsed_s"] = round(time.time() - began)
  with open(args.out, "w") as f:
    json.dump(data, f, indent=1)
  text = report(data)
  print(text)
  if args.report:
    with open(args.report, "w") as f:
      f.write(text)
  return 0


if __name__ == "__main__":
  sys.exit(main())
