"""A private network namespace for a local cluster: its tasks reach each other, nothing else reaches them.

TensorFlow's gRPC server listens on every interface whatever address TF_CONFIG
names, and it runs any graph op that a client sends, unauthenticated. The
launcher (`python -m estimator_lite.launch`) therefore runs its tasks inside
one network namespace of their own: its loopback is theirs alone, and no
other network interface exists in it, so no port a task opens can be reached
from outside.

Two processes of this module do it, each a fresh interpreter (a namespace can
only be entered by a process with one thread, and these have one):

- the *holder* (`hold`) creates the namespace, brings its loopback up, says
  `ready MODE` on stdout, and keeps the namespace alive until its stdin closes
  (the launcher holds the other end, so the holder ends with the launcher);
- every task starts as a *joiner* (`join HOLDER_PID MODE -- COMMAND...`),
  which enters the holder's namespaces and then becomes COMMAND (exec: the
  same PID, the launcher's signals reach the task).

MODE is how the namespace was made:
- `user` (for a user who is not root): an unprivileged user namespace with a
  network namespace in it, the user's own uid and gid mapped to themselves,
  so the files the tasks write are theirs as before;
- `root` (for root): a network namespace alone, which needs CAP_SYS_ADMIN.
  Root tries it first, because in a user namespace of its own root could map
  only itself, and would lose its rights over files of other owners; where it
  is refused (a container without CAP_SYS_ADMIN), root tries `user`.
`ESTIMATOR_LITE_NETNS=user` or `=root` tries that mode alone.
"""
from __future__ import annotations

import ctypes
import fcntl
import os
import socket
import struct
import sys
from typing import List, Optional, Sequence, Tuple

USER = "user"
ROOT = "root"
MODES = (USER, ROOT)
MODE_ENV = "ESTIMATOR_LITE_NETNS"

# <linux/sched.h> and <linux/sockios.h>, <net/if.h>.
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000
_SIOCGIFFLAGS = 0x8913
_SIOCSIFFLAGS = 0x8914
_IFF_UP = 0x1
# struct ifreq: a 16-byte name, then a union whose `short ifr_flags` comes
# first; 40 bytes in all on Linux.
_IFREQ = "16sh22x"
# The whole 32-bit id range: as root, every uid and gid keeps its identity.
_ALL_IDS = 4294967295
_READY = "ready"


class PrivateNetworkError(OSError):
  """No private network namespace could be made, or entered."""


def _libc() -> ctypes.CDLL:
  return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
  if result != 0:
    errno = ctypes.get_errno()
    raise PrivateNetworkError(errno, f"{what}: {os.strerror(errno)}")


def _write(path: str, text: str) -> None:
  with open(path, "w") as f:
    f.write(text)


def _map_own_ids(uid: int, gid: int) -> None:
  # Without a map the tasks would run as the overflow id (`nobody`) and could
  # not write model_dir. From inside the new namespace a process may map only
  # its own ids, and only after giving up setgroups(2) (user_namespaces(7)).
  _write("/proc/self/setgroups", "deny\n")
  _write("/proc/self/uid_map", f"{uid} {uid} 1\n")
  _write("/proc/self/gid_map", f"{gid} {gid} 1\n")


def _bring_loopback_up() -> None:
  # A new network namespace has a loopback interface that is down.
  with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
    current = fcntl.ioctl(sock, _SIOCGIFFLAGS, struct.pack(_IFREQ, b"lo", 0))
    flags = struct.unpack(_IFREQ, current)[1]
    fcntl.ioctl(sock, _SIOCSIFFLAGS, struct.pack(_IFREQ, b"lo", flags | _IFF_UP))


def modes_to_try() -> Tuple[str, ...]:
  """The modes `create()` tries, in order (see the module docstring)."""
  forced = os.environ.get(MODE_ENV, "")
  if forced in MODES:
    return (forced,)
  return (ROOT, USER) if os.geteuid() == 0 else (USER,)


