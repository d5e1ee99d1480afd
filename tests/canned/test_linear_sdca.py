"""LinearSDCA: the Linear estimators trained with SDCA, against tf.estimator 2.15.

The cases (a binary LinearClassifier, a LinearRegressor with L1, a compat.v1
LinearClassifier, a compat.v1 LinearRegressor with partitioned variables and
a sharded example-state table) and their data are tests/reference/make_sdca_fixture.py's;
tests/data/canned/sdca215/ holds what tf.estimator 2.15 wrote and measured
for them (regenerate with the command in that script's docstring).

  - estimator_lite evaluates, predicts and resumes 2.15's model_dirs (weights,
    unshrunk weights and example-state table restored);
  - estimator_lite trains the same steps from scratch: the same checkpoint
    variables (names, shapes, dtypes), and the optimum 2.15 reached (SDCA's
    kernel visits a batch in random order, so the numbers agree once both
    have converged, which TRAIN_STEPS makes sure of);
  - tf.estimator 2.15 evaluates, predicts and resumes the model_dirs
    estimator_lite wrote (tests/reference/read_sdca_model_dir.py, run in the
    reference venv; the test fails, never skips, when the venv cannot be made)
    for one case of each checkpoint layout (REVERSE_CASES);
  - a LinearEstimator weighs the examples by its head's weight column;
  - end to end: export_saved_model, reload, the same predictions;
  - the constructors' and model_fn's errors (tf.estimator's texts).
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

REFERENCE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                             "reference")
sys.path.insert(0, REFERENCE_DIR)

import estimator_lite as est  # pylint: disable=g-import-not-at-top,wrong-import-position
import make_sdca_fixture as fx  # pylint: disable=g-import-not-at-top,wrong-import-position
import ref_env  # pylint: disable=g-import-not-at-top,wrong-import-position
import tensorflow as tf  # pylint: disable=g-import-not-at-top,wrong-import-position

FIXTURE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                           "data", "canned", "sdca215")
READ_SCRIPT = os.path.join(REFERENCE_DIR, "read_sdca_model_dir.py")
RESUME_STEPS = 3
# One case a checkpoint layout: top level, compat.v1, compat.v1 partitioned
# with a sharded table (the regressor's is the classifier's).
REVERSE_CASES = ("classifier", "classifier_v1", "regressor_v1_sharded")
REF_TIMEOUT_S = 300
ATOL = 1e-4


@pytest.fixture(scope="module")
def expected():
  with open(os.path.join(FIXTURE_DIR, "expected.json")) as f:
    recorded = json.load(f)
  assert recorded["tensorflow"].startswith("2.15.")
  assert recorded["train_steps"] == fx.TRAIN_STEPS
  return recorded["cases"]


def _build(case, model_dir):
  return fx.build_estimator(tf, est, est.compat.v1, case, str(model_dir))


def _assert_close(actual, wanted, what):
  """Nested JSON-like values equal, numbers within ATOL."""
  if isinstance(wanted, dict):
    assert sorted(actual) == sorted(wanted), what
    for key in wanted:
      _assert_close(actual[key], wanted[key], f"{what}[{key!r}]")
  elif isinstance(wanted, list) and wanted and isinstance(wanted[0], (dict, list, str)):
    assert len(actual) == len(wanted), what
    for index, (item, wanted_item) in enumerate(zip(actual, wanted)):
      _assert_close(item, wanted_item, f"{what}[{index}]")
  elif isinstance(wanted, str) or (isinstance(wanted, list) and not wanted):
    assert actual == wanted, what
  else:
    np.testing.assert_allclose(actual, wanted, atol=ATOL, err_msg=what)


def _copy_fixture(case, tmp_path):
  model_dir = tmp_path / case
  fx.unpack_model_dir(os.path.join(FIXTURE_DIR, case), str(model_dir))
  return model_dir


@pytest.mark.parametrize("case", fx.MODEL_DIR_CASES)
def test_reads_and_resumes_tf215_model_dir(case, expected, tmp_path):
  model_dir = _copy_fixture(case, tmp_path)
  estimator = _build(case, model_dir)
  described = fx.describe_model_dir(tf, estimator, str(model_dir), case)
  _assert_close(described["metrics"], expected[case]["metrics"], f"{case} evaluate")
  _assert_close(described["predictions"], expected[case]["predictions"], f"{case} predict")
  # Resuming restores the solver's state too: at the optimum already, a few
  # more steps keep it there (a solver restarted from zero duals would not).
  estimator.train(input_fn=fx.input_fn(tf, case), steps=RESUME_STEPS)
  assert fx.checkpoint_variables(tf, str(model_dir)) == expected[case]["variables"]
  resumed = estimator.evaluate(input_fn=fx.input_fn(tf, case), steps=1)
  wanted = dict(expected[case]["metrics"], global_step=fx.TRAIN_STEPS + RESUME_STEPS)
  _assert_close({key: float(value) for key, value in resumed.items()}, wanted,
                f"{case} evaluate after resuming")


@pytest.fixture(scope="module")
def trained_here(tmp_path_factory):
  """estimator_lite trains every case from scratch: case -> (model_dir, description)."""
  root = tmp_path_factory.mktemp("sdca_lite")
  runs = {}
  for case in fx.CASES:
    model_dir = root / case
    estimator = _build(case, model_dir)
    estimator.train(input_fn=fx.input_fn(tf, case), steps=fx.TRAIN_STEPS)
    runs[case] = (model_dir, fx.describe_model_dir(tf, estimator, str(model_dir), case))
  return runs


@pytest.mark.parametrize("case", fx.CASES)
def test_trains_as_tf215_did(case, expected, trained_here):
  _, described = trained_here[case]
  assert described["variables"] == expected[case]["variables"]
  _assert_close(described["weights"], expected[case]["weights"], f"{case} weights")
  _assert_close(described["metrics"], expected[case]["metrics"], f"{case} evaluate")
  _assert_close(described["predictions"], expected[case]["predictions"], f"{case} predict")


def test_linear_estimator_weighs_examples_by_its_heads_weight_column(expected, tmp_path):
  # A head the user built carries the weight column: SDCA weighs the examples
  # by it, so the optimum is the weighted LinearClassifier's (2.15's numbers).
  optimizer = est.experimental.LinearSDCA(
      example_id_column="example_id", symmetric_l2_regularization=0.5)
  estimator = est.LinearEstimator(
      head=est.BinaryClassHead(weight_column="weights"),
      feature_columns=fx.feature_columns(tf), model_dir=str(tmp_path), optimizer=optimizer)
  estimator.train(input_fn=fx.input_fn(tf, "classifier"), steps=fx.TRAIN_STEPS)
  described = fx.describe_model_dir(tf, estimator, str(tmp_path), "classifier")
  _assert_close(described["weights"], expected["classifier"]["weights"], "weights")


def test_tf215_reads_and_resumes_estimator_lite_model_dirs(expected, trained_here,
                                                           reference_python):
  python = reference_python
  request = {"resume_steps": RESUME_STEPS,
             "cases": {case: str(trained_here[case][0]) for case in REVERSE_CASES}}
  request_path = trained_here[fx.CASES[0]][0].parent / "request.json"
  request_path.write_text(json.dumps(request))
  proc = subprocess.run([python, READ_SCRIPT, str(request_path)], capture_output=True,
                        text=True, timeout=REF_TIMEOUT_S,
                        env=ref_env.subprocess_env(TF_CPP_MIN_LOG_LEVEL="3"))
  assert proc.returncode == 0, proc.stderr[-5000:]
  ref = json.loads(proc.stdout)
  assert ref["tensorflow_version"].startswith("2.15.")
  for case in REVERSE_CASES:
    read = ref["cases"][case]
    assert "error" not in read, f"{case}: {read.get('error')}"
    _, described = trained_here[case]
    _assert_close(read["evaluate"], described["metrics"], f"{case} 2.15 evaluate")
    _assert_close(read["predict"], described["predictions"], f"{case} 2.15 predict")
    resume = read["resume"]
    assert resume["global_step"] == fx.TRAIN_STEPS + RESUME_STEPS
    assert resume["finite"]
    assert resume["variables"] == expected[case]["variables"]


def test_export_reload_predicts_the_same(trained_here, tmp_path):
  case = "classifier"
  model_dir, described = trained_here[case]
  estimator = _build(case, model_dir)
  feature_spec = tf.feature_column.make_parse_example_spec(fx.feature_columns(tf))
  receiver_fn = est.export.build_parsing_serving_input_receiver_fn(feature_spec)
  export_dir = estimator.export_saved_model(str(tmp_path / "export"), receiver_fn)
  assert isinstance(export_dir, bytes)
  loaded = tf.saved_model.load(export_dir.decode())
  examples = []
  for row in range(len(fx.FEATURES["example_id"])):
    feature = {
        "price": tf.train.Feature(float_list=tf.train.FloatList(
            value=fx.FEATURES["price"][row])),
        "sq_footage": tf.train.Feature(float_list=tf.train.FloatList(
            value=fx.FEATURES["sq_footage"][row])),
        "country": tf.train.Feature(bytes_list=tf.train.BytesList(
            value=[value.encode() for value in fx.FEATURES["country"][row]])),
    }
    examples.append(tf.train.Example(features=tf.train.Features(feature=feature))
                    .SerializeToString())
  outputs = loaded.signatures["predict"](examples=tf.constant(examples))
  np.testing.assert_allclose(
      outputs["logistic"].numpy().reshape(-1),
      [row["logistic"][0] for row in described["predictions"]], atol=ATOL)
  assert sorted(loaded.signatures) == ["classification", "predict", "regression",
                                       "serving_default"]


def test_constructor_errors():
  columns = fx.feature_columns(tf)
  sdca = est.experimental.LinearSDCA(example_id_column="example_id")
  with pytest.raises(ValueError, match="LinearSDCA cannot be used in a multi-class setting."):
    est.LinearClassifier(feature_columns=columns, n_classes=3, optimizer=sdca)
  with pytest.raises(ValueError, match="LinearSDCA cannot be used in a multi-class setting."):
    est.compat.v1.LinearClassifier(feature_columns=columns, n_classes=3, optimizer=sdca)
  with pytest.raises(ValueError, match='sparse_combiner must be "sum" when optimizer is a '
                                       "LinearSDCA object."):
    est.LinearRegressor(feature_columns=columns, optimizer=sdca, sparse_combiner="mean")
  with pytest.raises(ValueError, match="LinearSDCA can only be used with one-dimensional "
                                       "label."):
    est.LinearRegressor(feature_columns=columns, label_dimension=2, optimizer=sdca)
  # v1-only columns (shared embeddings of tf.compat.v1, made in a graph).
  with tf.Graph().as_default():
    v1_columns = tf.compat.v1.feature_column.shared_embedding_columns(
        [tf.compat.v1.feature_column.categorical_column_with_identity("a", 3),
         tf.compat.v1.feature_column.categorical_column_with_identity("b", 3)], dimension=2)
  with pytest.raises(ValueError, match="V2 feature columns required when optimizer is a "
                                       "LinearSDCA object."):
    est.compat.v1.LinearRegressor(feature_columns=v1_columns, optimizer=sdca)


def test_model_fn_errors(tmp_path):
  price = tf.feature_column.numeric_column("price")
  sdca = est.experimental.LinearSDCA(example_id_column="id")
  classifier = est.LinearClassifier(feature_columns=[price], optimizer=sdca,
                                    model_dir=str(tmp_path / "no_ids"))
  with pytest.raises(KeyError, match="'id': LinearSDCA"):
    classifier.train(input_fn=lambda: ({"price": tf.constant([[1.0]])}, tf.constant([[1]])),
                     steps=1)
  no_l2 = est.LinearRegressor(
      feature_columns=[price], model_dir=str(tmp_path / "no_l2"),
      optimizer=est.experimental.LinearSDCA(example_id_column="id",
                                            symmetric_l2_regularization=0.0))
  with pytest.raises(ValueError, match="symmetric_l2_regularization should be positive."):
    no_l2.train(input_fn=lambda: ({"price": tf.constant([[1.0]]), "id": tf.constant(["1"])},
                                  tf.constant([[1.0]])), steps=1)
  multi_class = est.LinearEstimator(head=est.MultiClassHead(n_classes=3),
                                    feature_columns=[price], optimizer=sdca,
                                    model_dir=str(tmp_path / "multi_class"))
  with pytest.raises(ValueError, match="Unsupported head type"):
    multi_class.train(input_fn=lambda: ({"price": tf.constant([[1.0]]),
                                         "id": tf.constant(["1"])}, tf.constant([[1]])),
                      steps=1)
