"""TPUEstimator(use_tpu=False) on CPU: estimator_lite's against tf.estimator 2.15's, and Estimator.

    python benchmarks/tpu_estimator.py --json /tmp/tpu.json  # ~20 min: RESULTS.md's tables
    python benchmarks/tpu_estimator.py --models linear --runs 3 --rounds 3
    python benchmarks/tpu_estimator.py --models wide_deep --systems lite_tpu,bare,bare_tf215
    python benchmarks/tpu_estimator.py --costs      # ~1 min: where a step's time differs
    python benchmarks/tpu_estimator.py --smoke      # seconds: the script still works (a test)
    python benchmarks/tpu_estimator.py --report-from /tmp/tpu.json   # the tables again

The issue's targets: estimator_lite's TPUEstimator(use_tpu=False) trains at
least as fast as tf.estimator 2.15's on the same program, and within 5% of
estimator_lite's Estimator on the same model_fn. Every system runs one program
(models.make_tpu_program over benchmarks/models.py's build(): the graph of
run.py's systems) with RunConfig(tf_random_seed=1) and TPUConfig's default
iterations_per_loop=2, as a TPU program ported to CPU does: TPUEstimator turns
Estimator's loss log and step counter off and logs with ExamplesPerSecondHook
every ceil(log_step_count_steps / iterations_per_loop) = 50 steps. Estimator
runs the same model_fn returning an EstimatorSpec, with its own every-100-steps
log and counter. The opt-in (tpu.RunConfig(steps_per_loop=K): K steps a
Session.run in an in-graph loop) is reported beside the same program without
it on both sides, outside the targets.

Measured by run.py's harness (workload.run, run.run_training, run.run_pairs:
RESULTS.md, "How the figures are measured"): fresh processes one at a time,
the systems' order rotating from run to run, medians [min-max]; pairs of fresh
processes training in turns of 100 steps for each target, and, on the linear
model, the control pair (estimator_lite's Estimator against itself). Peak RSS
is each process's ru_maxrss.
"""
import argparse
import collections
import datetime
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import plan  # pylint: disable=g-import-not-at-top,wrong-import-position
import report  # pylint: disable=g-import-not-at-top,wrong-import-position
import run  # pylint: disable=g-import-not-at-top,wrong-import-position


def _system(key, label, kind, estimator, iterations_per_loop=2, steps_per_loop=1):
  return plan.System(key, label, kind, steps_per_loop, kind == "tf_estimator", dict(
      estimator=estimator, iterations_per_loop=iterations_per_loop))


SYSTEMS = (
    _system("tf_tpu", "tf.estimator 2.15 TPUEstimator", "tf_estimator", "TPUEstimator"),
    _system("lite_tpu", "estimator_lite TPUEstimator", "estimator_lite", "TPUEstimator"),
    _system("lite_estimator", "estimator_lite Estimator", "estimator_lite", "Estimator"),
    _system("tf_estimator", "tf.estimator 2.15 Estimator", "tf_estimator", "Estimator"),
    # The same program with iterations_per_loop=100: without a TPU it only sets the log's
    # cadence (every step); then estimator_lite's opt-in, 100 steps a Session.run.
    _system("tf_tpu_ipl100", "tf.estimator 2.15 TPUEstimator, iterations_per_loop=100",
            "tf_estimator", "TPUEstimator", 100),
    _system("lite_tpu_ipl100", "estimator_lite TPUEstimator, iterations_per_loop=100",
            "estimator_lite", "TPUEstimator", 100),
    _system("lite_tpu_k100", "estimator_lite TPUEstimator, iterations_per_loop=100, "
            "steps_per_loop=100 (opt-in)", "estimator_lite", "TPUEstimator", 100, 100),
    # run.py's bare Session.run loops over the same graph, each TensorFlow (only if asked:
    # --systems), that split TensorFlow's cost from estimator_lite's.
    *(s for s in plan.SYSTEMS if s.key in ("bare", "bare_tf215")))
LABELS = {s.key: s.label for s in SYSTEMS}
# (A, B, bound on A's steps/s / B's or None): the targets, then what explains them.
TARGETS = (("lite_tpu", "tf_tpu", 1.0), ("lite_tpu", "lite_estimator", 0.95))
CONTEXT = (("tf_tpu", "tf_estimator", None), ("lite_estimator", "tf_estimator", None),
           ("lite_tpu_ipl100", "tf_tpu_ipl100", None), ("lite_tpu_k100", "tf_tpu_ipl100", None),
           ("lite_tpu_k100", "lite_tpu_ipl100", None), ("lite_tpu", "bare", None),
           ("bare", "bare_tf215", None))
