"""The one line of a TensorFlow error that says what went wrong.

A graph-mode OpError's message is tens of lines: "Graph execution error:",
the Python stack where the failing op was defined (twice), the task it came
from, the gRPC details and TensorFlow's recent C++ log. A log line that is
repeated while training goes on (a failed checkpoint save) needs only the
status itself, e.g. "/data/model/model.ckpt-1925_temp; Read-only file system".
"""
from __future__ import annotations

import re

_NOISE = re.compile(r"^(Graph execution error:|Detected at node |Node: |From /job:|File \"|"
                    r"\[\[|Additional GRPC error|Recent warning and error logs:|=+$)")
# "From /job:ps/replica:0/task:0:", alone or after the status code
# ("PERMISSION_DENIED: From /job:..."): the task whose status the next line is.
_FROM_TASK = re.compile(r"^([A-Z_]+: )?From /job:")


def summary(error: BaseException) -> str:
  """The line of `error`'s message that states the failure (all of it if none stands out)."""
  message = (getattr(error, "message", None) or str(error)).strip()
  lines = [line.strip() for line in message.splitlines()]
  # The status follows the first "From /job:..." line; in an error of one
  # task, the last "Node: '...'" line. (A step on a cluster repeats the
  # stack and the status once for each task it failed on, in no fixed order.)
  from_task = [i + 1 for i, line in enumerate(lines) if _FROM_TASK.match(line)]
  start = from_task[0] if from_task else max(
      [i + 1 for i, line in enumerate(lines) if line.startswith("Node: ")] + [0])
  for line in lines[start:]:
    if line and not _NOISE.match(line):
      return line
  return message
