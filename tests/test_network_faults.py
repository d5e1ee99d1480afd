"""Network and storage faults on a real cluster whose roles have their own loopback addresses.

One cluster (ps, chief, two workers and an evaluator, each on its own
127.0.0.x address and running as its own group; tests/netfault/) trains
through these faults in turn, then to max_steps:

1. worker:1 partitioned from the ps (iptables DROP, both ways) for 30 s;
2. the chief partitioned from the ps (REJECT) for 30 s, starting while a
   checkpoint save is in flight (300 ms of latency on the chief's links to
   the ps makes the save last long enough to be caught);
3. 200 ms of latency on worker:0's links to the ps (a delaying proxy) for 60 s;
4. 5% packet loss on worker:0's connections (iptables statistic) for 60 s;
5. the ps answering slowly (500 ms latency on the chief's links to it)
   while the chief saves a checkpoint;
6. the model_dir read-only (a read-only bind mount) for 10 s under the chief.

Each test asserts its fault's outcome and what every fault must leave
intact: training reached max_steps, the evaluator evaluated each checkpoint
it saw once, the `checkpoint` index never named a missing file (watched
while training ran) and never went back, and the final export loads and
serves the final checkpoint's model. Each records how long the role it
struck stalled and how long it took to recover after the heal (printed, and
in docs/reliability.md).

A second cluster goes through a 3-minute chaos run (a random kill,
partition or latency every 20 s) and must end within 10% of the loss of an
undisturbed run of the same steps, having lost nothing that was saved.

Needs root (iptables rules, group ids, a bind mount) and iptables; .ci/run
installs it. Tier `netfault`: skipped unless asked for (`--tier netfault`),
and, when asked, skipped where root or iptables is missing, saying which. Every rule is removed, every process killed
and the mount undone, even when a test fails.
"""
import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import traceback

import pytest
import tensorflow as tf

import estimator_lite as est
from netfault import chaos
from netfault import checks
from netfault import program
from netfault import rules as rules_lib
from netfault import storage
from netfault.cluster import TRAINERS, LoopbackCluster

# Tier `netfault` (tests/tiers.py): runs with --tier netfault, as root with iptables.
pytestmark = [pytest.mark.netfault, pytest.mark.timeout(1500)]
MAX_STEPS = 6000
SAVE_STEPS = 25
PACE_SECS = 0.25           # a trainer's sleep after each step until released
PARTITION_SECS = 30
# A step whose messages crossed before a partition's rules were in may end
# after them: its end is recorded up to a step's time (under 1 s) later.
IN_FLIGHT_SECS = 1.0
SLOW_LINK_SECS = 60
READ_ONLY_SECS = 10
WAIT_SECS = 120
SETTLE_SECS = 8
EXIT_SECS = 300
SAVING = r"(\d+\.\d+) INFO:Saving checkpoints for (\d+) into"
SAVED = r"(\d+\.\d+) INFO:Calling checkpoint listeners after saving checkpoint (\d+)\.\.\."
RESTORE = r"(\d+\.\d+) INFO:Restoring parameters from (\S*model\.ckpt-(\d+))"
STALL_WARNING = r"No training step has finished for \d+ s\. .*ps:0 at ([\d.:]+): ([^;)]*)"


@pytest.fixture(scope="module")
def fault_rules():
  problem = rules_lib.iptables_missing()
  if problem:
    pytest.fail(f"{problem}: the network fault tests need it (.ci/run installs it)")
  with rules_lib.FaultRules() as rules:
    yield rules
    rules.heal()


def test_fault_rules_remove_a_stale_chain_and_leave_nothing_of_their_own(fault_rules):
  """A chain left by a process that died before removing it is removed by the next run; a
  run's rules are all gone after it closes, whatever they were; others' chains stay."""
  dead = _dead_pid()
  stale = f"ELITE-NETFAULT-{dead}"
  subprocess.run(["iptables", "-N", stale], check=True)
  subprocess.run(["iptables", "-A", stale, "-p", "tcp", "--dport", "9", "-j", "DROP"], check=True)
  subprocess.run(["iptables", "-I", "OUTPUT", "-j", stale], check=True)
  child = subprocess.run([sys.executable, "-c", textwrap.dedent("""
      import sys
      sys.path.insert(0, sys.argv[1])
      from netfault import rules
      with rules.FaultRules() as faults:
        print("stale removed:", faults.stale_removed)
        faults.partition(40001, [("127.0.0.2", 9)], 40002, [("127.0.0.3", 9)])
        faults.lose(40003, [("127.0.0.4", 9)], 0.05)
        print("own:", faults.chain, len(faults.rules()))
      """), os.path.dirname(os.path.abspath(__file__))],
                         capture_output=True, text=True, timeout=60, check=True)
  assert f"stale removed: ['{stale}']" in child.stdout, child.stdout + child.stderr
  own = re.search(r"own: (\S+) (\d+)", child.stdout)
  assert own and int(own.group(2)) == 5, child.stdout
  left = rules_lib.chains()
  assert stale not in left and own.group(1) not in left
  assert fault_rules.chain in left    # the live process's chain is not touched
  listing = subprocess.run(["iptables", "-S", "OUTPUT"], capture_output=True, text=True,
                           check=True).stdout
  assert stale not in listing and own.group(1) not in listing


