"""TensorFlow's C++ start-up and shutdown lines that tell a user nothing, recognised in a log.

TensorFlow prints these to stderr from C++, some of them before its logging
is set up, so `TF_CPP_MIN_LOG_LEVEL` does not reach them: the oneDNN, CUDA
and CPU-feature banners (printed once per TensorFlow library, so twice per
process), "failed call to cuInit" on a machine with no GPU, and "Local
rendezvous is aborting" when a session is closed as planned. The launcher
drops them from its tasks' output unless asked to show them (README,
"Quiet logs"). What is kept: every line that is not TensorFlow's C++ log
format, and every C++ warning, error or fatal line not named here.

Imports nothing heavy: the launcher starts without TensorFlow.
"""
from __future__ import annotations

import glob
import re

# absl's "I1125 03:12:13.123456  10705 port.cc:153] ..." prefix, with the
# severity letter captured; before TensorFlow initialises its logging, the
# time reads "00:00:<seconds since the epoch>" instead.
_CPP_LOG_LINE = re.compile(rb"^([IWEF])\d{4} [\d:.]+\s+\d+ [\w.-]+:\d+\] ")

# Lines in other formats that come with the banners.
_BANNER_LINES = (
    # absl, before TensorFlow initialises its logging (once per library).
    re.compile(rb"^WARNING: All log messages before absl::InitializeLog\(\) is called are "
               rb"written to STDERR$"),
    # The second line of cpu_feature_guard's banner.
    re.compile(rb"^To enable the following instructions: .*rebuild TensorFlow with the "
               rb"appropriate compiler flags\.$"),
)

# Warnings that an orderly end of a session or an input produces.
_SHUTDOWN_WARNINGS = re.compile(
    rb"\] Local rendezvous is aborting with status: (ABORTED|CANCELLED|OUT_OF_RANGE)")

# On a machine with no NVIDIA device, the CUDA build of TensorFlow reports
# that it found none as an error.
_CUINIT_ERROR = re.compile(rb"\] failed call to cuInit: ")


def machine_has_nvidia_devices() -> bool:
  """Whether this machine has an NVIDIA device node (then cuInit errors are real)."""
  return bool(glob.glob("/dev/nvidia[0-9]*"))


class NoiseFilter:
  """Says which log lines are TensorFlow's C++ noise.

  Args:
    cpu_only: the machine has no GPU, so a failed cuInit is expected.
  """

  def __init__(self, *, cpu_only: bool) -> None:
    self._cpu_only = cpu_only
    self.hidden = 0  # lines judged noise so far

  def is_noise(self, line: bytes) -> bool:
    """True for a line to leave out (counted in `hidden`); `line` may end in a newline."""
    line = line.rstrip(b"\r\n")
    noise = self._judge(line)
    if noise:
      self.hidden += 1
    return noise

  def _judge(self, line: bytes) -> bool:
    cpp = _CPP_LOG_LINE.match(line)
    if cpp is None:
      return any(pattern.match(line) for pattern in _BANNER_LINES)
    severity = cpp.group(1)
    if severity == b"I":  # informational: what TF_CPP_MIN_LOG_LEVEL=1 is meant to hide
      return True
    if severity == b"W":
      return _SHUTDOWN_WARNINGS.search(line) is not None
    if severity == b"E":
      return self._cpu_only and _CUINIT_ERROR.search(line) is not None
    return False  # fatal
