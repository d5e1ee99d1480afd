"""RunConfig: tf.estimator's defaults, checks and texts, replace(), subclassing, Estimator's model_dir."""
import functools
import json
import os
import pathlib

import pytest
import tensorflow as tf
from tensorflow.core.protobuf import rewriter_config_pb2

import estimator_lite as est
from estimator_lite import run_config


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
  with pytest.raises(ValueError, match="^`save_checkpoints_steps` and `save_checkpoints_secs` "
                                       "cannot be both set."):
    est.RunConfig(save_checkpoints_steps=10, save_checkpoints_secs=10)


@pytest.mark.parametrize("kwargs,error,tf_text,ours", [
    ({"model_dir": ""}, ValueError, "model_dir should be non-empty.", "RunConfig(model_dir='')"),
    ({"save_summary_steps": -1}, ValueError, "save_summary_steps should be >= 0",
     "save_summary_steps=-1"),
    ({"save_summary_steps": "5"}, TypeError, "save_summary_steps should be >= 0",
     "save_summary_steps='5') is a str"),
    ({"save_checkpoints_steps": -1}, ValueError, "save_checkpoints_steps should be >= 0",
     "save_checkpoints_steps=-1"),
    ({"save_checkpoints_secs": -1}, ValueError, "save_checkpoints_secs should be >= 0",
     "save_checkpoints_secs=-1"),
    ({"session_config": {"allow_soft_placement": True}}, ValueError,
     "session_config must be instance of ConfigProto", "tf.compat.v1.ConfigProto"),
    ({"keep_checkpoint_max": -2}, ValueError, "keep_checkpoint_max should be >= 0",
     "keep_checkpoint_max=-2"),
    ({"keep_checkpoint_every_n_hours": 0}, ValueError,
     "keep_checkpoint_every_n_hours should be > 0", "keep_checkpoint_every_n_hours=0"),
    ({"log_step_count_steps": 0}, ValueError, "log_step_count_steps should be > 0",
     "log_step_count_steps=0"),
    ({"tf_random_seed": 1.0}, ValueError, "tf_random_seed must be integer.", "tf_random_seed=1.0"),
    ({"tf_random_seed": "7"}, ValueError, "tf_random_seed must be integer.", "tf_random_seed='7'"),
    ({"experimental_max_worker_delay_secs": "5"}, ValueError,
     "experimental_max_worker_delay_secs must be an integer if set.", "whole number of seconds"),
    ({"experimental_max_worker_delay_secs": 2.5}, ValueError,
     "experimental_max_worker_delay_secs must be an integer if set.", "=2.5"),
    ({"session_creation_timeout_secs": 0}, ValueError,
     "session_creation_timeout_secs should be > 0", "session_creation_timeout_secs=0"),
    ({"device_fn": "/cpu:0"}, ValueError,
     'device_fn must be callable with exactly one argument "op".', "def device_fn(op)"),
    # The argument must be named `op`, as tf.estimator required.
    ({"device_fn": lambda x: "/cpu:0"}, ValueError,
     'device_fn must be callable with exactly one argument "op".', "RunConfig(device_fn=<function"),
    ({"device_fn": lambda op, extra: ""}, ValueError,
     'device_fn must be callable with exactly one argument "op".', "def device_fn(op)"),
    ({"protocol": "http"}, ValueError, "protocol should be grpc or grpc+verbs", "None means grpc"),
    ({"save_checkpoints_steps": 0, "save_checkpoints_secs": 0}, ValueError,
     "`save_checkpoints_steps` and `save_checkpoints_secs` cannot be both set.", "pass only one"),
])
def test_bad_values_raise_tf_estimators_error_then_the_fix(kwargs, error, tf_text, ours):
  with pytest.raises(error) as raised:
    est.RunConfig(**kwargs)
  message = str(raised.value)
  assert message.startswith(tf_text)  # unchanged: users' assertRaisesRegex match on it
  assert ours in message


def test_values_tf_estimator_accepted():
  assert est.RunConfig(save_checkpoints_steps=0).save_checkpoints_steps == 0
  assert est.RunConfig(session_creation_timeout_secs=None).session_creation_timeout_secs is None
  assert est.RunConfig(experimental_max_worker_delay_secs=0).experimental_max_worker_delay_secs == 0
  assert est.RunConfig(protocol="grpc+verbs").protocol == "grpc+verbs"
  assert est.RunConfig(model_dir=pathlib.Path("/tmp/m")).model_dir == "/tmp/m"

  class Placer:
    def __call__(self, op):
      return ""

  def place(op):
    return ""

  def place_on(device, op):
    return device

  for device_fn in (place, Placer(), functools.partial(place_on, "/cpu:0"),
                    tf.compat.v1.train.replica_device_setter(ps_tasks=1)):
    assert est.RunConfig(device_fn=device_fn).device_fn is device_fn


