"""Deterministic tf.estimator programs shared by the reference and estimator_lite runs.

The same model code must run under `tf.estimator` (TF 2.15, reference venv) and
under `estimator_lite` (current TensorFlow), so nothing here imports either at
module level: the caller names the estimator module (`"tf.estimator"` or
`"estimator_lite"`) and gets model_fns / input_fns built against it.

Two programs:
  * linear: `y = x @ w + b` with `tf.compat.v1.get_variable` weights "w" [3, 1]
    and "b" [1], mean squared error, GradientDescentOptimizer(0.1) with
    global_step. This is the model of the tf.estimator 2.15 fixture under
    tests/data/tf215_model_dir/.
  * mlp: 4 -> 8 (relu) -> 3 with `tf.compat.v1.layers.dense`, sparse softmax
    cross entropy, Adam (so slot variables and beta powers land in the
    checkpoint), `tf.compat.v1.metrics.accuracy`; initializers have op-level
    seeds and the RunConfig sets `tf_random_seed`, so the initial values only
    depend on the seeds.

Data are small numpy arrays from a fixed-seed RandomState fed through
`tf.data.Dataset.from_tensor_slices`, never shuffled.
"""
import importlib
import os

import numpy as np

BATCH_SIZE = 8

LINEAR_NUM_ROWS = 64
LINEAR_TRUE_W = np.array([[1.0], [-2.0], [0.5]], dtype=np.float32)
LINEAR_TRUE_B = 0.3
LINEAR_INIT_W = [[0.1], [-0.1], [0.2]]
LINEAR_INIT_B = [0.05]
LINEAR_LEARNING_RATE = 0.1

MLP_NUM_ROWS = 96
MLP_NUM_FEATURES = 4
MLP_HIDDEN = 8
MLP_NUM_CLASSES = 3
MLP_LEARNING_RATE = 0.01
MLP_TF_RANDOM_SEED = 42


def estimator_module(name):
  """Returns the estimator module called `name`.

  "tf.estimator" (also "tensorflow.estimator") is `tf.estimator` of the
  installed TensorFlow (TF <= 2.15 only); any other name is imported with
  importlib (e.g. "estimator_lite", which must be imported before anything
  touches `tf.keras` so it can select tf-keras).
  """
  if name in ("tf.estimator", "tensorflow.estimator"):
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    return tf.estimator
  return importlib.import_module(name)


def _est(est):
  return estimator_module(est) if isinstance(est, str) else est


# ----------------------------------------------------------------------------
# Linear regression program.
# ----------------------------------------------------------------------------

def linear_data(seed=0, num_rows=LINEAR_NUM_ROWS):
  """Fixed (x [n, 3] float32, y [n, 1] float32) from a seeded RandomState."""
  rng = np.random.RandomState(seed)
  x = rng.uniform(-1.0, 1.0, size=(num_rows, 3)).astype(np.float32)
  noise = rng.normal(0.0, 0.05, size=(num_rows, 1)).astype(np.float32)
  y = (x @ LINEAR_TRUE_W + LINEAR_TRUE_B + noise).astype(np.float32)
  return x, y


def linear_predict_rows():
  """Fixed rows for predict()."""
  return np.array([[0.0, 0.0, 0.0],
                   [1.0, 0.0, 0.0],
                   [0.0, 1.0, 0.0],
                   [0.0, 0.0, 1.0],
                   [0.5, -0.5, 0.25]], dtype=np.float32)


def linear_train_input_fn():
  """Train input: the 64 rows repeated forever, in order, batches of 8."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  x, y = linear_data(seed=0)
  ds = tf.data.Dataset.from_tensor_slices(({"x": x}, y))
  return ds.repeat().batch(BATCH_SIZE)


def linear_eval_input_fn():
  """Eval input: 64 other rows (seed 1), one pass, batches of 8."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  x, y = linear_data(seed=1)
  return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).batch(BATCH_SIZE)