def _unshare(libc: ctypes.CDLL, mode: str) -> None:
  # unshare(2) changes nothing when it fails, so the next mode starts clean.
  if mode == USER:
    uid, gid = os.geteuid(), os.getegid()  # read before: inside they are unmapped
    _check(libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNET), "user+network namespace")
    _map_own_ids(uid, gid)
  else:
    _check(libc.unshare(_CLONE_NEWNET), "network namespace (as root)")


def create() -> str:
  """Moves this process into a new private network namespace with loopback up.

  Returns:
    The mode that worked: USER or ROOT.

  Raises:
    PrivateNetworkError: no mode worked; the message says why for each one.
  """
  libc = _libc()
  reasons: List[str] = []
  for mode in modes_to_try():
    try:
      _unshare(libc, mode)
    except OSError as e:
      # A PrivateNetworkError's strerror is already "what: why".
      reasons.append(e.strerror or str(e))
      continue
    _bring_loopback_up()
    return mode
  if os.geteuid() != 0 and not os.environ.get(MODE_ENV):
    reasons.append("a network namespace alone needs root")
  raise PrivateNetworkError("; ".join(reasons))


def enter(holder_pid: int, mode: str) -> None:
  """Moves this (single-threaded) process into the holder's namespaces.

  Args:
    holder_pid: the PID of the process that called `create()`.
    mode: what `create()` returned.

  Raises:
    PrivateNetworkError: a namespace could not be entered.
  """
  libc = _libc()
  kinds: List[Tuple[str, int]] = [("net", _CLONE_NEWNET)]
  if mode == USER:
    # The user namespace first: the network namespace belongs to it.
    kinds.insert(0, ("user", _CLONE_NEWUSER))
  for kind, flag in kinds:
    fd = os.open(f"/proc/{holder_pid}/ns/{kind}", os.O_RDONLY)
    try:
      _check(libc.setns(fd, flag), f"entering the {kind} namespace of pid {holder_pid}")
    finally:
      os.close(fd)


def join_command(holder_pid: int, mode: str, command: Sequence[str]) -> List[str]:
  """`command`, prefixed so that it runs inside the holder's namespace.

  Args:
    holder_pid: the holder's PID.
    mode: the holder's mode.
    command: the program and its arguments.

  Returns:
    The argv to start instead of `command` (same PID once it runs).
  """
  return [sys.executable, "-m", __name__, "join", str(holder_pid), mode, "--", *command]


def hold_command() -> List[str]:
  """The argv of a holder process (see the module docstring)."""
  return [sys.executable, "-m", __name__, "hold"]


def parse_ready(line: str) -> Optional[str]:
  """The mode a holder's first line announces, or None if it failed."""
  parts = line.split()
  if len(parts) == 2 and parts[0] == _READY and parts[1] in MODES:
    return parts[1]
  return None


def _hold() -> int:
  try:
    mode = create()
  except OSError as e:
    print(f"failed {e}", flush=True)
    return 1
  print(f"{_READY} {mode}", flush=True)
  sys.stdin.read()  # until the launcher closes the pipe (or is gone)
  return 0


def _join(argv: Sequence[str]) -> int:
  holder_pid, mode, separator, *command = argv
  if separator != "--" or not command or mode not in MODES:
    print(f"usage: {__name__} join HOLDER_PID {'|'.join(MODES)} -- COMMAND...",
          file=sys.stderr)
    return 2
  try:
    enter(int(holder_pid), mode)
  except OSError as e:
    print(f"cannot enter the cluster's private network: {e}", file=sys.stderr)
    return 126
  try:
    os.execvp(command[0], command)
  except OSError as e:
    print(f"cannot run {command[0]!r}: {e}", file=sys.stderr)
  return 127


def main(argv: Sequence[str]) -> int:
  """`hold` or `join HOLDER_PID MODE -- COMMAND...`; returns the exit status."""
  if argv[:1] == ["hold"]:
    return _hold()
  if argv[:1] == ["join"] and len(argv) >= 5:
    return _join(argv[1:])
  print(f"usage: {__name__} hold | join HOLDER_PID MODE -- COMMAND...", file=sys.stderr)
  return 2


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
