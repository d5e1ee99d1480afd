"""Estimator.evaluate's work: the eval graph run over a checkpoint, and the one eval session runner.

`evaluate` builds the graph (eval_graph.py, or strategy.py for
RunConfig.eval_distribute), runs it with `run` and writes the results to
model_dir/eval[_NAME]. The in-memory evaluator builds its graph once and calls
`run` with a Scaffold that copies the training variables in.

Evaluation with no `steps` runs until the input ends: `build_graph` refuses
an input tf.data knows to be infinite (before any session exists), and `run`
logs how far it has got every PROGRESS_LOG_SECS, so a long or endless
evaluation is never silent.
"""
from __future__ import annotations

import contextlib
import time
from typing import Any, Callable, Dict, Iterator, Optional, Sequence

import attrs
import tensorflow as tf

from estimator_lite._graph import eval_graph
from estimator_lite._graph import strategy as strategy_lib
from estimator_lite._session import checkpoints
from estimator_lite._session import input_size
from estimator_lite._session import targets
from estimator_lite._util import cadence as cadence_lib
from estimator_lite._util import events
from estimator_lite._util import op_errors
from estimator_lite._util import quiet
from estimator_lite._util import validation

_logging = tf.compat.v1.logging
# Seconds of evaluation between two progress lines ("Evaluation: N batches so
# far of M"). Read when an evaluation starts; tests lower it.
PROGRESS_LOG_SECS = 10.0


