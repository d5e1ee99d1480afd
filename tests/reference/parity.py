"""Runs the same deterministic programs under tf.estimator 2.15 and estimator_lite and compares.

Usage, from the repository root in the current venv (TensorFlow 2.21 + tf-keras):

    python tests/reference/parity.py [--ref-venv DIR] [--tolerance 1e-4]
                                     [--workdir DIR] [--json FILE]

It finds the reference venv (TensorFlow 2.15.1 + tensorflow-estimator 2.15.0,
Python 3.11; default ~/.cache/estimator_lite/ref-venv-2.15, created when
missing, see ref_env.py) and runs, each in its own subprocess:

  1. reference  (ref venv, `tf.estimator`): train, evaluate, predict both
     programs of linear_program.py (linear regression, small MLP) in
     WORKDIR/ref/<program>;
  2. lite       (this interpreter, `estimator_lite`, PYTHONPATH=repo root):
     the same in WORKDIR/lite/<program>;
  3. cross-resume: each side copies BOTH sides' model_dirs and resumes training
     in the copies (tf.estimator resuming an estimator_lite model_dir and the
     reverse), so both resumes of one directory must agree too.

Each run writes a JSON with, per program: the loss of every train step
(recorded by a SessionRunHook), the global step each train() call started
from, evaluate() results, every get_variable_names() entry with its
get_variable_value(), predictions on fixed rows, the `checkpoint` file and the
model_dir listing. The comparison prints one table row per quantity (the
largest absolute difference over its elements) and exits 1 when any number
differs by more than the tolerance or anything non-numeric differs (variable
names, checkpoint list, files).

Internal (what the subprocesses run):
    python tests/reference/parity.py --side MODULE --out FILE --workdir DIR
        [--resume-from LABEL=DIR ...] [--no-train]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

PROGRAMS = ("linear", "mlp")
SAVE_CHECKPOINTS_STEPS = 10
FIRST_TRAIN_STEPS = 15      # train(steps=15) ...
SECOND_TRAIN_MAX_STEPS = 25  # ... then train(max_steps=25): resume in-process
RESUME_MAX_STEPS = 35       # cross-resume of a copied model_dir
SIDE_TIMEOUT_S = 600


# ----------------------------------------------------------------------------
# One side: runs inside the ref venv or the current venv.
# ----------------------------------------------------------------------------

def _to_json(value):
  import numpy as np  # pylint: disable=g-import-not-at-top
  if isinstance(value, dict):
    return {str(k): _to_json(v) for k, v in value.items()}
  if isinstance(value, (list, tuple)):
    return [_to_json(v) for v in value]
  if isinstance(value, bytes):
    return value.decode("utf-8", "replace")
  if isinstance(value, (np.ndarray, np.generic)):
    return _to_json(value.tolist())
  return value


def listing(model_dir):
  """Files under model_dir, relative, with events files' host/time elided."""
  names = set()
  for root, _, files in os.walk(model_dir):
    for name in files:
      rel = os.path.relpath(os.path.join(root, name), model_dir)
      head, base = os.path.split(rel)
      if base.startswith("events.out.tfevents."):
        rel = os.path.join(head, "events.out.tfevents.*")
      names.add(rel)
  return sorted(names)


# Scalar summaries whose values are timings, compared by step only.
_TIMING_TAGS = ("global_step/sec", "examples/sec")


