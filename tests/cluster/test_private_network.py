"""The launcher's cluster is unreachable from the network: its tasks run in a private namespace.

A real cluster (chief, worker, ps, evaluator) runs
tests/cluster/private_network_program.py through `python -m
estimator_lite.launch`. While its training tasks hold before their first step
(servers up, sessions connected), the test connects to every task's port from
outside the namespace (loopback and each of this machine's other addresses):
every connection must fail; the same connections made from inside the
namespace must succeed (so the ports were really listening). Then training,
evaluation and the export complete. `--expose-to-network` is the control: the
same probe from outside connects, and the launcher's warning names the ports.
Every wait is bounded; the launcher and its tasks are stopped by the PIDs this
test started or the launcher printed.
"""
import fcntl
import json
import os
import re
import socket
import struct
import subprocess
import sys
import time

import pytest
import tensorflow as tf

import test_roles as roles

# Tier `long` (tests/tiers.py): runs with --tier long.
pytestmark = pytest.mark.long

PROGRAM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "private_network_program.py")
_SERVERS_UP_TIMEOUT_SECS = 120
_SIOCGIFADDR = 0x8915


def _local_ipv4_addresses():
  # Every IPv4 address of this machine's interfaces (loopback included): the
  # addresses someone on the network, or on this machine, would connect to.
  addresses = set()
  with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
    for _, name in socket.if_nameindex():
      try:
        answer = fcntl.ioctl(sock, _SIOCGIFADDR, struct.pack("256s", name.encode()[:15]))
      except OSError:  # an interface without an IPv4 address
        continue
      addresses.add(socket.inet_ntoa(answer[20:24]))
  return sorted(addresses | {"127.0.0.1"})


def _connects(host, port):
  try:
    with socket.create_connection((host, port), timeout=3):
      return True
  except OSError:
    return False


class _Launched:
  """The launcher process, its log, and what it printed about the cluster."""

  def __init__(self, tmp_path, launcher_args, env=None, prefix=()):
    self.log_path = str(tmp_path / "launch.log")
    self.release_file = str(tmp_path / "release")
    self.model_dir = str(tmp_path / "model")
    command = [*prefix, sys.executable, "-m", "estimator_lite.launch", "--ps", "1",
               "--workers", "1", "--evaluator", *launcher_args, "--", sys.executable, PROGRAM,
               "--model_dir", self.model_dir, "--release_file", self.release_file]
    self._log = open(self.log_path, "wb")
    self.process = subprocess.Popen(command, cwd=roles.REPO, env=env or roles.launcher_env(),
                                    stdout=self._log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL)

  def output(self):
    with open(self.log_path, "rb") as f:
      return f.read().decode(errors="replace")

  def wait_for_servers(self):
    """Waits until chief, worker and ps said their servers listen; returns {task: port}."""
    deadline = time.monotonic() + _SERVERS_UP_TIMEOUT_SECS
    while time.monotonic() < deadline and self.process.poll() is None:
      found = dict(re.findall(r"TensorFlow server for (\w+:\d+) listens unauthenticated on "
                              r"all interfaces at port (\d+)", self.output()))
      if len(found) == 3:
        return {task: int(port) for task, port in found.items()}
      time.sleep(0.2)
    raise AssertionError(f"servers not up in {_SERVERS_UP_TIMEOUT_SECS} s:\n"
                         f"{self.output()[-6000:]}")

  def finish(self):
    """Releases the training tasks; returns the launcher's exit status."""
    open(self.release_file, "w").close()
    try:
      return self.process.wait(roles.CLUSTER_TIMEOUT_SECS)
    except subprocess.TimeoutExpired:
      raise AssertionError(f"cluster still running:\n{self.output()[-6000:]}") from None

  def close(self):
    roles.stop_launcher(self.process)
    roles.kill_launched_tasks(self.log_path)
    self._log.close()


def _inside_connects(holder_pid, mode, ports):
  # The same probe from inside the namespace, through the launcher's own way in.
  probe = ("import socket, sys\n"
           "for port in map(int, sys.argv[1:]):\n"
           "  socket.create_connection(('127.0.0.1', port), timeout=3).close()\n"
           "print('all connected')\n")
  command = [sys.executable, "-m", "estimator_lite._cluster.private_network", "join",
             str(holder_pid), mode, "--", sys.executable, "-c", probe, *map(str, ports)]
  result = subprocess.run(command, cwd=roles.REPO, env=roles.launcher_env(),
                          capture_output=True, text=True, timeout=60)
  return result.returncode == 0 and "all connected" in result.stdout, result.stderr


def _assert_trained_evaluated_exported(launched, status):
  output = launched.output()
  assert status == 0, output[-6000:]
  # Asynchronous training: a worker's step in flight may land past max_steps.
  final_step = int(tf.train.latest_checkpoint(launched.model_dir).rsplit("-", 1)[1])
  assert final_step >= 40, output[-3000:]
  eval_dir = os.path.join(launched.model_dir, "eval")
  assert any(name.startswith("events.out") for name in os.listdir(eval_dir))
  export_root = os.path.join(launched.model_dir, "export", "final")
  exported, = os.listdir(export_root)
  loaded = tf.saved_model.load(os.path.join(export_root, exported))
  served = loaded.signatures["serving_default"](x=tf.constant([[1.0]]))
  assert set(served) == {"y"}


