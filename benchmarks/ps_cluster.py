"""Parameter-server training speed: estimator_lite against tf.estimator 2.15 and TensorFlow's floor.

    python benchmarks/ps_cluster.py                  # every cluster, 3 rounds (~50 min on 2 cores)
    python benchmarks/ps_cluster.py --quick          # one round, shorter windows (~12 min)
    python benchmarks/ps_cluster.py --clusters async1,sync2 --systems estimator_lite,tf_estimator
    python benchmarks/ps_cluster.py --report-from benchmarks/ps_cluster.json
    python benchmarks/ps_cluster.py --report-from a.json,b.json  # two runs' rounds together
    python benchmarks/ps_cluster.py --trainers 1,2,4,8 --ps 2 --model wide_deep  # worker scaling
    python benchmarks/ps_cluster.py --trainers 1,2 --ps 4 \
        --systems estimator_lite,estimator_lite_round_robin,bare_tf221  # ps placement
    python benchmarks/ps_cluster.py --trainers 2 --ps 2 --ps-cores 0.2 --model mlp \
        --systems estimator_lite,estimator_lite_round_robin  # the ps as the bottleneck (root)

This script is where benchmarks/ measures parameter-server clusters (run.py
no longer does). Each measurement is a fresh cluster on this machine: one or
more ps, a chief and N workers, every task its own process on free localhost
ports, talking gRPC, started and stopped by benchmarks/cluster.py.
The systems train the same graph (benchmarks/models.py, linear model unless
--model says otherwise) and differ only in what runs it:

  tf_estimator         tf.estimator 2.15's train_and_evaluate (reference venv, TF 2.15)
  estimator_lite       estimator_lite's train_and_evaluate, the defaults a user gets (here,
                       where every task is on localhost: thread spinning off)
  estimator_lite_round_robin
                       estimator_lite with RunConfig(ps_placement="round_robin"):
                       tf.estimator's placement of variables on the ps tasks
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
  bare_tf221           the same loop on TF 2.21 (this venv); both bare floors place the
                       variables as tf.estimator does (replica_device_setter's round robin)
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

Worker scaling: --trainers 1,2,4,8 --ps 2 names the async clusters t1_ps2 ...
t8_ps2 (a chief and trainers-1 workers on 2 ps; --clusters takes these names
too), by default for estimator_lite and bare_tf221. Their table gives, per
cluster and system: global steps/s; CPU per global step of all tasks, of each
ps task, of the chief and of a worker (their mean); the machine's CPU bound
(os.cpu_count() cores / CPU seconds a global step: the rate if every core
worked at this cost) and the cores the cluster used in the window, also as a
fraction of the machine's.

A measurement: the chief and the workers record when each Session.run returns;
the chief also records the global step, every 100 runs (every run with
steps_per_loop > 1) and at least once a second. Once every trainer has made
its first 20 runs, and 2 s more, a window of --secs seconds starts; global
steps/s is the chief's global step over that window. CPU seconds of all the
cluster's processes over the window, per global step (and each process's
own), and each process's peak RSS (VmHWM, read just before it is stopped) are
recorded too. Rounds interleave the systems, each round in another order; a
figure is the median over rounds [min-max]. A target's ratio is that of the
two medians; beside it, the ratio within each round (the two systems ran
minutes apart), whose spread shows how far the machine's drift moves it.

Output: a JSON file (--out, default benchmarks/ps_cluster.json) and markdown
tables on stdout (and --report, a file to write them to).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import statistics
import sys
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import cluster as harness  # pylint: disable=g-import-not-at-top,wrong-import-position
import cpu_quota  # pylint: disable=g-import-not-at-top,wrong-import-position

# key: (label, runs on the reference venv, what the task runs, steps a Session.run,
#       thread spinning left on though the tasks share the machine,
#       the Estimator's RunConfig keywords besides the defaults)
SYSTEMS: Dict[str, tuple] = {
    "tf_estimator": ("tf.estimator 2.15", True, "estimator", 1, False, {}),
    "estimator_lite": ("estimator_lite", False, "estimator", 1, False, {}),
    "estimator_lite_round_robin": ("estimator_lite ps_placement=round_robin", False, "estimator",
                                   1, False, {"ps_placement": "round_robin"}),
    "estimator_lite_unpacked": ("estimator_lite pack_ps_transfers=False", False, "estimator", 1,
                                False, {"pack_ps_transfers": False}),
    "estimator_lite_k100": ("estimator_lite steps_per_loop=100", False, "estimator", 100, False,
                            {"steps_per_loop": 100}),
    "estimator_lite_spinning": ("estimator_lite, thread spinning on", False, "estimator", 1, True,
                                {}),
    "bare_tf215": ("bare Session.run, TF 2.15", True, "bare", 1, False, {}),
    "bare_tf221": ("bare Session.run, TF 2.21", False, "bare", 1, False, {}),
    "in_graph_tf221": ("in-graph loop of 100, TF 2.21", False, "bare", 100, False, {}),
}
# name: (workers besides the chief, synchronous, ps tasks). --trainers/--ps name
# more: "t4_ps2" is async training by a chief and 3 workers, on 2 ps.
CLUSTERS: Dict[str, tuple] = {
    "async1": (1, False, 1), "async2": (2, False, 1), "async4": (4, False, 1),
    "sync2": (2, True, 1), "async2_ps2": (2, False, 2),
}
_SCALING_CLUSTER = re.compile(r"^t(\d+)_ps(\d+)$")
# Issue 19's clusters, which a run measures unless --clusters says otherwise.
DEFAULT_CLUSTERS = ("async1", "async2", "async4", "sync2")
# What --trainers compares unless --systems says otherwise: estimator_lite and its TF's floor.
SCALING_SYSTEMS = ("estimator_lite", "bare_tf221")
SHORT_SECS = 6.0  # the window of --quick and --trainers runs
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
STEP_READ_SECS = 1.0
START_TIMEOUT_SECS = 240
STOP_TIMEOUT_SECS = 60


def cluster_shape(name: str) -> Tuple[int, bool, int]:
  """(workers besides the chief, synchronous, ps tasks) of a cluster name.

  Raises:
    KeyError: neither a name of CLUSTERS nor "t<trainers>_ps<ps>" (trainers, ps >= 1).
  """
  if name in CLUSTERS:
    return CLUSTERS[name]
  match = _SCALING_CLUSTER.match(name)
  if not match or int(match.group(1)) < 1 or int(match.group(2)) < 1:
    raise KeyError(name)
  return int(match.group(1)) - 1, False, int(match.group(2))


# ---------------------------------------------------------------------------
# One task of a cluster (a fresh process, under either TensorFlow).

def _task(spec: Dict[str, Any]) -> None:
  task = json.loads(os.environ["TF_CONFIG"])  # the harness sets it
  spec = dict(spec, cluster=task["cluster"], role=task["task"]["type"],
              index=task["task"]["index"])
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
    self.spec = spec
    self.runs: List[float] = []
    self.steps: List[Tuple[float, int]] = []
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
    """Whether the next run fetches the global step: the chief's, every so many runs, and
    at least every STEP_READ_SECS (a slow cluster still has reads in a short window)."""
    if self.spec["role"] != "chief":
      return False
    return (len(self.runs) % self._step_reads == 0
            or (bool(self.steps) and time.time() - self.steps[-1][0] >= STEP_READ_SECS))

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
  config = api.RunConfig(model_dir=spec["model_dir"], experimental_max_worker_delay_secs=0,
                         **spec["run_config"])
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

  # tf.estimator's placement: replica_device_setter's round robin over the ps tasks.
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

log = harness.log


class _Run:
  """One fresh cluster of one system, on cluster.Cluster: its tasks and its trainers' records.

  Leaving it asks the trainers to stop (a stop file their recorders watch),
  waits a bounded time for each trainer's record, then stops every task.
  """

  def __init__(self, system: str, cluster: str, args: argparse.Namespace,
               pythons: Dict[bool, Tuple[str, Dict[str, str]]]) -> None:
    _, reference, kind, steps_per_run, spinning, run_config = SYSTEMS[system]
    workers, self.sync, ps_tasks = cluster_shape(cluster)
    self.cluster = harness.Cluster({"ps": ps_tasks, "chief": 1, "worker": workers},
                                   prefix=f"ps_cluster_{system}_{cluster}_")
    self.dir = self.cluster.dir
    self.common = dict(kind=kind, reference=reference, model=args.model,
                       steps_per_run=steps_per_run, spinning=spinning, run_config=run_config,
                       sync=self.sync, model_dir=os.path.join(self.dir, "model"),
                       stop=os.path.join(self.dir, "stop"))
    self.python, self.env = pythons[reference]

  def __enter__(self) -> "_Run":
    return self

  def __exit__(self, *exc: Any) -> None:
    try:
      open(self.common["stop"], "w").close()
      deadline = time.time() + STOP_TIMEOUT_SECS
      for name, process in self.cluster.procs.items():
        while (not name.startswith("ps") and process.poll() is None
               and not os.path.exists(self._paths(name)["out"]) and time.time() < deadline):
          time.sleep(0.1)
    finally:
      self.cluster.stop()

  def _paths(self, name: str) -> Dict[str, str]:
    return {"ready": os.path.join(self.dir, name + ".ready"),
            "out": os.path.join(self.dir, name + ".json")}

  def start(self, role: str, index: int) -> None:
    spec = dict(self.common, **self._paths(f"{role}{index}"))
    self.cluster.start(role, index, [self.python, os.path.abspath(__file__), "task",
                                     json.dumps(spec)], self.env)

  def wait_ready(self, names: List[str]) -> None:
    self.cluster.wait_for(
        lambda: all(os.path.exists(self._paths(n)["ready"]) for n in names),
        timeout=START_TIMEOUT_SECS, what=f"{READY_RUNS} runs of each of {names}")

  def results(self, name: str) -> Dict[str, Any]:
    with open(self._paths(name)["out"]) as f:
      return json.load(f)


def measure(system: str, cluster: str, args: argparse.Namespace,
            pythons: Dict[bool, Tuple[str, Dict[str, str]]]) -> Dict[str, Any]:
  """One fresh cluster of `system`: global steps/s over the window, CPU per step, peak RSS."""
  workers, sync, ps_tasks = cluster_shape(cluster)
  trainer_names = ["chief0"] + [f"worker{i}" for i in range(workers)]
  with _Run(system, cluster, args, pythons) as c:
    for i in range(ps_tasks):
      c.start("ps", i)
    c.start("chief", 0)
    if not sync:  # a worker finds the variables initialised (tf.estimator's waits 30 s otherwise)
      c.wait_ready(["chief0"])
    for i in range(workers):
      c.start("worker", i)
    c.wait_ready(trainer_names)
    # Held once the trainers step (a quarter core would stretch TensorFlow's import
    # fourfold), and for the settling time before the window.
    quota = cpu_quota.CpuQuota(args.ps_cores) if args.ps_cores else None
    try:
      if quota:
        for i in range(ps_tasks):
          quota.limit(c.cluster.procs[f"ps{i}"].pid)
      time.sleep(SETTLE_SECS)
      pids = {name: p.pid for name, p in c.cluster.procs.items()}
      cpu_start, start = {n: harness.cpu_secs(pid) for n, pid in pids.items()}, time.time()
      time.sleep(args.secs)
      cpu_end, end = {n: harness.cpu_secs(pid) for n, pid in pids.items()}, time.time()
    finally:
      if quota:
        quota.remove()
    rss = {n: harness.peak_rss_mb(pid) for n, pid in pids.items()}
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


# Systems a saved run may name that this script no longer measures: their labels.
RETIRED_LABELS = {"estimator_lite_nospin": "estimator_lite, thread spinning off"}


def _label(system: str) -> str:
  """A system's label in the tables (saved runs may name a retired system)."""
  return SYSTEMS[system][0] if system in SYSTEMS else RETIRED_LABELS.get(system, system)


