"""The README's main example, run as a user runs it: its own process, real data, real files.

examples/digits.py trains on scikit-learn's bundled digits (offline) with
train_and_evaluate, evaluating at every checkpoint, exports and reloads a
SavedModel, then prints the eval metrics, where the checkpoints and the export
are, and the tensorboard and saved_model_cli commands for them.
"""
import os
import re
import sys
import textwrap

import tensorflow as tf

DIGITS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                      "examples", "digits.py")


def test_digits_example_trains_evaluates_exports_and_prints_the_commands_for_what_it_wrote(
    tmp_path, run_python, read_scalars):
  model_dir = str(tmp_path / "digits_model")
  # Runs the file itself as __main__ (argv[0] included, as `python
  # examples/digits.py` would), in a fresh interpreter with run_python's timeout.
  program = textwrap.dedent(f"""
      import runpy, sys
      sys.argv[0] = {DIGITS!r}
      runpy.run_path({DIGITS!r}, run_name="__main__")
  """)
  completed = run_python(program, "--model_dir", model_dir, "--max_steps", 100, timeout=300)
  out = completed.stdout
  assert completed.returncode == 0, f"{out}\n{completed.stderr[-6000:]}"

  metrics = dict(re.findall(r"^  (\w+): ([-+.e\d]+)$", out, re.M))
  assert set(metrics) == {"accuracy", "global_step", "loss"}, out
  assert int(metrics["global_step"]) == 100
  # 100 Adam steps of a small MLP classify most held-out digits (about 0.95;
  # a model that learned nothing would be near 0.1).
  assert float(metrics["accuracy"]) > 0.85, out
  assert 0.0 < float(metrics["loss"]) < 0.5, out
  assert re.search(r"^Evaluated every 20 steps on 360 held-out digits; the last evaluation:$",
                   out, re.M), out
  assert re.search(r"^First held-out digit: true \d, predicted \d$", out, re.M), out

  where = re.search(r"^Checkpoints are in (.+) \(latest: (.+)\)$", out, re.M)
  assert where, out
  assert where.group(1) == model_dir
  latest = where.group(2)
  assert latest == os.path.join(model_dir, "model.ckpt-100")
  assert tf.train.latest_checkpoint(model_dir) == latest
  assert int(tf.train.load_variable(latest, "global_step")) == 100
  # The export: a SavedModel, reloaded in the same run, predicting the first
  # held-out digits as the estimator does.
  exported = re.search(r"^Exported SavedModel: (.+)$", out, re.M)
  assert exported, out
  export_dir = exported.group(1)
  assert os.path.dirname(export_dir) == os.path.join(model_dir, "export")
  assert tf.saved_model.contains_saved_model(export_dir)
  reloaded = re.search(r"^Reloaded it and predicted the first 5 held-out digits: \[(.*)\] "
                       r"\(true \[(.*)\]\)$", out, re.M)
  assert reloaded, out
  predicted, true = ([int(d) for d in g.split(", ")] for g in reloaded.groups())
  assert predicted[0] == int(re.search(r"predicted (\d)$", out, re.M).group(1))
  assert sum(p == t for p, t in zip(predicted, true)) >= 4, out

  # It ends with the exact commands: TensorBoard on model_dir, opened on the
  # loss (its time-series dashboard's tag filter, read from the URL's query),
  # saved_model_cli on the export; both tools exist.
  venv_bin = os.path.dirname(sys.executable)
  assert ("See the training and evaluation curves: run this, then open "
          "http://localhost:6006/?tagFilter=loss#timeseries\n"
          f"  {venv_bin}/tensorboard --logdir {model_dir}\n") in out, out
  assert os.access(os.path.join(venv_bin, "tensorboard"), os.X_OK)
  # TensorBoard draws curves: the training loss (every 100 steps, RunConfig's
  # default), and the evaluation's accuracy and loss at every checkpoint.
  assert read_scalars(model_dir)["loss"]
  evaluated = read_scalars(os.path.join(model_dir, "eval"))
  for tag in ("accuracy", "loss"):
    assert [step for step, _ in evaluated[tag]] == [20, 40, 60, 80, 100], evaluated
  assert f"  {venv_bin}/saved_model_cli show --dir {export_dir} --all\n" in out, out
  assert (f"  {venv_bin}/saved_model_cli run --dir {export_dir} --tag_set serve "
          f"--signature_def predict --input_examples \"examples=$(cat "
          f"{model_dir}/requests/examples.txt)\"\n") in out, out
  for body in ("classify.json", "predict.json", "examples.txt"):
    assert os.path.isfile(os.path.join(model_dir, "requests", body))

  # The training log went to stderr, as tf.estimator's did.
  assert "Saving checkpoints for 100 into " + os.path.join(model_dir, "model.ckpt") in (
      completed.stderr), completed.stderr[-6000:]
  # Once each, and none of TensorFlow's C++ start-up lines or type inference
  # warnings (docs/logs.md): the example imports estimator_lite first.
  assert completed.stderr.count("Saving checkpoints for 100 into ") == 1, completed.stderr
  cpp_lines = re.findall(r"^[IWEF]\d{4} .*$|^.*type_inference.*$", completed.stderr, re.M)
  assert not cpp_lines, cpp_lines

  # Run again on the finished model_dir: train_and_evaluate trains (and so
  # evaluates) nothing, as tf.estimator's did; the example says so, and still
  # shows the evaluation of the checkpoint it holds.
  again = run_python(program, "--model_dir", model_dir, "--max_steps", 100, timeout=300)
  assert again.returncode == 0, f"{again.stdout}\n{again.stderr[-6000:]}"
  assert (f"\nTrained nothing: {model_dir} already holds step 100 >= --max_steps 100; pass a "
          "new --model_dir or a larger --max_steps to train more.\nEvaluation of its latest "
          "checkpoint on 360 held-out digits:\n") in again.stdout, again.stdout
  reevaluated = dict(re.findall(r"^  (\w+): ([-+.e\d]+)$", again.stdout, re.M))
  assert reevaluated["global_step"] == "100", again.stdout
  assert abs(float(reevaluated["loss"]) - float(metrics["loss"])) < 1e-5, again.stdout
  assert tf.train.latest_checkpoint(model_dir) == latest
