"""A cluster task's gRPC server and its staggered start (estimator_lite/_server.py).

train_and_evaluate starts these for the ps, chief, master and worker roles.
The server tests start real `tf.distribute.Server`s on free localhost ports in
a child process: TensorFlow cannot stop a server in-process, so a server
started in the test process would hold its port and threads until pytest
exits.
"""
import json
import time

from google.protobuf import text_format
import pytest
import tensorflow as tf

import estimator_lite as est
from estimator_lite._cluster import server as _server
from estimator_lite import launch

# Runs in a fresh interpreter: argv[1] is a JSON list of cases
# {"name", "tf_config", "session_config": text-format ConfigProto or null}.
# Starts each case's server through _server.start_std_server, exactly as
# train_and_evaluate does, and prints what the real server was given.
_START_SERVERS = r"""
import json
import os
import socket
import sys

from google.protobuf import text_format
import tensorflow as tf

import estimator_lite as est
from estimator_lite._cluster import server as _server

report = {}
for case in json.loads(sys.argv[1]):
  os.environ["TF_CONFIG"] = json.dumps(case["tf_config"])
  session_config = None
  if case["session_config"] is not None:
    session_config = text_format.Parse(case["session_config"], tf.compat.v1.ConfigProto())
  config = est.RunConfig(session_config=session_config)
  server = _server.start_std_server(config)
  server_def = server.server_def
  host, port = server.target[len("grpc://"):].rsplit(":", 1)
  # The server really serves: its port accepts a connection.
  with socket.create_connection((host, int(port)), timeout=10):
    pass
  report[case["name"]] = {
      "target": server.target,
      "job_name": server_def.job_name,
      "task_index": server_def.task_index,
      "protocol": server_def.protocol,
      "default_session_config": text_format.MessageToString(
          server_def.default_session_config),
  }
print("REPORT " + json.dumps(report), flush=True)
# A started server cannot be stopped; leave without waiting for its threads.
os._exit(0)
"""


def _cluster(ports):
  return {"chief": [f"localhost:{ports[0]}"], "worker": [f"localhost:{ports[1]}"],
          "ps": [f"localhost:{ports[2]}"]}


def _parse_config(text):
  return text_format.Parse(text, tf.compat.v1.ConfigProto())


def test_session_config_and_default_device_filters_reach_the_real_server(run_python):
  user_config = tf.compat.v1.ConfigProto(
      inter_op_parallelism_threads=3, intra_op_parallelism_threads=2,
      allow_soft_placement=True, log_device_placement=True,
      gpu_options=tf.compat.v1.GPUOptions(allow_growth=True))
  ports = launch.free_ports(9)
  user_cluster, default_cluster, ps_cluster = (_cluster(ports[i:i + 3]) for i in (0, 3, 6))
  cases = [
      {"name": "worker_user_config", "session_config": text_format.MessageToString(user_config),
       "tf_config": {"cluster": user_cluster, "task": {"type": "worker", "index": 0}}},
      {"name": "worker_default_config", "session_config": None,
       "tf_config": {"cluster": default_cluster, "task": {"type": "worker", "index": 0}}},
      {"name": "ps_default_config", "session_config": None,
       "tf_config": {"cluster": ps_cluster, "task": {"type": "ps", "index": 0}}},
  ]

  done = run_python(_START_SERVERS, json.dumps(cases), timeout=180)

  assert done.returncode == 0, done.stdout + done.stderr
  lines = [line for line in done.stdout.splitlines() if line.startswith("REPORT ")]
  assert len(lines) == 1, done.stdout + done.stderr
  report = json.loads(lines[0][len("REPORT "):])

  user = report["worker_user_config"]
  assert user["target"] == f"grpc://localhost:{ports[1]}"
  assert (user["job_name"], user["task_index"], user["protocol"]) == ("worker", 0, "grpc")
  served = _parse_config(user["default_session_config"])
  assert served.inter_op_parallelism_threads == 3
  assert served.intra_op_parallelism_threads == 2
  assert served.allow_soft_placement and served.gpu_options.allow_growth
  # As tf.estimator: a server never logs placements (it would log those of
  # every session it runs); the rest of the user's config is kept as given.
  assert not served.log_device_placement
  expected = tf.compat.v1.ConfigProto()
  expected.CopyFrom(user_config)
  expected.log_device_placement = False
  assert served == expected

  # No session_config: RunConfig's default for a worker, whose device
  # filters keep it from waiting for (or talking to) the other workers.
  default = report["worker_default_config"]
  assert default["target"] == f"grpc://localhost:{ports[4]}"
  served = _parse_config(default["default_session_config"])
  assert list(served.device_filters) == ["/job:ps", "/job:worker/task:0"]
  assert served.allow_soft_placement
  # The ps serves every trainer: tf.estimator's filters name them all.
  ps = report["ps_default_config"]
  assert (ps["job_name"], ps["target"]) == ("ps", f"grpc://localhost:{ports[8]}")
  assert list(_parse_config(ps["default_session_config"]).device_filters) == [
      "/job:ps", "/job:worker", "/job:chief", "/job:master"]


