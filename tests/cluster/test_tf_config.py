"""RunConfig reads TF_CONFIG as tf.estimator 2.15 did, and rejects malformed ones clearly.

Expected values of the accepted forms were checked against tf.estimator 2.15's
RunConfig (reference venv) for the same TF_CONFIG strings.
"""
import json
import time

import pytest
import tensorflow as tf

import estimator_lite as est
from estimator_lite._cluster import shared_machine
from estimator_lite._cluster import tf_config as _tf_config

CLUSTER = {"chief": ["h0:2222"], "worker": ["h1:2222", "h2:2222"], "ps": ["h3:2222"]}


def run_config(monkeypatch, tf_config):
  monkeypatch.setenv("TF_CONFIG", tf_config if isinstance(tf_config, str) else json.dumps(tf_config))
  return est.RunConfig()


_MASTER_CLUSTER = {"master": ["h0:1"], "ps": ["h3:1"]}
_NOTE = "\n\nNote that these values may be coming from the TF_CONFIG environment variable."


@pytest.mark.parametrize("tf_config, error, tf_text, quoted_problem", [
    # The value is not JSON, or not a JSON object.
    ('{"cluster": {"chief": ["h0:1"]', ValueError, "Expecting ',' delimiter", "not valid JSON"),
    ('["chief", 0]', TypeError, None, "must be a JSON object, got list"),
    # "cluster" and "task" of the wrong types: TensorFlow's ClusterSpec texts.
    ({"cluster": ["h0:1"], "task": {"type": "chief", "index": 0}}, TypeError,
     "`cluster` must be a dictionary mapping one or more job names to lists of network addresses",
     '"cluster" must map each job name to its list of "host:port" addresses'),
    ({"cluster": None}, TypeError, "`cluster` must be a dictionary", "got None"),
    ({"cluster": {"chief": [7]}, "task": {"type": "chief", "index": 0}}, TypeError,
     "Task address 7 must be bytes or unicode", '"cluster" must map each job name'),
    ({"cluster": CLUSTER, "task": ["worker", 0]}, TypeError, None,
     '"task" must be an object like {"type": "worker", "index": 0}'),
    # Addresses TensorFlow's ClusterSpec lets through, though no task could use them.
    ({"cluster": {"chief": ["h0:99999"], "ps": ["h3:1"]}, "task": {"type": "chief", "index": 0}},
     ValueError, None, "job 'chief' in \"cluster\" has the address 'h0:99999', which is not "
     '"host:port" with a port number up to 65535'),
    ({"cluster": {"chief": ["h0:1"], "ps": ["h3"]}, "task": {"type": "chief", "index": 0}},
     ValueError, None, "job 'ps' in \"cluster\" has the address 'h3'"),
    ({"cluster": {"chief": ["h0:1"], "ps": [":2222"]}, "task": {"type": "chief", "index": 0}},
     ValueError, None, "the address ':2222'"),
    ({"cluster": {"chief": ["h0:1"], "worker": {"1": "h1:http"}},
      "task": {"type": "chief", "index": 0}}, ValueError, None, "the address 'h1:http'"),
    ({"cluster": {"chief": ["h0:1"], "evaluator": ["h4:-1"]},
      "task": {"type": "evaluator", "index": 0}}, ValueError, None, "the address 'h4:-1'"),
    # The chief.
    ({"cluster": {"worker": ["h1:1"], "ps": ["h3:1"]}, "task": {"type": "worker", "index": 0}},
     ValueError, 'If "cluster" is set in TF_CONFIG, it must have one "chief" node.',
     "jobs given: ['ps', 'worker']"),
    ({"cluster": {"evaluator": ["h4:1"]}, "task": {"type": "evaluator", "index": 0}},
     ValueError, 'If "cluster" is set in TF_CONFIG, it must have one "chief" node.',
     "jobs given: ['evaluator']"),
    ({"cluster": {"chief": ["h0:1", "h9:1"], "ps": ["h3:1"]}},
     ValueError, 'The "cluster" in TF_CONFIG must have only one "chief" node.',
     "lists ['h0:1', 'h9:1'] as \"chief\""),
    ({"cluster": {"master": ["h0:1", "h9:1"]}, "task": {"type": "master", "index": 0}},
     ValueError, 'The "cluster" in TF_CONFIG must have only one "master" node.',
     "lists ['h0:1', 'h9:1'] as \"master\""),
    ({"cluster": {"master": ["h0:1"], "chief": ["h1:1"]}},
     ValueError, "If `master` node exists in `cluster`, job `chief` is not supported.",
     'both "master" and "chief"'),
    # The task.
    ({"cluster": CLUSTER}, ValueError, 'If "cluster" is set in TF_CONFIG, task type must be set.',
     '"cluster" is set but "task" has no "type"'),
    ({"cluster": CLUSTER, "task": {"type": "", "index": 0}}, ValueError,
     'If "cluster" is set in TF_CONFIG, task type must be set.', 'has no "type"'),
    # Unknown keys are ignored, so a misspelt "task" leaves the task missing:
    # the message names the misspelling.
    ({"cluster": {"chief": ["h0:1"], "ps": ["h3:1"]}, "tasks": {"type": "chief", "index": 0}},
     ValueError, 'If "cluster" is set in TF_CONFIG, task type must be set.',
     'there is no "task" key, but there is [\'tasks\']: a misspelling?'),
    ({"cluster": CLUSTER, "task": {"type": "worker"}}, ValueError,
     'If "cluster" is set in TF_CONFIG, task index must be set.', "has no \"index\""),
    ({"cluster": CLUSTER, "task": {"type": "worker", "index": -1}}, ValueError,
     "Task index must be non-negative number.", "the task index is -1"),
    ({"cluster": CLUSTER, "task": {"type": "evaluator", "index": -1}}, ValueError,
     "Task index must be non-negative number.", "the task index is -1"),
    ({"cluster": CLUSTER, "task": {"type": "worker", "index": "one"}}, ValueError,
     "invalid literal for int() with base 10: 'one'", "the task index must be an integer"),
    ({"cluster": CLUSTER, "task": {"type": "worker", "index": [1]}}, TypeError,
     "int() argument must be", "the task index must be an integer, got [1]"),
    ({"cluster": CLUSTER, "task": {"type": "worker", "index": 1.5}}, ValueError, None,
     "the task index must be an integer, got 1.5"),
    ({"cluster": CLUSTER, "task": {"type": "trainer", "index": 0}}, ValueError,
     "trainer is not a valid task_type in the cluster_spec:\nClusterSpec(" + repr(
         {"chief": ["h0:2222"], "ps": ["h3:2222"], "worker": ["h1:2222", "h2:2222"]}) + ")" + _NOTE,
     "task type 'trainer' is not a job in \"cluster\""),
    ({"cluster": {"chief": ["h0:1"], "worker": ["h1:1"]}, "task": {"type": "ps", "index": 0}},
     ValueError, "ps is not a valid task_type in the cluster_spec:", "task type 'ps' is not a job"),
    ({"cluster": CLUSTER, "task": {"type": "worker", "index": 2}}, ValueError,
     "2 is not a valid task_id for task_type worker in the cluster_spec:\nClusterSpec(",
     "task index 2 is out of range for job 'worker' with 2 task(s)"),
    ({"cluster": _MASTER_CLUSTER, "task": {"type": "evaluator", "index": 0}}, ValueError,
     "If `master` node exists in `cluster`, task_type `evaluator` is not supported.",
     'rename "master" to "chief"'),
    # Without a cluster, a process is worker 0.
    ({"task": {"type": "ps", "index": 0}}, ValueError,
     'If "cluster" is not set in TF_CONFIG, task type must be WORKER.',
     "task type 'ps' needs a \"cluster\""),
    ({"task": {"type": "evaluator", "index": 0}}, ValueError,
     'If "cluster" is not set in TF_CONFIG, task type must be WORKER.',
     "task type 'evaluator' needs a \"cluster\""),
    ({"task": {"type": "worker", "index": 1}}, ValueError,
     'If "cluster" is not set in TF_CONFIG, task index must be 0.',
     'task index 1 needs a "cluster"'),
    # The other keys.
    ({"service": 789}, TypeError,
     "If \"service\" is set in TF_CONFIG, it must be a dict. Given <class 'int'>",
     '"service" must be a JSON object, got 789'),
    ({"model_dir": ""}, ValueError, "model_dir in TF_CONFIG should be non-empty.",
     '"model_dir" is ""'),
    ({"model_dir": 5}, TypeError, None, '"model_dir" must be a directory path'),
    ({"cluster": CLUSTER, "task": {"type": "worker", "index": 0}, "session_master": 5},
     TypeError, None, '"session_master" must be a string, got 5'),
])
def test_malformed_tf_config_raises_tf_estimators_error_then_quotes_the_problem(
    monkeypatch, tf_config, error, tf_text, quoted_problem):
  with pytest.raises(error) as raised:
    run_config(monkeypatch, tf_config)
  message = str(raised.value)
  # Every one is a ValueError (TFConfigError); a wrong type is a TypeError too.
  assert isinstance(raised.value, _tf_config.TFConfigError)
  if tf_text is not None:
    assert message.startswith(tf_text)  # unchanged: users' assertRaisesRegex match on it
  assert quoted_problem in message
  assert "TF_CONFIG is malformed" in message
  # The whole value is quoted too, so the user sees which process got what.
  raw = tf_config if isinstance(tf_config, str) else json.dumps(tf_config)
  assert raw in message