def linear_predict_input_fn():
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  x = linear_predict_rows()
  return tf.data.Dataset.from_tensor_slices({"x": x}).batch(BATCH_SIZE)


def make_linear_model_fn(est):
  """Returns the linear model_fn built against estimator module `est` (or its name)."""
  est = _est(est)

  def linear_model_fn(features, labels, mode, params, config):
    del params, config
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    v1 = tf.compat.v1
    x = features["x"]
    w = v1.get_variable("w", shape=[3, 1], dtype=tf.float32,
                        initializer=v1.constant_initializer(LINEAR_INIT_W))
    b = v1.get_variable("b", shape=[1], dtype=tf.float32,
                        initializer=v1.constant_initializer(LINEAR_INIT_B))
    predictions = tf.matmul(x, w) + b
    if mode == est.ModeKeys.PREDICT:
      return est.EstimatorSpec(mode, predictions={"predictions": predictions})
    loss = v1.losses.mean_squared_error(labels, predictions)
    # A stable name so hooks created outside the graph can fetch the loss.
    loss = tf.identity(loss, name="recorded_loss")
    if mode == est.ModeKeys.EVAL:
      metrics = {
          "mse": v1.metrics.mean_squared_error(labels, predictions),
          "mae": v1.metrics.mean_absolute_error(labels, predictions),
      }
      return est.EstimatorSpec(mode, loss=loss, eval_metric_ops=metrics)
    optimizer = v1.train.GradientDescentOptimizer(LINEAR_LEARNING_RATE)
    train_op = optimizer.minimize(loss, global_step=v1.train.get_global_step())
    return est.EstimatorSpec(mode, loss=loss, train_op=train_op)

  return linear_model_fn


# ----------------------------------------------------------------------------
# Small MLP classifier program.
# ----------------------------------------------------------------------------

def mlp_data(seed=0, num_rows=MLP_NUM_ROWS):
  """Fixed (x [n, 4] float32, y [n] int32 in 0..2) from a seeded RandomState."""
  rng = np.random.RandomState(seed)
  x = rng.normal(0.0, 1.0, size=(num_rows, MLP_NUM_FEATURES)).astype(np.float32)
  projection = np.array([[1.0, -1.0, 0.0],
                         [0.5, 0.5, -1.0],
                         [-1.0, 0.0, 1.0],
                         [0.0, 1.0, 0.5]], dtype=np.float32)
  y = np.argmax(x @ projection, axis=1).astype(np.int32)
  return x, y


def mlp_predict_rows():
  x, _ = mlp_data(seed=2, num_rows=6)
  return x


def mlp_train_input_fn():
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  x, y = mlp_data(seed=0)
  ds = tf.data.Dataset.from_tensor_slices(({"x": x}, y))
  return ds.repeat().batch(BATCH_SIZE)


def mlp_eval_input_fn():
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  x, y = mlp_data(seed=1, num_rows=40)  # 5 batches of 8
  return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).batch(BATCH_SIZE)


def mlp_predict_input_fn():
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  x = mlp_predict_rows()
  return tf.data.Dataset.from_tensor_slices({"x": x}).batch(BATCH_SIZE)


