"""Training and evaluation graphs with RunConfig(train_distribute=..., eval_distribute=...).

What tf.estimator did with a `tf.distribute.Strategy`, in graph mode on
TensorFlow 2.21 (see docs/strategies.md):

* input_fn is called once per worker process, inside the strategy, with an
  `input_context` (number of input pipelines = workers, this pipeline's id,
  replicas in sync); each replica takes its own batch from the dataset, so
  input_fn's batch size is the per-replica batch and a step trains on
  batch x replicas examples.
* model_fn is called once per replica (`call_for_each_replica`); variables
  created under the strategy are mirrored and checkpointed under their plain
  names, so checkpoints are those of single-device training.
* A `tf.compat.v1` optimizer aggregates the replicas' gradients (merge_call)
  and applies them once per step; global_step advances once per step. As in
  tf.estimator, a loss reduced by mean is divided by the number of replicas
  before the gradients are summed, so the update is that of the global batch.
* The reported loss (logs, summaries, the returned loss) is the mean of the
  replicas' losses when the optimizer scaled them that way, else their sum:
  tf.estimator's rule.

MultiWorkerMirroredStrategy across TF_CONFIG's chief and workers: every task
builds the same graph, initialises or restores its own copy of the variables
(the chief's initial values are broadcast), and runs its own session against
its own gRPC server; the steps meet in all-reduces. Only the chief writes
checkpoints and summaries. A task that dies leaves the others blocked in the
next all-reduce (it has no timeout), so restart all training tasks together;
they resume from the latest checkpoint.
"""

from __future__ import annotations

import contextlib
import warnings
from typing import Any, Callable, Dict, Iterator, List, Tuple

import tensorflow as tf

from estimator_lite._graph import eval_graph
from estimator_lite._graph import global_step
from estimator_lite._graph import input_fn as input_fn_lib
from estimator_lite._graph import train_graph
from estimator_lite._util import tf_internals
from estimator_lite._util import validation
from estimator_lite.estimator_spec import EstimatorSpec
from estimator_lite.mode_keys import ModeKeys

_logging = tf.compat.v1.logging


@contextlib.contextmanager
def training_scope(strategy: tf.distribute.Strategy) -> Iterator[None]:
  """The strategy's scope, with tf.compat.v1 optimizers scaling a mean loss as tf.estimator's did.

  A v1 optimizer sums the replicas' gradients; under an Estimator it divides
  a mean-reduced loss by the number of replicas first, so the update is that
  of the global batch.

  Raises:
    ValueError: the strategy lacks that scaling on this TensorFlow.
  """
  scaling = tf_internals.estimator_loss_scaling(strategy)
  if scaling is None:
    raise ValueError(
        f"{type(strategy).__name__} on TensorFlow {tf.__version__} lacks the loss "
        "scaling tf.compat.v1 optimizers need under an Estimator; use "
        "tf.distribute.MirroredStrategy or MultiWorkerMirroredStrategy.")
  with strategy.scope(), scaling():
    yield


# -- input ------------------------------------------------------------------------
def _distributed_input(strategy: tf.distribute.Strategy, input_fn: Callable[..., Any],
                       mode: str, params: dict, config: Any) -> Tuple[Any, Any, list]:
  """Calls input_fn once per worker through the strategy; returns (features, labels, hooks)."""

  def call(input_context: tf.distribute.InputContext) -> Any:
    return input_fn_lib.require_dataset(
        input_fn_lib.call_input_fn(input_fn, mode, params, config, input_context),
        f"RunConfig's {type(strategy).__name__} (each replica takes its own batch from it)")

  with warnings.catch_warnings():
    # The strategy's input pipeline reads the dataset's options in graph
    # mode, and tf.data warns about that on every call; nothing to act on.
    warnings.filterwarnings("ignore", message="To make it possible to preserve tf.data options")
    iterator = strategy.make_input_fn_iterator(call)
  features, labels = input_fn_lib.split_features_and_labels(iterator.get_next())
  return features, labels, [input_fn_lib.IteratorInitializerHook(iterator)]


# -- model_fn per replica ---------------------------------------------------------
def _call_model_fn_per_replica(strategy: tf.distribute.Strategy,
                               model_fn: Callable[..., EstimatorSpec], features: Any,
                               labels: Any, mode: str, config: Any,
                               outputs_of: Callable[[EstimatorSpec], Any]
                               ) -> Tuple[Any, EstimatorSpec, List[EstimatorSpec]]:
  """Calls model_fn once per replica.

  Args:
    outputs_of: function EstimatorSpec -> nest of tensors/ops to regroup across
      replicas (an EstimatorSpec itself is not a structure the strategy can
      regroup).

  Returns:
    (regrouped outputs, the first local replica's EstimatorSpec, every local
    replica's EstimatorSpec in replica order).
  """
  specs: Dict[int, EstimatorSpec] = {}

  def replica_fn(features: Any, labels: Any) -> Any:
    spec = model_fn(features, labels, mode, config)
    replica_id = tf.get_static_value(
        tf.distribute.get_replica_context().replica_id_in_sync_group)
    specs[len(specs) if replica_id is None else int(replica_id)] = spec
    return outputs_of(spec)

  outputs = strategy.extended.call_for_each_replica(replica_fn, args=(features, labels))
  # Hooks and the scaffold's saver come from one replica, as in tf.estimator.
  return outputs, specs[min(specs)], [specs[k] for k in sorted(specs)]


