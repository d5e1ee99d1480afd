"""What `python -m estimator_lite.launch` shows a user: every worker training, a status table, a summary, quiet logs.

The end-to-end test runs README's launcher command (examples/cluster_train.py,
chief + 2 workers + ps + evaluator) with none of the example's hold flags: the
launcher alone must make both workers train, and each task's own steps show
beside the global step. It then runs the launcher again on the finished
model_dir, which must say that it trained nothing. The other tests feed the
status reader and the noise filter lines captured from real runs of
TensorFlow 2.21.
"""
import os
import re
import subprocess
import sys

import pytest
import tensorflow as tf

import test_roles as roles
from estimator_lite._cluster import task_status
from estimator_lite._util import cpp_noise

# Lines TensorFlow 2.21 printed in this project's runs (launcher tests and
# examples/digits.py on a CPU-only machine).
_NOISE = [
    b"WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
    b"I0000 00:00:1795576268.719883   10705 port.cc:153] oneDNN custom operations are on. You "
    b"may see slightly different numerical results due to floating-point round-off errors",
    b"I0000 00:00:1795576268.720270   10705 cudart_stub.cc:31] Could not find cuda drivers on "
    b"your machine, GPU will not be used.",
    b"I0000 00:00:1795576268.768160   10705 cpu_feature_guard.cc:227] This TensorFlow binary is "
    b"optimized to use available CPU instructions in performance-critical operations.",
    b"To enable the following instructions: AVX2 AVX512F AVX512_VNNI AVX512_BF16 FMA, in other "
    b"operations, rebuild TensorFlow with the appropriate compiler flags.",
    b"I1125 03:12:10.123456   10959 grpc_server_lib.cc:467] Started server with target: "
    b"grpc://localhost:42633",
    b"W1125 03:12:16.862193   10961 local_rendezvous.cc:412] Local rendezvous is aborting with "
    b"status: ABORTED: Cleanup 50058408540901921 [type.googleapis.com/tensorflow.DerivedStatus='']",
]
_CUINIT = (b"E0000 00:00:1795576273.022584   10705 cuda_platform.cc:52] failed call to cuInit: "
           b"INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)")
_KEPT = [
    b"INFO:tensorflow:loss = 5.1231213, step = 0",
    b"WARNING:tensorflow:TensorFlow server for ps:0 listens unauthenticated on all interfaces",
    b"W1125 03:12:16.862193   10961 local_rendezvous.cc:412] Local rendezvous is aborting with "
    b"status: UNAVAILABLE: Connection reset by peer",
    b"E1125 03:12:16.862193   10961 master_session.cc:1234] Cleanup partition error: UNAVAILABLE",
    b"F1125 03:12:16.862193   10961 tensor.cc:99] Check failed: dtype() == expected_dtype",
    b"Traceback (most recent call last):",
]


def test_the_noise_filter_drops_tensorflows_startup_and_shutdown_chatter_only():
  on_cpu = cpp_noise.NoiseFilter(cpu_only=True)
  assert [on_cpu.is_noise(line + b"\n") for line in _NOISE + [_CUINIT]] == [True] * 8
  assert [on_cpu.is_noise(line) for line in _KEPT] == [False] * len(_KEPT)
  assert on_cpu.hidden == 8
  # With an NVIDIA device present, a failed cuInit is a real error.
  assert not cpp_noise.NoiseFilter(cpu_only=False).is_noise(_CUINIT)


