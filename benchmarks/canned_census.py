"""Canned estimators on the census data: tf.estimator 2.15 against estimator_lite, and their floors.

    python benchmarks/canned_census.py          # about 15 min; prints RESULTS.md's census section
    python benchmarks/canned_census.py --smoke  # a minute: the script still works (a test runs it)

DNNLinearCombinedClassifier (examples/census_wide_deep.py's wide & deep model)
and DNNClassifier (its deep columns alone) train on the census data, batch 128,
the example's tf.data input. Systems (a fresh process each, one at a time):
each Estimator's train() with its default RunConfig and hooks; and Session.run
(train_op) in a Python loop over a canned training graph exported once as a
MetaGraphDef (input pipeline, model_fn's TRAIN graph, no hooks), imported by a
process that imports TensorFlow only: estimator_lite's graph on TF 2.21, and
tf.estimator's graph on TF 2.15 and on TF 2.21 (same graph, other TensorFlow;
and same TensorFlow, other graph). Figures and pairs in turns are measured as
in run.py (RESULTS.md, "How the figures are measured"); memory: the peak RSS
of the whole process (ru_maxrss) and its RSS right after `import tensorflow`.
"""
import argparse
import collections
import importlib.util
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(os.path.dirname(HERE), "examples", "census_wide_deep.py")
WINDOW, BATCH, HIDDEN = 100, 128, [100, 75, 50, 25]
MODELS = {"dnn_linear": "DNNLinearCombinedClassifier", "dnn": "DNNClassifier"}
System = collections.namedtuple("System", "label reference kind graph legacy_keras",
                                defaults=(False,))
SYSTEMS = {  # graph: whose canned graph a bare loop runs; legacy_keras: TF_USE_LEGACY_KERAS=1
    "tf_estimator": System("tf.estimator 2.15", True, "estimator", None),
    "estimator_lite": System("estimator_lite", False, "estimator", None),
    "estimator_lite_tf_keras": System("estimator_lite, TF_USE_LEGACY_KERAS=1", False,
                                      "estimator", None, True),
    "bare": System("bare Session.run, TF 2.21, estimator_lite's graph", False, "bare", "lite"),
    "bare_ref_graph": System("bare Session.run, TF 2.21, tf.estimator's graph", False, "bare",
                             "ref"),
    "bare_tf215": System("bare Session.run, TF 2.15, tf.estimator's graph", True, "bare", "ref")}
# (A, B, bound on A/B or None): the target, then the split of our cost from TensorFlow's.
PAIRS = (("estimator_lite", "tf_estimator", 1.0), ("estimator_lite", "bare", None),
         ("bare", "bare_ref_graph", None), ("bare_ref_graph", "bare_tf215", None))
# pairs: how many of PAIRS (of those whose systems run) are measured.
MODES = {"full": dict(runs=5, steps=2000, rounds=5, pairs=len(PAIRS), models=tuple(MODELS),
                      systems=tuple(SYSTEMS)),
         "smoke": dict(runs=1, steps=300, rounds=1, pairs=1, models=("dnn_linear",),
                       systems=("tf_estimator", "estimator_lite", "bare"))}


# -- one process's measurement (run with the python of the TensorFlow measured) ----------------

