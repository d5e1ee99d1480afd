"""What one fresh benchmark process runs: `workload.py ROLE KWARGS_JSON OUT_JSON` (see ROLES).

run.py starts every measurement this way: the trainings, the evaluator's and
the cluster's tasks, the gRPC floor, and the costs of a step measured within
one process (step_costs, op_costs, loop_costs, profile), each with the
python of the TensorFlow it measures.

train: one system trains one model: tf_estimator (the reference venv's TF
2.15), estimator_lite (this checkout's), bare (Session.run(train_op) in a
Python loop over the same graph) or in_graph (that graph in a tf.while_loop,
K steps a run). The Estimators run with their default RunConfig (plus
tf_random_seed and steps_per_loop=K), hooks, summaries and checkpoints; the
bare loops with their session config: only the code around the graph differs.
Figures, in seconds: first_step_s (train() called, or graph construction
started -> first run returned), first_step_wall (time.time() then),
steps_per_sec (after the first tenth of the runs, the median rate of
100-step windows: each holds one of the Estimators' every-100-steps events,
and a window slowed by another process's burst of work does not move the
median), steps_per_sec_mean (the end of the first tenth to the last run),
train_s, save_s (the last checkpoint save), export_s; seen: what ran (the
shared step read, the session; ab_fixes.check).
"""
import collections
import cProfile
import json
import os
import pstats
import statistics
import sys
import tempfile
import time

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
SYSTEMS = ("tf_estimator", "estimator_lite", "bare", "in_graph")
WINDOW_STEPS = 100  # the Estimators' log/summary period: one such event per window


class _Probe(_v1.train.SessionRunHook):
  """Records when each Session.run returns (fetching nothing), and what ran the steps."""

  def __init__(self, steps_per_call, turns=None, count_callables=None):
    self.times, self.first_wall, self.seen = [], None, {}
    self._steps_per_call, self._turns, self._count = steps_per_call, turns, count_callables

  def begin(self):
    read = _v1.get_collection(training_util.GLOBAL_STEP_READ_KEY)
    self.seen["step_read_has_cond"] = bool(read) and ab_fixes.has_cond(read[0])

  def after_run(self, run_context, run_values):
    self.times.append(time.perf_counter())
    self.first_wall = self.first_wall or time.time()
    if self._turns:
      self._turns.after_call(self._steps_per_call)

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


