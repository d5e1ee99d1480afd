"""What an in-graph training loop costs beyond its steps: the linear model, K steps a run.

    PYTHONPATH=. python benchmarks/loop_costs.py [--k 100] [--rounds 40]

Builds the linear model's training loop several ways, each in its own graph
and session, and times one `Session.run` of K steps, the variants interleaved
in this one process (medians of `rounds` rounds of 5 runs each), in ms per
run. From the loop the benchmark calls the limit to estimator_lite's:

  in-graph loop (counter only)   run.py's in-graph loop: `i < K`, carries i;
  + carries the loss             a second loop value, the last step's loss;
  + carries the global step too  estimator_lite's loop before 2f54f90: the
                                 step read in every iteration and carried;
  + loop size fed each run       ... and the size fed every run (Session.run
                                 with a feed, not a callable), as it was;
  estimator_lite's loop          `_train_loop.build_training_loop` as it is,
                                 run as Estimator.train runs it (a callable
                                 fetching the loss and the step read after it).

A loop value costs a few ops per iteration (the lowered while loop's
Merge/Switch/NextIteration/Identity), which on a model this small is a few
per cent of an iteration.
"""
import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "workloads"))

import tensorflow as tf  # pylint: disable=g-import-not-at-top,wrong-import-position

import models  # pylint: disable=g-import-not-at-top,wrong-import-position
import train  # pylint: disable=g-import-not-at-top,wrong-import-position

_v1 = tf.compat.v1
_MODEL = models.MODELS["linear"]


def _build_step(features, labels):
  """One training step of the linear model: (loss, train_op)."""
  built = _MODEL.build(features, labels, True)
  return built.loss, built.train_op


def _hand_built_loop(iterator, k, carry):
  """A tf.while_loop of k steps carrying the counter, plus "loss" and "step" as asked."""
  global_step = _v1.train.get_global_step()

  def body(i, *carried):
    del carried
    with tf.variable_creator_scope(train._lift_variables):  # pylint: disable=protected-access
      loss, train_op = _build_step(*iterator.get_next())
    with tf.control_dependencies([train_op]):
      out = [i + 1]
      if "loss" in carry:
        out.append(tf.identity(loss))
      if "step" in carry:
        out.append(tf.identity(global_step.read_value()))
      return out

  initial = [tf.constant(0)]
  if "loss" in carry:
    initial.append(tf.constant(0.0))
  if "step" in carry:
    initial.append(global_step.read_value())
  return _v1.while_loop(lambda i, *carried: i < k, body, initial, parallel_iterations=1)


def _estimator_lite_loop(iterator, k):
  """estimator_lite's loop, and the tensors Estimator.train fetches from it."""
  import estimator_lite  # pylint: disable=g-import-not-at-top
  from estimator_lite import _train_loop  # pylint: disable=g-import-not-at-top

  def call_model_fn(features, labels):
    loss, train_op = _build_step(features, labels)
    return estimator_lite.EstimatorSpec(estimator_lite.ModeKeys.TRAIN, loss=loss,
                                        train_op=train_op)

  spec, _, loop_global_step = _train_loop.build_training_loop(iterator.get_next,
                                                              call_model_fn, k)
  return [spec.train_op, spec.loss, loop_global_step]


def build(variant, k):
  """Returns a function running one loop of `variant` (its graph and session made here)."""
  graph = tf.Graph()
  with graph.as_default():
    _v1.set_random_seed(1)
    _v1.train.get_or_create_global_step()
    iterator = _v1.data.make_initializable_iterator(models.dataset(_MODEL))
    feed = None
    if variant == "estimator_lite":
      fetch = _estimator_lite_loop(iterator, k)
    else:
      carry = {"counter": (), "loss": ("loss",), "step": ("loss", "step"),
               "fed": ("loss", "step")}[variant]
      size = _v1.placeholder_with_default(tf.constant(k), [])
      fetch = _hand_built_loop(iterator, size if variant == "fed" else k, carry)
      if variant == "fed":
        feed = {size: k}
    session = _v1.Session(graph=graph, config=train.estimator_session_config())
    session.run(_v1.global_variables_initializer())
    session.run(iterator.initializer)
  graph.finalize()
  if feed:
    return lambda: session.run(fetch, feed_dict=feed)
  return session.make_callable(fetch)


VARIANTS = (
    ("counter", "in-graph loop (counter only)"),
    ("loss", "+ carries the loss"),
    ("step", "+ carries the global step too"),
    ("fed", "+ loop size fed each run"),
    ("estimator_lite", "estimator_lite's loop"),
)


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--k", type=int, default=100)
  parser.add_argument("--rounds", type=int, default=40)
  args = parser.parse_args()
  runs = {name: build(name, args.k) for name, _ in VARIANTS}
  for run in runs.values():
    for _ in range(5):
      run()
  times = {name: [] for name in runs}
  for _ in range(args.rounds):
    for name, run in runs.items():
      start = time.perf_counter()
      for _ in range(5):
        run()
      times[name].append((time.perf_counter() - start) / 5)
  base = statistics.median(times["counter"])
  print(f"TF {tf.__version__}: ms per Session.run of {args.k} steps, median of "
        f"{args.rounds} rounds x 5 runs (relative to the first line)")
  for name, label in VARIANTS:
    median = statistics.median(times[name])
    print(f"  {1e3 * median:7.2f}  {median / base:5.2f}x  {label}")


if __name__ == "__main__":
  main()
