"""Canned estimators on a parameter-server cluster, under MirroredStrategy, and with steps_per_loop.

The cluster runs tests/canned/canned_cluster_program.py through the launcher
(`python -m estimator_lite.launch`), as a user would, every process bounded by
a timeout and stopped by the PIDs it started (tests/cluster/test_roles.py's
helpers). MirroredStrategy needs logical CPU devices configured before
TensorFlow starts: it runs in a fresh interpreter.
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

PROGRAM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "canned_cluster_program.py")


def _run_cluster(tmp_path, launcher_args, program_args):
  # Same launcher, bounds and cleanup as the core cluster tests, another program.
  return roles.run_launcher(tmp_path, launcher_args, program_args, program=(PROGRAM,))


def _devices(lines):
  found = [m for m in (re.search(r"variable devices (\{.*\})", line) for line in lines) if m]
  assert found, lines[-40:]
  return json.loads(found[0].group(1))


def _exported_dir(lines):
  found = [m for m in (re.search(r"exported (\S+) after", line) for line in lines) if m]
  assert len(found) == 1, lines[-40:]
  return found[0].group(1)


def _assert_export_predicts(export_dir):
  loaded = tf.saved_model.load(export_dir)
  # A binary classifier exports what tf.estimator 2.15 did: classify, regress, predict.
  assert sorted(loaded.signatures) == ["classification", "predict", "regression",
                                      "serving_default"]
  example = tf.train.Example(features=tf.train.Features(feature={
      "x": tf.train.Feature(float_list=tf.train.FloatList(value=[0.7])),
      "word": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"beta"]))}))
  outputs = loaded.signatures["predict"](examples=tf.constant([example.SerializeToString()]))
  assert outputs["probabilities"].shape == (1, 2)
  assert abs(float(tf.reduce_sum(outputs["probabilities"])) - 1.0) < 1e-5


def test_wide_and_deep_trains_on_a_ps_cluster_with_an_evaluator(tmp_path):
  model_dir = str(tmp_path / "model")
  max_steps = 300
  status, output = _run_cluster(
      tmp_path, ["--ps", "2", "--workers", "1", "--evaluator", "--grace-secs", "90"],
      ["--model_dir", model_dir, "--max_steps", str(max_steps)])
  tail = output[-6000:].decode(errors="replace")
  assert status == 0, tail
  chief, worker = roles.lines_of(output, "chief:0"), roles.lines_of(output, "worker:0")
  evaluator = roles.lines_of(output, "evaluator:0")

  # tf.estimator's checkpoint names; training reached max_steps.
  assert roles.final_checkpoint_step(model_dir) >= max_steps
  names = {name for name, _ in tf.train.list_variables(model_dir)}
  for name in ("linear/linear_model/word/weights", "linear/linear_model/bias_weights",
               "dnn/hiddenlayer_0/kernel", "dnn/logits/bias",
               "dnn/input_from_feature_columns/input_layer/word_embedding/embedding_weights",
               "training/Adagrad/dnn/hiddenlayer_0/kernel/accumulator", "global_step"):
    assert name in names, sorted(names)

  # Variables live on the ps tasks, spread over both, the same for chief and worker.
  chief_devices, worker_devices = _devices(chief), _devices(worker)
  assert chief_devices == worker_devices
  model_devices = {device for name, device in chief_devices.items()
                   if name.startswith(("dnn/", "linear/"))}
  assert {d.split("/device")[0] for d in model_devices} == {"/job:ps/task:0", "/job:ps/task:1"}

  # The evaluator evaluated the final checkpoint, with tf.estimator's metric keys.
  steps = roles.evaluated_steps(evaluator)
  assert steps and steps[-1] >= max_steps, evaluator[-20:]
  final = [line for line in evaluator if "Saving dict for global step" in line][-1]
  for key in ("accuracy", "accuracy_baseline", "auc", "auc_precision_recall",
              "average_loss", "label/mean", "loss", "precision", "prediction/mean", "recall"):
    assert f"{key} = " in final, final
  assert any("loss = " in line for line in worker), worker[-20:]
  _assert_export_predicts(_exported_dir(chief))


def test_v1_wide_and_deep_partitions_its_input_layer_over_the_ps_tasks(tmp_path):
  model_dir = str(tmp_path / "model")
  status, output = _run_cluster(
      tmp_path, ["--ps", "2", "--workers", "1", "--grace-secs", "60"],
      ["--model_dir", model_dir, "--max_steps", "200", "--v1"])
  tail = output[-6000:].decode(errors="replace")
  assert status == 0, tail
  devices = _devices(roles.lines_of(output, "worker:0"))
  embedding = "dnn/input_from_feature_columns/input_layer/word_embedding/embedding_weights"
  parts = {name: device for name, device in devices.items()
           if re.fullmatch(re.escape(embedding) + r"/part_\d+", name)}
  assert sorted(parts) == [embedding + "/part_0", embedding + "/part_1"], sorted(devices)
  assert {d.split("/device")[0] for d in parts.values()} == {"/job:ps/task:0", "/job:ps/task:1"}
  # Saved whole, under tf.estimator's name, as tf.estimator's v1 classes did.
  shapes = dict(tf.train.list_variables(model_dir))
  assert shapes[embedding] == [6, 4]
  assert roles.final_checkpoint_step(model_dir) >= 200
  _assert_export_predicts(_exported_dir(roles.lines_of(output, "chief:0")))


_MIRRORED_PROGRAM = '''
import json, os, sys
import numpy as np
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
import estimator_lite as est

rng = np.random.RandomState(0)
x = rng.uniform(-1, 1, (64, 2)).astype(np.float32)
y = (x[:, 0] - x[:, 1] > 0).astype(np.int64)

def input_fn(batch_size, repeat=True):
  def fn():
    dataset = tf.data.Dataset.from_tensor_slices(({"x": x}, y))
    return (dataset.repeat() if repeat else dataset).batch(batch_size)
  return fn

columns = [tf.feature_column.numeric_column("x", shape=[2])]
base = sys.argv[1]
results = {}
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
mirrored = est.DNNClassifier([4], columns, model_dir=os.path.join(base, "mirrored"),
                             config=est.RunConfig(train_distribute=strategy,
                                                  eval_distribute=strategy))
mirrored.train(input_fn(8), max_steps=40)
results["mirrored"] = {k: float(v) for k, v in mirrored.evaluate(input_fn(8, False)).items()}
# The mirrored checkpoint has the single-device names, and resumes without a strategy.
single = est.DNNClassifier([4], columns, model_dir=os.path.join(base, "mirrored"))
results["names"] = sorted(single.get_variable_names())
results["single"] = {k: float(v) for k, v in single.evaluate(input_fn(8, False)).items()}
single.train(input_fn(16), max_steps=50)
results["resumed_step"] = int(single.get_variable_value("global_step"))

looped = est.LinearClassifier(columns, model_dir=os.path.join(base, "looped"),
                              config=est.RunConfig(steps_per_loop=10, save_checkpoints_steps=20))
looped.train(input_fn(16), max_steps=45)
results["looped_step"] = int(looped.get_variable_value("global_step"))
results["looped"] = {k: float(v) for k, v in looped.evaluate(input_fn(16, False)).items()}
print("RESULTS " + json.dumps(results))
'''


def test_canned_estimators_under_mirrored_strategy_and_steps_per_loop(run_python, tmp_path):
  proc = run_python(_MIRRORED_PROGRAM, str(tmp_path), timeout=240)
  assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
  results = json.loads(re.search(r"^RESULTS (.*)$", proc.stdout, re.M).group(1))
  assert results["mirrored"]["global_step"] == 40
  # Head metrics (Keras metric objects) aggregate over both replicas' batches:
  # the same values as one device evaluating the same checkpoint.
  assert sorted(results["mirrored"]) == sorted(results["single"])
  for key, value in results["single"].items():
    assert abs(results["mirrored"][key] - value) < 1e-5, (key, results)
  assert "dnn/hiddenlayer_0/kernel" in results["names"]
  # The model's variables keep their single-device names. (The Keras
  # optimizer's slot copies of replicas 1+ are saved as well, as
  # `.../accumulator/replica_1`; a restore ignores them.)
  model_names = [name for name in results["names"] if not name.startswith("training/")]
  assert not [name for name in model_names if "replica" in name], model_names
  assert results["resumed_step"] == 50
  # steps_per_loop stops at max_steps exactly when no other task trains.
  assert results["looped_step"] == 45
  assert results["looped"]["global_step"] == 45
  assert results["looped"]["accuracy"] > 0.8