def test_model_dir_and_service_from_tf_config(monkeypatch):
  config = run_config(monkeypatch, {"model_dir": "/shared/m", "service": {"k": [1, 2]}})
  assert (config.model_dir, config.service) == ("/shared/m", {"k": [1, 2]})
  monkeypatch.setenv("TF_CONFIG", json.dumps({"model_dir": "/shared/m"}))
  assert est.RunConfig(model_dir="/shared/m").model_dir == "/shared/m"
  with pytest.raises(ValueError) as raised:
    est.RunConfig(model_dir="/elsewhere")
  assert str(raised.value).startswith(
      "`model_dir` provided in RunConfig construct, if set, must have the same value as the "
      "model_dir in TF_CONFIG. model_dir: /elsewhere\nTF_CONFIG[\"model_dir\"]: /shared/m.\n")
  assert "leave model_dir out of RunConfig" in str(raised.value)


def test_jobs_of_any_name_are_part_of_the_cluster(monkeypatch):
  # tf.estimator accepted any job name and counted it (after the chief, by
  # name, before the ps tasks); train_and_evaluate has no role for it.
  cluster = {"chief": ["h0:1"], "worker": ["h1:1", "h2:1"], "other_type": ["h5:1", "h6:1"],
             "ps": ["h3:1"]}
  other = run_config(monkeypatch, {"cluster": cluster, "task": {"type": "other_type", "index": 1}})
  assert other.cluster_spec.as_dict() == cluster
  assert (other.task_type, other.task_id, other.is_chief) == ("other_type", 1, False)
  assert other.global_id_in_cluster == 2 and other.master == "grpc://h6:1"
  assert (other.num_worker_replicas, other.num_ps_replicas) == (3, 1)
  assert other.session_config is None
  worker = run_config(monkeypatch, {"cluster": cluster, "task": {"type": "worker", "index": 0}})
  assert worker.global_id_in_cluster == 3
  ps = run_config(monkeypatch, {"cluster": cluster, "task": {"type": "ps", "index": 0}})
  assert ps.global_id_in_cluster == 5