# -- staggered start -------------------------------------------------------------------
CLUSTER = {"chief": ["h0:2222"], "worker": [f"h{i}:2222" for i in range(1, 22)],
           "ps": ["h30:2222"]}


def _config(monkeypatch, task_type, task_id, **kwargs):
  monkeypatch.setenv("TF_CONFIG", json.dumps(
      {"cluster": CLUSTER, "task": {"type": task_type, "index": task_id}}))
  return est.RunConfig(**kwargs)


def test_worker_start_delay_grows_by_5_secs_per_worker_up_to_the_cap(monkeypatch):
  def delay(*args, **kwargs):
    return _server.worker_start_delay_secs(_config(monkeypatch, *args, **kwargs))

  # tf.estimator's stagger: worker i waits min(60, (i + 1) * 5) seconds.
  assert [delay("worker", i) for i in (0, 1, 2, 10, 11, 20)] == [5, 10, 15, 55, 60, 60]
  # The chief (and the ps) never wait.
  assert delay("chief", 0) == 0 and delay("ps", 0) == 0
  # RunConfig(experimental_max_worker_delay_secs) caps it.
  assert [delay("worker", i, experimental_max_worker_delay_secs=12) for i in (0, 1, 2, 5)] == [
      5, 10, 12, 12]
  assert delay("worker", 3, experimental_max_worker_delay_secs=0) == 0
  assert delay("chief", 0, experimental_max_worker_delay_secs=12) == 0


@pytest.mark.parametrize("task_type, task_id, expected_secs", [
    ("worker", 0, 1.0), ("worker", 7, 1.0), ("chief", 0, 0.0)])
def test_wait_before_training_really_waits_the_delay(monkeypatch, task_type, task_id,
                                                     expected_secs):
  config = _config(monkeypatch, task_type, task_id, experimental_max_worker_delay_secs=1)
  start = time.monotonic()
  _server.wait_before_training(config)
  waited = time.monotonic() - start
  # A sleep never ends early; 1 s of slack for a loaded machine.
  assert expected_secs <= waited < expected_secs + 1.0, waited


def test_start_std_server_refuses_a_config_without_a_cluster(monkeypatch):
  monkeypatch.delenv("TF_CONFIG", raising=False)
  with pytest.raises(RuntimeError, match=r"set the TF_CONFIG environment variable \(got "
                                         r"cluster=\{\}, task_type='worker', task_id=0\)"):
    _server.start_std_server(est.RunConfig())


def test_one_node_cluster_trains_without_a_server(monkeypatch):
  port, = launch.free_ports(1)
  monkeypatch.setenv("TF_CONFIG", json.dumps(
      {"cluster": {"chief": [f"localhost:{port}"]}, "task": {"type": "chief", "index": 0}}))
  assert _server.start_std_server(est.RunConfig()) is None
