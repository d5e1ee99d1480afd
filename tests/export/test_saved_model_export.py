"""Estimator.export_saved_model writes SavedModels that TF2 and TensorFlow Serving load.

Each test trains a tiny model with estimator_lite, exports it, loads the export
with `tf.saved_model.load` (eager TF2, in this process) and checks that what
the export computes is what Estimator.predict computed.
"""
import os
import re
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

import estimator_lite as est

ROWS = np.array([[0.5, -1.0], [2.0, 0.25], [-1.5, 1.0], [0.0, 0.0]], np.float32)
CLASS_NAMES = ("neg", "pos")
SAVED_MODEL_CLI_TIMEOUT_S = 120


def _linear_model_fn(features, labels, mode):
  """Two-class softmax over features['x'] (shape [batch, 2]) plus a regression head."""
  x = features["x"]
  w = tf.compat.v1.get_variable("w", [2, 2], initializer=tf.compat.v1.glorot_uniform_initializer(seed=1))
  b = tf.compat.v1.get_variable("b", [2], initializer=tf.compat.v1.zeros_initializer())
  v = tf.compat.v1.get_variable("v", [2, 1], initializer=tf.compat.v1.ones_initializer())
  logits = tf.matmul(x, w) + b
  probabilities = tf.nn.softmax(logits)
  value = tf.squeeze(tf.matmul(x, v), axis=1)
  predictions = {"probabilities": probabilities, "class_ids": tf.argmax(logits, 1),
                 "value": value}
  if mode == est.ModeKeys.PREDICT:
    classes = tf.tile(tf.constant([CLASS_NAMES]), [tf.shape(x)[0], 1])
    return est.EstimatorSpec(mode, predictions=predictions, export_outputs={
        "serving_default": est.export.PredictOutput(predictions),
        "classification": est.export.ClassificationOutput(scores=probabilities,
                                                          classes=classes),
        "regression": est.export.RegressionOutput(value),
    })
  loss = (tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits) +
          tf.reduce_mean(tf.square(value - tf.cast(labels, tf.float32))))
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  return est.EstimatorSpec(mode, loss=loss, train_op=train_op)


def _train_input_fn():
  labels = (ROWS[:, 0] > ROWS[:, 1]).astype(np.int32)
  return tf.data.Dataset.from_tensors(({"x": ROWS}, labels)).repeat(10)


def _predict_input_fn():
  return tf.data.Dataset.from_tensors({"x": ROWS})


def _examples(column, rows, kind="float"):
  serialized = []
  for row in rows:
    if kind == "float":
      feature = tf.train.Feature(float_list=tf.train.FloatList(value=list(row)))
    else:
      feature = tf.train.Feature(bytes_list=tf.train.BytesList(value=[row.encode()]))
    example = tf.train.Example(features=tf.train.Features(feature={column: feature}))
    serialized.append(example.SerializeToString())
  return tf.constant(serialized)


def _parsing_receiver_fn_with_raw_alternative():
  receiver = est.export.build_parsing_serving_input_receiver_fn(
      {"x": tf.io.FixedLenFeature([2], tf.float32)})()
  # The alternative feeds the parsed features directly, downstream of parsing.
  return receiver.replace(receiver_tensors_alternatives={"raw": dict(receiver.features)})


def _version_dirs(base):
  return sorted(os.listdir(base))


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
  model_dir = str(tmp_path_factory.mktemp("linear"))
  estimator = est.Estimator(_linear_model_fn, model_dir=model_dir)
  estimator.train(_train_input_fn)
  predictions = list(estimator.predict(_predict_input_fn))
  return estimator, predictions