def _task_cpu(results: List[Dict[str, Any]], task: str) -> Optional[float]:
  """A task's CPU a global step (a worker: the workers' mean), µs, median over measurements."""
  found = [_role_cpu(r, "worker") if task == "worker" else r["cpu_us_per_step_by_task"].get(task)
           for r in results if r.get("cpu_us_per_step_by_task")]
  values = [v for v in found if v is not None]
  return statistics.median(values) if values else None


def _scaling_md(data: Dict[str, Any], ok: List[Dict[str, Any]]) -> List[str]:
  """The worker-scaling table: a column per --trainers cluster, a block of rows per system."""
  clusters = [c for c in data["clusters"] if _SCALING_CLUSTER.match(c)]
  cores = data.get("cores")
  if not clusters or not cores:
    return []

  def ms(value: Optional[float]) -> str:
    return "—" if value is None else f"{value / 1000:.2f}"

  ps_names = [f"ps{i}" for i in range(max(cluster_shape(c)[2] for c in clusters))]
  held = f"; each ps held to {data['ps_cores']:g} cores" if data.get("ps_cores") else ""
  lines = ["", f"### Worker scaling (async, median over rounds; {cores} cores{held}; CPU a "
           "global step in ms)", "", "| | " + " | ".join(clusters) + " |",
           "|---" * (len(clusters) + 1) + "|",
           "| trainers (chief + workers) / ps tasks | " + " | ".join(
               f"{cluster_shape(c)[0] + 1} / {cluster_shape(c)[2]}" for c in clusters) + " |"]
  for system in data["systems"]:
    label = _label(system)
    mine = {c: [r for r in ok if r["system"] == system and r["cluster"] == c] for c in clusters}
    if not any(mine.values()):
      continue
    rows = {
        "global steps/s": lambda rs: _median_range([r["steps_per_sec"] for r in rs]),
        "CPU a global step, all tasks": lambda rs: ms(_median(rs, system, rs[0]["cluster"],
                                                               "cpu_us_per_step")),
        "CPU a global step, " + " / ".join(ps_names): lambda rs: " / ".join(
            ms(_task_cpu(rs, n)) for n in ps_names),
        "CPU a global step, chief / a worker (mean)": lambda rs: " / ".join(
            ms(_task_cpu(rs, n)) for n in ("chief0", "worker")),
        f"machine's CPU bound ({cores} cores / CPU a step), global steps/s": lambda rs: (
            f"{cores * 1e6 / _median(rs, system, rs[0]['cluster'], 'cpu_us_per_step'):.0f}"),
        f"cores used / fraction of {cores}": lambda rs: (
            f"{_median(rs, system, rs[0]['cluster'], 'cpu_cores'):.2f} / "
            f"{_median(rs, system, rs[0]['cluster'], 'cpu_cores') / cores:.2f}"),
    }
    for name, cell in rows.items():
      lines.append(f"| {label}: {name} | " + " | ".join(
          cell(mine[c]) if mine[c] else "—" for c in clusters) + " |")
  placement = ("bare Session.run places variables by replica_device_setter's round robin, "
               "as tf.estimator does")
  return lines + ["", f"({placement}; estimator_lite by its RunConfig's default.)"]


