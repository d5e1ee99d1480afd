"""RNNClassifier and RNNEstimator against tf.estimator 2.15, both ways, and end to end.

* tf.estimator -> estimator_lite: tests/data/canned/rnn215/ holds model_dirs
  tf.estimator 2.15 trained (tests/reference/make_rnn_fixture.py, its
  docstring has the command) and what 2.15 did with them (evaluate, predict,
  the checkpoint's variables, the export's signatures and served
  predictions). estimator_lite evaluates, predicts, exports and serves from a
  copy without training first, then resumes training it.
* estimator_lite -> tf.estimator: estimator_lite trains the REVERSE_CASES
  into fresh model_dirs (the checkpoints' variables are 2.15's, names and
  shapes); tests/reference/read_rnn_model_dir.py, run once in the
  reference venv (TensorFlow 2.15 + tf.estimator, created when missing, see
  tests/reference/ref_env.py; the test fails, never skips, when it cannot be),
  evaluates, predicts and resumes training there.
* end to end: train, evaluate, export with a parsing receiver (sequence
  features parsed as variable-length lists), reload the SavedModel, serve
  the same predictions as `predict()`.

Numbers agree within 1e-4 (relative above 1); keys, names and shapes exactly.
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

TESTS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REFERENCE_DIR = os.path.join(TESTS_DIR, "reference")
FIXTURE_DIR = os.path.join(TESTS_DIR, "data", "canned", "rnn215")
READ_SCRIPT = os.path.join(REFERENCE_DIR, "read_rnn_model_dir.py")
sys.path.insert(0, REFERENCE_DIR)

import estimator_lite as est  # pylint: disable=g-import-not-at-top,wrong-import-position
import make_rnn_fixture as fixture  # pylint: disable=g-import-not-at-top,wrong-import-position
import ref_env  # pylint: disable=g-import-not-at-top,wrong-import-position
import tensorflow as tf  # pylint: disable=g-import-not-at-top,wrong-import-position
import tf_keras  # pylint: disable=g-import-not-at-top,wrong-import-position
from estimator_lite.canned import rnn  # pylint: disable=g-import-not-at-top,wrong-import-position
from estimator_lite.head import sequential_head  # pylint: disable=g-import-not-at-top,wrong-import-position

TOL = 1e-4
RESUME_STEPS = 2
REF_TIMEOUT_S = 300
CASES = sorted(fixture.CASES)
# The cases tf.estimator 2.15 reads back (for time; the checkpoint the LSTM/Adam
# case's resume writes has 2.15's names and shapes too).
REVERSE_CASES = ["rnn_classifier", "rnn_estimator_sequential"]


@pytest.fixture(scope="module")
def expected():
  with open(os.path.join(FIXTURE_DIR, "expected.json")) as f:
    return json.load(f)


def _build(case, model_dir):
  heads = fixture.heads(est.BinaryClassHead, sequential_head.SequentialHeadWrapper)
  return fixture.make_estimator(case, est.experimental, heads, tf.feature_column,
                                str(model_dir))


def _compare(want, got, where):
  """The differences between two JSON values (numbers within TOL, relative above 1)."""
  if isinstance(want, dict):
    if not isinstance(got, dict) or sorted(want) != sorted(got):
      return [f"{where}: keys {sorted(got) if isinstance(got, dict) else got!r}, "
              f"expected {sorted(want)}"]
    return [diff for key in want for diff in _compare(want[key], got[key], f"{where}.{key}")]
  if isinstance(want, list):
    if not isinstance(got, list) or len(want) != len(got):
      return [f"{where}: {got!r}, expected {want!r}"]
    return [diff for i, (w, g) in enumerate(zip(want, got))
            for diff in _compare(w, g, f"{where}[{i}]")]
  if isinstance(want, (int, float)) and not isinstance(want, bool):
    if not isinstance(got, (int, float)) or abs(want - got) > TOL * max(1.0, abs(want)):
      return [f"{where}: {got!r}, expected {want!r}"]
    return []
  return [] if want == got else [f"{where}: {got!r}, expected {want!r}"]


def _variables(model_dir):
  return {name: shape for name, shape in tf.train.list_variables(str(model_dir))}


def _serve(export_dir):
  """The export's signature names and its predict signature's outputs for the fixture's rows."""
  loaded = tf.saved_model.load(export_dir)
  served = loaded.signatures["predict"](examples=tf.constant(fixture.serialized_examples(tf)))
  return (sorted(loaded.signatures.keys()),
          fixture.to_json({key: value.numpy() for key, value in served.items()}))