def test_export_loads_in_tf2_and_matches_predict(trained, tmp_path):
  estimator, predictions = trained
  notes = tmp_path / "notes.txt"
  notes.write_text("extra")
  base = str(tmp_path / "export")

  returned = estimator.export_saved_model(
      base, _parsing_receiver_fn_with_raw_alternative,
      assets_extra={"docs/notes.txt": str(notes)})

  # As tf.estimator: the path of a new numeric version directory, as bytes;
  # published whole.
  assert isinstance(returned, bytes)
  export_dir = os.fsdecode(returned)
  assert os.path.dirname(export_dir) == base
  assert os.path.basename(export_dir).isdigit()
  assert _version_dirs(base) == [os.path.basename(export_dir)]
  assert os.path.isfile(os.path.join(export_dir, "saved_model.pb"))
  assert os.path.isfile(os.path.join(export_dir, "variables", "variables.index"))
  with open(os.path.join(export_dir, "assets.extra", "docs", "notes.txt")) as f:
    assert f.read() == "extra"

  loaded = tf.saved_model.load(export_dir)
  assert set(loaded.signatures.keys()) == {
      "serving_default", "classification", "regression", "raw:serving_default"}
  examples = _examples("x", ROWS)
  expected_probs = np.stack([p["probabilities"] for p in predictions])
  expected_value = np.stack([p["value"] for p in predictions])
  expected_ids = np.stack([p["class_ids"] for p in predictions])

  served = loaded.signatures["serving_default"](examples=examples)
  np.testing.assert_allclose(served["probabilities"].numpy(), expected_probs, rtol=0, atol=1e-6)
  np.testing.assert_allclose(served["value"].numpy(), expected_value, rtol=0, atol=1e-6)
  np.testing.assert_array_equal(served["class_ids"].numpy(), expected_ids)

  # Classify / Regress signatures take serialized tf.Examples under 'inputs',
  # as TensorFlow Serving's Classify and Regress APIs feed them.
  classified = loaded.signatures["classification"](inputs=examples)
  np.testing.assert_allclose(classified["scores"].numpy(), expected_probs, rtol=0, atol=1e-6)
  assert classified["classes"].numpy().tolist() == [[b"neg", b"pos"]] * len(ROWS)
  regressed = loaded.signatures["regression"](inputs=examples)
  np.testing.assert_allclose(np.reshape(regressed["outputs"].numpy(), [-1]),
                             expected_value, rtol=0, atol=1e-6)

  raw = loaded.signatures["raw:serving_default"](x=tf.constant(ROWS))
  np.testing.assert_allclose(raw["probabilities"].numpy(), expected_probs, rtol=0, atol=1e-6)

  cli = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")
  shown = subprocess.run([cli, "show", "--dir", export_dir, "--all"], capture_output=True,
                         text=True, timeout=SAVED_MODEL_CLI_TIMEOUT_S, check=True).stdout
  for name, method in (("serving_default", "tensorflow/serving/predict"),
                       ("classification", "tensorflow/serving/classify"),
                       ("regression", "tensorflow/serving/regress")):
    assert f"signature_def['{name}']:" in shown
    assert f"Method name is: {method}" in shown


def test_default_signature_returns_all_predictions_and_exports_stay_unique(tmp_path):
  # A model_fn without export_outputs, fed raw tensors; exported twice at once.
  def model_fn(features, labels, mode):
    w = tf.compat.v1.get_variable("w", [2, 1])
    y = tf.squeeze(tf.matmul(features["x"], w), 1)
    if mode == est.ModeKeys.PREDICT:
      return est.EstimatorSpec(mode, predictions={"y": y, "twice": 2.0 * y})
    loss = tf.reduce_mean(tf.square(y - labels))
    return est.EstimatorSpec(mode, loss=loss, train_op=tf.compat.v1.train.GradientDescentOptimizer(
        0.1).minimize(loss, global_step=tf.compat.v1.train.get_global_step()))

  estimator = est.Estimator(model_fn, model_dir=str(tmp_path / "model"))
  base = str(tmp_path / "export")
  receiver_fn = est.export.build_raw_serving_input_receiver_fn(
      {"x": tf.TensorSpec([None, 2], tf.float32)})
  with pytest.raises(ValueError, match="Couldn't find trained model"):
    estimator.export_saved_model(base, receiver_fn)
  assert not os.path.exists(base) or not os.listdir(base)

  estimator.train(lambda: tf.data.Dataset.from_tensors(
      ({"x": ROWS}, ROWS[:, 0] - ROWS[:, 1])).repeat(3))
  expected = list(estimator.predict(_predict_input_fn))
  # A version numbered ahead of the clock (as if another export took this
  # second and the next): new exports must still be unique and newest-highest.
  taken = int(time.time()) + 2
  os.makedirs(os.path.join(base, str(taken)))
  first = os.fsdecode(estimator.export_saved_model(base, receiver_fn))
  second = os.fsdecode(estimator.export_saved_model(base, receiver_fn, as_text=True))
  assert int(os.path.basename(first)) == taken + 1
  assert int(os.path.basename(second)) == taken + 2
  assert _version_dirs(base) == sorted([str(taken), os.path.basename(first),
                                        os.path.basename(second)])
  assert os.path.isfile(os.path.join(second, "saved_model.pbtxt"))

  # An export that fails midway leaves no temp-* directory behind.
  def broken_receiver_fn():
    raise RuntimeError("receiver broke")
  with pytest.raises(RuntimeError, match="receiver broke"):
    estimator.export_saved_model(base, broken_receiver_fn)
  assert _version_dirs(base) == sorted([str(taken), os.path.basename(first),
                                        os.path.basename(second)])

  for export_dir in (first, second):
    serving = tf.saved_model.load(export_dir).signatures["serving_default"]
    assert set(serving.structured_outputs) == {"y", "twice"}
    out = serving(x=tf.constant(ROWS))
    np.testing.assert_allclose(out["y"].numpy(), [p["y"] for p in expected], rtol=0, atol=1e-6)
    np.testing.assert_allclose(out["twice"].numpy(), [p["twice"] for p in expected],
                               rtol=0, atol=1e-6)


