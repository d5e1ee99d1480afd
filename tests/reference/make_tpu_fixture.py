"""Records tf.estimator 2.15's TPUEstimator (use_tpu=False) on tpu_cases.py's program.

Runs ONLY under the reference environment (TensorFlow 2.15 + tensorflow-estimator
2.15). From the repository root:

    ~/.cache/estimator_lite/ref-venv-2.15/bin/python tests/reference/make_tpu_fixture.py

It writes tests/data/tpu/:
  tf215_model_dir/   the model_dir the program trained (checkpoints, events,
                     eval/ and host_call/ events), its export removed (the
                     export's signatures are in expected.json);
  expected.json      "run": what the program did (evaluate, predict, the
                     checkpoint's variables, the event tags and their steps,
                     the export's MetaGraphs and signatures, what the export
                     predicts when loaded in TF2); "read": what tf.estimator
                     did when it evaluated, predicted and resumed a copy of that
                     model_dir; "listing": the model_dir's files.
"""
import json
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_DIR = os.path.join(os.path.dirname(HERE), "data", "tpu")
sys.path.insert(0, HERE)

import tpu_cases  # pylint: disable=g-import-not-at-top,wrong-import-position


def main():
  tf, tpu, export_lib = tpu_cases._reference_modules()  # pylint: disable=protected-access
  assert tf.__version__.startswith("2.15."), tf.__version__
  work = tempfile.mkdtemp(prefix="tpu_fixture_")
  model_dir = os.path.join(work, "model_dir")
  run = tpu_cases.run_program(tf, tpu, export_lib, model_dir)
  shutil.rmtree(os.path.join(model_dir, "export"))
  listing = tpu_cases.listing(model_dir)
  copy = os.path.join(work, "copy")
  shutil.copytree(model_dir, copy)
  read = tpu_cases.read_model_dir(tf, tpu, export_lib, copy)
  if os.path.exists(OUT_DIR):
    shutil.rmtree(OUT_DIR)
  os.makedirs(OUT_DIR)
  shutil.copytree(model_dir, os.path.join(OUT_DIR, "tf215_model_dir"))
  with open(os.path.join(OUT_DIR, "expected.json"), "w") as f:
    json.dump({"tensorflow_version": tf.__version__, "run": run, "read": read,
               "listing": listing}, f, indent=1, sort_keys=True)
  shutil.rmtree(work)
  print("wrote", OUT_DIR)


if __name__ == "__main__":
  main()
