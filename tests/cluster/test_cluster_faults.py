"""Cluster faults on a real localhost cluster: each task killed and restarted, training completes.

One cluster (ps, chief, worker and evaluator, each its own process with a
TF_CONFIG on OS-assigned ports) goes through the faults in turn:

1. the worker SIGKILLed mid-training and restarted: it rejoins and trains;
2. the evaluator SIGKILLed and restarted: it goes on with the next
   unevaluated checkpoint and evaluates none twice;
3. the ps SIGKILLed and restarted on the same port: the chief and the worker
   recreate their sessions and the variables come back from the chief's
   latest checkpoint;
4. the chief SIGKILLed and restarted: it resumes from its latest checkpoint;
5. the chief sent SIGTERM (preemption): it saves at its current step, exits
   with 143, and its restart continues from that step;
then the cluster trains to max_steps. Each test below asserts one fault's
outcome from what that run left (logs, checkpoints, eval events). A last,
in-process test pins the evaluator's rule for recognising a checkpoint it
evaluated before a restart.

Training is gated: a task whose global step reaches the gate (a step number
in a control file) holds there until the test moves the gate. The test moves
it a few steps ahead of the cluster only while it waits for training progress
(a new checkpoint, a task's steps), and leaves it while processes restart; so
the faults use a bounded number of steps, however slow the machine, and
training cannot reach max_steps before the test releases the gate at the
end. Until then steps are also slow (a sleep per step), so every fault hits a
cluster mid-training. Every wait polls logs, progress files or checkpoints and
has a timeout; every process started here is killed in `finally`.
"""
import collections
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
import traceback

import pytest
import tensorflow as tf

import estimator_lite as est
from estimator_lite._cluster import evaluator as _evaluator_loop
from estimator_lite import launch

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MAX_STEPS = 1000
SAVE_STEPS = 25
WAIT_SECS = 120
# While the test waits for training progress, the gate is kept this many
# steps ahead of the cluster's global step.
GATE_LEAD = 10
# The whole faulted scenario runs in the module fixture, inside the first
# test's timeout: 2 to 4 minutes on a loaded 2-core machine; each wait in it is
# bounded by WAIT_SECS.
# Tier `long` (tests/tiers.py): runs with --tier long.
pytestmark = [pytest.mark.long, pytest.mark.timeout(1800)]

