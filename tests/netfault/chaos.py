"""A chaos run: a random fault strikes the training cluster every `every_secs`.

The faults: a role killed (SIGKILL) and started again at once; a trainer
partitioned from the ps (DROP) for `fault_secs`; 200 ms of latency on a
trainer's links to the ps for `fault_secs`. Every trainer's links to the ps
go through a DelayProxy (LoopbackCluster(delayed=TRAINERS)). Each fault is
healed before the next one strikes.
"""
from __future__ import annotations

import random
import signal
import time
from typing import Dict, List

from netfault.cluster import ROLES, TRAINERS, LoopbackCluster
from netfault.rules import FaultRules

LATENCY_SECS = 0.2


def _kill(cluster: LoopbackCluster, rules: FaultRules, role: str, fault_secs: float) -> str:
  status = cluster.kill(role, signal.SIGKILL)
  incarnation = cluster.start(role)
  return f"killed (status {status}); restarted as {incarnation}"


def _partition(cluster: LoopbackCluster, rules: FaultRules, role: str, fault_secs: float) -> str:
  ps, trainer = cluster.roles["ps"], cluster.roles[role]
  rules.partition(trainer.gid, [cluster.seen_by(role, "ps")], ps.gid,
                  [cluster.seen_by("ps", role)])
  try:
    cluster.sleep(fault_secs, f"{role} partitioned from the ps")
  finally:
    rules.heal()
  return f"partitioned from the ps for {fault_secs:g} s"


def _latency(cluster: LoopbackCluster, rules: FaultRules, role: str, fault_secs: float) -> str:
  cluster.set_latency(role, LATENCY_SECS)
  try:
    cluster.sleep(fault_secs, f"latency on {role}'s links to the ps")
  finally:
    cluster.set_latency(role, 0.0)
  return f"{LATENCY_SECS * 1000:.0f} ms latency on its links to the ps for {fault_secs:g} s"


# fault -> (what it does, the roles it may strike)
FAULTS = {
    "kill": (_kill, [name for _, name, _ in ROLES]),
    "partition": (_partition, list(TRAINERS)),
    "latency": (_latency, list(TRAINERS)),
}


def run(cluster: LoopbackCluster, rules: FaultRules, *, duration_secs: float, seed: int,
        every_secs: float = 20.0, fault_secs: float = 10.0) -> List[Dict]:
  """Strikes a random fault every `every_secs` for `duration_secs`; returns what struck when.

  Each record: at (seconds since the start), fault, role, what happened,
  and the global step then.
  """
  rng = random.Random(seed)
  start = time.monotonic()
  record = []
  while time.monotonic() - start + every_secs <= duration_secs:
    strike = time.monotonic()
    fault = rng.choice(sorted(FAULTS))
    do, roles = FAULTS[fault]
    role = rng.choice(roles)
    step = cluster.global_step()
    what = do(cluster, rules, role, fault_secs)
    record.append({"at": round(strike - start, 1), "fault": fault, "role": role,
                   "what": what, "global_step": step})
    cluster.sleep(max(0.0, strike + every_secs - time.monotonic()), f"after {fault} of {role}")
  return record
