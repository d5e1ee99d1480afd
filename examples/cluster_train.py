"""Trains a small linear regression with train_and_evaluate, locally or on a cluster.

The same program runs on every machine; TF_CONFIG says which role each
process takes (docs/distributed.md). Each worker reads its own shard of
the training data: the input_fn takes `input_context` and calls
`dataset.shard(num_input_pipelines, input_pipeline_id)` before shuffling.

    # alone
    python examples/cluster_train.py --model_dir /tmp/linear
    # a local cluster: chief + 2 workers + 1 ps + an evaluator
    python -m estimator_lite.launch --ps 1 --workers 2 --evaluator -- \\
        python examples/cluster_train.py --model_dir /tmp/linear
    # the same, training synchronously (SyncReplicasOptimizer)
    python -m estimator_lite.launch --ps 1 --workers 1 -- \\
        python examples/cluster_train.py --model_dir /tmp/linear_sync --sync

Each training task logs where its variables live and, at the end, how many
steps it ran itself against the final global step; the chief also runs a
chief-only hook (EstimatorSpec's `training_chief_hooks`). The final model is
exported to `MODEL_DIR/export/linear/`.

Run again on a finished model_dir (one that already holds a checkpoint at
`--max_steps`), it trains nothing: every training task logs "Skipping
training since max_steps has already saved", as tf.estimator's did. The
evaluator, as tf.estimator's, still evaluates that final checkpoint once and
so writes another export of it, under a new timestamp; the launcher's summary
says both. To train more, pass a new `--model_dir` or a larger `--max_steps`.

This model's steps take about a millisecond. Under the launcher every worker
still trains (the training tasks make their first steps together, once every
worker has joined), but the evaluator may start late and evaluate only the
final checkpoint. For a demo (or a test), `--hold_workers` makes the chief
wait before its first step until a worker has made one, and
`--hold_evaluator` makes every training task wait until the evaluator has
evaluated once (_HoldHook); a real model's steps are slow enough without them:

    python -m estimator_lite.launch --ps 1 --workers 1 --evaluator -- \\
        python examples/cluster_train.py --model_dir /tmp/linear \\
        --hold_workers --hold_evaluator
"""
import argparse
import json
import os
import time

# Imported before TensorFlow, so that TensorFlow's C++ start-up lines stay
# out of the output (docs/logs.md).
import estimator_lite as est
import tensorflow as tf

NUM_FEATURES = 4
TRUE_WEIGHTS = [[1.0], [-2.0], [0.5], [3.0]]
TRUE_BIAS = 0.25


def make_example(index):
  """Row `index` of the data set, computed from the index (no data embedded in the graph)."""
  x = tf.random.stateless_uniform([NUM_FEATURES], seed=tf.stack([index, 7]),
                                  minval=-1.0, maxval=1.0)
  y = tf.matmul(x[tf.newaxis], tf.constant(TRUE_WEIGHTS))[0] + TRUE_BIAS
  return {"x": x}, y


def train_input_fn(input_context, num_rows, batch_size):
  rows = tf.data.Dataset.range(num_rows)
  # Shard the row ids *before* shuffling, so each worker reads a disjoint part.
  rows = rows.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
  rows = rows.shuffle(1024, seed=input_context.input_pipeline_id).repeat()
  return rows.map(make_example).batch(batch_size)


def eval_input_fn(num_rows, batch_size):
  # Held-out rows: ids past the training ones.
  rows = tf.data.Dataset.range(num_rows, num_rows + 256)
  return rows.map(make_example).batch(batch_size)