def _dead_pid():
  """The pid of a process that has exited (reaped)."""
  process = subprocess.Popen(["true"])
  process.wait()
  return process.pid


def _root(name):
  return tempfile.mkdtemp(prefix=f"estimator_lite_{name}_")


def _steps_after(cluster, role, when, count):
  """A predicate: role `role` has finished `count` steps after time `when`."""
  return lambda: len([t for t in cluster.progress.step_times(role) if t > when]) >= count


def _log_after(cluster, role, pattern, when):
  """A predicate: the first match of `pattern` in `role`'s logs timed after `when`."""
  def find():
    for match in re.finditer(pattern, cluster.logs(role)):
      if float(match.group(1)) > when:
        return match
    return None
  return find


def _lines_between(log, start, end, limit=120):
  """The log's lines timed within [start, end] (at most `limit`), for a failure message."""
  lines = [line for line in log.splitlines()
           if re.match(r"\d+\.\d+ ", line) and start <= float(line.split()[0]) <= end]
  return f"{len(lines)} lines from {start:.1f} to {end:.1f}:\n" + "\n".join(lines[:limit])


def _settle(cluster):
  """Lets the cluster step undisturbed: the pace the next fault's effect is measured against."""
  cluster.sleep(SETTLE_SECS, "the cluster was settling before the next fault")


def _strike(cluster, record, name, role, start, heal):
  record[name] = dict(checks.disruption(cluster.progress.step_times(role), start, heal),
                      role=role, start=start, heal=heal)


# -- the faults, in turn --------------------------------------------------------------------
def _timed_fault(c, r, name, role, strike, heal, secs):
  """Strikes, waits `secs`, heals, waits for `role` to step again; records the disruption."""
  _settle(c)
  start = time.time()
  strike()
  try:
    c.sleep(secs, f"{name} struck {role}")
  finally:
    heal()
  healed = time.time()
  # Enough steps after the heal to see the usual pace return (recover_secs).
  c.wait_for(f"{role} to step after {name}", _steps_after(c, role, healed, 20), WAIT_SECS)
  _strike(c, r, name, role, start, healed)


def _worker_partition(c, rules, r):
  ps, worker = c.roles["ps"], c.roles["worker1"]
  _timed_fault(c, r, "worker_partition", "worker1", lambda: rules.partition(
      worker.gid, [c.seen_by("worker1", "ps")], ps.gid, [c.seen_by("ps", "worker1")]),
               rules.heal, PARTITION_SECS)
  fault = r["worker_partition"]
  fault["chief_steps_during"] = len(
      [t for t in c.progress.step_times("chief") if fault["start"] <= t < fault["heal"]])
  fault["worker_steps_once_cut_off"] = len(
      [t for t in c.progress.step_times("worker1")
       if fault["start"] + IN_FLIGHT_SECS <= t < fault["heal"]])


def _chief_partition(c, rules, r):
  _settle(c)
  ps, chief = c.roles["ps"], c.roles["chief"]
  begin = time.time()
  c.set_latency("chief", 0.3)
  saving = c.wait_for("the chief to start a save", _log_after(c, "chief", SAVING, begin),
                      WAIT_SECS)
  start = time.time()
  rules.partition(chief.gid, [c.seen_by("chief", "ps")], ps.gid, [c.seen_by("ps", "chief")],
                  reject=True)
  c.set_latency("chief", 0.0)
  r["chief_partition_save"] = int(saving.group(2))
  c.sleep(PARTITION_SECS, "the chief was partitioned from the ps")
  rules.heal()
  heal = time.time()
  c.wait_for("the chief to step again", _steps_after(c, "chief", heal, 10), WAIT_SECS)
  failed = r["chief_partition_save"]
  r["chief_partition_saved_after"] = c.wait_for(
      f"the chief to save past step {failed} after the heal", lambda: [
          int(m.group(2)) for m in re.finditer(SAVED, c.logs("chief"))
          if float(m.group(1)) > heal and int(m.group(2)) > failed], WAIT_SECS)[0]
  _strike(c, r, "chief_partition", "chief", start, heal)


