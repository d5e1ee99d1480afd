"""The training graph: input, model_fn in TRAIN mode, and the global step's reads.

Three shapes, one result (`TrainGraph`): one training step per Session.run
(tf.estimator's) and RunConfig(steps_per_loop=K)'s in-graph loop of K steps
(train_loop.py), built here, and a tf.distribute strategy's replicas, built
by strategy.py. The training session
(estimator_lite/_session/training_session.py) runs any of them the same way.
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Tuple

import attrs
import tensorflow as tf

from estimator_lite._graph import control_joins
from estimator_lite._graph import global_step
from estimator_lite._graph import input_fn as input_fn_lib
from estimator_lite._graph import packed_transfers
from estimator_lite._graph import ps_placement
from estimator_lite._graph import train_loop
from estimator_lite.estimator_spec import EstimatorSpec
from estimator_lite.mode_keys import ModeKeys


@attrs.frozen
class TrainGraph:
  """A training graph ready for a session.

  Attributes:
    spec: the TRAIN EstimatorSpec, its `loss` and `train_op` runnable from
      outside any loop or replica (a loop's last loss, replicas' reduced loss).
    input_hooks: the hooks the input needs (iterator initializers).
    logged_step: the global step the step hook shows and checks: read before
      its increment (one step a run) or after the loop (steps_per_loop > 1).
    stop_hook: the in-graph loop's LoopSizeHook, which sizes the last loop
      and stops at train()'s steps or max_steps (the step hook then does
      not); None for one step a run.
  """

  spec: EstimatorSpec
  input_hooks: Tuple[tf.compat.v1.train.SessionRunHook, ...]
  logged_step: tf.Tensor
  stop_hook: Optional[tf.compat.v1.train.SessionRunHook] = None


def device_fn(config: Any) -> Optional[Callable[..., str]]:
  """Where ops go: RunConfig.device_fn, else the variables on the ps tasks of a ps cluster.

  The variables are placed by RunConfig.ps_placement (ps_placement.py).
  """
  if config.device_fn is not None:
    return config.device_fn
  if config.num_ps_replicas > 0:
    return ps_placement.replica_device_setter(
        config.ps_placement, config.num_ps_replicas,
        f"/job:{config.task_type}/task:{config.task_id}", config.cluster_spec)
  return None


def build(model_fn: Callable[..., EstimatorSpec], input_fn: Callable[..., Any], config: Any,
          params: dict, steps: Optional[int], max_steps: Optional[int]) -> TrainGraph:
  """Builds the training graph (no strategy) in the current default graph, under device_fn(config).

  Args:
    model_fn: `ModelFn` (features, labels, mode, config) -> EstimatorSpec.
    input_fn: the user's input_fn.
    config: the RunConfig.
    params: the Estimator's params (passed to input_fn).
    steps, max_steps: train()'s, for the in-graph loop's last, shorter loop.

  Returns:
    A TrainGraph.

  Raises:
    TypeError / ValueError: bad input_fn results, a bad EstimatorSpec, or a
      model_fn that removed the global step.
  """
  graph = tf.compat.v1.get_default_graph()
  tf.compat.v1.set_random_seed(config.tf_random_seed)
  tf.compat.v1.train.get_or_create_global_step(graph)
  # The read that hooks share must exist before model_fn, as tf.estimator made it.
  read = global_step.create_shared_read(graph)
  if config.steps_per_loop > 1:
    return _build_loop(model_fn, input_fn, config, params, steps, max_steps)
  features, labels, hooks = input_fn_lib.features_and_labels(
      input_fn, ModeKeys.TRAIN, params, config)
  spec = model_fn(features, labels, ModeKeys.TRAIN, config)
  step = tf.compat.v1.train.get_global_step(graph)
  if step is None:
    raise ValueError("model_fn removed the global step; keep "
                     "tf.compat.v1.train.get_or_create_global_step().")
  global_step.order_read_before_increments(graph, read, [step])
  if config.pack_ps_transfers:
    # Last, on the graph as it will run (its cycle check sees every edge).
    packed_transfers.pack_transfers(graph, [spec.train_op, spec.loss, read])
    control_joins.run_joins_where_awaited(graph, [spec.train_op, spec.loss, read])
  return TrainGraph(spec=spec, input_hooks=tuple(hooks), logged_step=read)


def _build_loop(model_fn: Callable[..., EstimatorSpec], input_fn: Callable[..., Any],
                config: Any, params: dict, steps: Optional[int],
                max_steps: Optional[int]) -> TrainGraph:
  """RunConfig(steps_per_loop=K)'s graph: model_fn inside an in-graph loop (train_loop.py)."""
  result = input_fn_lib.call_input_fn(input_fn, ModeKeys.TRAIN, params, config)
  iterator, input_hook = input_fn_lib.dataset_iterator(
      result, f"RunConfig(steps_per_loop={config.steps_per_loop})")

  def next_batch() -> Tuple[Any, Any]:
    features, labels, _ = input_fn_lib.parse_input_fn_result(iterator.get_next())
    return features, labels

  # Other trainers move a shared global step too: the loop then reads it and
  # ends at the last step (train_loop.py).
  shared_step = config.num_ps_replicas > 0 and config.num_worker_replicas > 1
  spec, loop = train_loop.build_training_loop(
      next_batch, lambda features, labels: model_fn(features, labels, ModeKeys.TRAIN, config),
      config.steps_per_loop, stop_at_global_step=shared_step, max_steps=max_steps,
      pack_transfers=config.pack_ps_transfers)
  stop_hook = train_loop.LoopSizeHook(loop, config.steps_per_loop, steps, max_steps)
  return TrainGraph(spec=spec, input_hooks=(input_hook,), logged_step=loop.global_step,
                    stop_hook=stop_hook)
