"""Runs one training program as a whole cluster on this machine, or prints TF_CONFIGs for one.

    python -m estimator_lite.launch --ps 1 --workers 2 --evaluator -- python train.py ARGS

starts the chief, `--workers` more workers (the chief is not counted), `--ps`
parameter servers and, with `--evaluator`, an evaluator: each runs the same
command with its own TF_CONFIG, on free localhost ports chosen by the OS.
Every line a task prints is prefixed with its role (`[worker:0] ...`).

The tasks run inside one private network namespace (docs/security.md):
TensorFlow's servers listen unauthenticated on every interface, so a "local"
cluster would otherwise be open to the machine's whole network. If no
namespace can be made the launcher refuses to start; `--expose-to-network`
runs the tasks in the machine's network anyway, and says what is exposed. When
the chief exits, the workers and the evaluator get `--grace-secs` to finish
(the evaluator its final evaluation), then the rest are stopped by PID; the
launcher exits with the chief's status.

So that every worker trains, however fast the model, the chief and the
workers hold their first step until every worker's training session is up
(`--join-secs`, see _cluster/join_markers.py). The tasks share this machine's
cores, so their sessions run with TensorFlow's thread spinning off unless the
program sets its own `session_config` (_cluster/shared_machine.py). Every
`--status-secs` the launcher prints a table of the tasks (pid, state, own
steps, global step, steps/s, latest evaluation, read from their INFO logs),
and at the end a summary: exit codes, final step, where the model and the
exports are, and whether the run trained nothing because the model_dir was
already finished. A task's own steps are the steps it trained itself (a lower
bound while it trains, exact when its train() ends), its global step the
shared count every trainer moves; ps tasks, which serve until stopped, show `done` when the launcher
ends them after training. TensorFlow's C++ start-up and shutdown chatter is
left out of the tasks' output (`--show-tf-logs`, or
`ESTIMATOR_LITE_SHOW_TF_LOGS=1` in the environment, keeps it).

    python -m estimator_lite.launch --ps 1 --workers 2 --evaluator \\
        --print-tf-config host0 host1 host2:2222 host3

prints the TF_CONFIG of each machine of a real cluster instead: one HOST[:PORT]
per training task, in the order chief, workers, ps (port 2222 by default); the
evaluator needs no address.

    python -m estimator_lite.launch --print-firewall

prints the iptables rules that let only the cluster's peers reach this task's
port, for the TF_CONFIG of this machine.
"""
from __future__ import annotations

import argparse
import ipaddress
import json
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from types import FrameType
from typing import (Any, BinaryIO, Callable, Dict, Iterable, List, NoReturn, Optional, Sequence,
                    TextIO, Tuple)

from estimator_lite._cluster import join_markers
from estimator_lite._cluster import shared_machine
from estimator_lite._cluster import task_status
from estimator_lite._util import cpp_noise

_DEFAULT_PORT = 2222
_TERM_GRACE_SECS = 5
_POLL_SECS = 0.1
# A namespace is made in milliseconds; the bound only keeps a broken system
# from hanging the launcher.
_NAMESPACE_TIMEOUT_SECS = 30
_DEFAULT_STATUS_SECS = 5.0
# The longest the training tasks wait for the workers to join: the last
# worker's staggered start (5 s each, at most 60, as tf.estimator) plus its
# start-up.
_DEFAULT_JOIN_SECS = 120.0


class LaunchError(ValueError):
  """The launcher's arguments cannot describe a cluster."""


def cluster_tasks(num_ps: int, num_workers: int, evaluator: bool) -> List[Tuple[str, int]]:
  """The (job, index) of every task: chief, workers, ps, then the evaluator."""
  tasks = [("chief", 0)] + [("worker", i) for i in range(num_workers)]
  tasks += [("ps", i) for i in range(num_ps)]
  if evaluator:
    tasks.append(("evaluator", 0))
  return tasks


def cluster_dict(tasks: Sequence[Tuple[str, int]], addresses: Iterable[str]
                 ) -> Dict[str, List[str]]:
  """{"chief": [...], "worker": [...], "ps": [...]}: the training tasks' addresses."""
  cluster: dict = {}
  for (job, _), address in zip([t for t in tasks if t[0] != "evaluator"], addresses):
    cluster.setdefault(job, []).append(address)
  return cluster


