"""InMemoryEvaluatorHook: evaluates during training from the live variables, without a checkpoint."""
import tensorflow as tf

from estimator_lite import _quiet
from estimator_lite import _summaries

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

  def __init__(self, estimator, input_fn, steps=None, hooks=None, name=None,
               every_n_iter=100):
    # pylint: disable=g-import-not-at-top
    from estimator_lite import estimator as estimator_module
    if every_n_iter is None or every_n_iter <= 0:
      raise ValueError(f"invalid every_n_iter={every_n_iter}.")
    if estimator.config.num_ps_replicas > 0 or estimator.config.num_worker_replicas > 1:
      raise ValueError(
          "InMemoryEvaluator supports only single machine (aka Local) setting.")
    self._estimator = estimator
    self._input_fn = input_fn
    self._name = name
    self._eval_dir = estimator.eval_dir(name)
    self._hooks = estimator_module._check_hooks_type(  # pylint: disable=protected-access
        hooks, "InMemoryEvaluatorHook(hooks=...)")
    if steps is not None:
      steps = estimator_module._check_positive("steps", steps)  # pylint: disable=protected-access
      self._hooks.append(estimator_module._StopAfterNEvalsHook(steps))  # pylint: disable=protected-access
    self._timer = tf.compat.v1.train.SecondOrStepTimer(every_steps=every_n_iter)
    self._graph = None

  def begin(self):
    """Builds the evaluation graph."""
    self._timer.reset()
    self._iter_count = 0
    self._graph = tf.Graph()
    with self._graph.as_default(), _quiet.quiet_deprecations():
      # pylint: disable=protected-access
      (self._scaffold, self._update_op, self._final_ops_hook,
       self._all_hooks) = self._estimator._evaluate_build_graph(self._input_fn, self._hooks)
      if self._scaffold.saver is not None:
        raise ValueError("InMemoryEvaluator does not support custom saver")
      if self._scaffold.init_fn is not None:
        raise ValueError("InMemoryEvaluator does not support custom init_fn")
      eval_vars = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.GLOBAL_VARIABLES)
      self._var_name_to_eval_var = {v.name: v for v in eval_vars}
      self._var_name_to_placeholder = {
          v.name: tf.compat.v1.placeholder(v.dtype.base_dtype) for v in eval_vars}

  def after_create_session(self, session, coord):
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

  def _evaluate(self, train_session):
    values = train_session.run(self._var_name_to_train_var)
    feed_dict = {self._var_name_to_placeholder[name]: value
                 for name, value in values.items()}

    def feed_variables(scaffold, session):
      del scaffold
      session.run(self._var_feed_op, feed_dict=feed_dict)

    scaffold = tf.compat.v1.train.Scaffold(init_fn=feed_variables,
                                           copy_from_scaffold=self._scaffold)
    with self._graph.as_default(), _quiet.quiet_deprecations():
      results = self._estimator._evaluate_run(  # pylint: disable=protected-access
          None, scaffold, self._update_op, self._final_ops_hook, self._all_hooks)
    global_step = int(results["global_step"])
    _summaries.write_dict_to_summary(self._eval_dir, results, global_step)
    self._timer.update_last_triggered_step(self._iter_count)
    return results

  def after_run(self, run_context, run_values):
    """Evaluates every `every_n_iter` iterations."""
    del run_values
    self._iter_count += 1
    if self._timer.should_trigger_for_step(self._iter_count):
      self._evaluate(run_context.session)

  def end(self, session):
    """Evaluates the final model."""
    self._evaluate(session)
