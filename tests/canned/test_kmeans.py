"""KMeansClustering (tf.compat.v1.estimator.experimental.KMeans) against tf.estimator 2.15.

Both directions of checkpoint interoperability, on the cases of
tests/reference/make_kmeans_fixture.py (full batch with k-means++, mini-batch
cosine over a feature dict, mini-batch over feature columns from given
centers):
* the model_dirs in tests/data/canned/kmeans215/ were trained by tf.estimator
  2.15 (the fixture script's docstring has the command); estimator_lite
  loads a copy and must give the centers, score, cluster indices, transform,
  metrics and served signatures 2.15 recorded in expected.json (within 1e-4),
  then resume training to the same centers;
* estimator_lite trains the same cases; tests/reference/read_kmeans_model_dir.py,
  run with the reference python (tests/reference/ref_env.py; the test fails,
  never skips, without it), reads them with tf.estimator 2.15, which must
  give estimator_lite's numbers and resume to the centers estimator_lite
  resumes to.
Plus an end-to-end run here: train, score, predict, export, reload the
SavedModel and compare its answers to predict's.
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

TESTS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE_DIR = os.path.join(TESTS_DIR, "data", "canned", "kmeans215")
READ_SCRIPT = os.path.join(TESTS_DIR, "reference", "read_kmeans_model_dir.py")
sys.path.insert(0, os.path.join(TESTS_DIR, "reference"))

import estimator_lite as est  # pylint: disable=g-import-not-at-top,wrong-import-position
from estimator_lite.canned import kmeans  # pylint: disable=g-import-not-at-top,wrong-import-position
import make_kmeans_fixture as fixture  # pylint: disable=g-import-not-at-top,wrong-import-position
import ref_env  # pylint: disable=g-import-not-at-top,wrong-import-position
import tensorflow as tf  # pylint: disable=g-import-not-at-top,wrong-import-position

KMeans = kmeans.KMeansClustering
TOL = 1e-4
REF_TIMEOUT_S = 300
CASES = sorted(fixture.CASES)
# TensorFlow's mini-batch update (clustering_ops, 2.15's and 2.21's alike)
# gathers the cluster counts and scatter-adds to them in one step with
# nothing ordering the two, so a step's learning rate is 1/(count + n) or
# 1/(count + 2n) by chance: resumed mini-batch centers agree only to this
# (absolute; on these points one step's two outcomes differ by up to 0.1).
# Full-batch steps are deterministic (TOL).
MINI_BATCH_RACE_ATOL = 0.15
MINI_BATCH_CASES = {case for case, (_, kwargs) in fixture.CASES.items()
                    if kwargs["use_mini_batch"]}
# The reverse direction reads two cases (2.15's start-up dominates): the
# deterministic full batch and the mini-batch case with the most variables.
REVERSE_CASES = ["full_batch_kmeans_plus_plus", "mini_batch_cosine"]


@pytest.fixture(scope="module")
def expected():
  with open(os.path.join(FIXTURE_DIR, "expected.json")) as f:
    return json.load(f)


def _assert_close(actual, wanted, where="", atol=None):
  """Same structure; numbers within TOL (relative above 1) or atol, other values equal."""
  if isinstance(wanted, dict):
    assert sorted(actual) == sorted(wanted), where
    for key in wanted:
      _assert_close(actual[key], wanted[key], f"{where}/{key}", atol)
  elif isinstance(wanted, list):
    assert isinstance(actual, list) and len(actual) == len(wanted), (where, actual, wanted)
    for index, (a, w) in enumerate(zip(actual, wanted)):
      _assert_close(a, w, f"{where}[{index}]", atol)
  elif isinstance(wanted, float):
    allowed = TOL * max(1.0, abs(wanted)) if atol is None else atol
    assert abs(actual - wanted) <= allowed, (where, actual, wanted)
  else:
    assert actual == wanted, (where, actual, wanted)


def _estimator(case, model_dir):
  return fixture.make_estimator(case, KMeans, tf.feature_column, np, str(model_dir))


def _served_by_export(estimator, case, export_base):
  export_dir = estimator.export_saved_model(
      str(export_base), fixture.serving_input_receiver_fn(tf, est.export, case))
  assert isinstance(export_dir, bytes)  # as 2.15 returned it
  return fixture.served(tf, export_dir.decode(), case)


def _resume(estimator, case):
  estimator.train(fixture.train_input_fn(tf, case), steps=fixture.RESUME_STEPS)
  return {
      "global_step": int(estimator.get_variable_value("global_step")),
      "cluster_centers": fixture.to_json(estimator.cluster_centers()),
  }


def _resume_atol(case):
  return MINI_BATCH_RACE_ATOL if case in MINI_BATCH_CASES else None


@pytest.mark.parametrize("case", CASES)
def test_tf215_model_dir_gives_its_outputs_and_resumes(case, expected, tmp_path):
  """2.15's model_dir: 2.15's centers, score, indices, transform, metrics, signatures; resumes."""
  wanted = expected["cases"][case]
  model_dir = tmp_path / case
  shutil.copytree(os.path.join(FIXTURE_DIR, case), model_dir)
  estimator = _estimator(case, model_dir)

  outputs = fixture.outputs(tf, case, estimator)
  for key in ("cluster_centers", "score", "predict_cluster_index", "transform", "evaluate"):
    _assert_close(outputs[key], wanted[key], key)
  _assert_close(_served_by_export(estimator, case, tmp_path / "export"), wanted["served"],
                "served")
  _assert_close(_resume(estimator, case), wanted["resumed"], "resumed", _resume_atol(case))
  # Resuming rewrote the checkpoint with 2.15's variables, shapes and dtypes.
  assert fixture.checkpoint_variables(tf, str(model_dir)) == wanted["variables"]


@pytest.fixture(scope="module")
def reverse_runs(tmp_path_factory, reference_python):
  """estimator_lite trains every case; tf.estimator 2.15 then reads the model_dirs.

  Returns:
    (lite, ref): per case, what estimator_lite gives from its model_dir (and
    its own resumption of a copy), and what read_kmeans_model_dir.py printed.
  """
  python = reference_python
  root = tmp_path_factory.mktemp("lite_kmeans")
  lite = {}
  request = {"resume_steps": fixture.RESUME_STEPS, "cases": {}}
  for case in REVERSE_CASES:
    model_dir = root / case
    estimator = _estimator(case, model_dir)
    estimator.train(fixture.train_input_fn(tf, case), steps=fixture.TRAIN_STEPS)
    record = fixture.outputs(tf, case, estimator)
    record["variables"] = fixture.checkpoint_variables(tf, str(model_dir))
    # 2.15 resumes model_dir itself; estimator_lite resumes a copy of it.
    resumed_dir = root / (case + "_resumed_here")
    shutil.copytree(model_dir, resumed_dir)
    record["resumed"] = _resume(_estimator(case, resumed_dir), case)
    lite[case] = record
    request["cases"][case] = str(model_dir)
  request_path = root / "request.json"
  request_path.write_text(json.dumps(request))
  try:
    proc = subprocess.run([python, READ_SCRIPT, str(request_path)],
                          capture_output=True, text=True, timeout=REF_TIMEOUT_S,
                          env=ref_env.subprocess_env(TF_CPP_MIN_LOG_LEVEL="3"))
  except subprocess.TimeoutExpired as e:
    pytest.fail(f"read_kmeans_model_dir.py ran past {REF_TIMEOUT_S} s:\n{e.stderr}",
                pytrace=False)
  if proc.returncode != 0:
    pytest.fail(f"read_kmeans_model_dir.py failed (exit {proc.returncode}):\n"
                f"{proc.stderr[-5000:]}", pytrace=False)
  ref = json.loads(proc.stdout)
  assert ref["tensorflow_version"].startswith("2.15.")
  return lite, ref["cases"]


@pytest.mark.parametrize("case", REVERSE_CASES)
def test_tf215_reads_and_resumes_estimator_lite_model_dir(case, expected, reverse_runs):
  """estimator_lite's model_dir: 2.15's variables; 2.15 gives the same outputs and resumes alike."""
  lite, ref = reverse_runs
  assert "error" not in ref[case], (
      f"tf.estimator 2.15 could not read estimator_lite's {case} model_dir:\n"
      f"{ref[case]['error']}")
  assert lite[case]["variables"] == expected["cases"][case]["variables"]
  if case not in MINI_BATCH_CASES:
    # Seeded k-means++ and full-batch steps are deterministic: estimator_lite
    # trained from scratch to the model 2.15 trained.
    for key in ("cluster_centers", "score", "predict_cluster_index", "transform"):
      _assert_close(lite[case][key], expected["cases"][case][key], key)
  for key in ("cluster_centers", "score", "predict_cluster_index", "transform", "evaluate"):
    _assert_close(ref[case][key], lite[case][key], key)
  # 2.15's export of estimator_lite's checkpoint serves what 2.15's own did
  # (same signatures, and the same answers where the centers are the same).
  assert sorted(ref[case]["served"]) == sorted(expected["cases"][case]["served"])
  resumed = dict(ref[case]["resumed"])
  assert resumed.pop("variables") == expected["cases"][case]["variables"]
  _assert_close(resumed, lite[case]["resumed"], "resumed", _resume_atol(case))


def _points_input_fn(points, batch_size=None):
  def input_fn():
    dataset = tf.data.Dataset.from_tensor_slices(points)
    return dataset.batch(batch_size or len(points))
  return input_fn


def test_train_score_predict_export_and_serve(tmp_path):
  """End to end: full-batch k-means finds 3 clear groups; the SavedModel answers as predict."""
  points = np.array(fixture.POINTS, dtype=np.float32)
  estimator = est.compat.v1.experimental.KMeans(
      num_clusters=3, model_dir=str(tmp_path / "model"),
      initial_clusters=KMeans.KMEANS_PLUS_PLUS_INIT, use_mini_batch=False, seed=7,
      relative_tolerance=1e-6)
  assert isinstance(estimator, KMeans) and isinstance(estimator, est.Estimator)
  # steps=None: the relative-tolerance hook stops training once it converged.
  estimator.train(lambda: (tf.constant(points), None), steps=None)
  assert 2 <= estimator.get_variable_value("global_step") < 20

  centers = estimator.cluster_centers()
  assert centers.shape == (3, 2)
  assert centers.tolist() == tf.train.load_variable(
      estimator.model_dir, KMeans.CLUSTER_CENTERS_VAR_NAME).tolist()
  squared = ((points[:, None, :] - centers[None, :, :]) ** 2).sum(axis=2)
  nearest = squared.argmin(axis=1)
  # Each group of 4 points is one cluster.
  assert [len(set(nearest[i:i + 4])) for i in (0, 4, 8)] == [1, 1, 1]
  assert len(set(nearest)) == 3
  np.testing.assert_allclose(estimator.score(lambda: (tf.constant(points), None)),
                             squared.min(axis=1).sum(), rtol=1e-4)
  assert list(estimator.predict_cluster_index(_points_input_fn(points, 5))) == nearest.tolist()
  np.testing.assert_allclose(np.array(list(estimator.transform(_points_input_fn(points)))),
                             np.sqrt(squared), rtol=1e-4, atol=1e-4)
  predictions = list(estimator.predict(_points_input_fn(points)))
  assert sorted(predictions[0]) == [KMeans.ALL_DISTANCES, KMeans.CLUSTER_INDEX]

  def serving_input_receiver_fn():
    placeholder = tf.compat.v1.placeholder(tf.float32, [None, 2])
    return est.export.TensorServingInputReceiver(placeholder, {"points": placeholder})

  export_dir = estimator.export_saved_model(str(tmp_path / "export"), serving_input_receiver_fn)
  loaded = tf.saved_model.load(export_dir.decode())
  assert sorted(loaded.signatures) == ["all_distances", "cluster_index", "serving_default"]
  served_index = loaded.signatures["serving_default"](points=tf.constant(points))["output"]
  assert served_index.numpy().tolist() == nearest.tolist()
  served_distances = loaded.signatures["all_distances"](points=tf.constant(points))["output"]
  np.testing.assert_allclose(served_distances.numpy(), squared, rtol=1e-4, atol=1e-3)


def test_callable_initial_clusters_and_mini_batch_counts(tmp_path):
  """A callable picks the initial centers batch by batch; mini-batches then move them."""
  points = np.array(fixture.POINTS, dtype=np.float32)
  calls = []

  def first_point_of_each_batch(inputs, num_clusters):
    # As in 2.15, `inputs` is TensorFlow k-means' list of input shards (one
    # here). Up to num_clusters centers from a batch: here one, so 3 batches
    # are read.
    calls.append(num_clusters)
    return inputs[0][:1]

  estimator = KMeans(num_clusters=3, model_dir=str(tmp_path),
                     initial_clusters=first_point_of_each_batch,
                     use_mini_batch=True, mini_batch_steps_per_iteration=1)
  input_fn = lambda: tf.data.Dataset.from_tensor_slices(points).shuffle(  # pylint: disable=g-long-lambda
      12, seed=1).repeat().batch(4)
  estimator.train(input_fn, steps=4)
  assert calls  # the callable was built into the graph
  centers = estimator.cluster_centers()
  assert centers.shape == (3, 2) and np.all(np.isfinite(centers))
  names = dict(tf.train.list_variables(str(tmp_path)))
  assert names == {"Variable": [3], "clusters": [3, 2], "global_step": [], "initialized": []}


@pytest.mark.parametrize("kwargs, text", [
    ({"initial_clusters": "kmeans_minus_minus"},
     "Unsupported initialization algorithm 'kmeans_minus_minus'"),
    ({"distance_metric": "manhattan"}, "Unsupported distance metric 'manhattan'"),
])
def test_bad_arguments_raise_215_texts(kwargs, text, tmp_path):
  with pytest.raises(ValueError, match=text):
    KMeans(2, model_dir=str(tmp_path), **kwargs)


def test_class_constants_are_215s():
  assert (KMeans.SQUARED_EUCLIDEAN_DISTANCE, KMeans.COSINE_DISTANCE) == (
      "squared_euclidean", "cosine")
  assert (KMeans.RANDOM_INIT, KMeans.KMEANS_PLUS_PLUS_INIT) == ("random", "kmeans_plus_plus")
  assert (KMeans.SCORE, KMeans.CLUSTER_INDEX, KMeans.ALL_DISTANCES) == (
      "score", "cluster_index", "all_distances")
  assert KMeans.CLUSTER_CENTERS_VAR_NAME == "clusters"
  assert est.experimental.KMeans is KMeans
