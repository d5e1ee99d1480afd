"""Estimator.train's work, for every kind of training: the graph, the hooks, the session, the loop.

One builder for local training, a ps cluster's chief and workers, the
in-graph loop (RunConfig(steps_per_loop=K)) and tf.distribute strategies:

1. the training graph: train_graph.py (one step a run, or the loop) or
   strategy.py (RunConfig.train_distribute), in a fresh tf.Graph;
2. the hooks, in the order they must run (see `_ordered_hooks`), the default
   Saver and checkpoint saver, warm-starting and the `loss` summary;
3. this task's session (targets.py, creators.py) under a MonitoredSession,
   the SIGTERM watcher (preemption.py) and, in a ps cluster, the stall
   watch (stall_watch.py);
4. `train_op` run until a hook stops, then the outcome logged (or
   `Preempted` raised).
"""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator, List, Optional, Sequence, Tuple

import tensorflow as tf

from estimator_lite import warm_starting
from estimator_lite._graph import strategy as strategy_lib
from estimator_lite._graph import train_graph
from estimator_lite._session import checkpoints
from estimator_lite._session import creators
from estimator_lite._session import preemption
from estimator_lite._session import shutdown
from estimator_lite._session import stall_watch
from estimator_lite._session import step_hook
from estimator_lite._session import targets
from estimator_lite._util import quiet
from estimator_lite._util import tf_internals

_logging = tf.compat.v1.logging
_STOP_GRACE_PERIOD_SECS = 120  # MonitoredSession's default.
# SyncReplicasOptimizer's chief queue runner waits on the ps for gradients
# that stop coming when training ends; it only ends when the session closes.
# Waiting the usual 120 s for it would only delay the exit.
_SYNC_REPLICAS_STOP_GRACE_SECS = 2


@contextlib.contextmanager
def _placement(config: Any) -> Iterator[None]:
  """The scope the graph is built and the session run in: the strategy's, or the device_fn's.

  The session runs inside it too: hooks build ops in `begin()` (early
  stopping's shared STOP variable must land on a ps, or be the strategy's).
  """
  if config.train_distribute is not None:
    with strategy_lib.training_scope(config.train_distribute):
      yield
  else:
    with tf.compat.v1.get_default_graph().device(train_graph.device_fn(config)):
      yield


def max_steps_reached(model_dir: str, max_steps: Optional[int]) -> bool:
  """Whether model_dir's latest checkpoint is at or past max_steps (then train() does nothing)."""
  if max_steps is None:
    return False
  start_step = checkpoints.latest_global_step(model_dir)
  if max_steps > start_step:
    return False
  _logging.info("Skipping training since max_steps has already saved "
                "(global step %d >= max_steps %d).", start_step, max_steps)
  return True


def train(model_fn: Callable[..., Any], input_fn: Callable[..., Any], config: Any,
          model_dir: str, params: dict, *, hooks: Sequence[tf.compat.v1.train.SessionRunHook],
          saving_listeners: Sequence[tf.compat.v1.train.CheckpointSaverListener],
          steps: Optional[int], max_steps: Optional[int],
          warm_start: Optional[warm_starting.WarmStartSettings]) -> None:
  """Trains model_fn on input_fn's data, as Estimator.train documents.

  Args:
    model_fn: the Estimator's `ModelFn`.
    input_fn: the user's input_fn.
    config: the Estimator's RunConfig.
    model_dir: where checkpoints and summaries go.
    params: the Estimator's params (passed to input_fn).
    hooks: the caller's hooks, checked.
    saving_listeners: the caller's CheckpointSaverListeners, checked.
    steps: train this many more steps, or None.
    max_steps: train until this global step, or None.
    warm_start: where to initialise variables from when model_dir has no
      checkpoint, or None.

  Raises:
    ValueError: an unwritable model_dir (chief), saving_listeners without a
      checkpoint saver, or a checkpoint that does not fit the graph.
    NanLossDuringTrainingError: the loss became NaN.
    Preempted: SIGTERM was received; the checkpoint at the current step is saved.
  """
  if config.is_chief:
    checkpoints.check_model_dir_writable(model_dir)
  target = targets.training_target(config)
  with quiet.quiet_deprecations(), tf.Graph().as_default(), _placement(config):
    if config.train_distribute is not None:
      built = strategy_lib.build_train_graph(model_fn, input_fn, config, params)
    else:
      built = train_graph.build(model_fn, input_fn, config, params, steps, max_steps)
    if warm_start:
      warm_starting.apply(warm_start)
    _add_loss_summary(built.spec.loss)
    stop_hooks = [built.stop_hook] if built.stop_hook else []
    session_hooks, savers = _ordered_hooks(
        built, config, model_dir, target,
        list(built.input_hooks) + list(hooks) + stop_hooks, saving_listeners,
        stop_at=(None, None) if built.stop_hook else (steps, max_steps))
    loss = _run(built.spec, session_hooks, savers, target, config, model_dir)
  _logging.info("Loss for final step: %s.", loss)


