"""Real clusters on localhost: chief, worker, ps and evaluator processes over gRPC.

The program under test is examples/cluster_train.py, started through the
launcher (`python -m estimator_lite.launch`) as a user would. Every process
is bounded by a timeout and stopped in `finally`, by the PIDs this test (or
the launcher it started, which prints them) created.
"""
import io
import json
import os
import re
import signal
import subprocess
import sys

import pytest
import tensorflow as tf

import estimator_lite as est
from estimator_lite import launch

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(REPO, "examples", "cluster_train.py")
CLUSTER_TIMEOUT_SECS = 240
_PREFIX = re.compile(rb"^\[(chief|worker|ps|evaluator|master):\d+\] |^\[launch\] ")


def launcher_env():
  env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
  env.pop("TF_CONFIG", None)
  return env


def stop_launcher(process):
  """SIGTERM (the launcher then stops its tasks), then SIGKILL; PIDs we started only."""
  if process.poll() is None:
    process.send_signal(signal.SIGTERM)
    try:
      process.wait(20)
    except subprocess.TimeoutExpired:
      process.kill()
      process.wait()


def kill_launched_tasks(log_path):
  # If the launcher itself had to be killed, its tasks (own sessions) survive
  # it: stop them by the PIDs it printed.
  with open(log_path, "rb") as f:
    pids = [int(p) for p in re.findall(rb"^\[launch\] started \S+ \(pid (\d+)\)", f.read(), re.M)]
  for pid in pids:
    try:
      os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
      pass


