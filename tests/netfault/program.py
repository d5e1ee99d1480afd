"""The training program every role of a fault-test cluster runs (as a script, its own process).

    python program.py MODEL_DIR CONTROL_DIR NAME MAX_STEPS SAVE_STEPS PACE_SECS

A noisy linear regression (its eval loss settles at the noise's variance,
0.01), trained with `train_and_evaluate` under the TF_CONFIG it is given,
with a FinalExporter. A hook writes the task's progress to
CONTROL_DIR/NAME.progress ("local steps, global step, time" after each
step) and sleeps PACE_SECS after each step until CONTROL_DIR/release exists,
so faults strike a cluster in the middle of training; once released it
trains at full speed to MAX_STEPS.
"""
import logging
import os
import sys
import time

import tensorflow as tf

import estimator_lite as est

TRUE_W = [[2.0], [-3.0]]
TRUE_B = 0.5
NOISE = 0.1
EVAL_EXAMPLES = 512


class Paced(est.SessionRunHook):
  """Reports progress after each step; paces steps until released."""

  def __init__(self, control_dir, name, pace_secs):
    self._progress = os.path.join(control_dir, name + ".progress")
    self._release = os.path.join(control_dir, "release")
    self._pace_secs = pace_secs

  def begin(self):
    self._step = tf.compat.v1.train.get_global_step()
    self._local = 0
    self._released = False

  def before_run(self, run_context):
    return est.SessionRunArgs(self._step)

  def after_run(self, run_context, run_values):
    self._local += 1
    with open(self._progress + ".tmp", "w") as f:
      f.write(f"{self._local} {run_values.results + 1} {time.time()}")
    os.replace(self._progress + ".tmp", self._progress)
    self._released = self._released or os.path.exists(self._release)
    if not self._released:
      time.sleep(self._pace_secs)

  def end(self, session):
    tf.compat.v1.logging.info("fault_test: ran %d local steps; global step is %d",
                              self._local, session.run(self._step))


def make_example(index):
  seed = tf.stack([index, tf.constant(7, tf.int64)])
  x = tf.random.stateless_uniform([2], seed=seed, minval=-1.0, maxval=1.0)
  noise = NOISE * tf.random.stateless_normal([1], seed=seed + 1)
  return {"x": x}, tf.matmul(x[None], TRUE_W)[0] + TRUE_B + noise


def train_input_fn():
  return tf.data.Dataset.range(1 << 30).map(make_example).batch(16)


def eval_input_fn():
  return tf.data.Dataset.range(1 << 31, (1 << 31) + EVAL_EXAMPLES).map(make_example).batch(64)


def model_fn(features, labels, mode):
  w = tf.compat.v1.get_variable("w", [2, 1], initializer=tf.compat.v1.zeros_initializer())
  b = tf.compat.v1.get_variable("b", [1], initializer=tf.compat.v1.zeros_initializer())
  predictions = tf.matmul(features["x"], w) + b
  if mode == est.ModeKeys.PREDICT:
    return est.EstimatorSpec(mode, predictions={"y": predictions})
  loss = tf.compat.v1.losses.mean_squared_error(labels, predictions)
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.05).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  return est.EstimatorSpec(mode, loss=loss, train_op=train_op)


def serving_input_fn():
  x = tf.compat.v1.placeholder(tf.float32, [None, 2], name="x")
  return est.export.ServingInputReceiver({"x": x}, {"x": x})


def main(model_dir, control_dir, name, max_steps, save_steps, pace_secs):
  tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)
  # Times in the log: what happened when, against the faults' times.
  for handler in logging.getLogger("tensorflow").handlers:
    handler.setFormatter(logging.Formatter("%(created).3f %(levelname)s:%(message)s"))
  config = est.RunConfig(model_dir=model_dir, save_checkpoints_steps=save_steps,
                         keep_checkpoint_max=1000, experimental_max_worker_delay_secs=1)
  est.train_and_evaluate(
      est.Estimator(model_fn, config=config),
      est.TrainSpec(train_input_fn, max_steps=max_steps,
                    hooks=[Paced(control_dir, name, pace_secs)]),
      est.EvalSpec(eval_input_fn, steps=None, start_delay_secs=0, throttle_secs=1,
                   exporters=[est.FinalExporter("linear", serving_input_fn)]))


if __name__ == "__main__":
  main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]),
       float(sys.argv[6]))