def test_the_status_reader_follows_a_tasks_log():
  status = task_status.ClusterStatus()
  status.add("chief:0", 101)
  status.add("worker:0", 102)
  status.add("evaluator:0", 103)
  feed = [
      ("chief:0", 0.0, "INFO:tensorflow:Saving checkpoints for 0 into /m/model.ckpt."),
      ("worker:0", 0.0, "INFO:tensorflow:Using config: RunConfig(keep_checkpoint_max=5, "
                        "log_step_count_steps=100, model_dir='/m', steps_per_loop=1, "
                        "task_type='worker', task_id=0)"),
      ("worker:0", 0.0, "INFO:tensorflow:Waiting 5 secs before starting training."),
      ("evaluator:0", 0.0, "INFO:tensorflow:Evaluating new checkpoints in /m every 0 secs "
                           "(EvalSpec.throttle_secs)."),
      ("chief:0", 1.0, "INFO:tensorflow:loss = 0.5, step = 100"),
      ("chief:0", 1.0, "INFO:tensorflow:global_step/sec: 171.52"),
      ("worker:0", 6.0, "INFO:tensorflow:loss = 0.4, step = 150"),
      ("worker:0", 8.0, "INFO:tensorflow:loss = 0.3, step = 750 (0.3 sec)"),
      ("evaluator:0", 9.0, "INFO:tensorflow:Saving dict for global step 500: global_step = 500, "
                           "loss = 3.7764583127319895e-13, rmse = 6.145289717096603e-07"),
      ("evaluator:0", 9.5, "INFO:tensorflow:Exported SavedModel (infer) from checkpoint "
                           "/m/model.ckpt-500 to /m/export/linear/1795 in 0.11s."),
  ]
  for name, now, line in feed:
    status.observe(name, line, now)
  # While it trains: two loss lines, one every 100 of its runs, the first
  # after its first run: at least 101 steps of its own.
  assert re.split(r"\s{2,}", status.table({})[2])[3] == ">=101"
  status.observe("worker:0", "INFO:tensorflow:Trained 212 steps in this process.", 9.6)
  chief, worker, evaluator = (status.tasks[n] for n in ("chief:0", "worker:0", "evaluator:0"))
  assert (chief.state, chief.step, chief.steps_per_sec) == ("training", 100, 171.52)
  # The worker logs no global_step/sec: its speed is its global step's progress.
  assert (worker.state, worker.step, worker.steps_per_sec) == ("training", 750, 300.0)
  assert evaluator.last_eval == "step 500: loss=3.776e-13 rmse=6.145e-07"
  assert status.model_dir() == "/m" and status.exports() == ["/m/export/linear/1795"]
  assert (worker.own_steps, chief.own_steps) == (212, None)
  assert status.finished_model_dir() is None
  table = status.table({"chief:0": "exited 0"})
  assert re.split(r"\s{2,}", table[0]) == ["task", "pid", "state", "own steps", "global step",
                                           "steps/s", "last evaluation"]
  assert re.split(r"\s{2,}", table[1]) == ["chief:0", "101", "exited 0", "-", "100", "171.5",
                                           "-"]
  assert re.split(r"\s{2,}", table[2]) == ["worker:0", "102", "training", "212", "750",
                                           "300.0", "-"]
  assert table[3].endswith("step 500: loss=3.776e-13 rmse=6.145e-07")


def test_the_status_reader_sees_loops_and_a_finished_model_dir():
  status = task_status.ClusterStatus()
  status.add("chief:0", 101)
  status.add("worker:0", 102)
  status.observe("worker:0", "INFO:tensorflow:Trained 7 loops of up to 100 steps in this "
                             "process.", 1.0)
  status.observe("chief:0", "INFO:tensorflow:Skipping training since max_steps has already "
                            "saved (global step 1004 >= max_steps 1000).", 1.0)
  chief, worker = status.tasks["chief:0"], status.tasks["worker:0"]
  assert (chief.state, chief.own_steps, chief.step) == ("nothing left to train", 0, 1004)
  assert status.finished_model_dir() == (1004, 1000)
  rows = [re.split(r"\s{2,}", row) for row in status.table({})[1:]]
  assert [row[3:5] for row in rows] == [["0", "1004"], ["<=700", "-"]]
  # tf.estimator 2.15's own text, without estimator_lite's numbers.
  bare = task_status.ClusterStatus()
  bare.add("chief:0", 101)
  bare.observe("chief:0", "INFO:tensorflow:Skipping training since max_steps has already "
                          "saved.", 1.0)
  assert bare.finished_model_dir() == (None, None)


def test_the_launcher_module_and_its_help_do_not_import_tensorflow():
  code = ("import sys; from estimator_lite import launch; "
          "print('tensorflow' in sys.modules)")
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120, check=True, env=roles.launcher_env()).stdout
  assert out.split() == ["False"]
  helped = subprocess.run([sys.executable, "-m", "estimator_lite.launch", "--help"],
                          capture_output=True, text=True, timeout=60, check=True,
                          env=roles.launcher_env())
  for flag in ("--join-secs", "--status-secs", "--show-tf-logs"):
    assert flag in helped.stdout