def run_launcher(tmp_path, launcher_args, program_args, *, program=(EXAMPLE,), cwd=REPO,
                 env=None, timeout_secs=CLUSTER_TIMEOUT_SECS):
  """Runs the launcher to completion; returns (exit status, output lines by task).

  Every task runs `python *program *program_args` (examples/cluster_train.py
  by default; `("-m", "estimator_lite.run", "prog.py")` is a program too).
  """
  log_path = os.path.join(str(tmp_path), "launch.log")
  command = [sys.executable, "-m", "estimator_lite.launch", *launcher_args, "--",
             sys.executable, *program, *program_args]
  with open(log_path, "wb") as log:
    process = subprocess.Popen(command, cwd=cwd, env=env or launcher_env(), stdout=log,
                               stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
      status = process.wait(timeout_secs)
    except subprocess.TimeoutExpired:
      status = None
    finally:
      stop_launcher(process)
      kill_launched_tasks(log_path)
  with open(log_path, "rb") as f:
    output = f.read()
  assert status is not None, (f"cluster still running after {timeout_secs} s:\n"
                              f"{output[-6000:].decode(errors='replace')}")
  return status, output


def lines_of(output, task):
  prefix = f"[{task}] ".encode()
  return [line[len(prefix):].decode(errors="replace") for line in output.splitlines()
          if line.startswith(prefix)]


def _report(lines, what):
  return [m for m in (re.search(what, l) for l in lines) if m]


def local_steps_and_global_step(lines):
  found = _report(lines, r"ran (\d+) local steps; global step is (\d+)")
  assert len(found) == 1, lines[-40:]
  return int(found[0].group(1)), int(found[0].group(2))


def variable_devices(lines):
  found = _report(lines, r"variable devices (\{.*\})")
  assert found, lines[-40:]
  return json.loads(found[0].group(1))


def saved_checkpoint_steps(lines):
  return [int(m.group(1)) for m in _report(lines, r"Saving checkpoints for (\d+) into")]


def evaluated_steps(lines):
  return [int(m.group(1)) for m in _report(lines, r"Saving dict for global step (\d+):")]


def eval_event_steps(model_dir):
  steps = set()
  for path in tf.io.gfile.glob(os.path.join(model_dir, "eval", "events.out.tfevents.*")):
    for event in tf.compat.v1.train.summary_iterator(path):
      if any(v.tag == "loss" for v in event.summary.value):
        steps.add(event.step)
  return steps


def final_checkpoint_step(model_dir):
  return int(tf.train.load_variable(tf.train.latest_checkpoint(model_dir), "global_step"))


def latest_checkpoint_name_step(model_dir):
  return int(tf.train.latest_checkpoint(model_dir).rsplit("-", 1)[1])


def test_async_cluster_with_evaluator_through_the_launcher(tmp_path):
  model_dir = str(tmp_path / "model")
  max_steps = 1000
  # --hold_*: the chief starts training once the worker has made a step, and
  # the worker once the evaluator has evaluated (the chief's first checkpoint),
  # so neither depends on how fast the processes start on a loaded machine.
  status, output = run_launcher(
      tmp_path, ["--ps", "1", "--workers", "1", "--evaluator", "--grace-secs", "90"],
      ["--model_dir", model_dir, "--max_steps", str(max_steps), "--save_checkpoints_steps", "100",
       "--keep_checkpoint_max", "3", "--eval_steps", "2", "--max_worker_delay_secs", "1",
       "--hold_workers", "--hold_evaluator", "--hold_secs", "150"])
  tail = output[-6000:].decode(errors="replace")
  assert status == 0, tail
  # Every line carries its task's prefix. (Before its first line, the
  # launcher's own import of estimator_lite may print TensorFlow's banner.)
  lines = output.splitlines()
  first = next(i for i, line in enumerate(lines) if line.startswith(b"[launch] "))
  assert all(_PREFIX.match(line) for line in lines[first:] if line.strip()), tail
  chief, worker = lines_of(output, "chief:0"), lines_of(output, "worker:0")
  evaluator = lines_of(output, "evaluator:0")
  assert b"stopped waiting after" not in output, tail  # the hold ended as intended

  # Training reached max_steps; the final checkpoint is there, saved by the
  # chief only. Its name is the step the chief read when it saved; the
  # worker's steps may still land during the save, so the global step stored
  # in it (what the evaluator reports) can be past the name, never before.
  name_step = latest_checkpoint_name_step(model_dir)
  final_step = final_checkpoint_step(model_dir)
  assert name_step >= max_steps
  assert saved_checkpoint_steps(worker) == []
  assert saved_checkpoint_steps(chief)[0] == 0 and saved_checkpoint_steps(chief)[-1] == name_step

  # training_chief_hooks ran on the chief, once, and not on the worker.
  assert len(_report(chief, r"chief-only hook ran on chief$")) == 1, tail
  assert _report(worker, r"chief-only hook ran on") == []

  # The variables live on the ps, for the chief and the worker alike.
  for lines in (chief, worker):
    devices = variable_devices(lines)
    assert set(devices) == {"weights", "bias", "global_step"}
    assert all(device.startswith("/job:ps/task:0") for device in devices.values()), devices

  # Asynchronous: every step of every task advanced the global step once.
  chief_steps, chief_seen = local_steps_and_global_step(chief)
  worker_steps, worker_seen = local_steps_and_global_step(worker)
  assert chief_steps > 0 and worker_steps > 0
  assert chief_steps + worker_steps == max(chief_seen, worker_seen)
  assert name_step <= final_step <= max(chief_seen, worker_seen)

  # The evaluator evaluated distinct checkpoints, each once (the first, step
  # 0, while training was held), wrote them as eval events, and exited on its
  # own with status 0 after one at or past max_steps: the final one, unless a
  # periodic save also landed past max_steps (then it may stop at that one,
  # as tf.estimator's evaluator did).
  steps = evaluated_steps(evaluator)
  assert len(steps) >= 2 and steps == sorted(set(steps)), steps
  assert steps[0] == 0 and max_steps <= steps[-1] <= final_step, steps
  assert eval_event_steps(model_dir) == set(steps)
  summary = lines_of(output, "launch")[-1]
  assert "evaluator:0 exited with 0" in summary and "chief:0 exited with 0" in summary, summary
  assert "worker:0 exited with 0" in summary and "ps:0 done" in summary, summary


@pytest.mark.long  # tests/tiers.py
def test_sync_replicas_cluster_aggregates_one_update_per_round(tmp_path):
  model_dir = str(tmp_path / "model")
  max_steps = 60
  # The chief alone could run every round (taking both tokens of each):
  # --hold_workers makes it start once the worker has made a step.
  status, output = run_launcher(
      tmp_path, ["--ps", "1", "--workers", "1", "--grace-secs", "60"],
      ["--model_dir", model_dir, "--max_steps", str(max_steps), "--save_checkpoints_steps", "30",
       "--sync", "--max_worker_delay_secs", "1", "--hold_workers", "--hold_secs", "150"])
  tail = output[-6000:].decode(errors="replace")
  assert status == 0, tail
  assert b"stopped waiting after" not in output, tail
  chief, worker = lines_of(output, "chief:0"), lines_of(output, "worker:0")
  chief_steps, chief_seen = local_steps_and_global_step(chief)
  worker_steps, worker_seen = local_steps_and_global_step(worker)
  global_step = max(chief_seen, worker_seen)
  # One round may still complete between the chief's stop and its final save.
  assert max_steps <= final_checkpoint_step(model_dir) <= max_steps + 1
  assert max_steps <= global_step <= max_steps + 1
  # Each update averaged two gradients (replicas_to_aggregate=2): the tasks
  # ran about twice as many steps as the global step advanced (asynchronous
  # training would make them equal).
  assert chief_steps > 0 and worker_steps > 0
  assert chief_steps + worker_steps >= 2 * global_step - 2, (chief_steps, worker_steps)
  # The cancelled sync queue runner leaves one line, no traceback.
  assert b"Traceback" not in output, tail
  summary = lines_of(output, "launch")[-1]
  assert "chief:0 exited with 0" in summary and "worker:0 exited with 0" in summary, summary


@pytest.mark.long  # tests/tiers.py
def test_master_trains_and_evaluates(tmp_path):
  model_dir = str(tmp_path / "model")
  master_port, ps_port = launch.free_ports(2)
  cluster = {"master": [f"localhost:{master_port}"], "ps": [f"localhost:{ps_port}"]}
  processes, logs = {}, []
  try:
    for job in ("ps", "master"):
      env = dict(launcher_env(), TF_CONFIG=launch.tf_config(cluster, job, 0))
      logs.append(open(str(tmp_path / f"{job}.log"), "wb"))  # pylint: disable=consider-using-with
      processes[job] = subprocess.Popen(
          [sys.executable, EXAMPLE, "--model_dir", model_dir, "--max_steps", "200",
           "--save_checkpoints_steps", "100", "--eval_steps", "2"],
          cwd=REPO, env=env, stdout=logs[-1], stderr=subprocess.STDOUT,
          stdin=subprocess.DEVNULL)
    status = processes["master"].wait(CLUSTER_TIMEOUT_SECS)
  finally:
    for process in processes.values():
      if process.poll() is None:
        process.kill()
        process.wait()
    for log in logs:
      log.close()
  log = (tmp_path / "master.log").read_text(errors="replace")
  assert status == 0, log[-6000:]
  lines = log.splitlines()
  assert variable_devices(lines)["weights"].startswith("/job:ps/task:0")
  # A master is a chief that evaluates after its saves, like local mode, and
  # runs training_chief_hooks.
  assert len(_report(lines, r"chief-only hook ran on master$")) == 1, log[-6000:]
  assert saved_checkpoint_steps(lines) == [0, 100, 200]
  assert evaluated_steps(lines) == [100, 200]
  assert eval_event_steps(model_dir) == {100, 200}


# -- the launcher itself, with stand-in programs (no TensorFlow) --------------------------
# Each task says it started by creating a file in `marks` (argv[2]). The chief
# exits (with argv[1]) only once all `count` tasks (argv[3]) have printed, so
# none is stopped before its output however slowly the machine starts them.
# A worker exits once the launcher has reaped the chief (its PID is gone): it
# outlives the chief, and the launcher must wait for it. ps and evaluator run
# until stopped. Every wait is bounded: a broken launcher fails the test.
_FAKE_TASK = r"""
import glob, json, os, sys, time
config = json.loads(os.environ["TF_CONFIG"])
job, index = config["task"]["type"], config["task"]["index"]
status, marks, count = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
print("tf_config", json.dumps(config), flush=True)
print("no newline at the end", end="", flush=True)
with open(os.path.join(marks, f"{job}_{index}.started"), "w") as f:
  f.write(str(os.getpid()))

def wait_until(condition, secs=60):
  deadline = time.monotonic() + secs
  while not condition() and time.monotonic() < deadline:
    time.sleep(0.01)

def chief_gone():
  try:
    with open(os.path.join(marks, "chief_0.started")) as f:
      os.kill(int(f.read()), 0)
  except (FileNotFoundError, ValueError):
    return False  # not started (or not written) yet
  except ProcessLookupError:
    return True
  return False

if job == "chief":
  wait_until(lambda: len(glob.glob(os.path.join(marks, "*.started"))) >= count)
  sys.exit(status)
if job == "worker":
  wait_until(chief_gone)
  sys.exit(0)
time.sleep(600)
"""
# How long the launcher waits for workers and the evaluator after the chief:
# the workers exit within milliseconds of it (a wide margin on a loaded
# machine); the evaluator never does, and is stopped when it is over.
_FAKE_GRACE_SECS = 10


@pytest.mark.parametrize("chief_status", [0, 3])
def test_launcher_prefixes_output_and_exits_with_the_chiefs_status(tmp_path, chief_status):
  out = io.BytesIO()
  status = launch.run_cluster(
      [sys.executable, "-c", _FAKE_TASK, str(chief_status), str(tmp_path), "6"], num_ps=2,
      num_workers=2, evaluator=True, grace_secs=_FAKE_GRACE_SECS, out=out)
  assert status == chief_status
  lines = out.getvalue().splitlines()
  assert all(_PREFIX.match(line) for line in lines), lines
  configs = {}
  for line in lines:
    match = re.match(rb"^\[(\w+:\d)\] tf_config (.*)$", line)
    if match:
      configs[match.group(1).decode()] = json.loads(match.group(2))
  assert sorted(configs) == ["chief:0", "evaluator:0", "ps:0", "ps:1", "worker:0", "worker:1"]
  cluster = configs["chief:0"]["cluster"]
  assert sorted(cluster) == ["chief", "ps", "worker"]
  assert (len(cluster["chief"]), len(cluster["worker"]), len(cluster["ps"])) == (1, 2, 2)
  addresses = cluster["chief"] + cluster["worker"] + cluster["ps"]
  assert len(set(addresses)) == 5 and all(a.startswith("localhost:") for a in addresses)
  for name, config in configs.items():
    job, index = name.split(":")
    assert config == {"cluster": cluster, "task": {"type": job, "index": int(index)}}
  assert lines.count(b"[worker:0] no newline at the end") == 1
  summary = lines[-1].decode()
  # The ps tasks serve until stopped: once the chief has ended, that is their normal end.
  assert "ps:0 done" in summary and "ps:1 done" in summary, summary
  # The evaluator never finishes here: stopped after the grace (or at once
  # when the chief failed). Workers still running when the chief exits are
  # waited for when it succeeded.
  assert "evaluator:0 stopped" in summary, summary
  if chief_status == 0:
    assert "worker:0 exited with 0" in summary and "worker:1 exited with 0" in summary, summary


# Each task prints whether its RunConfig's sessions run with thread spinning
# off; the chief exits, the others wait to be stopped.
_SPINNING_TASK = r"""
import json, os, sys, time
import estimator_lite as est
config = est.RunConfig()
print("spinning off:", config.session_config.experimental.disable_thread_spinning, flush=True)
if config.task_type != "chief":
  time.sleep(600)
"""


@pytest.mark.long  # tests/tiers.py
def test_launched_tasks_run_with_thread_spinning_off(tmp_path):
  out = io.BytesIO()
  status = launch.run_cluster([sys.executable, "-c", _SPINNING_TASK], num_ps=1, num_workers=1,
                              evaluator=False, grace_secs=2, out=out)
  lines = out.getvalue().decode(errors="replace").splitlines()
  assert status == 0, lines[-30:]
  for task in ("chief:0", "worker:0", "ps:0"):
    assert f"[{task}] spinning off: True" in lines, (task, lines[-30:])


def test_print_tf_config_gives_each_machine_its_role(monkeypatch, capsys):
  assert launch.main(["--ps", "1", "--workers", "1", "--evaluator",
                      "--print-tf-config", "h0", "h1:2000", "h2"]) == 0
  exports = re.findall(r"^# (\S+) .*\nexport TF_CONFIG='(.*)'$", capsys.readouterr().out, re.M)
  assert [task for task, _ in exports] == ["chief:0", "worker:0", "ps:0", "evaluator:0"]
  roles = {}
  for task, tf_config in exports:
    monkeypatch.setenv("TF_CONFIG", tf_config)
    config = est.RunConfig()
    roles[task] = (config.task_type, config.master, config.is_chief)
  assert roles == {"chief:0": ("chief", "grpc://h0:2222", True),
                   "worker:0": ("worker", "grpc://h1:2000", False),
                   "ps:0": ("ps", "grpc://h2:2222", False),
                   "evaluator:0": ("evaluator", "", False)}
  with pytest.raises(SystemExit):
    launch.main(["--ps", "1", "--workers", "1", "--print-tf-config", "h0", "h1"])
  error = capsys.readouterr().err
  assert "got 2 host(s) ['h0', 'h1'], but the cluster has 3 training task(s)" in error
