"""Replays tests/data/heads_expected.json with estimator_lite's heads (see make_head_fixture.py).

Each case is rebuilt from the JSON (head, logits, labels, features) in a fresh
graph, run in a tf.compat.v1 Session as an Estimator would run it, and its
numbers are returned in the fixture's layout, so a test compares them to what
tf.estimator 2.15 computed.
"""
import json
import os
import re

import numpy as np
import tensorflow as tf

import estimator_lite as est
from estimator_lite.head.binary_class_head import BinaryClassHead
from estimator_lite.head.multi_class_head import MultiClassHead
from estimator_lite.head.multi_head import MultiHead
from estimator_lite.head.multi_label_head import MultiLabelHead
from estimator_lite.head.regression_head import LogisticRegressionHead
from estimator_lite.head.regression_head import PoissonRegressionHead
from estimator_lite.head.regression_head import RegressionHead

FIXTURE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                       "data", "heads_expected.json")
HEADS = {cls.__name__: cls for cls in (BinaryClassHead, MultiClassHead, MultiLabelHead,
                                       RegressionHead, PoissonRegressionHead,
                                       LogisticRegressionHead)}
TOLERANCE = 1e-5

with open(FIXTURE) as _f:
  DATA = json.load(_f)


def _per_batch_loss_fn(labels, logits):
  # A custom loss_fn that wrongly reduces each example's loss to shape [D0]
  # (make_head_fixture.py's, which 2.15 ran).
  return tf.reduce_mean(tf.square(tf.cast(labels, tf.float32) - logits), axis=-1)


_PER_BATCH_LOSS_FNS = {"per_batch": _per_batch_loss_fn}


def build_head(spec):
  if spec["class"] == "MultiHead":
    return MultiHead([build_head(h) for h in spec["heads"]], **spec["kwargs"])
  kwargs = dict(spec["kwargs"])
  if "loss_fn" in spec:
    kwargs["loss_fn"] = _PER_BATCH_LOSS_FNS[spec["loss_fn"]]
  return HEADS[spec["class"]](**kwargs)


def to_tensor(value):
  if value is None:
    return None
  if "sparse" in value:
    s = value["sparse"]
    return tf.sparse.SparseTensor(indices=tf.constant(s["indices"], tf.int64),
                                  values=tf.constant(s["values"], value["dtype"]),
                                  dense_shape=tf.constant(s["dense_shape"], tf.int64))
  if "dtype" in value:
    return tf.constant(value["values"], dtype=value["dtype"])
  return {name: to_tensor(v) for name, v in value.items()}


def logits_tensor(logits):
  if isinstance(logits, dict):
    return {name: tf.constant(v, tf.float32) for name, v in logits.items()}
  return tf.constant(logits, tf.float32)


def plain(value):
  if isinstance(value, dict):
    return {("/".join(k) if isinstance(k, tuple) else k): plain(v) for k, v in value.items()}
  if hasattr(value, "tolist"):
    value = value.tolist()
  if isinstance(value, list):
    return [plain(v) for v in value]
  if isinstance(value, bytes):
    return value.decode()
  return value


def _session():
  session = tf.compat.v1.Session()
  session.run([tf.compat.v1.global_variables_initializer(),
               tf.compat.v1.local_variables_initializer(), tf.compat.v1.tables_initializer()])
  return session


def _metric_value_and_updates(metric):
  """A Keras 2 metric object's result and update ops, or a (value, update_op) tuple's."""
  if isinstance(metric, tuple):
    return metric[0], [metric[1]]
  return metric.result(), list(metric.updates)


def run_case(case):
  """What estimator_lite's head computes for a fixture case, in the fixture's layout."""
  spec, logits, labels, features = case["head"], case["logits"], case["labels"], case["features"]
  out = {}
  with tf.Graph().as_default():
    head = build_head(spec)
    feats = to_tensor(features)
    loss = head.loss(to_tensor(labels), logits_tensor(logits), features=feats)
    loss_sum = None
    if spec["class"] != "MultiHead":
      sum_spec = dict(spec, kwargs=dict(spec["kwargs"], loss_reduction="sum"))
      loss_sum = build_head(sum_spec).loss(to_tensor(labels), logits_tensor(logits),
                                           features=feats)
    predictions = head.predictions(logits_tensor(logits))
    train = head.create_estimator_spec(
        features=feats, mode=est.ModeKeys.TRAIN, logits=logits_tensor(logits),
        labels=to_tensor(labels), train_op_fn=lambda _: tf.no_op(),
        regularization_losses=[tf.constant(0.25)])
    evaluation = head.create_estimator_spec(
        features=feats, mode=est.ModeKeys.EVAL, logits=logits_tensor(logits),
        labels=to_tensor(labels))
    predict = head.create_estimator_spec(features=feats, mode=est.ModeKeys.PREDICT,
                                         logits=logits_tensor(logits))
    values, updates = {}, []
    for key, metric in evaluation.eval_metric_ops.items():
      values[key], metric_updates = _metric_value_and_updates(metric)
      updates.extend(metric_updates)
    with _session() as session:
      out["loss"] = float(session.run(loss))
      if loss_sum is not None:
        out["loss_sum"] = float(session.run(loss_sum))
      out["train_loss_regularized"] = float(session.run(train.loss))
      out["predictions"] = plain(session.run(predictions))
      session.run(updates)
      out["eval_loss"] = float(session.run(evaluation.loss))
      out["eval_metrics"] = {k: float(v) for k, v in session.run(values).items()}
    outputs = predict.export_outputs
    default = outputs["serving_default"]
    out["export_outputs"] = {k: type(v).__name__ for k, v in outputs.items()}
    out["serving_default_same_as"] = sorted(k for k, v in outputs.items() if v is default)
  return out