_PROGRAM = textwrap.dedent('''
    import os, sys, time
    import tensorflow as tf
    import estimator_lite as est

    model_dir, control_dir, name = sys.argv[1:4]
    max_steps, save_steps = map(int, sys.argv[4:6])
    tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)
    # A task held longer than this goes on (the test is gone, say).
    HOLD_SECS = 600


    def gate():
      """The global step training holds at until the test moves it; None once released."""
      if os.path.exists(os.path.join(control_dir, "release")):
        return None
      with open(os.path.join(control_dir, "gate")) as f:
        return int(f.read())


    class Paced(est.SessionRunHook):
      """Reports progress; holds at the gate; slow steps until released."""

      def begin(self):
        self._step = tf.compat.v1.train.get_global_step()
        self._local = 0

      def after_create_session(self, session, coord):
        # Also called when MonitoredSession recreates a session after a ps failure.
        tf.compat.v1.logging.info("fault_test: session created at global step %d",
                                  session.run(self._step))

      def before_run(self, run_context):
        return est.SessionRunArgs(self._step)

      def after_run(self, run_context, run_values):
        self._local += 1
        step = run_values.results + 1
        path = os.path.join(control_dir, name + ".progress")
        with open(path + ".tmp", "w") as f:
          f.write(f"{self._local} {step}")
        os.replace(path + ".tmp", path)
        # Held here, before this step's checkpoint save: the test knows no
        # save is in flight once this task's ".held" file exists.
        held = os.path.join(control_dir, name + ".held")
        held_since = None
        # One read per check: the test may release the gate between two.
        while (limit := gate()) is not None and step >= limit:
          if held_since is None:
            held_since = time.monotonic()
            open(held, "w").close()
          if time.monotonic() - held_since > HOLD_SECS:
            tf.compat.v1.logging.warning("fault_test: held %d s at the gate; going on", HOLD_SECS)
            break
          time.sleep(0.05)
        if held_since is not None:
          os.remove(held)
        if gate() is not None:
          time.sleep(0.2)

      def end(self, session):
        tf.compat.v1.logging.info("fault_test: ran %d local steps; global step is %d",
                                  self._local, session.run(self._step))


    def make_example(index):
      x = tf.random.stateless_uniform([2], seed=tf.stack([index, 7]), minval=-1.0, maxval=1.0)
      return {"x": x}, tf.reduce_sum(x * [2.0, -3.0], keepdims=True) + 0.5


    def train_input_fn():
      return tf.data.Dataset.range(1 << 20).repeat().map(make_example).batch(8)


    def eval_input_fn():
      return tf.data.Dataset.range(1 << 20, (1 << 20) + 16).map(make_example).batch(8)


    def model_fn(features, labels, mode):
      w = tf.compat.v1.get_variable("w", [2, 1], initializer=tf.compat.v1.zeros_initializer())
      b = tf.compat.v1.get_variable("b", [1], initializer=tf.compat.v1.zeros_initializer())
      loss = tf.compat.v1.losses.mean_squared_error(labels, tf.matmul(features["x"], w) + b)
      train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
          loss, global_step=tf.compat.v1.train.get_global_step())
      return est.EstimatorSpec(mode, loss=loss, train_op=train_op)


    config = est.RunConfig(model_dir=model_dir, save_checkpoints_steps=save_steps,
                           experimental_max_worker_delay_secs=1)
    est.train_and_evaluate(
        est.Estimator(model_fn, config=config),
        est.TrainSpec(train_input_fn, max_steps=max_steps, hooks=[Paced()]),
        est.EvalSpec(eval_input_fn, steps=2, start_delay_secs=0, throttle_secs=1))
''')

RESTORE = r"Restoring parameters from (\S*model\.ckpt-(\d+))"
SESSION = r"fault_test: session created at global step (\d+)"
EVALUATED = r"Saving dict for global step (\d+):"
LOCAL_STEPS = r"fault_test: ran (\d+) local steps; global step is (\d+)"
PREEMPTED = r"preempted \(SIGTERM\) at global step (\d+)"


def _all(pattern, text):
  return [int(m.group(m.re.groups)) for m in re.finditer(pattern, text)]


