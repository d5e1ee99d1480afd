"""model_to_estimator on a parameter-server cluster: chief, 1 worker, 1 ps and an evaluator.

Real processes through the launcher (`python -m estimator_lite.launch`), with
tests/cluster/test_roles.py's bounded waits and PID-only cleanup.
"""
import json
import os
import re
import sys

import pytest
import tensorflow as tf

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "cluster"))
import test_roles as roles  # pylint: disable=g-import-not-at-top,wrong-import-position

# Tier `long` (tests/tiers.py): runs with --tier long.
pytestmark = pytest.mark.long

PROGRAM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "keras_cluster_program.py")


def test_keras_model_trains_on_a_ps_cluster_with_an_evaluator(tmp_path):
  model_dir = str(tmp_path / "model")
  max_steps = 200
  status, output = roles.run_launcher(
      tmp_path, ["--ps", "1", "--workers", "1", "--evaluator", "--grace-secs", "90"],
      ["--model_dir", model_dir, "--max_steps", str(max_steps)], program=(PROGRAM,))
  assert status == 0, output[-6000:].decode(errors="replace")
  chief, worker = roles.lines_of(output, "chief:0"), roles.lines_of(output, "worker:0")
  evaluator = roles.lines_of(output, "evaluator:0")

  # Object-based keys: the global step is `estimator_global_step`, not `global_step`.
  assert tf.train.load_variable(
      model_dir, "estimator_global_step/.ATTRIBUTES/VARIABLE_VALUE") >= max_steps
  names = {name for name, _ in tf.train.list_variables(model_dir)}
  # checkpoint_format='checkpoint': Keras's object-based keys, as 2.15 wrote.
  assert "layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE" in names, sorted(names)
  assert "estimator_global_step/.ATTRIBUTES/VARIABLE_VALUE" in names
  # The chief warm-started from the Keras weights it saved under model_dir/keras/.
  assert tf.train.latest_checkpoint(os.path.join(model_dir, "keras"))

  def devices(lines):
    found = [m for m in (re.search(r"variable devices (\{.*\})", l) for l in lines) if m]
    assert found, lines[-40:]
    return json.loads(found[0].group(1))

  chief_devices = devices(chief)
  assert chief_devices == devices(worker)
  assert {chief_devices[n].split("/device")[0] for n in ("hidden/kernel", "p/bias")} == {
      "/job:ps/task:0"}

  steps = roles.evaluated_steps(evaluator)
  assert steps and steps[-1] >= max_steps, evaluator[-20:]
  final = [line for line in evaluator if "Saving dict for global step" in line][-1]
  assert "accuracy = " in final and "loss = " in final, final
  exported = [m for m in (re.search(r"exported (\S+) after", l) for l in chief) if m]
  assert len(exported) == 1, chief[-40:]
  served = tf.saved_model.load(exported[0].group(1)).signatures["serving_default"](
      x=tf.constant([[0.5, 0.5, 0.0, 0.0]]))
  assert served["p"].shape == (1, 1)
