"""Writes tests/data/heads_expected.json: what tf.estimator 2.15's heads compute for fixed inputs.

Runs ONLY under the reference environment (TensorFlow 2.15 +
tensorflow-estimator 2.15, Python 3.11). Regenerate the committed fixture from
the repository root with:

    /root/.cache/estimator_lite/ref-venv-2.15/bin/python \
        tests/reference/make_head_fixture.py tests/data/heads_expected.json

(`python tests/reference/ref_env.py` prints the reference interpreter's path,
creating the venv first if it is missing.)

The file holds the inputs as well as the results, so tests/head/ rebuilds each
case with estimator_lite's heads and compares without the reference venv:

* "cases": a head (class name and constructor arguments, or for MultiHead its
  heads), logits, labels and features, and what 2.15 computed in graph mode:
  the training loss as configured and with loss_reduction SUM ("loss",
  "loss_sum"), the TRAIN spec's loss with regularization_losses=[0.25]
  ("train_loss_regularized"), every prediction, the EVAL spec's loss and
  metric values after one update, and the PREDICT spec's export output keys,
  their classes and which keys serve the same object as serving_default.
* "errors": a bad argument or input, where it fails ("construct", "loss" or
  "train" without an optimizer, building a graph; "eager": `head.loss`
  executing eagerly), and 2.15's exception type and text (the first line of a
  run-time assertion's message; of a ValueError 2.15 raised with several
  arguments, the first). A head spec's `"loss_fn": "per_batch"` gives the head
  a custom loss_fn that wrongly reduces each example's loss to shape [D0]
  (`_PER_BATCH_LOSS_FNS`, the same in tests/head/head_fixture_cases.py).
"""
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

F32 = "float32"


def _require_reference_tf():
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if not tf.__version__.startswith("2.15.") or not hasattr(tf, "estimator"):
    sys.exit(f"make_head_fixture.py must run under TensorFlow 2.15 with "
             f"tensorflow-estimator (found TensorFlow {tf.__version__}); use "
             f"the reference venv, see `python tests/reference/ref_env.py`.")
  return tf


def dense(values, dtype):
  return {"values": values, "dtype": dtype}


def sparse(indices, values, dense_shape, dtype):
  return {"sparse": {"indices": indices, "values": values, "dense_shape": dense_shape},
          "dtype": dtype}


LOGITS_1 = [[0.5], [-1.2], [2.0], [0.1]]
LOGITS_3 = [[1.0, 0.2, -0.5], [0.3, 2.1, 0.0], [-1.0, 0.5, 1.5], [0.7, 0.6, 0.5]]
WEIGHTS = dense([[1.0], [2.0], [0.5], [3.0]], F32)
X = dense([[1.0], [2.0], [3.0], [4.0]], F32)