class _Cluster:
  """The processes of one localhost cluster, each incarnation logging to its own file."""

  def __init__(self, root):
    self.root = root
    self.model_dir = os.path.join(root, "model")
    self.control = os.path.join(root, "control")
    os.makedirs(self.control)
    self.program = os.path.join(root, "train.py")
    with open(self.program, "w") as f:
      f.write(_PROGRAM)
    chief, worker, ps = launch.free_ports(3)
    self.cluster = {"chief": [f"localhost:{chief}"], "worker": [f"localhost:{worker}"],
                    "ps": [f"localhost:{ps}"]}
    self.processes = {}   # incarnation name (e.g. "chief-2") -> Popen
    self.expected_alive = set()
    self.set_gate(0)      # training holds after its first step

  def start(self, job, name):
    env = dict(os.environ, TF_CONFIG=launch.tf_config(self.cluster, job, 0),
               TF_CPP_MIN_LOG_LEVEL="1")
    env["PYTHONPATH"] = os.pathsep.join([_REPO] + [p for p in env.get("PYTHONPATH", "").split(
        os.pathsep) if p])
    env.pop("TF_USE_LEGACY_KERAS", None)  # as a user's fresh program starts
    with open(self._log_path(name), "wb") as log:
      self.processes[name] = subprocess.Popen(
          [sys.executable, self.program, self.model_dir, self.control, name, str(MAX_STEPS),
           str(SAVE_STEPS)],
          cwd=self.root, env=env, stdout=log, stderr=subprocess.STDOUT,
          stdin=subprocess.DEVNULL)
    self.expected_alive.add(name)

  def send(self, name, signum, timeout=60):
    """Sends `signum` to incarnation `name` and returns its exit status."""
    self.expected_alive.discard(name)
    process = self.processes[name]
    process.send_signal(signum)
    return self.wait_exit(name, timeout)

  def wait_exit(self, name, timeout=WAIT_SECS):
    self.expected_alive.discard(name)
    try:
      return self.processes[name].wait(timeout)
    except subprocess.TimeoutExpired:
      raise AssertionError(f"{name} still running after {timeout} s:\n{self.tail(name)}") from None

  def _log_path(self, name):
    return os.path.join(self.root, f"{name}.log")

  def log(self, name, offset=0):
    with open(self._log_path(name), "rb") as f:
      f.seek(offset)
      return f.read().decode(errors="replace")

  def log_size(self, name):
    return os.path.getsize(self._log_path(name))

  def tail(self, name, chars=4000):
    return f"--- {name} log (tail) ---\n{self.log(name)[-chars:]}"

  def progress(self, name):
    """(local steps, global step after the last one) of incarnation `name`; (0, 0) before any."""
    try:
      with open(os.path.join(self.control, name + ".progress")) as f:
        local, global_step = f.read().split()
      return int(local), int(global_step)
    except (FileNotFoundError, ValueError):
      return 0, 0

  def latest_step(self):
    path = tf.train.latest_checkpoint(self.model_dir)
    return int(path.rsplit("-", 1)[1]) if path else None

  def set_gate(self, step):
    """Moves the gate: training tasks hold once their global step reaches `step` (0: now)."""
    path = os.path.join(self.control, "gate")
    with open(path + ".tmp", "w") as f:
      f.write(str(step))
    os.replace(path + ".tmp", path)
    self.gate = step

  def release(self):
    """Lifts the gate for good: training runs at full speed to max_steps."""
    open(os.path.join(self.control, "release"), "w").close()

  def held(self, name):
    return os.path.exists(os.path.join(self.control, name + ".held"))

  def global_step(self):
    """The highest global step the running chief and worker reported."""
    return max([self.progress(name)[1] for name in self.expected_alive
                if name.startswith(("chief", "worker"))] + [0])

  def wait_for(self, what, predicate, timeout=WAIT_SECS, train=False):
    """Polls `predicate` until it returns something truthy, and returns that.

    With `train`, the gate is kept GATE_LEAD steps ahead of the cluster
    while waiting (never at max_steps); otherwise it stays where it is, and
    training holds there.

    Fails at once if a process that should be running exits, and after
    `timeout` seconds, with the logs of the processes involved.
    """
    deadline = time.monotonic() + timeout
    while True:
      value = predicate()
      if value:
        return value
      if train:
        self.set_gate(min(self.global_step() + GATE_LEAD, MAX_STEPS - 1))
      for name in sorted(self.expected_alive):
        status = self.processes[name].poll()
        if status is not None:
          raise AssertionError(f"{name} exited with {status} while waiting for {what}:\n"
                               f"{self.tail(name)}")
      if time.monotonic() > deadline:
        tails = "\n".join(self.tail(name, 1500) for name in sorted(self.expected_alive))
        raise AssertionError(f"timed out after {timeout} s waiting for {what} (gate at "
                             f"step {self.gate})\n{tails}")
      time.sleep(0.1)

  def found_in_log(self, name, pattern, offset=0):
    """A predicate: the last match of `pattern` in `name`'s log past `offset`."""
    def find():
      matches = list(re.finditer(pattern, self.log(name, offset)))
      return matches[-1] if matches else None
    return find

  def close(self):
    for process in self.processes.values():
      if process.poll() is None:
        process.kill()
    for process in self.processes.values():
      try:
        process.wait(30)
      except subprocess.TimeoutExpired:
        pass