def _worker_latency(c, rules, r):
  _timed_fault(c, r, "worker_latency", "worker0", lambda: c.set_latency("worker0", 0.2),
               lambda: c.set_latency("worker0", 0.0), SLOW_LINK_SECS)


def _worker_loss(c, rules, r):
  def strike():
    rules.lose(c.roles["worker0"].gid, [c.seen_by("ps", "worker0")], 0.05)
    r["loss_rules"] = rules.rules()
  _timed_fault(c, r, "worker_loss", "worker0", strike, rules.heal, SLOW_LINK_SECS)


def _slow_ps_during_save(c, rules, r):
  _settle(c)
  start = time.time()
  c.set_latency("chief", 0.5)
  saving = c.wait_for("the chief to start a save with the ps slow",
                      _log_after(c, "chief", SAVING, start), WAIT_SECS)
  step = saving.group(2)
  saved = c.wait_for(f"the save of step {step} to complete",
                     _log_after(c, "chief", SAVED.replace(r"(\d+)\.\.\.", step + r"\.\.\."),
                                start), WAIT_SECS)
  c.set_latency("chief", 0.0)
  heal = time.time()
  r["slow_ps_save"] = (int(step), round(float(saved.group(1)) - float(saving.group(1)), 2))
  c.wait_for("the chief to step at full speed", _steps_after(c, "chief", heal, 20), WAIT_SECS)
  _strike(c, r, "slow_ps", "chief", start, heal)


def _read_only_model_dir(c, rules, r):
  with contextlib.ExitStack() as read_only:
    _timed_fault(c, r, "read_only", "chief",
                 lambda: read_only.enter_context(storage.read_only(c.model_dir)),
                 read_only.close, READ_ONLY_SECS)
  saved = c.wait_for("a save after the model_dir is writable again",
                     _log_after(c, "chief", SAVED, r["read_only"]["heal"]), WAIT_SECS)
  r["read_only_saved_after"] = int(saved.group(2))


def _complete(c, rules, r):
  r["step_at_release"] = c.finish(EXIT_SECS)


_PHASES = [("worker_partition", _worker_partition), ("chief_partition", _chief_partition),
           ("worker_latency", _worker_latency), ("worker_loss", _worker_loss),
           ("slow_ps", _slow_ps_during_save), ("read_only", _read_only_model_dir),
           ("complete", _complete)]


class _Run:
  """What a cluster run did: its records, how far it got, and the cluster's files."""

  def __init__(self, cluster, record, done, error):
    self.cluster, self.record, self.done, self.error = cluster, record, done, error

  def require(self, *phases):
    missing = [p for p in phases if p not in self.done]
    if missing:
      pytest.fail(f"the cluster did not get through {missing}:\n{self.error}", pytrace=False)


def _run_phases(cluster, rules, phases):
  record, done, error = {}, [], None
  try:
    cluster.start_all(WAIT_SECS)
    for name, phase in phases:
      phase(cluster, rules, record)
      done.append(name)
  except Exception:  # pylint: disable=broad-except
    # Each test reports it when its own phase (or the completion) was not reached.
    error = traceback.format_exc()
  finally:
    rules.heal()
    cluster.close()
  return _Run(cluster, record, done, error)


@pytest.fixture(scope="module")
def faulted(fault_rules):
  root = _root("network_faults")
  cluster = LoopbackCluster(root, max_steps=MAX_STEPS, save_steps=SAVE_STEPS,
                            pace_secs=PACE_SECS, delayed=("worker0", "chief"))
  run = _run_phases(cluster, fault_rules, _PHASES)
  print("\nnetwork faults:", {key: value for key, value in run.record.items()
                              if key != "loss_rules"})
  yield run
  shutil.rmtree(root, ignore_errors=True)