def _receiver_fn(case):
  return est.export.build_parsing_serving_input_receiver_fn(
      fixture.parse_spec(tf.feature_column, case))


@pytest.mark.parametrize("case", CASES)
def test_tf215_model_dir_evaluates_predicts_serves_and_resumes(case, expected, tmp_path):
  want = expected["cases"][case]
  model_dir = tmp_path / case
  shutil.copytree(os.path.join(FIXTURE_DIR, case), model_dir)
  estimator = _build(case, model_dir)

  assert _variables(model_dir) == want["variables"]
  diffs = _compare(want["evaluate"],
                   fixture.to_json(estimator.evaluate(fixture.input_fn(tf, case))), "evaluate")
  diffs += _compare(want["predict"], fixture.to_json(list(estimator.predict(
      fixture.input_fn(tf, case, with_labels=False)))), "predict")
  if case != "rnn_classifier_lstm":  # The same export as rnn_classifier's: time saved.
    signatures, served = _serve(estimator.export_saved_model(str(tmp_path / "export"),
                                                             _receiver_fn(case)).decode())
    diffs += _compare(want["signatures"], signatures, "signatures")
    diffs += _compare(want["served_predict"], served, "served_predict")
  assert not diffs, "\n".join(diffs)

  estimator.train(fixture.input_fn(tf, case, repeat=True), steps=RESUME_STEPS)
  assert estimator.get_variable_value("global_step") == fixture.TRAIN_STEPS + RESUME_STEPS
  assert _variables(model_dir) == want["variables"]
  reader = tf.train.load_checkpoint(str(model_dir))
  assert all(np.all(np.isfinite(reader.get_tensor(name))) for name in want["variables"])


def test_tf215_reads_and_resumes_estimator_lite_model_dirs(expected, tmp_path, reference_python):
  python = reference_python
  lite = {}
  request = {"resume_steps": RESUME_STEPS, "cases": {}}
  for case in REVERSE_CASES:
    model_dir = tmp_path / case
    estimator = _build(case, model_dir)
    estimator.train(fixture.input_fn(tf, case, repeat=True), steps=fixture.TRAIN_STEPS)
    # The same variables (names, shapes) as tf.estimator's model_dir of the case.
    assert _variables(model_dir) == expected["cases"][case]["variables"], case
    lite[case] = {
        "evaluate": fixture.to_json(estimator.evaluate(fixture.input_fn(tf, case))),
        "predict": fixture.to_json(list(estimator.predict(
            fixture.input_fn(tf, case, with_labels=False)))),
    }
    request["cases"][case] = str(model_dir)
  request_path = tmp_path / "request.json"
  request_path.write_text(json.dumps(request))
  run = subprocess.run([python, READ_SCRIPT, str(request_path)], capture_output=True,
                       text=True, timeout=REF_TIMEOUT_S, check=False,
                       env=ref_env.subprocess_env(TF_CPP_MIN_LOG_LEVEL="3"))
  assert run.returncode == 0, run.stderr[-4000:]
  ref = json.loads(run.stdout.strip().splitlines()[-1])
  assert ref["tensorflow_version"].startswith("2.15.")

  diffs = []
  for case in REVERSE_CASES:
    got = ref["cases"][case]
    if "error" in got:
      diffs.append(f"{case}: tf.estimator 2.15 raised:\n{got['error']}")
      continue
    diffs += _compare(lite[case]["evaluate"], got["evaluate"], f"{case}.evaluate")
    diffs += _compare(lite[case]["predict"], got["predict"], f"{case}.predict")
    resume = got["resume"]
    diffs += _compare(fixture.TRAIN_STEPS + RESUME_STEPS, resume["global_step"],
                      f"{case}.resume.global_step")
    diffs += _compare(expected["cases"][case]["variables"], resume["variables"],
                      f"{case}.resume.variables")
    if not resume["finite"]:
      diffs.append(f"{case}: variables not finite after 2.15 resumed training")
  assert not diffs, "\n".join(diffs)


