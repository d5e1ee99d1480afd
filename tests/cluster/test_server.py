"""A cluster task's gRPC server and its staggered start (estimator_lite/_server.py).

train_and_evaluate starts these for the ps, chief, master and worker roles.
The server tests start real `tf.distribute.Server`s on free localhost ports in
a child process: TensorFlow cannot stop a server in-process, so a server
started in the test process would hold its port and threads until pytest
exits.
"""
import json
import os
import time

from google.protobuf import text_format
import pytest
import tensorflow as tf

import estimator_lite as est
from estimator_lite._cluster import address_checks
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


# -- the addresses a task needs, checked when its server starts ------------------------
# Runs in a fresh interpreter: argv[1] is a JSON list of cases {"name", "tf_config"}.
# Starts each case's server as train_and_evaluate does and prints, per case,
# the error it raised (or "started") and how long it took.
_START_AND_REPORT_ERRORS = r"""
import json
import os
import sys
import time

import estimator_lite as est
from estimator_lite._cluster import server as _server

report = {}
for case in json.loads(sys.argv[1]):
  os.environ["TF_CONFIG"] = json.dumps(case["tf_config"])
  start = time.monotonic()
  try:
    _server.start_std_server(est.RunConfig())
    outcome = {"error": None}
  except Exception as error:  # reported to the test
    outcome = {"error": type(error).__name__, "message": str(error),
               "is_value_error": isinstance(error, ValueError)}
  outcome["secs"] = time.monotonic() - start
  report[case["name"]] = outcome
print("REPORT " + json.dumps(report), flush=True)
os._exit(0)
"""


def test_tf_config_host_that_does_not_resolve_or_port_0_fails_naming_the_task(run_python):
  ports = launch.free_ports(4)
  cluster = {"chief": [f"localhost:{ports[0]}"], "worker": [f"localhost:{ports[1]}"],
             "ps": ["nosuchhost.invalid:2222"]}
  cases = [
      # A worker's ps does not resolve: waited for (1 s here), then named.
      {"name": "ps_host", "tf_config": {"cluster": cluster, "task": {"type": "worker",
                                                                    "index": 0}}},
      # The ps's own address on port 0: it would listen where no peer looks.
      {"name": "own_port_0", "tf_config": {
          "cluster": {"chief": [f"localhost:{ports[2]}"], "ps": ["localhost:0"]},
          "task": {"type": "ps", "index": 0}}},
      # The chief's ps on port 0.
      {"name": "peer_port_0", "tf_config": {
          "cluster": {"chief": [f"localhost:{ports[3]}"], "ps": ["localhost:0"]},
          "task": {"type": "chief", "index": 0}}},
  ]

  done = run_python(_START_AND_REPORT_ERRORS, json.dumps(cases), timeout=120,
                    env=dict(os.environ, ESTIMATOR_LITE_RESOLVE_WAIT_SECS="1"))

  assert done.returncode == 0, done.stdout + done.stderr
  line, = [line for line in done.stdout.splitlines() if line.startswith("REPORT ")]
  report = json.loads(line[len("REPORT "):])
  ps_host = report["ps_host"]
  assert ps_host["error"] == "TFConfigAddressError" and ps_host["is_value_error"], ps_host
  assert ps_host["message"].startswith(
      "TF_CONFIG: cluster job 'ps' task 0 has the address 'nosuchhost.invalid:2222': host "
      "'nosuchhost.invalid' does not resolve (waited 1 s)"), ps_host
  assert "ESTIMATOR_LITE_RESOLVE_WAIT_SECS" in ps_host["message"]
  # The wait is bounded by the setting, and logged while it lasts.
  assert 1.0 <= ps_host["secs"] < 10, ps_host
  assert "TF_CONFIG: waiting for host(s) ['nosuchhost.invalid'] to resolve" in done.stderr
  for name, job in (("own_port_0", "ps"), ("peer_port_0", "ps")):
    outcome = report[name]
    assert outcome["error"] == "TFConfigAddressError", outcome
    assert outcome["message"].startswith(
        f"TF_CONFIG: cluster job '{job}' task 0 has the address 'localhost:0', with port 0"), outcome
    assert "Give each task a fixed port in 1-65535" in outcome["message"]
    assert outcome["secs"] < 5, outcome


def test_a_worker_starts_before_its_ps_is_up(run_python):
  # Only name resolution is checked: a ps that does not answer yet is normal.
  ports = launch.free_ports(3)
  cases = [{"name": "worker", "tf_config": {"cluster": _cluster(ports),
                                            "task": {"type": "worker", "index": 0}}}]

  done = run_python(_START_AND_REPORT_ERRORS, json.dumps(cases), timeout=120)

  assert done.returncode == 0, done.stdout + done.stderr
  line, = [line for line in done.stdout.splitlines() if line.startswith("REPORT ")]
  assert json.loads(line[len("REPORT "):])["worker"]["error"] is None, line


def test_resolve_wait_setting_must_be_seconds():
  assert address_checks.resolve_wait_secs({}) == 60
  assert address_checks.resolve_wait_secs({"ESTIMATOR_LITE_RESOLVE_WAIT_SECS": "2.5"}) == 2.5
  for bad in ("-1", "soon", "nan"):
    with pytest.raises(ValueError, match=rf"ESTIMATOR_LITE_RESOLVE_WAIT_SECS='{bad}' is not a "
                                         r"number of seconds >= 0"):
      address_checks.resolve_wait_secs({"ESTIMATOR_LITE_RESOLVE_WAIT_SECS": bad})


def test_a_task_checks_its_own_address_and_the_peers_it_connects_to():
  cluster = tf.train.ClusterSpec({"chief": ["c:1"], "worker": ["w0:1", "w1:1"],
                                  "ps": ["p0:1", "p1:1"]})
  ps_tasks = {("ps", 0): "p0:1", ("ps", 1): "p1:1"}
  # A trainer talks to the ps tasks only; never to the other trainers, whose
  # addresses may be stale or unresolvable without harm.
  assert address_checks.needed_addresses(cluster, "worker", 1) == {("worker", 1): "w1:1",
                                                                    **ps_tasks}
  assert address_checks.needed_addresses(cluster, "chief", 0) == {("chief", 0): "c:1",
                                                                   **ps_tasks}
  # A ps only listens.
  assert address_checks.needed_addresses(cluster, "ps", 1) == {("ps", 1): "p1:1"}
  # All-reduce: every task talks to every other.
  assert len(address_checks.needed_addresses(cluster, "worker", 0, all_reduce=True)) == 5
