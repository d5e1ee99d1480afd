"""Before/after numbers for estimator_lite's per-step fixes (benchmarks/RESULTS.md, "Fixes").

    python benchmarks/ab_fixes.py [--rounds 5] [--model linear] [--steps 6000]

Runs estimator_lite's training workload (workloads/train.py) with each
combination of the fixes undone (workloads/undo_fixes.py), plus the bare
Session.run loop for scale: every variant once per round, in a fresh process,
rounds interleaved so that load from elsewhere hits all variants alike.
Prints a markdown table of medians [min–max].
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "workloads"))

import undo_fixes  # pylint: disable=g-import-not-at-top,wrong-import-position

VARIANTS = (  # (label, system, fixes undone)
    ("before: TensorFlow's MonitoredSession path, tf.cond step read", "estimator_lite",
     "fast_session,step_read"),
    ("FastSession only", "estimator_lite", "step_read"),
    ("plain step read only", "estimator_lite", "fast_session"),
    ("after: both (estimator_lite as shipped)", "estimator_lite", ""),
    ("bare Session.run loop (for scale)", "bare", ""),
)


def run_once(system, model, steps, undo):
  env = dict(os.environ, PYTHONPATH=os.path.dirname(HERE), TF_CPP_MIN_LOG_LEVEL="2")
  env[undo_fixes.ENV_VAR] = undo
  with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "result.json")
    proc = subprocess.run([sys.executable, os.path.join(HERE, "workloads", "train.py"),
                           "--system", system, "--model", model, "--steps", str(steps),
                           "--model-dir", os.path.join(tmp, "model"), "--out", out],
                          env=env, capture_output=True, text=True, timeout=600, check=False)
    if proc.returncode != 0:
      raise RuntimeError(f"{system} (undo {undo!r}) failed:\n{proc.stderr[-3000:]}")
    with open(out) as f:
      return json.load(f)


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--rounds", type=int, default=5)
  parser.add_argument("--model", default="linear")
  parser.add_argument("--steps", type=int, default=6000)
  args = parser.parse_args()
  results = {label: [] for label, _, _ in VARIANTS}
  for round_index in range(args.rounds):
    for label, system, undo in VARIANTS:
      result = run_once(system, args.model, args.steps, undo)
      results[label].append(result)
      print(f"round {round_index + 1}: {label}: {result['steps_per_sec']:.0f} steps/s",
            file=sys.stderr, flush=True)
  print(f"| {args.model}, {args.steps} steps, {args.rounds} rounds | steps/s median [min–max] "
        "| µs/step | train() → first step, s |")
  print("|---|---|---|---|")
  for label, _, _ in VARIANTS:
    rates = [r["steps_per_sec"] for r in results[label]]
    first = statistics.median(r["first_step_s"] for r in results[label])
    median = statistics.median(rates)
    print(f"| {label} | {median:.0f} [{min(rates):.0f}–{max(rates):.0f}] | {1e6 / median:.0f} "
          f"| {first:.2f} |")


if __name__ == "__main__":
  main()
