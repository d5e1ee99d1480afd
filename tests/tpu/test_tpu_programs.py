"""TPUEstimator programs give tf.estimator 2.15's results under estimator_lite, unmodified.

The programs are examples/tpu_bert (run_pretraining.py, run_classifier.py: a
tiny BERT pre-trained on masked LM, then fine-tuned, evaluated, predicted and
exported) and examples/tpu_mnist/mnist_tpu.py (a convnet on scikit-learn's
digits), tf.estimator programs that use `tf.compat.v1.estimator.tpu.
TPUEstimator` with --use_tpu=False as TPU programs did on a CPU. Each runs
twice, in its own process:

* tf.estimator 2.15: `python prog.py ARGS` in the reference venv (TensorFlow
  2.15 + tensorflow-estimator, created when missing, see
  tests/reference/ref_env.py; the tests fail, never skip, when it cannot be);
* estimator_lite: `python -m estimator_lite.run prog.py ARGS` here.

BERT is pre-trained on each side and the two pre-trainings compared; both
sides then fine-tune from the 2.15 checkpoint, so the fine-tuning comparison
starts from the same weights. Compared:

* within 1e-5 (absolute, relative above 1): the per-step pre-training losses,
  the evaluation metrics, the predictions (test_results.tsv, the results
  JSON), what the export serves, every variable of the checkpoints, and the
  values of the events (Estimator's loss summary, host_call's TF2 scalars,
  the evaluation's metrics);
* exactly: the event tags, the checkpoints' variable names, and the
  export's signature names; the steps of each event tag (global_step/sec and
  examples/sec too, whose values are timings): estimator_lite's every N
  steps, 2.15's every N or N - 1, whose hooks read the global step unordered
  against its increment (`_steps_agree`). 2.15 also exported a MetaGraph
  for serving on a TPU (tags "serve", "tpu"), which estimator_lite documents
  it does not write; the MetaGraph tagged "serve" is compared.

Both sides run with TF_ENABLE_ONEDNN_OPTS=0: TensorFlow 2.15's oneDNN
convolutions round differently from 2.21's kernels (mnist_tpu.py's loss
differed by 8e-6 at step 21, its predictions by 2e-4 after 60 steps), a
difference of TensorFlow, not of estimator_lite; without oneDNN the two agree
to the bit there.
"""
import glob
import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

TESTS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO_ROOT = os.path.dirname(TESTS_DIR)
sys.path.insert(0, os.path.join(TESTS_DIR, "reference"))

import ref_env  # pylint: disable=g-import-not-at-top,wrong-import-position
import tensorflow as tf  # pylint: disable=g-import-not-at-top,wrong-import-position

BERT_DIR = os.path.join(REPO_ROOT, "examples", "tpu_bert")
MNIST_PROGRAM = os.path.join(REPO_ROOT, "examples", "tpu_mnist", "mnist_tpu.py")
TOL = 1e-5
# A run takes 5-20 s on 2 cores; the limit only stops a hung program.
RUN_TIMEOUT_S = 240
SIDES = ("tf215", "lite")
# The events whose values are timings: their tags and steps are compared.
RATE_TAGS = ("global_step/sec", "examples/sec")
COMMON_ENV = {"TF_CPP_MIN_LOG_LEVEL": "2", "TF_ENABLE_ONEDNN_OPTS": "0"}