class _ReportHook(est.SessionRunHook):
  """Logs where the variables live and, at the end, this task's own step count.

  With steps_per_loop > 1 a Session.run is a loop of up to that many steps,
  so the count is of loops.
  """

  def __init__(self, task, steps_per_loop):
    self._task = task
    self._steps_per_loop = steps_per_loop
    self._local_steps = 0

  def begin(self):
    devices = {v.op.name: v.device for v in tf.compat.v1.global_variables()}
    tf.compat.v1.logging.info("cluster_train %s: variable devices %s", self._task,
                              json.dumps(devices, sort_keys=True))
    self._global_step = tf.compat.v1.train.get_global_step()

  def after_run(self, run_context, run_values):
    self._local_steps += 1

  def end(self, session):
    counted = ("local steps" if self._steps_per_loop == 1 else
               f"loops of up to {self._steps_per_loop} steps")
    tf.compat.v1.logging.info(
        "cluster_train %s: ran %d %s; global step is %d", self._task, self._local_steps,
        counted, session.run(self._global_step))


class _ChiefOnlyHook(est.SessionRunHook):
  """Says once that it ran: EstimatorSpec(training_chief_hooks=...) run on the chief only.

  Put there what only one task should do, such as writing extra summaries or
  files; every training task runs `training_hooks`.
  """

  def __init__(self, task_type):
    self._task_type = task_type

  def after_create_session(self, session, coord):
    del session, coord
    tf.compat.v1.logging.info("cluster_train: chief-only hook ran on %s", self._task_type)


class _HoldHook(est.SessionRunHook):
  """Holds a training task before its first step until the other tasks are under way.

  The chief waits until another training task has made a step (the global
  step moved while the chief stood still); with `eval_dir`, every training
  task also waits until the evaluator has evaluated once (its events are in
  `eval_dir`: the chief saves a checkpoint before its first step). At most
  `max_secs`. Holding before the first step works for synchronous training
  too: a worker can complete a round alone with the tokens the chief has
  not taken yet.
  """

  def __init__(self, task, max_secs, wait_for_workers, eval_dir=None):
    self._task = task
    self._max_secs = max_secs
    self._wait_for_workers = wait_for_workers
    self._eval_events = eval_dir and os.path.join(eval_dir, "events.out.tfevents.*")
    self._held = False

  def begin(self):
    self._global_step = tf.compat.v1.train.get_global_step()

  def before_run(self, run_context):
    if self._held:
      return
    self._held = True
    session = run_context.session
    held_at = session.run(self._global_step)
    start = time.monotonic()
    while not self._may_go_on(session, held_at):
      if time.monotonic() - start > self._max_secs:
        tf.compat.v1.logging.warning("cluster_train %s: stopped waiting after %g secs.",
                                     self._task, self._max_secs)
        break
      time.sleep(0.1)
    tf.compat.v1.logging.info("cluster_train %s: held at global step %d for %.1f secs",
                              self._task, held_at, time.monotonic() - start)

  def _may_go_on(self, session, held_at):
    if self._eval_events and not tf.io.gfile.glob(self._eval_events):
      return False
    return not self._wait_for_workers or session.run(self._global_step) > held_at


