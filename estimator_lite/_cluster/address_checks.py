"""Checks the TF_CONFIG addresses a task needs, where it starts its server or session.

RunConfig() accepts any "host:port" with a port up to 65535, as tf.estimator
2.15 did: its own tests build RunConfigs from placeholder tasks ("host0:0"),
and on Kubernetes a pod's name resolves only once the pod is up, often after
the RunConfig was built. Without a check here, a host that never resolves
leaves a worker waiting for its ps forever, and a port 0 makes a server
listen on a port no peer knows.

So when a task starts its server (or its session across the cluster), the
addresses it needs are checked: its own (where it listens) and those of the
peers it connects to (the ps tasks of a between-graph cluster, every task
of an all-reduce one). Port 0 fails at once; a host that does not resolve
is looked up again for a bounded time (60 s unless
`ESTIMATOR_LITE_RESOLVE_WAIT_SECS` says otherwise), logging that it waits,
then fails naming the job, task, host and fix. Only name resolution is
checked: a peer that refuses connections is normal while it starts.
"""
from __future__ import annotations

import os
import socket
import time
from typing import Dict, Iterable, List, Mapping, Optional, Tuple

import tensorflow as tf

from estimator_lite._cluster import tf_config as _tf_config

_logging = tf.compat.v1.logging

# Environment variable: seconds to keep looking up a host that does not
# resolve yet, before failing (a number >= 0).
RESOLVE_WAIT_ENV = "ESTIMATOR_LITE_RESOLVE_WAIT_SECS"
DEFAULT_RESOLVE_WAIT_SECS = 60.0
# Between two lookups of hosts that did not resolve, and between two
# "still waiting" log lines.
_RETRY_SECS = 1.0
_LOG_EVERY_SECS = 10.0

# (job, task index) -> "host:port"
Addresses = Dict[Tuple[str, int], str]


class TFConfigAddressError(_tf_config.TFConfigError):
  """A TF_CONFIG address this task needs has port 0 or a host that does not resolve."""


def resolve_wait_secs(environ: Optional[Mapping[str, str]] = None) -> float:
  """How long to wait for a host to resolve: `ESTIMATOR_LITE_RESOLVE_WAIT_SECS`, or 60.

  Args:
    environ: the environment to read (default `os.environ`).

  Returns:
    Seconds, >= 0.

  Raises:
    ValueError: the variable is set to something other than a number >= 0.
  """
  raw = (os.environ if environ is None else environ).get(RESOLVE_WAIT_ENV, "").strip()
  if not raw:
    return DEFAULT_RESOLVE_WAIT_SECS
  try:
    secs = float(raw)
  except ValueError:
    secs = -1.0
  if not secs >= 0:  # also refuses nan
    raise ValueError(
        f"{RESOLVE_WAIT_ENV}={raw!r} is not a number of seconds >= 0. Set it to how long a "
        f"task waits for a TF_CONFIG host name to resolve (e.g. {RESOLVE_WAIT_ENV}=120), "
        "or unset it for the default of 60 s.")
  return secs


def _job_addresses(cluster_spec: tf.train.ClusterSpec, job: str) -> Addresses:
  return {(job, index): cluster_spec.task_address(job, index)
          for index in cluster_spec.task_indices(job)}


def needed_addresses(cluster_spec: tf.train.ClusterSpec, task_type: str, task_id: int, *,
                     all_reduce: bool = False) -> Addresses:
  """The addresses task `task_type:task_id` listens on or connects to.

  Its own; with `all_reduce` (MultiWorkerMirroredStrategy), every task of the
  cluster; otherwise, for a trainer (chief, master, worker), the ps tasks,
  which hold the variables. A ps connects to no one.

  Args:
    cluster_spec: the training cluster.
    task_type: this task's job.
    task_id: this task's index in it.
    all_reduce: the tasks train by all-reduce, each talking to every other.

  Returns:
    dict of (job, task index) to "host:port", this task's first.
  """
  addresses: Addresses = {(task_type, task_id): cluster_spec.task_address(task_type, task_id)}
  if all_reduce:
    peer_jobs: Iterable[str] = cluster_spec.jobs
  elif task_type in (_tf_config.CHIEF, _tf_config.MASTER, _tf_config.WORKER):
    peer_jobs = [job for job in cluster_spec.jobs if job == _tf_config.PS]
  else:
    peer_jobs = []
  for job in peer_jobs:
    for key, address in _job_addresses(cluster_spec, job).items():
      addresses.setdefault(key, address)
  return addresses


