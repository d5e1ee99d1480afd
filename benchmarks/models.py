"""The three benchmark models as plain tf.compat.v1 graph code, shared by every system.

The systems differ only in what runs the graph (make_model_fn(model, api)
wraps a model for tf.estimator or estimator_lite). Data is generated in the
input pipeline from fixed seeds and cached after the first pass: no array is
embedded in the graph, and the steady-state input cost is small everywhere.

* linear: linear regression, 10 features, batch 32, SGD.
* mlp: 784-512-512-10 classifier, batch 256, Adam.
* wide_deep: 8 string categorical slots hashed into 100,000 buckets
  (`tf.strings.to_hash_bucket_fast`), a dim-16 embedding (deep) and a dim-1
  one (wide), plus 13 dense features; 141-256-128-1 tower; batch 512; Adagrad.
* numpy_dnn (benchmarks/numpy_input.py): a numpy-fed program's model, a
  4-32-16-1 regression tower over a dict of 4 float features, batch 128, SGD.
  Its data is numpy arrays in memory (50,000 rows), fed to the Estimators by
  numpy_input_fn (make_numpy_input_fn) and to the bare loops by a
  `Dataset.from_generator` of shuffled batches sliced from the same arrays.
"""
import collections
import functools

import numpy as np
import tensorflow as tf

_v1 = tf.compat.v1
POOL_BATCHES = 16  # distinct batches generated per input pipeline; the pool repeats (cached)
_SEED = 20240601

Model = collections.namedtuple("Model", "make_batch build serving_features data",
                               defaults=(None,))
"""make_batch(i) -> (features, labels): batch i of the pool; build(features, labels,
train, wrap_optimizer=None) -> Built: one step's graph (its optimizer passed through
wrap_optimizer, e.g. into a SyncReplicasOptimizer); serving_features() -> placeholders
for export; data: None, or () -> the training Dataset in place of the pool's."""
Built = collections.namedtuple("Built", "loss train_op predictions metrics")


def _seed(i, salt):
  return tf.stack([tf.constant(_SEED + salt, tf.int64), tf.cast(i, tf.int64)])


def _dense(x, units, name, activation=None):
  with _v1.variable_scope(name):
    w = _v1.get_variable("kernel", [x.shape[-1], units],
                         initializer=_v1.glorot_uniform_initializer(seed=len(name)))
    b = _v1.get_variable("bias", [units], initializer=_v1.zeros_initializer())
  y = tf.matmul(x, w) + b
  return activation(y) if activation else y


def _built(predictions, labels, train, loss_fn, metrics_fn, optimizer_fn, wrap_optimizer):
  """The step's graph from the predictions: loss, metrics and train op (with labels)."""
  if labels is None:
    return Built(None, None, predictions, None)
  loss = loss_fn()
  metrics = metrics_fn()
  train_op = None
  if train:
    optimizer = optimizer_fn()
    if wrap_optimizer is not None:
      optimizer = wrap_optimizer(optimizer)
    train_op = optimizer.minimize(loss, global_step=_v1.train.get_global_step())
  return Built(loss, train_op, predictions, metrics)


def _linear_batch(i):
  x = tf.random.stateless_normal([32, 10], _seed(i, 1))
  noise = 0.1 * tf.random.stateless_normal([32, 1], _seed(i, 2))
  return {"x": x}, tf.matmul(x, tf.linspace(-1.0, 1.0, 10)[:, None]) + 0.5 + noise


def _linear_build(features, labels, train, wrap_optimizer=None):
  pred = _dense(features["x"], 1, "linear")
  return _built({"y": pred}, labels, train, lambda: tf.reduce_mean(tf.square(pred - labels)),
                lambda: {"mse": _v1.metrics.mean_squared_error(labels, pred)},
                lambda: _v1.train.GradientDescentOptimizer(0.05), wrap_optimizer)


def _mlp_batch(i):
  return ({"x": tf.random.stateless_uniform([256, 784], _seed(i, 3))},
          tf.random.stateless_uniform([256], _seed(i, 4), maxval=10, dtype=tf.int32))


def _mlp_build(features, labels, train, wrap_optimizer=None):
  net = _dense(features["x"], 512, "hidden1", tf.nn.relu)
  logits = _dense(_dense(net, 512, "hidden2", tf.nn.relu), 10, "logits")
  predictions = {"class": tf.argmax(logits, axis=1), "probabilities": tf.nn.softmax(logits)}
  return _built(predictions, labels, train, lambda: tf.reduce_mean(
      tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)),
                lambda: {"accuracy": _v1.metrics.accuracy(labels, predictions["class"])},
                lambda: _v1.train.AdamOptimizer(1e-3), wrap_optimizer)


_BUCKETS, _SLOTS, _DENSE, _EMBED_DIM = 100_000, 8, 13, 16