def _add_loss_summary(loss: tf.Tensor) -> None:
  # tf.estimator's rule: the loss is summarised as "loss" unless model_fn
  # already did (a canned head does), so the events hold one "loss" tag.
  summaries = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.SUMMARIES)
  if not any(summary.op.name == "loss" for summary in summaries):
    tf.compat.v1.summary.scalar("loss", loss)


def _ordered_hooks(built: train_graph.TrainGraph, config: Any, model_dir: str,
                   target: targets.TrainingTarget,
                   worker_hooks: List[tf.compat.v1.train.SessionRunHook],
                   saving_listeners: Sequence[tf.compat.v1.train.CheckpointSaverListener],
                   stop_at: Tuple[Optional[int], Optional[int]]
                   ) -> Tuple[List[tf.compat.v1.train.SessionRunHook],
                              List[checkpoints.SafeCheckpointSaverHook]]:
  """The session's hooks, in the order they must run; installs the default Saver.

  The step hook (step_hook.py: the NaN guard, the loss log and, as asked,
  the stop step, step rate and summaries) comes first, then the chief hooks
  (on the chief), then the others: a user's NanTensorHook(loss) would
  otherwise raise first, with TensorFlow's message that lacks the step, and a
  CheckpointSaverHook (the user's own, or one due on that step) would first
  save the NaN weights of the failed step, as tf.estimator 2.15 did. An
  exception out of a hook ends training without the savers' final save.
  MonitoredTrainingSession's chief_only_hooks would run the chief hooks
  before the guard, so they are passed nowhere else. The default checkpoint
  saver runs last, on the chief only (but for its save at session start,
  which `_run` puts first).

  Args:
    worker_hooks: the input's, the caller's and the loop's hooks.
    stop_at: (steps, max_steps) for the step hook to stop at; (None, None)
      when the loop's hook stops.

  Returns:
    (the hooks, [the default checkpoint saver] on the chief or []).

  Raises:
    ValueError: saving_listeners without any checkpoint saver, or a
      checkpoint that does not fit the graph.
  """
  spec = built.spec
  num_steps, last_step = stop_at
  first = step_hook.TrainingStepHook(
      spec.loss, built.logged_step, num_steps=num_steps, last_step=last_step,
      # The loss log counts Session.run calls, as LoggingTensorHook did;
      # with steps_per_loop each call is steps_per_loop steps.
      log_every_n_iter=(None if config.log_step_count_steps is None else
                        -(-config.log_step_count_steps // config.steps_per_loop)),
      output_dir=model_dir if target.is_chief else None,
      count_every_n_steps=config.log_step_count_steps,
      summary_every_n_steps=config.save_summary_steps, scaffold=spec.scaffold,
      steps_per_run=config.steps_per_loop)
  chief_hooks = list(spec.training_chief_hooks)
  others = list(worker_hooks) + list(spec.training_hooks)
  graph = tf.compat.v1.get_default_graph()
  if (checkpoints.install_default_saver(spec.scaffold, graph, config) and
      target.initializes_variables):
    # Checked on every task that restores: one that failed alone would leave
    # the others waiting for it (a strategy's initial broadcast).
    checkpoints.check_checkpoint_matches_graph(tf.train.latest_checkpoint(model_dir), graph)

  saver_hooks = [h for h in chief_hooks + others
                 if isinstance(h, tf.compat.v1.train.CheckpointSaverHook)]
  default_saver = []
  if (config.save_checkpoints_secs or config.save_checkpoints_steps) and not saver_hooks:
    default_saver = [checkpoints.SafeCheckpointSaverHook(
        model_dir, save_secs=config.save_checkpoints_secs,
        save_steps=config.save_checkpoints_steps, scaffold=spec.scaffold,
        save_graph_def=config.checkpoint_save_graph_def)]
    saver_hooks = default_saver
  if saving_listeners:
    if not saver_hooks:
      raise ValueError(
          "There should be a CheckpointSaverHook to use saving_listeners. Please "
          "set one of the RunConfig.save_checkpoints_steps or "
          "RunConfig.save_checkpoints_secs.")
    # What tf.estimator did; it keeps a user's own CheckpointSaverHook.
    tf_internals.saver_hook_listeners(saver_hooks[0]).extend(saving_listeners)
  if not target.is_chief:
    return [first] + others, []
  return [first] + chief_hooks + others, default_saver


def _run(spec: Any, hooks: List[tf.compat.v1.train.SessionRunHook],
         savers: List[checkpoints.SafeCheckpointSaverHook], target: targets.TrainingTarget,
         config: Any, model_dir: str) -> Any:
  """Runs spec.train_op until a hook stops; returns the last loss.

  Args:
    hooks: the session's hooks, in order.
    savers: the default checkpoint saver, run after every other hook.

  Raises:
    Preempted: SIGTERM was received; the checkpoint at the current step is saved.
  """
  watcher = preemption.SigtermWatcher() if target.watches_sigterm else None
  stall = stall_watch.for_cluster(config)
  # The SIGTERM hook requests the stop at which the saver, after it, saves.
  # The stall watch is first: a step counts as finished once its run returns.
  # Before it, the saver's save at session start: tf.estimator's came before
  # every other hook's after_create_session (session_start_hook says why).
  hooks = ([saver.session_start_hook() for saver in savers] +
           ([stall] if stall is not None else []) + hooks +
           ([watcher.hook()] if watcher is not None else []) + savers)
  grace = _STOP_GRACE_PERIOD_SECS
  if any(tf_internals.is_sync_replicas_hook(hook) for hook in hooks):
    grace = _SYNC_REPLICAS_STOP_GRACE_SECS
    shutdown.quiet_queue_runner_cancellation()
  creator = creators.training_session_creator(
      target, spec.scaffold, model_dir, config.session_creation_timeout_secs)
  loss = None
  runs = 0
  fetches = [spec.train_op, spec.loss]  # built once: this loop is the per-step path
  # The watcher is entered before the session is created, so a SIGTERM
  # during session creation (a worker waiting for the chief) counts.
  try:
    with watcher or contextlib.nullcontext(), tf.compat.v1.train.MonitoredSession(
        session_creator=creator, hooks=hooks, stop_grace_period_secs=grace) as session:
      while not session.should_stop():
        _, loss = session.run(fetches)
        runs += 1
  finally:
    if stall is not None:
      stall.stop()   # also when training ends with an exception (no `end()` then)
  _log_own_steps(runs, config.steps_per_loop)
  if not runs:
    _logging.warning("Training with estimator made no steps. Perhaps input is "
                     "empty or misspecified.")
  if watcher is not None and watcher.requested:
    preempted = preemption.Preempted(checkpoints.latest_global_step(model_dir),
                                     tf.train.latest_checkpoint(model_dir))
    _logging.warning("%s Exiting with status %d.", preempted, preempted.code)
    raise preempted
  return loss


def _log_own_steps(runs: int, steps_per_loop: int) -> None:
  """Logs how many steps this process trained: its share, which the global step does not show.

  In a cluster every trainer moves the one global step, so its value says
  nothing of what one task did; the launcher's table reads this line
  (_cluster/task_status.py). With steps_per_loop > 1 a run is a loop that may
  end early (at max_steps), so the count is of loops.
  """
  if steps_per_loop == 1:
    _logging.info("Trained %d steps in this process.", runs)
  else:
    _logging.info("Trained %d loops of up to %d steps in this process.", runs, steps_per_loop)
