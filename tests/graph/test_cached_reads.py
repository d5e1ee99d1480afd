"""The in-graph loop on a ps cluster: one message from the ps an iteration, same values.

RunConfig(steps_per_loop=K)'s loop body is rewritten (cached_reads.py, then
packed_transfers.py) so that an iteration reads its variables from a copy on
the trainer, refreshed by the values the ps sends back after the update, in
one message with everything else the ps sends. Real servers (a ps and a
worker, in this process: tests/conftest.py) run it. What the worker receives is
counted from the step stats of a traced run (each `RecvTensor` it records is
one tensor it received from the ps, one RPC), what the ps receives from its
partition graph (each `_Recv` fed from the worker).
"""
import numpy as np
import pytest
import tensorflow as tf
from conftest import cross_task_receives

from estimator_lite._graph import cached_reads
from estimator_lite._graph import placement
from estimator_lite._graph import train_loop
from estimator_lite.estimator_spec import EstimatorSpec
from estimator_lite.mode_keys import ModeKeys

v1 = tf.compat.v1
WORKER, PS = "/job:worker/task:0", "/job:ps/task:0"
# Every wait is bounded: a step that waits for itself fails instead of hanging.
OPERATION_TIMEOUT_MS = 30_000


def _model_fn(x, y, read_after_update=False, partitioned=False, grouped=False):
  # Partitioned: the kernel's rows in two parts, one on each ps where there are two.
  kernel = v1.get_variable("kernel", [3, 1], initializer=v1.constant_initializer(0.5),
                           partitioner=v1.fixed_size_partitioner(2) if partitioned else None)
  bias = v1.get_variable("bias", [1], initializer=v1.zeros_initializer())
  loss = tf.reduce_mean(tf.square(tf.matmul(x, kernel) + bias - y))
  train_op = v1.train.GradientDescentOptimizer(0.05).minimize(
      loss, global_step=v1.train.get_global_step())
  if read_after_update:
    # A read of the kernel ordered after the update, used on the worker (the
    # product) and kept on the ps: it must see this iteration's update, so it
    # is not read from the copy.
    seen = v1.get_variable("seen_kernel", [3, 1], initializer=v1.zeros_initializer())
    with tf.control_dependencies([train_op]):
      late = kernel.read_value()
    train_op = seen.assign(late * 2.0).op
  if grouped:
    # A train op on the worker that waits for the optimizer's (tf.group
    # would place it with the optimizer's op, on the ps).
    with tf.control_dependencies([train_op]):
      train_op = tf.no_op()
  return EstimatorSpec(ModeKeys.TRAIN, loss=loss, train_op=train_op)


def _build(spec, *, pack, stop_at_global_step, steps_per_loop, last_step=None,
           read_after_update=False, partitioned=False, grouped=False):
  """A linear model trained as Estimator places it on a ps cluster (each of its ps tasks).

  steps_per_loop=1: one step a run, no loop. Returns (graph, train op, global
  step after a run, the TrainingLoop or None, init op, variables by name).
  """
  graph = tf.Graph()
  device_fn = v1.train.replica_device_setter(ps_tasks=spec.num_tasks("ps"),
                                            worker_device=WORKER, merge_devices=True,
                                            cluster=spec)
  with graph.as_default(), graph.device(device_fn):
    v1.train.get_or_create_global_step()
    rng = np.random.RandomState(0)
    next_batch = v1.data.make_one_shot_iterator(tf.data.Dataset.from_tensor_slices((
        rng.randn(64, 3).astype(np.float32),
        rng.randn(64, 1).astype(np.float32))).batch(4).repeat()).get_next

    def model_fn(x, y):
      return _model_fn(x, y, read_after_update, partitioned, grouped)

    loop = None
    if steps_per_loop == 1:
      train_op = model_fn(*next_batch()).train_op
      with tf.control_dependencies([train_op]):
        step = v1.train.get_global_step().read_value()
    else:
      loop_spec, loop = train_loop.build_training_loop(
          next_batch, model_fn, steps_per_loop, stop_at_global_step=stop_at_global_step,
          max_steps=last_step, pack_transfers=pack)
      train_op, step = loop_spec.train_op, loop.global_step
    init = v1.global_variables_initializer()
    variables = {v.op.name: v for v in v1.global_variables()}
  return graph, train_op, step, loop, init, variables


def _session(worker, graph):
  return v1.Session(worker.target, graph=graph,
                    config=v1.ConfigProto(operation_timeout_in_ms=OPERATION_TIMEOUT_MS))