def _wide_deep_batch(i):
  ids = tf.random.stateless_uniform([512, _SLOTS], _seed(i, 5), maxval=1_000_000,
                                    dtype=tf.int32)
  slot_names = tf.constant([[f"s{s}_" for s in range(_SLOTS)]])
  cat = tf.strings.join([tf.tile(slot_names, [512, 1]), tf.strings.as_string(ids)])
  dense = tf.random.stateless_normal([512, _DENSE], _seed(i, 6))
  label = tf.cast(tf.reduce_sum(dense[:, :3], axis=1, keepdims=True)
                  + tf.cast(ids[:, :1] % 2, tf.float32) > 0.5, tf.float32)
  return {"cat": cat, "dense": dense}, label


def _wide_deep_build(features, labels, train, wrap_optimizer=None):
  bucket = tf.strings.to_hash_bucket_fast(features["cat"], _BUCKETS)
  deep_table = _v1.get_variable(
      "deep_embedding", [_BUCKETS, _EMBED_DIM],
      initializer=_v1.truncated_normal_initializer(stddev=0.05, seed=7))
  wide_table = _v1.get_variable("wide_weights", [_BUCKETS, 1],
                                initializer=_v1.zeros_initializer())
  deep = tf.reshape(tf.nn.embedding_lookup(deep_table, bucket), [-1, _SLOTS * _EMBED_DIM])
  net = _dense(tf.concat([deep, features["dense"]], axis=1), 256, "deep1", tf.nn.relu)
  net = _dense(net, 128, "deep2", tf.nn.relu)
  wide = tf.reduce_sum(tf.nn.embedding_lookup(wide_table, bucket), axis=1)
  logits = _dense(net, 1, "deep_logits") + wide + _dense(features["dense"], 1, "wide_dense")
  predictions = {"probability": tf.sigmoid(logits)}
  return _built(predictions, labels, train, lambda: tf.reduce_mean(
      tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)),
                lambda: {"auc_proxy_accuracy": _v1.metrics.accuracy(
                    labels, tf.cast(predictions["probability"] > 0.5, tf.float32))},
                lambda: _v1.train.AdagradOptimizer(0.05), wrap_optimizer)


NUMPY_ROWS, NUMPY_FEATURES, NUMPY_BATCH = 50_000, 4, 128


@functools.lru_cache(maxsize=None)
def numpy_arrays():
  """numpy_dnn's data, made once a process from a fixed seed: ({"x0".."x3": float32 [rows]},
  float32 [rows, 1] labels, a noisy function of the features)."""
  rng = np.random.default_rng(_SEED)
  x = {f"x{i}": rng.standard_normal(NUMPY_ROWS, dtype=np.float32)
       for i in range(NUMPY_FEATURES)}
  y = np.tanh(x["x0"] - 0.5 * x["x1"]) + 0.3 * x["x2"] * x["x3"] + 0.1 * rng.standard_normal(
      NUMPY_ROWS, dtype=np.float32)
  return x, y.astype(np.float32)[:, None]