def test_jobs_given_as_index_maps_or_empty(monkeypatch):
  # tf.estimator took a job's tasks as {index: address} too (TensorFlow's
  # ClusterSpec form), and a job with no tasks; the latter is left out.
  cluster = {"chief": ["h0:1"], "worker": {"1": "h2:1"}, "ps": []}
  worker = run_config(monkeypatch, {"cluster": cluster, "task": {"type": "worker", "index": 1}})
  assert worker.master == "grpc://h2:1"
  assert (worker.num_worker_replicas, worker.num_ps_replicas) == (2, 0)
  assert worker.cluster_spec.jobs == ["chief", "worker"]
  # The evaluator is outside the training cluster, whatever its index
  # (train_and_evaluate refuses more than one).
  kubeflow = dict(CLUSTER, evaluator=["h4:1", "h5:1"])
  evaluator = run_config(monkeypatch, {"cluster": kubeflow,
                                       "task": {"type": "evaluator", "index": 1}})
  assert (evaluator.task_type, evaluator.task_id) == ("evaluator", 1)
  assert evaluator.cluster_spec.jobs == []


@pytest.mark.parametrize("task_type, index, filters", [
    ("chief", 0, ["/job:ps", "/job:chief"]),
    ("worker", 1, ["/job:ps", "/job:worker/task:1"]),
    ("ps", 0, ["/job:ps", "/job:worker", "/job:chief", "/job:master"]),
])
def test_cluster_session_config_filters_devices_by_role(monkeypatch, task_type, index, filters):
  # tf.estimator's: trainers see the ps tasks and themselves only; a ps task
  # serves every trainer. Otherwise tf.estimator's default session config.
  config = run_config(monkeypatch, {"cluster": CLUSTER, "task": {"type": task_type, "index": index}})
  expected = est.run_config.get_default_session_config()
  expected.device_filters.extend(filters)
  assert config.session_config == expected