@pytest.mark.parametrize("mode", ["default", "user"])
def test_no_task_port_is_reachable_from_outside_the_launchers_namespace(tmp_path, mode):
  # "default": what a user gets (as root here: a network namespace alone);
  # "user": an unprivileged user+network namespace, what a non-root user gets.
  env = roles.launcher_env()
  if mode == "user":
    env["ESTIMATOR_LITE_NETNS"] = "user"
  launched = _Launched(tmp_path, [], env=env)
  try:
    ports = launched.wait_for_servers()
    holder = re.search(r"network: private namespace \((\w+) mode, held by pid (\d+)\)",
                       launched.output())
    assert holder, launched.output()[-3000:]
    assert holder.group(1) == ("user" if mode == "user" else "root" if os.geteuid() == 0
                               else "user")
    reachable = [(host, task, port) for task, port in ports.items()
                 for host in _local_ipv4_addresses() if _connects(host, port)]
    inside_ok, inside_errors = _inside_connects(holder.group(2), holder.group(1),
                                                ports.values())
    status = launched.finish()
  finally:
    launched.close()
  assert not reachable, f"reachable from outside the namespace: {reachable}"
  assert inside_ok, f"the tasks' ports did not answer inside the namespace: {inside_errors}"
  _assert_trained_evaluated_exported(launched, status)


def test_expose_to_network_warns_and_is_reachable(tmp_path):
  launched = _Launched(tmp_path, ["--expose-to-network"])
  try:
    ports = launched.wait_for_servers()
    reachable = {task: _connects("127.0.0.1", port) for task, port in ports.items()}
    status = launched.finish()
  finally:
    launched.close()
  output = launched.output()
  warning = re.search(r"\[launch\] WARNING: --expose-to-network: .*", output)
  assert warning, output[-3000:]
  for task, port in ports.items():
    assert f"{task} port {port}" in warning.group(0)
  assert "private namespace" not in output
  assert reachable == {task: True for task in ports}
  _assert_trained_evaluated_exported(launched, status)


def _in_user_namespace_without(limits):
  # A user namespace of its own (as root, mapped to itself) in which the
  # kernel makes no namespace of the kinds in `limits`: a machine where the
  # launcher cannot isolate the cluster, made for real, for this test only.
  writes = "; ".join(f"echo 0 > /proc/sys/user/max_{kind}_namespaces" for kind in limits)
  return ["unshare", "--user", "--map-root-user", "sh", "-c", f'{writes}; exec "$@"', "sh"]


def test_refuses_to_start_when_no_namespace_can_be_made(tmp_path):
  result = subprocess.run(
      [*_in_user_namespace_without(["user", "net"]), sys.executable, "-m",
       "estimator_lite.launch", "--ps", "1", "--", sys.executable, "-c", "print('ran')"],
      cwd=roles.REPO, env=roles.launcher_env(), capture_output=True, text=True, timeout=60)
  assert result.returncode == 2, result.stderr
  assert "cannot run the cluster in a private network namespace" in result.stderr
  assert "No space left on device" in result.stderr  # the kernel's own reason
  assert "--expose-to-network" in result.stderr
  assert "ran" not in result.stdout


def test_print_firewall_rules_for_this_tasks_tf_config():
  cluster = {"chief": ["127.0.0.2:2222"], "worker": ["127.0.0.3:2222", "127.0.0.3:2223"],
             "ps": ["127.0.0.4:2224"], "evaluator": ["127.0.0.5:2225"]}

  def rules(task):
    env = dict(roles.launcher_env(),
               TF_CONFIG=json.dumps({"cluster": cluster, "task": task}))
    return subprocess.run([sys.executable, "-m", "estimator_lite.launch", "--print-firewall"],
                          cwd=roles.REPO, env=env, capture_output=True, text=True, timeout=120)

  ps = rules({"type": "ps", "index": 0})
  assert ps.returncode == 0, ps.stderr
  assert [line for line in ps.stdout.splitlines() if not line.startswith("#")] == [
      "iptables -I INPUT 1 -p tcp --dport 2224 -i lo -j ACCEPT",
      "iptables -I INPUT 2 -p tcp --dport 2224 -s 127.0.0.2 -j ACCEPT  # chief:0",
      "iptables -I INPUT 3 -p tcp --dport 2224 -s 127.0.0.3 -j ACCEPT  # worker:0, worker:1",
      "iptables -I INPUT 4 -p tcp --dport 2224 -s 127.0.0.4 -j ACCEPT  # ps:0",
      "iptables -I INPUT 5 -p tcp --dport 2224 -j DROP",
      "ip6tables -I INPUT 1 -p tcp --dport 2224 -i lo -j ACCEPT",
      "ip6tables -I INPUT 2 -p tcp --dport 2224 -j DROP",
  ]
  assert "ps:0: its TensorFlow server listens on port 2224" in ps.stdout
  worker = rules({"type": "worker", "index": 1})
  assert "--dport 2223 -j DROP" in worker.stdout
  evaluator = rules({"type": "evaluator", "index": 0})
  assert evaluator.returncode == 0 and "no port to guard" in evaluator.stdout
  unresolvable = dict(cluster, chief=["no-such-host.invalid:2222"])
  env = dict(roles.launcher_env(), TF_CONFIG=json.dumps(
      {"cluster": unresolvable, "task": {"type": "ps", "index": 0}}))
  bad = subprocess.run([sys.executable, "-m", "estimator_lite.launch", "--print-firewall"],
                       cwd=roles.REPO, env=env, capture_output=True, text=True, timeout=120)
  assert bad.returncode == 2 and "'no-such-host.invalid' for chief:0" in bad.stderr
