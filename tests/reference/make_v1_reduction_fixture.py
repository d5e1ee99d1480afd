"""Records tf.estimator 2.15's compat.v1 canned classes under each v1 loss reduction.

Runs ONLY under the reference environment (TensorFlow 2.15 + tensorflow-estimator
2.15). From the repository root:

    ~/.cache/estimator_lite/ref-venv-2.15/bin/python \
        tests/reference/make_v1_reduction_fixture.py tests/data/v1_reduction_expected.json

Each case (`CASES`: a v1 LinearClassifier with a label vocabulary, a v1
LinearRegressor with two targets, a 3-class v1 DNNClassifier with a seed)
has a weight column with a zero weight, so MEAN and SUM_BY_NONZERO_WEIGHTS
differ; it is trained TRAIN_STEPS steps (one 8-row batch a step, a summary
every step) with each of `REDUCTIONS`, and records the `loss` summary of each
step, the training summary tags, the final variables and evaluate()'s dict.

tests/canned/test_v1_reductions.py runs the same cases (`run_case`) with
estimator_lite.compat.v1 and compares. Nothing at module level imports
TensorFlow or an estimator package, so the test imports this file too.
"""
import glob
import json
import os
import sys
import tempfile

TRAIN_STEPS = 3
REDUCTIONS = ("SUM", "MEAN", "SUM_OVER_BATCH_SIZE", "SUM_BY_NONZERO_WEIGHTS")
CASES = ("linear_classifier", "linear_regressor", "dnn_classifier")

X = [[0.2, 1.0], [0.5, 0.2], [0.9, 0.5], [0.1, 0.3], [0.7, 0.8], [0.3, 0.1],
     [0.8, 0.9], [0.4, 0.4]]
W = [[1.0], [2.0], [0.0], [1.0], [1.5], [0.5], [2.0], [1.0]]
LABELS = {
    "linear_classifier": [["yes"], ["no"], ["yes"], ["no"], ["yes"], ["no"], ["yes"], ["yes"]],
    "linear_regressor": [[1.0, 0.5], [2.0, -1.0], [0.5, 0.0], [1.5, 2.0], [0.0, 1.0],
                         [1.0, 1.0], [2.5, -0.5], [0.3, 0.2]],
    "dnn_classifier": [[0], [2], [1], [0], [2], [1], [1], [0]],
}


def input_fn(case, tf, repeat):
  def fn():
    labels = tf.constant(LABELS[case])
    data = tf.data.Dataset.from_tensors(
        ({"x": tf.constant(X), "w": tf.constant(W)}, labels))
    return data.repeat() if repeat else data
  return fn


def _summaries(tf, model_dir):
  """(the `loss` summary by step, every scalar tag) of the training events files."""
  losses, tags = {}, set()
  for path in sorted(glob.glob(os.path.join(model_dir, "events.out.tfevents.*"))):
    for event in tf.compat.v1.train.summary_iterator(path):
      for value in event.summary.value:
        tags.add(value.tag)
        if value.tag == "loss":
          losses[event.step] = float(value.simple_value)
  return [losses[step] for step in sorted(losses)], sorted(tags)


def _plain(value):
  if hasattr(value, "tolist"):
    value = value.tolist()
  if isinstance(value, bytes):
    return value.decode()
  return value


def run_case(case, reduction, v1, tf, run_config, model_dir):
  """Trains and evaluates one case; returns the record the fixture holds.

  Args:
    case: a name in CASES.
    reduction: a name in REDUCTIONS.
    v1: tf.compat.v1.estimator or estimator_lite.compat.v1.
    tf: tensorflow.
    run_config: the RunConfig class of that package.
    model_dir: a new directory.
  """
  loss_reduction = getattr(tf.compat.v1.losses.Reduction, reduction)
  columns = [tf.feature_column.numeric_column("x", shape=(2,))]
  config = run_config(tf_random_seed=7, save_summary_steps=1, log_step_count_steps=1000)
  if case == "linear_classifier":
    estimator = v1.LinearClassifier(columns, model_dir=model_dir, weight_column="w",
                                    label_vocabulary=["no", "yes"], config=config,
                                    loss_reduction=loss_reduction)
  elif case == "linear_regressor":
    estimator = v1.LinearRegressor(columns, model_dir=model_dir, weight_column="w",
                                   label_dimension=2, config=config,
                                   loss_reduction=loss_reduction)
  else:
    estimator = v1.DNNClassifier([4], columns, model_dir=model_dir, n_classes=3,
                                 weight_column="w", config=config,
                                 loss_reduction=loss_reduction)
  estimator.train(input_fn(case, tf, repeat=True), steps=TRAIN_STEPS)
  losses, tags = _summaries(tf, model_dir)
  variables = {name: _plain(estimator.get_variable_value(name))
               for name in estimator.get_variable_names()}
  metrics = {key: _plain(value)
             for key, value in estimator.evaluate(input_fn(case, tf, repeat=False)).items()}
  return {"losses": losses, "summary_tags": tags, "variables": variables, "evaluate": metrics}


def main(out_path):
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  v1 = tf.compat.v1.estimator
  record = {}
  with tempfile.TemporaryDirectory() as root:
    for case in CASES:
      for reduction in REDUCTIONS:
        record[f"{case}/{reduction}"] = run_case(
            case, reduction, v1, tf, v1.RunConfig, os.path.join(root, case, reduction))
  with open(out_path, "w") as f:
    json.dump({"tensorflow": tf.__version__, "cases": record}, f, indent=1, sort_keys=True)
    f.write("\n")


if __name__ == "__main__":
  main(sys.argv[1])
