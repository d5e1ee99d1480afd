"""Writes the tf.estimator 2.15 canned-estimator fixtures of tests/canned/test_tf215_compat.py.

Runs ONLY under the reference environment (TensorFlow 2.15 + tensorflow-estimator
2.15, Python 3.11). Regenerate the committed fixtures from the repository root with:

    rm -rf tests/data/canned/tf215
    ~/.cache/estimator_lite/ref-venv-2.15/bin/python \
        tests/reference/make_canned_fixtures.py tests/data/canned/tf215

(`python tests/reference/ref_env.py` prints the reference interpreter's path,
creating the venv first if it is missing.)

For every case of tests/reference/canned_cases.py it
  1. trains the case's tf.estimator canned estimator TRAIN_STEPS steps into
     OUT/<case>/ (RunConfig(tf_random_seed=17, keep_checkpoint_max=1));
  2. trims that directory to what a reader needs: `checkpoint` and the latest
     model.ckpt-N.{index,data-00000-of-00001}. The .meta file, graph.pbtxt and
     the events files go (they are most of the bytes, and restoring a canned
     estimator rebuilds the graph from code: it reads the variables only);
  3. on a copy of it, runs evaluate() (the 8 rows, 2 batches), predict() (6
     rows) and export_saved_model() (a parsing serving receiver) and records
     them in OUT/expected.json with the case description, the checkpoint's
     variable names and shapes (tf.train.list_variables) and the exported
     signatures (names, method names, input and output keys, and which
     signature serving_default repeats).
"""
import json
import os
import shutil
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import canned_cases as cc  # pylint: disable=g-import-not-at-top,wrong-import-position


def _require_reference_tf():
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if not tf.__version__.startswith("2.15.") or not hasattr(tf, "estimator"):
    sys.exit(f"make_canned_fixtures.py must run under TensorFlow 2.15 with "
             f"tensorflow-estimator (found TensorFlow {tf.__version__}); use "
             f"the reference venv, see `python tests/reference/ref_env.py`.")
  tf.get_logger().setLevel("ERROR")
  return tf


def _trim(model_dir):
  """Keeps `checkpoint` and the latest checkpoint's index and data files."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  latest = os.path.basename(tf.train.latest_checkpoint(model_dir))
  keep = {"checkpoint", latest + ".index", latest + ".data-00000-of-00001"}
  for name in os.listdir(model_dir):
    if name not in keep:
      path = os.path.join(model_dir, name)
      if os.path.isdir(path):
        shutil.rmtree(path)
      else:
        os.remove(path)
  assert sorted(os.listdir(model_dir)) == sorted(keep), os.listdir(model_dir)


def run_case(tf, case, model_dir):
  """Evaluates, predicts and exports the estimator of `case` in `model_dir`."""
  estimator = cc.make_estimator(case, tf.estimator, tf.compat.v1.estimator,
                                tf.feature_column, model_dir)
  metrics = estimator.evaluate(cc.eval_input_fn(case))
  predictions = list(estimator.predict(cc.predict_input_fn(case)))
  export_dir = estimator.export_saved_model(
      os.path.join(model_dir, "export"),
      cc.serving_input_receiver_fn(case, tf.estimator, tf.feature_column))
  return {
      "evaluate": cc.to_json(metrics),
      "predict": cc.to_json(predictions),
      "export": cc.export_signatures(export_dir),
  }


def main(argv):
  if len(argv) != 2:
    sys.exit(__doc__)
  out_dir = os.path.abspath(argv[1])
  if os.path.exists(out_dir) and os.listdir(out_dir):
    sys.exit(f"{out_dir} exists and is not empty: remove it first.")
  tf = _require_reference_tf()
  import importlib.metadata  # pylint: disable=g-import-not-at-top
  expected = {
      "tensorflow_version": tf.__version__,
      "tensorflow_estimator_version":
          importlib.metadata.version("tensorflow-estimator"),
      "train_steps": cc.TRAIN_STEPS,
      "cases": {},
  }
  for case in cc.CASES:
    model_dir = os.path.join(out_dir, case)
    estimator = cc.make_estimator(case, tf.estimator, tf.compat.v1.estimator,
                                  tf.feature_column, model_dir)
    estimator.train(cc.train_input_fn(case), steps=cc.TRAIN_STEPS)
    _trim(model_dir)
    with tempfile.TemporaryDirectory() as tmp:
      copy = os.path.join(tmp, case)
      shutil.copytree(model_dir, copy)
      record = run_case(tf, case, copy)
    record["description"] = cc.CASES[case]
    record["variables"] = cc.checkpoint_variables(model_dir)
    expected["cases"][case] = record
    size = sum(os.path.getsize(os.path.join(model_dir, n))
               for n in os.listdir(model_dir))
    print(f"{case}: {len(record['variables'])} variables, {size} bytes, "
          f"signatures {sorted(record['export']['signatures'])}")
  with open(os.path.join(out_dir, "expected.json"), "w") as f:
    json.dump(expected, f, indent=1, sort_keys=True)
    f.write("\n")
  print(f"wrote {out_dir}")


if __name__ == "__main__":
  main(sys.argv)