@pytest.mark.parametrize("task_type", ["chief", "worker", "ps"])
def test_tasks_sharing_a_machine_run_without_thread_spinning(monkeypatch, task_type):
  # Under the launcher (every task on one machine) the role's config also turns
  # TensorFlow's thread spinning off; a session_config of the user's is kept as it is.
  monkeypatch.setenv(shared_machine.ENV, "1")
  tf_config = {"cluster": CLUSTER, "task": {"type": task_type, "index": 0}}
  config = run_config(monkeypatch, tf_config)
  assert config.session_config.experimental.disable_thread_spinning
  expected = est.run_config.get_default_session_config()
  expected.device_filters.extend(config.session_config.device_filters)
  expected.experimental.disable_thread_spinning = True
  assert config.session_config == expected
  own = tf.compat.v1.ConfigProto(log_device_placement=True)
  assert est.RunConfig(session_config=own).session_config == own
  monkeypatch.delenv(shared_machine.ENV)
  assert not run_config(monkeypatch, tf_config).session_config.experimental.disable_thread_spinning


@pytest.mark.parametrize("cluster, task_type, shares", [
    ({"chief": ["h0:1"], "worker": ["h0:2"], "ps": ["h3:1"]}, "worker", True),
    ({"chief": ["h0:1"], "worker": ["h0:2"], "ps": ["h3:1"]}, "ps", False),
    # The loopback's names are one host; no name is resolved.
    ({"chief": ["localhost:1"], "ps": ["127.0.0.1:2"]}, "ps", True),
    ({"chief": ["[::1]:1"], "ps": ["localhost:2"]}, "chief", True),
    (CLUSTER, "chief", False),
])
def test_tasks_that_tf_config_puts_on_one_host_run_without_thread_spinning(
    monkeypatch, cluster, task_type, shares):
  # Several tasks on one host share its cores, as under the launcher.
  monkeypatch.delenv(shared_machine.ENV, raising=False)
  config = run_config(monkeypatch, {"cluster": cluster, "task": {"type": task_type, "index": 0}})
  assert config.session_config.experimental.disable_thread_spinning == shares
  expected = est.run_config.get_default_session_config()
  expected.device_filters.extend(config.session_config.device_filters)
  if shares:
    expected.experimental.disable_thread_spinning = True
  assert config.session_config == expected  # else tf.estimator's, exactly


def test_cluster_session_config_none_for_evaluator_given_one_or_strategy(monkeypatch):
  evaluator = run_config(monkeypatch, {"cluster": CLUSTER,
                                       "task": {"type": "evaluator", "index": 0}})
  assert evaluator.session_config is None
  mine = tf.compat.v1.ConfigProto(log_device_placement=True)
  monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": CLUSTER,
                                              "task": {"type": "worker", "index": 0}}))
  assert est.RunConfig(session_config=mine).session_config is mine  # kept as given
  # A strategy across chief and workers sets its own device filters.
  monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"chief": ["h0:1"]},
                                              "task": {"type": "chief", "index": 0}}))
  strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
  assert est.RunConfig(train_distribute=strategy).session_config is None
  assert est.RunConfig(eval_distribute=strategy).session_config is not None


def test_no_tf_config_is_local_training(monkeypatch):
  monkeypatch.delenv("TF_CONFIG", raising=False)
  config = est.RunConfig()
  assert (config.task_type, config.task_id, config.master, config.is_chief) == ("worker", 0, "", True)
  assert config.cluster_spec.as_dict() == {}
  assert (config.num_ps_replicas, config.num_worker_replicas, config.global_id_in_cluster) == (0, 1, 0)


def test_worker_of_a_chief_cluster(monkeypatch):
  config = run_config(monkeypatch, {"cluster": CLUSTER, "task": {"type": "worker", "index": 1}})
  assert config.cluster_spec.as_dict() == CLUSTER
  assert (config.task_type, config.task_id) == ("worker", 1)
  assert config.master == "grpc://h2:2222"
  assert config.evaluation_master == ""
  assert (config.num_ps_replicas, config.num_worker_replicas) == (1, 3)
  assert config.is_chief is False
  assert config.global_id_in_cluster == 2  # chief 0, workers 1 and 2, ps last
  # The worker talks to the ps tasks and itself only.
  assert list(config.session_config.device_filters) == ["/job:ps", "/job:worker/task:1"]


