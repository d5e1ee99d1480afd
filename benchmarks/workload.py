"""What one fresh benchmark process runs: `workload.py ROLE KWARGS_JSON OUT_JSON` (see ROLES).

run.py starts every measurement this way, with the python of the TensorFlow
it measures: the trainings, the evaluator's tasks, and the costs of a step
measured within one process (ps clusters: benchmarks/ps_cluster.py).

train (run()): tf_estimator (TF 2.15), estimator_lite (this checkout's),
bare (Session.run(train_op) in a Python loop over the same graph) or
in_graph (that graph in a tf.while_loop, K steps a run). The Estimators run
with their default RunConfig, hooks, summaries and checkpoints; the bare
loops with their session config: only the code around the graph differs.
Figures (seconds): first_step_s (train() called, or the graph started ->
first run returned), steps_per_sec (after the first tenth, the median rate of
100-step windows, each holding one of the Estimators' every-100-steps events;
a window slowed by another process's burst does not move the median),
steps_per_sec_mean, train_s, save_s, export_s; peak_rss_mb (ru_maxrss, whole process);
seen: what ran (ab_fixes.check; input_ops: the graph's iterator and queue op types).
With `estimator`, the Estimators run a TPUEstimator program instead
(benchmarks/tpu_estimator.py); with `numpy_input`, they train the numpy_dnn model fed by
numpy_input_fn (benchmarks/numpy_input.py); `lite_root`: the estimator_lite checkout
that run.py put first on this process's PYTHONPATH, checked to be the one imported.
"""
import collections
import importlib.util
import json
import os
import resource
import statistics
import sys
import tempfile
import time
import types

_START_WALL = time.time()
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import tensorflow as tf  # pylint: disable=g-import-not-at-top,wrong-import-position
from tensorflow.core.protobuf import rewriter_config_pb2  # pylint: disable=g-import-not-at-top,wrong-import-position,g-direct-tensorflow-import
from tensorflow.python.training import training_util  # pylint: disable=g-import-not-at-top,wrong-import-position,g-direct-tensorflow-import

import ab_fixes  # pylint: disable=g-import-not-at-top,wrong-import-position
import lite_internals  # pylint: disable=g-import-not-at-top,wrong-import-position
import models  # pylint: disable=g-import-not-at-top,wrong-import-position

_v1, _train = tf.compat.v1, tf.compat.v1.train
_LINEAR = models.MODELS["linear"]
WINDOW_STEPS = 100  # the Estimators' log/summary period: one such event per window


