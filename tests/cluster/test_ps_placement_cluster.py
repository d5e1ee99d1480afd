"""RunConfig(ps_placement): a model_dir written under one placement trains on under the other.

A wide-and-deep canned estimator (tests/canned/canned_cluster_program.py) on a
real cluster of two ps tasks and a chief, through the launcher. With one
trainer the weights depend only on the arithmetic, which placement must leave
unchanged: 200 steps under round robin then 200 under by_size give, bit for
bit, the weights of 200 under by_size then 200 under round robin, in the same
checkpoint files.
"""
import os

import numpy as np
import pytest
import tensorflow as tf

import test_roles as roles

# Tier `long` (tests/tiers.py): runs with --tier long.
pytestmark = pytest.mark.long

PROGRAM = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "canned",
                       "canned_cluster_program.py")


def _train(tmp_path, model_dir, placement, max_steps):
  """Trains the chief to max_steps under `placement`; returns where each variable lived."""
  run_dir = tmp_path / f"{placement}_{max_steps}"
  run_dir.mkdir()
  status, output = roles.run_launcher(
      run_dir, ["--ps", "2", "--workers", "0", "--grace-secs", "60"],
      ["--model_dir", model_dir, "--max_steps", str(max_steps), "--ps_placement", placement,
       "--tf_random_seed", "7"], program=(PROGRAM,))
  assert status == 0, output[-6000:].decode(errors="replace")
  chief = roles.lines_of(output, "chief:0")
  assert roles.final_checkpoint_step(model_dir) == max_steps
  return roles.variable_devices(chief)


def _checkpoint(model_dir):
  path = tf.train.latest_checkpoint(model_dir)
  reader = tf.train.load_checkpoint(path)
  values = {name: reader.get_tensor(name) for name, _ in tf.train.list_variables(path)}
  files = sorted(f for f in os.listdir(model_dir) if f.startswith("model.ckpt-400"))
  return values, files


def test_either_placement_restores_the_other_with_the_same_results(tmp_path):
  first, second = str(tmp_path / "round_robin_first"), str(tmp_path / "by_size_first")
  round_robin = _train(tmp_path, first, "round_robin", 200)
  by_size = _train(tmp_path, first, "by_size", 400)
  assert _train(tmp_path, second, "by_size", 200) == by_size
  assert _train(tmp_path, second, "round_robin", 400) == round_robin

  # The placements differ (else this test would show nothing), over the same variables,
  # and each spreads them over both ps tasks.
  assert round_robin.keys() == by_size.keys()
  moved = [name for name in round_robin if round_robin[name] != by_size[name]]
  assert moved, round_robin
  for devices in (round_robin, by_size):
    assert {d.split("/device")[0] for d in devices.values()} == {"/job:ps/task:0",
                                                                 "/job:ps/task:1"}

  values, files = _checkpoint(first)
  other_values, other_files = _checkpoint(second)
  assert files == other_files  # the same shards: model.ckpt-400.data-0000K-of-00002
  assert any(f.endswith("-of-00002") for f in files), files
  assert values.keys() == other_values.keys()
  for name, value in values.items():
    np.testing.assert_array_equal(value, other_values[name], err_msg=name)
  assert int(values["global_step"]) == 400
