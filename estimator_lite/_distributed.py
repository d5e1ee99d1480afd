"""Training and evaluation graphs with RunConfig(train_distribute=..., eval_distribute=...).

What tf.estimator did with a `tf.distribute.Strategy`, in graph mode on
TensorFlow 2.21 (see README, "Distribution strategies"):

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
import functools
import warnings

import tensorflow as tf
from tensorflow.python.training import training_util

from estimator_lite import _checkpointing
from estimator_lite import _fn_args
from estimator_lite import _inputs
from estimator_lite import _preemption
from estimator_lite import _strategy_checks
from estimator_lite.mode_keys import ModeKeys

_logging = tf.compat.v1.logging
_LOSS_METRIC_KEY = "loss"
_GLOBAL_STEP_KEY = "global_step"
# Servers this process started for MultiWorkerMirroredStrategy, by task: a
# port can be served only once per process, and a server cannot be stopped.
_SERVERS = {}


# -- sessions ---------------------------------------------------------------------
def _with_local_devices(session_config, strategy):
  """Makes the strategy's logical CPU devices visible to a graph-mode Session.

  A Session built with an explicit ConfigProto sees one CPU unless
  device_count says more, even after
  `tf.config.set_logical_device_configuration` split the CPU; the replicas on
  /cpu:1... would then be soft-placed on /cpu:0 without a word.
  """
  num_cpus = sum(1 for device in strategy.extended.worker_devices
                 if tf.DeviceSpec.from_string(device).device_type == "CPU")
  if num_cpus > session_config.device_count.get("CPU", 1):
    session_config.device_count["CPU"] = num_cpus
  return session_config


def _session_config(base_config, strategy):
  config = tf.compat.v1.ConfigProto()
  config.CopyFrom(base_config)
  # The strategy's own settings: collective group leader and device filters
  # (MultiWorkerMirroredStrategy), isolated session state (MirroredStrategy).
  config = strategy.extended._update_config_proto(config)  # pylint: disable=protected-access
  return _with_local_devices(config, strategy)


def _multi_worker_master(run_config, strategy, session_config):
  """The session target of this task: its own server, started once per process."""
  address = run_config.cluster_spec.task_address(run_config.task_type, run_config.task_id)
  protocol = run_config.protocol or "grpc"
  if getattr(strategy.extended, "_std_server_started", False):
    # Created in eager mode with TF_CONFIG set (as TensorFlow's tutorial
    # does), the strategy already serves this task's address.
    return f"{protocol}://{address}"
  key = (run_config.task_type, run_config.task_id)
  if key not in _SERVERS:
    _logging.info("Starting TensorFlow server for %s:%d at %s.", run_config.task_type,
                  run_config.task_id, address)
    _SERVERS[key] = tf.distribute.Server(
        run_config.cluster_spec, job_name=run_config.task_type,
        task_index=run_config.task_id, config=session_config, protocol=protocol,
        start=True)
  return _SERVERS[key].target


# -- input ------------------------------------------------------------------------
def _distributed_input(estimator, strategy, input_fn, mode):
  """Calls input_fn once per worker through the strategy; returns (features, labels, hooks)."""
  passes_context = "input_context" in _fn_args.fn_args(input_fn)

  def call(input_context):
    if passes_context:
      _logging.info("The input_fn accepts an input_context (%d input pipeline(s), "
                    "pipeline %d, %d replica(s) in sync).",
                    input_context.num_input_pipelines, input_context.input_pipeline_id,
                    input_context.num_replicas_in_sync)
    fn = functools.partial(input_fn, input_context=input_context) if passes_context else input_fn
    result = _inputs.call_input_fn(fn, mode, estimator.params, estimator._config)  # pylint: disable=protected-access
    if not isinstance(result, (tf.data.Dataset, tf.compat.v1.data.Dataset)):
      raise TypeError(
          f"With RunConfig's {type(strategy).__name__}, input_fn must return a "
          f"tf.data.Dataset (each replica takes its own batch from it); it returned "
          f"{type(result).__name__}: {result!r}. Wrap the tensors in "
          "tf.data.Dataset.from_tensor_slices(...).")
    return result

  with warnings.catch_warnings():
    # The strategy's input pipeline reads the dataset's options in graph
    # mode, and tf.data warns about that on every call; nothing to act on.
    warnings.filterwarnings("ignore", message="To make it possible to preserve tf.data options")
    iterator = strategy.make_input_fn_iterator(call)
  batch = iterator.get_next()
  if isinstance(batch, (tuple, list)):
    if len(batch) != 2:
      raise ValueError(
          "input_fn's dataset should yield (features, labels) or features; it "
          f"yields a {type(batch).__name__} of length {len(batch)}.")
    features, labels = batch
  else:
    features, labels = batch, None
  return features, labels, [_inputs.IteratorInitializerHook(iterator)]


# -- model_fn per replica ---------------------------------------------------------
def _call_model_fn_per_replica(estimator, strategy, features, labels, mode, outputs_of):
  """Calls model_fn once per replica.

  Args:
    outputs_of: function EstimatorSpec -> nest of tensors/ops to regroup across
      replicas (an EstimatorSpec itself is not a structure the strategy can
      regroup).

  Returns:
    (regrouped outputs, the first local replica's EstimatorSpec, every local
    replica's EstimatorSpec in replica order).
  """
  specs = {}
  config = estimator._config  # pylint: disable=protected-access

  def replica_fn(features, labels):
    spec = estimator._call_model_fn(features, labels, mode, config)  # pylint: disable=protected-access
    replica_id = tf.get_static_value(
        tf.distribute.get_replica_context().replica_id_in_sync_group)
    specs[len(specs) if replica_id is None else int(replica_id)] = spec
    return outputs_of(spec)

  outputs = strategy.extended.call_for_each_replica(replica_fn, args=(features, labels))
  # Hooks and the scaffold's saver come from one replica, as in tf.estimator.
  return outputs, specs[min(specs)], [specs[k] for k in sorted(specs)]


def _combine_scaffolds(specs, strategy):
  """One Scaffold from the replicas' scaffolds (each replica's model_fn made one)."""
  scaffolds = [spec.scaffold for spec in specs]

  def present(field):
    return [getattr(s, field) for s in scaffolds if getattr(s, field) is not None]

  def grouped(field):
    ops = present(field)
    return strategy.group(ops) if ops else None

  def concatenated(field):
    tensors = present(field)
    if not tensors:
      return None
    return tensors[0] if len(tensors) == 1 else tf.concat(tensors, 0)

  feed_dicts = present("init_feed_dict")
  init_feed_dict = {}
  for feed in feed_dicts:
    init_feed_dict.update(feed)
  init_fns = [s._user_init_fn for s in scaffolds if s._user_init_fn is not None]  # pylint: disable=protected-access
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


def _loss_reduction(graph):
  # tf.estimator's rule: if the v1 optimizer divided each replica's loss by
  # the number of replicas (a mean-reduced loss), report the mean; else the sum.
  if getattr(graph, "_is_loss_scaled_by_optimizer", False):
    return tf.compat.v1.distribute.get_loss_reduction()
  return tf.distribute.ReduceOp.SUM


def _scale_loss_for_estimator(strategy):
  # Makes tf.compat.v1 optimizers divide a mean loss by the number of
  # replicas (they sum the gradients), as they did under tf.estimator.
  scope = getattr(strategy, "_scale_loss_for_estimator_enabled", None)
  if scope is None:
    raise ValueError(
        f"{type(strategy).__name__} on TensorFlow {tf.__version__} lacks the loss "
        "scaling tf.compat.v1 optimizers need under an Estimator; use "
        "tf.distribute.MirroredStrategy or MultiWorkerMirroredStrategy.")
  return scope()


def _create_global_step(strategy, graph):
  global_step = tf.compat.v1.train.get_or_create_global_step(graph)
  # The read that hooks share (StepCounterHook, CheckpointSaverHook, ...). The
  # default one reads the variable's initial_value when it is uninitialised;
  # under MultiWorkerMirroredStrategy that value is the chief's broadcast of
  # the initial value, so a chief-only hook would wait forever for the workers.
  read = strategy.extended.read_var(global_step)
  graph.add_to_collection(training_util.GLOBAL_STEP_READ_KEY, read)
  return global_step, read


def _order_read_before_increments(strategy, global_step, read, graph):
  """Makes hooks see the step as it was when the step ran (as Estimator.train does).

  The optimizer increments every replica's copy of the global step in the
  same Session.run that hooks fetch the read in; a control edge from the read
  to each increment fixes the order.
  """
  handles = {getattr(v, "handle", v).name for v in strategy.experimental_local_results(global_step)}
  for op in graph.get_operations():
    if (op.type in ("AssignAddVariableOp", "AssignAdd") and op.inputs and
        op.inputs[0].name in handles and read.op not in op.control_inputs):
      op._add_control_inputs([read.op])  # pylint: disable=protected-access


# -- train ------------------------------------------------------------------------
def train(estimator, input_fn, hooks, saving_listeners, steps, max_steps):
  """Estimator.train with RunConfig.train_distribute; returns the last loss.

  Raises:
    TypeError: input_fn does not return a tf.data.Dataset.
    ValueError: saving_listeners without a checkpoint saver.
  """
  config = estimator._config  # pylint: disable=protected-access
  strategy = config.train_distribute
  _logging.info("Training with %s over %d replica(s).", type(strategy).__name__,
                strategy.num_replicas_in_sync)
  with tf.Graph().as_default() as graph:
    with strategy.scope(), _scale_loss_for_estimator(strategy):
      tf.compat.v1.set_random_seed(config.tf_random_seed)
      features, labels, input_hooks = _distributed_input(estimator, strategy, input_fn,
                                                         ModeKeys.TRAIN)
      global_step, global_step_read = _create_global_step(strategy, graph)
      (loss, train_op), first_spec, specs = _call_model_fn_per_replica(
          estimator, strategy, features, labels, ModeKeys.TRAIN,
          lambda spec: (spec.loss, spec.train_op))
      _order_read_before_increments(strategy, global_step, global_step_read, graph)
      loss = strategy.reduce(_loss_reduction(graph), loss, axis=None)
      spec = first_spec.replace(
          loss=loss, train_op=strategy.group(train_op),
          scaffold=_combine_scaffolds(specs, strategy), predictions=None,
          eval_metric_ops=None, export_outputs=None)
      return _run_training(estimator, spec, input_hooks + list(hooks), global_step_read,
                           saving_listeners, strategy, stop_at=(steps, max_steps))


def _run_training(estimator, spec, worker_hooks, global_step_read, saving_listeners, strategy,
                  stop_at):
  """Estimator._train_with_spec for a strategy: its session config and, across workers, its sessions.

  Every task of a MultiWorkerMirroredStrategy initialises (or restores) its
  own variables, so each one opens a chief-style session on its own server;
  only the chief writes (checkpoints, summaries, step rate). `stop_at` is
  Estimator._training_hooks'.
  """
  config = estimator._config  # pylint: disable=protected-access
  model_dir = estimator.model_dir
  multi_worker = _strategy_checks.is_multi_worker(strategy)
  is_chief = config.is_chief if multi_worker else True
  session_config = _session_config(config.session_config, strategy)
  master = (_multi_worker_master(config, strategy, session_config) if multi_worker
            else config.master)
  # The checkpoint is checked on every task: one that failed alone would
  # leave the others waiting for it in the initial broadcast.
  hooks, chief_saver = estimator._training_hooks(  # pylint: disable=protected-access
      spec, worker_hooks, global_step_read, saving_listeners, check_checkpoint=True,
      is_chief=is_chief, stop_at=stop_at)
  scaffold = spec.scaffold
  # Across workers a SIGTERM on one task must not stop it alone (the others
  # would wait in the next all-reduce); the default SIGTERM ends the process.
  watcher = None if multi_worker else _preemption.SigtermWatcher()
  if watcher is not None:
    hooks.append(watcher.hook())
  creator = tf.compat.v1.train.ChiefSessionCreator(
      scaffold=scaffold, master=master, config=session_config, checkpoint_dir=model_dir)
  return estimator._run_training_session(  # pylint: disable=protected-access
      lambda: tf.compat.v1.train.MonitoredSession(
          session_creator=creator, hooks=hooks + (chief_saver if is_chief else [])),
      spec, watcher)


# -- evaluate ---------------------------------------------------------------------
def _metric_tuples(spec):
  metrics = {}
  for name, metric in spec.eval_metric_ops.items():
    if not isinstance(metric, tuple):
      raise ValueError(
          f"eval_metric_ops[{name!r}] is a Keras metric object ({metric!r}); with "
          "RunConfig(eval_distribute=...) metrics must be (value, update_op) tuples "
          "such as tf.compat.v1.metrics.*, which aggregate across replicas. Use "
          "one of those, or eval_distribute=None.")
    metrics[name] = metric
  return metrics


def evaluate(estimator, input_fn, hooks, checkpoint_path):
  """Estimator._evaluate_model with RunConfig.eval_distribute; returns the metrics dict.

  Raises:
    ValueError: a metric named "loss", or a Keras metric object.
  """
  config = estimator._config  # pylint: disable=protected-access
  strategy = config.eval_distribute
  with tf.Graph().as_default() as graph, strategy.scope():
    tf.compat.v1.set_random_seed(config.tf_random_seed)
    features, labels, input_hooks = _distributed_input(estimator, strategy, input_fn,
                                                       ModeKeys.EVAL)
    _, global_step_read = _create_global_step(strategy, graph)
    (loss, metrics), first_spec, specs = _call_model_fn_per_replica(
        estimator, strategy, features, labels, ModeKeys.EVAL,
        lambda spec: (spec.loss, _metric_tuples(spec)))
    if _LOSS_METRIC_KEY in metrics:
      raise ValueError(
          'Metric with name "loss" is not allowed, because Estimator already '
          "defines a default metric with the same name. Rename your metric.")
    # v1 metrics keep per-replica totals and sum them when read: the mean
    # loss over all batches of all replicas.
    metrics[_LOSS_METRIC_KEY] = strategy.extended.call_for_each_replica(
        tf.compat.v1.metrics.mean, args=(loss,))
    values, updates = {}, []
    for name, (value, update) in sorted(metrics.items()):
      values[name] = strategy.experimental_local_results(value)[0]
      updates.append(strategy.group(update))
    values[_GLOBAL_STEP_KEY] = global_step_read
    final_ops_hook = tf.compat.v1.train.FinalOpsHook(values)
    all_hooks = (input_hooks + list(hooks) + list(first_spec.evaluation_hooks) +
                 [final_ops_hook])
    scaffold = _combine_scaffolds(specs, strategy)
    if scaffold.saver is None and not graph.get_collection(tf.compat.v1.GraphKeys.SAVERS):
      # The default Saver restores every variable: name any the checkpoint
      # lacks before the restore fails on it (a model_fn's own Saver may
      # restore a subset on purpose).
      _checkpointing.check_checkpoint_matches_graph(checkpoint_path, graph)
    creator = tf.compat.v1.train.ChiefSessionCreator(
        scaffold=scaffold,
        checkpoint_filename_with_path=checkpoint_path,
        master=config.evaluation_master,
        config=_session_config(estimator._session_config_for_local_run(), strategy))  # pylint: disable=protected-access
    update_op = tf.group(*updates)
    _logging.info("Starting evaluation with %s over %d replica(s).",
                  type(strategy).__name__, strategy.num_replicas_in_sync)
    with tf.compat.v1.train.MonitoredSession(session_creator=creator,
                                             hooks=all_hooks) as session:
      while not session.should_stop():
        session.run(update_op)
    return final_ops_hook.final_ops_values
