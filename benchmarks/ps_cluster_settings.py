"""Environment settings against estimator_lite's defaults on a parameter-server cluster.

    python benchmarks/ps_cluster_settings.py --variants ee_off,interop2 --clusters async1,async2

Each measurement is one of benchmarks/ps_cluster.py's (a fresh cluster of the
`estimator_lite` system, its global steps/s and CPU over a window), with the
variant's environment variables added to every task. Rounds interleave the
variants with runs of the defaults, each round in another order; a variant's
figure is its steps/s against the defaults' in the same round. The
environment is what can reach TensorFlow's gRPC and thread pools where a
ConfigProto cannot: gRPC reads GRPC_EXPERIMENTS once, before it starts.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from typing import Any, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cluster as harness  # pylint: disable=g-import-not-at-top,wrong-import-position
import ps_cluster  # pylint: disable=g-import-not-at-top,wrong-import-position
import ps_floor  # pylint: disable=g-import-not-at-top,wrong-import-position

_EE_OFF = ps_floor._EE_OFF_ALL  # pylint: disable=protected-access
# name: (environment added to every task, what it is)
VARIANTS: Dict[str, tuple] = {
    "ee_off": ({"GRPC_EXPERIMENTS": _EE_OFF},
               "GRPC_EXPERIMENTS with all seven EventEngine experiments off"),
    "interop2": ({"TF_NUM_INTEROP_THREADS": "2"}, "TF_NUM_INTEROP_THREADS=2"),
    "ee_off_interop2": ({"GRPC_EXPERIMENTS": _EE_OFF,
                         "TF_NUM_INTEROP_THREADS": "2"},
                        "EventEngine experiments off, TF_NUM_INTEROP_THREADS=2"),
    "ee_off_cache1": ({"GRPC_EXPERIMENTS": _EE_OFF,
                       "TF_GRPC_WORKER_CACHE_THREADS": "1"},
                      "EventEngine experiments off, TF_GRPC_WORKER_CACHE_THREADS=1"),
}
DEFAULT = "default"


def main(argv: Optional[List[str]] = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--variants", default=",".join(VARIANTS))
  parser.add_argument("--clusters", default="async1,async2")
  parser.add_argument("--rounds", type=int, default=3)
  parser.add_argument("--secs", type=float, default=6.0)
  parser.add_argument("--py-new", default=harness.NEW_PYTHON)
  parser.add_argument("--out", default=os.path.join(HERE, "ps_cluster_settings.json"))
  args = parser.parse_args(argv)
  args.model, args.ps_cores = "linear", None  # ps_cluster.measure's other options
  variants = [DEFAULT] + [v for v in args.variants.split(",") if v]
  unknown = [v for v in variants[1:] if v not in VARIANTS]
  if unknown:
    parser.error(f"unknown variant: {unknown}")
  clusters = [c for c in args.clusters.split(",") if c]
  base = harness.python_for(reference=False)[1]
  results: List[Dict[str, Any]] = []
  for round_index in range(args.rounds):
    for cluster in clusters:
      shift = round_index % len(variants)
      for variant in variants[shift:] + variants[:shift]:
        env = dict(base, **(VARIANTS[variant][0] if variant != DEFAULT else {}))
        try:
          m = ps_cluster.measure("estimator_lite", cluster, args, {False: (args.py_new, env)})
        except RuntimeError as e:  # a port taken between its choice and its use, say
          harness.log(f"{cluster} {variant} failed: {e}")
          continue
        harness.log(f"round {round_index + 1} {cluster} {variant}: "
                       f"{m['steps_per_sec']:.0f} global steps/s, "
                       f"{m['cpu_us_per_step']:.0f} µs CPU a step")
        results.append(dict(m, variant=variant, round=round_index))
        with open(args.out, "w") as f:
          json.dump(results, f, indent=1)
  print("| variant | cluster | global steps/s, median [min–max] | against the same round's "
        "defaults | CPU µs a step (median) |\n|---|---|---|---|---|")
  for cluster in clusters:
    defaults = {r["round"]: r["steps_per_sec"] for r in results
                if r["variant"] == DEFAULT and r["cluster"] == cluster}
    for variant in variants:
      mine = [r for r in results if r["variant"] == variant and r["cluster"] == cluster]
      if not mine:
        continue
      speeds = [r["steps_per_sec"] for r in mine]
      ratios = ", ".join(f"{r['steps_per_sec'] / defaults[r['round']]:.2f}" for r in mine
                         if r["round"] in defaults)
      label = "defaults" if variant == DEFAULT else VARIANTS[variant][1]
      print(f"| {label} | {cluster} | {ps_cluster._median_range(speeds)} | {ratios} | "  # pylint: disable=protected-access
            f"{statistics.median(r['cpu_us_per_step'] for r in mine):.0f} |")
  return 0


if __name__ == "__main__":
  sys.exit(main())
