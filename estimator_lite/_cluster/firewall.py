"""The iptables rules that let only a cluster's own tasks reach a task's TensorFlow server.

TensorFlow's gRPC server listens on every interface, unauthenticated, and runs
whatever graph ops a client sends. On a network that is not wholly trusted,
each machine should accept connections to its task's port from the cluster's
peers only. `python -m estimator_lite.launch --print-firewall` prints these
rules for the TF_CONFIG of the machine it runs on.
"""
from __future__ import annotations

import ipaddress
import socket
from typing import Dict, List, Optional

from estimator_lite._cluster import tf_config as _tf_config


class FirewallError(ValueError):
  """The rules cannot be written for this TF_CONFIG; the message says why."""


def _resolve(host: str, task: str) -> List[str]:
  try:
    infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
  except socket.gaierror as e:
    raise FirewallError(
        f"TF_CONFIG names host {host!r} for {task}, which does not resolve ({e}): fix the "
        "address, or run this where the cluster's host names resolve.") from e
  return sorted({str(info[4][0]) for info in infos})


def _peers(cluster_spec) -> Dict[str, List[str]]:
  # Every address of every training task (this one too: a task may reach its
  # own server through the machine's address), and the tasks behind each.
  peers: Dict[str, List[str]] = {}
  for job in cluster_spec.jobs:
    for index in cluster_spec.task_indices(job):
      task = f"{job}:{index}"
      host, _ = _tf_config.split_address(cluster_spec.task_address(job, index))
      for ip in _resolve(host, task):
        peers.setdefault(ip, []).append(task)
  return peers


def _rules(command: str, port: str, peers: Dict[str, List[str]]) -> List[str]:
  # Inserted at the top of INPUT, in order, so that a broader ACCEPT rule
  # further down cannot let others in before the DROP.
  lines = [f"{command} -I INPUT 1 -p tcp --dport {port} -i lo -j ACCEPT"]
  for position, (ip, tasks) in enumerate(sorted(peers.items()), start=2):
    lines.append(f"{command} -I INPUT {position} -p tcp --dport {port} -s {ip} -j ACCEPT"
                 f"  # {', '.join(tasks)}")
  lines.append(f"{command} -I INPUT {len(peers) + 2} -p tcp --dport {port} -j DROP")
  return lines


def rules_for_tf_config(raw: Optional[str]) -> str:
  """The shell lines (iptables and ip6tables) that guard this task's port.

  Args:
    raw: the TF_CONFIG JSON of the machine the rules are for.

  Returns:
    Comment lines, then the rules: loopback and the cluster's peers accepted,
    everyone else dropped, for IPv4 and IPv6.

  Raises:
    FirewallError: TF_CONFIG names no cluster, or a host does not resolve.
  """
  role = _tf_config.parse_tf_config(raw)
  task = f"{role.task_type}:{role.task_id}"
  if role.task_type == _tf_config.EVALUATOR:
    return (f"# {task} runs no TensorFlow server (it reads checkpoints from model_dir): "
            "there is no port to guard.")
  if not role.distributed:
    raise FirewallError(
        "TF_CONFIG names no cluster, so this process runs no TensorFlow server: set "
        "TF_CONFIG to this machine's (cluster and task) and run --print-firewall again.")
  _, port = _tf_config.split_address(
      role.cluster_spec.task_address(role.task_type, role.task_id))
  peers = _peers(role.cluster_spec)
  v4 = {ip: tasks for ip, tasks in peers.items() if ipaddress.ip_address(ip).version == 4}
  v6 = {ip: tasks for ip, tasks in peers.items() if ipaddress.ip_address(ip).version == 6}
  header = [
      f"# {task}: its TensorFlow server listens on port {port} of every interface, "
      "unauthenticated.",
      "# Run as root on this machine: only loopback and the cluster's tasks may connect.",
  ]
  return "\n".join(header + _rules("iptables", port, v4) + _rules("ip6tables", port, v6))