# Pairs without a target: the control pair (how far luck moves a ratio), and on wide_deep
# the split of estimator_lite's cost from TensorFlow 2.21's (as run.py's UNTARGETED_PAIRS).
UNTARGETED = {"linear": (("lite_estimator", "lite_estimator", None),),
              "wide_deep": (("lite_tpu", "bare", None), ("bare", "bare_tf215", None))}
FIGURES = (("steps_per_sec", "steps/s median [min–max]", 1, "{:.0f}"),
           ("steps_per_sec_mean", "whole-run mean steps/s", 1, "{:.0f}"),
           ("first_step_s", "train() → first step, s", 1, "{:.2f}"),
           ("peak_rss_mb", "peak RSS, MB", 1, "{:.0f}"))
_FULL = plan.PROFILES["full"]
MODES = {  # run.py's full profile (training and pair steps, rounds), linear and mlp
    "full": dict(runs=_FULL["runs"], steps=_FULL["steps"], pair_steps=_FULL["pair_steps"],
                 pair_rounds=_FULL["pair_rounds"], models=("linear", "mlp"),
                 systems=tuple(s.key for s in SYSTEMS if s.options), pairs=None),
    "smoke": dict(runs=1, steps={"linear": 300}, pair_steps={"linear": 300},
                  pair_rounds={"linear": 1}, models=("linear",),
                  systems=("tf_tpu", "lite_tpu", "lite_estimator", "lite_tpu_k100"), pairs=1)}
# pairs: how many of pairs_of(model) (of those whose systems run) are measured; None: all.


def pairs_of(model):
  """run.run_pairs's pairs on `model`: each target, then UNTARGETED's."""
  return list(TARGETS) + list(UNTARGETED.get(model, ()))


