"""Bad input and failing disks: each gives a clear error, and no saved checkpoint is lost."""
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf

import estimator_lite as est

_REPO = pathlib.Path(__file__).resolve().parents[1]


def _input_fn(width=3, with_labels=True):
  def input_fn():
    x = np.ones((8, width), np.float32)
    if not with_labels:
      return tf.data.Dataset.from_tensor_slices({"x": x}).batch(4)
    return tf.data.Dataset.from_tensor_slices(({"x": x}, np.ones((8, 1), np.float32))).batch(4)
  return input_fn


def _model_fn(features, labels, mode, params):
  pred = tf.compat.v1.layers.dense(features["x"], 1, name=params.get("layer", "dense"))
  if mode == est.ModeKeys.PREDICT:
    return est.EstimatorSpec(mode, predictions={"y": pred})
  loss = tf.compat.v1.losses.mean_squared_error(labels, pred)
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  return est.EstimatorSpec(mode, loss=loss, train_op=train_op)


def _estimator(model_dir, **params):
  return est.Estimator(_model_fn, model_dir=str(model_dir), params=params)


def test_missing_labels_in_train_names_the_fix(tmp_path):
  with pytest.raises(ValueError, match=r"mode 'train' with labels=None.*Return \(features, labels\)"):
    _estimator(tmp_path).train(_input_fn(with_labels=False), steps=1)


def test_features_that_do_not_fit_the_checkpoint(tmp_path):
  estimator = _estimator(tmp_path)
  estimator.train(_input_fn(width=3), steps=2)
  # tf.estimator's error (the Saver's), then which variable and what to do.
  expected = (r"^Restoring from checkpoint failed\. This is most likely due to a mismatch "
              r"between the current graph and the graph from the checkpoint(.|\n)*"
              r"dense/kernel: graph \[4, 1\] vs checkpoint \[3, 1\]")
  with pytest.raises(tf.errors.InvalidArgumentError, match=expected):
    estimator.evaluate(_input_fn(width=4))
  with pytest.raises(tf.errors.InvalidArgumentError, match=expected):
    estimator.train(_input_fn(width=4), steps=1)


def test_checkpoint_from_a_different_model_names_the_missing_variable(tmp_path):
  _estimator(tmp_path).train(_input_fn(), steps=2)
  other = _estimator(tmp_path, layer="renamed")
  with pytest.raises(tf.errors.NotFoundError,
                     match=r"^Restoring from checkpoint failed\. This is most likely due to a "
                           r"Variable name or other graph key that is missing(.|\n)*"
                           r"not found in the checkpoint: \['renamed/bias', "
                           r"'renamed/kernel'\].*new model_dir.*WarmStartSettings"):
    other.train(_input_fn(), steps=1)
  with pytest.raises(tf.errors.NotFoundError, match=r"renamed/kernel"):
    next(other.predict(_input_fn(with_labels=False)))
  # The original checkpoint is untouched and still restores.
  assert _estimator(tmp_path).evaluate(_input_fn())["global_step"] == 2


def test_unwritable_model_dir(tmp_path):
  blocker = tmp_path / "a_file"
  blocker.write_text("not a directory")
  with pytest.raises(ValueError, match=r"model_dir '.*a_file/model' is not writable.*Pass a directory"):
    _estimator(blocker / "model").train(_input_fn(), steps=1)


_DISK_FULL_PROGRAM = textwrap.dedent('''
    import resource, signal, sys
    import numpy as np, tensorflow as tf
    import estimator_lite as est

    model_dir, fail_after_step = sys.argv[1], int(sys.argv[2])
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)   # writes past the limit fail with EFBIG

    class FillDiskAfter(est.CheckpointSaverListener):
        """After the save at fail_after_step, no file may grow past 256 KB: the next save fails."""
        def after_save(self, session, global_step_value):
            if global_step_value >= fail_after_step:
                resource.setrlimit(resource.RLIMIT_FSIZE, (256 * 1024, resource.RLIM_INFINITY))

    def input_fn():
        x = np.ones((8, 3), np.float32)
        return tf.data.Dataset.from_tensor_slices(({"x": x}, x[:, :1])).repeat().batch(4)

    def model_fn(features, labels, mode):
        tf.compat.v1.get_variable("ballast", [100_000], trainable=False)   # 400 KB per save
        pred = tf.compat.v1.layers.dense(features["x"], 1)
        loss = tf.compat.v1.losses.mean_squared_error(labels, pred)
        train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
            loss, global_step=tf.compat.v1.train.get_global_step())
        return est.EstimatorSpec(mode, loss=loss, train_op=train_op)

    estimator = est.Estimator(model_fn, model_dir=model_dir,
                              config=est.RunConfig(save_checkpoints_steps=10))
    try:
        estimator.train(input_fn, max_steps=45, saving_listeners=[FillDiskAfter()])
    except OSError as e:
        print("ERROR_TYPE", type(e).__name__)
        print("ERROR", e)
        sys.exit(3)
''')


def test_disk_full_during_save_keeps_the_previous_checkpoint(tmp_path):
  script = tmp_path / "train.py"
  script.write_text(_DISK_FULL_PROGRAM)
  model_dir = tmp_path / "model"
  env = dict(os.environ, PYTHONPATH=str(_REPO))
  proc = subprocess.run([sys.executable, str(script), str(model_dir), "20"], env=env,
                        capture_output=True, text=True, timeout=180)
  output = proc.stdout + proc.stderr
  assert proc.returncode == 3, output[-3000:]
  # The save at 30 fails and training goes on; so do the later ones, and the
  # failure of the save at the end (step 45) stops with CheckpointSaveError.
  assert "ERROR_TYPE CheckpointSaveError" in output
  for step, failures in ((30, 1), (40, 2)):
    assert (f"Could not save the checkpoint for global step {step} into {model_dir}: "
            in output), output[-3000:]
    assert (f"Training goes on and the next save tries again (saves have failed "
            f"{failures} times in a row" in output)
  raised = output.split("ERROR_TYPE CheckpointSaveError", 1)[1]
  assert f"Could not save the checkpoint for global step 45 into {model_dir}: " in raised
  assert "model.ckpt-20) is intact: free space" in raised
  assert "(3 saves in a row failed, over " in raised
  # The index still names step 20, complete, and a new run resumes from it.
  assert tf.train.latest_checkpoint(str(model_dir)).endswith("model.ckpt-20")
  assert tf.train.load_variable(str(model_dir), "global_step") == 20
  estimator = est.Estimator(_ballast_model_fn, model_dir=str(model_dir))
  estimator.train(_input_fn(), max_steps=22)
  assert estimator.get_variable_value("global_step") == 22


def _ballast_model_fn(features, labels, mode):
  tf.compat.v1.get_variable("ballast", [100_000], trainable=False)
  pred = tf.compat.v1.layers.dense(features["x"], 1)
  loss = tf.compat.v1.losses.mean_squared_error(labels, pred)
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  return est.EstimatorSpec(mode, loss=loss, train_op=train_op)