def _events(model_dir):
  """{events dir: {tag: [[step, value], ...]}} of the scalar summaries under model_dir."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  out = {}
  for root, _, files in os.walk(model_dir):
    for name in sorted(files):
      if not name.startswith("events.out.tfevents."):
        continue
      rel = os.path.relpath(root, model_dir)
      tags = out.setdefault("model_dir" if rel == "." else rel, {})
      for event in tf.compat.v1.train.summary_iterator(os.path.join(root, name)):
        for value in event.summary.value:
          if value.HasField("simple_value"):
            number = float(value.simple_value)
          elif value.HasField("tensor") and not value.tensor.tensor_shape.dim:
            number = tf.make_ndarray(value.tensor).item()
            if isinstance(number, bytes):
              continue  # a text summary
          else:
            continue
          if value.tag in _TIMING_TAGS:
            number = None
          tags.setdefault(value.tag, []).append([int(event.step), number])
  return out


def _program(lp, est, name):
  """(model_fn, params, config, train_input_fn, eval_input_fn, predict_input_fn)."""
  if name == "linear":
    return (lp.make_linear_model_fn(est), None,
            est.RunConfig(save_checkpoints_steps=SAVE_CHECKPOINTS_STEPS),
            lp.linear_train_input_fn, lp.linear_eval_input_fn,
            lp.linear_predict_input_fn)
  return (lp.make_mlp_model_fn(est), dict(lp.MLP_PARAMS),
          est.RunConfig(save_checkpoints_steps=SAVE_CHECKPOINTS_STEPS,
                        tf_random_seed=lp.MLP_TF_RANDOM_SEED),
          lp.mlp_train_input_fn, lp.mlp_eval_input_fn, lp.mlp_predict_input_fn)


def _estimator(lp, est, name, model_dir):
  model_fn, params, config, *_ = _program(lp, est, name)
  kwargs = {"model_dir": model_dir, "config": config}
  if params is not None:
    kwargs["params"] = params
  return est.Estimator(model_fn, **kwargs)


def _variables(estimator):
  return {n: _to_json(estimator.get_variable_value(n))
          for n in estimator.get_variable_names()}


def _train_record(lp, est, name, model_dir):
  _, _, _, train_fn, eval_fn, predict_fn = _program(lp, est, name)
  estimator = _estimator(lp, est, name, model_dir)
  losses, start_steps = [], []
  for kwargs in ({"steps": FIRST_TRAIN_STEPS},
                 {"max_steps": SECOND_TRAIN_MAX_STEPS}):
    recorder = lp.make_loss_recorder(est)
    estimator.train(train_fn, hooks=[recorder], **kwargs)
    losses.extend(recorder.losses)
    start_steps.append(recorder.start_step)
  eval_results = estimator.evaluate(eval_fn)
  predictions = {}
  for row in estimator.predict(predict_fn):
    for key, value in row.items():
      predictions.setdefault(key, []).append(_to_json(value))
  # Less common arguments: a named partial evaluation, an older checkpoint,
  # whole batches, a subset of the prediction keys.
  older = os.path.join(model_dir, f"model.ckpt-{SAVE_CHECKPOINTS_STEPS}")
  extra = {
      "evaluate(steps=2,name=partial)": _to_json(dict(
          estimator.evaluate(eval_fn, steps=2, name="partial"))),
      "evaluate(checkpoint_path=ckpt-10)": _to_json(dict(
          estimator.evaluate(eval_fn, checkpoint_path=older))),
      "predict(yield_single_examples=False)": [
          _to_json(batch) for batch in
          estimator.predict(predict_fn, yield_single_examples=False)],
      "predict(checkpoint_path=ckpt-10,predict_keys)": [
          _to_json(row) for row in estimator.predict(
              predict_fn, checkpoint_path=older,
              predict_keys=[sorted(predictions)[0]])],
  }
  return {
      "losses": losses,
      "train_start_steps": start_steps,
      "eval": _to_json(dict(eval_results)),
      "more": extra,
      "variable_names": sorted(estimator.get_variable_names()),
      "variables": _variables(estimator),
      "predictions": predictions,
      "checkpoint": lp.checkpoint_state(model_dir),
      "files": listing(model_dir),
      "events": _events(model_dir),
  }


def _resume_record(lp, est, name, source_dir, work_dir):
  _, _, _, train_fn, _, _ = _program(lp, est, name)
  model_dir = os.path.join(work_dir, name)
  shutil.copytree(source_dir, model_dir)
  estimator = _estimator(lp, est, name, model_dir)
  recorder = lp.make_loss_recorder(est)
  estimator.train(train_fn, hooks=[recorder], max_steps=RESUME_MAX_STEPS)
  return {
      "losses": recorder.losses,
      "train_start_steps": [recorder.start_step],
      "variables": _variables(estimator),
      "checkpoint": lp.checkpoint_state(model_dir),
  }


def run_side(args):
  """Entry point of a subprocess: runs the programs with one estimator module."""
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
  import linear_program as lp  # pylint: disable=g-import-not-at-top
  # Import the estimator module first: estimator_lite selects tf-keras for
  # tf.compat.v1.layers before anything touches tf.keras.
  est = lp.estimator_module(args.side)
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.ERROR)
  record = {"module": args.side, "tensorflow": tf.__version__,
            "python": sys.version.split()[0], "programs": {}}
  for name in PROGRAMS:
    entry = {}
    if not args.no_train:
      entry.update(_train_record(lp, est, name, os.path.join(args.workdir, name)))
    for spec in args.resume_from:
      label, _, source = spec.partition("=")
      entry.setdefault("resume", {})[label] = _resume_record(
          lp, est, name, os.path.join(source, name),
          os.path.join(args.workdir, "resume_" + label))
    record["programs"][name] = entry
  with open(args.out, "w") as f:
    json.dump(record, f, indent=1, sort_keys=True)


# ----------------------------------------------------------------------------
# Driver: runs the sides and compares.
# ----------------------------------------------------------------------------

def _run_subprocess(label, cmd, env, log_path):
  print(f"[{label}] $ {' '.join(cmd)}", flush=True)
  start = time.monotonic()
  with open(log_path, "w") as log:
    try:
      proc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, env=env,
                            cwd=REPO_ROOT, timeout=SIDE_TIMEOUT_S)
      rc = proc.returncode
    except subprocess.TimeoutExpired:
      rc = "timeout"
  elapsed = time.monotonic() - start
  print(f"[{label}] exit {rc} in {elapsed:.1f} s (log: {log_path})", flush=True)
  if rc != 0:
    with open(log_path) as log:
      tail = log.read()[-6000:]
    raise SystemExit(f"[{label}] failed (exit {rc}); end of its log:\n{tail}")
  return elapsed


def _flatten(value, prefix=""):
  """{path: leaf} where leaves are scalars or lists (arrays / name lists)."""
  if isinstance(value, dict):
    out = {}
    for key in sorted(value):
      out.update(_flatten(value[key], f"{prefix}/{key}" if prefix else key))
    return out
  if isinstance(value, list) and any(isinstance(v, dict) for v in value):
    out = {f"{prefix}/length": len(value)}
    for i, item in enumerate(value):
      out.update(_flatten(item, f"{prefix}[{i}]"))
    return out
  return {prefix: value}


def _numbers(value):
  """Flat list of numbers if `value` is a (nested) numeric list/scalar, else None."""
  if isinstance(value, bool):
    return [float(value)]
  if isinstance(value, (int, float)):
    return [float(value)]
  if isinstance(value, list):
    out = []
    for v in value:
      sub = _numbers(v)
      if sub is None:
        return None
      out.extend(sub)
    return out
  return None


def _shape(value):
  shape = []
  while isinstance(value, list):
    shape.append(len(value))
    value = value[0] if value else None
  return shape


def _summary(value):
  nums = _numbers(value)
  if nums is None:
    text = json.dumps(value)
    return text if len(text) <= 28 else text[:25] + "..."
  if isinstance(value, list):
    return f"{nums[0]:.6g}.. {_shape(value)}" if nums else "[]"
  return f"{nums[0]:.6g}"


def compare(ref, lite, tolerance):
  """Returns (rows, ok): rows are (item, ref, lite, diff, status)."""
  a, b = _flatten(ref), _flatten(lite)
  rows, ok = [], True
  for key in sorted(set(a) | set(b)):
    if key not in a or key not in b:
      rows.append((key, _summary(a.get(key, "<missing>")),
                   _summary(b.get(key, "<missing>")), "", "MISSING"))
      ok = False
      continue
    x, y = a[key], b[key]
    nx, ny = _numbers(x), _numbers(y)
    if nx is not None and ny is not None and _shape(x) == _shape(y):
      diff = max((abs(p - q) for p, q in zip(nx, ny)), default=0.0)
      good = diff <= tolerance
      rows.append((key, _summary(x), _summary(y), f"{diff:.2e}",
                   "ok" if good else "DIFF"))
    else:
      good = x == y
      rows.append((key, _summary(x), _summary(y), "",
                   "same" if good else "DIFF"))
    ok = ok and good
  return rows, ok


def _print_table(rows):
  headers = ("quantity", "tf.estimator 2.15", "estimator_lite", "max|diff|", "")
  widths = [max(len(str(r[i])) for r in rows + [headers]) for i in range(5)]
  line = "  ".join(h.ljust(w) for h, w in zip(headers, widths))
  print(line)
  print("-" * len(line))
  for row in rows:
    print("  ".join(str(c).ljust(w) for c, w in zip(row, widths)))


def _comparable(record):
  """The parts of one side's record compared with the other side's.

  Resume labels name whose model_dir was resumed ("ref": the one tf.estimator
  wrote, "lite": estimator_lite's), the same on both sides.
  """
  out = {}
  for name, entry in record["programs"].items():
    item = {k: v for k, v in entry.items() if k != "resume"}
    for label, resumed in entry.get("resume", {}).items():
      item[f"resume_of_{label}_dir"] = resumed
    out[name] = item
  return out


def drive(args):
  import ref_env  # pylint: disable=g-import-not-at-top
  total_start = time.monotonic()
  ref_python = ref_env.ensure_ref_python(
      args.ref_venv, log=lambda line: print("[ref-venv] " + line, flush=True))
  print(f"[ref-venv] {ref_python}", flush=True)
  workdir = args.workdir or tempfile.mkdtemp(prefix="estimator_lite_parity_")
  if os.path.exists(workdir) and os.listdir(workdir):
    raise SystemExit(f"--workdir {workdir} is not empty")
  os.makedirs(workdir, exist_ok=True)
  script = os.path.abspath(__file__)

  base_env = dict(os.environ)
  base_env["TF_CPP_MIN_LOG_LEVEL"] = "2"
  ref_env_vars = ref_env.subprocess_env(base_env)  # TF 2.15 ships Keras 2 itself
  lite_env_vars = dict(base_env)
  lite_env_vars["PYTHONPATH"] = os.pathsep.join(
      [REPO_ROOT] + ([base_env["PYTHONPATH"]] if base_env.get("PYTHONPATH") else []))

  ref_dir, lite_dir = os.path.join(workdir, "ref"), os.path.join(workdir, "lite")
  ref_json = os.path.join(workdir, "ref.json")
  ref_resume_json = os.path.join(workdir, "ref_resume.json")
  lite_json = os.path.join(workdir, "lite.json")
  timings = {}
  timings["tf.estimator train/eval/predict"] = _run_subprocess(
      "tf.estimator", [ref_python, script, "--side", "tf.estimator",
                       "--out", ref_json, "--workdir", ref_dir],
      ref_env_vars, os.path.join(workdir, "ref.log"))
  timings["estimator_lite train/eval/predict + resumes"] = _run_subprocess(
      "estimator_lite", [args.lite_python, script, "--side", "estimator_lite",
                         "--out", lite_json, "--workdir", lite_dir,
                         "--resume-from", f"lite={lite_dir}",
                         "--resume-from", f"ref={ref_dir}"],
      lite_env_vars, os.path.join(workdir, "lite.log"))
  timings["tf.estimator resumes"] = _run_subprocess(
      "tf.estimator resume", [ref_python, script, "--side", "tf.estimator",
                              "--out", ref_resume_json, "--no-train",
                              "--workdir", os.path.join(workdir, "ref_resumes"),
                              "--resume-from", f"ref={ref_dir}",
                              "--resume-from", f"lite={lite_dir}"],
      ref_env_vars, os.path.join(workdir, "ref_resume.log"))

  with open(ref_json) as f:
    ref = json.load(f)
  with open(ref_resume_json) as f:
    for name, entry in json.load(f)["programs"].items():
      ref["programs"][name]["resume"] = entry["resume"]
  with open(lite_json) as f:
    lite = json.load(f)
  print(f"\nreference: tf.estimator on TensorFlow {ref['tensorflow']} "
        f"(Python {ref['python']}); estimator_lite on TensorFlow "
        f"{lite['tensorflow']} (Python {lite['python']}); tolerance {args.tolerance:g}\n")
  rows, ok = compare(_comparable(ref), _comparable(lite), args.tolerance)
  _print_table(rows)
  print()
  for label, seconds in timings.items():
    print(f"time {label}: {seconds:.1f} s")
  print(f"time total: {time.monotonic() - total_start:.1f} s")
  if args.json:
    with open(args.json, "w") as f:
      json.dump({"ok": ok, "tolerance": args.tolerance, "rows": rows,
                 "timings_s": timings, "ref": ref, "lite": lite}, f, indent=1)
  bad = [r for r in rows if r[4] in ("DIFF", "MISSING")]
  if bad:
    print(f"\nPARITY FAILED: {len(bad)} of {len(rows)} quantities differ:")
    flat_ref, flat_lite = _flatten(_comparable(ref)), _flatten(_comparable(lite))
    for row in bad:
      print(f"  {row[0]} ({row[4]}{', max|diff| ' + row[3] if row[3] else ''}):")
      print(f"    tf.estimator:   {json.dumps(flat_ref.get(row[0], '<missing>'))[:2000]}")
      print(f"    estimator_lite: {json.dumps(flat_lite.get(row[0], '<missing>'))[:2000]}")
    print(f"(model_dirs and logs kept in {workdir})")
    return 1
  print(f"\nPARITY OK: {len(rows)} quantities agree within {args.tolerance:g}")
  if not args.workdir:
    shutil.rmtree(workdir, ignore_errors=True)
  return 0


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--ref-venv", default=None,
                      help="reference venv (default $ESTIMATOR_LITE_REF_VENV or "
                           "~/.cache/estimator_lite/ref-venv-2.15); created if missing")
  parser.add_argument("--lite-python", default=sys.executable,
                      help="interpreter that runs estimator_lite (default: this one)")
  parser.add_argument("--tolerance", type=float, default=1e-4)
  parser.add_argument("--workdir", default=None,
                      help="empty directory to keep model_dirs, JSONs and logs in "
                           "(default: a temporary one, removed on success)")
  parser.add_argument("--json", default=None, help="write the comparison here")
  parser.add_argument("--side", default=None, help=argparse.SUPPRESS)
  parser.add_argument("--out", default=None, help=argparse.SUPPRESS)
  parser.add_argument("--resume-from", action="append", default=[],
                      help=argparse.SUPPRESS)
  parser.add_argument("--no-train", action="store_true", help=argparse.SUPPRESS)
  args = parser.parse_args(argv)
  if args.side:
    run_side(args)
    return 0
  return drive(args)


if __name__ == "__main__":
  sys.exit(main())
