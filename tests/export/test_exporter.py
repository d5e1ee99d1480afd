"""LatestExporter, BestExporter and FinalExporter, called as train_and_evaluate calls them.

train_and_evaluate runs `exporter.export(estimator, model_dir/export/NAME,
checkpoint_path, eval_result, is_the_final_export)` after each evaluation;
these tests make the same calls on a real tiny Estimator.
"""
import json
import os

import numpy as np
import pytest
import tensorflow as tf

import estimator_lite as est
from estimator_lite._util import events as _summaries
from estimator_lite.export.exporter import BEST_EVAL_RESULT_FILE

ROWS = np.array([[0.5, -1.0], [2.0, 0.25], [-1.5, 1.0], [0.0, 0.0]], np.float32)
TARGETS = np.array([1.0, 2.0, -1.0, 0.5], np.float32)


def _model_fn(features, labels, mode):
  w = tf.compat.v1.get_variable("w", [2, 1], initializer=tf.compat.v1.zeros_initializer())
  y = tf.squeeze(tf.matmul(features["x"], w), 1)
  if mode == est.ModeKeys.PREDICT:
    return est.EstimatorSpec(mode, predictions={"y": y})
  loss = tf.reduce_mean(tf.square(y - labels))
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.05).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  return est.EstimatorSpec(mode, loss=loss, train_op=train_op)


def _input_fn():
  return tf.data.Dataset.from_tensors(({"x": ROWS}, TARGETS)).repeat(2)


def _receiver_fn():
  return est.export.build_parsing_serving_input_receiver_fn(
      {"x": tf.io.FixedLenFeature([2], tf.float32)})()


def _export_path(estimator, exporter):
  # Exactly what train_and_evaluate passes.
  return os.path.join(estimator.model_dir, "export", exporter.name)


def _export(exporter, estimator, eval_result, is_the_final_export=False):
  return exporter.export(estimator, _export_path(estimator, exporter),
                         estimator.latest_checkpoint(), eval_result, is_the_final_export)


def _name(export_dir):
  """The version directory's name of an export path (bytes, as returned)."""
  assert isinstance(export_dir, bytes)
  return os.path.basename(os.fsdecode(export_dir))


def _step_of_export(export_dir):
  export_dir = os.fsdecode(export_dir)
  return int(tf.train.load_variable(os.path.join(export_dir, "variables", "variables"),
                                    "global_step"))


@pytest.fixture(scope="module")
def estimator(tmp_path_factory):
  estimator = est.Estimator(_model_fn, model_dir=str(tmp_path_factory.mktemp("model")))
  estimator.train(_input_fn, steps=2)
  return estimator


def test_latest_exporter_writes_the_tensorflow_serving_layout(tmp_path):
  estimator = est.Estimator(_model_fn, model_dir=str(tmp_path / "model"))
  exporter = est.LatestExporter("latest", _receiver_fn, exports_to_keep=2)
  export_path = _export_path(estimator, exporter)
  exported, weights = [], []
  for _ in range(3):
    estimator.train(_input_fn, steps=2)
    eval_result = estimator.evaluate(_input_fn, steps=1)
    exported.append(_export(exporter, estimator, eval_result))
    weights.append(estimator.get_variable_value("w"))

  # What TensorFlow Serving's file-system source watches: nothing but numeric
  # version directories (no temp-* left), each a complete SavedModel; the
  # newest export has the highest number. Older ones beyond 2 are gone.
  names = os.listdir(export_path)
  # As tf.estimator's exporters: the export directory, as bytes.
  assert all(isinstance(d, bytes) for d in exported)
  exported = [os.fsdecode(d) for d in exported]
  assert sorted(names) == sorted(os.path.basename(d) for d in exported[1:])
  assert all(name.isdigit() for name in names)
  for name in names:
    version_dir = os.path.join(export_path, name)
    assert os.path.isfile(os.path.join(version_dir, "saved_model.pb"))
    assert os.path.isfile(os.path.join(version_dir, "variables", "variables.index"))
  newest = os.path.join(export_path, max(names, key=int))
  assert newest == exported[-1]
  # Each version holds the checkpoint it was exported from.
  assert [_step_of_export(d) for d in exported[1:]] == [4, 6]
  for export_dir, w in zip(exported[1:], weights[1:]):
    np.testing.assert_array_equal(
        tf.train.load_variable(os.path.join(export_dir, "variables", "variables"), "w"), w)
  served = tf.saved_model.load(newest).signatures["serving_default"](
      examples=tf.constant([tf.train.Example(features=tf.train.Features(feature={
          "x": tf.train.Feature(float_list=tf.train.FloatList(value=row))})).SerializeToString()
                            for row in ROWS]))
  np.testing.assert_allclose(served["y"].numpy(), ROWS @ weights[-1][:, 0], rtol=0, atol=1e-6)