def test_vocabulary_is_exported_as_asset_and_survives_deleting_the_original(tmp_path):
  vocab_path = tmp_path / "colors.txt"
  vocab_path.write_text("red\ngreen\nblue\n")
  color = tf.compat.v1.feature_column.categorical_column_with_vocabulary_file(
      "color", str(vocab_path), vocabulary_size=3, num_oov_buckets=1)
  columns = [tf.compat.v1.feature_column.indicator_column(color)]

  def model_fn(features, labels, mode):
    net = tf.compat.v1.feature_column.input_layer(features, columns)
    w = tf.compat.v1.get_variable("w", [4, 1], initializer=tf.compat.v1.zeros_initializer())
    score = tf.squeeze(tf.matmul(net, w), 1)
    if mode == est.ModeKeys.PREDICT:
      return est.EstimatorSpec(mode, predictions={"score": score})
    loss = tf.reduce_mean(tf.square(score - labels))
    return est.EstimatorSpec(mode, loss=loss, train_op=tf.compat.v1.train.GradientDescentOptimizer(
        0.5).minimize(loss, global_step=tf.compat.v1.train.get_global_step()))

  colors = np.array([["red"], ["green"], ["blue"], ["mauve"]])
  targets = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
  estimator = est.Estimator(model_fn, model_dir=str(tmp_path / "model"))
  estimator.train(lambda: tf.data.Dataset.from_tensors(({"color": colors}, targets)).repeat(20))
  expected = [p["score"] for p in estimator.predict(
      lambda: tf.data.Dataset.from_tensors({"color": colors}))]
  # Trained scores differ per color, so a broken lookup would show.
  assert len({round(float(s), 3) for s in expected}) == 4

  spec = tf.compat.v1.feature_column.make_parse_example_spec(columns)
  export_dir = os.fsdecode(estimator.export_saved_model(
      str(tmp_path / "export"), est.export.build_parsing_serving_input_receiver_fn(spec)))
  assert os.listdir(os.path.join(export_dir, "assets")) == ["colors.txt"]
  vocab_path.unlink()

  loaded = tf.saved_model.load(export_dir)
  out = loaded.signatures["serving_default"](
      examples=_examples("color", colors[:, 0], kind="bytes"))
  np.testing.assert_allclose(out["score"].numpy(), expected, rtol=0, atol=1e-6)


# A child that trains, then dies (os._exit: no except/finally clean-up runs, as
# with a kill) right after TensorFlow's Builder has written the whole SavedModel
# and before estimator_lite publishes it under its version number.
_CRASH_MID_EXPORT_PROGRAM = """
import os
import sys

import tensorflow as tf

import estimator_lite as est

tests_dir, model_dir, export_base = sys.argv[1:4]
sys.path.insert(0, tests_dir)
from conftest import _linear_model_fn, TRUE_W, TRUE_B  # the parent's model_fn

x = tf.random.stateless_uniform([64, 2], seed=[1, 2]).numpy()
y = x @ TRUE_W + TRUE_B
estimator = est.Estimator(_linear_model_fn, model_dir=model_dir)
estimator.train(lambda: tf.data.Dataset.from_tensors(({"x": x}, y)).repeat(), steps=3)

real_save = tf.compat.v1.saved_model.Builder.save

def save_then_crash(self, as_text=False):
  path = real_save(self, as_text)
  print("SAVED", os.path.dirname(os.fsdecode(path)), flush=True)  # path of saved_model.pb
  os._exit(17)

tf.compat.v1.saved_model.Builder.save = save_then_crash
estimator.export_saved_model(export_base, est.export.build_raw_serving_input_receiver_fn(
    {"x": tf.TensorSpec([None, 2], tf.float32)}))
print("EXPORT RETURNED", flush=True)
"""
CRASH_CHILD_TIMEOUT_S = 240