# -- what every fault must leave intact -----------------------------------------------------
def _assert_intact(run, max_steps=MAX_STEPS):
  """Training reached max_steps; the evaluator evaluated each checkpoint it saw once; the
  index never named a missing file nor went back; the final export serves the final model."""
  c = run.cluster
  assert run.record["step_at_release"] < max_steps, "training ended before the faults did"
  final = tf.train.latest_checkpoint(c.model_dir)
  assert int(tf.train.load_variable(final, "global_step")) >= max_steps
  assert not c.index.missing, c.index.missing
  assert not c.index.went_back, c.index.went_back
  evaluated = [path for path, _, _ in checks.evaluations(c.model_dir)]
  assert len(evaluated) == len(set(evaluated)), sorted(evaluated)
  assert evaluated[-1] == final
  # The checkpoints the evaluator restored to evaluate, but for the last of
  # each killed incarnation (killed mid-evaluation, maybe): each evaluated.
  restored = set()
  last = c.roles["evaluator"].starts
  for i in range(1, last + 1):
    paths = [m.group(2) for m in re.finditer(RESTORE, c.log(f"evaluator-{i}"))]
    restored.update(paths if i == last else paths[:-1])
  assert restored <= set(evaluated), sorted(restored - set(evaluated))
  export = checks.latest_export(c.model_dir)
  assert export, os.listdir(c.model_dir)
  assert checks.export_error(export, final) < 1e-5


def test_worker_partitioned_from_the_ps_resumes_after_the_heal(faulted):
  faulted.require("worker_partition", "complete")
  r = faulted.record["worker_partition"]
  # Cut off, worker:1 made no step (but the one whose messages had crossed
  # before the rules were in); the chief went on meanwhile.
  assert r["worker_steps_once_cut_off"] == 0 and r["steps_during"] <= 1, r
  assert r["stalled_secs"] >= PARTITION_SECS - 1, r
  assert r["chief_steps_during"] > 0, r
  # The heal is seen at TCP's next retransmission of the cut connections,
  # whose back-off doubles: 11 to 44 s after the heal, measured.
  assert 0 <= r["recover_secs"] < 90, r
  # Its log said what it waited for, and that the ps could not be reached.
  log = faulted.cluster.logs("worker1")
  warning = re.search(STALL_WARNING, log)
  assert warning, log[-3000:]
  assert warning.group(1) == "%s:%d" % faulted.cluster.seen_by("worker1", "ps")
  assert "unreachable from here" in warning.group(2)
  assert re.search(r"Training goes on after a stall of \d+ s\.", log)
  _assert_intact(faulted)


def test_chief_partitioned_from_the_ps_mid_save_loses_nothing_saved(faulted):
  faulted.require("chief_partition", "complete")
  r = faulted.record
  log = faulted.cluster.logs("chief")
  # The save in flight either failed, and its checkpoint never entered the
  # index, or completed whole: its request had already left the chief (the
  # latency proxy holds it for 0.3 s, and the partition cuts the chief's own
  # packets only), and the chief logged the save done.
  in_flight = r["chief_partition_save"]
  named = [path for _, path in faulted.cluster.index.latest]
  if any(path.endswith(f"model.ckpt-{in_flight}") for path in named):
    assert re.search(SAVED.replace(r"(\d+)\.\.\.", f"{in_flight}\\.\\.\\."), log), named
  # After the heal the chief restored the newest checkpoint the index named by
  # then (nothing saved was lost), and saved again.
  restores = [m for m in re.finditer(RESTORE, log)
              if float(m.group(1)) > r["chief_partition"]["start"]]
  assert restores, log[-3000:]
  restored_at = float(restores[0].group(1))
  newest = [path for seen, path in faulted.cluster.index.latest if seen < restored_at][-1]
  assert restores[0].group(2) == newest, (restores[0].group(0), faulted.cluster.index.latest)
  assert r["chief_partition_saved_after"] > r["chief_partition_save"]
  assert r["chief_partition"]["stalled_secs"] >= PARTITION_SECS - 1
  assert 0 <= r["chief_partition"]["recover_secs"] < 60, r["chief_partition"]
  _assert_intact(faulted)


def test_latency_on_a_workers_links_slows_it_and_it_recovers(faulted):
  faulted.require("worker_latency", "complete")
  r = faulted.record["worker_latency"]
  # Slower, never stopped; back at its pace right after.
  assert r["steps_during"] > 0 and r["stalled_secs"] < 20, r
  assert 0 <= r["recover_secs"] < 30, r
  _assert_intact(faulted)


