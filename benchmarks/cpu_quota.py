"""A process held to a fraction of a core (a Linux cgroup's CPU quota), as on a small machine.

On a machine whose cores every task of a cluster shares, no one task is ever
the bottleneck: the machine is. Holding each ps task to a fixed CPU budget
makes the ps the bound, as on a cluster whose ps machines are busier than its
workers, and shows what balancing the ps tasks' load buys in global steps/s.
Needs root and the cgroup v1 `cpu` controller (or cgroup v2 with `cpu`).
"""
from __future__ import annotations

import os
from typing import List

_V1_ROOT = "/sys/fs/cgroup/cpu"
_V2_ROOT = "/sys/fs/cgroup"
_PERIOD_US = 100_000


class CpuQuota:
  """Cgroups of this process's making, one a limited process; remove() deletes them.

  Args:
    cores: each limited process's budget, in cores (0.25: a quarter of one).
    prefix: the cgroups' name prefix (this process's pid is added).

  Raises:
    OSError: no writable cgroup cpu controller (not root, or none mounted).
  """

  def __init__(self, cores: float, prefix: str = "estimator_lite_bench") -> None:
    if cores <= 0:
      raise ValueError(f"cores must be > 0; got {cores!r}")
    self._quota_us = max(1000, int(cores * _PERIOD_US))
    self._root, self._v2 = self._controller()
    self._prefix = f"{prefix}_{os.getpid()}"
    self._made: List[str] = []

  @staticmethod
  def _controller() -> tuple:
    if os.path.exists(os.path.join(_V1_ROOT, "cpu.cfs_quota_us")):
      return _V1_ROOT, False
    if "cpu" in _read(os.path.join(_V2_ROOT, "cgroup.controllers")).split():
      return _V2_ROOT, True
    raise OSError("no cgroup cpu controller at /sys/fs/cgroup/cpu (v1) or /sys/fs/cgroup (v2)")

  def limit(self, pid: int) -> None:
    """Holds process `pid` (and the threads it makes from now on) to the quota."""
    path = os.path.join(self._root, f"{self._prefix}_{len(self._made)}")
    os.mkdir(path)
    self._made.append(path)
    if self._v2:
      _write(os.path.join(path, "cpu.max"), f"{self._quota_us} {_PERIOD_US}")
    else:
      _write(os.path.join(path, "cpu.cfs_period_us"), str(_PERIOD_US))
      _write(os.path.join(path, "cpu.cfs_quota_us"), str(self._quota_us))
    # Every thread the process has now: cgroup.procs moves them all.
    _write(os.path.join(path, "cgroup.procs"), str(pid))

  def remove(self) -> None:
    """Deletes the cgroups (their processes, if any still run, go back to the root group)."""
    root_procs = os.path.join(self._root, "cgroup.procs")
    for path in self._made:
      for pid in _read(os.path.join(path, "cgroup.procs")).split():
        try:
          _write(root_procs, pid)
        except OSError:  # it ended meanwhile
          pass
      try:
        os.rmdir(path)
      except OSError:
        pass
    self._made = []


def _read(path: str) -> str:
  try:
    with open(path) as f:
      return f.read()
  except OSError:
    return ""


def _write(path: str, text: str) -> None:
  with open(path, "w") as f:
    f.write(text)