def steady_steps_per_sec(times, steps_per_call):
  """Steps/s from the end of the first tenth of the calls to the last call."""
  warm = max(1, len(times) // 10)
  return steps_per_call * (len(times) - 1 - warm) / (times[-1] - times[warm]) if len(
      times) > 2 else None


class _Clock:
  """When each Session.run (of `steps_per_call` steps) returned; with `turns`, trains in turns.

  turns: (read, write) ends of two pipes to a partner process (run.py's pairs).
  The two pass one token back and forth and train only while they hold it,
  WINDOW_STEPS steps a turn, so the machine's slow spells (seconds long) hit
  neighbouring turns of both alike. `windows`: each turn's seconds, waits
  excluded. Once the partner's end closes, this side goes on alone.
  """

  def __init__(self, steps_per_call, turns=None):
    self.times, self.first_wall, self._k, self._paired = [], None, steps_per_call, bool(turns)
    self._turns, self.windows, self._steps, self._resumed = turns, [], 0, None

  def tick(self):
    self.times.append(time.perf_counter())
    self.first_wall = self.first_wall or time.time()
    if not self._turns:
      return
    if self._resumed is not None:
      self._steps += self._k
      if self._steps < WINDOW_STEPS:
        return
      self.windows.append(time.perf_counter() - self._resumed)
      self._steps = 0
      try:
        os.write(self._turns[1], b"t")
      except BrokenPipeError:
        self._turns = None
        return
    if not os.read(self._turns[0], 1):  # end of file: the partner has gone
      self._turns = None
    self._resumed = time.perf_counter()

  def figures(self, start):
    times, k = self.times, self._k
    calls, warm = max(1, WINDOW_STEPS // k), max(1, len(times) // 10)
    rates = [calls * k / (times[i + calls] - times[i])
             for i in range(warm, len(times) - calls, calls)]
    mean = steady_steps_per_sec(times, k)
    figures = dict(first_step_s=times[0] - start, first_step_wall=self.first_wall,
                   steps_per_sec=statistics.median(rates) if rates else mean,
                   steps_per_sec_mean=mean, session_runs=len(times))
    if self._paired:  # after the first tenth: the first turns overlap the partner's start
      warm = max(1, len(self.windows) // 10) if len(self.windows) > 1 else 0
      figures["turn_rates"] = [WINDOW_STEPS / w for w in self.windows[warm:]]
    return figures


class _Probe(_v1.train.SessionRunHook):
  """Ticks the clock after each Session.run (fetching nothing); records what ran the steps."""

  def __init__(self, clock, count_callables=None):
    self.clock, self._count, self.seen = clock, count_callables, {}

  def begin(self):
    read = _v1.get_collection(training_util.GLOBAL_STEP_READ_KEY)
    self.seen["step_read_has_cond"] = bool(read) and ab_fixes.has_cond(read[0])
    self.seen["input_ops"] = sorted({op.type for op in _v1.get_default_graph().get_operations()
                                     if "Iterator" in op.type or "Queue" in op.type})

  def after_run(self, run_context, run_values):
    self.clock.tick()

  def end(self, session):  # before the session closes (FastSession.close empties its cache)
    self.seen["session"] = type(session).__name__
    if self._count:
      self.seen["cached_callables"] = self._count(session)


class _Saves(_v1.train.CheckpointSaverListener):
  """Each checkpoint save's duration and (step, wall time when written); then pauses `gap_secs`."""

  def __init__(self, gap_secs=0.0):
    self.durations, self.saves, self._gap_secs, self._start = [], [], gap_secs, None

  def before_save(self, session, global_step_value):
    self._start = time.perf_counter()

  def after_save(self, session, global_step_value):
    self.durations.append(time.perf_counter() - self._start)
    self.saves.append((int(global_step_value), time.time()))
    time.sleep(self._gap_secs)  # the evaluator latency's trainer: the evaluator is never behind


def _estimator(system, model, model_dir, undo=None, **config):
  """tf.estimator's or estimator_lite's Estimator (with the fixes in `undo` undone, ab_fixes)."""
  if system == "tf_estimator":
    api = tf.estimator
  else:
    import estimator_lite as api  # pylint: disable=g-import-not-at-top
    if undo is not None:
      ab_fixes.undo(undo)
  return api, api.Estimator(models.make_model_fn(model, api), model_dir=model_dir,
                            config=api.RunConfig(tf_random_seed=1, **config))


def _tpu_program(system, model, model_dir, estimator, steps_per_loop, iterations_per_loop):
  """A TPUEstimator program (models.make_tpu_program) run by `estimator`: "TPUEstimator"
  (use_tpu=False, TPUConfig(iterations_per_loop); steps_per_loop > 1: estimator_lite's
  opt-in) or "Estimator" (the same model_fn returning an EstimatorSpec). Returns
  (api, estimator, input_fn)."""
  if system == "tf_estimator":
    api, tpu = tf.estimator, _v1.estimator.tpu
  else:
    import estimator_lite as api  # pylint: disable=g-import-not-at-top
    from estimator_lite import tpu  # pylint: disable=g-import-not-at-top
  loop = {"steps_per_loop": steps_per_loop} if steps_per_loop > 1 else {}
  if estimator == "Estimator":
    model_fn, input_fn = models.make_tpu_program(model, api.EstimatorSpec, api.ModeKeys)
    return api, api.Estimator(model_fn, model_dir=model_dir, config=api.RunConfig(
        tf_random_seed=1, **loop)), input_fn
  model_fn, input_fn = models.make_tpu_program(model, tpu.TPUEstimatorSpec, api.ModeKeys)
  config = tpu.RunConfig(tf_random_seed=1, tpu_config=tpu.TPUConfig(
      iterations_per_loop=iterations_per_loop), **loop)
  return api, tpu.TPUEstimator(model_fn, model_dir=model_dir, config=config, use_tpu=False,
                               train_batch_size=models.batch_size(model)), input_fn


def estimator_session_config():
  """tf.estimator's (and estimator_lite's) default ConfigProto for a local run."""
  rewrite = rewriter_config_pb2.RewriterConfig(
      meta_optimizer_iterations=rewriter_config_pb2.RewriterConfig.ONE)
  return _v1.ConfigProto(allow_soft_placement=True,
                         graph_options=_v1.GraphOptions(rewrite_options=rewrite))


def _lite_file(lite_root):
  """estimator_lite's __init__.py as imported; ValueError unless under `lite_root` (if set)."""
  import estimator_lite  # pylint: disable=g-import-not-at-top
  path = os.path.realpath(estimator_lite.__file__)
  if lite_root and not path.startswith(os.path.realpath(lite_root) + os.sep):
    raise ValueError(f"estimator_lite imported from {path}, not from {lite_root}")
  return path


def run(system, model, steps, steps_per_loop=1, model_dir=None, export=False, turns=None,
        undo=None, estimator=None, iterations_per_loop=2, numpy_input=None, lite_root=None):
  """One system trains one model (in turns with a partner: see _Clock); train's figures.

  estimator: None, or how an Estimator system runs a TPUEstimator program (_tpu_program).
  numpy_input: None, or how an Estimator system gets the numpy_dnn model's data:
  "direct" (numpy_input_fn's input_fn passed to train()) or "wrapped" (a user's input_fn
  calling it), models.make_numpy_input_fn. lite_root: see the module's docstring.
  """
  result = dict(system=system, model=model, steps=steps, steps_per_loop=steps_per_loop,
                tf_version=tf.__version__, process_start_wall=_START_WALL)
  if system == "estimator_lite":
    result["estimator_lite_file"] = _lite_file(lite_root)
  model_dir = model_dir or tempfile.mkdtemp(prefix=f"bench_{system}_")
  model, clock = models.MODELS[model], _Clock(steps_per_loop, turns)
  if system in ("tf_estimator", "estimator_lite"):
    if estimator:
      api, estimator, input_fn = _tpu_program(system, model, model_dir, estimator,
                                              steps_per_loop, iterations_per_loop)
    else:
      api, estimator = _estimator(system, model, model_dir, undo, **(
          {"steps_per_loop": steps_per_loop} if steps_per_loop > 1 else {}))
      input_fn = models.make_input_fn(model)
    if numpy_input:
      inputs = _v1.estimator.inputs if system == "tf_estimator" else api.inputs
      input_fn = models.make_numpy_input_fn(inputs.numpy_input_fn, numpy_input == "wrapped")
    probe = _Probe(clock, lite_internals.cached_callables if system == "estimator_lite" else None)
    saves, start = _Saves(), time.perf_counter()
    estimator.train(input_fn, max_steps=steps, hooks=[probe],
                    saving_listeners=[saves])
    result.update(train_s=time.perf_counter() - start, save_s=(saves.durations or [None])[-1],
                  final_step=int(estimator.get_variable_value("global_step")), seen=probe.seen)
    if undo is not None:
      ab_fixes.check(undo, probe.seen)
    if export:
      export_start = time.perf_counter()
      estimator.export_saved_model(os.path.join(model_dir, "export"),
                                   models.serving_input_receiver_fn(model, api))
      result["export_s"] = time.perf_counter() - export_start
  else:  # the bare loops: Session.run(train_op), or K steps of the in-graph loop, a run
    start = time.perf_counter()
    graph, iterator, op, init = models.training_graph(
        model, steps_per_loop if system == "in_graph" else 1)
    with graph.as_default():
      saver = _v1.train.Saver(sharded=True)
    with _v1.Session(graph=graph, config=estimator_session_config()) as session:
      session.run(init)
      session.run(iterator.initializer)
      for _ in range(steps // steps_per_loop):
        session.run(op)
        clock.tick()
      save_start = time.perf_counter()
      saver.save(session, os.path.join(model_dir, "model.ckpt"), global_step=steps)
      save_s = time.perf_counter() - save_start
    result.update(train_s=time.perf_counter() - start, save_s=save_s, final_step=steps)
  for fd in turns or ():
    os.close(fd)  # the partner then goes on alone, not waiting for a turn
  return dict(result, peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
              **clock.figures(start))


def evaluator_side(role, system, model_dir, max_steps, save_every):
  """Evaluator latency, one side: the `trainer` saves every `save_every` steps; the `evaluator`
  task of train_and_evaluate (start_delay_secs=0, throttle_secs=1, 10 batches) on the same
  model_dir returns, per evaluated step, the wall time of the last eval event written."""
  model = _LINEAR
  if role == "evaluator":  # port 1 is never contacted: the evaluator is outside the cluster
    os.environ["TF_CONFIG"] = json.dumps({"cluster": {"chief": ["localhost:1"]},
                                          "task": {"type": "evaluator", "index": 0}})
  api, estimator = _estimator(system, model, model_dir, save_checkpoints_steps=save_every)
  if role == "trainer":
    saves = _Saves(gap_secs=2.0)
    estimator.train(models.make_input_fn(model), max_steps=max_steps, saving_listeners=[saves])
    return {"saves": saves.saves}
  api.train_and_evaluate(
      estimator, api.TrainSpec(models.make_input_fn(model), max_steps=max_steps),
      api.EvalSpec(models.make_input_fn(model), steps=10, start_delay_secs=0, throttle_secs=1))
  times = {}
  for path in tf.io.gfile.glob(os.path.join(model_dir, "eval", "events.out.tfevents.*")):
    for event in _v1.train.summary_iterator(path):
      if event.HasField("summary"):
        times[event.step] = max(times.get(event.step, 0.0), event.wall_time)
  return {"eval_events": sorted(times.items())}


def step_costs(steps=3000, rounds=3):
  """µs per step of the linear model, one layer of what Estimator.train runs added at a time.

  From Session.run(train_op) to a MonitoredSession with tf.estimator's hooks;
  where estimator_lite imports (not on TF 2.15), also FastSession and
  estimator_lite's hooks. Everything shares one graph and session.
  """
  graph = tf.Graph()
  with graph.as_default():
    _v1.set_random_seed(1)
    global_step = _train.get_or_create_global_step()
    step_read = training_util._get_or_create_global_step_read(graph)  # pylint: disable=protected-access
    plain_read = global_step.read_value()
    iterator = _v1.data.make_initializable_iterator(models.dataset(_LINEAR))
    built = _LINEAR.build(*iterator.get_next(), True)
    _v1.summary.scalar("loss", built.loss)
    _v1.add_to_collection(_v1.GraphKeys.SAVERS, _train.Saver(sharded=True))
    session = _v1.Session(graph=graph)
    session.run(_v1.global_variables_initializer())
    session.run(iterator.initializer)
  # The lines comparing the two reads must time what they say.
  assert ab_fixes.has_cond(step_read) and not ab_fixes.has_cond(plain_read)
  model_dir, train_op, loss = tempfile.mkdtemp(), built.train_op, built.loss

  def tf_hooks():
    return [_train.StopAtStepHook(last_step=10**9), _train.NanTensorHook(loss),
            _train.LoggingTensorHook({"loss": loss, "step": global_step}, every_n_iter=100),
            _train.StepCounterHook(every_n_steps=100, output_dir=model_dir),
            _train.SummarySaverHook(save_steps=100, output_dir=model_dir,
                                    summary_op=_v1.summary.merge_all()),
            _train.CheckpointSaverHook(model_dir, save_secs=10**6)]

  def lite_hooks():
    return [lite_internals.training_step_hook_class()(
        loss, step_read, last_step=10**9, log_every_n_iter=100, output_dir=model_dir,
        count_every_n_steps=100, summary_every_n_steps=100,
        scaffold=_train.Scaffold(summary_op=_v1.summary.merge_all())),
            lite_internals.sigterm_watcher_class()().hook(),
            lite_internals.checkpoint_saver_hook_class()(model_dir, save_secs=10**6,
                                                         save_graph_def=False)]

  def monitored(hooks, fast):
    # All share the initialised session (in a FastSession if `fast`); none is closed.
    creator = types.SimpleNamespace(create_session=lambda: lite_internals.fast_session_class()(
        session) if fast else session)
    with graph.as_default():
      sess = _train.MonitoredSession(session_creator=creator, hooks=hooks())
    return lambda: sess.run([train_op, loss])

  cases = [
      ("Session.run(train_op)", lambda: session.run(train_op)),
      ("Session.run([train_op, loss])", lambda: session.run([train_op, loss])),
      ("+ fetch global step (plain read)", lambda: session.run([train_op, loss, plain_read])),
      ("+ fetch global step (hooks' shared read: a tf.cond)",
       lambda: session.run([train_op, loss, step_read])),
      ("+ RunOptions/RunMetadata (as _HookedSession passes)",
       lambda: session.run([train_op, loss, step_read], options=_v1.RunOptions(),
                           run_metadata=_v1.RunMetadata())),
      ("MonitoredSession, no hooks", monitored(list, fast=False)),
      ("MonitoredSession + tf.estimator's train() hooks", monitored(tf_hooks, fast=False))]
  if importlib.util.find_spec("estimator_lite"):  # not in the reference venv
    cases.insert(1, ("callable([train_op, loss]) (make_callable)",
                     session.make_callable([train_op, loss])))
    cases += [("FastSession MonitoredSession, no hooks", monitored(list, fast=True)),
              ("FastSession MonitoredSession + tf.estimator's train() hooks",
               monitored(tf_hooks, fast=True)),
              ("FastSession MonitoredSession + estimator_lite's train() hooks",
               monitored(lite_hooks, fast=True))]
  graph.finalize()  # as MonitoredSession's Scaffold does; FastSession relies on it
  times = collections.defaultdict(list)
  for _ in range(rounds):  # the cases take turns, so that the machine's drift hits all alike
    for name, step in cases:
      for _ in range(100):
        step()
      start = time.perf_counter()
      for _ in range(steps):
        step()
      times[name].append(1e6 * (time.perf_counter() - start) / steps)
  lines, previous = [f"TF {tf.__version__}: µs per step, median of {rounds} x {steps} steps "
                     "(difference to the line above)"], None
  for name, _ in cases:
    micros = statistics.median(times[name])
    lines.append(f"  {micros:7.1f} {'' if previous is None else f'{micros - previous:+7.1f}':>8s}"
                 f"  {name}")
    previous = micros
  return "\n".join(lines)


def op_costs(model="wide_deep", steps=40, top=10):
  """Each op's µs per step in a bare Session.run loop (FULL_TRACE step stats, after warm-up).

  With both TensorFlows it shows a kernel getting slower, which no Estimator
  can change. Op times overlap on several threads: their sum is not a step's time.
  """
  graph, iterator, op, init = models.training_graph(models.MODELS[model])
  totals = collections.Counter()
  with _v1.Session(graph=graph, config=estimator_session_config()) as session:
    session.run(init)
    session.run(iterator.initializer)
    for _ in range(50):
      session.run(op)
    for _ in range(steps):
      metadata = _v1.RunMetadata()
      session.run(op, options=_v1.RunOptions(trace_level=_v1.RunOptions.FULL_TRACE),
                  run_metadata=metadata)
      for node in (n for device in metadata.step_stats.dev_stats for n in device.node_stats):
        totals[node.node_name] += node.all_end_rel_micros
  return "\n".join([f"TF {tf.__version__}, {model}: op time per step, µs, mean of {steps} "
                    f"traced steps; sum over all {len(totals)} ops: "
                    f"{sum(totals.values()) / steps:.0f}"] +
                   [f"  {micros / steps:8.1f}  {name}" for name, micros in totals.most_common(top)])


ROLES = {"train": run, "trainer": lambda **kw: evaluator_side("trainer", **kw),
         "evaluator": lambda **kw: evaluator_side("evaluator", **kw),
         "step_costs": step_costs, "op_costs": op_costs}

if __name__ == "__main__":
  role, kwargs, out = sys.argv[1:]
  result = ROLES[role](**json.loads(kwargs))
  with open(out, "w") as f:
    json.dump(result, f)
