"""Bad input and failing disks: each gives a clear error, and no saved checkpoint is lost."""
import contextlib
import os
import pathlib
import re
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


# -- mistakes a newcomer makes with canned estimators and export (issue 38) ------------
def _numeric_columns():
  return [tf.feature_column.numeric_column("x", shape=(3,))]


def _string_labels_input_fn():
  x = np.ones((4, 3), np.float32)
  labels = np.array([["cat"], ["dog"], ["cat"], ["bird"]])
  return tf.data.Dataset.from_tensor_slices(({"x": x}, labels)).repeat().batch(2)


@pytest.mark.parametrize("make_estimator, n_classes", [
    (lambda model_dir: est.LinearClassifier(_numeric_columns(), model_dir=model_dir), 2),
    (lambda model_dir: est.DNNClassifier([2], _numeric_columns(), model_dir=model_dir,
                                         n_classes=3), 3),
], ids=["binary", "multi_class"])
def test_string_labels_without_label_vocabulary_fail_before_any_file(tmp_path, make_estimator,
                                                                     n_classes):
  model_dir = tmp_path / "model"
  estimator = make_estimator(str(model_dir))
  # Binary: tf.estimator 2.15 failed at the first step ("Cast string to
  # float"), after writing model.ckpt-0; multi-class: 2.15's text.
  expected = ("Labels dtype should be numeric (class ids 0 or 1) without label_vocabulary. "
              "Instead got <dtype: 'string'>." if n_classes == 2 else
              "Labels dtype should be integer. Instead got <dtype: 'string'>.")
  with pytest.raises(ValueError) as raised:
    estimator.train(_string_labels_input_fn, steps=2)
  message = str(raised.value)
  assert message.startswith(expected), message
  assert "label_vocabulary=[...] listing the" in message
  assert ("integer class ids 0 or 1" if n_classes == 2 else
          "integer class ids in [0, 3)") in message
  assert not model_dir.exists() or not list(model_dir.iterdir())


def test_features_that_are_not_a_dict_name_what_was_given_and_the_keys(tmp_path):
  model_dir = tmp_path / "model"
  estimator = est.DNNClassifier([2], _numeric_columns(), model_dir=str(model_dir))

  def tensor_features_input_fn():
    return tf.ones((4, 3)), tf.zeros((4, 1), tf.int64)

  with pytest.raises(ValueError) as raised:
    estimator.train(tensor_features_input_fn, steps=1)
  message = str(raised.value)
  # tf.estimator 2.15's text first, then what was given, the keys and the fix.
  assert message.startswith("features should be a dictionary of `Tensor`s. Given type: "), message
  assert "The input_fn gave a Tensor of shape (4, 3) and dtype float32 as features" in message
  assert "keyed by the names its feature columns read ('x')" in message
  assert "Fix: return ({'x': <Tensor>}, labels) from the input_fn" in message
  assert not model_dir.exists() or not list(model_dir.iterdir())


def _trained_linear_regressor(model_dir):
  estimator = est.LinearRegressor(_numeric_columns(), model_dir=str(model_dir))
  estimator.train(_input_fn(), steps=1)
  return estimator


def _tree(directory):
  return sorted(str(path.relative_to(directory)) for path in directory.rglob("*"))


def test_export_given_the_receiver_fns_result_says_pass_the_function(tmp_path):
  model_dir = tmp_path / "model"
  estimator = _trained_linear_regressor(model_dir)
  before = _tree(model_dir)
  spec = tf.feature_column.make_parse_example_spec(_numeric_columns())
  receiver_fn = est.export.build_parsing_serving_input_receiver_fn(spec)
  fix = "pass the function: export_saved_model(dir, fn) not fn()"

  # Called in the user's (eager) code: tf.estimator 2.15's error, then the fix.
  with pytest.raises(RuntimeError) as raised:
    estimator.export_saved_model(str(tmp_path / "export"), receiver_fn())
  message = str(raised.value)
  assert message.startswith("tf.placeholder() is not compatible with eager execution. "
                            "serving_input_receiver_fn must be a function that returns a "
                            "ServingInputReceiver"), message
  assert "you passed the result of calling it" in message and fix in message
  with pytest.raises(RuntimeError, match=re.escape(fix)):
    est.LatestExporter("latest", est.export.build_raw_serving_input_receiver_fn(
        {"x": np.ones((1, 3), np.float32)})())

  # Called inside a graph: the receiver itself reaches export and exporters.
  with tf.Graph().as_default():
    receiver = receiver_fn()
  with pytest.raises(TypeError, match=r"^'ServingInputReceiver' object is not callable.*"
                                      r"You passed the result of calling the receiver fn.*"
                                      + re.escape(fix)):
    estimator.export_saved_model(str(tmp_path / "export"), receiver)
  for make_exporter in (lambda: est.LatestExporter("latest", receiver),
                        lambda: est.BestExporter(serving_input_receiver_fn=receiver),
                        lambda: est.FinalExporter("final", receiver)):
    with pytest.raises(ValueError, match=re.escape(fix)):
      make_exporter()
  assert _tree(model_dir) == before
  assert not (tmp_path / "export").exists()
  # The function itself exports.
  assert os.path.isdir(estimator.export_saved_model(str(tmp_path / "export"), receiver_fn))


@contextlib.contextmanager
def _read_only(directory):
  """Makes `directory` refuse new entries, for root too.

  chmod a-w stops an ordinary user; root ignores permission bits, so as root
  the directory is also made immutable (chattr +i, ext4 and most Linux file
  systems), which refuses every write, as a read-only mount would, with
  PermissionDeniedError.
  """
  mode = directory.stat().st_mode
  directory.chmod(mode & ~0o222)
  immutable = False
  try:
    if os.access(directory, os.W_OK):  # root
      immutable = subprocess.run(["chattr", "+i", str(directory)], capture_output=True,
                                 check=False).returncode == 0
      if not immutable:
        pytest.skip("running as root on a file system without chattr +i: cannot make a "
                    "directory read-only for this test")
    yield
  finally:
    if immutable:
      subprocess.run(["chattr", "-i", str(directory)], check=True)
    directory.chmod(mode)


def test_evaluate_on_a_read_only_model_dir_returns_its_metrics(tmp_path, tf_logs):
  model_dir = tmp_path / "model"
  estimator = _trained_linear_regressor(model_dir)
  before = _tree(model_dir)
  with _read_only(model_dir):
    with pytest.raises(OSError):  # the directory really refuses writes
      (model_dir / "probe").mkdir()
    results = estimator.evaluate(_input_fn(), steps=1)
  assert results["global_step"] == 1 and np.isfinite(results["loss"])
  assert {"average_loss", "label/mean", "prediction/mean"} <= set(results)
  warning = [m for m in tf_logs.messages if m.startswith("Could not write the evaluation")]
  assert warning, tf_logs.text
  assert (f"Could not write the evaluation results for global step 1 to {model_dir / 'eval'} "
          "(PermissionDeniedError: ") in warning[0]
  assert "evaluate() returns them" in warning[0]
  assert _tree(model_dir) == before
