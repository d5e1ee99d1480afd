"""RunConfig(steps_per_loop=K): K training steps per Session.run, same results as K=1."""
import re

import numpy as np
import pytest
import tensorflow as tf

import estimator_lite as est

_X = np.random.RandomState(0).randn(64, 3).astype(np.float32)
_Y = _X.sum(axis=1, keepdims=True).astype(np.float32)


def _input_fn():
  return tf.data.Dataset.from_tensor_slices(({"x": _X}, _Y)).repeat().batch(8)


def _model_fn(features, labels, mode):
  init = tf.compat.v1.glorot_uniform_initializer
  net = tf.compat.v1.layers.dense(features["x"], 4, kernel_initializer=init(seed=1))
  net = tf.compat.v1.layers.batch_normalization(net, training=mode == est.ModeKeys.TRAIN)
  pred = tf.compat.v1.layers.dense(net, 1, kernel_initializer=init(seed=2))
  loss = tf.compat.v1.losses.mean_squared_error(labels, pred)
  tf.compat.v1.summary.scalar("pred_mean", tf.reduce_mean(pred))
  with tf.control_dependencies(tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.UPDATE_OPS)):
    train_op = tf.compat.v1.train.AdamOptimizer(0.01).minimize(
        loss, global_step=tf.compat.v1.train.get_global_step())
  return est.EstimatorSpec(mode, loss=loss, train_op=train_op, predictions={"y": pred})


class _RunCounter(est.SessionRunHook):

  def __init__(self):
    self.runs = 0

  def after_run(self, run_context, run_values):
    self.runs += 1


def _train(model_dir, steps_per_loop, counter):
  estimator = est.Estimator(_model_fn, model_dir=str(model_dir), config=est.RunConfig(
      save_checkpoints_steps=20, tf_random_seed=3, steps_per_loop=steps_per_loop))
  estimator.train(_input_fn, max_steps=45, hooks=[counter])   # not a multiple of K
  estimator.train(_input_fn, steps=6)                         # relative, from 45
  return estimator


def test_loop_matches_single_steps_and_stops_exactly(tmp_path):
  single = _train(tmp_path / "k1", 1, _RunCounter())
  looped_counter = _RunCounter()
  looped = _train(tmp_path / "k10", 10, looped_counter)

  assert looped.get_variable_value("global_step") == 51
  assert single.get_variable_value("global_step") == 51
  # 45 steps in loops of at most 10: five Session.run calls, the last one of 5 steps.
  assert looped_counter.runs == 5
  names = single.get_variable_names()
  assert names == looped.get_variable_names()
  assert "batch_normalization/moving_mean" in names
  for name in names:
    np.testing.assert_allclose(looped.get_variable_value(name),
                               single.get_variable_value(name), rtol=1e-5, atol=1e-6,
                               err_msg=name)
  # The moving statistics did update inside the loop.
  assert np.abs(looped.get_variable_value("batch_normalization/moving_mean")).sum() > 0
  # Checkpoints are written at loop boundaries, and the last one at the final step.
  assert looped.latest_checkpoint().endswith("model.ckpt-51")
  # Evaluation and prediction are unaffected by steps_per_loop.
  eval_input = lambda: tf.data.Dataset.from_tensor_slices(({"x": _X}, _Y)).batch(16)
  np.testing.assert_allclose(looped.evaluate(eval_input)["loss"],
                             single.evaluate(eval_input)["loss"], rtol=1e-5)


def test_loop_needs_a_dataset(tmp_path):
  def tensors_input_fn():
    return {"x": tf.constant(_X)}, tf.constant(_Y)
  estimator = est.Estimator(_model_fn, model_dir=str(tmp_path),
                            config=est.RunConfig(steps_per_loop=5))
  with pytest.raises(TypeError, match=r"steps_per_loop=5.*tf.data.Dataset.*tuple"):
    estimator.train(tensors_input_fn, max_steps=10)


def test_loop_refuses_synchronous_replicas_with_what_to_do(tmp_path):
  """SyncReplicasOptimizer cannot run in the loop; the error says so, not a graph error."""
  def sync_model_fn(features, labels, mode):
    pred = tf.compat.v1.layers.dense(features["x"], 1)
    loss = tf.compat.v1.losses.mean_squared_error(labels, pred)
    optimizer = tf.compat.v1.train.SyncReplicasOptimizer(
        tf.compat.v1.train.GradientDescentOptimizer(0.1), replicas_to_aggregate=1)
    train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
    return est.EstimatorSpec(mode, loss=loss, train_op=train_op,
                             training_hooks=[optimizer.make_session_run_hook(True)])
  estimator = est.Estimator(sync_model_fn, model_dir=str(tmp_path),
                            config=est.RunConfig(steps_per_loop=5))
  with pytest.raises(ValueError, match=r"steps_per_loop=5\): model_fn trains synchronously "
                     r"\(SyncReplicasOptimizer.*Use steps_per_loop=1"):
    estimator.train(_input_fn, max_steps=10)
  assert tf.train.latest_checkpoint(str(tmp_path)) is None


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "10"])
def test_steps_per_loop_is_validated(bad):
  with pytest.raises(ValueError, match="steps_per_loop"):
    est.RunConfig(steps_per_loop=bad)


def _loss_and_rate_events(model_dir):
  """[(step, tag)] of the session starts, `loss` summaries and step rates written."""
  out = []
  for path in sorted(tf.io.gfile.glob(str(model_dir / "events.out.tfevents.*"))):
    for event in tf.compat.v1.train.summary_iterator(path):
      if event.session_log.status == tf.compat.v1.SessionLog.START:
        out.append((event.step, "start"))
      out.extend((event.step, value.tag) for value in event.summary.value
                 if value.tag in ("loss", "global_step/sec"))
  return out


def test_loop_logs_and_writes_summaries_at_loop_boundaries(tmp_path, tf_logs):
  estimator = est.Estimator(_model_fn, model_dir=str(tmp_path), config=est.RunConfig(
      save_checkpoints_steps=20, save_summary_steps=20, log_step_count_steps=20,
      tf_random_seed=3, steps_per_loop=10))
  estimator.train(_input_fn, max_steps=45)   # loops end at 10, 20, 30, 40, 45
  estimator.train(_input_fn, steps=6)        # one loop of 6: 51

  # The loss log every 20 steps is every second loop; its step is the step
  # after the loop, whose loss it shows.
  logged = [m for m in tf_logs.messages if m.startswith("loss = ")]
  assert [int(re.search(r"step = (\d+)", m).group(1)) for m in logged] == [10, 30, 45, 51]
  # Summaries at the first loop, then whenever a loop of 10 reaches the next
  # multiple of 20 (the short last loop reaches 45 when 50 is due); the step
  # rate at the first loop boundary at or after each multiple of 20 past the first.
  assert _loss_and_rate_events(tmp_path) == [
      (10, "start"), (10, "loss"),
      (30, "global_step/sec"), (30, "loss"),
      (45, "loss"),
      (51, "start"), (51, "loss")]
  rates = [m for m in tf_logs.messages if m.startswith("global_step/sec: ")]
  assert len(rates) == 1