# id -> (head spec, logits, labels, features)
CASES = {
    "binary": ({"class": "BinaryClassHead", "kwargs": {}},
               LOGITS_1, dense([[1], [0], [1], [0]], "int64"), {"x": X}),
    "binary_weighted_thresholds_named": (
        {"class": "BinaryClassHead",
         "kwargs": {"weight_column": "w", "thresholds": [0.3, 0.7], "name": "bin"}},
        LOGITS_1, dense([[1.0], [0.0], [0.0], [1.0]], F32), {"w": WEIGHTS}),
    "binary_vocab_sum": (
        {"class": "BinaryClassHead",
         "kwargs": {"label_vocabulary": ["neg", "pos"], "loss_reduction": "sum"}},
        LOGITS_1, dense([["pos"], ["neg"], ["neg"], ["pos"]], "string"), {"x": X}),
    "multi_class": ({"class": "MultiClassHead", "kwargs": {"n_classes": 3}},
                    LOGITS_3, dense([[0], [1], [1], [2]], "int64"), {"x": X}),
    "multi_class_vocab_weighted_sum": (
        {"class": "MultiClassHead",
         "kwargs": {"n_classes": 3, "label_vocabulary": ["a", "b", "c"], "weight_column": "w",
                    "loss_reduction": "sum", "name": "mc"}},
        LOGITS_3, dense([["a"], ["c"], ["c"], ["b"]], "string"), {"w": WEIGHTS}),
    "multi_label": (
        {"class": "MultiLabelHead",
         "kwargs": {"n_classes": 3, "thresholds": [0.5], "classes_for_class_based_metrics": [0, 2]}},
        LOGITS_3, dense([[1, 0, 1], [0, 1, 0], [0, 1, 1], [1, 1, 0]], "int64"), {"x": X}),
    "multi_label_sparse_vocab_weighted": (
        {"class": "MultiLabelHead",
         "kwargs": {"n_classes": 3, "label_vocabulary": ["x", "y", "z"], "weight_column": "w",
                    "loss_reduction": "sum", "classes_for_class_based_metrics": ["y"]}},
        LOGITS_3,
        sparse([[0, 0], [0, 1], [1, 0], [2, 0], [3, 0], [3, 1]], ["x", "z", "y", "z", "x", "y"],
               [4, 2], "string"),
        {"w": WEIGHTS}),
    "multi_label_sparse_ids": (
        {"class": "MultiLabelHead", "kwargs": {"n_classes": 3}},
        LOGITS_3, sparse([[0, 0], [1, 0], [1, 1], [3, 0]], [2, 0, 1, 1], [4, 2], "int64"),
        {"x": X}),
    "regression_2d_weighted": (
        {"class": "RegressionHead", "kwargs": {"label_dimension": 2, "weight_column": "w"}},
        [[1.0, 2.0], [0.5, -1.0], [3.0, 0.0], [-2.0, 1.5]],
        dense([[1.5, 2.0], [0.0, -2.0], [2.0, 1.0], [-1.0, 1.0]], F32), {"w": WEIGHTS}),
    "regression_named_sum": (
        {"class": "RegressionHead", "kwargs": {"loss_reduction": "sum", "name": "reg"}},
        LOGITS_1, dense([1.0, -1.0, 2.5, 0.0], F32), {"x": X}),
    "poisson": ({"class": "PoissonRegressionHead", "kwargs": {}},
                LOGITS_1, dense([[1.0], [0.0], [5.0], [2.0]], F32), {"x": X}),
    "poisson_partial_loss": ({"class": "PoissonRegressionHead",
                              "kwargs": {"compute_full_loss": False, "weight_column": "w"}},
                             LOGITS_1, dense([[1.0], [0.0], [5.0], [2.0]], F32), {"w": WEIGHTS}),
    "logistic_regression": ({"class": "LogisticRegressionHead", "kwargs": {"weight_column": "w"}},
                            LOGITS_1, dense([[0.2], [0.0], [1.0], [0.6]], F32), {"w": WEIGHTS}),
    "multi_head": (
        {"class": "MultiHead", "kwargs": {"head_weights": [1.0, 2.0]},
         "heads": [{"class": "MultiClassHead", "kwargs": {"n_classes": 3, "name": "a"}},
                   {"class": "BinaryClassHead", "kwargs": {"name": "b", "weight_column": "w"}}]},
        {"a": LOGITS_3, "b": LOGITS_1},
        {"a": dense([[0], [1], [1], [2]], "int64"), "b": dense([[1], [0], [1], [1]], "int64")},
        {"w": WEIGHTS}),
    "multi_head_split_logits": (
        {"class": "MultiHead", "kwargs": {},
         "heads": [{"class": "RegressionHead", "kwargs": {"name": "r"}},
                   {"class": "MultiLabelHead", "kwargs": {"n_classes": 2, "name": "m"}}]},
        [[0.5, 1.0, -1.0], [1.5, -0.5, 0.2], [-0.3, 2.0, 2.0], [0.0, 0.1, -0.1]],
        {"r": dense([[0.0], [1.0], [0.0], [1.0]], F32),
         "m": dense([[1, 0], [0, 1], [1, 1], [0, 0]], "int64")},
        {"x": X}),
}

