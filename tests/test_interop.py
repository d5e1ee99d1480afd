"""Model_dirs move between tf.estimator 2.15 and estimator_lite.

tests/data/tf215_model_dir/ was written by tf.estimator 2.15 (20 steps of the
linear program of tests/reference/linear_program.py, a checkpoint every 10
steps); tests/data/tf215_model_dir_expected.json records what tf.estimator 2.15
itself did when it resumed a copy of that directory to step 30. Both come from
tests/reference/make_tf215_fixture.py (its docstring has the command).
"""
import json
import os
import shutil
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "reference"))

import estimator_lite as est  # pylint: disable=g-import-not-at-top,wrong-import-position
import linear_program as lp  # pylint: disable=g-import-not-at-top,wrong-import-position
import tensorflow as tf  # pylint: disable=g-import-not-at-top,wrong-import-position

FIXTURE_DIR = os.path.join(HERE, "data", "tf215_model_dir")
EXPECTED_PATH = os.path.join(HERE, "data", "tf215_model_dir_expected.json")
VARIABLES = ("w", "b", "global_step")


@pytest.fixture(scope="module")
def expected():
  with open(EXPECTED_PATH) as f:
    return json.load(f)


def _checkpoint_values(model_dir):
  reader = tf.train.load_checkpoint(model_dir)
  return {name: reader.get_tensor(name)
          for name in reader.get_variable_to_shape_map()}


def _config():
  # The config the fixture was written with (checkpoint list comparable).
  return est.RunConfig(save_checkpoints_steps=10)


def _assert_relative_checkpoint_state(model_dir, expected_paths):
  state = lp.checkpoint_state(model_dir)
  assert state["model_checkpoint_path"] == expected_paths[-1]
  assert state["all_model_checkpoint_paths"] == expected_paths
  for path in [state["model_checkpoint_path"]] + state["all_model_checkpoint_paths"]:
    assert not os.path.isabs(path), f"checkpoint file holds absolute path {path!r}"


def test_fixture_is_a_tf215_model_dir_at_step_20(expected):
  assert expected["tensorflow_version"].startswith("2.15.")
  _assert_relative_checkpoint_state(
      FIXTURE_DIR, ["model.ckpt-0", "model.ckpt-10", "model.ckpt-20"])
  values = _checkpoint_values(FIXTURE_DIR)
  assert sorted(values) == ["b", "global_step", "w"]
  assert int(values["global_step"]) == 20
  for name in ("w", "b"):
    np.testing.assert_array_equal(values[name],
                                  expected["first_run"]["variables"][name])


def test_tf215_model_dir_resumes_under_estimator_lite(tmp_path, expected):
  model_dir = str(tmp_path / "model_dir")
  shutil.copytree(FIXTURE_DIR, model_dir)
  at_20 = _checkpoint_values(FIXTURE_DIR)

  snapshot = lp.make_variable_snapshot_hook(est, VARIABLES)
  recorder = lp.make_loss_recorder(est)
  # Default RunConfig, as make_tf215_fixture.py resumed it under tf.estimator.
  estimator = est.Estimator(lp.make_linear_model_fn(est), model_dir=model_dir)
  estimator.train(lp.linear_train_input_fn, max_steps=30,
                  hooks=[snapshot, recorder])

  # Restored, not re-initialised: the values right after the session was
  # created are the fixture's step-20 values, bit for bit.
  assert snapshot.values is not None, "after_create_session was not called"
  for name in VARIABLES:
    np.testing.assert_array_equal(snapshot.values[name], at_20[name],
                                  err_msg=f"restored {name} != fixture's")
  assert recorder.start_step == 20
  assert len(recorder.losses) == 10  # steps 21..30

  # 20 -> 30, and the same trajectory tf.estimator 2.15 took from there.
  assert estimator.get_variable_value("global_step") == 30
  at_30 = _checkpoint_values(model_dir)
  assert int(at_30["global_step"]) == 30
  np.testing.assert_allclose(recorder.losses, expected["resume"]["losses"],
                             rtol=1e-5, atol=1e-6)
  for name in ("w", "b"):
    np.testing.assert_allclose(at_30[name], expected["resume"]["variables"][name],
                               rtol=1e-5, atol=1e-6)
  assert tf.train.latest_checkpoint(model_dir) == os.path.join(
      model_dir, "model.ckpt-30")
  _assert_relative_checkpoint_state(
      model_dir, expected["resume"]["checkpoint"]["all_model_checkpoint_paths"])


def test_estimator_lite_model_dir_is_readable_as_a_tf_checkpoint(tmp_path, expected):
  model_dir = str(tmp_path / "model_dir")
  recorder = lp.make_loss_recorder(est)
  estimator = est.Estimator(lp.make_linear_model_fn(est), model_dir=model_dir,
                            config=_config())
  estimator.train(lp.linear_train_input_fn, max_steps=10, hooks=[recorder])

  # Same trajectory as tf.estimator 2.15's first 10 steps.
  np.testing.assert_allclose(recorder.losses,
                             expected["first_run"]["losses"][:10],
                             rtol=1e-5, atol=1e-6)

  # The names, shapes and dtypes a tf.estimator checkpoint has.
  reader = tf.train.load_checkpoint(model_dir)
  assert reader.get_variable_to_shape_map() == {
      "w": [3, 1], "b": [1], "global_step": []}
  assert reader.get_variable_to_dtype_map() == {
      "w": tf.float32, "b": tf.float32, "global_step": tf.int64}
  assert int(reader.get_tensor("global_step")) == 10
  for name in VARIABLES:
    np.testing.assert_array_equal(reader.get_tensor(name),
                                  estimator.get_variable_value(name))
  _assert_relative_checkpoint_state(model_dir, ["model.ckpt-0", "model.ckpt-10"])
  for suffix in (".index", ".meta", ".data-00000-of-00001"):
    assert os.path.exists(os.path.join(model_dir, "model.ckpt-10" + suffix))
  assert os.path.exists(os.path.join(model_dir, "graph.pbtxt"))

  # The .meta is a loadable MetaGraph whose Saver restores the variables, as
  # tools written for tf.estimator model_dirs do.
  with tf.Graph().as_default():
    saver = tf.compat.v1.train.import_meta_graph(
        os.path.join(model_dir, "model.ckpt-10.meta"))
    by_name = {v.op.name: v for v in tf.compat.v1.global_variables()}
    assert {"w", "b", "global_step"} <= set(by_name)
    with tf.compat.v1.Session() as sess:
      saver.restore(sess, os.path.join(model_dir, "model.ckpt-10"))
      np.testing.assert_array_equal(sess.run(by_name["w"]),
                                    reader.get_tensor("w"))