def tf_config(cluster: Dict[str, List[str]], job: str, index: int) -> str:
  """The TF_CONFIG string of task `job:index` in `cluster`."""
  return json.dumps({"cluster": cluster, "task": {"type": job, "index": index}})


def free_ports(count: int, host: str = "localhost") -> List[int]:
  """`count` distinct ports the OS reports free on `host`.

  Each is found by binding port 0 and reading the port back; all sockets stay
  open until every port is chosen, so the ports differ. (Another process may
  still take one before the task binds it; that is rare and fails loudly.)
  """
  sockets = []
  try:
    for _ in range(count):
      sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
      sock.bind((host, 0))
      sockets.append(sock)
    return [sock.getsockname()[1] for sock in sockets]
  finally:
    for sock in sockets:
      sock.close()


def _check_counts(num_ps: int, num_workers: int) -> None:
  if num_ps < 0 or num_workers < 0:
    raise LaunchError(f"--ps ({num_ps}) and --workers ({num_workers}) must be >= 0.")
  if num_workers > 0 and num_ps == 0:
    raise LaunchError(
        f"--workers {num_workers} needs --ps 1 or more: workers share the variables "
        "that live on the parameter servers (between-graph replication).")


def print_tf_configs(num_ps: int, num_workers: int, evaluator: bool, hosts: Sequence[str],
                     out: Optional[TextIO] = None) -> None:
  """Prints, for each machine, the TF_CONFIG it must be started with.

  Raises:
    LaunchError: the number of hosts is not 1 + workers + ps.
  """
  out = out or sys.stdout
  tasks = cluster_tasks(num_ps, num_workers, evaluator)
  training = [t for t in tasks if t[0] != "evaluator"]
  if len(hosts) != len(training):
    raise LaunchError(
        f"--print-tf-config got {len(hosts)} host(s) {hosts}, but the cluster has "
        f"{len(training)} training task(s) (1 chief + {num_workers} worker(s) + {num_ps} "
        "ps); give one HOST[:PORT] per task, in the order chief, workers, ps.")
  addresses = [h if ":" in h else f"{h}:{_DEFAULT_PORT}" for h in hosts]
  cluster = cluster_dict(tasks, addresses)
  for (job, index) in tasks:
    where = (f" on {addresses[training.index((job, index))]}" if job != "evaluator"
             else " on any machine that can read model_dir")
    out.write(f"# {job}:{index}{where}\n")
    out.write(f"export TF_CONFIG='{tf_config(cluster, job, index)}'\n")


class _Task:
  """One child process and the thread that copies its output, prefixed.

  `on_line(task name, line)` sees every line first, under `lock`, and says
  whether to print it.
  """

  def __init__(self, job: str, index: int, command: Sequence[str], env: Dict[str, str],
               out: BinaryIO, lock: threading.Lock,
               on_line: Callable[[str, bytes], bool]) -> None:
    self.name = f"{job}:{index}"
    self.job = job
    self.returncode: Optional[int] = None
    self.stopped = False
    # Stopped because its work was over (a ps once training ended), not cut short.
    self.done = False
    # Its own session: stopping the task (by its PID's group) also stops what
    # a wrapper script started, and Ctrl-C reaches it only through us.
    try:
      self.process = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      start_new_session=True)
    except OSError as e:
      raise LaunchError(f"cannot start {command[0]!r} for {self.name}: {e}") from e
    self._thread = threading.Thread(target=self._pump, args=(out, lock, on_line), daemon=True)
    self._thread.start()

  def _pump(self, out: BinaryIO, lock: threading.Lock,
            on_line: Callable[[str, bytes], bool]) -> None:
    prefix = f"[{self.name}] ".encode()
    stdout = self.process.stdout
    assert stdout is not None  # Popen(stdout=PIPE)
    for line in iter(stdout.readline, b""):
      if not line.endswith(b"\n"):
        line += b"\n"
      with lock:
        if on_line(self.name, line):
          out.write(prefix + line)
          out.flush()
    stdout.close()

  def poll(self) -> Optional[int]:
    if self.returncode is None:
      self.returncode = self.process.poll()
    return self.returncode

  def signal(self, signum: int) -> None:
    if self.poll() is None:
      try:
        os.killpg(self.process.pid, signum)
      except ProcessLookupError:
        pass

  def join_output(self, timeout: float = 5) -> None:
    self._thread.join(timeout)


