"""Where a training step's time goes: the linear model's step, one layer added at a time.

    PYTHONPATH=. python benchmarks/step_costs.py [--steps 3000] [--rounds 3]

Builds the linear model's training graph once (as Estimator.train does: the
global step, its shared read, the loss summary) and times, in this one
process, Session.run loops that add one piece of what Estimator.train runs
per step at a time: from a bare `Session.run(train_op)` to a MonitoredSession
with the default hooks: TensorFlow's (what tf.estimator ran), then
estimator_lite's (its one step hook, the SIGTERM hook and the checkpoint
saver). Each variant is timed `rounds` times, interleaved, and the median is
printed in µs per step with the difference to the previous line. Works with TF 2.15 (reference venv) too, where it shows
TensorFlow's own MonitoredSession (without estimator_lite's FastSession).
"""
import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import tensorflow as tf  # pylint: disable=g-import-not-at-top,wrong-import-position
from tensorflow.python.training import training_util  # pylint: disable=g-import-not-at-top,wrong-import-position,g-direct-tensorflow-import

import models  # pylint: disable=g-import-not-at-top,wrong-import-position

_v1 = tf.compat.v1
_train = _v1.train


class _SessionCreator(_train.SessionCreator):
  """Hands out one already initialised session (optionally as a FastSession)."""

  def __init__(self, session, fast):
    self._session = session
    self._fast = fast

  def create_session(self):
    if self._fast:
      from estimator_lite import _fast_session  # pylint: disable=g-import-not-at-top
      return _fast_session.FastSession(self._session)
    return self._session


def build():
  graph = tf.Graph()
  with graph.as_default():
    _v1.set_random_seed(1)
    global_step = _train.get_or_create_global_step()
    step_read = training_util._get_or_create_global_step_read(graph)  # pylint: disable=protected-access
    model = models.MODELS["linear"]
    iterator = _v1.data.make_initializable_iterator(models.dataset(model))
    features, labels = iterator.get_next()
    built = model.build(features, labels, True)
    _v1.summary.scalar("loss", built.loss)
    _v1.add_to_collection(_v1.GraphKeys.SAVERS, _train.Saver(sharded=True))
    session = _v1.Session(graph=graph)
    session.run(_v1.global_variables_initializer())
    session.run(iterator.initializer)
  return graph, session, built, global_step, step_read


def estimator_lite_hooks(built, step_read, model_dir):
  """What estimator_lite's train() runs instead of default_hooks(): one step hook and the saver."""
  from estimator_lite import _checkpointing, _preemption, _step_hook  # pylint: disable=g-import-not-at-top
  scaffold = _train.Scaffold(summary_op=_v1.summary.merge_all())
  return [_step_hook.TrainingStepHook(built.loss, step_read, last_step=10**9, log_every_n_iter=100,
                                      output_dir=model_dir, count_every_n_steps=100,
                                      summary_every_n_steps=100, scaffold=scaffold),
          _preemption.SigtermWatcher().hook(),
          _checkpointing.SafeCheckpointSaverHook(model_dir, save_secs=10**6,
                                                 save_graph_def=False)]


def variants(graph, session, built, global_step, step_read, model_dir, have_fast):
  """[(name, make_step)]; make_step() -> (step function, cleanup)."""
  train_op, loss = built.train_op, built.loss
  with graph.as_default():
    plain_read = global_step.read_value()

  def plain(fn):
    return lambda: (fn, lambda: None)

  def monitored(hooks_fn, fast):
    def make():
      with graph.as_default():
        hooks = hooks_fn()
        # All variants share the initialised session; none is ever closed.
        sess = _train.MonitoredSession(
            session_creator=_SessionCreator(session, fast), hooks=hooks)
      return (lambda: sess.run([train_op, loss])), lambda: None
    return make

  def default_hooks():
    hooks = [_train.StopAtStepHook(last_step=10**9),
             _train.NanTensorHook(loss),
             _train.LoggingTensorHook({"loss": loss, "step": global_step}, every_n_iter=100),
             _train.StepCounterHook(every_n_steps=100, output_dir=model_dir),
             _train.SummarySaverHook(save_steps=100, output_dir=model_dir,
                                     summary_op=_v1.summary.merge_all()),
             _train.CheckpointSaverHook(model_dir, save_secs=10**6)]
    return hooks

  out = [
      ("Session.run(train_op)", plain(lambda: session.run(train_op))),
      ("Session.run([train_op, loss])", plain(lambda: session.run([train_op, loss]))),
      ("+ fetch global step (plain read)",
       plain(lambda: session.run([train_op, loss, plain_read]))),
      ("+ fetch global step (hooks' shared read: a tf.cond)",
       plain(lambda: session.run([train_op, loss, step_read]))),
      ("+ RunOptions/RunMetadata (as _HookedSession passes)",
       plain(lambda: session.run([train_op, loss, step_read], options=_v1.RunOptions(),
                                 run_metadata=_v1.RunMetadata()))),
      ("MonitoredSession, no hooks", monitored(lambda: [], fast=False)),
      ("MonitoredSession + tf.estimator's train() hooks", monitored(default_hooks, fast=False)),
  ]
  if have_fast:
    callable_step = session.make_callable([train_op, loss])
    out[1:1] = [("callable([train_op, loss]) (make_callable)", plain(callable_step))]
    out += [("FastSession MonitoredSession, no hooks", monitored(lambda: [], fast=True)),
            ("FastSession MonitoredSession + tf.estimator's train() hooks",
             monitored(default_hooks, fast=True)),
            ("FastSession MonitoredSession + estimator_lite's train() hooks",
             monitored(lambda: estimator_lite_hooks(built, step_read, model_dir),
                       fast=True))]
  return out


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--steps", type=int, default=3000)
  parser.add_argument("--rounds", type=int, default=3)
  args = parser.parse_args()
  try:
    import estimator_lite  # pylint: disable=g-import-not-at-top,unused-import
    have_fast = True
  except ImportError:
    have_fast = False
  import tempfile  # pylint: disable=g-import-not-at-top
  graph, session, built, global_step, step_read = build()
  cases = variants(graph, session, built, global_step, step_read, tempfile.mkdtemp(),
                   have_fast)
  steps = {name: make() for name, make in cases}
  graph.finalize()  # as MonitoredSession's Scaffold does; FastSession relies on it
  timings = {name: [] for name, _ in cases}
  for _ in range(args.rounds):
    for name, (step, _) in steps.items():
      for _ in range(100):
        step()
      start = time.perf_counter()
      for _ in range(args.steps):
        step()
      timings[name].append(1e6 * (time.perf_counter() - start) / args.steps)
  print(f"TF {tf.__version__}: µs per step, median of {args.rounds} x {args.steps} steps "
        "(difference to the line above)")
  previous = None
  for name, _ in cases:
    median = statistics.median(timings[name])
    delta = "" if previous is None else f"{median - previous:+7.1f}"
    print(f"  {median:7.1f} {delta:>8s}  {name}")
    previous = median


if __name__ == "__main__":
  main()
