"""The one harness every cluster measurement of benchmarks/ starts its processes with.

    import cluster
    python, env = cluster.python_for(reference=False)
    with cluster.Cluster({"ps": 2, "chief": 1, "worker": 1}) as c:
      for role, index in (("ps", 0), ("ps", 1), ("chief", 0), ("worker", 0)):
        c.start(role, index, [python, "task.py"], env)
      c.wait_for(lambda: os.path.exists(os.path.join(c.dir, "chief0.ready")), timeout=240,
                 what="the chief's first steps")
      cpu = cluster.cpu_secs(c.procs["chief0"].pid)

A Cluster owns a temp dir (logs, model_dir, marker files; kept after it ends,
so that a failure can be read) and the processes it started: each task a fresh
process with its TF_CONFIG, on free localhost ports the OS gave. On exit it
stops only those processes (terminate, then kill after a bounded grace),
whatever happened inside. Every wait is bounded, and a wait fails early, with
the task's log tail, when a process it depends on ended.

The one cluster this module does not start is chaos.py's: a fault run needs
each task on a loopback address of its own, with proxies and iptables rules
between tasks, so that one link can be cut or delayed. That is the network
fault tests' harness (tests/netfault/cluster.py), and chaos.py uses it as the
tests do rather than keep a second copy here.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
NEW_PYTHON = os.path.join(REPO, ".venv", "bin", "python")
# The jobs of TF_CONFIG's "cluster" dict, in TensorFlow's order; an evaluator
# has a TF_CONFIG task but is no member of the cluster.
CLUSTER_JOBS = ("ps", "chief", "worker")
STOP_GRACE_SECS = 10.0
POLL_SECS = 0.1
# absl's C++ log lines (I0000 00:00:..., W0000, E0000) and its preamble.
_CPP_LOG_LINE = re.compile(r"^([IWEF]\d{4} |WARNING: All log messages before absl)")


def log(message: str) -> None:
  """A progress line on stderr, with the time."""
  print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def free_port() -> int:
  """A localhost port the OS says is free now."""
  with socket.socket() as s:
    s.bind(("localhost", 0))
    return s.getsockname()[1]


def cluster_spec(jobs: Mapping[str, int]) -> Dict[str, List[str]]:
  """TF_CONFIG's "cluster" dict for these task counts, on free localhost ports.

  Args:
    jobs: tasks a job, e.g. {"ps": 2, "chief": 1, "worker": 3, "evaluator": 1}.

  Returns:
    {"ps": ["localhost:P", ...], "chief": [...], "worker": [...]}: the jobs with
    tasks, in TensorFlow's order; the evaluator left out, as in TF_CONFIG.

  Raises:
    ValueError: a job TF_CONFIG does not know.
  """
  unknown = set(jobs) - set(CLUSTER_JOBS) - {"evaluator"}
  if unknown:
    raise ValueError(f"unknown jobs: {sorted(unknown)}")
  return {job: [f"localhost:{free_port()}" for _ in range(jobs[job])]
          for job in CLUSTER_JOBS if jobs.get(job)}


def _ref_env() -> Any:
  """tests/reference/ref_env.py, which knows the reference venv (not a package: loaded by path)."""
  spec = importlib.util.spec_from_file_location(
      "ref_env", os.path.join(REPO, "tests", "reference", "ref_env.py"))
  assert spec is not None and spec.loader is not None  # a path spec always has a loader
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def python_for(reference: bool) -> Tuple[str, Dict[str, str]]:
  """The interpreter and environment a task runs with.

  Args:
    reference: True for tf.estimator 2.15's reference venv (TF 2.15; created
      when missing, see tests/reference/ref_env.py), False for the project's
      .venv (TF 2.21).

  Returns:
    (python, env): env is this process's environment, less TF_CONFIG (each task
    gets its own) and, for the reference, less the current venv's variables;
    output unbuffered, TensorFlow's C++ INFO/WARNING lines off unless
    TF_CPP_MIN_LOG_LEVEL is set already.

  Raises:
    RuntimeError: the reference venv is missing and cannot be created.
  """
  extra = {"PYTHONUNBUFFERED": "1",
           "TF_CPP_MIN_LOG_LEVEL": os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2")}
  if reference:
    ref_env = _ref_env()
    python, env = ref_env.ensure_ref_python(log=log), ref_env.subprocess_env(**extra)
  else:
    python, env = NEW_PYTHON, dict(os.environ, **extra)
  env.pop("TF_CONFIG", None)
  return python, env


def cpu_secs(pid: int) -> Optional[float]:
  """User + system CPU seconds of a live process (None once it is gone)."""
  try:
    with open(f"/proc/{pid}/stat") as f:
      fields = f.read().rsplit(")", 1)[1].split()  # the name, in parentheses, may hold spaces
  except OSError:
    return None
  return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_mb(pid: int) -> Optional[float]:
  """A live process's peak resident memory (VmHWM), MB; None once it is gone."""
  try:
    with open(f"/proc/{pid}/status") as f:
      for line in f:
        if line.startswith("VmHWM:"):
          return int(line.split()[1]) / 1024
  except OSError:
    return None
  return None