class StopAfterNEvalsHook(tf.compat.v1.train.SessionRunHook):
  """Stops evaluation after `num_evals` batches and logs progress every tenth."""

  def __init__(self, num_evals: int):
    self._num_evals = num_evals
    self._log_every = max(1, num_evals // 10)
    self._done = 0

  @property
  def num_evals(self) -> int:
    """The number of batches after which evaluation stops."""
    return self._num_evals

  def begin(self) -> None:
    # Counts per evaluation: the in-memory evaluator reuses the hook.
    self._done = 0

  def after_run(self, run_context: Any, run_values: Any) -> None:
    del run_values
    self._done += 1
    if self._done % self._log_every == 0 or self._done == self._num_evals:
      _logging.info("Evaluation [%d/%d]", self._done, self._num_evals)
    if self._done >= self._num_evals:
      run_context.request_stop()


def hooks_with_steps(hooks: Sequence[tf.compat.v1.train.SessionRunHook], steps: Optional[int]
                     ) -> list:
  """`hooks`, plus one that stops after `steps` batches unless steps is None."""
  return list(hooks) + ([StopAfterNEvalsHook(steps)] if steps is not None else [])


def _steps_of(hooks: Sequence[tf.compat.v1.train.SessionRunHook]) -> Optional[int]:
  """The `steps` hooks_with_steps put among `hooks`, or None when evaluation runs to the end."""
  for hook in hooks:
    if isinstance(hook, StopAfterNEvalsHook):
      return hook.num_evals
  return None


class _Progress:
  """Counts an evaluation's batches and logs them every PROGRESS_LOG_SECS.

  Args:
    total: the batches the evaluation will run, when known (steps, or the
      size of an input tf.data can tell); None: "unknown".
  """

  def __init__(self, total: Optional[int]):
    self._total = "unknown" if total is None else str(total)
    self._cadence = cadence_lib.Cadence(every_secs=PROGRESS_LOG_SECS)
    self._start = 0.0
    self.batches = 0

  def start(self) -> None:
    """Starts the clock: the first line comes PROGRESS_LOG_SECS from now."""
    self._start = self._cadence.now()
    self._cadence.fire(at=self._start)

  def after_batch(self) -> None:
    """Counts one batch; logs when due (one clock read and comparison otherwise)."""
    self.batches += 1
    if self._cadence.is_due():
      self._cadence.fire()
      _logging.info("Evaluation: %d batches so far of %s (%.0f secs).", self.batches,
                    self._total, self._cadence.now() - self._start)


def _with_input_size(graph: eval_graph.EvalGraph, config: Any) -> eval_graph.EvalGraph:
  """`graph` with the input's size, for an evaluation that runs until the input ends.

  Raises:
    ValueError: input_fn returned a Dataset of INFINITE cardinality.
  """
  batches = input_size.input_size(graph.input_cardinality, config)
  if batches == tf.data.INFINITE_CARDINALITY:
    raise ValueError(
        "Evaluation with steps=None runs until the input ends, but input_fn returned "
        "an infinite tf.data.Dataset (its cardinality is INFINITE, e.g. after "
        ".repeat() with no count): it would never finish. Pass steps=N to evaluate N "
        "batches (EvalSpec(steps=N) in train_and_evaluate), or make the evaluation "
        "dataset finite: drop the .repeat(), or end it with .take(N).")
  return attrs.evolve(graph, input_batches=batches)


@contextlib.contextmanager
def placement(config: Any) -> Iterator[None]:
  """The scope an eval graph is built and run in: RunConfig.eval_distribute's, if any."""
  if config.eval_distribute is not None:
    with config.eval_distribute.scope():
      yield
  else:
    yield


def build_graph(model_fn: Callable[..., Any], input_fn: Callable[..., Any], config: Any,
                params: dict, hooks: Sequence[tf.compat.v1.train.SessionRunHook]
                ) -> eval_graph.EvalGraph:
  """The eval graph in the current default graph, inside `placement(config)`.

  `hooks` are hooks_with_steps': without a steps hook the input must end.

  Raises:
    ValueError: no steps, and input_fn returned an infinite Dataset (checked
      before any session exists), or as eval_graph.build.
  """
  if config.eval_distribute is not None:
    graph = strategy_lib.build_eval_graph(model_fn, input_fn, config, params, hooks)
  else:
    graph = eval_graph.build(model_fn, input_fn, config, params, hooks)
  if _steps_of(hooks) is None:
    graph = _with_input_size(graph, config)
  return graph


def run(graph: eval_graph.EvalGraph, config: Any, checkpoint_path: Optional[str],
        scaffold: Optional[tf.compat.v1.train.Scaffold] = None) -> Dict[str, Any]:
  """Runs an eval graph until its input ends or a hook stops; returns the results.

  Args:
    graph: the EvalGraph, built in the current default graph.
    config: the RunConfig (evaluation master, session config, eval_distribute).
    checkpoint_path: the checkpoint to restore, or None to initialise.
    scaffold: a Scaffold to use instead of the graph's, or None.

  Returns:
    dict of result name to value: each metric, `loss` and `global_step`.

  Raises:
    tf.errors.NotFoundError / InvalidArgumentError: the default Saver is in use and the
      checkpoint does not fit (tf.estimator's Saver error).
  """
  steps = _steps_of(graph.hooks)
  progress = _Progress(graph.input_batches if steps is None else steps)
  scaffold = scaffold or graph.scaffold
  checkpoints.check_restorable(scaffold, checkpoint_path, tf.compat.v1.get_default_graph())
  final_ops_hook = tf.compat.v1.train.FinalOpsHook(graph.values)
  session_creator = tf.compat.v1.train.ChiefSessionCreator(
      scaffold=scaffold,
      checkpoint_filename_with_path=checkpoint_path,
      master=config.evaluation_master,
      config=targets.in_process_session_config(config, config.eval_distribute))
  _logging.info("Starting evaluation at %s", time.strftime("%Y-%m-%dT%H:%M:%S"))
  start = time.time()
  with tf.compat.v1.train.MonitoredSession(
      session_creator=session_creator, hooks=list(graph.hooks) + [final_ops_hook]) as session:
    progress.start()
    while not session.should_stop():
      session.run(graph.update_op)
      progress.after_batch()
  _logging.info("Inference Time : %.5fs", time.time() - start)
  _logging.info("Finished evaluation at %s", time.strftime("%Y-%m-%d-%H:%M:%S"))
  return final_ops_hook.final_ops_values


def evaluate(model_fn: Callable[..., Any], input_fn: Callable[..., Any], config: Any,
             params: dict, *, hooks: Sequence[tf.compat.v1.train.SessionRunHook],
             steps: Optional[int], checkpoint_path: Optional[str], eval_dir: str,
             warm_start: Optional[Callable[[], None]] = None) -> Dict[str, Any]:
  """Evaluates a checkpoint and writes the results to `eval_dir`, as Estimator.evaluate documents.

  Args:
    model_fn: the Estimator's `ModelFn`.
    input_fn: the user's input_fn.
    config: the RunConfig.
    params: the Estimator's params (passed to input_fn).
    hooks: the caller's hooks, checked.
    steps: batches to evaluate, or None for all of the input.
    checkpoint_path: the checkpoint, or None to evaluate the initialised model.
    eval_dir: where the results' events go.
    warm_start: applies the Estimator's warm start to the graph; called when
      there is no checkpoint, so an untrained warm-started model is evaluated
      with the weights it would train from (as tf.estimator).

  Returns:
    The results dict.

  Raises:
    ValueError: steps is None and input_fn returned an infinite Dataset
      (before the checkpoint is read), or as build_graph and run.
  """
  with quiet.quiet_deprecations(), tf.Graph().as_default(), placement(config):
    graph = build_graph(model_fn, input_fn, config, params, hooks_with_steps(hooks, steps))
    if warm_start is not None and not checkpoint_path:
      warm_start()
    results = run(graph, config, checkpoint_path)
  _write_results(eval_dir, results, checkpoint_path)
  return results


def _write_results(eval_dir: str, results: Dict[str, Any], checkpoint_path: Optional[str]) -> None:
  """Writes the results' events to `eval_dir`; a failed write is a warning, not an error.

  The metrics are computed by then: a model_dir that cannot be written to
  (read-only, a full disk, missing permissions) must not keep them from the
  caller, as it did in tf.estimator 2.15 (PermissionDeniedError after the
  evaluation).
  """
  global_step = int(results[validation.GLOBAL_STEP_KEY])
  try:
    events.write_dict_to_summary(eval_dir, results, global_step)
    if checkpoint_path:
      events.write_checkpoint_path_to_summary(eval_dir, checkpoint_path, global_step)
  except (tf.errors.OpError, OSError) as error:
    _logging.warning(
        "Could not write the evaluation results for global step %d to %s (%s: %s). "
        "evaluate() returns them; TensorBoard, BestExporter and early stopping, which read "
        "them from there, will not see this evaluation. Make that directory writable, or "
        "evaluate with a model_dir that is.", global_step, eval_dir, type(error).__name__,
        op_errors.summary(error))
