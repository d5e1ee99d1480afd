"""Time an in-graph loop's iteration on a ps cluster in one process: two checkouts, in turns.

    python benchmarks/ps_loop_in_process.py --before /tmp/old --after . --ps-tasks 2 --pairs 10

A worker and one or two ps servers run in one process, and train the linear
model of tests/graph/test_cached_reads.py (its kernel partitioned over the ps
tasks where there are two) in RunConfig(steps_per_loop=100)'s loop, packed,
one trainer: 5 loops of warm-up, then `--loops` timed. Each measurement is a
fresh process on one checkout's code (its estimator_lite and its tests'
model); the pairs alternate which side runs first. Prints, pair by pair,
after / before for the wall time and the process's CPU time an iteration,
their medians, and in how many pairs the after side was faster.

Without a cluster's other trainers and its processes' gRPC between
machines, this isolates what one iteration's graph costs: with identical
graphs on both sides (one ps, for a change that only two ps tasks see) the
ratios show the machine's own noise.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

LOOP = 100


def measure(root: str, ps_tasks: int, loops: int) -> dict:
  """One fresh process on `root`'s code: µs of wall and CPU time an iteration."""
  for path in (root, os.path.join(root, "tests"), os.path.join(root, "tests", "graph")):
    sys.path.insert(0, path)
  # pylint: disable=import-outside-toplevel,import-error
  import conftest
  import tensorflow as tf
  import test_cached_reads as model
  spec, worker, _ = conftest._in_process_cluster(ps_tasks)  # pylint: disable=protected-access
  graph, train_op, _, _, init, _ = model._build(  # pylint: disable=protected-access
      spec, pack=True, stop_at_global_step=False, steps_per_loop=LOOP,
      partitioned=ps_tasks > 1)
  with model._session(worker, graph) as session:  # pylint: disable=protected-access
    session.run(init)
    for _ in range(5):
      session.run(train_op)
    cpu, wall = time.process_time(), time.time()
    for _ in range(loops):
      session.run(train_op)
    iterations = loops * LOOP
    return dict(wall_us=(time.time() - wall) / iterations * 1e6,
                cpu_us=(time.process_time() - cpu) / iterations * 1e6)


def _in_a_process(root: str, ps_tasks: int, loops: int) -> dict:
  out = subprocess.run(
      [sys.executable, __file__, "--measure", root, "--ps-tasks", str(ps_tasks),
       "--loops", str(loops)],
      capture_output=True, text=True, check=True, timeout=600,
      env=dict(os.environ, PYTHONPATH=root, TF_CPP_MIN_LOG_LEVEL="2")).stdout
  return json.loads(out.strip().splitlines()[-1])


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
  parser.add_argument("--before", help="checkout of the code before")
  parser.add_argument("--after", default=".", help="checkout of the code after")
  parser.add_argument("--ps-tasks", type=int, choices=(1, 2), default=2)
  parser.add_argument("--pairs", type=int, default=10)
  parser.add_argument("--loops", type=int, default=40)
  parser.add_argument("--measure", help=argparse.SUPPRESS)
  args = parser.parse_args()
  if args.measure:
    print(json.dumps(measure(os.path.abspath(args.measure), args.ps_tasks, args.loops)))
    return
  if not args.before:
    parser.error("--before is required")
  sides = {"before": os.path.abspath(args.before), "after": os.path.abspath(args.after)}
  ratios = {"wall_us": [], "cpu_us": []}
  for pair in range(args.pairs):
    order = ["before", "after"] if pair % 2 == 0 else ["after", "before"]
    result = {side: _in_a_process(sides[side], args.ps_tasks, args.loops) for side in order}
    for figure, values in ratios.items():
      values.append(result["after"][figure] / result["before"][figure])
    print(f"pair {pair + 1}: before {result['before']['wall_us']:.0f} µs, "
          f"after {result['after']['wall_us']:.0f} µs an iteration", flush=True)
  for figure, values in ratios.items():
    print(f"{figure} after / before: {' '.join(f'{r:.2f}' for r in values)}; "
          f"median {statistics.median(values):.2f}; after faster in "
          f"{sum(r < 1 for r in values)} of {len(values)}")


if __name__ == "__main__":
  main()
