"""Shared fixtures: a tiny deterministic data set, a linear model_fn, event and log readers.

Everything here is generic so any test module can use it:

* `linear_data`: (x, y) numpy arrays of a noiseless linear problem.
* `make_input_fn`: builds input_fns over in-memory arrays (Dataset, batched).
* `linear_model_fn`: a raw tf.compat.v1 model_fn (get_variable "w" and "b",
  GradientDescentOptimizer, mean squared error, an RMSE metric).
* `read_scalars`: reads scalars from an events directory with TensorBoard's
  own reader (EventAccumulator).
* `tf_logs`: captures what estimator_lite / TensorFlow log through
  tf.compat.v1.logging (the "tensorflow" Python logger) at INFO.
* `run_python`: runs a Python program in a fresh interpreter (its own
  process) with this checkout importable, with a timeout.
* `ps_and_worker`: a ps and a worker server in this process, on free ports
  from the OS (one pair for the whole run: TensorFlow cannot stop an
  in-process server).
* `reference_python`: the interpreter of tf.estimator 2.15's venv, built on
  first use; a test that uses it is in tier `reference` (tests/tiers.py).

The test tiers (`--tier`, `--every-tier`) are tests/tiers.py's.
"""
import logging
import os
import subprocess
import sys

import numpy as np
import pytest

# What the user running the tests chose, before importing estimator_lite sets
# it: child processes start from this, like a user's fresh program.
_USER_LEGACY_KERAS = os.environ.get("TF_USE_LEGACY_KERAS")

import estimator_lite as est  # pylint: disable=g-bad-import-order
from estimator_lite import launch  # pylint: disable=g-bad-import-order
import tensorflow as tf  # pylint: disable=g-bad-import-order

import tiers  # pylint: disable=g-bad-import-order

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "reference"))
import ref_env  # pylint: disable=g-import-not-at-top,wrong-import-position


def pytest_addoption(parser):
  tiers.add_options(parser)


def pytest_configure(config):
  tiers.register_markers(config)


@pytest.hookimpl(tryfirst=True)  # before -m selects by the markers it adds
def pytest_collection_modifyitems(config, items):
  tiers.skip_tiers_not_asked(config, items)


def pytest_sessionfinish(session):
  tiers.fail_on_skips(session)


def pytest_terminal_summary(terminalreporter):
  tiers.report_skips(terminalreporter)


@pytest.fixture(scope="session")
def reference_python():
  """tf.estimator 2.15's interpreter (its venv is built when missing; fails, never skips)."""
  try:
    return ref_env.ensure_ref_python(log=print)
  except ref_env.RefEnvError as e:
    pytest.fail(f"cannot create the tf.estimator 2.15 reference venv at "
                f"{ref_env.venv_dir()}:\n{e}", pytrace=False)

# y = x . TRUE_W + TRUE_B, exactly: a model that learns gets loss near 0.
TRUE_W = np.array([[2.0], [-3.0]], np.float32)
TRUE_B = 0.5


@pytest.fixture
def linear_data():
  """64 examples of 2 features with y = x . TRUE_W + TRUE_B (float32, no noise)."""
  rng = np.random.RandomState(0)
  x = rng.uniform(-1.0, 1.0, size=(64, 2)).astype(np.float32)
  y = (x @ TRUE_W + TRUE_B).astype(np.float32)
  return x, y


@pytest.fixture
def make_input_fn():
  """Returns `make(x, y=None, batch_size=16, repeat=True, dict_features=True)` -> input_fn.

  The input_fn returns a tf.data.Dataset of ({"x": x}, y) (or of features only
  when y is None), in order (no shuffling), repeated forever if `repeat`.
  """
  def make(x, y=None, batch_size=16, repeat=True, dict_features=True):
    def input_fn():
      features = {"x": x} if dict_features else x
      data = (features, y) if y is not None else features
      dataset = tf.data.Dataset.from_tensor_slices(data)
      if repeat:
        dataset = dataset.repeat()
      return dataset.batch(batch_size)
    return input_fn
  return make