# id -> (where, head spec, logits, labels, features)
ERRORS = {
    "binary_label_above_range": ("loss", {"class": "BinaryClassHead", "kwargs": {}}, LOGITS_1,
                                 dense([[2], [0], [1], [0]], "int64"), {}),
    "multi_class_label_above_range": ("loss", {"class": "MultiClassHead", "kwargs": {"n_classes": 3}},
                                      LOGITS_3, dense([[3], [0], [1], [0]], "int64"), {}),
    "multi_class_label_negative": ("loss", {"class": "MultiClassHead", "kwargs": {"n_classes": 3}},
                                   LOGITS_3, dense([[-1], [0], [1], [0]], "int64"), {}),
    "multi_class_label_not_in_vocabulary": (
        "loss", {"class": "MultiClassHead", "kwargs": {"n_classes": 3, "label_vocabulary": ["a", "b", "c"]}},
        LOGITS_3, dense([["a"], ["d"], ["b"], ["c"]], "string"), {}),
    "multi_class_string_labels_without_vocabulary": (
        "loss", {"class": "MultiClassHead", "kwargs": {"n_classes": 3}},
        LOGITS_3, dense([["a"], ["b"], ["b"], ["c"]], "string"), {}),
    "multi_class_int_labels_with_vocabulary": (
        "loss", {"class": "MultiClassHead", "kwargs": {"n_classes": 3, "label_vocabulary": ["a", "b", "c"]}},
        LOGITS_3, dense([[0], [1], [1], [2]], "int64"), {}),
    "multi_class_one_hot_labels": (
        "loss", {"class": "MultiClassHead", "kwargs": {"n_classes": 3}},
        LOGITS_3, dense([[1, 0, 0], [0, 1, 0], [0, 1, 0], [0, 0, 1]], "int64"), {}),
    "binary_vocab_label_unknown": (
        "loss", {"class": "BinaryClassHead", "kwargs": {"label_vocabulary": ["neg", "pos"]}},
        LOGITS_1, dense([["pos"], ["maybe"], ["neg"], ["pos"]], "string"), {}),
    "labels_none": ("loss", {"class": "BinaryClassHead", "kwargs": {}}, LOGITS_1, None, {}),
    "logits_wrong_dimension": ("loss", {"class": "MultiClassHead", "kwargs": {"n_classes": 4}},
                               LOGITS_3, dense([[0], [1], [1], [2]], "int64"), {}),
    "weight_feature_missing": ("loss", {"class": "BinaryClassHead", "kwargs": {"weight_column": "w"}},
                               LOGITS_1, dense([[1], [0], [1], [0]], "int64"), {"x": X}),
    "multi_label_dense_label_above_range": (
        "loss", {"class": "MultiLabelHead", "kwargs": {"n_classes": 3}},
        LOGITS_3, dense([[2, 0, 1], [0, 1, 0], [0, 1, 1], [1, 1, 0]], "int64"), {}),
    "multi_label_sparse_label_above_range": (
        "loss", {"class": "MultiLabelHead", "kwargs": {"n_classes": 3}},
        LOGITS_3, sparse([[0, 0], [1, 0]], [3, 0], [4, 1], "int64"), {}),
    "logistic_label_above_one": ("loss", {"class": "LogisticRegressionHead", "kwargs": {}},
                                 LOGITS_1, dense([[0.2], [1.5], [1.0], [0.6]], F32), {}),
    "train_without_optimizer": ("train", {"class": "BinaryClassHead", "kwargs": {}}, LOGITS_1,
                                dense([[1], [0], [1], [0]], "int64"), {}),
    "multi_head_labels_not_dict": (
        "loss", {"class": "MultiHead", "kwargs": {},
                 "heads": [{"class": "BinaryClassHead", "kwargs": {"name": "b"}}]},
        {"b": LOGITS_1}, dense([[1], [0], [1], [0]], "int64"), {}),
    "multi_head_labels_missing_head": (
        "loss", {"class": "MultiHead", "kwargs": {},
                 "heads": [{"class": "BinaryClassHead", "kwargs": {"name": "b"}},
                           {"class": "RegressionHead", "kwargs": {"name": "r"}}]},
        {"b": LOGITS_1, "r": LOGITS_1}, {"b": dense([[1], [0], [1], [0]], "int64")}, {}),
    "multi_head_logits_wrong_total": (
        "loss", {"class": "MultiHead", "kwargs": {},
                 "heads": [{"class": "BinaryClassHead", "kwargs": {"name": "b"}},
                           {"class": "RegressionHead", "kwargs": {"name": "r"}}]},
        LOGITS_3, {"b": dense([[1], [0], [1], [0]], "int64"), "r": dense([[1.0]] * 4, F32)}, {}),
    "weights_wrong_shape": ("loss", {"class": "BinaryClassHead", "kwargs": {"weight_column": "w"}},
                            LOGITS_1, dense([[1], [0], [1], [0]], "int64"),
                            {"w": dense([[1.0, 2.0]] * 4, F32)}),
    "loss_fn_wrong_shape": ("loss", {"class": "BinaryClassHead", "kwargs": {},
                                     "loss_fn": "per_batch"},
                            LOGITS_1, dense([[1], [0], [1], [0]], "int64"), {}),
}
# Executing eagerly, tf.estimator checked shapes and label values at once (ValueError).
for _name in ("binary_label_above_range", "multi_class_label_negative", "logits_wrong_dimension",
              "multi_label_dense_label_above_range", "multi_label_sparse_label_above_range",
              "logistic_label_above_one", "weights_wrong_shape", "loss_fn_wrong_shape"):
  ERRORS["eager_" + _name] = ("eager",) + ERRORS[_name][1:]
