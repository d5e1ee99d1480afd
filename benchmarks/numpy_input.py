"""numpy_input_fn-fed training: estimator_lite before and after 428217b, tf.estimator 2.15, TF's floor.

    python benchmarks/numpy_input.py --json benchmarks/numpy_input.json   # ~15 min: RESULTS.md's
    python benchmarks/numpy_input.py --runs 3 --rounds 3 --steps 2000     # shorter
    python benchmarks/numpy_input.py --before-tree /tmp/wt-numpy-before   # an existing checkout
    python benchmarks/numpy_input.py --smoke       # seconds: the script still works
    python benchmarks/numpy_input.py --report-from benchmarks/numpy_input.json   # the tables again

Commit 428217b made `numpy_input_fn` / `pandas_input_fn`, called directly by
user code in a graph, return tensors (a one-shot iterator's get_next over the
same tf.data pipeline), as tf.estimator 2.15's did; called by the Estimator
itself (call_input_fn marks the input_fn it calls) they return the Dataset as
before. The issue's target: inside an Estimator they keep today's speed, i.e.
estimator_lite now trains at least 0.97x as fast as before the change (within
noise) on a numpy-fed program. The systems, each training the same program:

- lite_before: estimator_lite at --before (d62969c, the parent of 428217b),
  from a git worktree put first on the fresh process's PYTHONPATH (workload.run
  checks that `estimator_lite.__file__` lies under it); numpy_input_fn's
  input_fn passed to train();
- lite: this checkout's estimator_lite, the same (the Dataset path);
- lite_wrapped: this checkout's, with a user's input_fn that calls
  numpy_input_fn(...)() and returns its (features, labels) tensors (the
  tensors path inside an Estimator);
- tf215: tf.estimator 2.15's `tf.compat.v1.estimator.inputs.numpy_input_fn`
  (queue-fed) in the reference venv (tests/reference/ref_env.py);
- bare: the floor, run.py's bare Session.run(train_op) loop on TF 2.21 over
  the same graph, fed by a `Dataset.from_generator` of shuffled numpy batches
  (models.py's numpy_dnn data: numpy_input_fn's kind of pipeline).

The program (benchmarks/models.py, numpy_dnn): 50,000 rows of 4 float32
features in a dict of numpy arrays and a float32 label column, in memory;
numpy_input_fn(x, y, batch_size=128, shuffle=True, num_epochs=None); a
4-32-16-1 ReLU regression tower, mean squared error, GradientDescent(0.05);
the Estimators with RunConfig(tf_random_seed=1), their default hooks and
checkpoints. Each process checks which input path ran (the iterator and queue
op types in its graph: the Dataset's IteratorV2, the wrapped input_fn's
OneShotIterator, 2.15's queues).

Measured by run.py's harness (workload.run, run.run_training, run.run_pairs:
RESULTS.md, "How the figures are measured"): fresh processes one at a time,
the systems' order rotating from run to run, steps/s the median 100-step
window after the first tenth (graph building and warm-up left out), medians
[min-max] over the runs; pairs of fresh processes training in turns of 100
steps (the target pair and a control pair, lite against itself, get the
most rounds). Peak RSS is each process's ru_maxrss.
"""
import argparse
import contextlib
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import plan  # pylint: disable=g-import-not-at-top,wrong-import-position
import report  # pylint: disable=g-import-not-at-top,wrong-import-position
import run  # pylint: disable=g-import-not-at-top,wrong-import-position

MODEL, BEFORE = "numpy_dnn", "d62969c"
SYSTEMS = (  # options: workload.run's numpy_input (and lite_root, filled in by main())
    plan.System("lite_before", f"estimator_lite {BEFORE} (before)", "estimator_lite", 1, False,
                dict(numpy_input="direct", lite_root=None)),
    plan.System("lite", "estimator_lite, numpy_input_fn passed", "estimator_lite", 1, False,
                dict(numpy_input="direct")),
    plan.System("lite_wrapped", "estimator_lite, user input_fn wrapping it (tensors)",
                "estimator_lite", 1, False, dict(numpy_input="wrapped")),
    plan.System("tf215", "tf.estimator 2.15, numpy_input_fn (queues)", "tf_estimator", 1, True,
                dict(numpy_input="direct")),
    plan.System("bare", "bare Session.run, TF 2.21, from_generator", "bare", 1, False))
