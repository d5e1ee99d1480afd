"""InMemoryEvaluatorHook: evaluates during training from the live variables, without a checkpoint."""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Sequence

import tensorflow as tf

from estimator_lite._session import eval_session
from estimator_lite._util import cadence as cadence_lib
from estimator_lite._util import events
from estimator_lite._util import quiet
from estimator_lite._util import validation

_logging = tf.compat.v1.logging


class InMemoryEvaluatorHook(tf.compat.v1.train.SessionRunHook):
  """Evaluates the model being trained every N training iterations, from memory.

  The evaluation graph is built once, when training starts; each evaluation
  copies the training session's variable values into it (no checkpoint is
  read or written) and writes its results to model_dir/eval[_NAME] at the
  current global step, like `Estimator.evaluate`. It runs once when the
  training session starts, every `every_n_iter` `Session.run` calls, and once
  at the end.

  Example:

  ```python
  evaluator = est.experimental.InMemoryEvaluatorHook(estimator, eval_input_fn,
                                                     every_n_iter=500)
  estimator.train(train_input_fn, hooks=[evaluator])
  ```

  Limitations (as tf.estimator's): local training only; only variables are
  copied (no other saveable objects), and the EstimatorSpec's scaffold must
  not have a custom saver or init_fn.

  Args:
    estimator: the `Estimator` being trained.
    input_fn: the evaluation input_fn, as for `Estimator.evaluate`.
    steps: batches per evaluation; None evaluates until input ends.
    hooks: `SessionRunHook`s to run during each evaluation.
    name: evaluation name; results go to model_dir/eval_NAME.
    every_n_iter: evaluate once every this many training iterations.

  Raises:
    ValueError: every_n_iter is not positive, or the estimator trains in a
      cluster (ps or several workers).
  """

  def __init__(self, estimator: Any, input_fn: Callable[..., Any], steps: Optional[int] = None,
               hooks: Optional[Sequence[tf.compat.v1.train.SessionRunHook]] = None,
               name: Optional[str] = None, every_n_iter: int = 100):
    if every_n_iter is None or every_n_iter <= 0:
      raise ValueError(f"invalid every_n_iter={every_n_iter}.")
    if estimator.config.num_ps_replicas > 0 or estimator.config.num_worker_replicas > 1:
      raise ValueError(
          "InMemoryEvaluator supports only single machine (aka Local) setting.")
    self._estimator = estimator
    self._input_fn = input_fn
    self._name = name
    self._eval_dir = estimator.eval_dir(name)
    self._hooks = eval_session.hooks_with_steps(
        validation.check_hooks(hooks, "InMemoryEvaluatorHook(hooks=...)",
                               validation.ESTIMATOR_HOOKS_ERROR),
        validation.check_positive_int("steps", steps))
    self._cadence = cadence_lib.Cadence(every_steps=every_n_iter)
    self._graph = tf.Graph()  # replaced by a fresh one in begin()

  def begin(self) -> None:
    """Builds the evaluation graph."""
    self._cadence.reset()
    self._iter_count = 0
    self._graph = tf.Graph()
    # Evaluates in the training process, on its devices: no eval_distribute.
    self._config = self._estimator.config.replace(eval_distribute=None)
    with self._graph.as_default(), quiet.quiet_deprecations():
      self._eval_graph = eval_session.build_graph(
          self._estimator.model_fn, self._input_fn, self._config, self._estimator.params,
          self._hooks)
      self._scaffold = self._eval_graph.scaffold
      if self._scaffold.saver is not None:
        raise ValueError("InMemoryEvaluator does not support custom saver")
      if self._scaffold.init_fn is not None:
        raise ValueError("InMemoryEvaluator does not support custom init_fn")
      eval_vars = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.GLOBAL_VARIABLES)
      self._var_name_to_eval_var = {v.name: v for v in eval_vars}
      self._var_name_to_placeholder = {
          v.name: tf.compat.v1.placeholder(v.dtype.base_dtype) for v in eval_vars}

  def after_create_session(self, session: Any, coord: Any) -> None:
    """Connects the training variables to the eval graph and evaluates once."""
    del coord
    if tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.SAVEABLE_OBJECTS):
      raise ValueError(
          "InMemoryEvaluator does not support saveables other than global variables.")
    train_vars = {v.name: v for v in tf.compat.v1.get_collection(
        tf.compat.v1.GraphKeys.GLOBAL_VARIABLES)}
    # Only variables in both graphs: optimizer slots exist only in training,
    # evaluation-only variables keep their initial values.
    names = sorted(set(self._var_name_to_placeholder) & set(train_vars))
    self._var_name_to_train_var = {name: train_vars[name] for name in names}
    if not self._graph.finalized:
      with self._graph.as_default():
        self._var_feed_op = tf.group([
            self._var_name_to_eval_var[name].assign(self._var_name_to_placeholder[name])
            for name in names])
    self._evaluate(session)

  def _evaluate(self, train_session: Any) -> Dict[str, Any]:
    values = train_session.run(self._var_name_to_train_var)
    feed_dict = {self._var_name_to_placeholder[name]: value
                 for name, value in values.items()}

    def feed_variables(scaffold: Any, session: Any) -> None:
      del scaffold
      session.run(self._var_feed_op, feed_dict=feed_dict)

    scaffold = tf.compat.v1.train.Scaffold(init_fn=feed_variables,
                                           copy_from_scaffold=self._scaffold)
    with self._graph.as_default(), quiet.quiet_deprecations():
      results = eval_session.run(self._eval_graph, self._config, None, scaffold)
    global_step = int(results[validation.GLOBAL_STEP_KEY])
    events.write_dict_to_summary(self._eval_dir, results, global_step)
    self._cadence.fire(self._iter_count)
    return results

  def after_run(self, run_context: Any, run_values: Any) -> None:
    """Evaluates every `every_n_iter` iterations."""
    del run_values
    self._iter_count += 1
    if self._cadence.is_due(self._iter_count):
      self._evaluate(run_context.session)

  def end(self, session: Any) -> None:
    """Evaluates the final model."""
    self._evaluate(session)