def test_best_exporter_exports_only_improvements_and_remembers_them_across_restarts(estimator):
  eval_result = estimator.evaluate(_input_fn, steps=1, name="best")
  loss, step = float(eval_result["loss"]), int(eval_result["global_step"])
  assert loss > 0
  pattern = "eval_best/*.tfevents.*"
  exporter = est.BestExporter("best", _receiver_fn, event_file_pattern=pattern,
                              exports_to_keep=2)
  export_path = _export_path(estimator, exporter)

  def versions():
    return sorted((n for n in os.listdir(export_path) if n.isdigit()), key=int)

  # The first evaluation is exported although its own event is already in
  # eval_best/ (it is the candidate, not a rival).
  first = _export(exporter, estimator, eval_result)
  assert first is not None and versions() == [_name(first)]
  assert _export(exporter, estimator, dict(eval_result, loss=loss + 1)) is None
  better = _export(exporter, estimator, dict(eval_result, loss=loss / 2))
  assert better is not None and versions() == [_name(first), _name(better)]

  # An event better than anything exported, never exported: a restart must
  # judge against what was exported (the state file), not re-scan events.
  _summaries.write_dict_to_summary(os.path.join(estimator.model_dir, "eval_best"),
                                   {"loss": 0.0}, step + 100)
  restarted = est.BestExporter("best", _receiver_fn, event_file_pattern=pattern,
                               exports_to_keep=2)
  assert _export(restarted, estimator, dict(eval_result, loss=loss * 0.75)) is None
  best = _export(restarted, estimator, dict(eval_result, loss=loss / 4))
  assert best is not None
  assert versions() == [_name(better), _name(best)]  # keeps 2

  # A directory exported without the state file (as tf.estimator left it):
  # the best is recovered from the event files, where loss 0.0 beats all.
  os.remove(os.path.join(export_path, BEST_EVAL_RESULT_FILE))
  from_events = est.BestExporter("best", _receiver_fn, event_file_pattern=pattern)
  assert _export(from_events, estimator, dict(eval_result, loss=loss / 8)) is None
  assert versions() == [_name(better), _name(best)]


def test_final_exporter_exports_only_the_final_evaluation(estimator):
  exporter = est.FinalExporter("final", _receiver_fn)
  eval_result = {"loss": 1.0, "global_step": 2}
  assert _export(exporter, estimator, eval_result, is_the_final_export=False) is None
  assert not os.path.exists(_export_path(estimator, exporter))
  final = _export(exporter, estimator, eval_result, is_the_final_export=True)
  assert os.listdir(_export_path(estimator, exporter)) == [_name(final)]
  assert _step_of_export(final) == 2


def test_best_exporter_exports_whatever_its_memory_file_cannot_hold(estimator, tf_logs):
  # tf.estimator kept the best result in memory only, so nothing in an eval
  # result could break an export; estimator_lite also writes it to a file.
  eval_result = estimator.evaluate(_input_fn, steps=1, name="odd")
  exporter = est.BestExporter("odd", _receiver_fn, event_file_pattern=None)
  odd = dict(eval_result, histogram=np.arange(3.0), owner=object(), flag=np.bool_(True))
  first = _export(exporter, estimator, odd)
  assert first is not None
  state_path = os.path.join(_export_path(estimator, exporter), BEST_EVAL_RESULT_FILE)
  with open(state_path) as f:
    state = json.load(f)
  # Only the numeric scalars are remembered; the export path as a str.
  assert state == {"eval_result": {"loss": pytest.approx(float(eval_result["loss"])),
                                   "global_step": int(eval_result["global_step"])},
                   "export_dir": os.fsdecode(first)}
  # The full result stays the best in memory: compare_fn sees it.
  seen = []

  def compare_fn(best_eval_result, current_eval_result):
    seen.append(best_eval_result)
    return current_eval_result["loss"] < best_eval_result["loss"]

  exporter = est.BestExporter("unwritable", _receiver_fn, event_file_pattern=None,
                              compare_fn=compare_fn)
  export_path = _export_path(estimator, exporter)
  # The memory file cannot be written (a directory is in its place): the
  # exports still happen, and the failure is logged.
  os.makedirs(os.path.join(export_path, BEST_EVAL_RESULT_FILE, "in_the_way"))
  first = _export(exporter, estimator, odd)
  assert first is not None and seen == []
  assert "could not write" in tf_logs.text
  better = _export(exporter, estimator, dict(odd, loss=float(odd["loss"]) / 2))
  assert better is not None and seen[-1] is odd


def test_exporters_reject_bad_arguments():
  for bad in (0, -1, True, 1.5, "3"):
    with pytest.raises(ValueError, match="exports_to_keep"):
      est.LatestExporter("latest", _receiver_fn, exports_to_keep=bad)
    with pytest.raises(ValueError, match="exports_to_keep"):
      est.BestExporter(serving_input_receiver_fn=_receiver_fn, exports_to_keep=bad)
  assert est.LatestExporter("latest", _receiver_fn, exports_to_keep=None).name == "latest"
  with pytest.raises(ValueError, match="must include current_eval_result"):
    est.BestExporter(serving_input_receiver_fn=_receiver_fn,
                     compare_fn=lambda best_eval_result: True)
  with pytest.raises(ValueError, match="not expected args"):
    est.BestExporter(serving_input_receiver_fn=_receiver_fn,
                     compare_fn=lambda best_eval_result, current_eval_result, margin: True)
  with pytest.raises(ValueError, match="compare_fn must be callable"):
    est.BestExporter(serving_input_receiver_fn=_receiver_fn, compare_fn="loss")
  with pytest.raises(ValueError, match="serving_input_receiver_fn"):
    est.BestExporter()
  with pytest.raises(ValueError, match="non-empty string"):
    est.FinalExporter("", _receiver_fn)
  assert issubclass(est.BestExporter, est.Exporter)
  assert est.BestExporter(serving_input_receiver_fn=_receiver_fn).name == "best_exporter"