LABELS = {s.key: s.label for s in SYSTEMS}
# Each system's input path, from the op types in its graph (workload._Probe's input_ops).
INPUT_PATH = {"lite_before": ("Dataset", lambda ops: "MakeIterator" in ops),
              "lite": ("Dataset", lambda ops: "MakeIterator" in ops
                       and "OneShotIterator" not in ops),
              "lite_wrapped": ("tensors", lambda ops: "OneShotIterator" in ops
                               and "MakeIterator" not in ops),
              "tf215": ("queues", lambda ops: "QueueDequeueManyV2" in ops)}
# (A, B, bound on A's steps/s / B's or None). TARGETS and the control pair get `rounds`
# rounds in turns, CONTEXT `context_rounds`.
TARGETS = (("lite", "lite_before", 0.97),)
CONTROL = (("lite", "lite", None),)
CONTEXT = (("lite_wrapped", "lite", None), ("lite", "tf215", None))
RATIOS = TARGETS + CONTEXT + (("lite", "bare", None), ("lite_before", "tf215", None))
FIGURES = (("steps_per_sec", "steps/s median [min–max]", 1, "{:.0f}"),
           ("steps_per_sec_mean", "whole-run mean steps/s", 1, "{:.0f}"),
           ("first_step_s", "train() → first step, s", 1, "{:.2f}"),
           ("peak_rss_mb", "peak RSS, MB, median [min–max]", 1, "{:.0f}"))
MODES = {"full": dict(runs=5, steps=4000, pair_steps=10000, rounds=11, context_rounds=5,
                      pairs=None),
         "smoke": dict(runs=1, steps=300, pair_steps=300, rounds=1, context_rounds=1, pairs=1)}
# pairs: how many of the pairs (of those whose systems run) are measured; None: all.


@contextlib.contextmanager
def worktree(rev):
  """A git worktree of this repository at `rev` in a temporary directory, removed after."""
  path = os.path.join(tempfile.mkdtemp(prefix="numpy_input_before_"), "tree")
  subprocess.run(["git", "-C", run.REPO, "worktree", "add", "--detach", path, rev], check=True,
                 capture_output=True)
  try:
    yield path
  finally:
    subprocess.run(["git", "-C", run.REPO, "worktree", "remove", "--force", path], check=False)
    shutil.rmtree(os.path.dirname(path), ignore_errors=True)


def input_path_errors(data):
  """'system run N: ...' for each run whose graph did not take its system's input path."""
  errors = []
  for row in data["train"]:
    ops = (((row["result"] or {}).get("seen") or {}).get("input_ops"))
    name, ok = INPUT_PATH.get(row["key"], (None, None))
    if row["result"] and ok and not ok(ops or []):
      errors.append(f"{row['key']} run {row['run'] + 1}: not the {name} path: input ops {ops}")
  return errors