# (Building a graph, these batch sizes fail in TensorFlow's own loss op, with its text.)
ERRORS["eager_binary_labels_batch_mismatch"] = (
    "eager", {"class": "BinaryClassHead", "kwargs": {}}, LOGITS_1, dense([[1], [0], [1]], "int64"), {})
ERRORS["eager_multi_class_labels_batch_mismatch"] = (
    "eager", {"class": "MultiClassHead", "kwargs": {"n_classes": 3}}, LOGITS_3,
    dense([[1], [0], [1]], "int64"), {})
ERRORS["eager_multi_class_weights_wrong_shape"] = (
    "eager", {"class": "MultiClassHead", "kwargs": {"n_classes": 3, "weight_column": "w"}},
    LOGITS_3, dense([[1], [0], [1], [0]], "int64"), {"w": dense([[1.0]] * 3, F32)})
for _name, (_cls, _kwargs) in {
    "multi_class_two_classes": ("MultiClassHead", {"n_classes": 2}),
    "multi_class_n_classes_none": ("MultiClassHead", {"n_classes": None}),
    "multi_class_vocabulary_length": ("MultiClassHead", {"n_classes": 3, "label_vocabulary": ["a", "b"]}),
    "multi_class_vocabulary_not_list": ("MultiClassHead", {"n_classes": 3, "label_vocabulary": "abc"}),
    "loss_reduction_none": ("MultiClassHead", {"n_classes": 3, "loss_reduction": "none"}),
    "loss_reduction_v1_sum": ("BinaryClassHead", {"loss_reduction": "weighted_sum"}),
    "binary_threshold_out_of_range": ("BinaryClassHead", {"thresholds": [0.5, 1.5]}),
    "binary_vocabulary_not_list": ("BinaryClassHead", {"label_vocabulary": "ab"}),
    "multi_label_one_class": ("MultiLabelHead", {"n_classes": 1}),
    "multi_label_threshold_zero": ("MultiLabelHead", {"n_classes": 3, "thresholds": [0.0]}),
    "multi_label_vocabulary_length": ("MultiLabelHead", {"n_classes": 3, "label_vocabulary": ["a"]}),
    "multi_label_class_metric_out_of_range": (
        "MultiLabelHead", {"n_classes": 3, "classes_for_class_based_metrics": [3]}),
    "multi_label_class_names_without_vocabulary": (
        "MultiLabelHead", {"n_classes": 3, "classes_for_class_based_metrics": ["a"]}),
    "regression_label_dimension_zero": ("RegressionHead", {"label_dimension": 0}),
}.items():
  ERRORS[_name] = ("construct", {"class": _cls, "kwargs": _kwargs}, None, None, {})