def pooled(runs: List[Dict[str, Any]]) -> Dict[str, Any]:
  """Several runs' JSONs as one run of all their rounds (the same code, measured again).

  Raises:
    ValueError: the runs measured different models, windows, clusters or systems.
  """
  first, results, rounds = runs[0], [], 0
  for run in runs:
    for key in ("model", "secs", "clusters", "systems", "ps_cores"):
      if run.get(key) != first.get(key):
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
    lines.append(f"| {_label(system)} | " + " | ".join(cells) + " |")
  lines += ["", "### CPU of all the cluster's processes, µs per global step (median)", "",
            "| system | " + " | ".join(clusters) + " |", "|---" * (len(clusters) + 1) + "|"]
  for system in systems:
    cells = [_median_range([r["cpu_us_per_step"] for r in ok if r["system"] == system
                            and r["cluster"] == cluster]) if any(
                                r["system"] == system and r["cluster"] == cluster for r in ok)
             else "—" for cluster in clusters]
    lines.append(f"| {_label(system)} | " + " | ".join(cells) + " |")
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
    lines.append(f"| {_label(system)} | " + " | ".join(cells) + " |")
  lines += _scaling_md(data, ok)
  targets = [(kind, a, b, bound, cluster) for kind, a, b, bound in TARGETS for cluster in clusters
             if cluster.startswith(kind) and a in systems and b in systems]
  if targets:
    lines += ["", "### Targets (ratio of the medians; each round's own ratio beside it)", "",
              "| target | cluster | ratio | met | a round's ratio, median [min–max] |",
              "|---|---|---|---|---|"]
  for kind, a, b, bound, cluster in targets:
    num, den = _median(ok, a, cluster, "steps_per_sec"), _median(ok, b, cluster, "steps_per_sec")
    ratio = num / den if num and den else None
    met = "—" if ratio is None else ("yes" if ratio >= bound else "**no**")
    paired = _round_ratios(ok, a, b, cluster)
    lines.append(f"| {_label(a)} ≥ {bound}× {_label(b)} | {cluster} | "
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
    lines.append(f"| {_label(a)} / {_label(b)} | " + " | ".join(cells) + " |")
  lines += ["", "### Peak RSS a role, MB (median over every run of the system)", "",
            "| system | ps | chief | worker (largest) |", "|---|---|---|---|"]
  for system in systems:
    rss = [_role_rss(ok, system, role) for role in ("ps", "chief", "worker")]
    lines.append(f"| {_label(system)} | " + " | ".join(
        "—" if v is None else f"{v:.0f}" for v in rss) + " |")
  for a, b in (("estimator_lite", "tf_estimator"), ("estimator_lite", "bare_tf221")):
    if a in systems and b in systems:
      ratios = []
      for role in ("ps", "chief", "worker"):
        num, den = _role_rss(ok, a, role), _role_rss(ok, b, role)
        ratios.append(f"{role} {num / den:.2f}" if num and den else f"{role} —")
      lines.append(f"\nPeak RSS {_label(a)} / {_label(b)} (bound {RSS_BOUND}): "
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
  parser.add_argument("--clusters", help=f"of {', '.join(CLUSTERS)}, or t<trainers>_ps<ps>; "
                      f"default {','.join(DEFAULT_CLUSTERS)}")
  parser.add_argument("--trainers", help="worker scaling: async clusters of these trainer "
                      "counts (chief + workers), e.g. 1,2,4,8, on --ps ps tasks")
  parser.add_argument("--ps", type=int, default=2, help="ps tasks of the --trainers clusters")
  parser.add_argument("--systems", help="default: every system; with --trainers, "
                      + ",".join(SCALING_SYSTEMS))
  parser.add_argument("--model", default="linear")
  parser.add_argument("--rounds", type=int, default=3)
  parser.add_argument("--secs", type=float, help="the window; default 10 s (--quick and "
                      f"--trainers: {SHORT_SECS:g} s)")
  parser.add_argument("--quick", action="store_true",
                      help=f"one round of {SHORT_SECS:g} s windows")
  parser.add_argument("--out", default=os.path.join(HERE, "ps_cluster.json"))
  parser.add_argument("--report", help="also write the tables to this file")
  parser.add_argument("--report-from", help="print the tables of a saved JSON; run nothing. "
                      "Several, comma-separated: the tables of all their rounds together")
  parser.add_argument("--ps-cores", type=float, help="hold each ps task to this many cores "
                      "(a cgroup CPU quota; needs root) while measuring: the ps is then the "
                      "bottleneck, as on a cluster whose ps machines are its busiest")
  parser.add_argument("--py-new", default=harness.NEW_PYTHON)
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
    args.rounds = 1
  if args.secs is None:
    args.secs = SHORT_SECS if args.quick or args.trainers else 10.0
  if args.trainers and args.clusters:
    parser.error("--trainers and --clusters both name the clusters: give one")
  if args.trainers:
    clusters = [f"t{n}_ps{args.ps}" for n in args.trainers.split(",") if n]
  else:
    clusters = [c for c in (args.clusters or ",".join(DEFAULT_CLUSTERS)).split(",") if c]
  systems = [s for s in (args.systems or ",".join(SCALING_SYSTEMS if args.trainers else SYSTEMS)
                         ).split(",") if s]
  unknown = [s for s in systems if s not in SYSTEMS]
  for name in clusters:
    try:
      cluster_shape(name)
    except KeyError:
      unknown.append(name)
  if unknown:
    parser.error(f"unknown cluster or system: {unknown}")
  pythons = {False: (args.py_new, harness.python_for(False)[1])}
  if any(SYSTEMS[s][1] for s in systems):
    pythons[True] = harness.python_for(True)
  data = dict(model=args.model, secs=args.secs, rounds=args.rounds, clusters=clusters,
              systems=systems, started=datetime.datetime.now().isoformat(timespec="seconds"),
              machine=f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}",
              cores=os.cpu_count(), ps_cores=args.ps_cores,
              command="python benchmarks/ps_cluster.py " + " ".join(argv), results=[])
  began = time.time()
  for round_index in range(args.rounds):
    for cluster in clusters:
      order = [s for s in systems if not (cluster_shape(cluster)[1] and s in ASYNC_ONLY)]
      shift = round_index % len(order)
      for system in order[shift:] + order[:shift]:
        log(f"round {round_index + 1}/{args.rounds}: {cluster} {system}")
        try:
          result = measure(system, cluster, args, pythons)
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