def markdown(data):
  """RESULTS.md's tables: each system's figures, the ratios, the pairs in turns."""
  cells, settings = report.aggregate(data, FIGURES).get(MODEL, {}), data["settings"]
  load = lambda l: ", ".join(f"{x:.2f}" for x in l)  # pylint: disable=unnecessary-lambda-assignment
  versions = sorted({r["result"]["tf_version"] for r in data["train"] if r["result"]})
  out = [f"Command: `{data['command']}` ({data['date']}, {data['wall_s'] / 60:.0f} min); "
         f"load average (1, 5, 15 min) {load(data['load_before'])} before, "
         f"{load(data['load_after'])} after; {data['machine']['nproc']} CPUs "
         f"({data['machine']['cpu']}); TensorFlow {', '.join(versions)}; lite_before: "
         f"{data['before']}, this checkout (at the start): {data['checkout']}.", "",
         f"Each figure: median over {settings['runs']} fresh process(es) [min–max], "
         f"{settings['steps'][MODEL]} training steps each.", "",
         "| system | " + " | ".join(t for _, t, _, _ in FIGURES) + " | input path |",
         "|---" * (len(FIGURES) + 2) + "|"]
  for key, label in data["systems"]:
    ops = next((r["result"]["seen"]["input_ops"] for r in data["train"] if r["key"] == key
                and r["result"] and r["result"].get("seen")), None)
    path = f"{INPUT_PATH[key][0]} ({', '.join(ops)})" if key in INPUT_PATH and ops else "–"
    out.append(f"| {label} | " + (" | ".join(report._fmt(  # pylint: disable=protected-access
        cells[key].get(fig), fmt, scale, with_range=fig != "first_step_s")
                                             for fig, _, scale, fmt in FIGURES)
                                   if key in cells else "failed" + " |" * 3) + f" | {path} |")
  in_turns = {(p["a"], p["b"]): p for p in data["pairs"] if p["rounds"]}
  out += ["", "| steps/s ratio | target | fresh processes (ratio of medians) | in turns: "
          "median of the rounds [min–max] (rounds) | met |", "|---|---|---|---|---|"]
  for a, b, bound in RATIOS + CONTROL:
    pair = in_turns.get((a, b))
    fresh = (f"{cells[a]['steps_per_sec']['median'] / cells[b]['steps_per_sec']['median']:.2f}"
             if a in cells and b in cells and a != b else "–")
    turns = "–" if pair is None else (
        f"{pair['median_ratio']:.2f} [{min(r['ratio'] for r in pair['rounds']):.2f}–"
        f"{max(r['ratio'] for r in pair['rounds']):.2f}] ({len(pair['rounds'])})")
    if fresh == turns == "–":
      continue
    judged = pair["median_ratio"] if pair else float(fresh) if fresh != "–" else None
    met = "–" if bound is None else "yes" if judged >= bound else "**no**"
    out.append(f"| {a} / {b} | {'none' if bound is None else f'≥ {bound:g}'} | {fresh} | "
               f"{turns} | {met} |")
  out += [""] + report._pairs_md(dict(data, settings=dict(  # pylint: disable=protected-access
      settings, pair_steps={MODEL: settings["pair_steps"][MODEL]},
      pair_rounds={MODEL: f"{settings['rounds']} (targets and control), "
                          f"{settings['context_rounds']} (the others)"})), LABELS) * bool(
                              data["pairs"])
  failures = [f"- {r['key']} run {r['run'] + 1}: `{r['error'].splitlines()[-1][:200]}`"
              for r in data["train"] if r["error"]]
  failures += [f"- pair {p['a']} / {p['b']}: `{p['error'].splitlines()[-1][:200]}`"
               for p in data["pairs"] if p["error"]]
  failures += [f"- {e}" for e in input_path_errors(data)]
  return "\n".join(out + (["", "Failed runs:", ""] + failures) * bool(failures))


def _checkout(path):
  """`path`'s commit, and the files of its estimator_lite/ with uncommitted changes."""
  git = lambda *a: subprocess.run(["git", "-C", path, *a], capture_output=True, text=True,  # pylint: disable=unnecessary-lambda-assignment
                                  check=False).stdout.strip()
  changed = [line[3:] for line in git("status", "--porcelain", "--", "estimator_lite")
             .splitlines()]
  return git("rev-parse", "--short", "HEAD") + (
      f" + uncommitted changes to {', '.join(changed)}" if changed else "")


