"""One training run of one system on one model, in this (fresh) process; prints JSON.

    python benchmarks/workloads/train.py --system SYSTEM --model MODEL --steps N
        [--steps-per-loop K] [--export] [--turns READ_FD,WRITE_FD | --partner SYSTEM:K]
        --out result.json

SYSTEM:
  tf_estimator    tf.estimator (run it with the reference venv's python, TF 2.15);
  estimator_lite  estimator_lite (current venv; the repository on PYTHONPATH);
  bare            a tf.compat.v1.Session.run(train_op) loop over the same graph;
  in_graph        the same graph inside a tf.while_loop of K steps per Session.run.
--turns trains in turns with a partner process (run.py's pairs); --partner
trains a second system in a second thread of this process, the two in turns.
The bare loops use the Estimators' default session config (tf.estimator's:
soft placement, one Grappler pass), so only the loop around the graph differs.

Both Estimators run with their default RunConfig (plus tf_random_seed and, for
estimator_lite, steps_per_loop=K), the default hooks, summaries every 100 steps
and the default checkpoint saves (at the start and the end of train()).

Figures (seconds unless named otherwise):
  first_step_s     train() called (bare: graph construction starts) -> first
                   Session.run returned;
  launch_to_first_step_wall   time.time() of that first step (run.py subtracts
                   the process launch time);
  steps_per_sec    steady state, robust to a noisy machine: after the first
                   tenth of the Session.run calls, the calls are cut into
                   consecutive windows of 100 steps and this is the median
                   of the windows' rates. Every window holds exactly one of
                   the Estimators' every-100-steps events (loss log, step
                   rate, summaries), so their cost is counted; a window that
                   another process's burst of work slowed down is not what
                   the median reports;
  steps_per_sec_mean  steady state as a plain mean: from the end of the first
                   tenth of the calls to the last one;
  train_s          the whole train() call (bare: graph, session, loop, save);
  save_s           the last checkpoint save (CheckpointSaverListener
                   before_save -> after_save; bare: Saver.save);
  export_s         export_saved_model, when --export and the API has it.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time

_START_WALL = time.time()
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import tensorflow as tf  # pylint: disable=g-import-not-at-top,wrong-import-position

import models  # pylint: disable=g-import-not-at-top,wrong-import-position

_v1 = tf.compat.v1
SYSTEMS = ("tf_estimator", "estimator_lite", "bare", "in_graph")


class _Timing(_v1.train.SessionRunHook):
  """Records when each Session.run returns; fetches nothing."""

  def __init__(self, steps_per_call, turns=None):
    self.times = []
    self.first_wall = None
    self._steps_per_call = steps_per_call
    self._turns = turns

  def after_run(self, run_context, run_values):
    self.times.append(time.perf_counter())
    if self.first_wall is None:
      self.first_wall = time.time()
    if self._turns:
      self._turns.after_call(self._steps_per_call)


class _SaveTimer(_v1.train.CheckpointSaverListener):
  """Records how long each checkpoint save took."""

  def __init__(self):
    self.durations = []
    self._start = None

  def before_save(self, session, global_step_value):
    self._start = time.perf_counter()

  def after_save(self, session, global_step_value):
    self.durations.append(time.perf_counter() - self._start)


WINDOW_STEPS = 100  # the Estimators' log/summary period: one such event per window


def steady_steps_per_sec(times, steps_per_call):
  """Steps/s from the end of the first tenth of the calls to the last call."""
  if len(times) < 3:
    return None
  warm = max(1, len(times) // 10)
  return steps_per_call * (len(times) - 1 - warm) / (times[-1] - times[warm])


def windowed_steps_per_sec(times, steps_per_call):
  """Median of the steps/s of consecutive WINDOW_STEPS-step windows after the first tenth."""
  calls = max(1, WINDOW_STEPS // steps_per_call)
  warm = max(1, len(times) // 10)
  rates = [calls * steps_per_call / (times[i + calls] - times[i])
           for i in range(warm, len(times) - calls, calls)]
  return statistics.median(rates) if rates else steady_steps_per_sec(times, steps_per_call)


class Turns:
  """Trains in turns with a partner process, WINDOW_STEPS steps a turn (run.py's pairs).

  The two processes of a pair hand one token back and forth over two pipes
  and train only while they hold it, so the two systems never run at once
  and each window of one lies right next in time to a window of the other:
  the machine's slow spells, which last seconds, hit both sides of a pair of
  windows alike. `windows` holds the seconds each of this process's turns
  took, its waits excluded. The first Session.run (graph, session, first
  step) is not part of any turn. If the partner's end of a pipe closes (it
  finished or failed), this process goes on alone and records no more.
  """

  def __init__(self, read_fd, write_fd):
    self._read_fd, self._write_fd = read_fd, write_fd
    self.windows = []
    self._steps = 0
    self._resumed = None  # perf_counter() when this turn began; None before the first
    self._alone = False

  def after_call(self, steps):
    """Called after each Session.run of `steps` training steps; may wait for a turn."""
    if self._alone:
      return
    if self._resumed is None:
      self._take_turn()
      return
    self._steps += steps
    if self._steps < WINDOW_STEPS:
      return
    self.windows.append(time.perf_counter() - self._resumed)
    self._steps = 0
    try:
      os.write(self._write_fd, b"t")
    except BrokenPipeError:
      self._alone = True
      return
    self._take_turn()

  def _take_turn(self):
    if not os.read(self._read_fd, 1):  # end of file: the partner has gone
      self._alone = True
      return
    self._resumed = time.perf_counter()

  def close(self):
    for fd in (self._read_fd, self._write_fd):
      try:
        os.close(fd)
      except OSError:
        pass


def run_in_turns(model_name, steps, first, second):
  """Trains two systems in two threads of this process, in turns (run.py's in-process pairs).

  The threads hand the token over two pipes, exactly as two processes do
  (Turns), but share the process: its threads, allocator and libraries, so
  that what differs between the two is only the code around the graph.

  Args:
    first, second: (system, steps_per_loop); `first` holds the first turn.
  Returns:
    The two results of run(), in that order.
  Raises:
    The first exception either thread raised.
  """
  to_first, to_second = os.pipe(), os.pipe()
  os.write(to_first[1], b"t")
  turns = (Turns(to_first[0], to_second[1]), Turns(to_second[0], to_first[1]))
  results, errors = [None, None], []

  def train(index, system, steps_per_loop):
    try:
      results[index] = run(system, model_name, steps, steps_per_loop, turns=turns[index])
    except BaseException as error:  # pylint: disable=broad-except
      errors.append(error)
    finally:
      # The partner then reads end of file and goes on alone.
      turns[index].close()

  threads = [threading.Thread(target=train, args=(i, *config), name=f"turns-{config[0]}")
             for i, config in enumerate((first, second))]
  for thread in threads:
    thread.start()
  for thread in threads:
    thread.join()
  if errors:
    raise errors[0]
  return results


def turn_rates(windows):
  """steps/s of each turn after the first tenth (the first turns overlap the partner's start)."""
  warm = max(1, len(windows) // 10) if len(windows) > 1 else 0
  return [WINDOW_STEPS / seconds for seconds in windows[warm:]]


def step_rates(times, steps_per_call):
  """Both steady-state figures of a run, for its result dict."""
  return {"steps_per_sec": windowed_steps_per_sec(times, steps_per_call),
          "steps_per_sec_mean": steady_steps_per_sec(times, steps_per_call)}


def load_api(system):
  """tf.estimator, or estimator_lite (with undo_fixes applied, for before/after runs)."""
  if system == "tf_estimator":
    return tf.estimator
  import estimator_lite  # pylint: disable=g-import-not-at-top
  import undo_fixes  # pylint: disable=g-import-not-at-top
  undo_fixes.apply()
  return estimator_lite


def run_estimator(system, model, steps, steps_per_loop, model_dir, export, turns=None):
  api = load_api(system)
  config_args = {"tf_random_seed": 1}
  if steps_per_loop > 1:
    config_args["steps_per_loop"] = steps_per_loop
  estimator = api.Estimator(models.make_model_fn(model, api), model_dir=model_dir,
                            config=api.RunConfig(**config_args))
  timing, saves = _Timing(steps_per_loop, turns), _SaveTimer()
  start = time.perf_counter()
  estimator.train(models.make_input_fn(model), max_steps=steps, hooks=[timing],
                  saving_listeners=[saves])
  result = {
      "train_s": time.perf_counter() - start,
      "first_step_s": timing.times[0] - start,
      "first_step_wall": timing.first_wall,
      **step_rates(timing.times, steps_per_loop),
      "session_runs": len(timing.times),
      "save_s": saves.durations[-1] if saves.durations else None,
      "final_step": int(estimator.get_variable_value("global_step")),
  }
  if export:
    if hasattr(estimator, "export_saved_model"):
      start = time.perf_counter()
      estimator.export_saved_model(os.path.join(model_dir, "export"),
                                   models.serving_input_receiver_fn(model, api))
      result["export_s"] = time.perf_counter() - start
    else:
      result["export_s"] = None
      result["export_missing"] = f"{api.__name__}.Estimator has no export_saved_model"
  return result


def estimator_session_config():
  """tf.estimator's (and estimator_lite's) default ConfigProto for a local run."""
  from tensorflow.core.protobuf import rewriter_config_pb2  # pylint: disable=g-import-not-at-top,g-direct-tensorflow-import
  return _v1.ConfigProto(
      allow_soft_placement=True,
      graph_options=_v1.GraphOptions(rewrite_options=rewriter_config_pb2.RewriterConfig(
          meta_optimizer_iterations=rewriter_config_pb2.RewriterConfig.ONE)))


def _lift_variables(next_creator, **kwargs):
  # The loop body is a function graph; variables belong in the outer graph.
  with tf.init_scope():
    return next_creator(**kwargs)


def run_bare(model, steps, steps_per_loop, model_dir, turns=None):
  """A Session.run loop (steps_per_loop=1) or an in-graph loop of K steps per run."""
  times = []
  first_wall = None
  start = time.perf_counter()
  with tf.Graph().as_default():
    _v1.set_random_seed(1)
    _v1.train.get_or_create_global_step()
    iterator = _v1.data.make_initializable_iterator(models.dataset(model))
    if steps_per_loop == 1:
      features, labels = iterator.get_next()
      op = model.build(features, labels, True).train_op
    else:
      def body(i):
        features, labels = iterator.get_next()
        with tf.variable_creator_scope(_lift_variables):
          train_op = model.build(features, labels, True).train_op
        with tf.control_dependencies([train_op]):
          return i + 1
      op = _v1.while_loop(lambda i: i < steps_per_loop, body, [tf.constant(0)],
                          parallel_iterations=1)
    saver = _v1.train.Saver(sharded=True)
    with _v1.Session(config=estimator_session_config()) as session:
      session.run(_v1.global_variables_initializer())
      session.run(iterator.initializer)
      for _ in range(steps // steps_per_loop):
        session.run(op)
        times.append(time.perf_counter())
        if first_wall is None:
          first_wall = time.time()
        if turns:
          turns.after_call(steps_per_loop)
      save_start = time.perf_counter()
      saver.save(session, os.path.join(model_dir, "model.ckpt"), global_step=steps)
      save_s = time.perf_counter() - save_start
  return {
      "train_s": time.perf_counter() - start,
      "first_step_s": times[0] - start,
      "first_step_wall": first_wall,
      **step_rates(times, steps_per_loop),
      "session_runs": len(times),
      "save_s": save_s,
      "final_step": steps,
  }


def run(system, model_name, steps, steps_per_loop=1, model_dir=None, export=False, turns=None):
  """Runs one system on one model; returns the figures as a dict.

  With `turns` (a Turns), it trains in turns with a partner process; the
  result's "turn_rates" are then its figures of speed (steps_per_sec counts
  the waits too).
  """
  model = models.MODELS[model_name]
  model_dir = model_dir or tempfile.mkdtemp(prefix=f"bench_{system}_{model_name}_")
  os.makedirs(model_dir, exist_ok=True)
  if system in ("tf_estimator", "estimator_lite"):
    result = run_estimator(system, model, steps, steps_per_loop, model_dir, export, turns)
  elif system == "bare":
    result = run_bare(model, steps, 1, model_dir, turns)
  elif system == "in_graph":
    result = run_bare(model, steps, steps_per_loop, model_dir, turns)
  else:
    raise ValueError(f"unknown system {system!r}; one of {SYSTEMS}")
  result.update(system=system, model=model_name, steps=steps, steps_per_loop=steps_per_loop,
                tf_version=tf.__version__, process_start_wall=_START_WALL)
  if turns:
    result["turn_rates"] = turn_rates(turns.windows)
  return result


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--system", required=True, choices=SYSTEMS)
  parser.add_argument("--model", required=True, choices=sorted(models.MODELS))
  parser.add_argument("--steps", type=int, required=True)
  parser.add_argument("--steps-per-loop", type=int, default=1)
  parser.add_argument("--export", action="store_true")
  parser.add_argument("--model-dir")
  parser.add_argument("--also", action="append", default=[], metavar="SYSTEM:K",
                      help="more systems to run afterwards in this same process (only for "
                      "run.py --smoke, which checks that the harness works, not timings); the "
                      "output is then a list")
  parser.add_argument("--turns", metavar="READ_FD,WRITE_FD",
                      help="train in turns with a partner process over these two pipe ends "
                      "(set by run.py for its pairs; see Turns)")
  parser.add_argument("--partner", metavar="SYSTEM:K",
                      help="train SYSTEM (K steps per loop) in turns with --system in a second "
                      "thread of this process (run.py's in-process pairs; see run_in_turns); "
                      "the output is then a list of the two results")
  parser.add_argument("--out", required=True)
  args = parser.parse_args()
  configs = [(args.system, args.steps_per_loop)]
  for extra in args.also + ([args.partner] if args.partner else []):
    system, _, k = extra.partition(":")
    if system not in SYSTEMS:
      parser.error(f"{extra!r}: unknown system; one of {SYSTEMS}")
    configs.append((system, int(k or 1)))
  for system, k in configs:
    if args.steps % k:
      parser.error(f"--steps {args.steps} must be a multiple of the steps per loop ({k}) "
                   f"of {system}")
  if args.partner:
    if args.also or args.turns:
      parser.error("--partner cannot be combined with --also or --turns")
    results = run_in_turns(args.model, args.steps, *configs)
    with open(args.out, "w") as f:
      json.dump(results, f)
    return
  turns = Turns(*(int(fd) for fd in args.turns.split(","))) if args.turns else None
  try:
    results = [run(system, args.model, args.steps, k, args.model_dir if not args.also else None,
                   args.export, turns) for system, k in configs]
  finally:
    if turns:
      turns.close()
  with open(args.out, "w") as f:
    json.dump(results if args.also else results[0], f)


if __name__ == "__main__":
  main()