def test_crash_mid_export_leaves_no_version_for_serving(run_python, linear_model_fn, tmp_path):
  model_dir = str(tmp_path / "model")
  base = str(tmp_path / "export")
  tests_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # conftest.py's

  child = run_python(_CRASH_MID_EXPORT_PROGRAM, tests_dir, model_dir, base,
                     timeout=CRASH_CHILD_TIMEOUT_S)

  assert child.returncode == 17, child.stdout[-2000:] + child.stderr[-4000:]
  assert "EXPORT RETURNED" not in child.stdout
  # The crash came after a complete SavedModel was on disk...
  saved_to = child.stdout.split("SAVED ", 1)[1].split("\n", 1)[0]
  assert os.path.isfile(os.path.join(saved_to, "saved_model.pb"))
  assert os.path.isfile(os.path.join(saved_to, "variables", "variables.index"))
  # ...yet TensorFlow Serving, which serves only numeric child directories of
  # the base, sees no version at all: the export was never renamed into place.
  names = os.listdir(base)
  assert not [name for name in names if name.isdigit()], names
  assert names == [os.path.basename(saved_to)]
  crashed_version = int(os.path.basename(saved_to).split("-", 1)[1])

  # A restarted program exports the same checkpoint: a new, higher version.
  estimator = est.Estimator(linear_model_fn, model_dir=model_dir)
  export_dir = os.fsdecode(estimator.export_saved_model(
      base, est.export.build_raw_serving_input_receiver_fn(
          {"x": tf.TensorSpec([None, 2], tf.float32)})))
  assert os.path.basename(export_dir).isdigit()
  assert int(os.path.basename(export_dir)) > crashed_version
  assert [name for name in os.listdir(base) if name.isdigit()] == [os.path.basename(export_dir)]
  expected = [p["y"] for p in estimator.predict(_predict_input_fn)]
  served = tf.saved_model.load(export_dir).signatures["serving_default"](x=tf.constant(ROWS))
  np.testing.assert_allclose(served["y"].numpy(), expected, rtol=0, atol=1e-6)


def test_an_export_removes_only_old_temp_dirs_of_crashed_exports(trained, tmp_path, tf_logs):
  estimator, predictions = trained
  base = tmp_path / "export"
  two_hours_ago = time.time() - 2 * 3600

  def make_dir(path, mtime=None):
    (path / "variables").mkdir(parents=True)
    (path / "saved_model.pb").write_bytes(b"partial")
    if mtime is not None:
      for p in (path / "saved_model.pb", path / "variables", path):
        os.utime(p, (mtime, mtime))
    return path

  # Left by a crash long ago: removed. A symlink inside is unlinked, not followed.
  outside = make_dir(tmp_path / "outside", two_hours_ago)
  stale = make_dir(base / "temp-1000", two_hours_ago)
  (stale / "link").symlink_to(outside, target_is_directory=True)
  for p in (stale / "link", stale):
    os.utime(p, (two_hours_ago, two_hours_ago), follow_symlinks=False)
  # Being written by another exporter right now: kept.
  fresh = make_dir(base / "temp-2000")
  # Not an export's temp dir, however old: kept. A temp-* symlink to an old
  # directory outside the base: neither followed nor removed.
  other = make_dir(base / "tmp-3000", two_hours_ago)
  linked = base / "temp-4000"
  linked.symlink_to(outside, target_is_directory=True)

  export_dir = os.fsdecode(
      estimator.export_saved_model(str(base), _parsing_receiver_fn_with_raw_alternative))

  assert not os.path.lexists(stale)
  assert fresh.is_dir() and other.is_dir() and linked.is_symlink()
  assert (outside / "saved_model.pb").read_bytes() == b"partial"
  assert sorted(os.listdir(base)) == sorted(
      ["temp-2000", "tmp-3000", "temp-4000", os.path.basename(export_dir)])
  removals = [m for m in tf_logs.messages if m.startswith("Removed ")]
  assert len(removals) == 1 and removals[0].startswith(f"Removed {stale}: an unfinished export"), \
      removals
  served = tf.saved_model.load(export_dir).signatures["serving_default"](
      examples=_examples("x", ROWS))
  np.testing.assert_allclose(served["probabilities"].numpy(),
                             np.stack([p["probabilities"] for p in predictions]),
                             rtol=0, atol=1e-6)