def _combine_scaffolds(specs: List[EstimatorSpec],
                       strategy: tf.distribute.Strategy) -> tf.compat.v1.train.Scaffold:
  """One Scaffold from the replicas' scaffolds (each replica's model_fn made one)."""
  scaffolds = [spec.scaffold for spec in specs]

  def present(field: str) -> list:
    return [getattr(s, field) for s in scaffolds if getattr(s, field) is not None]

  def grouped(field: str) -> Any:
    ops = present(field)
    return strategy.group(ops) if ops else None

  def concatenated(field: str) -> Any:
    tensors = present(field)
    if not tensors:
      return None
    return tensors[0] if len(tensors) == 1 else tf.concat(tensors, 0)

  init_feed_dict: dict = {}
  for feed in present("init_feed_dict"):
    init_feed_dict.update(feed)
  init_fns = [fn for fn in map(tf_internals.scaffold_user_init_fn, scaffolds) if fn is not None]
  savers = present("saver")
  return tf.compat.v1.train.Scaffold(
      init_op=grouped("init_op"),
      init_feed_dict=init_feed_dict or None,
      init_fn=init_fns[0] if init_fns else None,
      ready_op=concatenated("ready_op"),
      ready_for_local_init_op=concatenated("ready_for_local_init_op"),
      local_init_op=grouped("local_init_op"),
      summary_op=grouped("summary_op"),
      saver=savers[0] if savers else None)


def _replicas_of_model_fn(strategy: tf.distribute.Strategy, model_fn: Callable[..., EstimatorSpec],
                          input_fn: Callable[..., Any], config: Any, params: dict, mode: str,
                          outputs_of: Callable[[EstimatorSpec], Any]) -> tuple:
  """The input, the global step and model_fn on every replica, in the current default graph.

  Returns:
    (regrouped outputs, first replica's EstimatorSpec, every replica's
    EstimatorSpec, the input's hooks, the global step, the strategy's read of
    it shared by the hooks (global_step.py)).
  """
  _logging.info("%s with %s over %d replica(s).",
                "Training" if mode == ModeKeys.TRAIN else "Evaluating",
                type(strategy).__name__, strategy.num_replicas_in_sync)
  graph = tf.compat.v1.get_default_graph()
  tf.compat.v1.set_random_seed(config.tf_random_seed)
  features, labels, input_hooks = _distributed_input(strategy, input_fn, mode, params, config)
  step = tf.compat.v1.train.get_or_create_global_step(graph)
  read = global_step.create_shared_read(graph, strategy.extended.read_var(step))
  outputs, first_spec, specs = _call_model_fn_per_replica(
      strategy, model_fn, features, labels, mode, config, outputs_of)
  return outputs, first_spec, specs, input_hooks, step, read


# -- train ------------------------------------------------------------------------
def build_train_graph(model_fn: Callable[..., EstimatorSpec], input_fn: Callable[..., Any],
                      config: Any, params: dict) -> train_graph.TrainGraph:
  """Builds the training graph over RunConfig.train_distribute's replicas.

  Call it in a fresh default graph, inside `training_scope(strategy)`.

  Raises:
    TypeError: input_fn does not return a tf.data.Dataset.
  """
  strategy = config.train_distribute
  graph = tf.compat.v1.get_default_graph()
  (loss, train_op), first_spec, specs, input_hooks, step, read = _replicas_of_model_fn(
      strategy, model_fn, input_fn, config, params, ModeKeys.TRAIN,
      lambda spec: (spec.loss, spec.train_op))
  global_step.order_read_before_increments(graph, read,
                                           strategy.experimental_local_results(step))
  # tf.estimator's rule: if the v1 optimizer divided each replica's loss by
  # the number of replicas (a mean-reduced loss), report the mean; else the sum.
  reduction = (tf.compat.v1.distribute.get_loss_reduction()
               if tf_internals.loss_scaled_by_optimizer(graph) else tf.distribute.ReduceOp.SUM)
  spec = first_spec.replace(
      loss=strategy.reduce(reduction, loss, axis=None), train_op=strategy.group(train_op),
      scaffold=_combine_scaffolds(specs, strategy), predictions=None,
      eval_metric_ops=None, export_outputs=None)
  return train_graph.TrainGraph(spec=spec, input_hooks=tuple(input_hooks), logged_step=read)


# -- evaluate ---------------------------------------------------------------------
def build_eval_graph(model_fn: Callable[..., EstimatorSpec], input_fn: Callable[..., Any],
                     config: Any, params: dict,
                     hooks: Any) -> eval_graph.EvalGraph:
  """Builds the eval graph over RunConfig.eval_distribute's replicas.

  Call it in a fresh default graph, inside `config.eval_distribute.scope()`.

  Raises:
    ValueError: a metric named "loss".
  """
  strategy = config.eval_distribute
  (loss, metrics), first_spec, specs, input_hooks, _, read = _replicas_of_model_fn(
      strategy, model_fn, input_fn, config, params, ModeKeys.EVAL,
      # A Keras metric's (result, update) pair was made by EstimatorSpec in
      # its replica: the variables are sync-on-read and result() a merge call,
      # so like tf.compat.v1.metrics it aggregates every replica's batches.
      lambda spec: (spec.loss, dict(spec.eval_metric_ops)))
  validation.check_metric_names(metrics)
  # v1 metrics keep per-replica totals and sum them when read: the mean
  # loss over all batches of all replicas.
  metrics[validation.LOSS_KEY] = strategy.extended.call_for_each_replica(
      tf.compat.v1.metrics.mean, args=(loss,))
  values, updates = {}, []
  for name, (value, update) in sorted(metrics.items()):
    values[name] = strategy.experimental_local_results(value)[0]
    updates.append(strategy.group(update))
  values[validation.GLOBAL_STEP_KEY] = read
  return eval_graph.EvalGraph(
      scaffold=_combine_scaffolds(specs, strategy), update_op=tf.group(*updates),
      values=values,
      hooks=tuple(input_hooks) + tuple(hooks) + tuple(first_spec.evaluation_hooks))
