"""Whether a cluster's tasks share this machine's cores, as the launcher's do.

`python -m estimator_lite.launch` starts every task of a cluster on one
machine, and a TF_CONFIG may put several tasks on one host. There,
TensorFlow's idle threads that spin while waiting for work take cores from
the tasks that have work: with thread spinning off (ConfigProto
`experimental.disable_thread_spinning`) a cluster of a ps, a chief and 1 to 4
workers on 2 cores made more global steps a second, with less CPU a step
(benchmarks/RESULTS.md, "Parameter-server clusters"). On a cluster of one
task a machine, spinning is TensorFlow's default and stays so. The launcher
says so through the tasks' environment; TF_CONFIG says so by its addresses.
This module imports nothing heavy, because the launcher starts without
TensorFlow.
"""
from __future__ import annotations

import ipaddress
from typing import Any, Mapping

# Set to "1" by the launcher in every task's environment.
ENV = "ESTIMATOR_LITE_TASKS_SHARE_MACHINE"
_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


def launcher_environment() -> dict:
  """What the launcher adds to each task's environment."""
  return {ENV: "1"}


def tasks_share_machine(environ: Mapping[str, str]) -> bool:
  """Whether `environ` says this task shares its machine with the cluster's other tasks."""
  return environ.get(ENV) == "1"


def _host(address: str) -> str:
  """The host of a "host:port" address, every name of the loopback as one."""
  host = address.rsplit(":", 1)[0].strip("[]").lower()
  try:
    loopback = ipaddress.ip_address(host).is_loopback
  except ValueError:
    loopback = host in _LOOPBACK_NAMES
  return "localhost" if loopback else host


def tasks_share_host(cluster: Mapping[str, Any], task_type: str, task_id: int) -> bool:
  """Whether TF_CONFIG's `cluster` puts another task on this task's host.

  Hosts are compared as written (no name is resolved: TF_CONFIG is read
  before the other tasks' names may resolve), the loopback's names as one.

  Args:
    cluster: TF_CONFIG's "cluster": each job's addresses, a list or a dict
      by task index.
    task_type, task_id: this task.

  Returns:
    True where another task's address names this task's host.
  """
  addresses = {}
  for job, tasks in cluster.items():
    indexed = tasks.items() if isinstance(tasks, Mapping) else enumerate(tasks)
    for index, address in indexed:
      addresses[(job, int(index))] = _host(address)
  own = addresses.get((task_type, task_id))
  return own is not None and sum(host == own for host in addresses.values()) > 1