def test_bare_tensor_and_fixed_batch_receivers_export_and_serve(
    linear_model_fn, linear_data, make_input_fn, tmp_path):
  features_seen = []

  def model_fn(features, labels, mode, params):
    features_seen.append(features)
    spec = linear_model_fn(features, labels, mode, params)
    if mode != est.ModeKeys.PREDICT:
      return spec
    # An eval signature is not servable: the export leaves it out, as
    # tf.estimator did, and keeps the serving one.
    return spec.replace(export_outputs={
        "serving_default": est.export.PredictOutput(spec.predictions),
        "eval": est.export.EvalOutput(predictions=spec.predictions)})

  estimator = est.Estimator(model_fn, model_dir=str(tmp_path / "model"))
  estimator.train(make_input_fn(*linear_data), steps=5)
  expected = np.stack([p["y"] for p in estimator.predict(_predict_input_fn)])

  def bare_receiver_fn():
    x = tf.compat.v1.placeholder(tf.float32, [None, 2], name="x")
    return est.export.TensorServingInputReceiver(x, {"x": x})

  served = tf.saved_model.load(estimator.export_saved_model(
      str(tmp_path / "bare"), bare_receiver_fn)).signatures
  # model_fn got the tensor itself, not {'feature': tensor}.
  assert isinstance(features_seen[-1], tf.Tensor)
  assert set(served) == {"serving_default"}
  np.testing.assert_allclose(served["serving_default"](x=tf.constant(ROWS))["y"].numpy(),
                             expected, rtol=0, atol=1e-6)

  raw_fn = est.export.build_raw_serving_input_receiver_fn({"x": ROWS}, default_batch_size=3)
  parsing_fn = est.export.build_parsing_serving_input_receiver_fn(
      {"x": tf.io.FixedLenFeature([2], tf.float32)}, default_batch_size=3)
  for receiver_fn, key, shape, inputs in (
      (raw_fn, "x", [3, 2], tf.constant(ROWS[:3])),
      (parsing_fn, "examples", [3], _examples("x", ROWS[:3]))):
    with tf.Graph().as_default():
      assert receiver_fn().receiver_tensors[key].shape.as_list() == shape
    export_dir = estimator.export_saved_model(str(tmp_path / key), receiver_fn)
    serving = tf.saved_model.load(export_dir).signatures["serving_default"]
    # The signature a server reads fixes the batch at 3 examples.
    assert serving.structured_input_signature[1][key].shape.as_list() == shape
    np.testing.assert_allclose(serving(**{key: inputs})["y"].numpy(), expected[:3],
                               rtol=0, atol=1e-6)
    assert isinstance(features_seen[-1], dict)


def test_eval_output_builds_a_supervised_eval_signature():
  with tf.Graph().as_default():
    x = tf.compat.v1.placeholder(tf.float32, [None, 2], name="x")
    labels = tf.compat.v1.placeholder(tf.float32, [None], name="labels")
    y = tf.reduce_sum(x, 1)
    loss = tf.reduce_mean(tf.square(y - labels))
    mean = tf.compat.v1.metrics.mean(y)
    accuracy, accuracy_update = tf.compat.v1.metrics.accuracy(labels, y)
    output = est.export.EvalOutput(
        loss=loss, predictions={"y": y, "predictions/twice": 2.0 * y},
        # tf.compat.v1.metrics pairs; an update given as an Operation works too.
        metrics={"mean": mean, "accuracy": (accuracy, accuracy_update.op)})

    assert isinstance(output, est.export.ExportOutput)
    # Keys get their kind as prefix unless they already have it.
    assert list(output.loss) == ["loss"] and output.loss["loss"] is loss
    assert sorted(output.predictions) == ["predictions/twice", "predictions/y"]
    assert output.predictions["predictions/y"] is y
    assert sorted(output.metrics) == [
        "metrics/accuracy/update_op", "metrics/accuracy/value",
        "metrics/mean/update_op", "metrics/mean/value"]
    assert output.metrics["metrics/mean/value"] is mean[0]
    assert est.export.EvalOutput(loss={"total": loss}).loss == {"loss/total": loss}
    assert est.export.EvalOutput(predictions=y).predictions == {"predictions": y}
    assert est.export.EvalOutput(metrics=mean).metrics == {
        "metrics/value": mean[0], "metrics/update_op": mean[1]}

    signature = output.as_signature_def({"x": x, "labels": labels})
    assert signature.method_name == "tensorflow/supervised/eval"
    assert sorted(signature.inputs) == ["labels", "x"]
    assert set(signature.outputs) == {"loss", *output.predictions, *output.metrics}
    # Running the signature's update output runs the metric's update op.
    fetch = {key: info.name for key, info in signature.outputs.items()}
    with tf.compat.v1.Session() as session:
      session.run(tf.compat.v1.local_variables_initializer())
      session.run([fetch["metrics/accuracy/update_op"], fetch["metrics/mean/update_op"]],
                  {x: [[1.0, 0.0], [2.0, 1.0]], labels: [1.0, 0.0]})
      assert session.run(fetch["metrics/accuracy/value"]) == 0.5
      assert session.run(fetch["metrics/mean/value"]) == 2.0

    with pytest.raises(ValueError, match="loss output value must be a Tensor"):
      est.export.EvalOutput(loss=0.5)
    with pytest.raises(ValueError, match="predictions output key must be a string; got 1"):
      est.export.EvalOutput(predictions={1: y})
    with pytest.raises(ValueError, match="metrics/m output value must be a Tensor"):
      est.export.EvalOutput(metrics={"m": (0.5, mean[1])})
    with pytest.raises(ValueError, match="metrics/m update_op must be a Tensor or Operation"):
      est.export.EvalOutput(metrics={"m": (mean[0], "update")})
    with pytest.raises(ValueError, match=r"'metrics/m' must be a \(metric_value, update_op\)"):
      est.export.EvalOutput(metrics={"m": mean[0]})
    with pytest.raises(ValueError, match="inputs cannot be None or empty"):
      output.as_signature_def({})


