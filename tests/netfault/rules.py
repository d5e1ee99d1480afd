"""iptables rules that fault one role's traffic, all in one chain of this process's own.

Every rule lives in a chain named `ELITE-NETFAULT-<pid>`, which OUTPUT jumps
to. Loopback packets are all locally generated, so OUTPUT sees every packet
of the cluster, and only there can `-m owner` tell a role's packets by the
group its process runs as (the kernel gives a connection to 127.0.0.x the
source 127.0.0.1 whatever role opens it: the source address tells nothing).

`heal()` removes the faults; `close()` removes the chain and the jump. A
chain left by a process that is gone (killed before its `close()`) is stale:
`FaultRules()` removes it and names it in `stale_removed`, so a crashed run
never faults the next one.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from typing import Iterable, List, Sequence, Tuple

_PREFIX = "ELITE-NETFAULT-"
# A connection of a role that loses packets carries a mark (conntrack), so
# that its packets in both directions are matched: the replies it receives
# come from another role's process. Each fault has its own mark: connections
# keep theirs after the heal.
_MARK_BASE = 0x4e460000
Address = Tuple[str, int]


def iptables_missing() -> str:
  """Why the rules cannot work here ('' when they can): not root, or no iptables."""
  if os.geteuid() != 0:
    return "iptables rules need root"
  if shutil.which("iptables") is None:
    return "iptables is not installed (apt-get install iptables)"
  return ""


def _iptables(*args: str, check: bool = True) -> subprocess.CompletedProcess:
  return subprocess.run(["iptables", "-w", "10", *args], capture_output=True, text=True,
                        check=check, timeout=30)


def chains() -> List[str]:
  """The fault chains in the filter table now, of every process (this one's included)."""
  listing = _iptables("-S").stdout
  return re.findall(rf"^-N ({re.escape(_PREFIX)}\d+)$", listing, re.M)


def _remove_chain(chain: str) -> None:
  while _iptables("-D", "OUTPUT", "-j", chain, check=False).returncode == 0:
    pass
  _iptables("-F", chain, check=False)
  _iptables("-X", chain, check=False)


def _alive(pid: int) -> bool:
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  except PermissionError:
    return True
  return True


class FaultRules:
  """This process's fault rules: partitions and packet loss, matched on roles.

  A role is named by its process's group id (`gid`) and the addresses its
  peers reach it at.
  """

  def __init__(self) -> None:
    owners = {chain: int(chain[len(_PREFIX):]) for chain in chains()}
    self.stale_removed = [chain for chain, pid in owners.items() if not _alive(pid)]
    for chain in self.stale_removed:
      _remove_chain(chain)
    self.chain = f"{_PREFIX}{os.getpid()}"
    self._faults = 0
    _iptables("-N", self.chain)
    _iptables("-I", "OUTPUT", "1", "-j", self.chain)

  def _append(self, *rule: str) -> None:
    _iptables("-A", self.chain, *rule)

  def partition(self, gid_a: int, seen_by_a: Iterable[Address], gid_b: int,
                seen_by_b: Iterable[Address], *, reject: bool = False) -> None:
    """Cuts the links between two roles, both ways.

    Args:
      gid_a: role A's group id.
      seen_by_a: the addresses role A reaches role B at (B's server, or a proxy in front of it).
      gid_b: role B's group id.
      seen_by_b: the addresses role B reaches role A at.
      reject: refuse (TCP reset) instead of dropping silently.
    """
    target = ["-j", "REJECT", "--reject-with", "tcp-reset"] if reject else ["-j", "DROP"]
    for gid, addresses in ((gid_a, seen_by_a), (gid_b, seen_by_b)):
      for host, port in addresses:
        self._append("-p", "tcp", "-d", host, "--dport", str(port), "-m", "owner",
                     "--gid-owner", str(gid), *target)

  def lose(self, gid: int, own_addresses: Sequence[Address], probability: float) -> None:
    """Drops each packet of a role's connections with `probability`, both directions.

    Args:
      gid: the role's group id: the connections its process opens.
      own_addresses: where its peers reach it: the connections they open to it.
      probability: the chance each packet is dropped.
    """
    self._faults += 1
    mark = hex(_MARK_BASE + self._faults)
    self._append("-p", "tcp", "-m", "owner", "--gid-owner", str(gid),
                 "-j", "CONNMARK", "--set-mark", mark)
    for host, port in own_addresses:
      self._append("-p", "tcp", "-d", host, "--dport", str(port),
                   "-j", "CONNMARK", "--set-mark", mark)
    self._append("-p", "tcp", "-m", "connmark", "--mark", mark, "-m", "statistic",
                 "--mode", "random", "--probability", str(probability), "-j", "DROP")

  def rules(self) -> List[str]:
    """The rules in force, as `iptables -S` prints them."""
    return [line for line in _iptables("-S", self.chain).stdout.splitlines()
            if line.startswith("-A ")]

  def heal(self) -> None:
    """Removes every fault; the chain stays, empty."""
    _iptables("-F", self.chain)

  def close(self) -> None:
    """Removes the chain and OUTPUT's jump to it."""
    _remove_chain(self.chain)

  def __enter__(self) -> "FaultRules":
    return self

  def __exit__(self, *exc_info: object) -> None:
    self.close()
