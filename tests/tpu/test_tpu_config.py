"""tpu.RunConfig and TPUConfig: tf.estimator 2.15's values, checks and texts."""
import json
import os

import pytest
import tensorflow as tf

import estimator_lite as est

tpu = est.tpu


@pytest.fixture
def tf_config(monkeypatch):
  def set_tf_config(value):
    monkeypatch.setenv("TF_CONFIG", json.dumps(value))
  monkeypatch.delenv("TF_CONFIG", raising=False)
  return set_tf_config


def test_tpu_config_defaults_and_2_15s_mapping_of_per_host_input(tf_config):
  config = tpu.TPUConfig()
  assert config.iterations_per_loop == 2
  assert config.per_host_input_for_training == tpu.InputPipelineConfig.PER_HOST_V1
  assert tpu.TPUConfig(per_host_input_for_training=False).per_host_input_for_training == \
      tpu.InputPipelineConfig.PER_SHARD_V1
  assert tpu.TPUConfig(per_host_input_for_training=tpu.InputPipelineConfig.PER_HOST_V2
                       ).per_host_input_for_training == 3
  # A namedtuple, as 2.15's.
  assert isinstance(config, tuple) and config._replace(num_shards=8).num_shards == 8
  assert config._fields[0] == "iterations_per_loop"


@pytest.mark.parametrize("kwargs, error, text", [
    ({"iterations_per_loop": 0}, ValueError, "Invalid TPUConfig `iterations_per_loop` value"),
    ({"iterations_per_loop": "10x"}, ValueError, "Invalid TPUConfig `iterations_per_loop`"),
    ({"num_shards": 0}, ValueError, "TPUConfig num_shards must be positive, got 0"),
    ({"num_shards": 2.0}, TypeError, "TPUConfig num_shards must be int"),
    ({"num_cores_per_replica": 3}, ValueError, "num_cores_per_replica must be 1, 2, 4, 8"),
    ({"input_partition_dims": [[1, 2]]}, ValueError,
     "input_partition_dims is only supported in PER_HOST_V2 mode"),
    ({"eval_training_input_configuration": 3}, ValueError,
     "eval_training_input_configuration must be PER_HOST_V1 or SLICED"),
    ({"initial_infeed_sleep_secs": -1}, ValueError,
     "TPUConfig initial_infeed_sleep_secs must be positive"),
])
def test_tpu_config_refuses_what_2_15_refused(kwargs, error, text):
  with pytest.raises(error, match=text):
    tpu.TPUConfig(**kwargs)


def test_iterations_per_loop_as_a_count_or_a_time():
  parse = tpu.tpu_config.parse_iterations_per_loop
  assert parse(100) == (100, "count")
  assert parse("30s") == (30, "seconds")
  assert parse("5m") == (300, "seconds")
  assert parse("2h") == (7200, "seconds")


def test_masters_as_2_15_chose_them(tf_config):
  assert (tpu.RunConfig().master, tpu.RunConfig().evaluation_master) == ("", "")
  config = tpu.RunConfig(master="grpc://a:1")
  assert (config.master, config.evaluation_master) == ("grpc://a:1", "grpc://a:1")
  config = tpu.RunConfig(master="grpc://a:1", evaluation_master="grpc://b:2")
  assert (config.master, config.evaluation_master) == ("grpc://a:1", "grpc://b:2")
  tf_config({"session_master": "grpc://c:3"})
  config = tpu.RunConfig()
  assert (config.master, config.evaluation_master) == ("grpc://c:3", "grpc://c:3")
  # An evaluator keeps TF_CONFIG's evaluation master (none: local).
  tf_config({"cluster": {"chief": ["host0:0"]}, "task": {"type": "evaluator", "index": 0}})
  assert tpu.RunConfig(master="grpc://d:4").evaluation_master == ""


def test_no_device_filters_in_a_cluster_unless_given(tf_config):
  # 2.15's tpu.RunConfig set none (est.RunConfig sets a task's device filters).
  tf_config({"cluster": {"chief": ["host3:3"], "worker": ["host3:4"]},
             "task": {"type": "chief", "index": 0}})
  assert tpu.RunConfig().session_config is None
  assert est.RunConfig().session_config.device_filters
  given = tf.compat.v1.ConfigProto(allow_soft_placement=True)
  assert tpu.RunConfig(session_config=given).session_config == given


def test_tpu_job_name_from_tf_configs_service(tf_config):
  assert tpu.TPUConfig().tpu_job_name is None
  tf_config({"service": {"tpu_worker_job_name": "my_tpu_job"}})
  assert tpu.TPUConfig().tpu_job_name == "my_tpu_job"
  assert tpu.TPUConfig(tpu_job_name="mine").tpu_job_name == "mine"


def test_replace_keeps_the_tpu_fields_and_replaces_tpu_config(tf_config, tmp_path):
  config = tpu.RunConfig(master="grpc://a:1", tpu_config=tpu.TPUConfig(iterations_per_loop=7),
                         save_checkpoints_steps=10)
  replaced = config.replace(model_dir=str(tmp_path), log_step_count_steps=None)
  assert isinstance(replaced, tpu.RunConfig)
  assert replaced.master == "grpc://a:1" and replaced.tpu_config.iterations_per_loop == 7
  assert (replaced.model_dir, replaced.log_step_count_steps) == (str(tmp_path), None)
  again = config.replace(tpu_config=tpu.TPUConfig(iterations_per_loop=3), save_summary_steps=5)
  assert again.tpu_config.iterations_per_loop == 3 and again.save_summary_steps == 5
  assert config.tpu_config.iterations_per_loop == 7


def test_a_cluster_resolver_gives_the_master_and_the_cluster_def(tf_config):
  spec = tf.train.ClusterSpec({"worker": ["host1:8470"]})
  resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(spec, master="grpc://host1:8470")
  config = tpu.RunConfig(cluster=resolver)
  assert config.cluster is resolver and config.master == "grpc://host1:8470"
  assert config.session_config.cluster_def == spec.as_cluster_def()
  with pytest.raises(ValueError, match="Both master and cluster are set"):
    tpu.RunConfig(cluster=resolver, master="grpc://other:1")
  with_def = tf.compat.v1.ConfigProto(cluster_def=spec.as_cluster_def())
  with pytest.raises(ValueError, match="You cannot provide a ClusterResolver and "
                                       "session_config.cluster_def"):
    tpu.RunConfig(cluster=resolver, session_config=with_def)


def test_an_estimator_lite_run_config_argument_passes_through(tf_config):
  config = tpu.RunConfig(steps_per_loop=4, save_checkpoints_steps=3)
  assert (config.steps_per_loop, config.save_checkpoints_steps) == (4, 3)
  assert os.environ.get("TF_CONFIG") is None