def stored_step(checkpoint_path):
  """The global step saved in a checkpoint."""
  return int(tf.train.load_variable(checkpoint_path, "global_step"))


def _eval_events(model_dir):
  for path in sorted(tf.io.gfile.glob(os.path.join(model_dir, "eval", "events.out.tfevents.*"))):
    try:
      yield from tf.compat.v1.train.summary_iterator(path)
    except tf.errors.DataLossError:
      pass  # a killed evaluator's file may end in a partial record


def eval_event_steps(model_dir):
  """The global step of every evaluation in the eval events (all event files)."""
  return [event.step for event in _eval_events(model_dir)
          if any(value.tag == "loss" for value in event.summary.value)]


def eval_event_checkpoints(model_dir):
  """The checkpoint path of every evaluation in the eval events (written after its metrics)."""
  return [value.tensor.string_val[0].decode() for event in _eval_events(model_dir)
          for value in event.summary.value if value.tag == "checkpoint_path"]


# -- the faults, in turn --------------------------------------------------------------------
def _train_steps(c, name, steps):
  """Once `name` has its session, lets training go on until it ran `steps` steps."""
  c.wait_for(f"{name}'s session", c.found_in_log(name, SESSION))
  c.wait_for(f"{name} to train {steps} steps", lambda: c.progress(name)[0] >= steps, train=True)


def _worker_fault(c, r):
  _train_steps(c, "worker-1", 10)
  r["worker_killed_status"] = c.send("worker-1", signal.SIGKILL)
  c.start("worker", "worker-2")
  _train_steps(c, "worker-2", 10)


def _evaluator_fault(c, r):
  # Freeze training, so that the newest checkpoint is one the evaluator has
  # evaluated when it is killed: the restart must not evaluate it again.
  c.wait_for("a first evaluation", c.found_in_log("evaluator-1", EVALUATED))
  c.set_gate(0)
  c.wait_for("the chief to hold", lambda: c.held("chief-1"))
  path = tf.train.latest_checkpoint(c.model_dir)
  # Eval events carry the step stored in the checkpoint, which on a cluster
  # may be past the one in its name (the worker steps while the chief saves).
  step = stored_step(path)
  # Its events written (not only logged): the kill cannot lose this evaluation.
  c.wait_for(f"the evaluation of {path}", lambda: path in eval_event_checkpoints(c.model_dir))
  r["evaluator_killed_status"] = c.send("evaluator-1", signal.SIGKILL)
  r["evaluated_before_kill"] = (path, step)
  c.start("evaluator", "evaluator-2")
  # It either skips the checkpoint or (wrongly) evaluates it again.
  c.wait_for("the restarted evaluator to look at the newest checkpoint",
             c.found_in_log("evaluator-2", re.escape(path) + r"\b"))
  c.wait_for("the restarted evaluator to evaluate a newer checkpoint", lambda: [
      s for s in _all(EVALUATED, c.log("evaluator-2")) if s > step], train=True)


def _ps_fault(c, r):
  before = c.latest_step() or 0
  c.wait_for("a new checkpoint", lambda: (c.latest_step() or 0) > before, train=True)
  r["ps_killed_status"] = c.send("ps-1", signal.SIGKILL)
  # No save completes without the ps: this is the chief's latest checkpoint.
  r["checkpoint_at_ps_kill"] = c.latest_step()
  chief_offset, worker_offset = c.log_size("chief-1"), c.log_size("worker-2")
  c.start("ps", "ps-2")
  # The chief and the worker notice the lost ps at their next step.
  restore = c.wait_for("the chief to restore the variables on the new ps",
                       c.found_in_log("chief-1", RESTORE, chief_offset), train=True)
  r["chief_restored_after_ps"] = int(restore.group(2))
  session = c.wait_for("the chief's new session",
                       c.found_in_log("chief-1", SESSION, chief_offset), train=True)
  r["chief_session_step_after_ps"] = int(session.group(1))
  session = c.wait_for("the worker's new session",
                       c.found_in_log("worker-2", SESSION, worker_offset), train=True)
  r["worker_session_step_after_ps"] = int(session.group(1))
  r["restore_before_chief_session"] = (
      c.log("chief-1", chief_offset).find("Restoring parameters from") <
      c.log("chief-1", chief_offset).find("fault_test: session created"))
  chief_local = c.progress("chief-1")[0]
  c.wait_for("the chief to train after the ps restart",
             lambda: c.progress("chief-1")[0] >= chief_local + 5, train=True)