def test_session_config_is_none_unless_given_and_sessions_use_the_default():
  config = est.RunConfig()
  assert config.session_config is None and config.service is None
  # What estimator_lite's sessions run with then: tf.estimator's default.
  default = run_config.effective_session_config(config)
  assert default == run_config.get_default_session_config()
  assert default.allow_soft_placement
  assert (default.graph_options.rewrite_options.meta_optimizer_iterations ==
          rewriter_config_pb2.RewriterConfig.ONE)
  mine = tf.compat.v1.ConfigProto(log_device_placement=True)
  assert est.RunConfig(session_config=mine).session_config is mine
  assert run_config.effective_session_config(est.RunConfig(session_config=mine)) is mine


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
  assert config.replace(steps_per_loop=4).steps_per_loop == 4  # estimator_lite's own
  assert config.pack_ps_transfers is True  # estimator_lite's own, on by default
  unpacked = config.replace(pack_ps_transfers=False)
  assert unpacked.pack_ps_transfers is False and config.pack_ps_transfers is True
  with pytest.raises(TypeError, match=r"^RunConfig\(pack_ps_transfers='no'\): "
                                      r"pack_ps_transfers must be True or False"):
    est.RunConfig(pack_ps_transfers="no")
  with pytest.raises(TypeError, match=r"pack_ps_transfers must be True or False"):
    config.replace(pack_ps_transfers=1)
  with pytest.raises(ValueError, match=r"^Replacing task_type is not supported. Allowed "
                                       r"properties are \['model_dir', .*"
                                       r"'checkpoint_save_graph_def'\]\. task_type comes "
                                       r"from the TF_CONFIG environment variable"):
    config.replace(task_type="ps")
  with pytest.raises(ValueError, match=r"^Replacing bogus is not supported.*bogus is not a "
                                       r"RunConfig argument"):
    config.replace(bogus=1)
  with pytest.raises(ValueError, match="^`save_checkpoints_steps` and `save_checkpoints_secs` "
                                       "cannot be both set."):
    config.replace(save_checkpoints_steps=10, save_checkpoints_secs=10)
  # Replaced values are checked like the constructor's, with the same texts.
  with pytest.raises(ValueError, match="^model_dir should be non-empty"):
    config.replace(model_dir="")
  with pytest.raises(ValueError, match="^keep_checkpoint_every_n_hours should be > 0"):
    config.replace(keep_checkpoint_every_n_hours=0)
  with pytest.raises(ValueError, match='^device_fn must be callable with exactly one argument'):
    config.replace(device_fn=lambda x, y: 0)


def test_replace_keeps_the_tf_config_role_it_was_built_with(monkeypatch):
  # As tf.estimator: replace() (which Estimator uses to set model_dir) does
  # not read TF_CONFIG again, so a RunConfig built for a task stays that task's.
  monkeypatch.setenv("TF_CONFIG", json.dumps({
      "cluster": {"chief": ["h0:1"], "worker": ["h1:1"], "ps": ["h2:1"]},
      "task": {"type": "worker", "index": 0}, "service": {"name": "s"}}))
  config = est.RunConfig()
  monkeypatch.delenv("TF_CONFIG")
  replaced = config.replace(model_dir="/tmp/elsewhere", session_config=None)
  assert (replaced.task_type, replaced.task_id, replaced.is_chief) == ("worker", 0, False)
  assert replaced.master == "grpc://h1:1" and replaced.service == {"name": "s"}
  assert replaced.session_config is None  # as asked; sessions use the default
  assert list(config.session_config.device_filters) == ["/job:ps", "/job:worker/task:0"]


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


@pytest.mark.parametrize("argument", ["train_distribute", "eval_distribute"])
def test_tf2_parameter_server_strategy_is_refused_with_tf_estimators_text(argument):
  # Built without its cluster resolver (it needs a running cluster); only its type matters.
  strategy_class = tf.distribute.experimental.ParameterServerStrategy
  with pytest.raises(ValueError) as raised:
    est.RunConfig(**{argument: strategy_class.__new__(strategy_class)})
  message = str(raised.value)
  assert message.startswith("Please use `tf.compat.v1.distribute.experimental."
                            "ParameterServerStrategy` for parameter server strategy with "
                            "estimator.")
  assert "leave train_distribute=None and list 'ps' tasks in TF_CONFIG" in message
