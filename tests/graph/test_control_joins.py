"""A step's join of two ps tasks' updates runs on the ps that waits for it, not on the worker.

An optimizer's tf.group of updates on two ps tasks joins them in a NoOp on
the worker, which the global step's increment on a ps waits for: a round
trip through the worker every step. Real servers (a worker and two ps tasks,
in this process: tests/conftest.py) run the step; its messages are read from
the partition graphs (each `_Recv` fed from another task is one).
"""
import numpy as np
import tensorflow as tf
from conftest import train_and_receive

from estimator_lite._graph import control_joins
from estimator_lite._graph import packed_transfers

v1 = tf.compat.v1
WORKER = "/job:worker/task:0"
# Every wait is bounded: a step that waits for itself fails instead of hanging.
OPERATION_TIMEOUT_MS = 30_000


def _train(spec, worker, *, rewrite, steps=5):
  """A linear model over two ps tasks (the kernel on one, the bias and global step on the other).

  Returns (variables after `steps` steps, {(from task, to task): [tensor names]}
  of a step's messages, the NoOps moved).
  """
  graph = tf.Graph()
  device_fn = v1.train.replica_device_setter(ps_tasks=2, worker_device=WORKER,
                                            merge_devices=True, cluster=spec)
  with graph.as_default(), graph.device(device_fn):
    step = v1.train.get_or_create_global_step()
    x, y = v1.data.make_one_shot_iterator(tf.data.Dataset.from_tensor_slices((
        np.linspace(-1.0, 1.0, 48, dtype=np.float32).reshape(16, 3),
        np.linspace(0.0, 2.0, 16, dtype=np.float32).reshape(16, 1))).batch(4).repeat()).get_next()
    kernel = v1.get_variable("kernel", [3, 1], initializer=v1.constant_initializer(0.5))
    bias = v1.get_variable("bias", [1], initializer=v1.zeros_initializer())
    loss = tf.reduce_mean(tf.square(tf.matmul(x, kernel) + bias - y))
    train_op = v1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    moved = []
    if rewrite:
      packed_transfers.pack_transfers(graph, [train_op, loss])
      moved = control_joins.run_joins_where_awaited(graph, [train_op, loss])
    init = v1.global_variables_initializer()
    variables = {v.op.name: v for v in v1.global_variables()}
  assert {v.device for v in variables.values()} == {"/job:ps/task:0", "/job:ps/task:1"}
  config = v1.ConfigProto(operation_timeout_in_ms=OPERATION_TIMEOUT_MS)
  with v1.Session(worker.target, graph=graph, config=config) as session:
    session.run(init)
    receives = train_and_receive(session, train_op, steps)
    return session.run(variables), receives, moved


def _received_by(task, messages):
  return [name for (_, destination), names in messages.items() if destination == task
          for name in names]


def test_the_updates_join_on_the_ps_that_increments_the_global_step(two_ps_and_worker):
  spec, worker, _ = two_ps_and_worker
  plain, plain_messages, _ = _train(spec, worker, rewrite=False)
  rewritten, messages, moved = _train(spec, worker, rewrite=True)
  for name, value in plain.items():
    np.testing.assert_array_equal(rewritten[name], value, err_msg=name)
  assert plain["global_step"] == rewritten["global_step"] == 5
  # The optimizer's last join of its updates.
  assert moved == ["GradientDescent/update"], moved
  # Before: each ps told the worker its update was done, and the worker told
  # the ps with the global step. Now the ps with the kernel tells the other
  # directly; the worker receives only the variables' values.
  assert len(_received_by(WORKER, plain_messages)) == 4, plain_messages
  assert len(_received_by(WORKER, messages)) == 2, messages
  assert sum(map(len, plain_messages.values())) == 7, plain_messages
  assert sum(map(len, messages.values())) == 5, messages
  assert len(messages.get(("/job:ps/task:1", "/job:ps/task:0"), [])) == 1, messages
