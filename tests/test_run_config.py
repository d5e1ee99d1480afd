"""RunConfig: tf.estimator's defaults, replace(), subclassing, and how Estimator uses model_dir."""
import os

import pytest

import estimator_lite as est


@pytest.fixture(autouse=True)
def _no_tf_config(monkeypatch):
  # These tests are about the local defaults; a TF_CONFIG in the caller's
  # environment would change the cluster properties.
  monkeypatch.delenv("TF_CONFIG", raising=False)


def test_defaults_are_tf_estimators():
  config = est.RunConfig()
  assert config.model_dir is None
  assert config.tf_random_seed is None
  assert config.save_summary_steps == 100
  assert config.save_checkpoints_steps is None
  assert config.save_checkpoints_secs == 600
  assert config.keep_checkpoint_max == 5
  assert config.keep_checkpoint_every_n_hours == 10000
  assert config.log_step_count_steps == 100
  assert config.session_creation_timeout_secs == 7200
  assert config.device_fn is None and config.train_distribute is None
  assert config.checkpoint_save_graph_def is True
  # Local training: this process is the only worker and the chief.
  assert (config.task_type, config.task_id, config.is_chief) == ("worker", 0, True)
  assert (config.num_ps_replicas, config.num_worker_replicas) == (0, 1)
  assert config.master == "" and config.cluster_spec.jobs == []


def test_checkpoint_cadence_steps_or_secs_never_both():
  assert est.RunConfig(save_checkpoints_steps=50).save_checkpoints_secs is None
  config = est.RunConfig(save_checkpoints_secs=30)
  assert (config.save_checkpoints_steps, config.save_checkpoints_secs) == (None, 30)
  off = est.RunConfig(save_checkpoints_steps=None, save_checkpoints_secs=None)
  assert (off.save_checkpoints_steps, off.save_checkpoints_secs) == (None, None)
  with pytest.raises(ValueError, match="`save_checkpoints_steps` and `save_checkpoints_secs` "
                                       "cannot be both set"):
    est.RunConfig(save_checkpoints_steps=10, save_checkpoints_secs=10)


@pytest.mark.parametrize("kwargs,pattern", [
    ({"save_summary_steps": -1}, r"save_summary_steps=-1"),
    ({"keep_checkpoint_max": -2}, r"keep_checkpoint_max=-2"),
    ({"log_step_count_steps": 0}, r"log_step_count_steps=0"),
    ({"tf_random_seed": "7"}, r"tf_random_seed='7'"),
    ({"session_config": {"allow_soft_placement": True}}, r"tf.compat.v1.ConfigProto"),
    ({"device_fn": "/cpu:0"}, r"device_fn must be callable"),
])
def test_bad_values_are_named(kwargs, pattern):
  with pytest.raises(ValueError, match=pattern):
    est.RunConfig(**kwargs)


def test_replace_allowed_and_unknown_keys():
  config = est.RunConfig(save_summary_steps=7, tf_random_seed=3)
  replaced = config.replace(model_dir="/tmp/somewhere", save_checkpoints_steps=10,
                            keep_checkpoint_max=2)
  assert replaced.model_dir == "/tmp/somewhere"
  assert (replaced.save_checkpoints_steps, replaced.save_checkpoints_secs) == (10, None)
  assert replaced.keep_checkpoint_max == 2
  assert (replaced.save_summary_steps, replaced.tf_random_seed) == (7, 3)
  assert config.model_dir is None and config.save_checkpoints_secs == 600  # unchanged
  back = replaced.replace(save_checkpoints_secs=60)
  assert (back.save_checkpoints_steps, back.save_checkpoints_secs) == (None, 60)
  with pytest.raises(ValueError, match=r"Replacing \['task_type'\] is not supported"):
    config.replace(task_type="ps")
  with pytest.raises(ValueError, match=r"Replacing \['bogus'\] is not supported"):
    config.replace(bogus=1)
  with pytest.raises(ValueError, match="cannot be both set"):
    config.replace(save_checkpoints_steps=10, save_checkpoints_secs=10)


class MyRunConfig(est.RunConfig):
  """A subclass as users wrote them: an extra attribute and property."""

  def __init__(self, team="ranking", **kwargs):
    super().__init__(**kwargs)
    self.team = team

  @property
  def summary_every(self):
    return self.save_summary_steps


def test_subclass_keeps_type_and_attributes_through_replace_and_estimator(tmp_path, linear_model_fn):
  config = MyRunConfig(team="ads", save_summary_steps=5)
  replaced = config.replace(save_summary_steps=9)
  assert isinstance(replaced, MyRunConfig)
  assert (replaced.team, replaced.summary_every) == ("ads", 9)
  estimator = est.Estimator(linear_model_fn, model_dir=str(tmp_path), config=config, params={})
  assert isinstance(estimator.config, MyRunConfig)
  assert estimator.config.team == "ads" and estimator.config.model_dir == str(tmp_path)


def test_estimator_model_dir_from_argument_or_config(tmp_path, linear_model_fn):
  from_arg = est.Estimator(linear_model_fn, model_dir=tmp_path / "a", params={})
  assert from_arg.model_dir == str(tmp_path / "a")
  assert from_arg.config.model_dir == str(tmp_path / "a")
  from_config = est.Estimator(linear_model_fn, params={},
                              config=est.RunConfig(model_dir=str(tmp_path / "b")))
  assert from_config.model_dir == str(tmp_path / "b")
  same = est.Estimator(linear_model_fn, model_dir=str(tmp_path / "b"), params={},
                       config=est.RunConfig(model_dir=str(tmp_path / "b")))
  assert same.model_dir == str(tmp_path / "b")
  with pytest.raises(ValueError, match=r"`model_dir` are set both in constructor and "
                                       r"`RunConfig`, but with different values.*/a.*/b"):
    est.Estimator(linear_model_fn, model_dir=str(tmp_path / "a"), params={},
                  config=est.RunConfig(model_dir=str(tmp_path / "b")))
  with pytest.raises(ValueError, match="config must be an instance of `RunConfig`"):
    est.Estimator(linear_model_fn, config={"model_dir": str(tmp_path)}, params={})
  assert not os.listdir(tmp_path)  # constructing an Estimator writes nothing
