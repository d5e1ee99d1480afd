"""train_and_evaluate's roles: what each task of TF_CONFIG does (local, chief, worker, master, ps, evaluator).

See DESIGN.md, "Roles from TF_CONFIG", and docs/distributed.md. Each
role works through the Estimator's public methods.
"""
from __future__ import annotations

from typing import Any, List, Optional, Tuple

import tensorflow as tf

from estimator_lite._cluster import evaluator as evaluator_lib
from estimator_lite._cluster import server
from estimator_lite._cluster import strategy_checks
from estimator_lite._cluster import tf_config
from estimator_lite._cluster import worker_join

_logging = tf.compat.v1.logging


def run(estimator: Any, train_spec: Any, eval_spec: Any
        ) -> Optional[Tuple[Optional[dict], Optional[List[Any]]]]:
  """Runs this process's role (train_and_evaluate, after its argument checks).

  Returns:
    Local mode: (the last evaluation's metrics, its export results; each None
    when no evaluation happened); cluster roles: None.

  Raises:
    ValueError: an evaluator task other than index 0, or an unsupported role.
  """
  config = estimator.config
  if config.task_type == tf_config.EVALUATOR and config.task_id > 0:
    raise ValueError(
        "For distributed training, there can only be one `evaluator` task (with task "
        f"id 0).  Given task id {config.task_id}")
  if not config.cluster_spec.jobs and config.task_type != tf_config.EVALUATOR:
    _logging.info("Running training and evaluation locally (non-distributed).")
    return _run_local(estimator, train_spec, eval_spec)
  runners = {
      tf_config.CHIEF: _run_chief,
      tf_config.WORKER: _run_worker,
      tf_config.MASTER: _run_master,
      tf_config.PS: _run_ps,
      tf_config.EVALUATOR: _run_evaluator,
  }
  if config.task_type not in runners:
    raise ValueError(f"Task type {config.task_type} is not supported. Supported task "
                     f"types are {sorted(runners)}")
  _logging.info("Running train_and_evaluate as %s:%d.", config.task_type, config.task_id)
  runners[config.task_type](estimator, train_spec, eval_spec)
  return None


def _eval_listener(estimator: Any, train_spec: Any, eval_spec: Any
                   ) -> evaluator_lib.NewCheckpointListenerForEvaluate:
  return evaluator_lib.NewCheckpointListenerForEvaluate(
      evaluator_lib.Evaluator(estimator, eval_spec, train_spec.max_steps),
      evaluator_lib.eval_cadence(eval_spec))


def _run_local(estimator: Any, train_spec: Any, eval_spec: Any
               ) -> Tuple[Optional[dict], Optional[List[Any]]]:
  config = estimator.config
  _logging.info(
      "Start train and evaluate loop. The evaluate will happen after every checkpoint. "
      "Checkpoint frequency is determined based on RunConfig arguments: "
      "save_checkpoints_steps %s or save_checkpoints_secs %s.",
      config.save_checkpoints_steps, config.save_checkpoints_secs)
  listener = _eval_listener(estimator, train_spec, eval_spec)
  estimator.train(input_fn=train_spec.input_fn, max_steps=train_spec.max_steps,
                  hooks=list(train_spec.hooks),
                  saving_listeners=list(train_spec.saving_listeners) + [listener])
  metrics = listener.eval_result.metrics if listener.eval_result else None
  return metrics, listener.export_results


def _train_in_cluster(estimator: Any, train_spec: Any, saving_listeners: Optional[list]) -> None:
  config = estimator.config
  if strategy_checks.is_multi_worker(config.train_distribute):
    # All-reduce training: each task serves itself (the training session
    # starts its server) and all start together, with no stagger.
    task_server = None
    hooks = list(train_spec.hooks)
  else:
    task_server = server.start_std_server(config)
    server.wait_before_training(config)
    hooks = list(train_spec.hooks) + worker_join.launcher_hooks(config)
  estimator.train(input_fn=train_spec.input_fn, max_steps=train_spec.max_steps,
                  hooks=hooks, saving_listeners=saving_listeners)
  del task_server  # kept alive until training is done


def _run_chief(estimator: Any, train_spec: Any, eval_spec: Any) -> None:
  del eval_spec
  _train_in_cluster(estimator, train_spec, list(train_spec.saving_listeners))


def _run_worker(estimator: Any, train_spec: Any, eval_spec: Any) -> None:
  del eval_spec
  # As tf.estimator: saving listeners belong to the chief, the only task that saves.
  _train_in_cluster(estimator, train_spec, None)


def _run_master(estimator: Any, train_spec: Any, eval_spec: Any) -> None:
  listener = _eval_listener(estimator, train_spec, eval_spec)
  _train_in_cluster(estimator, train_spec, list(train_spec.saving_listeners) + [listener])


def _run_ps(estimator: Any, train_spec: Any, eval_spec: Any) -> None:
  del train_spec, eval_spec
  task_server = server.start_std_server(estimator.config)
  assert task_server is not None  # only a lone trainer has none
  _logging.info("ps task serving variables until stopped.")
  task_server.join()


def _run_evaluator(estimator: Any, train_spec: Any, eval_spec: Any) -> None:
  evaluator_lib.run_continuous_evaluation(estimator, eval_spec, train_spec.max_steps)
