"""What a training session does first: the saver's save at session start, then the hooks.

    python session_start_program.py tf215|lite MODEL_DIR   # prints one JSON line

Runs under tf.estimator 2.15 (its venv) or estimator_lite with the same
program: a model whose variable `w` a training_chief_hook sets to 42 in
after_create_session (as a hook that loads weights from elsewhere does), a
train() hook and a training_hook that record their after_create_session, and a
CheckpointSaverListener that records each save. Prints the order of those
calls, and `w` in model.ckpt-0 and in the last checkpoint.
"""
import json
import os
import sys
import tempfile

import tensorflow as tf

_v1 = tf.compat.v1
LAST_STEP = 2


def run(api, model_dir):
  """Trains LAST_STEP steps with `api` (tf.estimator or estimator_lite); returns what it saw."""
  calls = []

  class Recorder(_v1.train.SessionRunHook):

    def __init__(self, name, value=None):
      self._name, self._value = name, value

    def begin(self):
      if self._value is not None:
        w = next(v for v in _v1.global_variables() if v.op.name == "w")
        self._assign = w.assign([self._value])

    def after_create_session(self, session, coord):
      calls.append(self._name)
      if self._value is not None:
        session.run(self._assign)

  class SaveRecorder(_v1.train.CheckpointSaverListener):

    def before_save(self, session, global_step_value):
      calls.append(f"save {global_step_value}")

  def model_fn(features, labels, mode):
    del labels
    w = _v1.get_variable("w", [1], initializer=_v1.zeros_initializer())
    loss = tf.reduce_sum(w * features["x"])
    # A learning rate of 0: the checkpoints show what the hooks set, not training.
    train_op = _v1.train.GradientDescentOptimizer(0.0).minimize(
        loss, global_step=_v1.train.get_global_step())
    return api.EstimatorSpec(mode, loss=loss, train_op=train_op,
                             training_chief_hooks=[Recorder("chief hook", 42.0)],
                             training_hooks=[Recorder("training hook")])

  def input_fn():
    return tf.data.Dataset.from_tensors(({"x": [1.0]}, [0.0])).repeat()

  estimator = api.Estimator(model_fn, model_dir=model_dir,
                            config=api.RunConfig(save_checkpoints_steps=1))
  estimator.train(input_fn, max_steps=LAST_STEP, hooks=[Recorder("train hook")],
                  saving_listeners=[SaveRecorder()])
  read = lambda step: float(tf.train.load_checkpoint(
      os.path.join(model_dir, f"model.ckpt-{step}")).get_tensor("w")[0])
  return {"calls": calls, "w at step 0": read(0), f"w at step {LAST_STEP}": read(LAST_STEP)}


def main(argv):
  system, model_dir = argv[1], argv[2] if len(argv) > 2 else tempfile.mkdtemp()
  if system == "tf215":
    api = tf.estimator
  else:
    import estimator_lite as api  # pylint: disable=g-import-not-at-top
  print(json.dumps(run(api, model_dir)))


if __name__ == "__main__":
  main(sys.argv)
