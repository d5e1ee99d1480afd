"""estimator_lite.experimental: early stopping, InMemoryEvaluatorHook, stop-at-checkpoint-step."""
import json
import os
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

import estimator_lite as est
from estimator_lite.experimental import early_stopping
from estimator_lite._cluster import stop_marker

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_X = np.random.RandomState(0).uniform(-1, 1, (64, 2)).astype(np.float32)
_Y = (_X @ np.array([[2.0], [-3.0]], np.float32) + 0.5).astype(np.float32)


def _model_fn(features, labels, mode, params):
  w = tf.compat.v1.get_variable("w", [2, 1], initializer=tf.compat.v1.zeros_initializer())
  b = tf.compat.v1.get_variable("b", [1], initializer=tf.compat.v1.zeros_initializer())
  predictions = tf.matmul(features["x"], w) + b
  if mode == est.ModeKeys.PREDICT:
    return est.EstimatorSpec(mode, predictions={"y": predictions},
                             export_outputs={"y": est.export.PredictOutput({"y": predictions})})
  loss = tf.compat.v1.losses.mean_squared_error(labels, predictions)
  train_op = tf.compat.v1.train.GradientDescentOptimizer(params["learning_rate"]).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  return est.EstimatorSpec(mode, predictions={"y": predictions}, loss=loss, train_op=train_op,
                           eval_metric_ops={"mae": tf.compat.v1.metrics.mean_absolute_error(
                               labels, predictions)})


def _train_input_fn():
  return est.inputs.numpy_input_fn({"x": _X}, _Y, batch_size=16, num_epochs=None,
                                   shuffle=True)()


def _eval_input_fn():
  return est.inputs.numpy_input_fn({"x": _X}, _Y, batch_size=64, shuffle=False)()


def _receiver_fn():
  x = tf.compat.v1.placeholder(tf.float32, [None, 2], name="x")
  return est.export.ServingInputReceiver({"x": x}, {"x": x})


def _estimator(model_dir, learning_rate, **config):
  return est.Estimator(_model_fn, str(model_dir), params={"learning_rate": learning_rate},
                       config=est.RunConfig(**config))


def test_local_train_and_evaluate_stops_when_loss_stalls_and_exports_final(tmp_path):
  # Learning rate 0: the evaluation loss never decreases after the first one.
  estimator = _estimator(tmp_path, 0.0, save_checkpoints_steps=10)
  hook = est.experimental.stop_if_no_decrease_hook(
      estimator, "loss", max_steps_without_decrease=20, run_every_secs=None,
      run_every_steps=5)
  exporter = est.FinalExporter("final", _receiver_fn)
  metrics, exports = est.train_and_evaluate(
      estimator, est.TrainSpec(_train_input_fn, max_steps=10_000, hooks=[hook]),
      est.EvalSpec(_eval_input_fn, steps=None, throttle_secs=0, exporters=[exporter]))
  # Evaluations at 10, 20, 30: 20 steps without decrease, seen at the next check.
  final_step = estimator.get_variable_value("global_step")
  assert 30 <= final_step <= 40
  assert metrics["global_step"] == final_step
  evaluated = sorted(early_stopping.read_eval_metrics(estimator.eval_dir()))
  assert evaluated[:3] == [10, 20, 30] and evaluated[-1] == final_step
  assert stop_marker.read_stop_marker(estimator.model_dir) == final_step
  # tf.estimator never ran a FinalExporter after an early stop; here the
  # evaluation of the last checkpoint is the final export.
  assert len(exports) == 1 and os.path.isfile(
      os.path.join(os.fsdecode(exports[0]), "saved_model.pb"))  # bytes, as tf.estimator

  # The threshold hooks read the same history: loss is about 6.2 all along.
  loss = early_stopping.read_eval_metrics(estimator.eval_dir())[10]["loss"]
  for hook, stops in [
      (est.experimental.stop_if_lower_hook(estimator, "loss", loss + 1), True),
      (est.experimental.stop_if_lower_hook(estimator, "loss", loss - 1), False),
      (est.experimental.stop_if_higher_hook(estimator, "loss", loss - 1, min_steps=10**6),
       False),
      (est.experimental.stop_if_no_increase_hook(estimator, "mae", 15), True),
  ]:
    before = estimator.get_variable_value("global_step")
    estimator.train(_train_input_fn, steps=3, hooks=[hook])
    trained = estimator.get_variable_value("global_step") - before
    assert trained == (1 if stops else 3), hook
  with pytest.raises(KeyError, match="Early stopping watches metric 'accuracy'"):
    estimator.train(_train_input_fn, steps=1, hooks=[
        est.experimental.stop_if_higher_hook(estimator, "accuracy", 0.9)])
  with pytest.raises(ValueError, match="Only one of `run_every_secs` and `run_every_steps`"):
    est.experimental.stop_if_higher_hook(estimator, "loss", 1.0, run_every_steps=5)
  # tf.estimator's texts, which users' tests match.
  with pytest.raises(TypeError, match=r"^`should_stop_fn` must be callable\. "):
    est.experimental.make_early_stopping_hook(estimator, "loss < 0.1")
  with pytest.raises(TypeError, match=r"^`estimator` must have type `tf\.estimator\.Estimator`\. "
                                      r"Got: <class 'str'>"):
    est.experimental.make_early_stopping_hook("estimator", lambda: False)


