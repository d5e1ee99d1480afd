"""RunConfig(ps_placement): where a ps cluster's variables go (_graph/ps_placement.py).

The training graph is built as a cluster's chief builds it (a TF_CONFIG with
ps tasks, train_graph.device_fn) without starting servers: placement is a
property of the graph. test_ps_placement_cluster.py trains on a real cluster.
"""
import json

import pytest
import tensorflow as tf

import estimator_lite as est
from estimator_lite._graph import ps_placement
from estimator_lite._graph import train_graph

_v1 = tf.compat.v1
# Created in this order: (name, shape). A large embedding first, as a wide-and-deep
# model's input layer comes before its tower.
_MODEL = (("embedding", [10_000, 16]), ("wide", [10_000, 1]), ("hidden/kernel", [100, 64]),
          ("hidden/bias", [64]), ("out/kernel", [64, 32]), ("out/bias", [32]))


def _cluster_config(monkeypatch, ps_tasks, **kwargs):
  monkeypatch.setenv("TF_CONFIG", json.dumps({
      "cluster": {"ps": [f"ps{i}:2222" for i in range(ps_tasks)], "chief": ["chief:2222"]},
      "task": {"type": "chief", "index": 0}}))
  return est.RunConfig(**kwargs)


def _build(device_fn, model=_MODEL):
  """The model's variables and an Adagrad step under `device_fn`: {name: task}."""
  with tf.Graph().as_default() as graph, graph.device(device_fn):
    step = _v1.train.get_or_create_global_step()
    loss = tf.add_n([tf.reduce_sum(_v1.get_variable(name, shape)) for name, shape in model])
    _v1.train.AdagradOptimizer(0.1).minimize(loss, global_step=step)
    return {v.op.name: v.device.split("/device")[0] for v in _v1.global_variables()}


def _bytes_by_task(devices, model=_MODEL):
  sizes = dict((name, 4 * tf.TensorShape(shape).num_elements()) for name, shape in model)
  load = {}
  for name, task in devices.items():
    load[task] = load.get(task, 0) + sizes.get(name, 0)
  return load


def test_by_size_is_the_default_and_keeps_a_large_embedding_apart(monkeypatch):
  config = _cluster_config(monkeypatch, 2)
  assert config.ps_placement == "by_size"
  devices = _build(train_graph.device_fn(config))
  # The embedding alone on one task; everything else, smaller together, on the other.
  assert devices["embedding"] == "/job:ps/task:1"
  assert {devices[name] for name, _ in _MODEL[1:]} == {"/job:ps/task:0"}
  # An optimizer's slots stay with their variable.
  for name, _ in _MODEL:
    assert devices[f"{name}/Adagrad"] == devices[name]
  round_robin = _build(train_graph.device_fn(config.replace(ps_placement="round_robin")))
  assert max(_bytes_by_task(devices).values()) < max(_bytes_by_task(round_robin).values())


def test_round_robin_places_as_tf_estimator_did(monkeypatch):
  for ps_tasks in (2, 3):
    config = _cluster_config(monkeypatch, ps_tasks, ps_placement="round_robin")
    tf_estimators = _v1.train.replica_device_setter(
        ps_tasks=ps_tasks, worker_device="/job:chief/task:0", merge_devices=True,
        cluster=config.cluster_spec)
    assert _build(train_graph.device_fn(config)) == _build(tf_estimators)


def test_every_ps_task_gets_a_variable_before_any_gets_two(monkeypatch):
  # A zero-byte (string) variable must not leave a task empty: the checkpoint is
  # then sharded over as many ps tasks as under round robin.
  def build(device_fn):
    with tf.Graph().as_default() as graph, graph.device(device_fn):
      _v1.train.get_or_create_global_step()
      _v1.get_variable("names", [3], dtype=tf.string, initializer=_v1.constant_initializer(""))
      for i, rows in enumerate((50, 40, 30, 20)):
        _v1.get_variable(f"w{i}", [rows, 8])
      return {v.op.name: v.device for v in _v1.global_variables()}

  config = _cluster_config(monkeypatch, 4)
  devices = build(train_graph.device_fn(config))
  first_four = [devices[name] for name in ("global_step", "names", "w0", "w1")]
  assert sorted(first_four) == [f"/job:ps/task:{i}" for i in range(4)]
  round_robin = build(train_graph.device_fn(config.replace(ps_placement="round_robin")))
  assert set(devices.values()) == set(round_robin.values())


def test_variable_bytes():
  with tf.Graph().as_default():
    assert ps_placement.variable_bytes(_v1.get_variable("f", [3, 4]).op) == 48
    assert ps_placement.variable_bytes(
        _v1.get_variable("i", [], dtype=tf.int64).op) == 8
    assert ps_placement.variable_bytes(
        _v1.get_variable("s", [2], dtype=tf.string, initializer=_v1.constant_initializer("")
                         ).op) == 0
    unknown = _v1.Variable(_v1.placeholder_with_default([1.0], [None]), shape=[None])
    assert ps_placement.variable_bytes(unknown.op) == 0


def test_device_fn_decides_over_ps_placement(monkeypatch):
  def device_fn(op):
    return "/job:chief/task:0"

  config = _cluster_config(monkeypatch, 2, device_fn=device_fn, ps_placement="by_size")
  assert set(_build(train_graph.device_fn(config)).values()) == {"/job:chief/task:0"}


def test_bad_ps_placement_says_what_to_pass(monkeypatch):
  monkeypatch.delenv("TF_CONFIG", raising=False)
  with pytest.raises(ValueError, match=r"^RunConfig\(ps_placement='greedy'\): ps_placement must "
                                       r"be 'by_size' .* or 'round_robin' \(tf.estimator's\)\."):
    est.RunConfig(ps_placement="greedy")
  with pytest.raises(ValueError, match=r"ps_placement must be 'by_size'"):
    est.RunConfig().replace(ps_placement=None)
  assert est.RunConfig().replace(ps_placement="round_robin").ps_placement == "round_robin"