def _train(spec, worker, *, runs, **build_args):
  """Runs the train op `runs` times; returns (variables, global step after each run)."""
  graph, train_op, step, _, init, variables = _build(spec, **build_args)
  with _session(worker, graph) as session:
    session.run(init)
    steps = [int(session.run([train_op, step])[1]) for _ in range(runs)]
    return session.run(variables), steps


def _received_by_worker(run_metadata):
  """Tensors the worker received from the ps in a traced run (its RecvTensor calls)."""
  return sum(1 for device in run_metadata.step_stats.dev_stats
             if device.device.startswith("/job:worker/")
             for node in device.node_stats if node.node_name == "RecvTensor")


def _sent_to_ps(run_metadata):
  """Tensors the ps's partition graph receives from the worker: a message each, each time it runs."""
  return sum(1 for partition in run_metadata.partition_graphs for node in partition.node
             if node.op == "_Recv" and node.device.startswith("/job:ps/")
             and node.attr["send_device"].s.decode().startswith("/job:worker/"))


def _messages(spec, worker, *, pack, stop_at_global_step):
  """(tensors the worker receives from the ps an iteration, receives in the ps's partition graph).

  The first is counted in runs of 2 and 4 iterations (their difference,
  halved). The ps's own trace is not used: its count of RecvTensor calls
  varies from run to run where the worker runs ahead.
  """
  graph, train_op, _, loop, init, _ = _build(
      spec, pack=pack, stop_at_global_step=stop_at_global_step, steps_per_loop=4)
  with _session(worker, graph) as session:
    session.run(init)
    runs = []
    for size in (2, 4):
      metadata = v1.RunMetadata()
      session.run(train_op, {loop.size: size},
                  options=v1.RunOptions(trace_level=v1.RunOptions.FULL_TRACE,
                                        output_partition_graphs=True),
                  run_metadata=metadata)
      runs.append(metadata)
  return (_received_by_worker(runs[1]) - _received_by_worker(runs[0])) / 2, _sent_to_ps(runs[1])


@pytest.mark.parametrize("stop_at_global_step", [False, True], ids=["one_trainer", "shared"])
def test_loop_iterations_train_bit_for_bit_as_one_step_a_run(ps_and_worker, stop_at_global_step):
  spec, worker, _ = ps_and_worker
  # Three loops of 5: 15 steps, or 12 where the loop ends at the last step.
  steps = 12 if stop_at_global_step else 15
  loop_args = dict(stop_at_global_step=stop_at_global_step, steps_per_loop=5, last_step=12,
                   runs=3)
  stepwise, _ = _train(spec, worker, pack=False, stop_at_global_step=False, steps_per_loop=1,
                       runs=steps)
  plain, plain_steps = _train(spec, worker, pack=False, **loop_args)
  cached, cached_steps = _train(spec, worker, pack=True, **loop_args)

  # Each iteration read what the previous one's update left, from the copy
  # or from the ps: the variables are bit for bit those of one step a run.
  for name, value in stepwise.items():
    np.testing.assert_array_equal(plain[name], value, err_msg=name)
    np.testing.assert_array_equal(cached[name], value, err_msg=name)
  expected_steps = [5, 10, 12] if stop_at_global_step else [5, 10, 15]
  assert cached_steps == plain_steps == expected_steps, (cached_steps, plain_steps)


@pytest.mark.parametrize("stop_at_global_step", [False, True], ids=["one_trainer", "shared"])
def test_an_iteration_receives_one_message_from_the_ps(ps_and_worker, stop_at_global_step):
  spec, worker, _ = ps_and_worker
  plain_received, plain_sent = _messages(spec, worker, pack=False,
                                         stop_at_global_step=stop_at_global_step)
  cached_received, cached_sent = _messages(spec, worker, pack=True,
                                           stop_at_global_step=stop_at_global_step)
  # From the ps: the updated kernel and bias (and, shared, the global step
  # for the loop's condition), in one message that also says the update is
  # done. Without the rewrite: the kernel and the bias read at the start, and
  # the word that the update is done (and the global step).
  assert cached_received == 1, (plain_received, cached_received)
  assert plain_received == (4 if stop_at_global_step else 3), (plain_received, cached_received)
  # To the ps: the two gradients and the learning rate (a constant of the
  # loop body, computed each iteration) in one message, in place of three.
  assert plain_sent - cached_sent == 2, (plain_sent, cached_sent)


def test_a_read_ordered_after_the_update_still_sees_the_update(ps_and_worker):
  spec, worker, _ = ps_and_worker
  loop_args = dict(stop_at_global_step=False, read_after_update=True, runs=3)
  stepwise, _ = _train(spec, worker, pack=False, steps_per_loop=1,
                       **dict(loop_args, runs=15))
  cached, steps = _train(spec, worker, pack=True, steps_per_loop=5, **loop_args)
  assert steps == [5, 10, 15]
  for name, value in stepwise.items():
    np.testing.assert_array_equal(cached[name], value, err_msg=name)