def _linear_model_fn(features, labels, mode, params):
  """Raw tf.compat.v1 linear regression; params: {"learning_rate": float}."""
  x = features["x"] if isinstance(features, dict) else features
  w = tf.compat.v1.get_variable("w", [2, 1], initializer=tf.compat.v1.zeros_initializer())
  b = tf.compat.v1.get_variable("b", [1], initializer=tf.compat.v1.zeros_initializer())
  predictions = tf.matmul(x, w) + b
  if mode == est.ModeKeys.PREDICT:
    return est.EstimatorSpec(mode, predictions={"y": predictions})
  loss = tf.compat.v1.losses.mean_squared_error(labels, predictions)
  train_op = tf.compat.v1.train.GradientDescentOptimizer(
      params.get("learning_rate", 0.1)).minimize(
          loss, global_step=tf.compat.v1.train.get_global_step())
  return est.EstimatorSpec(
      mode, predictions={"y": predictions}, loss=loss, train_op=train_op,
      eval_metric_ops={"rmse": tf.compat.v1.metrics.root_mean_squared_error(
          labels, predictions)})


@pytest.fixture
def linear_model_fn():
  """A raw tf.compat.v1 model_fn(features, labels, mode, params) with variables w and b."""
  return _linear_model_fn


@pytest.fixture
def read_scalars():
  """Returns `read(event_dir) -> {tag: [(step, value), ...]}` via TensorBoard's EventAccumulator."""
  from tensorboard.backend.event_processing import event_accumulator  # pylint: disable=g-import-not-at-top

  def read(event_dir):
    accumulator = event_accumulator.EventAccumulator(
        event_dir, size_guidance={event_accumulator.SCALARS: 0})
    accumulator.Reload()
    return {tag: [(event.step, event.value) for event in accumulator.Scalars(tag)]
            for tag in accumulator.Tags()["scalars"]}
  return read


class LogCapture(logging.Handler):
  """Collects the formatted messages of the "tensorflow" logger."""

  def __init__(self):
    super().__init__(level=logging.DEBUG)
    self.messages = []

  def emit(self, record):
    self.messages.append(record.getMessage())

  @property
  def text(self):
    return "\n".join(self.messages)

  def clear(self):
    self.messages = []


@pytest.fixture
def tf_logs():
  """Captures INFO and above logged through tf.compat.v1.logging during the test.

  Yields a LogCapture: `.messages` (list of str), `.text` (joined), `.clear()`.
  """
  logger = logging.getLogger("tensorflow")
  old_level = logger.level
  capture = LogCapture()
  logger.addHandler(capture)
  logger.setLevel(logging.INFO)
  try:
    yield capture
  finally:
    logger.removeHandler(capture)
    logger.setLevel(old_level)


@pytest.fixture
def run_python(tmp_path):
  """Returns `run(source, *args, timeout=120, env=None)` -> CompletedProcess.

  Writes `source` to a file and runs it with this interpreter in a new process
  (cwd tmp_path, this checkout first on PYTHONPATH), capturing stdout and
  stderr as text. Unless `env` is given, the child gets this environment
  without the TF_USE_LEGACY_KERAS that importing estimator_lite here set, so
  it starts as a user's fresh program does. subprocess.run kills the process if it exceeds `timeout`
  (the test then fails with TimeoutExpired).
  """
  counter = [0]

  def run(source, *args, timeout=120, env=None):
    counter[0] += 1
    script = tmp_path / f"program_{counter[0]}.py"
    script.write_text(source)
    child_env = dict(os.environ if env is None else env)
    if env is None:
      child_env.pop("TF_USE_LEGACY_KERAS", None)
      if _USER_LEGACY_KERAS is not None:
        child_env["TF_USE_LEGACY_KERAS"] = _USER_LEGACY_KERAS
    child_env["PYTHONPATH"] = os.pathsep.join(
        [REPO_ROOT] + [p for p in child_env.get("PYTHONPATH", "").split(os.pathsep) if p])
    child_env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return subprocess.run(
        [sys.executable, str(script), *map(str, args)], cwd=str(tmp_path),
        env=child_env, capture_output=True, text=True, timeout=timeout, check=False)
  return run


