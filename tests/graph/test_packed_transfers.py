"""pack_transfers: a training step's small cross-task tensors travel as one message each way.

Real servers (a ps and a worker, in this process, on free ports from the OS:
tests/conftest.py) run the step; RunMetadata's partition graphs show what crosses
between the tasks (each `_Recv` fed from the other task is one RecvTensor RPC
a step). tests/graph/test_cached_reads.py covers the in-graph loop's body.
"""
import numpy as np
import pytest
import tensorflow as tf
from conftest import cross_task_receives, train_and_receive

from estimator_lite._graph import global_step
from estimator_lite._graph import packed_transfers

v1 = tf.compat.v1
WORKER, PS = "/job:worker/task:0", "/job:ps/task:0"
# Every wait is bounded: a step that waits for itself fails instead of hanging.
OPERATION_TIMEOUT_MS = 30_000


def _build(spec, *, pack, read_after_update=False, resource=True):
  """A linear model with an embedding, placed as Estimator places it on a ps cluster.

  Returns (graph, fetches, ids placeholder, variables, init op, packets).
  """
  graph = tf.Graph()
  device_fn = v1.train.replica_device_setter(ps_tasks=1, worker_device=WORKER,
                                            merge_devices=True, cluster=spec)
  with graph.as_default(), graph.device(device_fn):
    step = v1.train.get_or_create_global_step()
    read = global_step.create_shared_read(graph)
    # The batch comes from an input pipeline, as in training (a constant
    # would let Grappler fold the step into another arithmetic).
    x, y = v1.data.make_one_shot_iterator(tf.data.Dataset.from_tensors((
        np.linspace(-1.0, 1.0, 24, dtype=np.float32).reshape(8, 3),
        np.arange(8, dtype=np.float32).reshape(8, 1))).repeat()).get_next()
    ids = v1.placeholder(tf.int64, [None], name="ids")  # rows of unknown number
    # resource=False: TF1's ref variables, as after tf.compat.v1.disable_v2_behavior().
    kernel = v1.get_variable("kernel", [3, 1], initializer=v1.constant_initializer(0.5),
                             use_resource=resource)
    bias = v1.get_variable("bias", [1], initializer=v1.zeros_initializer(),
                           use_resource=resource)
    table = v1.get_variable("table", [10, 1], initializer=v1.constant_initializer(0.25),
                            use_resource=resource)
    rows = tf.nn.embedding_lookup(table, ids)
    prediction = tf.matmul(x, kernel) + bias + tf.reduce_sum(rows)
    loss = tf.reduce_mean(tf.square(prediction - y))
    train_op = v1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    global_step.order_read_before_increments(graph, read, [step])
    fetches = [train_op, loss, read]
    if read_after_update:
      # A read ordered after this step's update, used on the worker: packing
      # it with the step's first reads would make the step wait for itself.
      with tf.control_dependencies([train_op]):
        fetches.append(kernel.read_value() * 2.0)
    packets = packed_transfers.pack_transfers(graph, fetches) if pack else []
    init = v1.global_variables_initializer()
  return graph, fetches, ids, {"kernel": kernel, "bias": bias, "table": table}, init, packets


def _train(spec, worker, *, pack, steps=5, read_after_update=False, resource=True):
  graph, fetches, ids, variables, init, packets = _build(
      spec, pack=pack, read_after_update=read_after_update, resource=resource)
  config = v1.ConfigProto(operation_timeout_in_ms=OPERATION_TIMEOUT_MS)
  with v1.Session(worker.target, graph=graph, config=config) as session:
    session.run(init)
    results = []
    for step in range(steps):
      metadata = v1.RunMetadata()
      results.append(session.run(
          fetches, {ids: np.arange(step % 3 + 1)},
          options=v1.RunOptions(output_partition_graphs=True), run_metadata=metadata)[1:])
    values = session.run(variables)
  return results, values, cross_task_receives(metadata), packets


@pytest.mark.parametrize("resource", [True, False], ids=["resource", "ref"])
def test_a_step_sends_one_message_each_way_and_trains_bit_for_bit_as_before(ps_and_worker, resource):
  spec, worker, _ = ps_and_worker
  plain_results, plain_values, plain_receives, _ = _train(
      spec, worker, pack=False, resource=resource)
  packed_results, packed_values, packed_receives, packets = _train(
      spec, worker, pack=True, resource=resource)

  # The same losses, global steps and variables, bit for bit.
  assert [(float(l), int(s)) for l, s in packed_results] == [
      (float(l), int(s)) for l, s in plain_results]
  assert [int(s) for _, s in packed_results] == [0, 1, 2, 3, 4]  # read before the increment
  for name, value in plain_values.items():
    np.testing.assert_array_equal(packed_values[name], value, err_msg=name)

  # To the worker: the reads of the kernel, the bias and the global step; to
  # the ps: the two dense gradients. The embedding's rows and its sparse
  # gradient (shapes known only at run time) travel alone.
  assert [(p.source, p.destination) for p in packets] == [(PS, WORKER), (WORKER, PS)], packets
  to_worker, to_ps = packets
  assert len(to_worker.tensors) == 3 and len(to_ps.tensors) == 2, packets
  assert any(name.startswith("global_step/") for name in to_worker.tensors), packets
  assert not any(name.startswith("embedding_lookup") or "Unique" in name
                 for packet in packets for name in packet.tensors), packets
  # The learning rate, a constant made on the worker, was sent to the ps every
  # step; now the ps has a copy of its own.
  def learning_rates(receives):
    return [name for name in receives[(WORKER, PS)] if name.endswith("/learning_rate")]
  assert len(learning_rates(plain_receives)) == 1, plain_receives
  assert learning_rates(packed_receives) == [], packed_receives
  # Each packet of n tensors is one message a step where there were n.
  copied = {(WORKER, PS): 1, (PS, WORKER): 0}
  for packet in packets:
    link = (packet.source, packet.destination)
    assert (len(packed_receives[link]) ==
            len(plain_receives[link]) - (len(packet.tensors) - 1) - copied[link]), (
                link, plain_receives, packed_receives)