def make_mlp_model_fn(est):
  """Returns the MLP model_fn built against estimator module `est` (or its name)."""
  est = _est(est)

  def mlp_model_fn(features, labels, mode, params):
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    v1 = tf.compat.v1
    hidden = v1.layers.dense(
        features["x"], params["hidden_units"], activation=tf.nn.relu,
        kernel_initializer=v1.glorot_uniform_initializer(seed=1),
        bias_initializer=v1.zeros_initializer(), name="hidden")
    logits = v1.layers.dense(
        hidden, MLP_NUM_CLASSES,
        kernel_initializer=v1.glorot_uniform_initializer(seed=2),
        bias_initializer=v1.constant_initializer(0.01), name="logits")
    class_ids = tf.argmax(logits, axis=1, output_type=tf.int32)
    predictions = {
        "class_ids": class_ids,
        "probabilities": tf.nn.softmax(logits),
        "logits": logits,
    }
    if mode == est.ModeKeys.PREDICT:
      return est.EstimatorSpec(mode, predictions=predictions)
    loss = v1.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    loss = tf.identity(loss, name="recorded_loss")
    if mode == est.ModeKeys.EVAL:
      metrics = {"accuracy": v1.metrics.accuracy(labels=labels,
                                                 predictions=class_ids)}
      return est.EstimatorSpec(mode, loss=loss, eval_metric_ops=metrics)
    optimizer = v1.train.AdamOptimizer(params["learning_rate"])
    train_op = optimizer.minimize(loss, global_step=v1.train.get_global_step())
    return est.EstimatorSpec(mode, loss=loss, train_op=train_op)

  return mlp_model_fn


MLP_PARAMS = {"hidden_units": MLP_HIDDEN, "learning_rate": MLP_LEARNING_RATE}


# ----------------------------------------------------------------------------
# Helpers shared by the fixture script, the parity runner and the tests.
# ----------------------------------------------------------------------------

def make_loss_recorder(est):
  """Returns a SessionRunHook instance recording the loss of every train step.

  The hook fetches the tensor named "recorded_loss:0" (the model_fns above
  name their loss so) and the global step read once after the session is
  created; `hook.losses` is the list of per-step losses, in order, and
  `hook.start_step` the global step training resumed from.
  """
  est = _est(est)

  class LossRecorderHook(est.SessionRunHook):
    """Records the loss after each session.run of the train op."""

    def __init__(self):
      self.losses = []
      self.start_step = None
      self._loss = None

    def begin(self):
      import tensorflow as tf  # pylint: disable=g-import-not-at-top
      graph = tf.compat.v1.get_default_graph()
      self._loss = graph.get_tensor_by_name("recorded_loss:0")
      self._global_step = tf.compat.v1.train.get_global_step()

    def after_create_session(self, session, coord):
      del coord
      self.start_step = int(session.run(self._global_step))

    def before_run(self, run_context):
      del run_context
      return est.SessionRunArgs(self._loss)

    def after_run(self, run_context, run_values):
      del run_context
      self.losses.append(float(run_values.results))

  return LossRecorderHook()


def make_variable_snapshot_hook(est, names):
  """Returns a hook whose `.values` holds `names`' values right after restore.

  `after_create_session` runs once the session has restored (or initialised)
  the variables and before the first training step.
  """
  est = _est(est)

  class VariableSnapshotHook(est.SessionRunHook):

    def __init__(self):
      self.values = None
      self._variables = None

    def begin(self):
      import tensorflow as tf  # pylint: disable=g-import-not-at-top
      by_name = {v.op.name: v for v in tf.compat.v1.global_variables()}
      missing = [n for n in names if n not in by_name]
      if missing:
        raise ValueError(f"no global variables named {missing}; "
                         f"the graph has {sorted(by_name)}")
      self._variables = {n: by_name[n] for n in names}

    def after_create_session(self, session, coord):
      del coord
      self.values = {n: np.asarray(v)
                     for n, v in session.run(self._variables).items()}

  return VariableSnapshotHook()


def checkpoint_state(model_dir):
  """Reads `model_dir/checkpoint` as text, without TensorFlow.

  Returns {"model_checkpoint_path": str, "all_model_checkpoint_paths": [str]}
  with the paths exactly as written (relative or absolute).
  """
  state = {"model_checkpoint_path": None, "all_model_checkpoint_paths": []}
  with open(os.path.join(model_dir, "checkpoint")) as f:
    for line in f:
      key, _, value = line.strip().partition(": ")
      value = value.strip().strip('"')
      if key == "model_checkpoint_path":
        state["model_checkpoint_path"] = value
      elif key == "all_model_checkpoint_paths":
        state["all_model_checkpoint_paths"].append(value)
  return state
