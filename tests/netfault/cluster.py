"""A real cluster on one machine, each role on its own loopback address, ready for faults.

ps, chief, two workers and an evaluator, each its own process running
program.py. Each role has:

* its own address in 127.0.0.0/8 (ps 127.0.0.2, chief 127.0.0.3, ...; the
  evaluator's is unused: it serves nothing) and an OS-assigned port;
* its own group id, which its process runs as (still as root: files stay
  readable and writable wherever the checkout is), so that iptables can tell
  its packets from the others' (rules.py);
* optionally a delayed link to the ps: a pair of DelayProxy, one in front of
  the ps for this role and one in front of this role for the ps, each on an
  address of its own; TF_CONFIG tells each side the proxy's address.

Each process incarnation logs to ROOT/NAME.log (NAME as "worker1-2": the
second start of worker:1). A monitor thread records each incarnation's
progress over time (from the files program.py writes) and checks the
`checkpoint` index as training goes (checks.IndexWatch). Every wait is
bounded; `close()` kills every process started here and closes the proxies.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from typing import Dict, List, Optional, Sequence, Tuple

from estimator_lite import launch

from netfault import checks
from netfault.proxy import DelayProxy

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PROGRAM = os.path.join(HERE, "program.py")
Address = Tuple[str, int]

# (job, index), short name, last byte of its address.
ROLES = [(("ps", 0), "ps", 2), (("chief", 0), "chief", 3), (("worker", 0), "worker0", 4),
         (("worker", 1), "worker1", 5), (("evaluator", 0), "evaluator", 6)]
TRAINERS = ("chief", "worker0", "worker1")
_PROXY_HOSTS = iter(range(20, 250))
# A role's group id: distinct per role, and per test process (two runs side by side).
_GID_BASE = 40000 + (os.getpid() % 2000) * 8


class Role:
  """One role of the cluster: its task, address, group id and its incarnations."""

  def __init__(self, task: Tuple[str, int], name: str, host_byte: int, gid: int, port: int):
    self.task, self.name, self.gid = task, name, gid
    self.address: Address = (f"127.0.0.{host_byte}", port)
    self.starts = 0

  @property
  def serves(self) -> bool:
    return self.task[0] != "evaluator"


class LoopbackCluster:
  """The cluster's roles, processes, proxies and records; see the module docstring.

  Args:
    root: a new directory for the model_dir, logs and control files.
    max_steps: TrainSpec.max_steps.
    save_steps: RunConfig.save_checkpoints_steps.
    pace_secs: the sleep after each step until `release()`.
    delayed: trainers (names from TRAINERS) whose links to the ps go through DelayProxy.
  """

  def __init__(self, root: str, *, max_steps: int, save_steps: int, pace_secs: float,
               delayed: Sequence[str] = ()):
    self.root = root
    self.model_dir = os.path.join(root, "model")
    self.control = os.path.join(root, "control")
    os.makedirs(self.control)
    self.max_steps, self.save_steps, self.pace_secs = max_steps, save_steps, pace_secs
    ports = launch.free_ports(len(ROLES) + 2 * len(delayed))
    self.roles: Dict[str, Role] = {}
    for i, ((task, name, host_byte), port) in enumerate(zip(ROLES, ports)):
      self.roles[name] = Role(task, name, host_byte, _GID_BASE + i, port)
    # (from role, to role) -> the proxy `from` reaches `to` through.
    self.proxies: Dict[Tuple[str, str], DelayProxy] = {}
    proxy_ports = iter(ports[len(ROLES):])
    for name in delayed:
      for a, b in ((name, "ps"), ("ps", name)):
        listen = (f"127.0.0.{next(_PROXY_HOSTS)}", next(proxy_ports))
        self.proxies[(a, b)] = DelayProxy(listen, self.roles[b].address)
    self.processes: Dict[str, subprocess.Popen] = {}   # incarnation -> process
    self.current: Dict[str, str] = {}                  # role -> its running incarnation
    self.progress = checks.ProgressLog(self.control)
    self.index = checks.IndexWatch(self.model_dir)
    self._stop = threading.Event()
    self._monitor = threading.Thread(target=self._watch, daemon=True, name="cluster-monitor")
    self._monitor.start()

  # -- addresses ------------------------------------------------------------------------
  def seen_by(self, viewer: str, name: str) -> Address:
    """The address role `viewer` reaches role `name` at: its own, or a proxy's."""
    proxy = self.proxies.get((viewer, name))
    return proxy.listen if proxy else self.roles[name].address

  def tf_config(self, viewer: str) -> str:
    """Role `viewer`'s TF_CONFIG: the cluster as it sees it."""
    cluster: Dict[str, List[str]] = {}
    for name, role in self.roles.items():
      if role.serves:
        host, port = self.seen_by(viewer, name) if name != viewer else role.address
        cluster.setdefault(role.task[0], []).append(f"{host}:{port}")
    job, index = self.roles[viewer].task
    return json.dumps({"cluster": cluster, "task": {"type": job, "index": index}})

  def set_latency(self, name: str, secs: float) -> None:
    """Delays each direction of role `name`'s links to the ps by `secs` (it must be `delayed`)."""
    for link in ((name, "ps"), ("ps", name)):
      self.proxies[link].delay_secs = secs

  # -- processes ------------------------------------------------------------------------
  def start(self, name: str) -> str:
    """Starts role `name` (again) and returns the incarnation's name."""
    role = self.roles[name]
    role.starts += 1
    incarnation = f"{name}-{role.starts}"
    env = dict(os.environ, TF_CONFIG=self.tf_config(name), TF_CPP_MIN_LOG_LEVEL="1")
    env["PYTHONPATH"] = os.pathsep.join(
        [REPO] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env.pop("TF_USE_LEGACY_KERAS", None)
    with open(self.log_path(incarnation), "wb") as log:
      self.processes[incarnation] = subprocess.Popen(
          [sys.executable, PROGRAM, self.model_dir, self.control, incarnation,
           str(self.max_steps), str(self.save_steps), str(self.pace_secs)],
          cwd=self.root, env=env, stdout=log, stderr=subprocess.STDOUT,
          stdin=subprocess.DEVNULL, group=role.gid, extra_groups=[], start_new_session=True)
    self.current[name] = incarnation
    return incarnation

  def start_all(self, timeout: float) -> None:
    """Starts every role; returns once each trainer has made a step."""
    for name in self.roles:
      self.start(name)
    self.wait_for("every trainer's first step",
                  lambda: all(self.progress.step_times(t) for t in TRAINERS), timeout)

  def finish(self, timeout: float) -> int:
    """Releases the pacing and waits for every role but the ps to exit with 0.

    Returns:
      The highest global step reported before the release.

    Raises:
      AssertionError: a role exited with another status, or ran past `timeout`.
    """
    step_at_release = self.global_step()
    self.release()
    for name in TRAINERS + ("evaluator",):
      incarnation = self.current[name]
      status = self.wait_exit(name, timeout)
      if status != 0:
        raise AssertionError(f"{incarnation} exited with {status}:\n{self.tail(incarnation)}")
    self.index.final_check()
    return step_at_release

  def kill(self, name: str, signum: int = signal.SIGKILL, timeout: float = 60) -> int:
    """Sends `signum` to role `name`'s running incarnation; returns its exit status."""
    incarnation = self.current.pop(name)
    process = self.processes[incarnation]
    process.send_signal(signum)
    try:
      return process.wait(timeout)
    except subprocess.TimeoutExpired:
      raise AssertionError(f"{incarnation} still running {timeout} s after signal "
                           f"{signum}:\n{self.tail(incarnation)}") from None

  def release(self) -> None:
    """Ends the pacing: the trainers run at full speed to max_steps."""
    open(os.path.join(self.control, "release"), "w").close()

  def wait_exit(self, name: str, timeout: float) -> int:
    """Waits for role `name`'s running incarnation to exit on its own; returns its status."""
    incarnation = self.current.pop(name)
    try:
      return self.processes[incarnation].wait(timeout)
    except subprocess.TimeoutExpired:
      self.current[name] = incarnation
      raise AssertionError(f"{incarnation} still running after {timeout} s:\n"
                           f"{self.tail(incarnation)}") from None

  def check_running(self, what: str) -> None:
    """Fails, with its log, if a role that should be running has exited."""
    for name, incarnation in self.current.items():
      status = self.processes[incarnation].poll()
      if status is not None:
        raise AssertionError(f"{incarnation} exited with {status} while {what}:\n"
                             f"{self.tail(incarnation)}")

  def wait_for(self, what: str, predicate, timeout: float):
    """Polls `predicate` until it returns something truthy and returns that; bounded."""
    deadline = time.monotonic() + timeout
    while True:
      value = predicate()
      if value:
        return value
      self.check_running(f"waiting for {what}")
      if time.monotonic() > deadline:
        tails = "\n".join(self.tail(i, 1500) for i in sorted(self.current.values()))
        raise AssertionError(f"timed out after {timeout} s waiting for {what}\n{tails}")
      time.sleep(0.1)

  def sleep(self, secs: float, what: str) -> None:
    """Sleeps `secs`, failing at once if a role that should be running exits."""
    deadline = time.monotonic() + secs
    while time.monotonic() < deadline:
      self.check_running(what)
      time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))

  # -- logs and progress ----------------------------------------------------------------
  def log_path(self, incarnation: str) -> str:
    return os.path.join(self.root, f"{incarnation}.log")

  def log(self, incarnation: str) -> str:
    with open(self.log_path(incarnation), "rb") as f:
      return f.read().decode(errors="replace")

  def logs(self, name: str) -> str:
    """Every incarnation's log of role `name`, in order."""
    return "".join(self.log(f"{name}-{i}") for i in range(1, self.roles[name].starts + 1))

  def tail(self, incarnation: str, chars: int = 4000) -> str:
    return f"--- {incarnation} log (tail) ---\n{self.log(incarnation)[-chars:]}"

  def found(self, incarnation: str, pattern: str) -> Optional[re.Match]:
    matches = list(re.finditer(pattern, self.log(incarnation)))
    return matches[-1] if matches else None

  def global_step(self) -> int:
    """The highest global step any trainer has reported."""
    return self.progress.global_step()

  def _watch(self) -> None:
    while not self._stop.wait(0.1):
      self.progress.poll()
      self.index.poll()

  def close(self) -> None:
    """Kills every process started here (each one's whole session) and closes the proxies."""
    self._stop.set()
    self._monitor.join(10)
    for process in self.processes.values():
      if process.poll() is None:
        try:
          os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
          pass
    for process in self.processes.values():
      try:
        process.wait(30)
      except subprocess.TimeoutExpired:
        pass
    for proxy in self.proxies.values():
      proxy.close()