def test_a_read_ordered_after_the_update_is_not_packed_and_the_step_runs(ps_and_worker):
  spec, worker, _ = ps_and_worker
  plain_results, plain_values, _, _ = _train(spec, worker, pack=False, read_after_update=True)
  packed_results, packed_values, _, packets = _train(
      spec, worker, pack=True, read_after_update=True)
  packed = {name for packet in packets for name in packet.tensors}
  assert len(packets) == 2 and "Read/ReadVariableOp:0" not in packed, packets
  # The step ran (it did not wait for itself: every wait is bounded by
  # OPERATION_TIMEOUT_MS) and the late read saw this step's update.
  for plain, packed_result in zip(plain_results, packed_results):
    np.testing.assert_array_equal(packed_result[2], plain[2])
  np.testing.assert_array_equal(packed_results[-1][2], packed_values["kernel"] * 2.0)


def test_a_graph_on_one_task_is_left_as_it_is():
  graph = tf.Graph()
  with graph.as_default():
    step = v1.train.get_or_create_global_step()
    weight = v1.get_variable("w", [2], initializer=v1.ones_initializer())
    loss = tf.reduce_sum(weight * weight)
    train_op = v1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
  before = len(graph.get_operations())
  assert packed_transfers.pack_transfers(graph, [train_op, loss]) == []
  assert len(graph.get_operations()) == before


def _train_lookup(spec, worker, *, pack, steps=4):
  """An embedding looked up on the ps with ids the worker's input computes, and dense layers.

  Returns (variables after `steps` steps, cross-task receives of the last step, packets).
  """
  graph = tf.Graph()
  device_fn = v1.train.replica_device_setter(ps_tasks=1, worker_device=WORKER,
                                            merge_devices=True, cluster=spec)
  with graph.as_default(), graph.device(device_fn):
    step = v1.train.get_or_create_global_step()
    x, ids, y = v1.data.make_one_shot_iterator(tf.data.Dataset.from_tensors((
        np.linspace(-1.0, 1.0, 24, dtype=np.float32).reshape(8, 3),
        np.arange(8, dtype=np.int64) % 5,
        np.arange(8, dtype=np.float32).reshape(8, 1))).repeat()).get_next()
    table = v1.get_variable("table", [5, 2], initializer=v1.constant_initializer(0.25))
    kernel = v1.get_variable("kernel", [3, 1], initializer=v1.constant_initializer(0.5))
    bias = v1.get_variable("bias", [1], initializer=v1.zeros_initializer())
    rows = tf.nn.embedding_lookup(table, ids)  # on the ps, with the ids of this batch
    prediction = tf.matmul(x, kernel) + bias + tf.reduce_sum(rows, axis=1, keepdims=True)
    loss = tf.reduce_mean(tf.square(prediction - y))
    train_op = v1.train.AdagradOptimizer(0.1).minimize(loss, global_step=step)
    packets = packed_transfers.pack_transfers(graph, [train_op, loss]) if pack else []
    init = v1.global_variables_initializer()
  config = v1.ConfigProto(operation_timeout_in_ms=OPERATION_TIMEOUT_MS)
  with v1.Session(worker.target, graph=graph, config=config) as session:
    session.run(init)
    receives = train_and_receive(session, train_op, steps)
    values = session.run({"table": table, "kernel": kernel, "bias": bias})
  return values, receives, packets


def test_ids_for_a_lookup_on_the_ps_and_the_gradients_travel_in_two_packets(ps_and_worker):
  spec, worker, _ = ps_and_worker
  plain_values, plain_receives, _ = _train_lookup(spec, worker, pack=False)
  packed_values, packed_receives, packets = _train_lookup(spec, worker, pack=True)
  for name, value in plain_values.items():
    np.testing.assert_array_equal(packed_values[name], value, err_msg=name)
  # The gradients follow from the rows the ps looked up for the ids: one
  # packet with the ids cannot carry them. Before: the ids (which the ps also
  # takes as the table gradient's indices), the table gradient's values, the
  # kernel's and the bias's gradients and the learning rate, each its own
  # message; now the ids (with the gradient's indices, taken from them) in
  # one packet, then the three gradients in another (the learning rate is
  # made on the ps).
  to_ps = [p for p in packets if p.destination == PS]
  assert [len(p.tensors) for p in to_ps] == [2, 3], packets
  assert to_ps[0].tensors[0].startswith("IteratorGetNext"), packets
  assert len(plain_receives[(WORKER, PS)]) == 5, plain_receives
  assert len(packed_receives[(WORKER, PS)]) == 2, packed_receives