class _Cluster:
  """The running tasks of a local cluster, what they report, and what the launcher prints."""

  def __init__(self, out: BinaryIO, *, show_tf_logs: bool, status_secs: float,
               heading: str) -> None:
    self._out = out
    self._status_secs = status_secs
    self._heading = heading
    self._next_table = time.monotonic() + status_secs
    self._lock = threading.Lock()
    self.tasks: List[_Task] = []
    self.status = task_status.ClusterStatus()
    self._noise = None if show_tf_logs else cpp_noise.NoiseFilter(
        cpu_only=not cpp_noise.machine_has_nvidia_devices())
    self._lines_seen = 0
    self._lines_at_last_table = 0
    self._started = time.monotonic()

  def say(self, message: str) -> None:
    with self._lock:
      self._say_locked(message)

  def _say_locked(self, message: str) -> None:
    for line in message.splitlines() or [""]:
      self._out.write(f"[launch] {line}\n".encode())
    self._out.flush()

  def _on_line(self, name: str, line: bytes) -> bool:
    self._lines_seen += 1
    if self._noise is not None and self._noise.is_noise(line):
      return False
    self.status.observe(name, line.decode(errors="replace"), time.monotonic())
    return True

  def start(self, job: str, index: int, command: Sequence[str], env: Dict[str, str]) -> _Task:
    task = _Task(job, index, command, env, self._out, self._lock, self._on_line)
    self.tasks.append(task)
    with self._lock:
      self.status.add(task.name, task.process.pid)
      self._say_locked(f"started {task.name} (pid {task.process.pid})")
    return task

  def elapsed(self) -> float:
    return time.monotonic() - self._started

  def _exit_states(self) -> Dict[str, str]:
    states = {}
    for task in self.tasks:
      if task.poll() is not None:
        if task.done:
          states[task.name] = "done"
        elif task.stopped:
          states[task.name] = f"stopped ({task.returncode})"
        else:
          states[task.name] = f"exited {task.returncode}"
    return states

  def print_table(self, heading: str, *, only_if_changed: bool = True) -> None:
    """Prints the status table (by default only if a task printed something since the last)."""
    with self._lock:
      if only_if_changed and self._lines_seen == self._lines_at_last_table:
        return
      self._lines_at_last_table = self._lines_seen
      rows = self.status.table(self._exit_states())
      self._say_locked("\n".join([heading] + ["  " + row for row in rows]))

  def print_summary(self) -> None:
    """The end: every task's last state, the final step, the model_dir and the exports."""
    self.print_table(f"summary after {self.elapsed():.0f} s:", only_if_changed=False)
    model_dir = self.status.model_dir()
    lines = []
    finished = self.status.finished_model_dir()
    if finished is not None:
      lines.append(_trained_nothing(model_dir, *finished, exported=bool(self.status.exports())))
    if model_dir:
      latest = _latest_checkpoint(model_dir)
      lines.append(f"model_dir: {model_dir}" + (
          f" (latest checkpoint: {latest}, step {_step_of(latest)})" if latest else
          " (no checkpoint)"))
    exports = self.status.exports()
    lines.append("exports: " + (", ".join(exports) if exports else "none"))
    last_eval = self.status.last_eval()
    if last_eval:
      lines.append(f"last evaluation: {last_eval}")
    if self._noise is not None and self._noise.hidden:
      lines.append(f"left out {self._noise.hidden} lines of TensorFlow's C++ start-up and "
                   "shutdown logs (--show-tf-logs shows them)")
    self.say("\n".join(lines))

  def of_job(self, *jobs: str) -> List[_Task]:
    return [t for t in self.tasks if t.job in jobs]

  def wait(self, tasks: Sequence[_Task], deadline: float) -> None:
    while any(t.poll() is None for t in tasks) and time.monotonic() < deadline:
      self.tick()
      time.sleep(_POLL_SECS)

  def tick(self) -> None:
    """Prints the status table when it is due (every status_secs; never when 0)."""
    if self._status_secs > 0 and time.monotonic() >= self._next_table:
      self._next_table = time.monotonic() + self._status_secs
      self.print_table(f"status at {self.elapsed():.0f} s ({self._heading}):")

  def stop(self, tasks: Sequence[_Task], *, done: Sequence[_Task] = ()) -> None:
    """SIGTERM, then SIGKILL after a few seconds, every task of `tasks` still running.

    Args:
      tasks: the tasks to stop.
      done: those of `tasks` whose work is over (ps tasks once training
        ended): their state shows `done`, not `stopped`.
    """
    running = [t for t in tasks if t.poll() is None]
    for task in running:
      task.stopped = True
      task.done = task in done
      task.signal(signal.SIGTERM)
    self.wait(running, time.monotonic() + _TERM_GRACE_SECS)
    for task in running:
      if task.poll() is None:
        task.signal(signal.SIGKILL)
        task.process.wait()
        task.poll()

  def summary(self) -> str:
    parts = []
    for task in self.tasks:
      state = f"exited with {task.returncode}"
      if task.done:
        state = "done (stopped by the launcher once training was over)"
      elif task.stopped:
        state = f"stopped ({state})"
      parts.append(f"{task.name} {state}")
    return "; ".join(parts)