def test_in_memory_evaluator_evaluates_live_variables_every_n_iterations(tmp_path):
  # Checkpoints only at steps 0 and 30: the evaluations at 10 and 20 come from memory.
  estimator = _estimator(tmp_path, 0.1, save_checkpoints_steps=1000, tf_random_seed=1)
  evaluator = est.experimental.InMemoryEvaluatorHook(
      estimator, _eval_input_fn, name="live", every_n_iter=10)
  estimator.train(_train_input_fn, steps=30, hooks=[evaluator])
  history = early_stopping.read_eval_metrics(estimator.eval_dir("live"))
  assert sorted(history) == [0, 10, 20, 30]
  losses = [history[step]["loss"] for step in (0, 10, 20, 30)]
  assert losses == sorted(losses, reverse=True) and losses[-1] < losses[0] / 4
  # The last in-memory result is the final model's: evaluate() agrees.
  final = estimator.evaluate(_eval_input_fn)
  assert final["global_step"] == 30
  assert final["loss"] == pytest.approx(history[30]["loss"], rel=1e-5)
  assert final["mae"] == pytest.approx(history[30]["mae"], rel=1e-5)
  with pytest.raises(ValueError, match="invalid every_n_iter=0"):
    est.experimental.InMemoryEvaluatorHook(estimator, _eval_input_fn, every_n_iter=0)
  with pytest.raises(TypeError, match=r"^Hooks must be a SessionRunHook, given: NotAHook\. "):
    est.experimental.InMemoryEvaluatorHook(estimator, _eval_input_fn, hooks=["NotAHook"])


def test_stop_at_checkpoint_step_hook_waits_for_the_saved_step(tmp_path, monkeypatch):
  chief = _estimator(tmp_path, 0.1, save_checkpoints_steps=7)
  chief_hook = est.experimental.make_stop_at_checkpoint_step_hook(chief, 12)
  assert isinstance(chief_hook, est.StopAtStepHook)
  chief.train(_train_input_fn, hooks=[chief_hook])
  assert chief.get_variable_value("global_step") == 12

  # A worker's hook stops only once a checkpoint at or past last_step exists:
  # checkpoints come at 19 and 26 here, so it trains past 20 until it reads the
  # one at 26 (after the next step, 27).
  monkeypatch.setenv("TF_CONFIG", json.dumps({
      "cluster": {"chief": ["localhost:1"], "worker": ["localhost:2"],
                  "ps": ["localhost:3"]},
      "task": {"type": "worker", "index": 0}}))
  worker = _estimator(tmp_path, 0.1)
  monkeypatch.delenv("TF_CONFIG")
  worker_hook = est.experimental.make_stop_at_checkpoint_step_hook(
      worker, 20, wait_after_file_check_secs=0.01)
  assert not isinstance(worker_hook, est.StopAtStepHook)
  chief.train(_train_input_fn, steps=100, hooks=[worker_hook])
  assert chief.get_variable_value("global_step") == 27


