"""Storage faults: a directory made read-only for a while, even for root.

The cluster's processes run as root, for whom file modes are no obstacle, so
the directory is covered by a read-only bind mount of itself: every new
file under it fails with EROFS, the way a remount read-only after a storage
error fails. Files already open stay writable, as they would.
"""
from __future__ import annotations

import contextlib
import subprocess
from typing import Iterator


def _mount(*args: str) -> None:
  subprocess.run(["mount", *args], check=True, capture_output=True, text=True, timeout=30)


@contextlib.contextmanager
def read_only(directory: str) -> Iterator[None]:
  """Within the block, nothing new can be written under `directory`.

  Raises:
    subprocess.CalledProcessError: the bind mount could not be made (not root).
  """
  _mount("--bind", directory, directory)
  try:
    _mount("-o", "remount,ro,bind", directory)
    yield
  finally:
    # Lazy: a process may hold a file open through the mount (the evaluator
    # reading a checkpoint); the mount goes once it closes it.
    subprocess.run(["umount", "-l", directory], check=True, capture_output=True, timeout=30)
