"""Chaos run: a random fault every 20 s on a training cluster, against an undisturbed run.

    sudo python benchmarks/chaos.py [--secs 600] [--seed N] [--out benchmarks/chaos.json]

Runs the cluster of tests/test_network_faults.py (ps, chief, two workers and
an evaluator, each on its own loopback address, every trainer's links to
the ps through a delaying proxy; tests/netfault/) twice with the same
max_steps:

1. undisturbed, at full speed;
2. paced (a sleep after each step) for `--secs` while a random fault strikes
   every 20 s (netfault/chaos.py: a role killed with SIGKILL and restarted, a
   trainer partitioned from the ps for 10 s, or 200 ms of latency on a
   trainer's links for 10 s), then released to finish.

It reports each fault with how long the role it struck stalled and took to
recover, the restores (and the steps each lost), what the checkpoint index
did (a missing file, a step back), whether every evaluation was of a
distinct checkpoint, and both runs' final eval loss. Needs root and iptables,
as the tests do. docs/reliability.md quotes its figures.
"""
import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

from netfault import chaos  # pylint: disable=g-import-not-at-top,wrong-import-position
from netfault import checks  # pylint: disable=g-import-not-at-top,wrong-import-position
from netfault.cluster import TRAINERS, LoopbackCluster  # pylint: disable=wrong-import-position
from netfault.rules import FaultRules, iptables_missing  # pylint: disable=wrong-import-position

MAX_STEPS = 12000   # reached after the chaos: paced, the cluster makes about 12 steps/s
SAVE_STEPS = 25
PACE_SECS = 0.25
START_SECS = 180
EXIT_SECS = 600
RESTORE = r"(\d+\.\d+) INFO:Restoring parameters from \S*model\.ckpt-(\d+)"


def _final(cluster):
  evaluations = checks.evaluations(cluster.model_dir)
  paths = [path for path, _, _ in evaluations]
  return {"final_step": evaluations[-1][1], "final_eval_loss": round(evaluations[-1][2], 6),
          "evaluations": len(paths), "evaluated_twice": len(paths) - len(set(paths)),
          "index_named_missing_files": cluster.index.missing,
          "index_went_back": cluster.index.went_back,
          "checkpoints_seen": len(cluster.index.latest)}


def undisturbed(root, max_steps):
  cluster = LoopbackCluster(os.path.join(root, "undisturbed"), max_steps=max_steps,
                            save_steps=SAVE_STEPS, pace_secs=0.0, delayed=TRAINERS)
  start = time.monotonic()
  try:
    cluster.start_all(START_SECS)
    cluster.finish(EXIT_SECS)
  finally:
    cluster.close()
  return dict(_final(cluster), secs=round(time.monotonic() - start))


def _restores(cluster, faults, start):
  """Each restore of the chief: when, from which step, and the steps it took back."""
  found = []
  for match in re.finditer(RESTORE, cluster.logs("chief")):
    when, step = float(match.group(1)), int(match.group(2))
    before = [f for f in faults if f["wall"] <= when]
    reached = before[-1]["global_step"] if before else 0
    found.append({"at": round(when - start, 1), "restored_step": step,
                  "steps_lost_at_most": max(0, reached - step)})
  return found


def chaos_run(root, secs, seed, max_steps):
  cluster = LoopbackCluster(os.path.join(root, "chaos"), max_steps=max_steps,
                            save_steps=SAVE_STEPS, pace_secs=PACE_SECS, delayed=TRAINERS)
  rules = FaultRules()
  start_wall, start = time.time(), time.monotonic()
  try:
    cluster.start_all(START_SECS)
    chaos_start = time.time()
    faults = chaos.run(cluster, rules, duration_secs=secs, seed=seed)
    rules.heal()
    step_at_release = cluster.finish(EXIT_SECS)
  finally:
    rules.close()
    cluster.close()
  for fault in faults:
    fault["wall"] = chaos_start + fault["at"]
    strike_end = fault["wall"] + (0 if fault["fault"] == "kill" else 10)
    if fault["role"] in TRAINERS:
      fault.update(checks.disruption(cluster.progress.step_times(fault["role"]),
                                     fault["wall"], strike_end))
  result = dict(_final(cluster), secs=round(time.monotonic() - start),
                chaos_secs=secs, seed=seed, step_at_release=step_at_release,
                restores=_restores(cluster, faults, start_wall))
  for fault in faults:
    fault.pop("wall")
  result["faults"] = faults
  return result


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--secs", type=float, default=600)
  parser.add_argument("--seed", type=int, default=2026)
  parser.add_argument("--max-steps", type=int, default=MAX_STEPS)
  parser.add_argument("--out", default=os.path.join(HERE, "chaos.json"))
  args = parser.parse_args(argv)
  problem = iptables_missing()
  if problem:
    parser.error(problem)
  root = tempfile.mkdtemp(prefix="estimator_lite_chaos_bench_")
  try:
    calm = undisturbed(root, args.max_steps)
    print("undisturbed:", json.dumps(calm), flush=True)
    disturbed = chaos_run(root, args.secs, args.seed, args.max_steps)
  finally:
    shutil.rmtree(root, ignore_errors=True)
  relative = (disturbed["final_eval_loss"] - calm["final_eval_loss"]) / calm["final_eval_loss"]
  report = {"command": "python benchmarks/chaos.py " + " ".join(argv or sys.argv[1:]),
            "max_steps": args.max_steps, "undisturbed": calm, "chaos": disturbed,
            "loss_difference_relative": round(relative, 4)}
  with open(args.out, "w") as f:
    json.dump(report, f, indent=1)
  print(json.dumps(report, indent=1))
  return 0


if __name__ == "__main__":
  sys.exit(main())