def _chief_kill_fault(c, r):
  before = c.latest_step() or 0
  c.wait_for("a new checkpoint", lambda: (c.latest_step() or 0) > before, train=True)
  r["chief_killed_status"] = c.send("chief-1", signal.SIGKILL)
  r["checkpoint_at_chief_kill"] = c.latest_step()
  c.start("chief", "chief-2")
  restore = c.wait_for("the restarted chief to restore", c.found_in_log("chief-2", RESTORE))
  r["chief_2_restored"] = restore.group(1)
  session = c.wait_for("the restarted chief's session", c.found_in_log("chief-2", SESSION))
  r["chief_2_session_step"] = int(session.group(1))
  _train_steps(c, "chief-2", 10)


def _chief_sigterm_fault(c, r):
  # Mid-interval: past the last periodic checkpoint.
  # Stepping, not held at the gate, when the signal comes: it stops after
  # the step in flight.
  c.wait_for("the chief to be past its last checkpoint", lambda: (
      c.progress("chief-2")[1] > (c.latest_step() or 0) + 2 and not c.held("chief-2")),
             train=True)
  r["chief_sigterm_status"] = c.send("chief-2", signal.SIGTERM)
  r["chief_2_last_step"] = c.progress("chief-2")[1]
  r["checkpoint_after_sigterm"] = tf.train.latest_checkpoint(c.model_dir)
  r["stored_step_after_sigterm"] = stored_step(r["checkpoint_after_sigterm"])
  c.start("chief", "chief-3")
  restore = c.wait_for("the chief restarted after SIGTERM to restore",
                       c.found_in_log("chief-3", RESTORE))
  r["chief_3_restored"] = restore.group(1)


def _completion(c, r):
  c.release()
  for name in ("chief-3", "worker-2", "evaluator-2"):
    r[f"{name}_status"] = c.wait_exit(name, timeout=180)
    if r[f"{name}_status"] != 0:
      raise AssertionError(f"{name} exited with {r[f'{name}_status']}:\n{c.tail(name)}")
  r["final_step"] = c.latest_step()
  r["final_stored_step"] = stored_step(tf.train.latest_checkpoint(c.model_dir))


_PHASES = [("worker", _worker_fault), ("evaluator", _evaluator_fault), ("ps", _ps_fault),
           ("chief_kill", _chief_kill_fault), ("chief_sigterm", _chief_sigterm_fault),
           ("complete", _completion)]


class _Run:
  """What the faulted cluster did: per-phase records, logs, and how far it got."""

  def __init__(self, cluster, record, done, error, secs):
    self.cluster, self.record, self.done, self.error, self.secs = (
        cluster, record, done, error, secs)

  def require(self, *phases):
    missing = [p for p in phases if p not in self.done]
    if missing:
      pytest.fail(f"the faulted cluster did not get through {missing}:\n{self.error}",
                  pytrace=False)

  def log(self, name):
    return self.cluster.log(name)


@pytest.fixture(scope="module")
def faulted(tmp_path_factory):
  cluster = _Cluster(str(tmp_path_factory.mktemp("cluster_faults")))
  record, done, error = {}, [], None
  start = time.monotonic()
  try:
    for job, name in (("ps", "ps-1"), ("chief", "chief-1"), ("worker", "worker-1"),
                      ("evaluator", "evaluator-1")):
      cluster.start(job, name)
    for phase, run in _PHASES:
      run(cluster, record)
      done.append(phase)
      record[f"secs_{phase}"] = round(time.monotonic() - start)
  except Exception:  # pylint: disable=broad-except
    # Each test reports it if its own fault (or the completion) was not reached.
    error = traceback.format_exc()
  finally:
    cluster.close()
  secs = time.monotonic() - start
  print(f"faulted cluster: {secs:.0f} s; phases done at (s): "
        f"{ {p: record[f'secs_{p}'] for p in done} }")
  return _Run(cluster, record, done, error, secs)