def steady_steps_per_sec(times, steps_per_call):
  """Steps/s from the end of the first tenth of the calls to the last call."""
  if len(times) < 3:
    return None
  warm = max(1, len(times) // 10)
  return steps_per_call * (len(times) - 1 - warm) / (times[-1] - times[warm])


def step_rates(times, steps_per_call):
  """steps_per_sec (median of WINDOW_STEPS windows after the first tenth), steps_per_sec_mean."""
  calls, warm = max(1, WINDOW_STEPS // steps_per_call), max(1, len(times) // 10)
  rates = [calls * steps_per_call / (times[i + calls] - times[i])
           for i in range(warm, len(times) - calls, calls)]
  mean = steady_steps_per_sec(times, steps_per_call)
  return {"steps_per_sec": statistics.median(rates) if rates else mean, "steps_per_sec_mean": mean}


class Turns:
  """Trains in turns with a partner, WINDOW_STEPS steps a turn (run.py's pairs).

  The two sides hand one token back and forth over two pipes and train only
  while they hold it: each turn of one lies next in time to a turn of the
  other, so the machine's slow spells (seconds long) hit both alike.
  `windows`: each turn's seconds, waits excluded (the first Session.run is in
  none). When the partner's end closes, this side goes on alone.
  """

  def __init__(self, read_fd, write_fd):
    self._read_fd, self._write_fd = read_fd, write_fd
    self.windows, self._steps, self._resumed, self._alone = [], 0, None, False

  def after_call(self, steps):
    """Called after each Session.run of `steps` steps; may wait for a turn."""
    if self._alone:
      return
    if self._resumed is not None:
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
    self._alone = not os.read(self._read_fd, 1)  # end of file: the partner has gone
    self._resumed = time.perf_counter()

  def turn_rates(self):
    """steps/s of each turn after the first tenth (the first ones overlap the partner's start)."""
    warm = max(1, len(self.windows) // 10) if len(self.windows) > 1 else 0
    return [WINDOW_STEPS / seconds for seconds in self.windows[warm:]]

  def close(self):
    for fd in (self._read_fd, self._write_fd):
      os.close(fd)


def load_api(system, undo=None):
  """tf.estimator, or estimator_lite with the fixes in `undo` undone (ab_fixes)."""
  if system == "tf_estimator":
    return tf.estimator
  import estimator_lite  # pylint: disable=g-import-not-at-top
  if undo is not None:
    ab_fixes.undo(undo)
  return estimator_lite


def _estimator(system, model, model_dir, undo=None, **config):
  api = load_api(system, undo)
  return api, api.Estimator(models.make_model_fn(model, api), model_dir=model_dir,
                            config=api.RunConfig(tf_random_seed=1, **config))


def _run_estimator(system, model, steps, steps_per_loop, model_dir, export, turns, undo):
  api, estimator = _estimator(system, model, model_dir, undo, **(
      {"steps_per_loop": steps_per_loop} if steps_per_loop > 1 else {}))
  count = lite_internals.cached_callables if system == "estimator_lite" else None
  probe, saves = _Probe(steps_per_loop, turns, count), _Saves()
  start = time.perf_counter()
  estimator.train(models.make_input_fn(model), max_steps=steps, hooks=[probe],
                  saving_listeners=[saves])
  result = dict(train_s=time.perf_counter() - start, first_step_s=probe.times[0] - start,
                first_step_wall=probe.first_wall, **step_rates(probe.times, steps_per_loop),
                session_runs=len(probe.times), save_s=(saves.durations or [None])[-1],
                final_step=int(estimator.get_variable_value("global_step")), seen=probe.seen)
  if undo is not None:
    ab_fixes.check(undo, probe.seen)
  if export:
    start = time.perf_counter()
    estimator.export_saved_model(os.path.join(model_dir, "export"),
                                 models.serving_input_receiver_fn(model, api))
    result["export_s"] = time.perf_counter() - start
  return result


def estimator_session_config():
  """tf.estimator's (and estimator_lite's) default ConfigProto for a local run."""
  rewrite = rewriter_config_pb2.RewriterConfig(
      meta_optimizer_iterations=rewriter_config_pb2.RewriterConfig.ONE)
  return _v1.ConfigProto(allow_soft_placement=True,
                         graph_options=_v1.GraphOptions(rewrite_options=rewrite))


def _run_bare(model, steps, steps_per_loop, model_dir, turns):
  times, first_wall = [], None
  start = time.perf_counter()
  built = models.training_graph(model, steps_per_loop)
  with built.graph.as_default():
    saver = _v1.train.Saver(sharded=True)
  with _v1.Session(graph=built.graph, config=estimator_session_config()) as session:
    session.run(built.init)
    session.run(built.iterator.initializer)
    for _ in range(steps // steps_per_loop):
      session.run(built.op)
      times.append(time.perf_counter())
      first_wall = first_wall or time.time()
      if turns:
        turns.after_call(steps_per_loop)
    save_start = time.perf_counter()
    saver.save(session, os.path.join(model_dir, "model.ckpt"), global_step=steps)
    save_s = time.perf_counter() - save_start
  return dict(train_s=time.perf_counter() - start, first_step_s=times[0] - start,
              first_step_wall=first_wall, **step_rates(times, steps_per_loop),
              session_runs=len(times), save_s=save_s, final_step=steps)


def run(system, model, steps, steps_per_loop=1, model_dir=None, export=False, turns=None,
        undo=None):
  """One system trains one model; train's figures (with `turns`, also turn_rates)."""
  model_dir = model_dir or tempfile.mkdtemp(prefix=f"bench_{system}_{model}_")
  if system in ("tf_estimator", "estimator_lite"):
    result = _run_estimator(system, models.MODELS[model], steps, steps_per_loop, model_dir,
                            export, turns, undo)
  else:
    result = _run_bare(models.MODELS[model], steps, steps_per_loop if system == "in_graph" else 1,
                       model_dir, turns)
  result.update(system=system, model=model, steps=steps, steps_per_loop=steps_per_loop,
                tf_version=tf.__version__, process_start_wall=_START_WALL)
  if turns:
    result["turn_rates"] = turns.turn_rates()
  return result


def train(turns=None, **kwargs):
  """run(**kwargs), in turns with a partner process over the pipe ends `turns` (read, write)."""
  side = turns and Turns(*turns)
  try:
    return run(turns=side, **kwargs)
  finally:
    if side:
      side.close()


def evaluator_side(role, system, model_dir, max_steps, save_every):
  """Evaluator latency, one side: the `trainer` saves every `save_every` steps; the `evaluator`
  task of train_and_evaluate (start_delay_secs=0, throttle_secs=1, 10 batches) on the same
  model_dir returns, per evaluated step, the wall time of the last eval event written."""
  model = models.MODELS["linear"]
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


class _Deadline(_v1.train.SessionRunHook):
  """Stops at the wall time run.py writes to `path`; records step times (chief: global steps).

  Creates PATH.started.TASK after its first step: run.py then knows it is stepping.
  """

  def __init__(self, path, task, on_chief):
    self._path, self._task, self._on_chief = path, task, on_chief
    self._deadline, self._next_poll = float("inf"), 0.0
    self.first_wall = self.last_wall = None
    self.samples = []

  def begin(self):
    self._global_step = _v1.train.get_global_step()

  def before_run(self, run_context):
    return _v1.train.SessionRunArgs(self._global_step) if self._on_chief else None

  def after_run(self, run_context, run_values):
    now = self.last_wall = time.time()
    if self.first_wall is None:
      self.first_wall = now
      with open(f"{self._path}.started.{self._task}", "w"):
        pass
    if self._on_chief:
      self.samples.append((now, int(run_values.results)))
    if now >= self._next_poll:  # reading the file every step would cost more than a step
      self._next_poll = now + 0.25
      try:
        with open(self._path) as f:
          self._deadline = float(f.read())
      except (OSError, ValueError):  # not written yet
        pass
    if now >= self._deadline:
      run_context.request_stop()


def cluster_task(system, tf_config, model_dir, deadline_file):
  """One task of an asynchronous ps cluster: train_and_evaluate with TF_CONFIG, linear model,
  variables on the ps, workers without their staggered start. A ps serves until stopped."""
  os.environ["TF_CONFIG"] = json.dumps(tf_config)
  task = tf_config["task"]
  model = models.MODELS["linear"]
  api, estimator = _estimator(system, model, model_dir, experimental_max_worker_delay_secs=0)
  hook = _Deadline(deadline_file, f"{task['type']}{task['index']}", task["type"] == "chief")
  api.train_and_evaluate(estimator, api.TrainSpec(models.make_input_fn(model), hooks=[hook]),
                         api.EvalSpec(models.make_input_fn(model), steps=1))
  return {"first_wall": hook.first_wall, "last_wall": hook.last_wall, "samples": hook.samples}


def grpc_floor(steps, ports):
  """This TensorFlow's floor under the clusters: Session.run(train_op) against a ps, no
  Estimator, no hooks. A ps and a worker server in this process still talk gRPC over
  localhost; the variables are placed on the ps as an Estimator places them."""
  cluster = tf.train.ClusterSpec({"ps": [f"localhost:{ports[0]}"],
                                  "worker": [f"localhost:{ports[1]}"]})
  servers = [tf.distribute.Server(cluster, job_name=job, task_index=0) for job in ("ps", "worker")]
  device_fn = _v1.train.replica_device_setter(ps_tasks=1, worker_device="/job:worker/task:0",
                                              merge_devices=True, cluster=cluster)
  built = models.training_graph(models.MODELS["linear"], device_fn=device_fn)
  times = []
  with _v1.Session(servers[1].target, graph=built.graph,
                   config=_v1.ConfigProto(device_filters=["/job:ps", "/job:worker/task:0"])) as s:
    s.run(built.init)
    s.run(built.iterator.initializer)
    for _ in range(steps):
      s.run(built.op)
      times.append(time.perf_counter())
  return {"steps_per_sec": steady_steps_per_sec(times, 1), "tf_version": tf.__version__}


def _interleaved_medians(cases, rounds, repeat, warmup=0):
  """[(name, median seconds per call)]: each round times every case `repeat` times.

  The cases take turns round after round, so that the machine's drift hits them alike.
  """
  times = collections.defaultdict(list)
  for _ in range(rounds):
    for name, run in cases:
      for _ in range(warmup):
        run()
      start = time.perf_counter()
      for _ in range(repeat):
        run()
      times[name].append((time.perf_counter() - start) / repeat)
  return [(name, statistics.median(times[name])) for name, _ in cases]


class _GivenSession(_train.SessionCreator):
  """Hands out the one initialised session (in a FastSession when asked)."""

  def __init__(self, session, fast):
    self._session, self._fast = session, fast

  def create_session(self):
    return lite_internals.fast_session_class()(self._session) if self._fast else self._session


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
    with graph.as_default():  # all share the initialised session; none is closed
      sess = _train.MonitoredSession(session_creator=_GivenSession(session, fast), hooks=hooks())
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
  try:
    import estimator_lite  # pylint: disable=g-import-not-at-top,unused-import
  except ImportError:  # the reference venv: TensorFlow's layers only
    pass
  else:
    cases.insert(1, ("callable([train_op, loss]) (make_callable)",
                     session.make_callable([train_op, loss])))
    cases += [("FastSession MonitoredSession, no hooks", monitored(list, fast=True)),
              ("FastSession MonitoredSession + tf.estimator's train() hooks",
               monitored(tf_hooks, fast=True)),
              ("FastSession MonitoredSession + estimator_lite's train() hooks",
               monitored(lite_hooks, fast=True))]
  graph.finalize()  # as MonitoredSession's Scaffold does; FastSession relies on it
  lines, previous = [f"TF {tf.__version__}: µs per step, median of {rounds} x {steps} steps "
                     "(difference to the line above)"], None
  for name, seconds in _interleaved_medians(cases, rounds, steps, warmup=100):
    delta = "" if previous is None else f"{1e6 * (seconds - previous):+7.1f}"
    lines.append(f"  {1e6 * seconds:7.1f} {delta:>8s}  {name}")
    previous = seconds
  return "\n".join(lines)


def op_costs(model="wide_deep", steps=40, top=10):
  """Each op's µs per step in a bare Session.run loop (FULL_TRACE step stats, after warm-up).

  With both TensorFlows it shows a kernel getting slower, which no Estimator
  can change. Op times overlap on several threads: their sum is not a step's time.
  """
  built = models.training_graph(models.MODELS[model])
  totals = collections.Counter()
  with _v1.Session(graph=built.graph, config=estimator_session_config()) as session:
    session.run(built.init)
    session.run(built.iterator.initializer)
    for _ in range(50):
      session.run(built.op)
    for _ in range(steps):
      metadata = _v1.RunMetadata()
      session.run(built.op, options=_v1.RunOptions(trace_level=_v1.RunOptions.FULL_TRACE),
                  run_metadata=metadata)
      for node in (n for device in metadata.step_stats.dev_stats for n in device.node_stats):
        totals[node.node_name] += node.all_end_rel_micros
  return "\n".join([f"TF {tf.__version__}, {model}: op time per step, µs, mean of {steps} "
                    f"traced steps; sum over all {len(totals)} ops: "
                    f"{sum(totals.values()) / steps:.0f}"] + [
                        f"  {micros / steps:8.1f}  {name}" for name, micros in totals.most_common(top)])


# The ways estimator_lite built RunConfig(steps_per_loop=K)'s loop before commit
# 2f54f90, and now: (name, label, values carried besides the counter (None: the
# loop estimator_lite builds now), loop size fed each run, carries the global step).
LOOP_VARIANTS = (
    ("counter", "in-graph loop (counter only)", (), False, False),
    ("loss", "+ carries the loss", ("loss",), False, False),
    ("step", "+ carries the global step too", ("loss", "step"), False, True),
    ("fed", "+ loop size fed each run (estimator_lite's loop before)", ("loss", "step"), True,
     True),
    ("estimator_lite", "estimator_lite's loop now", None, False, False))


def _carries_global_step(graph):
  """Whether the graph's while loop carries the global step's value (not just its variable)."""
  handle = _train.get_global_step(graph).op
  loop = next(op for op in graph.get_operations() if op.type in ("While", "StatelessWhile"))
  stack = [t.op for t in loop.inputs if t.dtype != tf.resource]
  while stack:
    op = stack.pop()
    if op.type == "ReadVariableOp" and op.inputs[0].op is handle:
      return True
    stack.extend(i.op for i in op.inputs)
  return False


def _estimator_lite_loop(model, next_batch, k):
  """estimator_lite's loop, and what Estimator.train fetches from it (as a callable: no feed)."""
  import estimator_lite  # pylint: disable=g-import-not-at-top

  def call_model_fn(features, labels):
    built = model.build(features, labels, True)
    return estimator_lite.EstimatorSpec(estimator_lite.ModeKeys.TRAIN, loss=built.loss,
                                        train_op=built.train_op)
  spec, _, step = lite_internals.build_training_loop()(next_batch, call_model_fn, k)
  return [spec.train_op, spec.loss, step]


def loop_costs(k=100, rounds=40):
  """ms per Session.run of K steps of the linear model's loop, each of LOOP_VARIANTS.

  An A/B of the loop's fixes, so it checks first that each "before" is built
  as it claims: carrying the global step's value, where the loop now must not.
  """
  cases = []
  for name, _, carry, fed, carries_step in LOOP_VARIANTS:
    built = models.training_graph(_LINEAR, k, carry or (), fed_size=fed,
                                  build_loop=_estimator_lite_loop if carry is None else None)
    if _carries_global_step(built.graph) != carries_step:
      raise AssertionError(f"loop {name!r}: carries the global step: {not carries_step}, "
                           f"should be {carries_step}")
    session = _v1.Session(graph=built.graph, config=estimator_session_config())
    session.run(built.init)
    session.run(built.iterator.initializer)
    built.graph.finalize()
    cases.append((name, (lambda s=session, b=built: s.run(b.op, feed_dict={b.loop_size: k}))
                  if fed else session.make_callable(built.op)))
  for _, run in cases:
    for _ in range(5):
      run()
  medians = _interleaved_medians(cases, rounds, 5)
  return "\n".join([f"TF {tf.__version__}: ms per Session.run of {k} steps, median of {rounds} "
                    "rounds x 5 runs (relative to the first line)"] + [
                        f"  {1e3 * seconds:7.2f}  {seconds / medians[0][1]:5.2f}x  {variant[1]}"
                        for (_, seconds), variant in zip(medians, LOOP_VARIANTS)])


def profile(system="estimator_lite", steps=3000, steps_per_loop=1, top=25):
  """A cProfile of one train() of the linear model (workload.run): µs per training step."""
  profiler = cProfile.Profile()
  result = profiler.runcall(run, system, "linear", steps, steps_per_loop)
  stats, total = pstats.Stats(profiler).stats, result["final_step"]
  lines = [f"{system} linear, {total} steps, steps_per_loop={steps_per_loop}, TF "
           f"{result['tf_version']}: {result['steps_per_sec']:.0f} steps/s under the profiler", ""]
  for column, title in ((2, "own time"), (3, "cumulative time")):
    lines.append(f"Top {top} by {title} (µs per training step; calls per step):")
    for (filename, line, name), entry in sorted(stats.items(), key=lambda kv: -kv[1][column])[:top]:
      where = f"{os.path.basename(filename)}:{line}" if line else filename
      lines.append(f"  {1e6 * entry[column] / total:9.1f}  {entry[1] / total:6.2f}  "
                   f"{name} ({where})")
    lines.append("")
  return "\n".join(lines)


ROLES = {"train": train, "trainer": lambda **kw: evaluator_side("trainer", **kw),
         "evaluator": lambda **kw: evaluator_side("evaluator", **kw), "cluster": cluster_task,
         "grpc_floor": grpc_floor, "step_costs": step_costs, "op_costs": op_costs,
         "loop_costs": loop_costs, "profile": profile}

if __name__ == "__main__":
  role, kwargs, out = sys.argv[1:]
  result = ROLES[role](**json.loads(kwargs))
  with open(out, "w") as f:
    json.dump(result, f)