@pytest.mark.long  # tests/tiers.py
def test_every_worker_trains_and_the_launcher_reports_status_and_summary(tmp_path):
  model_dir = str(tmp_path / "linear")
  # README's command, with no --hold_* flag of the example.
  status, output = roles.run_launcher(
      tmp_path, ["--ps", "1", "--workers", "2", "--evaluator", "--status-secs", "2"],
      ["--model_dir", model_dir, "--max_steps", "1000"])
  text = output.decode(errors="replace")
  assert status == 0, text[-6000:]

  # Both workers (and the chief) trained: each ran steps of its own.
  local_steps = {}
  for task in ("chief:0", "worker:0", "worker:1"):
    local_steps[task], _ = roles.local_steps_and_global_step(roles.lines_of(output, task))
    assert local_steps[task] > 0, (task, text[-6000:])
  assert "Skipping training since max_steps" not in text
  assert "had not joined" not in text, text[-6000:]

  launch_lines = roles.lines_of(output, "launch")
  # Status tables came while training; each lists every task with its pid.
  headings = [i for i, line in enumerate(launch_lines) if re.match(r"status at \d+ s \(", line)]
  assert headings, text[-6000:]
  pids = dict(re.findall(r"^started (\S+) \(pid (\d+)\)$", "\n".join(launch_lines), re.M))
  first_table = launch_lines[headings[0] + 1:headings[0] + 7]
  assert re.split(r"\s{2,}", first_table[0].strip()) == [
      "task", "pid", "state", "own steps", "global step", "steps/s", "last evaluation"]
  assert [re.split(r"\s+", row.strip())[:2] for row in first_table[1:]] == [
      [task, pids[task]] for task in ("chief:0", "worker:0", "worker:1", "ps:0", "evaluator:0")]
  # While a task trains, its own steps are bounded from below by its loss
  # lines (one every 100 of its runs): never above what it trained in the end.
  live = [int(m.group(1)) for line in launch_lines
          for m in [re.search(r"^\s+worker:1\s+\d+\s+training\s+>=(\d+)\s+\d+", line)] if m]
  assert live, "\n".join(launch_lines)

  # The summary: exits, the final step, the model_dir, the export, the last evaluation.
  summary_at = max(i for i, line in enumerate(launch_lines) if line.startswith("summary after"))
  summary = launch_lines[summary_at:]
  rows = {re.split(r"\s+", row.strip())[0]: re.split(r"\s{2,}", row.strip())
          for row in summary[2:7]}
  latest = tf.train.latest_checkpoint(model_dir)
  final_step = int(latest.rsplit("-", 1)[1])
  # Each training task's own steps (what the example's hook counted too),
  # beside its view of the global step; together they make up max_steps.
  for task in ("chief:0", "worker:0", "worker:1"):
    assert rows[task][2:4] == ["exited 0", str(local_steps[task])], rows[task]
    assert rows[task][4].isdigit(), rows[task]
  assert sum(local_steps.values()) >= 1000
  assert max(live) <= local_steps["worker:1"], (live, local_steps)
  assert rows["evaluator:0"][2] == "exited 0"
  # The ps serves until the launcher stops it: that is its normal end.
  assert rows["ps:0"][2:4] == ["done", "-"], rows["ps:0"]
  assert f"model_dir: {model_dir} (latest checkpoint: {latest}, step {final_step})" in summary
  (exports_line,) = [line for line in summary if line.startswith("exports: ")]
  (export_dir,) = exports_line[len("exports: "):].split(", ")
  assert os.path.dirname(export_dir) == os.path.join(model_dir, "export", "linear")
  assert tf.saved_model.contains_saved_model(export_dir)
  assert any(re.match(rf"last evaluation: step {final_step}: loss=\S+ rmse=\S+$", line)
             for line in summary), summary

  # TensorFlow's C++ chatter was left out, and the launcher said so.
  noises = ["oneDNN custom operations", "Local rendezvous is aborting",
            "All log messages before absl"]
  if not cpp_noise.machine_has_nvidia_devices():
    noises.append("failed call to cuInit")
  for noise in noises:
    assert noise not in text, noise
  assert any(re.match(r"left out \d+ lines of TensorFlow's C\+\+ start-up and shutdown logs "
                      r"\(--show-tf-logs shows them\)$", line) for line in summary)
  assert launch_lines[-1].startswith("chief:0 exited with 0; ")
  assert "ps:0 done (stopped by the launcher once training was over)" in launch_lines[-1]
  assert not any(line.startswith("trained nothing") for line in summary)

  # Run again on the finished model_dir (chief, ps, evaluator: short): it
  # trains nothing, and the launcher says so and why, and that the evaluator
  # exported the final checkpoint again.
  status, output = roles.run_launcher(
      tmp_path, ["--ps", "1", "--workers", "0", "--evaluator", "--status-secs", "0"],
      ["--model_dir", model_dir, "--max_steps", "1000"])
  text = output.decode(errors="replace")
  assert status == 0, text[-6000:]
  launch_lines = roles.lines_of(output, "launch")
  summary = launch_lines[max(i for i, line in enumerate(launch_lines)
                             if line.startswith("summary after")):]
  assert re.split(r"\s{2,}", summary[2].strip())[2:5] == ["exited 0", "0", str(final_step)]
  assert (f"trained nothing: {model_dir} already holds step {final_step} >= max_steps 1000 "
          "(\"Skipping training since max_steps has already saved\"); to train more, use a "
          "new model_dir or a larger max_steps") in summary, summary
  assert ("the evaluator evaluated that final checkpoint again and wrote another export of "
          "it (tf.estimator's evaluator does the same)") in summary, summary
  assert tf.train.latest_checkpoint(model_dir) == latest