class Cluster:
  """The processes of one cluster.

  A context manager: on exit it stops (terminate, then kill after a bounded
  grace) only the processes it started, whatever happened; the temp dir stays
  (logs).

  Attributes:
    dir: the temp dir: logs (<task name>.log), model_dir, marker files.
    spec: TF_CONFIG's "cluster" dict (cluster_spec(jobs)).
    procs: the started processes by task name: "ps0", "chief0", "worker1", "evaluator0".
  """

  def __init__(self, jobs: Mapping[str, int], *, prefix: str = "cluster_") -> None:
    """Picks the ports and makes the temp dir; starts nothing.

    Args:
      jobs: tasks a job, as cluster_spec takes them.
      prefix: the temp dir's name prefix.
    """
    self.spec = cluster_spec(jobs)
    self.dir = tempfile.mkdtemp(prefix=prefix)
    self.procs: Dict[str, subprocess.Popen] = {}

  def __enter__(self) -> "Cluster":
    return self

  def __exit__(self, *exc: Any) -> None:
    self.stop()

  def stop(self, grace: float = STOP_GRACE_SECS) -> None:
    """Terminates the started processes still running; kills those alive after `grace` s."""
    for process in self.procs.values():
      if process.poll() is None:
        process.terminate()
    deadline = time.time() + grace
    for process in self.procs.values():
      try:
        process.wait(max(0.0, deadline - time.time()))
      except subprocess.TimeoutExpired:
        process.kill()
        process.wait()

  def tf_config(self, role: str, index: int) -> str:
    """The TF_CONFIG JSON of one task."""
    return json.dumps({"cluster": self.spec, "task": {"type": role, "index": index}})

  def start(self, role: str, index: int, argv: Sequence[str], env: Mapping[str, str]
            ) -> subprocess.Popen:
    """Starts one task: `argv` with `env` and the task's TF_CONFIG.

    Args:
      role: "ps", "chief", "worker" or "evaluator".
      index: the task's index in its job.
      argv: the command.
      env: its environment (python_for's); TF_CONFIG is set here.

    Returns:
      The process, also in procs[<role><index>]; stdout and stderr go to its log.

    Raises:
      ValueError: the task is started already.
    """
    name = f"{role}{index}"
    if name in self.procs:
      raise ValueError(f"{name} is started already")
    with open(self.log_path(name), "w") as out:
      self.procs[name] = subprocess.Popen(
          list(argv), env=dict(env, TF_CONFIG=self.tf_config(role, index)),
          stdout=out, stderr=subprocess.STDOUT, cwd=REPO)
    return self.procs[name]

  def log_path(self, name: str) -> str:
    """A task's log file."""
    return os.path.join(self.dir, name + ".log")

  def tail(self, name: str, lines: int = 15) -> str:
    """The last `lines` lines of a task's log, TensorFlow's C++ log lines left out."""
    try:
      with open(self.log_path(name)) as f:
        kept = [line for line in f if not _CPP_LOG_LINE.match(line)]
    except OSError as error:
      return f"(no log: {error})"
    return "".join(kept[-lines:])

  def ended(self) -> List[str]:
    """The started tasks that are no longer running."""
    return [name for name, process in self.procs.items() if process.poll() is not None]

  def wait_for(self, done: Callable[[], bool], *, timeout: float, what: str,
               watch: Optional[Sequence[str]] = None) -> None:
    """Polls `done` until it holds.

    Args:
      done: the condition.
      timeout: seconds to wait at most.
      what: what is waited for, for the error.
      watch: the tasks whose end fails the wait (default: every started one;
        name fewer once some task may end normally, e.g. an evaluator).

    Raises:
      RuntimeError: a started process ended first, or `timeout` passed; the
        message names `what`, the tasks that ended and a log tail.
    """
    deadline = time.time() + timeout
    while not done():
      ended = [name for name in self.ended() if watch is None or name in watch]
      if ended or time.time() > deadline:
        why = (f"{', '.join(ended)} ended" if ended else f"{timeout:.0f} s passed")
        name = ended[0] if ended else next(reversed(self.procs), "")
        raise RuntimeError(f"waiting for {what}: {why}; logs in {self.dir}; {name}'s tail:\n"
                           + self.tail(name))
      time.sleep(POLL_SECS)

  def wait_exits(self, names: Sequence[str], timeout: float, *, poll: float = POLL_SECS
                 ) -> Dict[str, Tuple[float, Optional[float]]]:
    """Waits for `names` to exit, each with status 0: when each exited, and its CPU seconds then.

    Args:
      names: the tasks that end on their own (not a ps, which serves until stopped).
      timeout: seconds to wait at most.
      poll: seconds between looks; an exit time is known to within this.

    Returns:
      {name: (time.time() at its exit, its CPU seconds: the last reading before
      it was reaped, or None)}.

    Raises:
      RuntimeError: one exited with another status, another task ended first,
        or `timeout` passed; the message has that task's log tail.
    """
    exits: Dict[str, Tuple[float, Optional[float]]] = {}
    cpu: Dict[str, Optional[float]] = {}
    deadline = time.time() + timeout
    while len(exits) < len(names):
      for name, process in self.procs.items():
        if name in exits:
          continue
        # Read before poll(): an exited, unreaped process still shows its final figure.
        cpu[name] = cpu_secs(process.pid) or cpu.get(name)
        code = process.poll()
        if code is None:
          continue
        if code != 0 or name not in names:
          raise RuntimeError(f"{name} ended (status {code}) first; logs in {self.dir}:\n"
                             + self.tail(name))
        exits[name] = (time.time(), cpu[name])
      if time.time() > deadline:
        running = [name for name in names if name not in exits]
        raise RuntimeError(f"{', '.join(running)} still run after {timeout:.0f} s; logs in "
                           f"{self.dir}:\n" + self.tail(running[0]))
      time.sleep(poll)
    return exits

  def wait_exit(self, name: str, timeout: float) -> int:
    """A task's return code, once it ended.

    Raises:
      RuntimeError: it still runs after `timeout` s.
    """
    try:
      return self.procs[name].wait(timeout)
    except subprocess.TimeoutExpired:
      raise RuntimeError(f"{name} still runs after {timeout:.0f} s; logs in {self.dir}:\n"
                         + self.tail(name)) from None