def costs(model="linear", steps=4000, rounds=11):
  """Where TPUEstimator's step differs from Estimator's, in one process.

  estimator_lite's TPUEstimator and its Estimator on the same model_fn (also with
  log_step_count_steps=None: the loss log and step counter off, as TPUEstimator sets them)
  train `steps` steps in turn, `rounds` times (the machine's drift hits all alike). Per
  step: the wall time (workload._Clock's median 100-step window), and MonitoredSession.run's
  time split into the time inside TensorFlow's run calls (Session callables: the step's, and
  a hook's own runs) and the rest, the Python around them. In TPUEstimator's runs the time
  inside ExamplesPerSecondHook (the hook it adds) is timed call by call. Every timer wraps a
  call in Python (about 0.3 µs a call; the hook's three a step are TPUEstimator's only).
  Returns the tables' text.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from tensorflow.python.client import session as session_lib  # pylint: disable=g-import-not-at-top,g-direct-tensorflow-import
  import estimator_lite as api  # pylint: disable=g-import-not-at-top
  from estimator_lite import tpu  # pylint: disable=g-import-not-at-top
  import lite_internals  # pylint: disable=g-import-not-at-top
  import models  # pylint: disable=g-import-not-at-top
  import workload  # pylint: disable=g-import-not-at-top
  program, hook_class = models.MODELS[model], lite_internals.examples_per_second_hook_class()
  spent = collections.defaultdict(lambda: [0.0, 0])  # what -> [seconds, calls], this train()

  def timed(owner, name, what):
    method = getattr(owner, name)

    def wrapper(self, *args, **kwargs):
      logged, start = spent["_log_and_record"][1], time.perf_counter()
      result = method(self, *args, **kwargs)
      key = what(logged) if callable(what) else what
      spent[key][0] += time.perf_counter() - start
      spent[key][1] += 1
      return result
    setattr(owner, name, wrapper)
  timed(tf.compat.v1.train.MonitoredSession, "run", "MonitoredSession.run")
  callable_class = session_lib.BaseSession._Callable  # pylint: disable=protected-access
  timed(callable_class, "__call__", "TensorFlow's run calls")
  timed(hook_class, "_log_and_record", "_log_and_record")
  timed(hook_class, "before_run", "before_run")
  timed(hook_class, "after_run", lambda logged: "after_run, due" if spent[
      "_log_and_record"][1] > logged else "after_run, not due")

  def train(spec_class, estimator_class, config=None, **kwargs):
    model_fn, input_fn = models.make_tpu_program(program, spec_class, api.ModeKeys)
    config = (tpu if estimator_class is tpu.TPUEstimator else api).RunConfig(
        tf_random_seed=1, **(config or {}))
    estimator = estimator_class(model_fn, model_dir=tempfile.mkdtemp(prefix="tpu_costs_"),
                                config=config, **kwargs)
    spent.clear()
    clock, start = workload._Clock(1), time.perf_counter()  # pylint: disable=protected-access
    estimator.train(input_fn, max_steps=steps, hooks=[workload._Probe(clock)])  # pylint: disable=protected-access
    if not spent["_log_and_record"][1]:
      del spent["_log_and_record"]
    per_step = {what: 1e6 * seconds / steps for what, (seconds, _) in spent.items()}
    per_step["outside"] = per_step["MonitoredSession.run"] - per_step["TensorFlow's run calls"]
    per_step["wall"] = 1e6 / clock.figures(start)["steps_per_sec"]
    per_call = {what: (1e6 * seconds / calls, calls) for what, (seconds, calls) in spent.items()}
    return per_step, per_call

  systems = (("Estimator", lambda: train(api.EstimatorSpec, api.Estimator)),
             ("Estimator, log_step_count_steps=None", lambda: train(
                 api.EstimatorSpec, api.Estimator, {"log_step_count_steps": None})),
             ("TPUEstimator", lambda: train(tpu.TPUEstimatorSpec, tpu.TPUEstimator,
                                            use_tpu=False,
                                            train_batch_size=models.batch_size(program))))
  runs = collections.defaultdict(list)
  for _ in range(rounds):
    for name, run_one in systems:
      runs[name].append(run_one())

  def med(name, what, part=0, key=None):
    values = [r[part].get(what) for r in runs[name]]
    return statistics.median(v if key is None else v[key] for v in values if v is not None)

  lines = [f"TF {tf.__version__}, {model}, estimator_lite: µs per step, median over {rounds} "
           f"rounds of one train() of {steps} steps each", "",
           "| | Estimator | Estimator, log_step_count_steps=None | TPUEstimator | "
           "TPUEstimator - Estimator |", "|---|---|---|---|---|"]
  for what, title in (("wall", "wall time (a train(): its median 100-step window)"),
                      ("TensorFlow's run calls", "inside TensorFlow's run calls"),
                      ("outside", "MonitoredSession.run outside them: the Python around "
                       "the step")):
    est, tpu_us = med("Estimator", what), med("TPUEstimator", what)
    lines.append(f"| {title} | {est:.1f} | {med(systems[1][0], what):.1f} | {tpu_us:.1f} | "
                 f"{tpu_us - est:+.1f} |")
  lines += ["", "Inside TPUEstimator's ExamplesPerSecondHook:", "",
            "| call | µs per training step | µs a call | calls a train() |", "|---|---|---|---|"]
  total = 0.0
  for what, about in (("before_run", "asks for the global step, every step"),
                      ("after_run, not due", "the timer's check"),
                      ("after_run, due", "its own Session.run reading the global step, "
                       "then _log_and_record"),
                      ("_log_and_record", "(inside the line above) the two rates' log lines "
                       "and events")):
    per_step = med("TPUEstimator", what)
    total += per_step * (what != "_log_and_record")
    lines.append(f"| {what}: {about} | {per_step:.2f} | "
                 f"{med('TPUEstimator', what, 1, 0):.1f} | "
                 f"{med('TPUEstimator', what, 1, 1):.0f} |")
  lines.append(f"| in all | {total:.2f} | | |")
  return "\n".join(lines)


def markdown(data):
  """RESULTS.md's section: per model each system's figures, the ratios, the pairs in turns."""
  settings = {k: {m: v[m] for m in data["models"]}  # the models measured
              if k in ("steps", "pair_steps", "pair_rounds") else v
              for k, v in data["settings"].items()}
  data, agg = dict(data, settings=settings), report.aggregate(data, FIGURES)
  load = lambda l: ", ".join(f"{x:.2f}" for x in l)  # pylint: disable=unnecessary-lambda-assignment
  out = [f"Command: `{data['command']}` ({data['date']}, {data['wall_s'] / 60:.0f} min); "
         f"load average (1, 5, 15 min) {load(data['load_before'])} before, "
         f"{load(data['load_after'])} after.", "",
         f"Each figure: median over {settings['runs']} fresh process(es) [min–max]; training "
         f"steps per run: {report._per_model(settings['steps'])}.", ""]  # pylint: disable=protected-access
  for model in data["models"]:
    cells = agg.get(model, {})
    out += [f"### {model} (TPUEstimator program)", "",
            "| system | " + " | ".join(t for _, t, _, _ in FIGURES) + " |",
            "|---" * (len(FIGURES) + 1) + "|"]
    for key, label in data["systems"]:
      out.append(f"| {label} | " + (" | ".join(report._fmt(  # pylint: disable=protected-access
          cells[key].get(fig), fmt, scale, with_range=fig != "first_step_s")
                                                  for fig, _, scale, fmt in FIGURES)
                                        if key in cells else "failed") + " |")
    out += ["", "| steps/s, ratio of the medians | target | value | met |", "|---|---|---|---|"]
    for a, b, bound in TARGETS + CONTEXT:
      if a in cells and b in cells:
        ratio = cells[a]["steps_per_sec"]["median"] / cells[b]["steps_per_sec"]["median"]
        met = "–" if bound is None else "yes" if ratio >= bound else "**no**"
        out.append(f"| {LABELS[a]} / {LABELS[b]} | {'none' if bound is None else f'≥ {bound:g}'}"
                   f" | {ratio:.2f} | {met} |")
    out.append("")
  if data["pairs"]:
    out += report._pairs_md(data, dict(data["systems"]))  # pylint: disable=protected-access
    out += ["| target | median A/B over the rounds | met |", "|---|---|---|"]
    out += [f"| {p['model']}: {LABELS[p['a']]} / {LABELS[p['b']]} ≥ {p['target']:g} | "
            f"{p['median_ratio']:.2f} | {'yes' if p['median_ratio'] >= p['target'] else '**no**'} |"
            for p in data["pairs"] if p["target"] is not None and p["median_ratio"] is not None]
  failures = [f"- {r['label']} {r['model']}: `{r['error'].splitlines()[-1][:200]}`"
              for r in data["train"] if r["error"]]
  failures += [f"- pair {p['a']} / {p['b']} {p['model']}: `{p['error'].splitlines()[-1][:200]}`"
               for p in data["pairs"] if p["error"]]
  return "\n".join(out + (["", "Failed runs:", ""] + failures) * bool(failures))


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--smoke", action="store_true", help="one short run of the lite systems "
                      "(and tf.estimator 2.15's TPUEstimator if the reference venv exists)")
  parser.add_argument("--runs", type=int, help="fresh processes per system and model")
  parser.add_argument("--rounds", type=int, help="rounds per pair in turns, on every model")
  parser.add_argument("--models", help="comma-separated, of " + ",".join(plan.MODELS))
  parser.add_argument("--systems", help="comma-separated, of " + ",".join(LABELS))
  parser.add_argument("--no-pairs", action="store_true", help="fresh processes only")
  parser.add_argument("--json", help="also write the raw figures to this file")
  parser.add_argument("--report-from", metavar="JSON", help="print the tables of a saved run")
  parser.add_argument("--costs", action="store_true", help="only the per-step costs of "
                      "TPUEstimator's differences, in this process (costs(); --models: its "
                      "first; --runs: its rounds)")
  args = parser.parse_args(argv)
  if args.costs:
    print(costs(**dict(model=(args.models or "linear").split(",")[0],
                       **({"rounds": args.runs} if args.runs else {}))))
    return 0
  if args.report_from:
    with open(args.report_from) as f:
      print(markdown(json.load(f)))
    return 0
  settings = dict(MODES["smoke" if args.smoke else "full"])
  settings["runs"] = args.runs or settings["runs"]
  if args.models:
    settings["models"] = tuple(args.models.split(","))
  for key in ("steps", "pair_steps", "pair_rounds"):  # the models measured
    settings[key] = {model: settings[key][model] for model in settings["models"]}
  if args.rounds:
    settings["pair_rounds"] = {model: args.rounds for model in settings["models"]}
  wanted = args.systems.split(",") if args.systems else settings["systems"]
  ref_python = run.reference_python(create=not args.smoke)
  if ref_python is None:
    run.log("tf.estimator 2.15 left out: no reference venv (python tests/reference/ref_env.py)")
  systems = [s for s in SYSTEMS if s.key in wanted and (ref_python or not s.reference)]
  runner = run.Runner(sys.executable, ref_python,
                      tempfile.mkdtemp(prefix="tpu_estimator_bench_"))
  data = dict(command=" ".join(["python benchmarks/tpu_estimator.py",
                                *(sys.argv[1:] if argv is None else argv)]),
              date=datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
              machine=run._machine(), load_before=os.getloadavg(),  # pylint: disable=protected-access
              systems=[s[:2] for s in systems], models=list(settings["models"]),
              settings={k: v for k, v in settings.items() if k != "models"}, pairs=[])
  started = time.time()
  try:
    run.log(f"fresh processes: {', '.join(s.key for s in systems)}; work dir {runner.work_dir}")
    data["train"] = run.run_training(runner, settings, systems, all_at_once=args.smoke)
    if not args.no_pairs:
      run.log("pairs in turns of 100 steps")
      keys = {s.key for s in systems}
      data["pairs"] = run.run_pairs(runner, settings, systems, pairs_of=lambda model: [
          p for p in pairs_of(model) if {p[0], p[1]} <= keys][:settings["pairs"]])
  finally:
    shutil.rmtree(runner.work_dir, ignore_errors=True)
  data.update(load_after=os.getloadavg(), wall_s=time.time() - started)
  if args.json:
    with open(args.json, "w") as f:
      json.dump(data, f, indent=1)
  print(markdown(data))
  run.log(f"done in {data['wall_s']:.0f} s")
  return 1 if any(r["error"] for r in data["train"] + data["pairs"]) else 0


if __name__ == "__main__":
  sys.exit(main())