# -- a whole cluster stops ------------------------------------------------------------

_CLUSTER_PROGRAM = r'''
import json, sys
import numpy as np
import estimator_lite as est
import tensorflow as tf

tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)
model_dir = sys.argv[1]
x = np.random.RandomState(0).uniform(-1, 1, (256, 2)).astype(np.float32)
y = x.sum(axis=1, keepdims=True)

def model_fn(features, labels, mode):
  w = tf.compat.v1.get_variable("w", [2, 1], initializer=tf.compat.v1.zeros_initializer())
  loss = tf.compat.v1.losses.mean_squared_error(labels, tf.matmul(features["x"], w))
  # Learning rate 0: the loss never improves; only early stopping ends the job.
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.0).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  return est.EstimatorSpec(mode, loss=loss, train_op=train_op)

estimator = est.Estimator(model_fn, model_dir,
                          config=est.RunConfig(save_checkpoints_steps=20))
hook = est.experimental.stop_if_no_decrease_hook(
    estimator, "loss", 40, run_every_secs=None, run_every_steps=10)
train_spec = est.TrainSpec(
    est.inputs.numpy_input_fn({"x": x}, y, batch_size=32, num_epochs=None, shuffle=True),
    max_steps=10**9, hooks=[hook])
eval_spec = est.EvalSpec(
    est.inputs.numpy_input_fn({"x": x}, y, batch_size=256, shuffle=False), steps=None,
    start_delay_secs=0, throttle_secs=0)
est.train_and_evaluate(estimator, train_spec, eval_spec)
print("FINISHED", estimator.config.task_type, flush=True)
'''


def _free_ports(count):
  sockets = [socket.socket() for _ in range(count)]
  try:
    for sock in sockets:
      sock.bind(("localhost", 0))
    return [sock.getsockname()[1] for sock in sockets]
  finally:
    for sock in sockets:
      sock.close()


@pytest.mark.long  # tests/tiers.py
def test_chief_workers_and_evaluator_all_stop_early(tmp_path):
  script = tmp_path / "train.py"
  script.write_text(_CLUSTER_PROGRAM)
  model_dir = tmp_path / "model"
  chief_port, worker_port, ps_port = _free_ports(3)
  cluster = {"chief": [f"localhost:{chief_port}"], "worker": [f"localhost:{worker_port}"],
             "ps": [f"localhost:{ps_port}"]}
  procs = {}
  try:
    for role in ("ps", "chief", "worker", "evaluator"):
      env = dict(os.environ, PYTHONPATH=REPO_ROOT, TF_CPP_MIN_LOG_LEVEL="2",
                 TF_CONFIG=json.dumps({"cluster": cluster,
                                       "task": {"type": role, "index": 0}}))
      log = open(tmp_path / f"{role}.log", "w")  # pylint: disable=consider-using-with
      procs[role] = subprocess.Popen(
          [sys.executable, str(script), str(model_dir)], env=env, stdout=log,
          stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
      log.close()
    deadline = time.monotonic() + 150
    for role in ("chief", "worker", "evaluator"):
      try:
        code = procs[role].wait(timeout=max(1, deadline - time.monotonic()))
      except subprocess.TimeoutExpired:
        code = None
      log = (tmp_path / f"{role}.log").read_text()
      assert code == 0, f"{role} did not finish on its own (exit {code}):\n{log[-3000:]}"
      assert f"FINISHED {role}" in log
    worker_log = (tmp_path / "worker.log").read_text()
    assert "Early stopping requested, suspending run." in worker_log
    stop_step = stop_marker.read_stop_marker(str(model_dir))
    assert stop_step is not None and stop_step < 10**9
    evaluated = early_stopping.read_eval_metrics(str(model_dir / "eval"))
    assert max(evaluated) >= stop_step  # the evaluator saw the final checkpoint
    assert "Exiting evaluation: training stopped early" in (
        tmp_path / "evaluator.log").read_text()
  finally:
    for proc in procs.values():
      if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