class _Runner:
  """Runs a program on one side, in its own process, and keeps how long each run took."""

  def __init__(self, ref_python, cwd):
    self._ref_python = ref_python
    self._cwd = str(cwd)
    self.seconds = {}

  def __call__(self, side, name, program, *args):
    if side == "tf215":
      command = [self._ref_python, program, *args]
      env = ref_env.subprocess_env(**COMMON_ENV)
    else:
      command = [sys.executable, "-m", "estimator_lite.run", program, *args]
      env = dict(os.environ, **COMMON_ENV)
      # What importing estimator_lite here (conftest) set: the program
      # starts as a user's fresh one, and estimator_lite.run sets it itself.
      env.pop("TF_USE_LEGACY_KERAS", None)
      env["PYTHONPATH"] = os.pathsep.join(
          [REPO_ROOT] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    start = time.monotonic()
    try:
      proc = subprocess.run(command, cwd=self._cwd, env=env, capture_output=True,
                            text=True, timeout=RUN_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired as e:
      stderr = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else e.stderr
      pytest.fail(f"{side} {name} ran past {RUN_TIMEOUT_S} s: {' '.join(command)}\n"
                  f"{(stderr or '')[-5000:]}", pytrace=False)
    self.seconds[f"{side} {name}"] = time.monotonic() - start
    if proc.returncode != 0:
      pytest.fail(f"{side} {name} failed (exit {proc.returncode}): {' '.join(command)}\n"
                  f"{proc.stderr[-8000:]}", pytrace=False)


class _Comparison:
  """Collects the differences between the two sides, and the largest gap of each quantity."""

  def __init__(self):
    self.failures = []
    self.max_abs_diff = {}

  def equal(self, quantity, want, got):
    if want != got:
      self.failures.append(f"{quantity}: tf.estimator 2.15 {want!r}, estimator_lite {got!r}")

  def numbers(self, quantity, want, got):
    """Same structure (dicts, lists), same strings, numbers within TOL."""
    self.max_abs_diff.setdefault(quantity, 0.0)
    self._numbers(quantity, quantity, want, got)

  def _numbers(self, quantity, where, want, got):
    if isinstance(want, dict) and isinstance(got, dict):
      if sorted(want) != sorted(got):
        self.failures.append(f"{where}: keys {sorted(want)} (2.15) != {sorted(got)}")
        return
      for key in sorted(want):
        self._numbers(quantity, f"{where}[{key!r}]", want[key], got[key])
    elif isinstance(want, (list, tuple, np.ndarray)) and isinstance(got, (list, tuple, np.ndarray)):
      want, got = np.asarray(want), np.asarray(got)
      if want.shape != got.shape:
        self.failures.append(f"{where}: shape {want.shape} (2.15) != {got.shape}")
      elif want.dtype.kind in "biuf" and got.dtype.kind in "biuf":
        self._arrays(quantity, where, want, got)
      elif want.dtype == object or got.dtype == object:
        for index, (w, g) in enumerate(zip(want.tolist(), got.tolist())):
          self._numbers(quantity, f"{where}[{index}]", w, g)
      elif not np.array_equal(want, got):
        self.failures.append(f"{where}: {want.tolist()} (2.15) != {got.tolist()}")
    elif isinstance(want, (int, float)) and isinstance(got, (int, float)):
      self._arrays(quantity, where, np.asarray(want), np.asarray(got))
    elif want != got:
      self.failures.append(f"{where}: {want!r} (2.15) != {got!r}")

  def _arrays(self, quantity, where, want, got):
    want, got = want.astype(np.float64), got.astype(np.float64)
    gap = np.abs(want - got)
    if gap.size:
      self.max_abs_diff[quantity] = max(self.max_abs_diff[quantity], float(np.max(gap)))
    allowed = TOL * np.maximum(1.0, np.maximum(np.abs(want), np.abs(got)))
    if not np.all(gap <= allowed):
      worst = np.unravel_index(np.argmax(gap - allowed), gap.shape) if gap.ndim else ()
      worst = tuple(int(i) for i in worst)
      self.failures.append(f"{where}: differs by {float(gap[worst]):.3g} at {list(worst)}: "
                           f"{float(want[worst])!r} (2.15) vs {float(got[worst])!r}")

  def summary(self, seconds):
    lines = ["max |tf.estimator 2.15 - estimator_lite| per quantity:"]
    lines += [f"  {quantity}: {gap:.3g}" for quantity, gap in self.max_abs_diff.items()]
    lines += ["seconds per run:"] + [f"  {run}: {s:.1f}" for run, s in seconds.items()]
    return "\n".join(lines)

  def check(self, seconds):
    print(self.summary(seconds))
    assert not self.failures, "\n".join(
        ["estimator_lite and tf.estimator 2.15 disagree:"] + self.failures)


def _read_json(path):
  with open(path) as f:
    return json.load(f)


def _events(directory):
  """{tag: [(step, value), ...]} of the event files right in `directory`, in step order.

  A graph or MetaGraph written counts as the tags "<graph_def>" and
  "<meta_graph_def>"; a string value (checkpoint_path) is reduced to its base
  name, the sides' directories differing.
  """
  events = {}
  for path in sorted(glob.glob(os.path.join(directory, "events.out.tfevents.*"))):
    for event in tf.compat.v1.train.summary_iterator(path):
      found = []
      if event.HasField("graph_def"):
        found.append(("<graph_def>", None))
      if event.HasField("meta_graph_def"):
        found.append(("<meta_graph_def>", None))
      for value in event.summary.value:
        kind = value.WhichOneof("value")
        if kind == "simple_value":
          found.append((value.tag, float(value.simple_value)))
        elif kind == "tensor":
          array = tf.make_ndarray(value.tensor)
          if array.dtype.kind in "SUO":
            found.append((value.tag, os.path.basename(array.item().decode())))
          else:
            found.append((value.tag, float(array)))
        else:
          found.append((value.tag, kind))
      for tag, item in found:
        events.setdefault(tag, []).append((event.step, item))
  return {tag: sorted(items, key=lambda item: item[0]) for tag, items in events.items()}


def _steps_agree(want, got):
  """Whether 2.15's event steps are estimator_lite's, up to 2.15's read race.

  tf.estimator 2.15's hooks (SummarySaverHook, StepCounterHook) fetch the
  global step in the same Session.run as the train op, unordered against its
  increment. Whenever they see the step after it, they count one step ahead
  and write the next due point one step early, at its true step; the
  interval restarts from there. So each of 2.15's intervals is estimator_lite's
  N or N - 1, at random per point (CI saw 1, 5, 9, 12, 16, ..., 32, 35, 39);
  estimator_lite orders that read before the increment and writes every N
  steps exactly. 2.15 ends no earlier than one interval before
  estimator_lite's last point: its early points can fit more in, not fewer.
  """
  if len(got) < 2:
    # One point or none: no interval to compare; the race moves a point by one.
    return 0 <= len(want) - len(got) <= 1 and all(w in (g, g - 1) for w, g in zip(want, got))
  interval = got[1] - got[0]
  regular = all(b - a == interval for a, b in zip(got, got[1:]))
  same_start = bool(want) and want[0] in (got[0], got[0] - 1)
  gaps = all(b - a in {interval, max(interval - 1, 1)} for a, b in zip(want, want[1:]))
  return regular and same_start and gaps and want[-1] + interval > got[-1]


def _compare_events(comparison, name, want_dir, got_dir):
  """Same tags; the same steps per tag (as `_steps_agree`); the same values but for the step rates."""
  want, got = _events(want_dir), _events(got_dir)
  comparison.equal(f"{name} event tags", sorted(want), sorted(got))
  for tag in sorted(set(want) & set(got)):
    want_steps, got_steps = [step for step, _ in want[tag]], [step for step, _ in got[tag]]
    if not _steps_agree(want_steps, got_steps):
      comparison.equal(f"{name} event steps of {tag!r}", want_steps, got_steps)
    # Rates are timings; "<graph_def>" and "<meta_graph_def>" carry no value.
    if tag in RATE_TAGS or tag.startswith("<"):
      continue
    # Values where both wrote the same step.
    common = sorted(set(want_steps) & set(got_steps))
    comparison.numbers(f"{name} events {tag!r}",
                       [value for step, value in want[tag] if step in common],
                       [value for step, value in got[tag] if step in common])
  return set(want)


def _compare_checkpoints(comparison, name, want_path, got_path):
  want, got = tf.train.load_checkpoint(want_path), tf.train.load_checkpoint(got_path)
  want_names = sorted(want.get_variable_to_shape_map())
  got_names = sorted(got.get_variable_to_shape_map())
  comparison.equal(f"{name} checkpoint variables", want_names, got_names)
  comparison.numbers(f"{name} checkpoint values",
                     {n: want.get_tensor(n) for n in want_names if n in got_names},
                     {n: got.get_tensor(n) for n in want_names if n in got_names})
  return want_names


def _estimator_classes(comparison, results):
  """Each side ran its own TPUEstimator: tf.estimator's in the reference, else estimator_lite's."""
  want = results["tf215"]["estimator_class"]
  got = results["lite"]["estimator_class"]
  if not want.startswith("tensorflow_estimator."):
    comparison.failures.append(f"the reference run used {want}, not tf.estimator's")
  if not got.startswith("estimator_lite.tpu."):
    comparison.failures.append(f"python -m estimator_lite.run ran {got}, not estimator_lite's")
  comparison.equal("tensorflow versions", "2.15",
                   results["tf215"]["tensorflow_version"][:4])


# -- BERT ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def bert_runs(reference_python, tmp_path_factory):
  """Pre-trains on both sides, then fine-tunes both sides from 2.15's checkpoint."""
  root = tmp_path_factory.mktemp("tpu_bert")
  run = _Runner(reference_python, root)
  pretraining = {}
  for side in SIDES:
    out = root / side / "pretraining"
    run(side, "run_pretraining.py", os.path.join(BERT_DIR, "run_pretraining.py"),
        f"--output_dir={out}", "--num_train_steps=20", "--use_tpu=False",
        f"--results_json={out}.json")
    pretraining[side] = {"dir": str(out), "results": _read_json(f"{out}.json")}
  init_checkpoint = pretraining["tf215"]["results"]["checkpoint"]
  classifier = {}
  for side in SIDES:
    out = root / side / "classifier"
    run(side, "run_classifier.py", os.path.join(BERT_DIR, "run_classifier.py"),
        "--do_train=true", "--do_eval=true", "--do_predict=true", "--use_tpu=False",
        f"--init_checkpoint={init_checkpoint}", f"--output_dir={out}",
        "--train_batch_size=8", "--eval_batch_size=8", "--predict_batch_size=8",
        "--num_train_epochs=6", f"--export_dir={out}/export",
        f"--results_json={out}.json")
    classifier[side] = {"dir": str(out), "results": _read_json(f"{out}.json")}
  return pretraining, classifier, run.seconds


def test_bert_pretraining_under_estimator_lite_matches_tf215(bert_runs):
  pretraining, _, seconds = bert_runs
  comparison = _Comparison()
  results = {side: pretraining[side]["results"] for side in SIDES}
  _estimator_classes(comparison, results)
  comparison.numbers("pre-training losses (20 steps)", results["tf215"]["train_losses"],
                     results["lite"]["train_losses"])
  comparison.numbers("pre-training evaluation", results["tf215"]["eval"],
                     results["lite"]["eval"])
  checkpoints = {side: results[side]["checkpoint"] for side in SIDES}
  comparison.equal("pre-training checkpoint", "model.ckpt-20",
                   os.path.basename(checkpoints["lite"]))
  names = _compare_checkpoints(comparison, "pre-training", checkpoints["tf215"],
                               checkpoints["lite"])
  assert "bert/encoder/layer_1/attention/self/query/kernel" in names
  assert "cls/predictions/output_bias" in names
  tags = _compare_events(comparison, "pre-training", pretraining["tf215"]["dir"],
                         pretraining["lite"]["dir"])
  assert {"loss", *RATE_TAGS} <= tags, tags
  tags = _compare_events(comparison, "pre-training eval",
                         os.path.join(pretraining["tf215"]["dir"], "eval"),
                         os.path.join(pretraining["lite"]["dir"], "eval"))
  assert {"masked_lm_accuracy", "masked_lm_loss", "loss"} <= tags, tags
  comparison.check(seconds)


def _read_tsv(path):
  with open(path) as f:
    return [[float(cell) for cell in line.rstrip("\n").split("\t")] for line in f]


def test_bert_fine_tuning_under_estimator_lite_matches_tf215(bert_runs):
  _, classifier, seconds = bert_runs
  comparison = _Comparison()
  results = {side: classifier[side]["results"] for side in SIDES}
  _estimator_classes(comparison, results)
  want, got = results["tf215"], results["lite"]

  comparison.numbers("fine-tuning evaluation", want["eval"], got["eval"])
  # The model learned the task: the comparison is not of two untrained models.
  assert want["eval"]["eval_accuracy"] >= 0.75, want["eval"]
  predictions = {side: _read_tsv(results[side]["test_results_tsv"]) for side in SIDES}
  assert len(predictions["tf215"]) == 12
  comparison.numbers("test_results.tsv probabilities", predictions["tf215"],
                     predictions["lite"])
  comparison.numbers("predicted probabilities", want["predictions"], got["predictions"])

  # The export: the MetaGraph for CPU serving (tag "serve"), its signatures
  # and what it serves. 2.15 (export_to_tpu=True, TPUEstimator's default)
  # also wrote one tagged "serve", "tpu", which estimator_lite documents it
  # does not write: no other MetaGraph may differ.
  meta_graphs = {side: results[side]["export"]["meta_graphs"] for side in SIDES}
  comparison.equal("export signatures (tag 'serve')", meta_graphs["tf215"].get("serve"),
                   meta_graphs["lite"].get("serve"))
  assert meta_graphs["tf215"]["serve"] == ["predict_label", "serving_default"]
  comparison.equal("export MetaGraphs other than 2.15's 'serve,tpu'",
                   sorted(set(meta_graphs["tf215"]) - {"serve,tpu"}),
                   sorted(meta_graphs["lite"]))
  comparison.numbers("served probabilities", want["export"]["served"],
                     got["export"]["served"])
  comparison.numbers("served vs predicted (estimator_lite)",
                     got["export"]["served"]["probabilities"], got["predictions"][:2])

  comparison.equal("fine-tuning checkpoint", "model.ckpt-48",
                   os.path.basename(got["checkpoint"]))
  names = _compare_checkpoints(comparison, "fine-tuning", want["checkpoint"],
                               got["checkpoint"])
  assert "output_weights" in names and "bert/pooler/dense/kernel/adam_m" in names
  # Training events: Estimator's loss summary ("loss_1": the model's "loss"
  # variable scope took the name "loss"), the step rates, and host_call's
  # TF2 scalars, written every step.
  tags = _compare_events(comparison, "fine-tuning", classifier["tf215"]["dir"],
                         classifier["lite"]["dir"])
  assert {"loss_1", "host_call/loss", "host_call/learning_rate", *RATE_TAGS} <= tags, tags
  tags = _compare_events(comparison, "fine-tuning eval",
                         os.path.join(classifier["tf215"]["dir"], "eval"),
                         os.path.join(classifier["lite"]["dir"], "eval"))
  assert {"eval_accuracy", "eval_loss", "loss"} <= tags, tags
  comparison.check(seconds)


# -- MNIST (digits) ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def mnist_runs(reference_python, tmp_path_factory):
  """mnist_tpu.py on both sides, on the digits scikit-learn ships (saved here: the
  reference venv has no scikit-learn)."""
  from sklearn import datasets  # pylint: disable=g-import-not-at-top
  root = tmp_path_factory.mktemp("tpu_mnist")
  digits = datasets.load_digits()
  data_file = root / "digits.npz"
  np.savez(data_file, images=digits.images, target=digits.target)
  run = _Runner(reference_python, root)
  runs = {}
  for side in SIDES:
    model_dir = root / side / "model"
    results_json = root / side / "results.json"
    run(side, "mnist_tpu.py", MNIST_PROGRAM, "--use_tpu=False", f"--model_dir={model_dir}",
        f"--data_file={data_file}", "--batch_size=64", "--train_steps=100",
        "--eval_steps=5", "--iterations=10", f"--results_json={results_json}")
    runs[side] = {"dir": str(model_dir), "results": _read_json(results_json)}
  return runs, run.seconds


def test_mnist_tpu_under_estimator_lite_matches_tf215(mnist_runs):
  runs, seconds = mnist_runs
  comparison = _Comparison()
  results = {side: runs[side]["results"] for side in SIDES}
  _estimator_classes(comparison, results)
  want, got = results["tf215"], results["lite"]
  comparison.numbers("evaluation", want["eval"], got["eval"])
  assert want["eval"]["global_step"] == 100
  assert want["eval"]["accuracy"] >= 0.6, want["eval"]
  comparison.numbers("predictions", want["predictions"], got["predictions"])
  assert len(want["predictions"]) == 8
  _compare_checkpoints(comparison, "model.ckpt-100",
                       os.path.join(runs["tf215"]["dir"], "model.ckpt-100"),
                       os.path.join(runs["lite"]["dir"], "model.ckpt-100"))
  tags = _compare_events(comparison, "training", runs["tf215"]["dir"], runs["lite"]["dir"])
  assert {"loss", *RATE_TAGS} <= tags, tags
  tags = _compare_events(comparison, "eval", os.path.join(runs["tf215"]["dir"], "eval"),
                         os.path.join(runs["lite"]["dir"], "eval"))
  assert {"accuracy", "loss"} <= tags, tags
  comparison.check(seconds)
