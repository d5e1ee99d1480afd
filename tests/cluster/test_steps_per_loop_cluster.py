"""RunConfig(steps_per_loop=K) on a ps cluster: K steps a Session.run, each on the ps.

Real clusters on localhost (examples/cluster_train.py, through the launcher
or started task by task): the loop's iterations train the variables on the
ps, every trainer's steps count in the global step, training stops at
max_steps (past it by at most one step of each other trainer), the chief
alone saves, the evaluator evaluates each checkpoint once and exports, and
SIGTERM to the chief saves at the step reached.
"""
import os
import re
import signal
import subprocess
import sys
import time

import pytest
import tensorflow as tf

from estimator_lite import launch
import test_roles as roles

# Tier `long` (tests/tiers.py): runs with --tier long.
pytestmark = pytest.mark.long

LOOPS = r"ran (\d+) loops of up to (\d+) steps; global step is (\d+)"


def test_async_cluster_trains_in_loops_and_stops_at_max_steps(tmp_path):
  model_dir = str(tmp_path / "model")
  max_steps, steps_per_loop = 1500, 20
  status, output = roles.run_launcher(
      tmp_path, ["--ps", "1", "--workers", "2", "--evaluator", "--grace-secs", "90"],
      ["--model_dir", model_dir, "--max_steps", str(max_steps), "--save_checkpoints_steps",
       "300", "--eval_steps", "2", "--steps_per_loop", str(steps_per_loop),
       "--max_worker_delay_secs", "1", "--hold_workers", "--hold_evaluator", "--hold_secs",
       "150"])
  tail = output[-6000:].decode(errors="replace")
  assert status == 0, tail
  assert b"stopped waiting after" not in output, tail
  trainers = {task: roles.lines_of(output, task) for task in ("chief:0", "worker:0", "worker:1")}

  # Every trainer ran loops, with its variables on the ps: the loop's reads and
  # updates go to the ps, so all three trained the one model.
  seen_steps = []
  for task, lines in trainers.items():
    devices = roles.variable_devices(lines)
    assert set(devices) == {"weights", "bias", "global_step"}, devices
    assert all(d.startswith("/job:ps/task:0") for d in devices.values()), (task, devices)
    found = [re.search(LOOPS, line) for line in lines]
    found = [m for m in found if m]
    assert len(found) == 1, (task, lines[-30:])
    loops, size, seen = map(int, found[0].groups())
    assert loops > 0 and size == steps_per_loop, (task, found[0].group(0))
    seen_steps.append(seen)

  # Each loop reads the global step before every iteration, so training ends
  # at max_steps, past it by at most one step of each of the other trainers
  # (a loop sized only at its start could overshoot by up to (3 - 1) * 20).
  final = max(seen_steps)
  assert max_steps <= final <= max_steps + 2, seen_steps

  # The chief alone saved, first at step 0, last at the end; the checkpoint
  # holds the step reached (a worker's last step may land during the save).
  name_step = roles.latest_checkpoint_name_step(model_dir)
  assert roles.saved_checkpoint_steps(trainers["chief:0"])[0] == 0
  assert roles.saved_checkpoint_steps(trainers["chief:0"])[-1] == name_step >= max_steps
  assert name_step <= roles.final_checkpoint_step(model_dir) <= final
  for worker in ("worker:0", "worker:1"):
    assert roles.saved_checkpoint_steps(trainers[worker]) == []
  # training_chief_hooks ran on the chief only.
  assert sum("chief-only hook ran on chief" in l for l in trainers["chief:0"]) == 1

  # The evaluator evaluated distinct checkpoints, each once, the last at or
  # past max_steps, and exported it.
  steps = roles.evaluated_steps(roles.lines_of(output, "evaluator:0"))
  assert len(steps) >= 2 and steps == sorted(set(steps)), steps
  assert max_steps <= steps[-1] <= roles.final_checkpoint_step(model_dir), steps
  assert roles.eval_event_steps(model_dir) == set(steps)
  exports = tf.io.gfile.glob(os.path.join(model_dir, "export", "linear", "*"))
  assert len(exports) == 1, exports
  served = tf.saved_model.load(exports[0]).signatures["serving_default"](
      x=tf.constant([[1.0, 0.0, 0.0, 0.0]]))
  assert all(v.shape == (1, 1) for v in served.values())
  summary = roles.lines_of(output, "launch")[-1]
  for task in ("chief:0", "worker:0", "worker:1", "evaluator:0"):
    assert f"{task} exited with 0" in summary, summary


def test_sigterm_to_a_looping_chief_saves_the_step_it_reached(tmp_path):
  """The chief of a ps cluster, at K=50, gets SIGTERM mid-training: it ends its loop,
  saves at the global step reached and exits 143; the restart resumes from there."""
  model_dir = str(tmp_path / "model")
  chief_port, ps_port = launch.free_ports(2)
  cluster = {"chief": [f"localhost:{chief_port}"], "ps": [f"localhost:{ps_port}"]}
  processes, logs = {}, {}

  def start(job, name):
    env = dict(roles.launcher_env(), TF_CONFIG=launch.tf_config(cluster, job, 0))
    logs[name] = str(tmp_path / f"{name}.log")
    with open(logs[name], "wb") as log:
      processes[name] = subprocess.Popen(
          [sys.executable, roles.EXAMPLE, "--model_dir", model_dir, "--max_steps", "100000000",
           "--save_checkpoints_steps", "100000", "--steps_per_loop", "50"],
          cwd=roles.REPO, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

  def log_of(name):
    with open(logs[name], "rb") as f:
      return f.read().decode(errors="replace")

  def wait_for(name, pattern, secs=180):
    deadline = time.monotonic() + secs
    while time.monotonic() < deadline:
      found = re.findall(pattern, log_of(name))
      if found:
        return found
      assert processes[name].poll() is None, log_of(name)[-4000:]
      time.sleep(0.2)
    raise AssertionError(f"no {pattern!r} in {name}'s log after {secs} s:\n"
                         + log_of(name)[-4000:])

  try:
    start("ps", "ps")
    start("chief", "chief")
    # The loss log comes every 100 steps, once training is under way.
    wait_for("chief", r"loss = [\d.e+-]+, step = (\d+)")
    time.sleep(1)
    processes["chief"].send_signal(signal.SIGTERM)
    status = processes["chief"].wait(120)
    log = log_of("chief")
    assert status == 143, log[-4000:]
    preempted = [int(s) for s in re.findall(r"preempted \(SIGTERM\) at global step (\d+)", log)]
    saved = [int(s) for s in re.findall(r"Saving checkpoints for (\d+) into", log)]
    assert len(preempted) == 1 and saved[-1] == preempted[0] > 0, log[-4000:]
    # The loop ran whole loops of 50: the step it saved is a multiple of 50.
    assert preempted[0] % 50 == 0, preempted
    assert roles.latest_checkpoint_name_step(model_dir) == preempted[0]
    start("chief", "chief-2")
    restored = wait_for("chief-2", r"Restoring parameters from \S*model\.ckpt-(\d+)")
    assert int(restored[0]) == preempted[0]
    wait_for("chief-2", r"loss = [\d.e+-]+, step = (\d+)")
  finally:
    for process in processes.values():
      if process.poll() is None:
        process.kill()
        process.wait()
