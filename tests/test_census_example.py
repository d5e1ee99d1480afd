"""examples/census_wide_deep.py run as a user runs it: its own process, the census data, real files.

The example trains a DNNLinearCombinedClassifier with train_and_evaluate, a
BestExporter exports the best model, and the program reloads that export with
tf.saved_model.load and predicts test rows from serialized tf.train.Examples.
"""
import importlib.util
import os
import re
import textwrap

import numpy as np
import tensorflow as tf

EXAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                       "examples", "census_wide_deep.py")


def _example_module():
  # The example imports no Estimator API at module level: its helpers load here.
  spec = importlib.util.spec_from_file_location("census_wide_deep", EXAMPLE)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def test_census_example_trains_evaluates_exports_the_best_model_and_predicts_from_it(
    tmp_path, run_python):
  model_dir = str(tmp_path / "census_model")
  program = textwrap.dedent(f"""
      import runpy, sys
      sys.argv[0] = {EXAMPLE!r}
      runpy.run_path({EXAMPLE!r}, run_name="__main__")
  """)
  completed = run_python(program, "--model_dir", model_dir, "--train_steps", 600,
                         "--save_checkpoints_steps", 300, "--eval_rows", 4096,
                         "--predict_rows", 6, timeout=240)
  out, err = completed.stdout, completed.stderr
  assert completed.returncode == 0, f"{out}\n{err[-6000:]}"

  assert re.search(r"^Evaluation after 600 steps \(4096 test rows\):$", out, re.M), out
  metrics = {k: float(v) for k, v in re.findall(r"^  (\w+): ([-+.e\d]+)$", out, re.M)}
  assert set(metrics) == {"accuracy", "accuracy_baseline", "auc", "precision", "recall",
                          "loss"}, out
  # Always answering "<=50K" scores accuracy_baseline (about 0.76) and an AUC of
  # 0.5; 600 steps of wide & deep reach about 0.81 and 0.85.
  assert 0.74 < metrics["accuracy_baseline"] < 0.78, out
  assert metrics["accuracy"] > metrics["accuracy_baseline"] + 0.02, out
  assert metrics["auc"] > 0.8, out
  # train_and_evaluate evaluated after each checkpoint (300 and 600), and the
  # BestExporter exported after those evaluations.
  evaluated = re.findall(r"Saving dict for global step (\d+):", err)
  assert evaluated == ["300", "600"], err[-6000:]

  # exports_to_keep=1: one export (a directory named by its timestamp), the one
  # the program reloaded.
  best_dir = os.path.join(model_dir, "export", "best")
  [stamp] = [n for n in os.listdir(best_dir) if n.isdigit()]
  export_dir = os.path.join(best_dir, stamp)
  assert re.search(rf"^Best export: {re.escape(export_dir)}$", out, re.M), out
  assert os.path.exists(os.path.join(export_dir, "saved_model.pb"))

  lines = re.findall(r"^  age (\d+), .*: true (\S+), predicted (\S+) \(P\(>50K\) = ([.\d]+)\)$",
                     out, re.M)
  assert len(lines) == 6, out
  correct = sum(true == predicted for _, true, predicted, _ in lines)
  assert re.search(rf"^Reloaded export's accuracy on them: {correct}/6$", out, re.M), out

  # The export serves here too: this process parses the same Examples and gets
  # the probabilities the program printed.
  census = _example_module()
  rows = census.read_rows(os.path.join(census.DATA_DIR, census.TEST_FILE), 6)
  assert [int(row["age"]) for row in rows] == [int(age) for age, *_ in lines]
  predict = tf.saved_model.load(export_dir).signatures["predict"]
  outputs = predict(examples=tf.constant([census.to_example(row) for row in rows]))
  np.testing.assert_allclose(outputs["probabilities"].numpy()[:, 1],
                             [float(p) for *_, p in lines], atol=6e-4)
  assert [c.decode() for c in outputs["classes"].numpy()[:, 0]] == [p for _, _, p, _ in lines]