for _name, _spec in {
    "multi_head_empty": {"class": "MultiHead", "kwargs": {}, "heads": []},
    "multi_head_unnamed_head": {"class": "MultiHead", "kwargs": {},
                                "heads": [{"class": "BinaryClassHead", "kwargs": {}}]},
    "multi_head_weights_length": {"class": "MultiHead", "kwargs": {"head_weights": [1.0]},
                                  "heads": [{"class": "BinaryClassHead", "kwargs": {"name": "a"}},
                                            {"class": "BinaryClassHead", "kwargs": {"name": "b"}}]},
}.items():
  ERRORS[_name] = ("construct", _spec, None, None, {})


def _per_batch_loss_fn(labels, logits):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return tf.reduce_mean(tf.square(tf.cast(labels, tf.float32) - logits), axis=-1)


_PER_BATCH_LOSS_FNS = {"per_batch": _per_batch_loss_fn}


def build_head(tf, spec):
  if spec["class"] == "MultiHead":
    return tf.estimator.MultiHead([build_head(tf, h) for h in spec["heads"]], **spec["kwargs"])
  kwargs = dict(spec["kwargs"])
  if "loss_fn" in spec:
    kwargs["loss_fn"] = _PER_BATCH_LOSS_FNS[spec["loss_fn"]]
  return getattr(tf.estimator, spec["class"])(**kwargs)


def to_tensor(tf, value):
  if value is None:
    return None
  if "sparse" in value:
    s = value["sparse"]
    return tf.sparse.SparseTensor(indices=tf.constant(s["indices"], tf.int64),
                                  values=tf.constant(s["values"], value["dtype"]),
                                  dense_shape=tf.constant(s["dense_shape"], tf.int64))
  if "dtype" in value:
    return tf.constant(value["values"], dtype=value["dtype"])
  return {name: to_tensor(tf, v) for name, v in value.items()}


def logits_tensor(tf, logits):
  if isinstance(logits, dict):
    return {name: tf.constant(v, tf.float32) for name, v in logits.items()}
  return tf.constant(logits, tf.float32)


def plain(value):
  """numpy -> JSON (bytes as str; tuple prediction keys of MultiHead as "head/key")."""
  if isinstance(value, dict):
    return {("/".join(k) if isinstance(k, tuple) else k): plain(v) for k, v in value.items()}
  if hasattr(value, "tolist"):
    value = value.tolist()
  if isinstance(value, list):
    return [plain(v) for v in value]
  if isinstance(value, bytes):
    return value.decode()
  return value


def _session(tf):
  session = tf.compat.v1.Session()
  session.run([tf.compat.v1.global_variables_initializer(),
               tf.compat.v1.local_variables_initializer(), tf.compat.v1.tables_initializer()])
  return session


