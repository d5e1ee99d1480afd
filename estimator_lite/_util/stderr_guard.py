"""Keeps TensorFlow's C++ start-up noise off a program's stderr, losing no other line.

TensorFlow writes its C++ logs straight to file descriptor 2, some before its
logging is set up (so `TF_CPP_MIN_LOG_LEVEL` does not reach them), others
while graphs run (the type inference warning). Only a filter on the
descriptor itself can leave them out. `start()` points descriptor 2 at a pipe
read by a small helper process (this module's `main`), which copies
every line to the real stderr except the ones cpp_noise.NoiseFilter names.

Why a process and not a thread: a C++ fatal error aborts the program at once;
a thread would die with it and the last lines (the error itself) with it. The
helper outlives the program, reads the pipe to its end and exits: every line
the program wrote reaches the terminal.

Python's own writes (`sys.stderr`: tracebacks, logging) do not go through the
helper: `sys.stderr` and the logging handlers that wrote to it are pointed at
a copy of the real stderr, so their order against stdout stays as it was.
At exit the real stderr is put back on descriptor 2 and the helper is given a
second to copy what is left (it goes on, if children still write, after that).

Nothing is changed when the user set `ESTIMATOR_LITE_SHOW_TF_LOGS=1`, when
`sys.stderr` is not the process's own (a notebook, pytest's capture), or when
an ancestor already filters this very stderr (its helper's pipe is ours).
"""
from __future__ import annotations

import atexit
import io
import logging
import os
import select
import signal
import subprocess
import sys
from typing import List, Optional

from estimator_lite._util import cpp_noise

# Set for the program's children: the pipe (device:inode) a helper already
# filters. A child whose descriptor 2 is still that pipe starts no helper.
_FILTERED_ENV = "ESTIMATOR_LITE_FILTERED_STDERR"
# How long a line without its newline waits for the rest before it is copied
# as it is (a progress bar's "\r" updates, a prompt).
_PARTIAL_LINE_SECS = 0.05
# At exit, how long the program waits for the helper to copy what is left;
# children that still write keep it running after that.
_DRAIN_SECS = 1.0

_started_by_pid: Optional[int] = None


def start() -> bool:
  """Filters TensorFlow's C++ noise out of this process's stderr (descriptor 2).

  Idempotent, and does nothing where it cannot or should not (see the module
  docstring). Call it before `import tensorflow` to also leave out
  TensorFlow's import-time banners.

  Returns:
    Whether descriptor 2 is filtered (now or already).
  """
  global _started_by_pid
  if _started_by_pid == os.getpid():
    return True
  if cpp_noise.show_tf_logs() or _already_filtered() or not _owns_stderr():
    return False
  try:
    real_stderr = os.dup(2)
  except OSError:
    return False  # no stderr at all: nothing to keep quiet
  read_end, write_end = os.pipe()
  try:
    env = dict(os.environ)
    # The helper imports this package: it must find it wherever the program
    # did, and must not start a helper of its own.
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    env[cpp_noise.SHOW_TF_LOGS_ENV] = "1"
    helper = subprocess.Popen(
        [sys.executable, "-c", f"import {__name__} as guard; guard.main()"],
        stdin=read_end, stdout=real_stderr, stderr=real_stderr, env=env, close_fds=True,
        # Its own session: Ctrl-C and a kill of the program's process group
        # do not stop it before it has copied the program's last lines.
        start_new_session=True)
  except OSError:
    for fd in (real_stderr, read_end, write_end):
      os.close(fd)
    return False
  os.close(read_end)
  sys.stderr.flush()  # _owns_stderr(): it is sys.__stderr__, on descriptor 2
  os.dup2(write_end, 2)
  os.close(write_end)
  pipe = os.fstat(2)
  os.environ[_FILTERED_ENV] = f"{pipe.st_dev}:{pipe.st_ino}"
  _keep_python_output_direct(real_stderr)
  _started_by_pid = os.getpid()
  atexit.register(_stop, helper, real_stderr)
  return True


