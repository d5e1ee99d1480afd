"""What estimator_lite borrows from TensorFlow's private API still exists and does what it relies on.

A TensorFlow upgrade that moves one of these fails here first, with its name.
"""
import pytest
import tensorflow as tf
from tensorflow.core.protobuf import config_pb2

from estimator_lite._util import tf_internals

_v1 = tf.compat.v1


def test_global_step_reads_handles_and_control_inputs():
  with tf.Graph().as_default() as graph:
    step = _v1.train.get_or_create_global_step()
    read = tf_internals.global_step_read(graph)
    assert read is not None and read.dtype == tf.int64
    assert tf_internals.variable_handle_names(step) == [step.handle.name]
    ref = _v1.Variable(0, use_resource=False, name="ref")
    assert tf_internals.variable_handle_names(ref) == ["ref:0"]
    increment = _v1.assign_add(step, 1).op
    tf_internals.add_control_inputs(increment, [read.op, read.op])
    assert increment.control_inputs.count(read.op) == 1
    assert _v1.GraphKeys.GLOBAL_STEP == "global_step"
    assert tf_internals.GLOBAL_STEP_READ_KEY in graph.get_all_collection_keys()


def test_graph_edits_reroute_an_input_place_an_op_and_see_v1_control_flow():
  with tf.Graph().as_default():
    a, b = tf.constant(1.0), tf.constant(5.0)
    total = a + 1.0
    tf_internals.replace_input(total.op, 0, b)
    assert total.op.inputs[0] is b
    tf_internals.set_device(total.op, "/device:CPU:0")
    assert total.op.device == "/device:CPU:0"
    with _v1.Session() as session:
      assert session.run(total) == 6.0
    assert not tf_internals.in_control_flow(total.op)
    pred = _v1.placeholder(tf.bool, [])
    inside = []

    def branch():
      value = a * 2.0
      inside.append(value.op)
      return value

    # Programs that call tf.compat.v1.disable_v2_behavior() build v1 control flow.
    _v1.disable_control_flow_v2()
    try:
      _v1.cond(pred, branch, lambda: a)
    finally:
      _v1.enable_control_flow_v2()
    assert tf_internals.in_control_flow(inside[0])


def test_dense_tensor_type_excludes_composite_tensors():
  with tf.Graph().as_default():
    variable = _v1.get_variable("v", [1])
    for dense in (tf.constant(1.0), variable, variable.read_value()):
      assert tf_internals.is_dense_tensor(dense), dense
    sparse = tf.sparse.SparseTensor(indices=[[0]], values=[1.0], dense_shape=[1])
    for other in (sparse, tf.ragged.constant([[1], []]), 1.0, tf.no_op()):
      assert not tf_internals.is_dense_tensor(other), other
  assert tf_internals.is_dense_tensor(tf.constant(1.0))  # eager


def test_session_internals_run_a_raw_callable_with_session_errors():
  with tf.Graph().as_default():
    value = tf.constant(3.0) * 2
    fed = _v1.placeholder_with_default(1, [])
    bad = tf.debugging.assert_equal(fed, 2, message="boom")
    with _v1.Session() as session:
      assert isinstance(session, tf_internals.SessionInterface)
      raw = tf_internals.make_raw_callable(session, config_pb2.CallableOptions(
          fetch=[value.name]))
      assert raw() == [6.0]
      run = tf_internals.session_error_decorator(session)
      failing = tf_internals.make_raw_callable(session, config_pb2.CallableOptions(
          target=[bad.name]))
      with pytest.raises(tf.errors.InvalidArgumentError, match="boom"):
        run(failing)
      assert not tf_internals.session_is_closed(session)
    assert tf_internals.session_is_closed(session)


def test_hook_scaffold_and_saver_internals(tmp_path):
  listener = _v1.train.CheckpointSaverListener()
  with tf.Graph().as_default():
    _v1.train.get_or_create_global_step()
    hook = _v1.train.CheckpointSaverHook(str(tmp_path), save_steps=1, listeners=[listener])
    assert tf_internals.saver_hook_listeners(hook) == [listener]

    def init_fn(scaffold, session):
      del scaffold, session
    assert tf_internals.scaffold_user_init_fn(_v1.train.Scaffold(init_fn=init_fn)) is init_fn
    weights = _v1.get_variable("w", [4, 2], partitioner=_v1.fixed_size_partitioner(2))
    part = list(weights)[0]
    assert tf_internals.partition_of(part).full_name == "w"
    assert tf_internals.partition_of(_v1.train.get_global_step()) is None
    saver = _v1.train.Saver()
    meta = tf_internals.create_meta_graph_def(_v1.get_default_graph().as_graph_def(),
                                              saver.saver_def)
    assert meta.saver_def.filename_tensor_name
    optimizer = _v1.train.SyncReplicasOptimizer(
        _v1.train.GradientDescentOptimizer(0.1), replicas_to_aggregate=1)
    assert tf_internals.is_sync_replicas_hook(optimizer.make_session_run_hook(is_chief=True))
    assert not tf_internals.is_sync_replicas_hook(hook)
  with tf_internals.deprecation_notices_silenced():
    pass


def test_an_object_checkpoint_becomes_a_name_based_saver_of_its_keys(tmp_path):
  with tf.Graph().as_default():
    weights = _v1.get_variable("w", [2], initializer=_v1.ones_initializer())
    checkpoint = tf.train.Checkpoint(model_weights=weights)
    saver = tf_internals.name_based_saver(checkpoint)
    assert isinstance(saver, _v1.train.Saver)
    plain = _v1.train.Saver()
    assert tf_internals.name_based_saver(plain) is plain
    with _v1.Session() as session:
      session.run(weights.initializer)
      path = saver.save(session, str(tmp_path / "ckpt"))
  assert "model_weights/.ATTRIBUTES/VARIABLE_VALUE" in dict(tf.train.list_variables(path))


def test_strategy_internals():
  strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
  config = tf_internals.strategy_session_config(strategy, _v1.ConfigProto())
  assert isinstance(config, _v1.ConfigProto)
  assert tf_internals.strategy_num_workers(strategy) == 1
  assert tf_internals.strategy_task(strategy) == (None, None)
  assert not tf_internals.strategy_serves_this_task(strategy)
  tf_internals.stop_strategy_health_checks(strategy)  # none to stop: no error
  assert tf_internals.estimator_loss_scaling(strategy) is not None
  with tf.Graph().as_default() as graph:
    assert not tf_internals.loss_scaled_by_optimizer(graph)


def test_keras3_layer_names_restart():
  import keras  # pylint: disable=g-import-not-at-top
  assert keras.__version__.startswith("3.")  # TensorFlow 2.21's Keras
  first = keras.layers.Dense(1).name
  assert keras.layers.Dense(1).name != first
  tf_internals.reset_keras3_layer_names()
  assert keras.layers.Dense(1).name == first