def test_export_savedmodel_v1_as_text_stripped_from_an_older_checkpoint(
    linear_model_fn, linear_data, make_input_fn, tmp_path):
  from google.protobuf import text_format  # pylint: disable=g-import-not-at-top
  from tensorflow.core.protobuf import saved_model_pb2  # pylint: disable=g-import-not-at-top

  model_dir = str(tmp_path / "model")
  estimator = est.Estimator(linear_model_fn, model_dir=model_dir)
  estimator.train(make_input_fn(*linear_data), steps=2)
  older = estimator.latest_checkpoint()
  estimator.train(make_input_fn(*linear_data), steps=3)
  assert estimator.latest_checkpoint() != older
  assert not np.allclose(tf.train.load_variable(older, "w"), estimator.get_variable_value("w"))
  expected = [p["y"] for p in estimator.predict(_predict_input_fn, checkpoint_path=older)]
  receiver_fn = est.export.build_raw_serving_input_receiver_fn(
      {"x": tf.TensorSpec([None, 2], tf.float32)})

  returned = estimator.export_savedmodel(
      str(tmp_path / "export"), receiver_fn, as_text=True, strip_default_attrs=True,
      checkpoint_path=older)

  assert isinstance(returned, bytes)  # as tf.estimator
  export_dir = os.fsdecode(returned)
  assert os.path.basename(export_dir).isdigit()
  assert sorted(os.listdir(export_dir)) == ["saved_model.pbtxt", "variables"]
  exported_variables = os.path.join(export_dir, "variables", "variables")
  assert tf.train.load_variable(exported_variables, "global_step") == 2
  np.testing.assert_array_equal(tf.train.load_variable(exported_variables, "w"),
                                tf.train.load_variable(older, "w"))
  with open(os.path.join(export_dir, "saved_model.pbtxt")) as f:
    saved_model = text_format.Parse(f.read(), saved_model_pb2.SavedModel())
  assert saved_model.meta_graphs[0].meta_info_def.stripped_default_attrs
  served = tf.saved_model.load(export_dir).signatures["serving_default"](x=tf.constant(ROWS))
  np.testing.assert_allclose(served["y"].numpy(), expected, rtol=0, atol=1e-6)


def _regression_model_fn(features, labels, mode):
  """y = x w + b, trained by gradient descent; EVAL also reports the mean absolute error."""
  w = tf.compat.v1.get_variable("w", [2, 1], initializer=tf.compat.v1.ones_initializer())
  b = tf.compat.v1.get_variable("b", [], initializer=tf.compat.v1.zeros_initializer())
  y = tf.squeeze(tf.matmul(features["x"], w), 1) + b
  if mode == est.ModeKeys.PREDICT:
    return est.EstimatorSpec(mode, predictions={"y": y})
  loss = tf.reduce_mean(tf.square(y - labels))
  if mode == est.ModeKeys.EVAL:
    return est.EstimatorSpec(mode, loss=loss, predictions={"y": y}, eval_metric_ops={
        "mae": tf.compat.v1.metrics.mean_absolute_error(labels, y)})
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  return est.EstimatorSpec(mode, loss=loss, train_op=train_op)