def _numpy_dataset():
  """The bare loops' numpy pipeline, of numpy_input_fn's kind: a Python generator slicing
  shuffled batches out of numpy_arrays() (each epoch a new permutation, batches running on
  into the next epoch) into `Dataset.from_generator`, 1000 rows (8 batches) prefetched."""
  x, y = numpy_arrays()

  def batches():
    rng, rows = np.random.default_rng(1), np.empty(0, np.int64)
    while True:
      if len(rows) < NUMPY_BATCH:
        rows = np.concatenate([rows, rng.permutation(NUMPY_ROWS)])
      batch, rows = rows[:NUMPY_BATCH], rows[NUMPY_BATCH:]
      yield {key: column[batch] for key, column in x.items()}, y[batch]

  signature = ({key: tf.TensorSpec([NUMPY_BATCH], tf.float32) for key in x},
               tf.TensorSpec([NUMPY_BATCH, 1], tf.float32))
  return tf.data.Dataset.from_generator(batches, output_signature=signature).prefetch(
      -(-1000 // NUMPY_BATCH))


def _numpy_dnn_build(features, labels, train, wrap_optimizer=None):
  x = tf.stack([features[key] for key in sorted(features)], axis=1)
  net = _dense(_dense(x, 32, "hidden1", tf.nn.relu), 16, "hidden2", tf.nn.relu)
  pred = _dense(net, 1, "output")
  return _built({"y": pred}, labels, train, lambda: tf.reduce_mean(tf.square(pred - labels)),
                lambda: {"mse": _v1.metrics.mean_squared_error(labels, pred)},
                lambda: _v1.train.GradientDescentOptimizer(0.05), wrap_optimizer)


def make_numpy_input_fn(numpy_input_fn, wrapped=False):
  """numpy_dnn's Estimator input_fn: `numpy_input_fn` (tf.estimator's or estimator_lite's)
  over numpy_arrays(), batch 128, shuffle=True, num_epochs=None, passed as it is; or, with
  `wrapped`, a user's input_fn that calls it and returns its (features, labels) tensors."""
  input_fn = numpy_input_fn(*numpy_arrays(), batch_size=NUMPY_BATCH, shuffle=True,
                            num_epochs=None)
  if not wrapped:
    return input_fn

  def user_input_fn():
    features, labels = input_fn()
    return features, labels
  return user_input_fn


MODELS = {
    "linear": Model(_linear_batch, _linear_build, lambda: {
        "x": _v1.placeholder(tf.float32, [None, 10], name="x")}),
    "mlp": Model(_mlp_batch, _mlp_build, lambda: {
        "x": _v1.placeholder(tf.float32, [None, 784], name="x")}),
    "wide_deep": Model(_wide_deep_batch, _wide_deep_build, lambda: {
        "cat": _v1.placeholder(tf.string, [None, _SLOTS], name="cat"),
        "dense": _v1.placeholder(tf.float32, [None, _DENSE], name="dense")}),
    "numpy_dnn": Model(None, _numpy_dnn_build, lambda: {
        f"x{i}": _v1.placeholder(tf.float32, [None], name=f"x{i}")
        for i in range(NUMPY_FEATURES)}, _numpy_dataset),
}


def dataset(model):
  """The model's training data: POOL_BATCHES seeded batches, cached, repeated forever
  (or the model's own `data`)."""
  if model.data is not None:
    return model.data()
  return (tf.data.Dataset.range(POOL_BATCHES).map(model.make_batch).cache().repeat()
          .prefetch(2))


def _create_outside_loop(next_creator, **kwargs):
  # A while loop's body is a function graph; variables belong in the outer graph.
  with tf.init_scope():
    return next_creator(**kwargs)


def training_graph(model, steps_per_loop=1, device_fn=None):
  """The bare loops' graph (placed by `device_fn`): (graph, iterator, op, init).

  A global step, the model's dataset through an initializable iterator, and
  `op`: one training step, or a tf.while_loop of steps_per_loop steps a run.
  """
  graph = tf.Graph()
  with graph.as_default(), graph.device(device_fn):
    _v1.set_random_seed(1)
    _v1.train.get_or_create_global_step()
    iterator = _v1.data.make_initializable_iterator(dataset(model))
    if steps_per_loop == 1:
      op = model.build(*iterator.get_next(), True).train_op
    else:
      def body(i):
        with tf.variable_creator_scope(_create_outside_loop):
          train_op = model.build(*iterator.get_next(), True).train_op
        with tf.control_dependencies([train_op]):
          return i + 1
      op = _v1.while_loop(lambda i: i < steps_per_loop, body, [tf.constant(0)],
                          parallel_iterations=1)
    return graph, iterator, op, _v1.global_variables_initializer()


def make_input_fn(model):
  """An input_fn (no arguments) returning `dataset(model)`."""
  return lambda: dataset(model)


def make_model_fn(model, api, sync_replicas=0):
  """A model_fn for `api` (tf.estimator or estimator_lite) running `model`.

  sync_replicas: N > 0 trains through a SyncReplicasOptimizer that aggregates N
  trainers' gradients a step (with its session hook), as a ps cluster's synchronous
  training does.
  """
  def model_fn(features, labels, mode, config):
    train = mode == api.ModeKeys.TRAIN
    hooks = []

    def sync(optimizer):
      optimizer = _v1.train.SyncReplicasOptimizer(
          optimizer, replicas_to_aggregate=sync_replicas, total_num_replicas=sync_replicas)
      hooks.append(optimizer.make_session_run_hook(config.is_chief))
      return optimizer

    built = model.build(features, labels if mode != api.ModeKeys.PREDICT else None, train,
                        sync if sync_replicas else None)
    if mode == api.ModeKeys.PREDICT:
      return api.EstimatorSpec(
          mode, predictions=built.predictions,
          export_outputs={"serving_default": api.export.PredictOutput(built.predictions)})
    return api.EstimatorSpec(mode, loss=built.loss, train_op=built.train_op,
                             predictions=built.predictions, eval_metric_ops=built.metrics,
                             training_hooks=hooks)
  return model_fn


def make_tpu_program(model, spec_class, mode_keys):
  """A TPUEstimator program's model_fn and input_fn for `model`: both take `params`.

  The model_fn returns `spec_class` (a TPUEstimatorSpec, or an EstimatorSpec
  for an Estimator running the same model_fn) with the model's loss, train op
  and predictions; the graph is build()'s, as make_model_fn's. The input_fn is
  `dataset(model)`, whose batch is already params['batch_size'].
  """
  def model_fn(features, labels, mode, params):
    del params  # the batch size is the dataset's
    built = model.build(features, labels if mode != mode_keys.PREDICT else None,
                        mode == mode_keys.TRAIN)
    return spec_class(mode, loss=built.loss, train_op=built.train_op,
                      predictions=built.predictions)
  return model_fn, lambda params: dataset(model)


def batch_size(model):
  """The global batch size of the model's dataset (TPUEstimator's train_batch_size)."""
  with tf.Graph().as_default():
    return int(dataset(model).element_spec[1].shape[0])


def serving_input_receiver_fn(model, api):
  """A raw serving input receiver fn for `api` over the model's features."""
  def receiver_fn():
    features = model.serving_features()
    return api.export.ServingInputReceiver(features, features)
  return receiver_fn