def test_chief_and_ps_ids(monkeypatch):
  chief = run_config(monkeypatch, {"cluster": CLUSTER, "task": {"type": "chief", "index": 0}})
  assert (chief.is_chief, chief.global_id_in_cluster, chief.master) == (True, 0, "grpc://h0:2222")
  ps = run_config(monkeypatch, {"cluster": CLUSTER, "task": {"type": "ps", "index": 0}})
  assert (ps.is_chief, ps.global_id_in_cluster, ps.master) == (False, 3, "grpc://h3:2222")


def test_kubeflow_tfjob_form_takes_the_evaluator_out_of_the_training_cluster(monkeypatch):
  cluster = dict(CLUSTER, evaluator=["h4:2222"])
  worker = run_config(monkeypatch, {"cluster": cluster, "task": {"type": "worker", "index": 0},
                                    "environment": "cloud"})
  assert worker.cluster_spec.as_dict() == CLUSTER
  assert (worker.num_worker_replicas, worker.global_id_in_cluster) == (3, 1)
  evaluator = run_config(monkeypatch, {"cluster": cluster, "task": {"type": "evaluator", "index": 0},
                                       "environment": "cloud"})
  assert (evaluator.task_type, evaluator.task_id) == ("evaluator", 0)
  assert evaluator.cluster_spec.as_dict() == {}
  assert (evaluator.master, evaluator.is_chief, evaluator.global_id_in_cluster) == ("", False, None)
  assert (evaluator.num_ps_replicas, evaluator.num_worker_replicas) == (0, 0)


def test_evaluator_outside_the_cluster_uses_eval_session_master(monkeypatch):
  config = run_config(monkeypatch, {"cluster": CLUSTER, "task": {"type": "evaluator", "index": 0},
                                    "eval_session_master": "grpc://e:9"})
  assert (config.task_type, config.evaluation_master, config.master) == ("evaluator", "grpc://e:9", "")
  assert config.cluster_spec.as_dict() == {}


def test_master_form_is_the_legacy_chief(monkeypatch):
  cluster = {"master": ["h0:2222"], "worker": ["h1:2222"], "ps": ["h3:2222"]}
  master = run_config(monkeypatch, {"cluster": cluster, "task": {"type": "master", "index": 0}})
  assert (master.task_type, master.is_chief, master.master) == ("master", True, "grpc://h0:2222")
  assert (master.num_worker_replicas, master.global_id_in_cluster) == (2, 0)
  assert list(master.session_config.device_filters) == ["/job:ps", "/job:master"]
  worker = run_config(monkeypatch, {"cluster": cluster, "task": {"type": "worker", "index": 0}})
  assert (worker.is_chief, worker.global_id_in_cluster) == (False, 1)


def test_session_master_and_one_node_cluster(monkeypatch):
  # A one-node cluster trains in-process (no server needed), as tf.estimator.
  alone = run_config(monkeypatch, {"cluster": {"chief": ["h0:1"]}, "task": {"type": "chief", "index": 0}})
  assert (alone.master, alone.num_worker_replicas, alone.num_ps_replicas) == ("", 1, 0)
  # An explicit session_master wins.
  pinned = run_config(monkeypatch, {"cluster": CLUSTER, "task": {"type": "worker", "index": 0},
                                    "session_master": "grpc://elsewhere:1"})
  assert pinned.master == "grpc://elsewhere:1"


def test_second_evaluator_is_refused_by_train_and_evaluate(monkeypatch, tmp_path):
  config = run_config(monkeypatch, {"cluster": CLUSTER, "task": {"type": "evaluator", "index": 1}})
  estimator = est.Estimator(lambda features, labels, mode: None, model_dir=str(tmp_path),
                            config=config)
  spec_input = lambda: ({"x": [[1.0]]}, [[1.0]])  # pylint: disable=unnecessary-lambda-assignment
  with pytest.raises(ValueError, match="only be one `evaluator` task .* Given task id 1"):
    est.train_and_evaluate(estimator, est.TrainSpec(spec_input), est.EvalSpec(spec_input))