def assert_matches_reference(actual, expected):
  """Every number within TOLERANCE of tf.estimator 2.15's; keys and strings equal."""
  assert sorted(actual) == sorted(expected)
  for field in ("loss", "loss_sum", "train_loss_regularized", "eval_loss"):
    if field in expected:
      np.testing.assert_allclose(actual[field], expected[field], rtol=TOLERANCE, atol=TOLERANCE,
                                 err_msg=field)
  assert sorted(actual["eval_metrics"]) == sorted(expected["eval_metrics"])
  for key, value in expected["eval_metrics"].items():
    np.testing.assert_allclose(actual["eval_metrics"][key], value, rtol=TOLERANCE,
                               atol=TOLERANCE, err_msg=key)
  assert sorted(actual["predictions"]) == sorted(expected["predictions"])
  for key, value in expected["predictions"].items():
    if isinstance(np.asarray(value).flat[0], str):
      assert actual["predictions"][key] == value, key
    else:
      np.testing.assert_allclose(actual["predictions"][key], value, rtol=TOLERANCE,
                                 atol=TOLERANCE, err_msg=key)
  assert actual["export_outputs"] == expected["export_outputs"]
  assert actual["serving_default_same_as"] == expected["serving_default_same_as"]


def run_error(error):
  """(exception type name, message) estimator_lite's head raises for a fixture error case."""
  where, spec = error["where"], error["head"]
  try:
    if where == "eager":
      build_head(spec).loss(to_tensor(error["labels"]), logits_tensor(error["logits"]),
                            features=to_tensor(error["features"]))
      return None, None
    with tf.Graph().as_default():
      head = build_head(spec)
      if where == "construct":
        return None, None
      if where == "train":
        head.create_estimator_spec(features=to_tensor(error["features"]), mode="train",
                                   logits=logits_tensor(error["logits"]),
                                   labels=to_tensor(error["labels"]))
      else:
        loss = head.loss(to_tensor(error["labels"]), logits_tensor(error["logits"]),
                         features=to_tensor(error["features"]))
        with _session() as session:
          session.run(loss)
  except Exception as e:  # pylint: disable=broad-except
    return type(e).__name__, getattr(e, "message", None) or str(e)
  return None, None


_OBJECT_REPR = re.compile(r"<[\w.]+\.(\w+) object at 0x[0-9a-f]+>")
_TENSOR_REPR = re.compile(r'Tensor\("[^"]*", shape=\([^)]*\), dtype=\w+\)')


def core_message(message):
  """The part of an error text both versions share: object and tensor reprs reduced."""
  match = re.match(r"assertion failed: \[(.*?)\]", message)
  if match:
    message = match.group(1)
  message = _TENSOR_REPR.sub("Tensor(...)", _OBJECT_REPR.sub(r"<\1>", message))
  return message.rstrip(". ")


def assert_error_matches_reference(error):
  expected = error["expected"]
  error_type, message = run_error(error)
  assert error_type == expected["error"], message
  if error_type is None:
    return
  want = core_message(expected["message"])
  got = _TENSOR_REPR.sub("Tensor(...)", _OBJECT_REPR.sub(r"<\1>", message))
  if error_type == "ValueError":
    # tf.estimator's text first, then estimator_lite's fix hint.
    assert got.startswith(want), (got, want)
    # (Texts that already carry tf.estimator's "Suggested fix" need none.)
    assert len(got) > len(want) + 5 or "Suggested" in want, (
        f"no fix hint after tf.estimator's text: {got!r}")
  else:
    assert want in got, (got, want)
    # An assertion that printed its own data (shapes) rather than TensorFlow's
    # "Condition ..." text: programs match that data, so all of it is 2.15's.
    prefix = "assertion failed: "
    if expected["message"].startswith(prefix) and "[Condition" not in expected["message"]:
      assert expected["message"][len(prefix):] in message, (message, expected["message"])