# -- one test per fault ---------------------------------------------------------------------
def _assert_training_completed(run):
  r = run.record
  assert r["chief-3_status"] == 0, run.cluster.tail("chief-3")
  assert r["final_step"] >= MAX_STEPS and r["final_stored_step"] >= MAX_STEPS
  chief_end = _all(LOCAL_STEPS, run.log("chief-3"))
  assert len(chief_end) == 1, run.cluster.tail("chief-3")


def test_worker_killed_and_restarted_rejoins_and_training_completes(faulted):
  faulted.require("worker", "complete")
  r = faulted.record
  assert r["worker_killed_status"] == -signal.SIGKILL
  _assert_training_completed(faulted)
  # The restarted worker trained until the end and exited cleanly.
  assert r["worker-2_status"] == 0, faulted.cluster.tail("worker-2")
  ends = re.findall(LOCAL_STEPS, faulted.log("worker-2"))
  assert len(ends) == 1, faulted.cluster.tail("worker-2")
  local_steps, global_step = map(int, ends[0])
  assert local_steps > 0 and global_step >= MAX_STEPS


def test_ps_killed_and_restarted_recovers_from_the_chiefs_checkpoint(faulted):
  faulted.require("ps", "complete")
  r = faulted.record
  assert r["ps_killed_status"] == -signal.SIGKILL
  # The chief's MonitoredSession recreated its session and restored the
  # variables (lost with the ps) from its latest checkpoint, not from scratch.
  checkpoint = r["checkpoint_at_ps_kill"]
  assert checkpoint > 0
  assert r["chief_restored_after_ps"] >= checkpoint
  assert r["restore_before_chief_session"]
  assert r["chief_session_step_after_ps"] >= r["chief_restored_after_ps"]
  # The worker recreated its session too, once the chief had restored.
  assert r["worker_session_step_after_ps"] >= r["chief_restored_after_ps"]
  _assert_training_completed(faulted)


def test_chief_killed_and_restarted_resumes_from_its_checkpoint(faulted):
  faulted.require("chief_kill", "complete")
  r = faulted.record
  assert r["chief_killed_status"] == -signal.SIGKILL
  checkpoint = r["checkpoint_at_chief_kill"]
  assert checkpoint > 0
  assert r["chief_2_restored"] == os.path.join(faulted.cluster.model_dir,
                                               f"model.ckpt-{checkpoint}")
  assert r["chief_2_session_step"] >= checkpoint
  _assert_training_completed(faulted)


def test_evaluator_killed_and_restarted_evaluates_each_checkpoint_once(faulted):
  faulted.require("evaluator", "complete")
  r = faulted.record
  assert r["evaluator_killed_status"] == -signal.SIGKILL
  path, before_kill = r["evaluated_before_kill"]
  first, second = (_all(EVALUATED, faulted.log(n)) for n in ("evaluator-1", "evaluator-2"))
  assert before_kill in first
  # The eval events (both runs' files) hold each evaluated checkpoint once,
  # the one evaluated just before the kill included. (Per checkpoint: two
  # checkpoints may hold the same global step, as when the chief, restarted,
  # restores one and saves again before the worker steps.)
  steps = eval_event_steps(faulted.cluster.model_dir)
  checkpoints = eval_event_checkpoints(faulted.cluster.model_dir)
  repeated = [c for c, n in collections.Counter(checkpoints).items() if n > 1]
  assert not repeated, f"evaluated more than once: {repeated}; steps: {sorted(steps)}"
  assert steps.count(before_kill) == 1, sorted(steps)
  assert len(checkpoints) == len(steps) and set(steps) == set(first) | set(second)
  # The restart skipped the newest checkpoint, evaluated before the kill, and
  # went on with newer ones only, the final checkpoint's last; it exited on its own.
  assert second and min(second) > before_kill, (first, second)
  assert f"Skipping checkpoint {path}: already evaluated" in faulted.log("evaluator-2")
  assert max(steps) == second[-1] >= MAX_STEPS
  assert r["evaluator-2_status"] == 0, faulted.cluster.tail("evaluator-2")


