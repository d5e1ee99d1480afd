"""Whether a cluster's tasks share this machine's cores, as the launcher's do.

`python -m estimator_lite.launch` starts every task of a cluster on one
machine. There, TensorFlow's idle threads that spin while waiting for work
take cores from the tasks that have work: with thread spinning off
(ConfigProto `experimental.disable_thread_spinning`) a launched cluster of a
ps, a chief and 2 to 4 workers on 2 cores made about 1.4 times the global
steps a second, with less CPU a step (benchmarks/RESULTS.md, "Parameter-server
clusters"). On a cluster of one task a machine, spinning is TensorFlow's
default and stays so. The launcher says so through the tasks' environment;
this module imports nothing heavy, because the launcher starts without
TensorFlow.
"""
from __future__ import annotations

from typing import Mapping

# Set to "1" by the launcher in every task's environment.
ENV = "ESTIMATOR_LITE_TASKS_SHARE_MACHINE"


def launcher_environment() -> dict:
  """What the launcher adds to each task's environment."""
  return {ENV: "1"}


def tasks_share_machine(environ: Mapping[str, str]) -> bool:
  """Whether `environ` says this task shares its machine with the cluster's other tasks."""
  return environ.get(ENV) == "1"