def _trained_nothing(model_dir: Optional[str], step: Optional[int], max_steps: Optional[int],
                     exported: bool) -> str:
  """The summary's line for a run whose model_dir was already trained to max_steps."""
  where = model_dir or "the model_dir"
  holds = (f"already holds step {step} >= max_steps {max_steps}" if step is not None
           else "already holds a checkpoint at max_steps")
  line = (f"trained nothing: {where} {holds} (\"Skipping training since max_steps has "
          "already saved\"); to train more, use a new model_dir or a larger max_steps")
  if exported:
    # tf.estimator's evaluator does the same: a new process evaluates the
    # newest checkpoint once, and its exporters run after that evaluation.
    line += ("\nthe evaluator evaluated that final checkpoint again and wrote another export "
             "of it (tf.estimator's evaluator does the same)")
  return line


_CHECKPOINT_PATH_LINE = re.compile(r'^model_checkpoint_path: "(.*)"$', re.M)


def _latest_checkpoint(model_dir: str) -> Optional[str]:
  """The path in model_dir's `checkpoint` file (read as text: no TensorFlow here), or None."""
  try:
    with open(os.path.join(model_dir, "checkpoint"), encoding="utf-8") as f:
      match = _CHECKPOINT_PATH_LINE.search(f.read())
  except OSError:
    return None
  if not match:
    return None
  return os.path.join(model_dir, match.group(1))


def _step_of(checkpoint_path: str) -> str:
  return checkpoint_path.rsplit("-", 1)[-1]