def test_packet_loss_on_a_workers_traffic_slows_it_and_it_recovers(faulted):
  faulted.require("worker_loss", "complete")
  r = faulted.record["worker_loss"]
  # iptables prints the probability it stores: 0.04999999981.
  probabilities = [float(p) for rule in faulted.record["loss_rules"]
                   for p in re.findall(r"--probability ([\d.]+)", rule)]
  assert probabilities and abs(probabilities[0] - 0.05) < 1e-6, faulted.record["loss_rules"]
  assert r["steps_during"] > 0, r
  assert 0 <= r["recover_secs"] < 30, r
  _assert_intact(faulted)


def test_a_slow_ps_delays_a_save_which_completes(faulted):
  faulted.require("slow_ps", "complete")
  step, save_secs = faulted.record["slow_ps_save"]
  path = os.path.join(faulted.cluster.model_dir, f"model.ckpt-{step}")
  assert path in [p for _, p in faulted.cluster.index.latest]
  assert tf.train.load_variable(path, "w").shape == (2, 1)
  assert save_secs >= 1.0, save_secs  # the save's round trips each took 1 s more
  assert 0 <= faulted.record["slow_ps"]["recover_secs"] < 30, faulted.record["slow_ps"]
  _assert_intact(faulted)


def test_read_only_model_dir_fails_saves_training_goes_on_and_the_next_save_succeeds(faulted):
  faulted.require("read_only", "complete")
  r = faulted.record
  log = faulted.cluster.logs("chief")
  model_dir = faulted.cluster.model_dir
  failures = re.findall(rf"ERROR:Could not save the checkpoint for global step (\d+) into "
                        rf"{re.escape(model_dir)}: (.*)Read-only file system\. ", log)
  assert failures, _lines_between(log, r["read_only"]["start"] - 2, r["read_only"]["heal"] + 5)
  assert "Training goes on and the next save tries again" in log
  saved = r["read_only_saved_after"]
  assert re.search(rf"Saved the checkpoint for global step {saved} after \d+ failed saves\.",
                   log)
  assert os.path.join(model_dir, f"model.ckpt-{saved}") in [
      p for _, p in faulted.cluster.index.latest]
  assert r["read_only"]["steps_during"] > 0, r["read_only"]   # training went on
  _assert_intact(faulted)


# -- chaos ----------------------------------------------------------------------------------
CHAOS_SECS = 180
CHAOS_MAX_STEPS = 4000


def undisturbed_loss(max_steps, model_dir):
  """The eval loss of the same model trained `max_steps` steps in one process, undisturbed."""
  estimator = est.Estimator(program.model_fn, model_dir=model_dir)
  estimator.train(program.train_input_fn, max_steps=max_steps)
  return estimator.evaluate(program.eval_input_fn)["loss"]


def test_chaos_run_keeps_what_was_saved_and_ends_near_an_undisturbed_run(fault_rules):
  root = _root("chaos")
  cluster = LoopbackCluster(root, max_steps=CHAOS_MAX_STEPS, save_steps=SAVE_STEPS,
                            pace_secs=PACE_SECS, delayed=TRAINERS)
  struck = []

  seed = int(time.time())

  def chaos_phase(c, rules, r):
    struck.extend(chaos.run(c, rules, duration_secs=CHAOS_SECS, seed=seed))

  try:
    run = _run_phases(cluster, fault_rules, [("chaos", chaos_phase), ("complete", _complete)])
    print(f"\nchaos (seed {seed}):", struck)
    run.require("chaos", "complete")
    assert len(struck) >= CHAOS_SECS // 20 - 1, struck
    _assert_intact(run, CHAOS_MAX_STEPS)
    # Every restore (a restarted chief, or the chief after a ps restart or a
    # partition) read the latest checkpoint saved by then.
    for match in re.finditer(RESTORE, cluster.logs("chief")):
      when, step = float(match.group(1)), int(match.group(3))
      saved_before = [p for t, p in cluster.index.latest if t < when - 1]
      assert not saved_before or step >= int(saved_before[-1].rsplit("-", 1)[1]), (
          match.group(0), saved_before[-1])
    final_loss = checks.evaluations(cluster.model_dir)[-1][2]
    reference = undisturbed_loss(CHAOS_MAX_STEPS, os.path.join(root, "undisturbed"))
    print(f"chaos: final eval loss {final_loss:.6f}, undisturbed {reference:.6f}")
    assert abs(final_loss - reference) <= 0.1 * reference, (final_loss, reference)
  finally:
    shutil.rmtree(root, ignore_errors=True)