def _already_filtered() -> bool:
  marker = os.environ.get(_FILTERED_ENV)
  if not marker:
    return False
  try:
    stat = os.fstat(2)
  except OSError:
    return False
  return marker == f"{stat.st_dev}:{stat.st_ino}"


def _owns_stderr() -> bool:
  """Whether Python's stderr is this process's descriptor 2 (not a notebook's or pytest's)."""
  stderr = sys.stderr
  if os.name != "posix" or stderr is not sys.__stderr__ or stderr is None:
    return False
  try:
    return stderr.fileno() == 2
  except (AttributeError, OSError, ValueError):
    return False


def _keep_python_output_direct(real_stderr: int) -> None:
  """Points `sys.stderr`, and handlers that wrote to it, at the real stderr."""
  old = sys.stderr
  if old is None:
    return
  new = io.TextIOWrapper(io.FileIO(os.dup(real_stderr), "w"), encoding=old.encoding,
                         errors=old.errors, line_buffering=True, write_through=True)
  sys.stderr = new
  for handler in _stream_handlers():
    if handler.stream is old:
      handler.setStream(new)


def _stream_handlers() -> List[logging.StreamHandler]:
  # TensorFlow's logger and the root logger are where handlers to stderr are
  # (TensorFlow's own, logging.basicConfig's); absl's, made when absl.logging
  # is imported, joins the root logger later (`app.run`).
  loggers = [logging.getLogger(), logging.getLogger("tensorflow")]
  handlers = [handler for logger in loggers for handler in logger.handlers
              if isinstance(handler, logging.StreamHandler)]
  absl_logging = sys.modules.get("absl.logging")
  if absl_logging is not None:
    handlers.append(absl_logging.get_absl_handler().python_handler)
  return handlers


def _stop(helper: subprocess.Popen, real_stderr: int) -> None:
  if os.getpid() != _started_by_pid:
    return  # a forked child: the helper is its parent's
  try:
    sys.stderr.flush()
  except (OSError, ValueError):
    pass
  # Descriptor 2 writes directly again; the pipe's last write end here closes.
  os.dup2(real_stderr, 2)
  try:
    helper.wait(_DRAIN_SECS)
  except subprocess.TimeoutExpired:
    pass


def _copy(source: int, target: int, noise: cpp_noise.NoiseFilter) -> None:
  """Copies lines from `source` to `target` until end of file, leaving out noise."""
  pending = b""
  while True:
    if pending:
      readable, _, _ = select.select([source], [], [], _PARTIAL_LINE_SECS)
      if not readable:
        # A partial line that stays partial: copy it now, judged as it is.
        _write(target, pending, noise)
        pending = b""
        continue
    chunk = os.read(source, 65536)
    if not chunk:
      break
    lines = (pending + chunk).split(b"\n")
    pending = lines.pop()
    kept = [line + b"\n" for line in lines if not noise.is_noise(line)]
    if kept:
      _write_all(target, b"".join(kept))
  if pending:
    _write(target, pending, noise)


def _write(target: int, line: bytes, noise: cpp_noise.NoiseFilter) -> None:
  if not noise.is_noise(line):
    _write_all(target, line)


def _write_all(target: int, data: bytes) -> None:
  while data:
    data = data[os.write(target, data):]


def main() -> None:
  """The helper: copies standard input to standard output, TensorFlow's noise left out."""
  # It ends when the program and its children have closed the pipe, never
  # before: a signal meant for them must not cut their last lines.
  for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(signum, signal.SIG_IGN)
  noise = cpp_noise.NoiseFilter(cpu_only=not cpp_noise.machine_has_nvidia_devices())
  try:
    _copy(0, 1, noise)
  except BrokenPipeError:
    pass  # The reader of stderr went away (`| head`): nothing to copy to.
