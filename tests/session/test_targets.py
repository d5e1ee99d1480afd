"""Which session each task trains in, and the in-process session of evaluation, prediction, export."""
import json

import tensorflow as tf

import estimator_lite as est
from estimator_lite._session import targets

_CLUSTER = {"chief": ["localhost:2220"], "worker": ["localhost:2221", "localhost:2222"],
            "ps": ["localhost:2223"]}


def _config(monkeypatch, task_type=None, index=0, **kwargs):
  if task_type is None:
    monkeypatch.delenv("TF_CONFIG", raising=False)
  else:
    monkeypatch.setenv("TF_CONFIG", json.dumps(
        {"cluster": _CLUSTER, "task": {"type": task_type, "index": index}}))
  return est.RunConfig(**kwargs)


def test_local_training_initialises_writes_and_watches_sigterm(monkeypatch):
  target = targets.training_target(_config(monkeypatch))
  assert (target.master, target.is_chief, target.initializes_variables,
          target.watches_sigterm) == ("", True, True, True)


def test_a_ps_clusters_worker_waits_for_the_chief_and_writes_nothing(monkeypatch):
  chief = targets.training_target(_config(monkeypatch, "chief"))
  worker = targets.training_target(_config(monkeypatch, "worker", 1))
  assert chief.master == "grpc://localhost:2220"
  assert chief.is_chief and chief.initializes_variables
  assert worker.master == "grpc://localhost:2222"
  assert not worker.is_chief and not worker.initializes_variables and worker.watches_sigterm
  # The worker talks to the ps and itself only (tf.estimator's filters per role).
  assert list(worker.session_config.device_filters) == ["/job:ps", "/job:worker/task:1"]


def test_a_one_process_strategy_trains_as_a_chief(monkeypatch):
  strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
  target = targets.training_target(_config(monkeypatch, train_distribute=strategy))
  assert (target.master, target.is_chief, target.initializes_variables,
          target.watches_sigterm) == ("", True, True, True)


def test_in_process_work_drops_a_workers_device_filters(monkeypatch):
  config = _config(monkeypatch, "worker", 0)
  assert list(config.session_config.device_filters)
  in_process = targets.in_process_session_config(config)
  assert not list(in_process.device_filters)
  assert in_process.allow_soft_placement == config.session_config.allow_soft_placement


def test_sessions_without_a_session_config_run_with_tf_estimators_default(monkeypatch):
  # RunConfig.session_config is None (as in tf.estimator); the sessions still
  # get soft placement and one Grappler pass, as tf.estimator's Estimator gave.
  default = est.run_config.get_default_session_config()
  assert default.allow_soft_placement
  assert default.graph_options.rewrite_options.meta_optimizer_iterations
  local = _config(monkeypatch)
  assert local.session_config is None
  assert targets.training_target(local).session_config == default
  assert targets.in_process_session_config(local) == default
  evaluator = _config(monkeypatch, "evaluator")
  assert evaluator.session_config is None
  assert targets.in_process_session_config(evaluator) == default
  strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
  with_strategy = targets.training_target(_config(monkeypatch, train_distribute=strategy))
  assert with_strategy.session_config.allow_soft_placement
  assert with_strategy.session_config.graph_options == default.graph_options