def _communicate_or_kill(proc, timeout):
  """Waits for `proc` and returns its output; kills it if the wait fails or times out."""
  try:
    output, _ = proc.communicate(timeout=timeout)
    return output
  finally:
    if proc.poll() is None:
      proc.kill()
      proc.communicate()


@pytest.fixture
def communicate_or_kill():
  """Returns `finish(proc, timeout) -> output`: wait for a Popen, never leave it running."""
  return _communicate_or_kill


def one_weight_model_fn(features, labels, mode):
  """y = w * x with one weight "w" (zero at the start), GradientDescent 0.05.

  With `one_weight_input_fn` (x = 1, 2; y = 2x) training moves w towards 2.
  For tests that need a model but not a particular one (plain function, not a
  fixture: importable with `from conftest import ...`).
  """
  weight = tf.compat.v1.get_variable("w", [1, 1], initializer=tf.compat.v1.zeros_initializer())
  prediction = tf.matmul(features["x"], weight)
  if mode == est.ModeKeys.PREDICT:
    return est.EstimatorSpec(mode, predictions={"y": prediction})
  loss = tf.compat.v1.losses.mean_squared_error(labels, prediction)
  if mode == est.ModeKeys.EVAL:
    return est.EstimatorSpec(mode, loss=loss)
  optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.05)
  return est.EstimatorSpec(mode, loss=loss, train_op=optimizer.minimize(
      loss, global_step=tf.compat.v1.train.get_global_step()))


def one_weight_input_fn():
  """The two examples (x = 1, y = 2) and (x = 2, y = 4) as one batch, repeated forever."""
  return tf.data.Dataset.from_tensors(({"x": [[1.0], [2.0]]}, [[2.0], [4.0]])).repeat()


def _in_process_cluster(ps_tasks):
  """(ClusterSpec, worker server, ps servers): a worker and `ps_tasks` ps tasks, in this process."""
  ports = launch.free_ports(ps_tasks + 1, "127.0.0.1")
  spec = tf.train.ClusterSpec({"ps": [f"127.0.0.1:{port}" for port in ports[:-1]],
                               "worker": [f"127.0.0.1:{ports[-1]}"]})
  servers = [tf.distribute.Server(spec, job_name="ps", task_index=index)
             for index in range(ps_tasks)]
  worker = tf.distribute.Server(spec, job_name="worker", task_index=0)
  return spec, worker, servers


@pytest.fixture(scope="session")
def ps_and_worker():
  """(ClusterSpec, worker server, ps server) of jobs "worker" and "ps", one task each."""
  spec, worker, servers = _in_process_cluster(1)
  return spec, worker, servers[0]


@pytest.fixture(scope="session")
def two_ps_and_worker():
  """(ClusterSpec, worker server, ps servers) of a worker and two ps tasks."""
  return _in_process_cluster(2)


def cross_task_receives(run_metadata):
  """{(from task, to task): the tensors a step receives from the other task, by edge name}."""
  received = {}
  for partition in run_metadata.partition_graphs:
    for node in partition.node:
      if node.op != "_Recv" or node.attr["client_terminated"].b:
        continue
      sender = node.attr["send_device"].s.decode()
      receiver = node.attr["recv_device"].s.decode()
      source, destination = [d.split("/device:")[0].replace("/replica:0", "")
                             for d in (sender, receiver)]
      if source != destination:
        received.setdefault((source, destination), []).append(
            node.attr["tensor_name"].s.decode())
  return received


def train_and_receive(session, train_op, steps):
  """Runs `train_op` `steps` times; returns cross_task_receives of the last run."""
  for _ in range(steps):
    metadata = tf.compat.v1.RunMetadata()
    session.run(train_op, options=tf.compat.v1.RunOptions(output_partition_graphs=True),
                run_metadata=metadata)
  return cross_task_receives(metadata)
