"""Two systems on one model, in this one process, interleaved run by run; prints JSON.

    python benchmarks/workloads/paired.py --model MODEL --steps N --rounds R \
        --pair SYSTEM:K,SYSTEM:K [--pair ...] --out result.json

Each round trains both systems of every pair once (train.py's `run`: a new
graph, session and model_dir each time, the same figures), back to back,
the second system first in every other round. The fresh-process runs of run.py compare medians of runs taken
seconds apart, and on a shared two-CPU machine a run's speed changes by 2x
and more from one run to the next (see RESULTS.md); here the two systems of
a pair run back to back, on the same warm process, and the figure compared
is each round's ratio, so slow spells of the machine mostly cancel.

Only systems on this process's TensorFlow can be paired (not tf_estimator).
"""
import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import train  # pylint: disable=g-import-not-at-top,wrong-import-position


def _system(text):
  system, _, k = text.partition(":")
  if system not in train.SYSTEMS or system == "tf_estimator":
    raise argparse.ArgumentTypeError(
        f"{text!r}: a system of this TensorFlow (one of estimator_lite, bare, in_graph) "
        "with its steps per loop, as SYSTEM:K")
  return system, int(k or 1)


def _pair(text):
  parts = text.split(",")
  if len(parts) != 2:
    raise argparse.ArgumentTypeError(f"--pair {text!r}: two systems, as SYSTEM:K,SYSTEM:K")
  return tuple(_system(part) for part in parts)


def run_pairs(model, steps, rounds, pairs):
  """{pair name: {"a": [steps/s], "b": [steps/s], "ratios": [a/b], "median_ratio"}}."""
  results = {f"{a[0]}:{a[1]}/{b[0]}:{b[1]}": {"a": [], "b": [], "ratios": []}
             for a, b in pairs}
  work_dir = tempfile.mkdtemp(prefix="paired_")
  try:
    for round_index in range(rounds):
      for (a, b), name in zip(pairs, results):
        # Every other round runs B first, so neither system always goes first.
        order = (a, b) if round_index % 2 == 0 else (b, a)
        rate = {(system, k): train.run(system, model, steps, k,
                                       tempfile.mkdtemp(dir=work_dir))["steps_per_sec"]
                for system, k in order}
        cell = results[name]
        cell["a"].append(rate[a])
        cell["b"].append(rate[b])
        cell["ratios"].append(rate[a] / rate[b])
  finally:
    shutil.rmtree(work_dir, ignore_errors=True)
  for cell in results.values():
    cell["median_ratio"] = statistics.median(cell["ratios"])
  return results


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--model", required=True)
  parser.add_argument("--steps", type=int, required=True)
  parser.add_argument("--rounds", type=int, default=5)
  parser.add_argument("--pair", type=_pair, action="append", required=True)
  parser.add_argument("--out", required=True)
  args = parser.parse_args()
  for pair in args.pair:
    for system, k in pair:
      if args.steps % k:
        parser.error(f"--steps {args.steps} must be a multiple of {system}'s steps per loop {k}")
  results = run_pairs(args.model, args.steps, args.rounds, args.pair)
  with open(args.out, "w") as f:
    json.dump({"model": args.model, "steps": args.steps, "rounds": args.rounds,
               "pairs": results}, f)


if __name__ == "__main__":
  main()