def model_fn(features, labels, mode, params, config):
  weights = tf.compat.v1.get_variable("weights", [NUM_FEATURES, 1],
                                      initializer=tf.compat.v1.zeros_initializer())
  bias = tf.compat.v1.get_variable("bias", [1], initializer=tf.compat.v1.zeros_initializer())
  predictions = tf.matmul(features["x"], weights) + bias
  if mode == est.ModeKeys.PREDICT:
    return est.EstimatorSpec(mode, predictions={"y": predictions})
  loss = tf.compat.v1.losses.mean_squared_error(labels, predictions)
  if mode == est.ModeKeys.EVAL:
    return est.EstimatorSpec(mode, loss=loss, eval_metric_ops={
        "rmse": tf.compat.v1.metrics.root_mean_squared_error(labels, predictions)})
  optimizer = tf.compat.v1.train.GradientDescentOptimizer(params["learning_rate"])
  hooks = []
  if params["sync"]:
    # Synchronous training: one update per `replicas` gradients, one from each
    # training task (chief included); global_step advances once per update.
    replicas = max(1, config.num_worker_replicas)
    optimizer = tf.compat.v1.train.SyncReplicasOptimizer(
        optimizer, replicas_to_aggregate=replicas, total_num_replicas=replicas)
    hooks.append(optimizer.make_session_run_hook(config.is_chief))
  train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
  return est.EstimatorSpec(mode, loss=loss, train_op=train_op, training_hooks=hooks,
                           training_chief_hooks=[_ChiefOnlyHook(config.task_type)])


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--model_dir", required=True)
  parser.add_argument("--max_steps", type=int, default=1000)
  parser.add_argument("--batch_size", type=int, default=32)
  parser.add_argument("--num_rows", type=int, default=4096)
  parser.add_argument("--learning_rate", type=float, default=0.1)
  parser.add_argument("--sync", action="store_true", help="use SyncReplicasOptimizer")
  parser.add_argument("--save_checkpoints_steps", type=int, default=100)
  parser.add_argument("--keep_checkpoint_max", type=int, default=5)
  parser.add_argument("--eval_steps", type=int, default=4)
  parser.add_argument("--steps_per_loop", type=int, default=1,
                      help="training steps a Session.run (RunConfig(steps_per_loop))")
  parser.add_argument("--no_pack_ps_transfers", action="store_true",
                      help="send each tensor of a step alone (RunConfig(pack_ps_transfers=False))")
  parser.add_argument("--start_delay_secs", type=float, default=0)
  parser.add_argument("--throttle_secs", type=float, default=0)
  parser.add_argument("--max_worker_delay_secs", type=int, default=None,
                      help="cap, in whole seconds, on the workers' staggered start "
                      "(default: 5 s per worker, at most 60)")
  parser.add_argument("--hold_workers", action="store_true",
                      help="the chief waits before its first step until a worker has made one")
  parser.add_argument("--hold_evaluator", action="store_true",
                      help="training waits before its first step until the evaluator has "
                      "evaluated once (for the launcher's --evaluator)")
  parser.add_argument("--hold_secs", type=float, default=60,
                      help="the longest a --hold_* flag makes a task wait")
  args = parser.parse_args(argv)

  tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)
  config = est.RunConfig(
      model_dir=args.model_dir,
      save_checkpoints_steps=args.save_checkpoints_steps,
      keep_checkpoint_max=args.keep_checkpoint_max,
      experimental_max_worker_delay_secs=args.max_worker_delay_secs,
      steps_per_loop=args.steps_per_loop,
      pack_ps_transfers=not args.no_pack_ps_transfers)
  estimator = est.Estimator(model_fn, config=config, params={
      "learning_rate": args.learning_rate, "sync": args.sync})
  task = f"{config.task_type}:{config.task_id}"
  hooks = [_ReportHook(task, args.steps_per_loop)]
  wait_for_workers = args.hold_workers and config.is_chief and config.num_worker_replicas > 1
  if wait_for_workers or args.hold_evaluator:
    hooks.append(_HoldHook(task, args.hold_secs, wait_for_workers,
                           eval_dir=estimator.eval_dir() if args.hold_evaluator else None))
  train_spec = est.TrainSpec(
      lambda input_context: train_input_fn(input_context, args.num_rows, args.batch_size),
      max_steps=args.max_steps, hooks=hooks)
  # The evaluator (or, alone, this process) exports the final model to
  # model_dir/export/linear/<timestamp>, serving {"x": float32 [batch, 4]}.
  serving_input_fn = est.export.build_raw_serving_input_receiver_fn(
      {"x": tf.TensorSpec([None, NUM_FEATURES], tf.float32)})
  eval_spec = est.EvalSpec(
      lambda: eval_input_fn(args.num_rows, args.batch_size), steps=args.eval_steps,
      exporters=est.FinalExporter("linear", serving_input_fn),
      start_delay_secs=args.start_delay_secs, throttle_secs=args.throttle_secs)
  result = est.train_and_evaluate(estimator, train_spec, eval_spec)
  if result is not None:
    metrics, _ = result
    print(f"cluster_train {task}: final evaluation {metrics}")


if __name__ == "__main__":
  main()
