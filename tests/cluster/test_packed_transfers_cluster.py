"""RunConfig(pack_ps_transfers): a real ps cluster trains to the same weights, packed or not.

A chief and a ps (examples/cluster_train.py through the launcher): with one
trainer, steps run one after another, so the weights after max_steps depend
only on the arithmetic, which packing must leave unchanged, bit for bit.
"""
import os
import re

import numpy as np
import pytest
import tensorflow as tf

import test_roles as roles

# Tier `long` (tests/tiers.py): runs with --tier long.
pytestmark = pytest.mark.long


def _train(tmp_path, *pack_flag):
  tmp_path.mkdir()
  model_dir = str(tmp_path / "model")
  status, output = roles.run_launcher(
      tmp_path, ["--ps", "1", "--workers", "0", "--grace-secs", "30"],
      ["--model_dir", model_dir, "--max_steps", "300", "--save_checkpoints_steps", "150",
       "--eval_steps", "1", *pack_flag])
  assert status == 0, output[-6000:].decode(errors="replace")
  chief = roles.lines_of(output, "chief:0")
  devices = roles.variable_devices(chief)
  assert all(d.startswith("/job:ps/task:0") for d in devices.values()), devices
  reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(model_dir))
  values = {name: reader.get_tensor(name) for name in ("weights", "bias", "global_step")}
  # The training graph the chief wrote: the packets' ops, where packing is on.
  with open(os.path.join(model_dir, "graph.pbtxt")) as f:
    packet_ops = re.findall(r'name: "packed_transfers/([^"]*)"', f.read())
  return values, packet_ops


def test_packed_and_unpacked_clusters_train_the_same_weights(tmp_path):
  packed, packet_ops = _train(tmp_path / "packed")
  plain, no_packet_ops = _train(tmp_path / "plain", "--no_pack_ps_transfers")
  assert any(op.startswith("concat") for op in packet_ops), packet_ops
  assert no_packet_ops == []
  assert int(packed["global_step"]) == int(plain["global_step"]) == 300
  for name in ("weights", "bias"):
    np.testing.assert_array_equal(packed[name], plain[name], err_msg=name)
  assert np.abs(packed["weights"]).sum() > 0  # it trained
