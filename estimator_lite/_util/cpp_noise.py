"""TensorFlow's C++ start-up and shutdown lines that tell a user nothing, recognised in a log.

TensorFlow prints these to stderr from C++, some of them before its logging
is set up, so `TF_CPP_MIN_LOG_LEVEL` does not reach them: the oneDNN, CUDA
and CPU-feature banners (printed once per TensorFlow library, so twice per
process), "failed call to cuInit" on a machine with no GPU, "Local
rendezvous is aborting" when a session is closed as planned, and the
multi-line "Type inference failed" warning TensorFlow 2.21's graph optimiser
prints for graphs that run correctly (tf.compat.v1 `cond`s such as
`tf.math.zero_fraction`'s in the canned estimators' summaries). The launcher
and the stderr guard (stderr_guard.py) drop them unless the user asks to see
them (`ESTIMATOR_LITE_SHOW_TF_LOGS=1`, docs/logs.md). What is kept:
every line that is not TensorFlow's C++ log format, and every C++ warning,
error or fatal line not named here.

Imports nothing heavy: the launcher starts without TensorFlow.
"""
from __future__ import annotations

import glob
import os
import re

# The one switch that shows everything TensorFlow prints (docs/logs.md).
SHOW_TF_LOGS_ENV = "ESTIMATOR_LITE_SHOW_TF_LOGS"

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

# TensorFlow 2.21's type inference pass rejecting a graph that still runs; the
# header line is followed by the two types it compared, printed as protos.
_TYPE_INFERENCE_WARNING = re.compile(rb"\] Type inference failed\. This indicates an invalid graph")
# The lines of that message after its header, and the one that ends it.
_TYPE_INFERENCE_BODY = re.compile(
    rb"^(\s*|\s*type_id: \w+|\s*args \{|\s*\}|goo\.gle/\w+\s*"
    rb"| is neither a subtype nor a supertype of the combined inputs preceding it:"
    rb"|\tfor \w+ type infernce function \d+)$")
_TYPE_INFERENCE_END = re.compile(rb"^\twhile inferring type of node '.*'$")

# On a machine with no NVIDIA device, the CUDA build of TensorFlow reports
# that it found none as an error.
_CUINIT_ERROR = re.compile(rb"\] failed call to cuInit: ")


def show_tf_logs() -> bool:
  """Whether the user asked to see all of TensorFlow's logs (`ESTIMATOR_LITE_SHOW_TF_LOGS`).

  Returns:
    True when the variable is set to anything but "", "0", "false" or "no".
  """
  return os.environ.get(SHOW_TF_LOGS_ENV, "").strip().lower() not in ("", "0", "false", "no")


def machine_has_nvidia_devices() -> bool:
  """Whether this machine has an NVIDIA device node (then cuInit errors are real)."""
  return bool(glob.glob("/dev/nvidia[0-9]*"))


class NoiseFilter:
  """Says which log lines are TensorFlow's C++ noise.

  Give it the lines of one stream in order: a multi-line message (the type
  inference warning) is recognised by its header, and its body lines are noise
  only right after it, as long as each has that message's shape.

  Args:
    cpu_only: the machine has no GPU, so a failed cuInit is expected.
  """

  def __init__(self, *, cpu_only: bool) -> None:
    self._cpu_only = cpu_only
    self._in_type_inference_warning = False
    self.hidden = 0  # lines judged noise so far

  def is_noise(self, line: bytes) -> bool:
    """True for a line to leave out (counted in `hidden`); `line` may end in a newline."""
    line = line.rstrip(b"\r\n")
    noise = self._judge(line)
    if noise:
      self.hidden += 1
    return noise

  def _judge(self, line: bytes) -> bool:
    if self._in_type_inference_warning:
      if _TYPE_INFERENCE_END.match(line):
        self._in_type_inference_warning = False
        return True
      if _TYPE_INFERENCE_BODY.match(line):
        return True
      # Not the message's shape: the message ended early; judge the line afresh.
      self._in_type_inference_warning = False
    cpp = _CPP_LOG_LINE.match(line)
    if cpp is None:
      return any(pattern.match(line) for pattern in _BANNER_LINES)
    severity = cpp.group(1)
    if severity == b"I":  # informational: what TF_CPP_MIN_LOG_LEVEL=1 is meant to hide
      return True
    if severity == b"W":
      if _TYPE_INFERENCE_WARNING.search(line) is not None:
        self._in_type_inference_warning = True
        return True
      return _SHUTDOWN_WARNINGS.search(line) is not None
    if severity == b"E":
      return self._cpu_only and _CUINIT_ERROR.search(line) is not None
    return False  # fatal
