"""docs/serving.md's "Serve the export", checked on examples/digits.py's own export and request bodies.

The example exports two signatures that take serialized tf.Examples and
writes the JSON bodies TensorFlow Serving's REST API takes for them. No
TensorFlow Serving runs here, so each body is turned into the signature's
input the way the model server does it (a classify body's JSON features into
a tf.Example; a predict body's {"b64": ...} into the bytes), the signature
runs on it in the reloaded SavedModel, and the answer is compared with
Estimator.predict on the same digits. `saved_model_cli run` runs as docs/serving.md
shows it, on the example's examples.txt.
"""
import base64
import importlib.util
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DIGITS = os.path.join(REPO, "examples", "digits.py")
_NUM_DIGITS = 3


def _load_digits_module():
  spec = importlib.util.spec_from_file_location("digits_example", DIGITS)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def _json_feature(values):
  """One JSON feature as TensorFlow Serving reads it: decimals are floats, whole numbers ints."""
  values = values if isinstance(values, list) else [values]
  if all(isinstance(v, float) for v in values):
    return tf.train.Feature(float_list=tf.train.FloatList(value=values))
  if all(isinstance(v, int) for v in values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=values))
  return tf.train.Feature(bytes_list=tf.train.BytesList(value=[str(v).encode() for v in values]))


def _classify_input(body):
  """A classify body's examples (with its optional context) as serialized tf.Examples."""
  context = body.get("context", {})
  serialized = []
  for example in body["examples"]:
    features = {name: _json_feature(values) for name, values in {**context, **example}.items()}
    serialized.append(tf.train.Example(
        features=tf.train.Features(feature=features)).SerializeToString())
  return tf.constant(serialized)


def _predict_input(body):
  """A row-format predict body whose one input is a string: {"b64": ...} decoded to bytes."""
  return tf.constant([base64.b64decode(instance["b64"]) for instance in body["instances"]])


@pytest.fixture(scope="module")
def served(tmp_path_factory):
  """The example's model trained briefly, exported, its request bodies, and predict's answers."""
  digits = _load_digits_module()
  model_dir = str(tmp_path_factory.mktemp("digits"))
  (train_x, train_y), (eval_x, _) = digits.load_digits()
  estimator = digits.est.Estimator(
      digits.model_fn, model_dir=model_dir,
      config=digits.est.RunConfig(tf_random_seed=42),
      params={"hidden_units": [16], "learning_rate": 0.01})
  estimator.train(digits.make_input_fn(train_x, train_y, 64, shuffle=True, repeat=True),
                  max_steps=30)
  export_dir = estimator.export_saved_model(
      os.path.join(model_dir, "export"),
      digits.est.export.build_parsing_serving_input_receiver_fn(digits.FEATURE_SPEC)).decode()
  images = eval_x[:_NUM_DIGITS]
  expected = list(estimator.predict(
      digits.make_input_fn(images, None, _NUM_DIGITS, shuffle=False, repeat=False)))
  requests = digits.write_requests(os.path.join(model_dir, "requests"), images)
  return {"export_dir": export_dir, "requests": requests, "expected": expected,
          "signatures": tf.saved_model.load(export_dir).signatures}


def _read_body(served, name):
  with open(served["requests"][name]) as f:
    return json.load(f)


def test_the_export_has_readmes_two_signatures(served):
  graph = saved_model_pb2.SavedModel()
  with open(os.path.join(served["export_dir"], "saved_model.pb"), "rb") as f:
    graph.ParseFromString(f.read())
  (meta_graph,) = graph.meta_graphs
  assert list(meta_graph.meta_info_def.tags) == ["serve"]
  signatures = {key: value for key, value in meta_graph.signature_def.items()
                if not key.startswith("__")}
  assert set(signatures) == {"serving_default", "predict"}
  classify, predict = signatures["serving_default"], signatures["predict"]
  assert classify.method_name == "tensorflow/serving/classify"
  assert predict.method_name == "tensorflow/serving/predict"
  assert set(classify.inputs) == {"inputs"} and set(predict.inputs) == {"examples"}
  assert set(classify.outputs) == {"classes", "scores"}
  assert set(predict.outputs) == {"class_ids", "probabilities"}
  string = tf.string.as_datatype_enum
  assert classify.inputs["inputs"].dtype == string == predict.inputs["examples"].dtype


def test_classify_body_gives_predicts_classes_and_scores(served):
  body = _read_body(served, "classify.json")
  assert body["signature_name"] == "serving_default"
  assert len(body["examples"]) == _NUM_DIGITS
  assert all(set(example) == {"pixels"} and len(example["pixels"]) == 64
             for example in body["examples"])
  outputs = served["signatures"][body["signature_name"]](inputs=_classify_input(body))
  classes = outputs["classes"].numpy().astype(str)
  scores = outputs["scores"].numpy()
  for row_classes, row_scores, expected in zip(classes, scores, served["expected"]):
    # The model server's answer, [[label, score], ...] per example.
    result = list(zip(row_classes.tolist(), row_scores.tolist()))
    assert [label for label, _ in result] == [str(d) for d in range(10)]
    best_label, _ = max(result, key=lambda pair: pair[1])
    assert int(best_label) == expected["class_ids"]
    np.testing.assert_allclose(row_scores, expected["probabilities"], rtol=1e-5, atol=1e-7)


def test_predict_body_gives_predicts_outputs(served):
  body = _read_body(served, "predict.json")
  assert body["signature_name"] == "predict"
  outputs = served["signatures"][body["signature_name"]](examples=_predict_input(body))
  np.testing.assert_array_equal(outputs["class_ids"].numpy(),
                                [e["class_ids"] for e in served["expected"]])
  np.testing.assert_allclose(outputs["probabilities"].numpy(),
                             [e["probabilities"] for e in served["expected"]],
                             rtol=1e-5, atol=1e-7)


def test_saved_model_cli_runs_the_predict_signature_as_readme_shows(served):
  with open(served["requests"]["examples.txt"]) as f:
    examples = f.read()
  cli = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")
  command = [cli, "run", "--dir", served["export_dir"], "--tag_set", "serve",
             "--signature_def", "predict", "--input_examples", f"examples={examples}"]
  completed = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
  assert completed.returncode == 0, completed.stderr[-3000:]
  found = re.search(r"Result for output key class_ids:\s*\[([\d ]+)\]", completed.stdout)
  assert found, completed.stdout
  assert [int(c) for c in found.group(1).split()] == [
      e["class_ids"] for e in served["expected"]]