def test_ai_platform_tf_config_with_job_and_environment_cloud_parses(monkeypatch):
  # What Google Cloud AI Platform Training sets on its "master" replica: a
  # "job" key describing the job, "environment": "cloud", and extra task keys.
  cluster = {"master": ["cmle-training-master-0:2222"],
             "worker": ["cmle-training-worker-0:2222", "cmle-training-worker-1:2222"],
             "ps": ["cmle-training-ps-0:2222"]}
  job = {"scale_tier": "CUSTOM", "master_type": "standard", "worker_type": "standard",
         "parameter_server_type": "standard", "worker_count": "2",
         "parameter_server_count": "1", "package_uris": ["gs://bucket/trainer-0.1.tar.gz"],
         "python_module": "trainer.task", "args": ["--model_dir", "gs://bucket/model"],
         "region": "us-central1", "runtime_version": "2.11", "run_on_raw_vm": True,
         "python_version": "3.7"}
  master = run_config(monkeypatch, {
      "cluster": cluster, "task": {"type": "master", "index": 0, "cloud": "abc", "trial": ""},
      "job": job, "environment": "cloud"})
  assert (master.task_type, master.task_id, master.is_chief) == ("master", 0, True)
  assert master.master == "grpc://cmle-training-master-0:2222"
  assert (master.num_ps_replicas, master.num_worker_replicas) == (1, 3)
  assert master.cluster_spec.as_dict() == cluster
  worker = run_config(monkeypatch, {
      "cluster": cluster, "task": {"type": "worker", "index": 1, "cloud": "abc", "trial": ""},
      "job": job, "environment": "cloud"})
  assert (worker.task_type, worker.task_id, worker.is_chief) == ("worker", 1, False)
  assert worker.global_id_in_cluster == 2


def test_vertex_ai_tf_config_with_job_as_a_string_parses(monkeypatch):
  # Vertex AI custom training: chief/worker/evaluator in "cluster", "job" as a
  # JSON-encoded string.
  cluster = {"chief": ["workerpool0-0:2222"], "worker": ["workerpool1-0:2222"],
             "ps": ["workerpool2-0:2222"], "evaluator": ["workerpool3-0:2222"]}
  job = json.dumps({"python_module": "trainer.task", "package_uris": ["gs://b/t.tar.gz"]})
  chief = run_config(monkeypatch, {"cluster": cluster, "environment": "cloud", "job": job,
                                   "task": {"type": "chief", "index": 0, "trial": ""}})
  assert (chief.task_type, chief.is_chief, chief.master) == ("chief", True,
                                                             "grpc://workerpool0-0:2222")
  assert "evaluator" not in chief.cluster_spec.jobs
  evaluator = run_config(monkeypatch, {"cluster": cluster, "environment": "cloud", "job": job,
                                       "task": {"type": "evaluator", "index": 0}})
  assert (evaluator.task_type, evaluator.cluster_spec.as_dict()) == ("evaluator", {})


def test_unknown_top_level_keys_are_ignored_with_one_warning_naming_them(monkeypatch, tf_logs):
  monkeypatch.setattr(_tf_config, "_warned_unknown_keys", set())
  value = {"cluster": CLUSTER, "task": {"type": "worker", "index": 0},
           "job": {"job_name": "j"}, "service": {"name": "s"}}
  first = run_config(monkeypatch, value)
  again = run_config(monkeypatch, value)  # RunConfig is often built more than once
  assert first.cluster_spec.as_dict() == again.cluster_spec.as_dict() == CLUSTER
  assert (first.task_type, first.master) == ("worker", "grpc://h1:2222")
  warnings = [m for m in tf_logs.messages if "does not use" in m]
  assert warnings == ["TF_CONFIG has key(s) ['job'] that estimator_lite does not use; "
                      "ignoring them (it reads ['cluster', 'task', 'environment', 'rpc_layer', "
                      "'session_master', 'eval_session_master', 'model_dir', 'service'])."]
  # The same as without the unknown keys.
  plain = run_config(monkeypatch, {"cluster": CLUSTER, "task": {"type": "worker", "index": 0}})
  assert (plain.master, plain.global_id_in_cluster, plain.num_worker_replicas) == (
      first.master, first.global_id_in_cluster, first.num_worker_replicas)


def test_run_config_accepts_placeholder_hosts_and_port_0_as_tf_estimator_did(monkeypatch):
  # tf.estimator 2.15's own tests build RunConfigs from "host0:0"; hosts are
  # resolved, and port 0 refused, only where a task starts its server.
  monkeypatch.setenv("TF_CONFIG", json.dumps({
      "cluster": {"chief": ["host0:0"], "ps": ["nosuchhost.invalid:0"]},
      "task": {"type": "chief", "index": 0}}))
  start = time.monotonic()
  config = est.RunConfig()
  assert time.monotonic() - start < 5
  assert config.cluster_spec.as_dict()["ps"] == ["nosuchhost.invalid:0"]
  assert config.master == "grpc://host0:0"