class Clock:
  """Step times; with `turns` (pipe ends to a partner), trains only while holding the token,
  WINDOW steps a turn (run.py's pairs in turns), and keeps each turn's seconds."""

  def __init__(self, turns=None):
    self.times, self.turns, self.windows, self._steps, self._resumed = [], turns, [], 0, None

  def tick(self):
    self.times.append(time.perf_counter())
    if not self.turns:
      return
    if self._resumed is not None:
      self._steps += 1
      if self._steps < WINDOW:
        return
      self.windows.append(time.perf_counter() - self._resumed)
      self._steps = 0
      try:
        os.write(self.turns[1], b"t")
      except BrokenPipeError:
        self.turns = None
        return
    if not os.read(self.turns[0], 1):  # the partner has gone: go on alone
      self.turns = None
    self._resumed = time.perf_counter()

  def figures(self, start):
    t, warm = self.times, max(1, len(self.times) // 10)
    rates = [WINDOW / (t[i + WINDOW] - t[i]) for i in range(warm, len(t) - WINDOW, WINDOW)]
    turns = self.windows[max(1, len(self.windows) // 10) if len(self.windows) > 1 else 0:]
    return dict(steps_per_sec=statistics.median(rates), first_step_s=t[0] - start,
                turn_rates=[WINDOW / w for w in turns])


def _rss_mb():
  with open("/proc/self/status") as f:
    return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024


def _example():
  spec = importlib.util.spec_from_file_location("census_wide_deep", EXAMPLE)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def _estimator(tf, model, model_dir):
  if tf.__version__.startswith("2.15."):
    api = tf.estimator
  else:
    import estimator_lite as api  # pylint: disable=g-import-not-at-top
  census = _example()
  wide, deep = census.feature_columns()
  common = dict(model_dir=model_dir, label_vocabulary=census.LABEL_VOCABULARY,
                config=api.RunConfig(tf_random_seed=42))
  if model == "dnn":
    estimator = api.DNNClassifier(HIDDEN, deep, **common)
  else:
    estimator = api.DNNLinearCombinedClassifier(
        linear_feature_columns=wide, dnn_feature_columns=deep, dnn_hidden_units=HIDDEN, **common)
  path = os.path.join(os.path.dirname(EXAMPLE), "data", "census", census.TRAIN_FILE)
  return api, estimator, census.make_input_fn(path, BATCH, shuffle=True, num_epochs=None)


def export_graph(model, path):
  """Writes the canned model's TRAIN graph, input pipeline and initialisers as a MetaGraphDef."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  v1 = tf.compat.v1
  api, estimator, input_fn = _estimator(tf, model, tempfile.mkdtemp())
  with tf.Graph().as_default() as graph:
    v1.set_random_seed(42)
    v1.train.get_or_create_global_step()
    iterator = v1.data.make_initializable_iterator(input_fn())
    spec = estimator.model_fn(*iterator.get_next(), api.ModeKeys.TRAIN, estimator.config)
    init = tf.group(v1.global_variables_initializer(), v1.local_variables_initializer(),
                    v1.tables_initializer(), iterator.initializer)
    for op in (spec.train_op, init):
      v1.add_to_collection("bench", op)
    v1.train.export_meta_graph(path)
  return dict(ops=len(graph.get_operations()),
              op_types=collections.Counter(op.type for op in graph.get_operations()))


def train(system, model, steps, graph=None, turns=None):
  """One system trains `steps` steps: figures of Clock, RSS after import and peak RSS (MB)."""
  start = time.perf_counter()
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  v1, import_rss, clock = tf.compat.v1, _rss_mb(), Clock(turns)
  if SYSTEMS[system].kind == "estimator":
    api, estimator, input_fn = _estimator(tf, model, tempfile.mkdtemp())

    class Tick(v1.train.SessionRunHook):
      def after_run(self, run_context, run_values):
        clock.tick()
    start = time.perf_counter()
    estimator.train(input_fn, max_steps=steps, hooks=[Tick()])
  else:  # the session config Estimators use for a local run
    config = v1.ConfigProto(allow_soft_placement=True)
    config.graph_options.rewrite_options.meta_optimizer_iterations = 1  # ONE
    start = time.perf_counter()
    with tf.Graph().as_default() as g, v1.Session(graph=g, config=config) as session:
      v1.train.import_meta_graph(graph)
      train_op, init = v1.get_collection("bench")
      session.run(init)
      for _ in range(steps):
        session.run(train_op)
        clock.tick()
  for fd in turns or ():
    os.close(fd)
  return dict(clock.figures(start), import_rss_mb=import_rss, tf_version=tf.__version__,
              peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


# -- the driver: fresh processes, one at a time ---------------------------------------------

def train_process(ctx, key, model, steps, fds=()):
  """Starts `key` training `model` (in turns over the pipe ends `fds`, if any)."""
  system = SYSTEMS[key]
  # A process starts as a user's fresh program, without TF_USE_LEGACY_KERAS unless asked:
  # set before `import tensorflow`, it makes TF 2.21 load tf_keras instead of Keras 3.
  return ctx["runner"].start("train", dict(
      system=key, model=model, steps=steps, graph=ctx["graphs"].get((system.graph, model)),
      turns=list(fds) or None), system.reference, name=f"train_{key}", pass_fds=fds,
      env={"TF_USE_LEGACY_KERAS": "1" if system.legacy_keras else None})


def pair_round(ctx, model, steps, a, b, a_first):
  """Two processes in turns (run.run_pair_round's protocol): A's and B's turn rates."""
  to_a, to_b = os.pipe(), os.pipe()
  os.write((to_a if a_first else to_b)[1], b"t")
  started = [train_process(ctx, a, model, steps, (to_a[0], to_b[1])),
             train_process(ctx, b, model, steps, (to_b[0], to_a[1]))]
  for fd in (*to_a, *to_b):  # only the two processes hold the pipes now
    os.close(fd)
  (result_a, error_a), (result_b, error_b) = [ctx["runner"].finish(one) for one in started]
  if error_a or error_b:
    raise SystemExit(f"pair {a} / {b} on {model} failed: {error_a or error_b}")
  return result_a["turn_rates"], result_b["turn_rates"]


def _median_range(values, fmt="{:.0f}"):
  text = fmt.format(statistics.median(values))
  return text + (f" [{fmt.format(min(values))}–{fmt.format(max(values))}]"
                 if len(values) > 1 else "")


def main(argv=None):
  import run  # pylint: disable=g-import-not-at-top
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--smoke", action="store_true", help="one short run, wide & deep only")
  parser.add_argument("--runs", type=int, help="fresh processes per system and model")
  parser.add_argument("--rounds", type=int, help="rounds per pair in turns")
  parser.add_argument("--steps", type=int, help="training steps per process")
  parser.add_argument("--json", help="also write the raw figures to this file")
  args = parser.parse_args(argv)
  settings = dict(MODES["smoke" if args.smoke else "full"])
  settings.update({k: getattr(args, k) for k in ("runs", "rounds", "steps") if getattr(args, k)})
  ref_python = run.reference_python(create=not args.smoke)
  systems = [k for k in settings["systems"]
             if ref_python or not (SYSTEMS[k].reference or SYSTEMS[k].graph == "ref")]
  work = tempfile.mkdtemp(prefix="canned_census_")
  ctx = dict(runner=run.Runner(sys.executable, ref_python, work,
                               program=(os.path.abspath(__file__), "--worker")), graphs={})
  data = dict(settings=settings, train=[], pairs=[], graphs={}, load_before=os.getloadavg(),
              command=" ".join(["python benchmarks/canned_census.py", *(argv or sys.argv[1:])]),
              date=time.strftime("%Y-%m-%d %H:%M %Z"))
  try:
    for model in settings["models"]:
      for whose in sorted({SYSTEMS[k].graph for k in systems if SYSTEMS[k].graph}):
        reference = whose == "ref"  # tf.estimator's graph is built with TF 2.15
        path = ctx["graphs"][whose, model] = os.path.join(work, f"{whose}_{model}.meta")
        result, error = ctx["runner"].finish(ctx["runner"].start(
            "export_graph", dict(model=model, path=path), reference))
        if error:
          raise SystemExit(f"exporting {whose}'s {model} graph failed: {error}")
        data["graphs"][f"{whose}_{model}"] = result
    for index in range(settings["runs"]):  # the order of the systems rotates run to run
      for model in settings["models"]:
        for key in systems[index % len(systems):] + systems[:index % len(systems)]:
          result, error = ctx["runner"].finish(train_process(ctx, key, model, settings["steps"]))
          if error:
            raise SystemExit(f"{key} on {model} failed: {error}")
          run.log(f"{model:10s} {key:15s} run {index + 1}: {result['steps_per_sec']:4.0f} steps/s, "
                  f"peak RSS {result['peak_rss_mb']:.0f} MB")
          data["train"].append(dict(result, system=key, model=model))
    for model in settings["models"]:
      for a, b, bound in [p for p in PAIRS if {p[0], p[1]} <= set(systems)][:settings["pairs"]]:
        ratios = []
        for index in range(settings["rounds"]):  # rounds alternate which side starts
          rates = pair_round(ctx, model, settings["steps"], a, b, index % 2 == 0)
          ratios.append(statistics.median(x / y for x, y in zip(*rates)))
          run.log(f"{model:10s} {a} / {b} round {index + 1}: {ratios[-1]:.2f}")
        data["pairs"].append(dict(model=model, a=a, b=b, bound=bound, ratios=ratios))
  finally:
    shutil.rmtree(work, ignore_errors=True)
  data["load_after"] = os.getloadavg()
  if args.json:
    with open(args.json, "w") as f:
      json.dump(data, f, indent=1)
  print(report(data, systems))
  return 0


def report(data, systems):
  """RESULTS.md's tables: per model, each system's medians, the ratios to judge, the pairs."""
  lines, settings = [], data["settings"]
  figures = collections.defaultdict(lambda: collections.defaultdict(list))
  for row in data["train"]:
    for name in ("steps_per_sec", "peak_rss_mb", "import_rss_mb", "first_step_s"):
      figures[row["model"], row["system"]][name].append(row[name])
  lines.append(f"Command: `{data['command']}` ({data['date']}); load average (1, 5, 15 min) "
               f"{', '.join(f'{x:.2f}' for x in data['load_before'])} before, "
               f"{', '.join(f'{x:.2f}' for x in data['load_after'])} after.\n")
  lines.append(f"Each figure: median over {settings['runs']} fresh process(es) [min–max], "
               f"{settings['steps']} steps each, batch {BATCH}.\n")
  for model in settings["models"]:
    lines += [f"#### {MODELS[model]} ({model})\n", "| system | steps/s | peak RSS, MB | RSS after "
              "`import tensorflow`, MB | train() or graph import → first step, s |",
              "|---|---|---|---|---|"]
    for key in systems:
      f = figures[model, key]
      lines.append(f"| {SYSTEMS[key].label} | {_median_range(f['steps_per_sec'])} | "
                   f"{_median_range(f['peak_rss_mb'])} | {_median_range(f['import_rss_mb'])} | "
                   f"{_median_range(f['first_step_s'], '{:.2f}')} |")
    med = {key: {name: statistics.median(values) for name, values in figures[model, key].items()}
           for key in systems}
    lines += ["", "| ratio (of medians) | value |", "|---|---|"]
    for a, b, name, bound in (("estimator_lite", "tf_estimator", "steps_per_sec", "≥ 1"),
                              ("estimator_lite", "tf_estimator", "peak_rss_mb", "≤ 1.1"),
                              ("estimator_lite_tf_keras", "tf_estimator", "peak_rss_mb", "≤ 1.1"),
                              ("estimator_lite", "bare", "peak_rss_mb", None),
                              ("tf_estimator", "bare_tf215", "peak_rss_mb", None),
                              ("bare", "bare_tf215", "peak_rss_mb", None)):
      if a in med and b in med:
        what = "steps/s" if name == "steps_per_sec" else "peak RSS"
        lines.append(f"| {what}: {SYSTEMS[a].label} / {SYSTEMS[b].label}"
                     f"{f' (target {bound})' if bound else ''} | "
                     f"{med[a][name] / med[b][name]:.2f} |")
    ops = {w: data["graphs"].get(f"{w}_{model}") for w in ("lite", "ref")}
    lines.append("\nTraining graph ops: " + ", ".join(
        f"{w} {g['ops']}" for w, g in ops.items() if g) + ".\n")
  if data["pairs"]:
    lines += [f"Pairs in turns of {WINDOW} steps, {settings['rounds']} round(s) of "
              f"{settings['steps']} steps each:\n", "| model | A / B | target | A/B per round | "
              "median A/B |", "|---|---|---|---|---|"]
    for p in data["pairs"]:
      lines.append(f"| {p['model']} | {SYSTEMS[p['a']].label} / {SYSTEMS[p['b']].label} | "
                   f"{'≥ %g' % p['bound'] if p['bound'] else 'none'} | "
                   f"{', '.join(f'{r:.2f}' for r in p['ratios'])} | "
                   f"{statistics.median(p['ratios']):.2f} |")
  return "\n".join(lines)


if __name__ == "__main__":
  if sys.argv[1:2] == ["--worker"]:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.path.insert(0, HERE)
    role, kwargs, out_path = sys.argv[2:]
    outcome = {"train": train, "export_graph": export_graph}[role](**json.loads(kwargs))
    with open(out_path, "w") as out_file:
      json.dump(outcome, out_file)
  else:
    sys.path.insert(0, HERE)
    sys.exit(main())
