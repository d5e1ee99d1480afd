"""RunConfig reads TF_CONFIG as tf.estimator 2.15 did, and rejects malformed ones clearly.

Expected values of the accepted forms were checked against tf.estimator 2.15's
RunConfig (reference venv) for the same TF_CONFIG strings.
"""
import json

import pytest

import estimator_lite as est
from estimator_lite._cluster import tf_config as _tf_config

CLUSTER = {"chief": ["h0:2222"], "worker": ["h1:2222", "h2:2222"], "ps": ["h3:2222"]}


def run_config(monkeypatch, tf_config):
  monkeypatch.setenv("TF_CONFIG", tf_config if isinstance(tf_config, str) else json.dumps(tf_config))
  return est.RunConfig()


@pytest.mark.parametrize("tf_config, quoted_problem", [
    ('{"cluster": {"chief": ["h0:1"]', "not valid JSON"),
    ('["chief", 0]', "must be a JSON object, got list"),
    ({"cluster": CLUSTER, "task": {"type": "trainer", "index": 0}},
     "unknown task type 'trainer'"),
    ({"cluster": CLUSTER, "task": {"type": "worker", "index": 2}},
     "task index 2 is out of range for job 'worker' with 2 task(s)"),
    ({"cluster": {"worker": ["h1:1"], "ps": ["h3:1"]}, "task": {"type": "worker", "index": 0}},
     'must have one "chief" node'),
    ({"cluster": {"chief": ["h0:1", "h9:1"], "ps": ["h3:1"]}, "task": {"type": "chief", "index": 0}},
     "must have only one 'chief' node, got ['h0:1', 'h9:1']"),
    ({"cluster": CLUSTER}, '"cluster" is set but "task" has no "type"'),
    ({"cluster": CLUSTER, "task": {"type": "worker"}}, "has no \"index\""),
    ({"cluster": CLUSTER, "task": {"type": "worker", "index": -1}},
     "task index must be non-negative, got -1"),
    ({"cluster": CLUSTER, "task": {"type": "worker", "index": "one"}},
     "task index must be an integer, got 'one'"),
    ({"cluster": {"chief": ["h0"], "ps": ["h3:1"]}, "task": {"type": "chief", "index": 0}},
     "has address 'h0'; addresses are \"host:port\""),
    ({"cluster": {"chief": ["h0:1"], "worker": []}, "task": {"type": "chief", "index": 0}},
     "\"cluster\"['worker'] must be a non-empty list"),
    ({"cluster": {"chief": ["h0:1"], "worker": ["h1:1"]}, "task": {"type": "ps", "index": 0}},
     "task type 'ps' is not a job in \"cluster\""),
    ({"cluster": {"master": ["h0:1"], "chief": ["h1:1"]}, "task": {"type": "master", "index": 0}},
     'both "master" and "chief"'),
    ({"cluster": {"master": ["h0:1"], "ps": ["h3:1"]}, "task": {"type": "evaluator", "index": 0}},
     'task type "evaluator" is not supported with a "master" node'),
    ({"cluster": {"chief": ["h0:1"], "evaluator": ["h4:1", "h5:1"]},
      "task": {"type": "evaluator", "index": 0}}, "lists 2 evaluators; at most one"),
    # Unknown keys are ignored, so a misspelt "task" leaves the task missing:
    # the message names the misspelling.
    ({"cluster": {"chief": ["h0:1"], "ps": ["h3:1"]}, "tasks": {"type": "chief", "index": 0}},
     'there is no "task" key, but there is [\'tasks\']: a misspelling?'),
    ({"cluster": CLUSTER, "task": {"type": "worker", "index": 0}, "environment": 3},
     '"environment" must be a string, got 3'),
    ({"cluster": ["h0:1"], "task": {"type": "chief", "index": 0}},
     '"cluster" must be an object of job name to address list'),
    ({"cluster": {"trainer": ["h0:1"]}, "task": {"type": "chief", "index": 0}},
     "unknown job 'trainer' in \"cluster\""),
    ({"task": {"type": "ps", "index": 0}}, "task 'ps' index 0 needs a \"cluster\""),
    ({"cluster": CLUSTER, "task": {"type": "worker", "index": 0}, "session_master": 5},
     '"session_master" must be a string, got 5'),
])
def test_malformed_tf_config_fails_at_once_quoting_the_problem(monkeypatch, tf_config,
                                                               quoted_problem):
  with pytest.raises(ValueError) as error:
    run_config(monkeypatch, tf_config)
  message = str(error.value)
  assert quoted_problem in message
  assert "TF_CONFIG is malformed" in message
  # The whole value is quoted too, so the user sees which process got what.
  raw = tf_config if isinstance(tf_config, str) else json.dumps(tf_config)
  assert raw in message


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
  assert list(master.session_config.device_filters) == ["/job:ps", "/job:master/task:0"]
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
  assert warnings == ["TF_CONFIG has key(s) ['job', 'service'] that estimator_lite does not "
                      "use; ignoring them (it reads ['cluster', 'task', 'environment', "
                      "'rpc_layer', 'session_master', 'eval_session_master'])."]
  # The same as without the unknown keys.
  plain = run_config(monkeypatch, {"cluster": CLUSTER, "task": {"type": "worker", "index": 0}})
  assert (plain.master, plain.global_id_in_cluster, plain.num_worker_replicas) == (
      first.master, first.global_id_in_cluster, first.num_worker_replicas)