@pytest.mark.parametrize("grouped", [False, True], ids=["train_op_on_ps", "grouped_on_worker"])
@pytest.mark.parametrize("stop_at_global_step", [False, True], ids=["one_trainer", "shared"])
def test_a_variable_partitioned_over_two_ps_trains_bit_for_bit_in_the_loop(
    two_ps_and_worker, stop_at_global_step, grouped):
  spec, worker, _ = two_ps_and_worker
  steps = 12 if stop_at_global_step else 15
  loop_args = dict(stop_at_global_step=stop_at_global_step, steps_per_loop=5, last_step=12,
                   runs=3, partitioned=True, grouped=grouped)
  stepwise, _ = _train(spec, worker, pack=False, stop_at_global_step=False, steps_per_loop=1,
                       runs=steps, partitioned=True)
  plain, _ = _train(spec, worker, pack=False, **loop_args)
  cached, cached_steps = _train(spec, worker, pack=True, **loop_args)
  # One part of the kernel on each ps: each part is read from its own copy,
  # which what that ps sends back after its update refreshes.
  assert {"kernel/part_0", "kernel/part_1"} <= stepwise.keys(), stepwise.keys()
  for name, value in stepwise.items():
    np.testing.assert_array_equal(plain[name], value, err_msg=name)
    np.testing.assert_array_equal(cached[name], value, err_msg=name)
  assert cached_steps == ([5, 10, 12] if stop_at_global_step else [5, 10, 15])


@pytest.mark.parametrize("grouped", [False, True], ids=["train_op_on_ps", "grouped_on_worker"])
def test_what_the_iteration_waits_for_includes_the_whole_train_op(two_ps_and_worker, grouped):
  """Each variable is read again after its own update; the next iteration still waits for all.

  An update that no cached read waits for (the global step's increment, an
  embedding's rows, a head's group on the worker) must be done before the
  next iteration starts, or that iteration could read what it left.
  """
  spec, _, _ = two_ps_and_worker
  graph = tf.Graph()
  built = []

  def create_outside_the_body(next_creator, **kwargs):
    with tf.init_scope():
      return next_creator(**kwargs)

  def body(i):
    with tf.variable_creator_scope(create_outside_the_body):
      model = _model_fn(tf.ones([4, 3]), tf.ones([4, 1]), partitioned=True, grouped=grouped)
    body_graph = v1.get_default_graph()
    cached = cached_reads.cache_reads(body_graph, model.train_op, [model.train_op, model.loss])
    built.append((cached, model.train_op in placement.step_ops(body_graph, cached.done)))
    with tf.control_dependencies(cached.done):
      return i + 1

  with graph.as_default(), graph.device(v1.train.replica_device_setter(
      ps_tasks=2, worker_device=WORKER, merge_devices=True, cluster=spec)):
    v1.train.get_or_create_global_step()
    v1.while_loop(lambda i: i < 2, body, [tf.constant(0)])
  (cached, waits_for_the_train_op), = built
  assert len(cached.fills) == 3, cached  # the kernel's two parts and the bias
  assert waits_for_the_train_op


def test_with_two_ps_each_reads_its_part_again_without_waiting_for_the_other(two_ps_and_worker):
  spec, worker, _ = two_ps_and_worker
  graph, train_op, _, _, init, _ = _build(spec, pack=True, stop_at_global_step=False,
                                          steps_per_loop=4, partitioned=True)
  with _session(worker, graph) as session:
    session.run(init)
    metadata = v1.RunMetadata()
    session.run(train_op, options=v1.RunOptions(output_partition_graphs=True),
                run_metadata=metadata)
  # What an iteration sends from task to task, from the partition graphs.
  in_the_loop = {pair: [name for name in names if "train_loop/body/" in name]
                 for pair, names in cross_task_receives(metadata).items()}
  ps0, ps1 = "/job:ps/task:0", "/job:ps/task:1"
  # Between the ps tasks, one message: the optimizer's join of the updates
  # (ps1's is done) for the global step's increment on ps0. ps1 reads its
  # part of the kernel again after its own update, not after the increment,
  # which would be a message back from ps0 every iteration.
  assert len(in_the_loop[(ps1, ps0)]) == 1, in_the_loop
  assert not in_the_loop.get((ps0, ps1)), in_the_loop
  # The trainer receives one message from each ps: the updated values (and
  # from ps0 word that the train op is done).
  assert len(in_the_loop[(ps0, WORKER)]) == len(in_the_loop[(ps1, WORKER)]) == 1, in_the_loop
