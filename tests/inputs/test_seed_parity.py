"""numpy_input_fn / pandas_input_fn leave a seeded model on tf.estimator 2.15's op seeds.

Under `RunConfig(tf_random_seed=...)` every random op without a seed of its
own (initializers, dropout) takes the graph's next op seed: TensorFlow's
`get_seed` hands them out in order, counting the seeds taken so far. The
input_fn runs before model_fn, so whatever seeds it takes shift every
initial weight. tf.estimator 2.15's queue feeder took one when shuffling
(its RandomShuffleQueue) and none otherwise; a different count gives a
2.15 program different initial weights, hence different losses.
"""
import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

import estimator_lite as est
from estimator_lite.inputs import numpy_input_fn
from estimator_lite.inputs import pandas_input_fn

_N = 10
_X = {
    "array": np.zeros((_N, 2), np.float32),
    "dict1": {"a": np.zeros((_N, 2), np.float32)},
    "dict3": {"a": np.zeros(_N), "b": np.zeros(_N, np.int64), "c": np.zeros((_N, 3))},
}
_Y = {
    "none": None,
    "array": np.zeros(_N, np.float32),
    "dict2": {"t": np.zeros(_N), "u": np.zeros(_N)},
}
_FRAME = pd.DataFrame({"a": np.zeros(_N), "b": np.ones(_N)})
_FRAME_Y = {
    "none": None,
    "series": pd.Series(np.zeros(_N)),
    "frame": pd.DataFrame({"t": np.zeros(_N), "u": np.zeros(_N)}),
}

# Op seeds each input_fn call takes from a seeded graph, per argument set, in
# tf.estimator 2.15 (measured in the reference venv: tf.compat.v1.estimator.
# inputs, a tf.Graph with seed 3, the input_fn called in it, then TF's own
# seed counter read; batch_size=4 throughout). The whole grid x in _X, y in
# _Y, shuffle, num_epochs in (1, None), num_threads in (1, 2) for numpy and
# y in _FRAME_Y, shuffle, num_epochs, num_threads, queue_capacity in (None,
# 50) for pandas (120 sets) gave 1 with shuffle=True and 0 otherwise; these
# rows cover every argument.
# (reader, x, y, shuffle, num_epochs, num_threads, queue_capacity) -> seeds
_SEEDS_TAKEN_2_15 = [
    ("numpy", "array", "none", False, 1, 1, 1000, 0),
    ("numpy", "array", "array", True, 1, 1, 1000, 1),
    ("numpy", "dict1", "array", False, 1, 1, 1000, 0),
    ("numpy", "dict1", "array", True, None, 2, 50, 1),
    ("numpy", "dict3", "dict2", False, None, 2, 50, 0),
    ("numpy", "dict3", "dict2", True, 1, 1, 1000, 1),
    ("numpy", "dict3", "none", True, None, 1, 50, 1),
    ("numpy", "dict1", "none", False, 1, 2, 1000, 0),
    ("pandas", None, "none", False, 1, 1, None, 0),
    ("pandas", None, "series", True, 1, 1, None, 1),
    ("pandas", None, "series", False, None, 2, 50, 0),
    ("pandas", None, "frame", True, None, 2, 50, 1),
    ("pandas", None, "frame", False, 1, 1, None, 0),
]


def _make_input_fn(reader, x, y, shuffle, num_epochs, num_threads, queue_capacity):
  if reader == "numpy":
    return numpy_input_fn(_X[x], _Y[y], batch_size=4, num_epochs=num_epochs,
                          shuffle=shuffle, queue_capacity=queue_capacity,
                          num_threads=num_threads)
  return pandas_input_fn(_FRAME, _FRAME_Y[y], batch_size=4, num_epochs=num_epochs,
                         shuffle=shuffle, queue_capacity=queue_capacity,
                         num_threads=num_threads)