def test_train_eval_and_serving_graphs_export_together_and_run_when_loaded(tmp_path):
  targets = ROWS[:, 0] - 2 * ROWS[:, 1] + 0.5
  estimator = est.Estimator(_regression_model_fn, model_dir=str(tmp_path / "model"))
  estimator.train(lambda: tf.data.Dataset.from_tensors(({"x": ROWS}, targets)).repeat(3))
  w, b = estimator.get_variable_value("w")[:, 0], estimator.get_variable_value("b")
  expected_y = ROWS @ w + b
  expected_loss = np.mean(np.square(expected_y - targets))
  supervised_fn = est.experimental.build_raw_supervised_input_receiver_fn(
      {"x": tf.TensorSpec([None, 2], tf.float32)}, tf.TensorSpec([None], tf.float32))
  serving_fn = est.export.build_raw_serving_input_receiver_fn(
      {"x": tf.TensorSpec([None, 2], tf.float32)})

  returned = estimator.experimental_export_all_saved_models(
      str(tmp_path / "export"), {est.ModeKeys.TRAIN: supervised_fn,
                                 est.ModeKeys.EVAL: supervised_fn,
                                 est.ModeKeys.PREDICT: serving_fn})

  assert isinstance(returned, bytes)  # as tf.estimator
  export_dir = os.fsdecode(returned)
  # One set of variables (the checkpoint's) for the three graphs.
  np.testing.assert_array_equal(
      tf.train.load_variable(os.path.join(export_dir, "variables", "variables"), "w")[:, 0], w)

  def load(tag):
    graph = tf.Graph()
    session = tf.compat.v1.Session(graph=graph)
    with graph.as_default():
      meta_graph = tf.compat.v1.saved_model.loader.load(session, [tag], export_dir)
    signature = meta_graph.signature_def[tag]
    feed = {signature.inputs["x"].name: ROWS, signature.inputs["label"].name: targets}
    return graph, session, signature, feed

  # EVAL: the signature computes the loss, predictions and metrics on fed examples.
  graph, session, signature, feed = load("eval")
  with session:
    assert signature.method_name == "tensorflow/supervised/eval"
    assert set(signature.outputs) == {"loss", "predictions/y", "metrics/mae/value",
                                      "metrics/mae/update_op"}
    loss, y = session.run([signature.outputs["loss"].name,
                           signature.outputs["predictions/y"].name], feed)
    np.testing.assert_allclose(loss, expected_loss, rtol=1e-5)
    np.testing.assert_allclose(y, expected_y, rtol=0, atol=1e-5)
    session.run(signature.outputs["metrics/mae/update_op"].name, feed)
    np.testing.assert_allclose(session.run(signature.outputs["metrics/mae/value"].name),
                               np.mean(np.abs(expected_y - targets)), rtol=1e-5)

  # TRAIN: the loss, and the train op (in its collection) takes a step.
  graph, session, signature, feed = load("train")
  with session:
    assert signature.method_name == "tensorflow/supervised/training"
    loss = session.run(signature.outputs["loss"].name, feed)
    np.testing.assert_allclose(loss, expected_loss, rtol=1e-5)
    (train_op,) = graph.get_collection("saved_model_train_op")
    step = tf.compat.v1.train.get_global_step(graph)
    before = session.run(step)
    session.run(train_op, feed)
    assert session.run(step) == before + 1
    assert session.run(signature.outputs["loss"].name, feed) < loss

  # PREDICT: the serving graph, as export_saved_model writes it.
  served = tf.saved_model.load(export_dir, tags=["serve"]).signatures["serving_default"]
  np.testing.assert_allclose(served(x=tf.constant(ROWS))["y"].numpy(), expected_y,
                             rtol=0, atol=1e-5)

  # One mode through export_saved_model: a SavedModel with that tag alone.
  eval_only = os.fsdecode(estimator.export_saved_model(
      str(tmp_path / "eval_only"), supervised_fn, experimental_mode=est.ModeKeys.EVAL))
  from tensorflow.core.protobuf import saved_model_pb2  # pylint: disable=g-import-not-at-top
  with open(os.path.join(eval_only, "saved_model.pb"), "rb") as f:
    saved_model = saved_model_pb2.SavedModel.FromString(f.read())
  assert [list(m.meta_info_def.tags) for m in saved_model.meta_graphs] == [["eval"]]


