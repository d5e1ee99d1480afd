"""Writes the tf.estimator 2.15 model_dir fixture used by tests/test_interop.py.

Runs ONLY under the reference environment (TensorFlow 2.15 + tensorflow-estimator
2.15, Python 3.11). Regenerate the committed fixture from the repository root with:

    rm -rf tests/data/tf215_model_dir tests/data/tf215_model_dir_expected.json
    /root/.cache/estimator_lite/ref-venv-2.15/bin/python \
        tests/reference/make_tf215_fixture.py tests/data/tf215_model_dir

(`python tests/reference/ref_env.py` prints the reference interpreter's path,
creating the venv first if it is missing.)

What it does, with the linear program of tests/reference/linear_program.py:
  1. trains `tf.estimator.Estimator(linear_model_fn)` for 20 steps
     (RunConfig(save_checkpoints_steps=10)) into MODEL_DIR, so MODEL_DIR holds
     checkpoint, model.ckpt-{0,10,20}.{index,data-00000-of-00001,meta},
     graph.pbtxt and one events file;
  2. copies MODEL_DIR to a temporary directory and resumes training there with
     `tf.estimator.Estimator(linear_model_fn, model_dir=copy)` (default
     RunConfig) up to max_steps=30, recording what tf.estimator did: the
     variables right after the restore, the per-step losses, the variables at
     step 30 and the checkpoint list; written next to MODEL_DIR as
     `<MODEL_DIR>_expected.json`, so the estimator_lite test can compare its own
     resume against tf.estimator's;
  3. checks the `checkpoint` file stores relative paths (tf.estimator's Saver
     uses save_relative_paths=True), so the directory can be moved/committed.
"""
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import linear_program as lp  # pylint: disable=g-import-not-at-top,wrong-import-position

FIRST_STEPS = 20
RESUME_MAX_STEPS = 30
SAVE_CHECKPOINTS_STEPS = 10


def _require_reference_tf():
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if not tf.__version__.startswith("2.15.") or not hasattr(tf, "estimator"):
    sys.exit(f"make_tf215_fixture.py must run under TensorFlow 2.15 with "
             f"tensorflow-estimator (found TensorFlow {tf.__version__}); use "
             f"the reference venv, see `python tests/reference/ref_env.py`.")
  return tf


def _variables(tf, model_dir):
  reader = tf.train.load_checkpoint(model_dir)
  return {name: reader.get_tensor(name).tolist()
          for name in sorted(reader.get_variable_to_shape_map())}


def _estimator(tf, model_dir, config=None):
  return tf.estimator.Estimator(lp.make_linear_model_fn(tf.estimator),
                                model_dir=model_dir, config=config)


def main(argv):
  if len(argv) != 2:
    sys.exit(__doc__)
  model_dir = os.path.abspath(argv[1])
  if os.path.exists(model_dir) and os.listdir(model_dir):
    sys.exit(f"{model_dir} exists and is not empty: remove it first.")
  tf = _require_reference_tf()

  # 1. The fixture itself.
  recorder = lp.make_loss_recorder(tf.estimator)
  config = tf.estimator.RunConfig(save_checkpoints_steps=SAVE_CHECKPOINTS_STEPS)
  _estimator(tf, model_dir, config).train(lp.linear_train_input_fn,
                                          max_steps=FIRST_STEPS, hooks=[recorder])
  state = lp.checkpoint_state(model_dir)
  for path in [state["model_checkpoint_path"]] + state["all_model_checkpoint_paths"]:
    if os.path.isabs(path):
      sys.exit(f"checkpoint file holds an absolute path {path!r}")
  print("fixture files:")
  for name in sorted(os.listdir(model_dir)):
    print(f"  {os.path.getsize(os.path.join(model_dir, name)):8d}  {name}")
  at_20 = _variables(tf, model_dir)

  # 2. What tf.estimator does when it resumes that directory.
  with tempfile.TemporaryDirectory() as tmp:
    resumed_dir = os.path.join(tmp, "model_dir")
    shutil.copytree(model_dir, resumed_dir)
    snapshot = lp.make_variable_snapshot_hook(tf.estimator, ["w", "b", "global_step"])
    resume_recorder = lp.make_loss_recorder(tf.estimator)
    # Default RunConfig, as the estimator_lite test resumes it.
    _estimator(tf, resumed_dir).train(lp.linear_train_input_fn,
                                      max_steps=RESUME_MAX_STEPS,
                                      hooks=[snapshot, resume_recorder])
    expected = {
        "tensorflow_version": tf.__version__,
        "first_run": {"losses": recorder.losses,
                      "checkpoint": state,
                      "variables": at_20},
        "resume": {
            "max_steps": RESUME_MAX_STEPS,
            "start_step": resume_recorder.start_step,
            "restored": {k: v.tolist() for k, v in snapshot.values.items()},
            "losses": resume_recorder.losses,
            "checkpoint": lp.checkpoint_state(resumed_dir),
            "variables": _variables(tf, resumed_dir),
        },
    }
  expected_path = model_dir.rstrip(os.sep) + "_expected.json"
  with open(expected_path, "w") as f:
    json.dump(expected, f, indent=1, sort_keys=True)
    f.write("\n")
  print(f"wrote {model_dir} and {expected_path}")


if __name__ == "__main__":
  main(sys.argv)
