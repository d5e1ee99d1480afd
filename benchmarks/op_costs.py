"""Where a model's graph spends its time, op by op, in a bare Session.run loop (no Estimator).

    PYTHONPATH=. python benchmarks/op_costs.py --model wide_deep [--steps 40] [--top 10]

Traces `steps` Session.run(train_op) calls (RunOptions FULL_TRACE, after 50
untraced warm-up steps) of the benchmark graph and prints each op's time per
step (the step stats' all_end_rel_micros, averaged), with the top `top` ops
and the sum over every op. Run with both TensorFlows (run.py does) to see
whether a model's steps are slower on TF 2.21 than on TF 2.15 in the kernels
themselves, which no Estimator can change. Op times overlap on several
threads, so their sum is not the wall time of a step.
"""
import argparse
import collections
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "workloads"))

import tensorflow as tf  # pylint: disable=g-import-not-at-top,wrong-import-position

import models  # pylint: disable=g-import-not-at-top,wrong-import-position
import train  # pylint: disable=g-import-not-at-top,wrong-import-position

_v1 = tf.compat.v1
_WARM_UP_STEPS = 50


def op_micros(model_name, steps):
  """{op name: µs per step} over `steps` traced steps of the model's training graph."""
  graph, iterator, train_op, init = models.bare_training_graph(models.MODELS[model_name])
  totals = collections.Counter()
  with _v1.Session(graph=graph, config=train.estimator_session_config()) as session:
    session.run(init)
    session.run(iterator.initializer)
    for _ in range(_WARM_UP_STEPS):
      session.run(train_op)
    options = _v1.RunOptions(trace_level=_v1.RunOptions.FULL_TRACE)
    for _ in range(steps):
      metadata = _v1.RunMetadata()
      session.run(train_op, options=options, run_metadata=metadata)
      for device in metadata.step_stats.dev_stats:
        for node in device.node_stats:
          totals[node.node_name] += node.all_end_rel_micros
  return {name: micros / steps for name, micros in totals.items()}


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--model", default="wide_deep", choices=sorted(models.MODELS))
  parser.add_argument("--steps", type=int, default=40)
  parser.add_argument("--top", type=int, default=10)
  args = parser.parse_args()
  micros = op_micros(args.model, args.steps)
  print(f"TF {tf.__version__}, {args.model}: op time per step, µs, mean of {args.steps} "
        f"traced steps; sum over all {len(micros)} ops: {sum(micros.values()):.0f}")
  for name, value in sorted(micros.items(), key=lambda item: -item[1])[:args.top]:
    print(f"  {value:8.1f}  {name}")


if __name__ == "__main__":
  main()
