"""The canned estimators' graphs hold tf.estimator 2.15's tensor names.

Programs name a canned estimator's tensors in hooks: tensorflow/models' r1
wide_deep example trains a v1 DNNLinearCombinedClassifier with
`LoggingTensorHook(tensors={'average_loss': 'head/truediv', 'loss':
'head/weighted_loss/Sum'})`, and dies with a KeyError where those tensors do
not exist.

* tests/data/graph_names_215.json lists, per canned estimator (v1 and v2 DNN,
  Linear, DNNLinearCombined and Baseline; binary, 3-class, regression, and
  a few with string labels and example weights) and mode, the tensors tf.estimator 2.15's graph holds under the selection rule
  of tests/reference/make_graph_names_fixture.py (the spec's tensors, the
  summaries' inputs, the head's direct ops); that script, run in the
  reference venv, wrote it (its docstring has the command). estimator_lite
  builds the same graphs with the same functions, and every listed name must
  exist with the same dtype and static shape.
* The wide_deep program itself: its hook runs and logs both values, and they
  are the spec's loss and that loss over the summed example weights.
"""
import json
import os
import sys

import numpy as np
import pytest

TESTS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TESTS_DIR, "reference"))

import estimator_lite as est  # pylint: disable=g-import-not-at-top,wrong-import-position
import make_graph_names_fixture as names_fixture  # pylint: disable=g-import-not-at-top,wrong-import-position
import tensorflow as tf  # pylint: disable=g-import-not-at-top,wrong-import-position

FIXTURE = os.path.join(TESTS_DIR, "data", "graph_names_215.json")


@pytest.fixture(scope="module")
def expected():
  with open(FIXTURE) as f:
    return json.load(f)


def _lookup(graph, name):
  """{"dtype", "shape"} of `name` (a tensor or an op name) in `graph`, or None if absent."""
  try:
    value = graph.as_graph_element(name)
  except (KeyError, ValueError):
    return None
  return names_fixture.describe(value)


def test_fixture_covers_every_case(expected):
  assert expected["tensorflow_version"].startswith("2.15.")
  assert sorted(expected["graphs"]) == sorted(names_fixture.CASES)
  # The name the wide_deep example logs is among them.
  assert "head/truediv:0" in expected["graphs"]["v1_DNNLinearCombined_binary"]["train"]


@pytest.mark.parametrize("case", names_fixture.CASES)
def test_graph_holds_tf215_names(case, expected, tmp_path):
  estimator = names_fixture.make_estimator(case, est, est.compat.v1, tf.feature_column,
                                           str(tmp_path))
  differences = []
  for mode in names_fixture.MODES:
    graph, _ = names_fixture.build_graph(tf, estimator, case, mode)
    for name, want in expected["graphs"][case][mode].items():
      got = _lookup(graph, name)
      if got != want:
        differences.append(f"{mode} {name}: want {want}, got {got or 'no such tensor'}")
  assert not differences, f"{case}: {len(differences)} differences:\n" + "\n".join(differences)


# tensorflow/models' official/r1/wide_deep: the hook it trains with.
WIDE_DEEP_TENSORS = {"average_loss": "head/truediv", "loss": "head/weighted_loss/Sum"}
TRAIN_STEPS = 4


def test_wide_deep_logging_hook_logs_tf215_tensors(tmp_path, read_scalars, tf_logs):
  x = tf.feature_column.numeric_column("x", shape=(2,))
  c = tf.feature_column.categorical_column_with_vocabulary_list("c", ["a", "b", "c"])
  classifier = est.compat.v1.DNNLinearCombinedClassifier(
      model_dir=str(tmp_path), linear_feature_columns=[x, c], dnn_feature_columns=[x],
      dnn_hidden_units=[3],
      config=est.RunConfig(tf_random_seed=17, save_summary_steps=1))
  logged = []

  def formatter(values):
    logged.append(dict(values))
    return f"wide_deep average_loss = {values['average_loss']}, loss = {values['loss']}"

  hook = est.LoggingTensorHook(tensors=WIDE_DEEP_TENSORS, every_n_iter=1, formatter=formatter)

  def input_fn():
    features = {key: tf.constant(value) for key, value in names_fixture.FEATURES.items()}
    labels = tf.constant(names_fixture.LABELS["binary"])
    return tf.data.Dataset.from_tensor_slices((features, labels)).batch(
        names_fixture.BATCH_SIZE).repeat()

  classifier.train(input_fn, steps=TRAIN_STEPS, hooks=[hook])

  assert len(logged) == TRAIN_STEPS
  assert "wide_deep average_loss = " in tf_logs.text
  # The spec's loss is what the `loss` summary records each step (SUM
  # reduction: head/weighted_loss/Sum is that loss), and `average_loss` is it
  # over the summed example weights (no weight column: the batch size).
  scalars = read_scalars(str(tmp_path))
  spec_losses = [value for _, value in sorted(scalars["loss"])]
  summary_average_losses = [value for _, value in sorted(scalars["average_loss"])]
  np.testing.assert_allclose([values["loss"] for values in logged], spec_losses, rtol=1e-6)
  np.testing.assert_allclose([values["average_loss"] for values in logged],
                             np.array(spec_losses) / names_fixture.BATCH_SIZE, rtol=1e-6)
  np.testing.assert_allclose(summary_average_losses,
                             np.array(spec_losses) / names_fixture.BATCH_SIZE, rtol=1e-6)