def run_case(tf, spec, logits, labels, features):
  ModeKeys = tf.estimator.ModeKeys  # pylint: disable=invalid-name
  out = {}
  with tf.Graph().as_default():
    head = build_head(tf, spec)
    feats = to_tensor(tf, features)
    loss = head.loss(to_tensor(tf, labels), logits_tensor(tf, logits), features=feats)
    loss_sum = None
    if spec["class"] != "MultiHead":
      sum_spec = dict(spec, kwargs=dict(spec["kwargs"], loss_reduction="sum"))
      loss_sum = build_head(tf, sum_spec).loss(to_tensor(tf, labels), logits_tensor(tf, logits),
                                               features=feats)
    predictions = head.predictions(logits_tensor(tf, logits))
    train = head.create_estimator_spec(
        features=feats, mode=ModeKeys.TRAIN, logits=logits_tensor(tf, logits),
        labels=to_tensor(tf, labels), train_op_fn=lambda _: tf.no_op(),
        regularization_losses=[tf.constant(0.25)])
    evaluation = head.create_estimator_spec(
        features=feats, mode=ModeKeys.EVAL, logits=logits_tensor(tf, logits),
        labels=to_tensor(tf, labels))
    predict = head.create_estimator_spec(features=feats, mode=ModeKeys.PREDICT,
                                         logits=logits_tensor(tf, logits))
    with _session(tf) as session:
      out["loss"] = float(session.run(loss))
      if loss_sum is not None:
        out["loss_sum"] = float(session.run(loss_sum))
      out["train_loss_regularized"] = float(session.run(train.loss))
      out["predictions"] = plain(session.run(predictions))
      session.run([update for _, update in evaluation.eval_metric_ops.values()])
      out["eval_loss"] = float(session.run(evaluation.loss))
      out["eval_metrics"] = {k: float(session.run(value))
                             for k, (value, _) in evaluation.eval_metric_ops.items()}
    outputs = predict.export_outputs
    default = outputs["serving_default"]
    out["export_outputs"] = {k: type(v).__name__ for k, v in outputs.items()}
    out["serving_default_same_as"] = sorted(k for k, v in outputs.items() if v is default)
  return out


def run_error(tf, where, spec, logits, labels, features):
  try:
    if where == "eager":
      build_head(tf, spec).loss(to_tensor(tf, labels), logits_tensor(tf, logits),
                                features=to_tensor(tf, features))
      return {"error": None}
    with tf.Graph().as_default():
      head = build_head(tf, spec)
      if where == "construct":
        return {"error": None}
      if where == "train":
        head.create_estimator_spec(features=to_tensor(tf, features), mode="train",
                                   logits=logits_tensor(tf, logits), labels=to_tensor(tf, labels))
      else:
        loss = head.loss(to_tensor(tf, labels), logits_tensor(tf, logits),
                         features=to_tensor(tf, features))
        with _session(tf) as session:
          session.run(loss)
  except Exception as e:  # pylint: disable=broad-except
    message = getattr(e, "message", None) or str(e)
    if isinstance(e, ValueError) and len(e.args) > 1:
      message = str(e.args[0])
    if isinstance(e, tf.errors.OpError):
      # The assertion's text: the first line that is not TensorFlow's
      # "Graph execution error" header or a traceback line.
      message = next(line for line in message.splitlines()
                     if line.strip() and not line.startswith(
                         (" ", "Graph execution error", "Detected at node", "Node:")))
    return {"error": type(e).__name__, "message": message}
  return {"error": None}


def main(argv):
  if len(argv) != 2:
    sys.exit(__doc__)
  tf = _require_reference_tf()
  tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.ERROR)
  cases = {}
  for case_id, (spec, logits, labels, features) in CASES.items():
    cases[case_id] = {"head": spec, "logits": logits, "labels": labels, "features": features,
                      "expected": run_case(tf, spec, logits, labels, features)}
  errors = {}
  for error_id, (where, spec, logits, labels, features) in ERRORS.items():
    errors[error_id] = {"where": where, "head": spec, "logits": logits, "labels": labels,
                        "features": features,
                        "expected": run_error(tf, where, spec, logits, labels, features)}
  with open(argv[1], "w") as f:
    json.dump({"tensorflow": tf.__version__, "cases": cases, "errors": errors}, f, indent=1,
              sort_keys=True)
    f.write("\n")
  print(f"wrote {argv[1]}: {len(cases)} cases, {len(errors)} errors")


if __name__ == "__main__":
  main(sys.argv)