def test_train_evaluate_export_reload_serves_predictions(tmp_path):
  """A sequential RNNClassifier with per-step weights, from scratch to a reloaded SavedModel."""
  columns = fixture.feature_columns(tf.feature_column)
  classifier = est.experimental.RNNClassifier(
      sequence_feature_columns=[columns["x"], columns["t_embedding"]],
      context_feature_columns=[columns["c"]], units=[3], cell_type="gru",
      return_sequences=True, weight_column="step_weight", model_dir=str(tmp_path / "model"),
      optimizer=lambda: tf_keras.optimizers.legacy.Adam(0.1),
      config=est.RunConfig(tf_random_seed=7))  # A deterministic start: the loss check.
  step_weights = [[float(j + 1) for j in range(len(row))] for row in fixture.SEQUENCES["x"]]

  def input_fn():
    features = fixture.features(tf)
    features["step_weight"] = tf.constant(
        [row + [0.0] * (fixture.MAX_STEPS - len(row)) for row in step_weights])
    return tf.data.Dataset.from_tensors((features, tf.constant(fixture.STEP_LABELS)))

  classifier.train(lambda: input_fn().repeat(), steps=20)
  metrics = classifier.evaluate(input_fn)
  assert metrics["global_step"] == 20
  # Only the 12 real steps count, weighted: the padding's label 0 is not in
  # the label mean.
  real = [(w, label) for row_w, row_l in zip(step_weights, fixture.STEP_LABELS)
          for w, label in zip(row_w, row_l)]
  label_mean = sum(w * label for w, label in real) / sum(w for w, _ in real)
  assert metrics["label/mean"] == pytest.approx(label_mean, rel=1e-5)
  assert metrics["loss"] < 0.69

  predictions = list(classifier.predict(
      lambda: tf.data.Dataset.from_tensors(fixture.features(tf))))
  assert len(predictions) == 6
  assert predictions[0]["probabilities"].shape == (fixture.MAX_STEPS, 2)
  np.testing.assert_array_equal(
      [p["sequence_mask"] for p in predictions],
      [[j < len(row) for j in range(fixture.MAX_STEPS)] for row in fixture.SEQUENCES["x"]])

  spec = tf.feature_column.make_parse_example_spec(
      [columns["x"], columns["t_embedding"], columns["c"]])
  export_dir = classifier.export_saved_model(
      str(tmp_path / "export"), est.export.build_parsing_serving_input_receiver_fn(spec))
  assert isinstance(export_dir, bytes)
  signatures, served = _serve(export_dir.decode())
  assert signatures == ["classification", "predict", "regression", "serving_default"]
  for key in ("logits", "probabilities", "class_ids"):
    np.testing.assert_allclose(served[key], np.stack([p[key] for p in predictions]),
                               atol=TOL)


@pytest.mark.parametrize("make, error, text", [
    (lambda c: est.experimental.RNNClassifier(c, units=[2], rnn_cell_fn=lambda: None),
     ValueError, "units and cell_type must not be specified when using rnn_cell_fn"),
    (lambda c: est.experimental.RNNClassifier(c, cell_type="lstm", rnn_cell_fn=lambda: None),
     ValueError, "units and cell_type must not be specified when using rnn_cell_fn"),
    (lambda c: est.experimental.RNNEstimator(est.MultiClassHead(3), c, units=[2],
                                             return_sequences=True),
     ValueError, "Provided head must be a `_SequentialHead` object when `return_sequences` "
                 "is set to True."),
    (lambda c: sequential_head.SequentialHeadWrapper(est.MultiHead([est.BinaryClassHead(
        name="a")])), ValueError, "`MultiHead` is not supported with `SequentialHeadWrapper`."),
    (lambda c: sequential_head.SequentialHeadWrapper(est.BinaryClassHead(), 1), TypeError,
     "`sequence_mask` column must be a string."),
])
def test_bad_arguments_raise_215_texts(make, error, text):
  with pytest.raises(error, match=text.replace("`", ".").replace("(", ".").replace(")", ".")):
    make([fixture.feature_columns(tf.feature_column)["x"]])


def test_rnn_layers_and_cells_from_arguments():
  simple = rnn.make_rnn_layer(None, [3], rnn.USE_DEFAULT, return_sequences=False)
  assert isinstance(simple, tf_keras.layers.RNN)
  assert isinstance(simple.cell, tf_keras.layers.SimpleRNNCell)
  stacked = rnn.make_rnn_layer(None, [3, 2], "gru", return_sequences=True)
  assert isinstance(stacked.cell, tf_keras.layers.StackedRNNCells)
  assert [type(c) for c in stacked.cell.cells] == [tf_keras.layers.GRUCell] * 2
  assert stacked.return_sequences
  assert isinstance(rnn.make_rnn_layer(None, 3, "lstm", False), tf_keras.layers.LSTM)
  with pytest.raises(ValueError, match="`cell_type` should be a class producing a RNN cell"):
    rnn.make_rnn_layer(None, [3], "unknown", False)
  with pytest.raises(ValueError, match="RNN cell should have a `call` and `state_size` method"):
    rnn.make_rnn_layer(None, [3], lambda units: object(), False)