def test_export_modes_are_checked_as_tf_estimator_checked_them(trained, tmp_path):
  estimator, _ = trained
  receiver_fn = est.export.build_raw_serving_input_receiver_fn(
      {"x": tf.TensorSpec([None, 2], tf.float32)})
  base = str(tmp_path / "export")
  with pytest.raises(ValueError, match=re.escape(
      "No valid modes for exporting found. Got dict_keys(['predict']).")):
    estimator.experimental_export_all_saved_models(base, {"predict": receiver_fn})
  with pytest.raises(ValueError, match=re.escape(
      "No valid modes for exporting found. Got dict_keys(['infer_me']).")):
    estimator.export_saved_model(base, receiver_fn, experimental_mode="infer_me")
  with pytest.raises(ValueError, match=re.escape("An input_receiver_fn must be defined.")):
    estimator.export_saved_model(base, None)
  with pytest.raises(TypeError, match=re.escape("'str' object is not callable")):
    estimator.export_saved_model(base, "receiver_fn")
  assert not os.path.exists(base)


def test_a_model_saved_by_an_object_checkpoint_exports(tmp_path):
  # Scaffold(saver=tf.train.Checkpoint(...)): checkpoints keyed by object
  # path; the export reads and writes the same keys, as tf.estimator did.
  def model_fn(features, labels, mode):
    w = tf.compat.v1.get_variable("w", [2, 1], initializer=tf.compat.v1.ones_initializer())
    step = tf.compat.v1.train.get_or_create_global_step()
    checkpoint = tf.train.Checkpoint(weights=w, step=step)
    y = tf.squeeze(tf.matmul(features["x"], w), 1)
    scaffold = tf.compat.v1.train.Scaffold(saver=checkpoint)
    if mode == est.ModeKeys.PREDICT:
      return est.EstimatorSpec(mode, predictions={"y": y}, scaffold=scaffold)
    loss = tf.reduce_mean(tf.square(y - labels))
    train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    return est.EstimatorSpec(mode, loss=loss, train_op=train_op, scaffold=scaffold)

  estimator = est.Estimator(model_fn, model_dir=str(tmp_path / "model"))
  estimator.train(lambda: tf.data.Dataset.from_tensors(
      ({"x": ROWS}, ROWS[:, 0] - ROWS[:, 1])).repeat(3))
  assert "weights/.ATTRIBUTES/VARIABLE_VALUE" in dict(
      tf.train.list_variables(estimator.latest_checkpoint()))
  expected = [p["y"] for p in estimator.predict(_predict_input_fn)]

  export_dir = estimator.export_saved_model(
      str(tmp_path / "export"), est.export.build_raw_serving_input_receiver_fn(
          {"x": tf.TensorSpec([None, 2], tf.float32)}))

  served = tf.saved_model.load(export_dir).signatures["serving_default"]
  np.testing.assert_allclose(served(x=tf.constant(ROWS))["y"].numpy(), expected,
                             rtol=0, atol=1e-6)


def test_tensorflow_own_export_output_classes_export_as_estimator_lites(trained, tmp_path):
  # tf.estimator 2.15's export classes were TensorFlow's own
  # (tensorflow.python.saved_model.model_utils.export_output); programs that
  # built export_outputs from that module export the same signatures.
  from tensorflow.python.saved_model.model_utils import export_output as tf_export_output
  from tensorflow.core.protobuf import saved_model_pb2
  estimator, _ = trained

  def model_fn_with(module):
    def model_fn(features, labels, mode):
      spec = _linear_model_fn(features, labels, mode)
      if mode != est.ModeKeys.PREDICT:
        return spec
      outputs = spec.export_outputs
      return spec.replace(export_outputs={
          "serving_default": module.PredictOutput(spec.predictions),
          "classification": module.ClassificationOutput(
              scores=outputs["classification"].scores, classes=outputs["classification"].classes),
          "regression": module.RegressionOutput(outputs["regression"].value)})
    return model_fn

  signatures = {}
  for name, module in (("lite", est.export), ("tensorflow", tf_export_output)):
    exporter = est.Estimator(model_fn_with(module), model_dir=estimator.model_dir)
    export_dir = exporter.export_saved_model(
        str(tmp_path / name), _parsing_receiver_fn_with_raw_alternative)
    saved_model = saved_model_pb2.SavedModel()
    with open(os.path.join(export_dir, b"saved_model.pb"), "rb") as f:
      saved_model.ParseFromString(f.read())
    signatures[name] = dict(saved_model.meta_graphs[0].signature_def)
  assert set(signatures["tensorflow"]) == {
      "serving_default", "classification", "regression", "raw:serving_default"}
  assert signatures["tensorflow"] == signatures["lite"]
