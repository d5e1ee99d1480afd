"""The README's main example, run as a user runs it: its own process, real data, real files.

examples/digits.py trains on scikit-learn's bundled digits (offline), then
prints the eval metrics and where the checkpoints are.
"""
import os
import re
import textwrap

import tensorflow as tf

DIGITS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                      "examples", "digits.py")


def test_digits_example_trains_evaluates_and_says_where_the_checkpoints_are(
    tmp_path, run_python):
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
  assert re.search(r"^Evaluation on 360 held-out digits:$", out, re.M), out
  assert re.search(r"^First held-out digit: true \d, predicted \d$", out, re.M), out

  where = re.search(r"^Checkpoints are in (.+) \(latest: (.+)\)$", out, re.M)
  assert where, out
  assert where.group(1) == model_dir
  latest = where.group(2)
  assert latest == os.path.join(model_dir, "model.ckpt-100")
  assert tf.train.latest_checkpoint(model_dir) == latest
  assert int(tf.train.load_variable(latest, "global_step")) == 100
  # The training log went to stderr, as tf.estimator's did.
  assert "Saving checkpoints for 100 into " + os.path.join(model_dir, "model.ckpt") in (
      completed.stderr), completed.stderr[-6000:]
