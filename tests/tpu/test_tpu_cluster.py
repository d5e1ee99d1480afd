"""A TPUEstimator program on a parameter-server cluster, through the launcher, as 2.15 ran it on CPU.

tests/tpu/tpu_cluster_program.py, unmodified tf.estimator code, runs as each
task (`python -m estimator_lite.run`), TF_CONFIG giving its role: ps, chief,
worker and evaluator. Same launcher, bounds and cleanup as the core cluster
tests (tests/cluster/test_roles.py's helpers).
"""
import os
import sys

import pytest
import tensorflow as tf

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "cluster"))
import test_roles as roles  # pylint: disable=g-import-not-at-top,wrong-import-position

# Tier `long` (tests/tiers.py): runs with --tier long.
pytestmark = pytest.mark.long

PROGRAM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tpu_cluster_program.py")


def test_tpu_estimator_trains_evaluates_and_exports_on_a_ps_cluster(tmp_path):
  model_dir = str(tmp_path / "model")
  max_steps = 200
  status, output = roles.run_launcher(
      tmp_path, ["--ps", "1", "--workers", "1", "--evaluator", "--grace-secs", "90"],
      ["--model_dir", model_dir, "--max_steps", str(max_steps)],
      program=("-m", "estimator_lite.run", PROGRAM))
  tail = output[-6000:].decode(errors="replace")
  assert status == 0, tail
  chief, worker = roles.lines_of(output, "chief:0"), roles.lines_of(output, "worker:0")

  # Both trainers trained (on CPU, as 2.15's TPUEstimator did), the variables on the ps.
  for lines in (chief, worker):
    devices = roles.variable_devices(lines)
    assert {"logits/kernel", "logits/bias", "global_step"} <= set(devices), devices
    assert all(device.startswith("/job:ps/task:0") for device in devices.values()), devices
  assert roles.final_checkpoint_step(model_dir) >= max_steps
  assert roles.saved_checkpoint_steps(worker) == []
  # The step rate is ExamplesPerSecondHook's (every ceil(100 / 10) = 10
  # steps), written by the chief only.
  tags = set()
  for path in tf.io.gfile.glob(os.path.join(model_dir, "events.out.tfevents.*")):
    for event in tf.compat.v1.train.summary_iterator(path):
      tags.update(value.tag for value in event.summary.value)
  assert {"global_step/sec", "examples/sec", "loss"} <= tags, tags
  assert len(tf.io.gfile.glob(os.path.join(model_dir, "events.out.tfevents.*"))) == 1

  # The evaluator evaluated until max_steps and the exporter wrote a model
  # that serves on CPU (one 'serve' MetaGraph).
  steps = roles.eval_event_steps(model_dir)
  assert steps and max(steps) >= max_steps, steps
  export_base = os.path.join(model_dir, "export", "latest")
  version = max(os.listdir(export_base), key=int)  # the last export: the final model
  loaded = tf.saved_model.load(os.path.join(export_base, version))
  classes = loaded.signatures["serving_default"](x=tf.constant([[0.9, -0.9], [-0.9, 0.9]]))
  assert classes["classes"].numpy().tolist() == [1, 0]
  summary = roles.lines_of(output, "launch")[-1]
  assert "evaluator:0 exited with 0" in summary and "chief:0 exited with 0" in summary, summary