@pytest.mark.parametrize("reader,x,y,shuffle,num_epochs,num_threads,queue_capacity,seeds",
                         _SEEDS_TAKEN_2_15)
def test_input_fn_takes_as_many_op_seeds_as_tf_estimator_2_15(
    reader, x, y, shuffle, num_epochs, num_threads, queue_capacity, seeds):
  input_fn = _make_input_fn(reader, x, y, shuffle, num_epochs, num_threads, queue_capacity)
  with tf.Graph().as_default():
    tf.compat.v1.set_random_seed(3)
    input_fn()
    # The next unseeded random op gets the next op seed: the count taken so far.
    probe = tf.random.uniform([])
    assert probe.op.get_attr("seed") == 3
    assert probe.op.get_attr("seed2") == seeds


def _model_fn(features, labels, mode):
  del labels  # the loss only needs some dependence on the features
  x = features["x"]
  w = tf.compat.v1.get_variable("w", [2, 3])  # glorot_uniform, no op seed of its own
  b = tf.Variable(tf.random.normal([3]), name="b")
  loss = tf.reduce_sum(tf.matmul(x, w) + b)
  global_step = tf.compat.v1.train.get_or_create_global_step()
  # No weight update: after one step the checkpoint holds the initial weights.
  return est.EstimatorSpec(mode, loss=loss,
                           train_op=tf.compat.v1.assign_add(global_step, 1))


# Initial weights of _model_fn under RunConfig(tf_random_seed=42), trained one
# step on tf.estimator 2.15 (tf.compat.v1.estimator.Estimator, the same
# model_fn and input_fns, the ref venv), read with get_variable_value and
# rounded to 6 decimals. In order: the input_fn takes no op seed, so `w`
# gets op seed 0; shuffled: it takes one, so `w` gets op seed 1.
_IN_ORDER_2_15 = {
    "w": [[0.734954, 0.912062, -0.011722], [0.046257, 0.464358, -0.095411]],
    "b": [-1.499947, -1.24205, 0.522831],
}
_SHUFFLED_2_15 = {
    "w": [[-0.76653, 0.306561, 0.696435], [-0.338007, 1.088038, 0.310072]],
    "b": [0.119354, -0.101385, 0.529117],
}


def _numpy_fn(shuffle):
  x = np.arange(16, dtype=np.float32).reshape(8, 2)
  return numpy_input_fn({"x": x}, np.arange(8, dtype=np.float32), batch_size=4,
                        shuffle=shuffle)


def _pandas_fn(shuffle):
  x = np.arange(16, dtype=np.float32).reshape(8, 2)
  frame = pd.DataFrame({"x": x[:, 0], "z": x[:, 1]})
  input_fn = pandas_input_fn(frame, pd.Series(np.arange(8, dtype=np.float32)),
                             batch_size=4, shuffle=shuffle)
  # The model wants one [batch, 2] feature: the two columns side by side,
  # stacked from the tensors input_fn returns, as with tf.estimator.
  def stacked_input_fn():
    features, target = input_fn()
    return {"x": tf.stack([features["x"], features["z"]], 1)}, target
  return stacked_input_fn


@pytest.mark.parametrize("make_input_fn,shuffle,expected", [
    (_numpy_fn, False, _IN_ORDER_2_15),
    (_numpy_fn, True, _SHUFFLED_2_15),
    (_pandas_fn, False, _IN_ORDER_2_15),
    (_pandas_fn, True, _SHUFFLED_2_15),
])
def test_seeded_model_starts_from_tf_estimator_2_15_initial_weights(
    tmp_path, make_input_fn, shuffle, expected):
  estimator = est.Estimator(_model_fn, model_dir=str(tmp_path),
                            config=est.RunConfig(tf_random_seed=42))
  estimator.train(make_input_fn(shuffle), steps=1)
  for name, values in expected.items():
    np.testing.assert_allclose(estimator.get_variable_value(name), values, atol=2e-6)