def measure(settings, systems, ref_python, smoke):
  """The fresh-process runs and the pairs in turns; returns the results (the JSON's content)."""
  runner = run.Runner(sys.executable, ref_python, tempfile.mkdtemp(prefix="numpy_input_bench_"))
  harness = dict(runs=settings["runs"], models=(MODEL,), steps={MODEL: settings["steps"]},
                 pair_steps={MODEL: settings["pair_steps"]})
  keys = {s.key for s in systems}
  data = dict(systems=[s[:2] for s in systems], models=[MODEL], pairs=[],
              settings=dict(settings, steps={MODEL: settings["steps"]},
                            pair_steps={MODEL: settings["pair_steps"]}))
  try:
    run.log(f"fresh processes: {', '.join(s.key for s in systems)}; work dir {runner.work_dir}")
    data["train"] = run.run_training(runner, harness, systems, all_at_once=smoke)
    for pairs, rounds in ((TARGETS + CONTROL, settings["rounds"]),
                          (CONTEXT, settings["context_rounds"])):
      wanted = [p for p in pairs if {p[0], p[1]} <= keys]
      if settings["pairs"] is not None:
        wanted = wanted[:max(0, settings["pairs"] - len(data["pairs"]))]
      if wanted:
        run.log(f"pairs in turns of 100 steps, {rounds} round(s) each")
        data["pairs"] += run.run_pairs(runner, dict(harness, pair_rounds={MODEL: rounds}),
                                       systems, pairs_of=lambda model, w=wanted: w)
  finally:
    shutil.rmtree(runner.work_dir, ignore_errors=True)
  return data


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--smoke", action="store_true", help="one short run of every system "
                      "(tf.estimator 2.15's only if the reference venv exists), one pair round")
  parser.add_argument("--runs", type=int, help="fresh processes per system (default 5)")
  parser.add_argument("--steps", type=int, help="training steps per fresh process (default "
                      "4000; steps/s is taken after the first tenth)")
  parser.add_argument("--pair-steps", type=int, help="steps per system in a pair's round "
                      "(default 10000)")
  parser.add_argument("--rounds", type=int, help="rounds in turns of every pair (default: 11 "
                      "for the target and the control pair, 5 for the others)")
  parser.add_argument("--systems", help="comma-separated, of " + ",".join(LABELS))
  parser.add_argument("--no-pairs", action="store_true", help="fresh processes only")
  parser.add_argument("--before", default=BEFORE, help="lite_before's commit, checked out in "
                      "a temporary git worktree (default %(default)s)")
  parser.add_argument("--before-tree", help="an existing checkout for lite_before instead")
  parser.add_argument("--json", help="also write the raw figures to this file")
  parser.add_argument("--report-from", metavar="JSON", help="print the tables of a saved run")
  args = parser.parse_args(argv)
  if args.report_from:
    with open(args.report_from) as f:
      print(markdown(json.load(f)))
    return 0
  settings = dict(MODES["smoke" if args.smoke else "full"])
  for key in ("runs", "steps", "pair_steps", "rounds"):
    settings[key] = getattr(args, key) or settings[key]
  settings["context_rounds"] = args.rounds or settings["context_rounds"]
  if args.no_pairs:
    settings["pairs"] = 0
  wanted = args.systems.split(",") if args.systems else list(LABELS)
  ref_python = run.reference_python(create=not args.smoke)
  if ref_python is None:
    run.log("tf.estimator 2.15 left out: no reference venv (python tests/reference/ref_env.py)")
  started, load_before, checkout = time.time(), os.getloadavg(), _checkout(run.REPO)
  with contextlib.ExitStack() as stack:
    tree = args.before_tree or ("lite_before" in wanted and stack.enter_context(
        worktree(args.before)))
    systems = [s._replace(options=dict(s.options, lite_root=os.path.abspath(tree)))
               if s.key == "lite_before" else s for s in SYSTEMS
               if s.key in wanted and (ref_python or not s.reference)]
    before = tree and _checkout(tree)
    data = measure(settings, systems, ref_python, args.smoke)
  data.update(command=" ".join(["python benchmarks/numpy_input.py",
                                *(sys.argv[1:] if argv is None else argv)]),
              date=datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
              machine=run._machine(), load_before=load_before, load_after=os.getloadavg(),  # pylint: disable=protected-access
              wall_s=time.time() - started, checkout=checkout, before=before)
  if args.json:
    with open(args.json, "w") as f:
      json.dump(data, f, indent=1)
  print(markdown(data))
  run.log(f"done in {data['wall_s']:.0f} s")
  return 1 if (any(r["error"] for r in data["train"] + data["pairs"])
               or input_path_errors(data)) else 0


if __name__ == "__main__":
  sys.exit(main())