class _PrivateNetwork:
  """The holder process of the cluster's network namespace (see _cluster/private_network.py)."""

  def __init__(self) -> None:
    # Imported here: the module is small, but the launcher's other paths
    # (--help, --print-tf-config) do not need it.
    from estimator_lite._cluster import private_network  # pylint: disable=g-import-not-at-top
    self._module = private_network
    self._process = subprocess.Popen(private_network.hold_command(), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert self._process.stdout is not None  # Popen(stdout=PIPE)
    ready, _, _ = select.select([self._process.stdout], [], [], _NAMESPACE_TIMEOUT_SECS)
    line = self._process.stdout.readline().decode(errors="replace") if ready else ""
    mode = private_network.parse_ready(line)
    if mode is None:
      self.close()
      reason = line.strip().removeprefix("failed ").strip() or (
          f"no answer in {_NAMESPACE_TIMEOUT_SECS} s")
      raise LaunchError(
          f"cannot run the cluster in a private network namespace ({reason}). TensorFlow's "
          "servers listen unauthenticated on every interface, so the launcher refuses to "
          "start a cluster that the network can reach. Allow unprivileged user namespaces "
          "(sysctl kernel.unprivileged_userns_clone=1 / user.max_user_namespaces > 0) or run "
          "as root; or pass --expose-to-network to run the tasks in this machine's network "
          "anyway (only on a trusted network; docs/security.md).")
    self.mode = mode
    self.pid = self._process.pid

  def wrap(self, command: Sequence[str]) -> List[str]:
    """`command`, to be started inside the namespace (the same PID once it runs)."""
    return self._module.join_command(self.pid, self.mode, command)

  def close(self) -> None:
    """Lets the holder end (tasks still inside keep the namespace until they exit)."""
    for pipe in (self._process.stdin, self._process.stdout):
      if pipe is not None:
        pipe.close()
    try:
      self._process.wait(_TERM_GRACE_SECS)
    except subprocess.TimeoutExpired:
      self._process.kill()
      self._process.wait()


def _is_loopback(host: str) -> bool:
  if host == "localhost":
    return True
  try:
    return ipaddress.ip_address(host.strip("[]")).is_loopback
  except ValueError:
    return False


def _exposure_warning(cluster: Dict[str, List[str]]) -> str:
  ports = ", ".join(f"{job}:{index} port {address.rsplit(':', 1)[1]}"
                    for job, addresses in cluster.items()
                    for index, address in enumerate(addresses))
  return ("WARNING: --expose-to-network: the tasks run in this machine's network, and "
          "TensorFlow's servers listen unauthenticated on every interface: anyone who can "
          f"reach this machine can run TensorFlow ops in them ({ports}). Use only on a "
          "trusted network (docs/security.md).")


class _Interrupted(KeyboardInterrupt):
  """The launcher got SIGTERM: stop the cluster as for Ctrl-C."""

  def __init__(self, signum: int) -> None:
    super().__init__(f"signal {signum}")
    self.signum = signum


def _raise_interrupt(signum: int, frame: Optional[FrameType]) -> NoReturn:
  del frame
  raise _Interrupted(signum)


def run_cluster(command: Sequence[str], num_ps: int, num_workers: int, evaluator: bool,
                grace_secs: float = 60.0, host: str = "localhost",
                out: Optional[BinaryIO] = None, *, expose_to_network: bool = False,
                join_secs: float = _DEFAULT_JOIN_SECS,
                status_secs: float = _DEFAULT_STATUS_SECS, show_tf_logs: bool = False) -> int:
  """Runs `command` as every task of a local cluster; see the module docstring.

  Args:
    command: the program and its arguments (a list).
    num_ps, num_workers: parameter servers, and workers besides the chief.
    evaluator: also start an evaluator task.
    grace_secs: after the chief exits, how long workers and the evaluator may
      take to finish before they are stopped.
    host: the address the tasks listen on.
    out: a binary stream for the prefixed output (stdout by default).
    expose_to_network: run the tasks in this machine's network instead of a
      private network namespace (a warning lists the exposed ports).
    join_secs: the longest the chief and the workers hold their first step
      for every worker's training session to be up (0: they do not wait).
    status_secs: how often to print the status table (0: never; the summary
      at the end is always printed).
    show_tf_logs: keep TensorFlow's C++ start-up and shutdown lines in the
      tasks' output.

  Returns:
    The chief's exit status (128 + N if it died of signal N); 130 if the
    launcher was interrupted (Ctrl-C), 143 if it got SIGTERM.

  Raises:
    LaunchError: bad counts, an empty command, a --host that is not loopback
      in a private network, or no private network namespace could be made.
  """
  if not command:
    raise LaunchError("no command: put the program after `--`, e.g. "
                      "`python -m estimator_lite.launch --ps 1 -- python train.py`.")
  _check_counts(num_ps, num_workers)
  if not expose_to_network and not _is_loopback(host):
    raise LaunchError(
        f"--host {host} is not a loopback address: the tasks run in a private network "
        "namespace whose only interface is loopback. Leave --host out, or pass "
        "--expose-to-network to listen on this machine's network (docs/security.md).")
  out = out or sys.stdout.buffer
  tasks = cluster_tasks(num_ps, num_workers, evaluator)
  training = [t for t in tasks if t[0] != "evaluator"]
  # In a fresh namespace every port is free; picking them out here, where the
  # launcher runs, also keeps --expose-to-network's ports free of clashes.
  ports = free_ports(len(training), "localhost" if not expose_to_network else host)
  cluster = cluster_dict(tasks, [f"{host}:{port}" for port in ports])
  network = None if expose_to_network else _PrivateNetwork()
  network_mode = ("this machine's network (--expose-to-network)" if network is None
                  else f"private network, {network.mode} mode")
  launched = _Cluster(out, show_tf_logs=show_tf_logs, status_secs=status_secs,
                      heading=network_mode)
  launched.say(f"cluster {json.dumps(cluster)}; command {command}")
  if network is None:
    launched.say(_exposure_warning(cluster))
  else:
    launched.say(f"network: private namespace ({network.mode} mode, held by pid {network.pid}); "
                 "the tasks reach each other on its loopback, nothing outside it can reach "
                 "their ports")
  join_env: Dict[str, str] = {}
  if join_secs > 0 and num_workers > 0:
    join_env = {join_markers.DIR_ENV: tempfile.mkdtemp(prefix="estimator_lite_launch_"),
                join_markers.WAIT_SECS_ENV: f"{join_secs:g}"}
    launched.say(f"training starts once all {num_workers} worker(s) have joined "
                 f"(at most {join_secs:g} s; --join-secs)")
  in_main_thread = threading.current_thread() is threading.main_thread()
  if in_main_thread:  # signal handlers can only be set there
    previous_term = signal.signal(signal.SIGTERM, _raise_interrupt)
  # An int: chief.poll() once the chief has exited (mypy sees Optional[int]),
  # or minus the signal that interrupted the launcher.
  status: Any
  try:
    for job, index in tasks:
      env = dict(os.environ, TF_CONFIG=tf_config(cluster, job, index), PYTHONUNBUFFERED="1",
                 **join_env, **shared_machine.launcher_environment())
      # The launcher leaves out (and counts) the tasks' C++ noise itself: each
      # task's own stderr guard (_util/stderr_guard.py) stays off.
      env[cpp_noise.SHOW_TF_LOGS_ENV] = "1"
      launched.start(job, index, command if network is None else network.wrap(command), env)
    chief = launched.of_job("chief")[0]
    ps = launched.of_job("ps")
    while chief.poll() is None:
      dead_ps = [t for t in ps if t.poll() is not None]
      if dead_ps:
        launched.say(f"{dead_ps[0].name} exited with {dead_ps[0].returncode} while the "
                     "chief was training; stopping the cluster.")
        launched.stop([chief])
        break
      launched.tick()
      time.sleep(_POLL_SECS)
    status = chief.poll()
    followers = launched.of_job("worker", "evaluator")
    if status == 0 and followers:
      launched.say(f"chief finished; waiting up to {grace_secs:g} s for "
                   + ", ".join(t.name for t in followers))
      launched.wait(followers, time.monotonic() + grace_secs)
    # The ps tasks serve until stopped: once the chief ended by itself their
    # work is over, and being stopped is how they finish.
    launched.stop(followers + ps, done=() if chief.stopped else ps)
  except KeyboardInterrupt as interrupt:
    launched.say("interrupted; stopping the cluster.")
    status = -getattr(interrupt, "signum", signal.SIGINT)
  finally:
    if in_main_thread:
      signal.signal(signal.SIGTERM, previous_term)
    launched.stop(launched.tasks)
    for task in launched.tasks:
      task.join_output()
    if network is not None:
      network.close()
    if join_env:
      shutil.rmtree(join_env[join_markers.DIR_ENV], ignore_errors=True)
  launched.print_summary()
  launched.say(launched.summary())
  return status if status >= 0 else 128 - status


def _print_firewall() -> int:
  # Imported here: it parses TF_CONFIG with TensorFlow's ClusterSpec, which
  # the launcher's other paths do not load.
  from estimator_lite._cluster import firewall  # pylint: disable=g-import-not-at-top
  try:
    print(firewall.rules_for_tf_config(os.environ.get("TF_CONFIG")))
  except ValueError as e:  # FirewallError, or a malformed TF_CONFIG
    raise LaunchError(str(e)) from e
  return 0


def _parser() -> argparse.ArgumentParser:
  parser = argparse.ArgumentParser(
      prog="python -m estimator_lite.launch",
      description="Run a training program as a local cluster (chief, workers, ps, "
      "evaluator), or print the TF_CONFIG of each machine of a real one.",
      usage="%(prog)s [--ps N] [--workers M] [--evaluator] [--grace-secs S] "
      "[--expose-to-network] [--join-secs S] [--status-secs S] [--show-tf-logs] "
      "-- COMMAND ...\n"
      "       %(prog)s [--ps N] [--workers M] [--evaluator] --print-tf-config HOST[:PORT] ...\n"
      "       %(prog)s --print-firewall")
  parser.add_argument("--ps", type=int, default=1, help="parameter servers (default 1)")
  parser.add_argument("--workers", type=int, default=1,
                      help="workers besides the chief (default 1); the chief is always started")
  parser.add_argument("--evaluator", action="store_true", help="also start an evaluator")
  parser.add_argument("--grace-secs", type=float, default=60.0,
                      help="after the chief exits, how long workers and the evaluator may "
                      "take to finish before being stopped (default 60)")
  parser.add_argument("--host", default="localhost",
                      help="address the tasks name in TF_CONFIG (default localhost; "
                      "anything but loopback needs --expose-to-network)")
  parser.add_argument("--expose-to-network", action="store_true",
                      help="run the tasks in this machine's network instead of a private "
                      "network namespace: their unauthenticated TensorFlow servers can then "
                      "be reached by anyone who can reach this machine")
  parser.add_argument("--join-secs", type=float, default=_DEFAULT_JOIN_SECS,
                      help="the chief and the workers hold their first step until every "
                      "worker's training session is up, at most this long (default "
                      f"{_DEFAULT_JOIN_SECS:g}; 0: start at once, as tf.estimator did)")
  parser.add_argument("--status-secs", type=float, default=_DEFAULT_STATUS_SECS,
                      help="print a status table of the tasks this often (default "
                      f"{_DEFAULT_STATUS_SECS:g}; 0: only the summary at the end)")
  parser.add_argument("--show-tf-logs", action="store_true",
                      help="keep TensorFlow's C++ start-up and shutdown lines (banners, "
                      "cuInit on a machine without GPU, rendezvous aborts, type inference "
                      "warnings) in the output; ESTIMATOR_LITE_SHOW_TF_LOGS=1 does the same")
  parser.add_argument("--print-firewall", action="store_true",
                      help="print the iptables rules that let only the cluster's peers reach "
                      "this task's port, for the TF_CONFIG in the environment, and exit")
  parser.add_argument("--print-tf-config", nargs="+", metavar="HOST[:PORT]",
                      help="print each machine's TF_CONFIG for these hosts (chief, workers, "
                      "ps, in that order) and exit")
  return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
  """Entry point of `python -m estimator_lite.launch`; returns the exit status."""
  argv = list(sys.argv[1:] if argv is None else argv)
  command = []
  if "--" in argv:
    split = argv.index("--")
    argv, command = argv[:split], argv[split + 1:]
  parser = _parser()
  args = parser.parse_args(argv)
  try:
    if args.print_firewall:
      if command:
        raise LaunchError("--print-firewall takes no command after `--`.")
      return _print_firewall()
    if args.print_tf_config:
      if command:
        raise LaunchError("--print-tf-config takes no command after `--`.")
      _check_counts(args.ps, args.workers)
      print_tf_configs(args.ps, args.workers, args.evaluator, args.print_tf_config)
      return 0
    return run_cluster(command, args.ps, args.workers, args.evaluator,
                       grace_secs=args.grace_secs, host=args.host,
                       expose_to_network=args.expose_to_network, join_secs=args.join_secs,
                       status_secs=args.status_secs,
                       show_tf_logs=args.show_tf_logs or cpp_noise.show_tf_logs())
  except LaunchError as e:
    parser.error(str(e))
  return 2


if __name__ == "__main__":
  sys.exit(main())