def test_sigterm_to_the_chief_saves_its_step_and_the_restart_continues_there(faulted):
  faulted.require("chief_sigterm", "complete")
  r = faulted.record
  log = faulted.log("chief-2")
  assert r["chief_sigterm_status"] == 143, faulted.cluster.tail("chief-2")
  assert "Received SIGTERM" in log
  preempted = _all(PREEMPTED, log)
  assert len(preempted) == 1, faulted.cluster.tail("chief-2")
  # The chief saved at its current step as it stopped: no step it ran is
  # lost. (The worker trains on meanwhile, so the step stored in that
  # checkpoint, which the log reports, may be a little past its name.)
  saved = _all(r"Saving checkpoints for (\d+) into", log)[-1]
  assert saved >= r["chief_2_last_step"]
  checkpoint = os.path.join(faulted.cluster.model_dir, f"model.ckpt-{saved}")
  assert r["checkpoint_after_sigterm"] == checkpoint
  assert preempted[0] == r["stored_step_after_sigterm"] >= saved
  assert f"latest checkpoint: {checkpoint}." in log
  # The restarted chief continued from there.
  assert r["chief_3_restored"] == checkpoint
  _assert_training_completed(faulted)


# -- the evaluator's restart rule, in one process -------------------------------------------
def test_restarted_evaluator_knows_a_checkpoint_by_its_stored_step(
    tmp_path, linear_model_fn, linear_data, make_input_fn, tf_logs):
  """A checkpoint named model.ckpt-10 may hold global step 13 (a worker stepped
  while the chief saved): its eval events say 13, and a restarted evaluator
  must still recognise it as evaluated."""
  model_dir = str(tmp_path / "model")

  def save(name_step, stored):
    with tf.Graph().as_default():
      tf.compat.v1.get_variable("w", initializer=[[2.0], [-3.0]])
      tf.compat.v1.get_variable("b", initializer=[0.5])
      step = tf.compat.v1.train.get_or_create_global_step()
      with tf.compat.v1.Session() as session:
        session.run(tf.compat.v1.global_variables_initializer())
        session.run(step.assign(stored))
        return tf.compat.v1.train.Saver().save(
            session, os.path.join(model_dir, "model.ckpt"), global_step=name_step)

  x, y = linear_data
  input_fn = make_input_fn(x, y, repeat=False)
  estimator = est.Estimator(linear_model_fn, model_dir=model_dir)
  evaluated = save(10, 13)
  estimator.evaluate(input_fn, steps=1, checkpoint_path=evaluated)   # the earlier run
  eval_spec = est.EvalSpec(input_fn, steps=1, start_delay_secs=0, throttle_secs=0)
  result = []
  thread = threading.Thread(target=lambda: result.append(
      _evaluator_loop.run_continuous_evaluation(estimator, eval_spec, 20, poll_secs=0.05)))
  thread.start()
  try:
    deadline = time.monotonic() + 60
    while f"Skipping checkpoint {evaluated}: already evaluated" not in tf_logs.text:
      assert tf_logs.text.count("Saving dict for global step 13:") == 1, "evaluated again"
      assert thread.is_alive() and time.monotonic() < deadline, tf_logs.text[-3000:]
      time.sleep(0.05)
  finally:
    final = save(20, 20)  # lets the loop finish in any case
    thread.join(60)
  assert not thread.is_alive()
  assert result and result[0][0].checkpoint_path == final
  assert sorted(eval_event_steps(model_dir)) == [13, 20]