def _describe(key: Tuple[str, int], address: str) -> str:
  job, index = key
  return f"cluster job {job!r} task {index} has the address {address!r}"


def _check_ports(addresses: Addresses, own: Tuple[str, int]) -> None:
  for key, address in addresses.items():
    _, port = _tf_config.split_address(address)
    if port.isdigit() and int(port) == 0:
      role = ("this task would listen on a port chosen at random, which no peer knows"
              if key == own else "no task listens on port 0, so this task cannot reach it")
      raise TFConfigAddressError(
          f"TF_CONFIG: {_describe(key, address)}, with port 0: {role}. Give each task a fixed "
          "port in 1-65535 in TF_CONFIG's \"cluster\" (e.g. \"host0:2222\"), the same in every "
          "task's TF_CONFIG.")


def _resolves(host: str) -> Optional[str]:
  """None if `host` resolves, else why not (the resolver's message)."""
  try:
    socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
  except (socket.gaierror, UnicodeError) as error:
    return str(error)
  return None


def _check_hosts(addresses: Addresses, wait_secs: float) -> None:
  hosts: Dict[str, List[Tuple[Tuple[str, int], str]]] = {}
  for key, address in addresses.items():
    host, _ = _tf_config.split_address(address)
    hosts.setdefault(host, []).append((key, address))
  start = time.monotonic()
  next_log = start
  while True:
    failures = {host: why for host in hosts if (why := _resolves(host)) is not None}
    if not failures:
      return
    waited = time.monotonic() - start
    if waited >= wait_secs:
      host, why = next(iter(failures.items()))
      key, address = hosts[host][0]
      raise TFConfigAddressError(
          f"TF_CONFIG: {_describe(key, address)}: host {host!r} does not resolve (waited "
          f"{wait_secs:g} s): {why}. Fix the host name in TF_CONFIG's \"cluster\" (the same "
          "in every task's TF_CONFIG), or make it resolvable from this machine (DNS, "
          f"/etc/hosts). If names resolve only once all tasks are up (e.g. Kubernetes pods), "
          f"wait longer with {RESOLVE_WAIT_ENV}=<secs>.")
    if time.monotonic() >= next_log:
      _logging.warning(
          "TF_CONFIG: waiting for host(s) %s to resolve (%.0f s of up to %g s; set %s to "
          "change the wait).", sorted(failures), waited, wait_secs, RESOLVE_WAIT_ENV)
      next_log += _LOG_EVERY_SECS
    time.sleep(max(0.0, min(_RETRY_SECS, wait_secs - waited)))


def check_task_addresses(cluster_spec: tf.train.ClusterSpec, task_type: str, task_id: int, *,
                         all_reduce: bool = False, wait_secs: Optional[float] = None) -> None:
  """Checks the addresses this task needs: no port 0, and every host resolves in time.

  Args:
    cluster_spec: the training cluster.
    task_type: this task's job.
    task_id: this task's index in it.
    all_reduce: the tasks train by all-reduce (see `needed_addresses`).
    wait_secs: how long to wait for a host to resolve; default
      `resolve_wait_secs()`.

  Raises:
    TFConfigAddressError: a needed address has port 0, or its host still
      does not resolve after `wait_secs`; the job, task, address and fix are
      named.
  """
  addresses = needed_addresses(cluster_spec, task_type, task_id, all_reduce=all_reduce)
  _check_ports(addresses, own=(task_type, task_id))
  _check_hosts(addresses, resolve_wait_secs() if wait_secs is None else wait_secs)
