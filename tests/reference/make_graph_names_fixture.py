"""Writes tests/data/graph_names_215.json: the tensor names tf.estimator 2.15's canned graphs hold.

Programs name a canned estimator's tensors in hooks (tensorflow/models' r1
wide_deep example logs `head/truediv` and `head/weighted_loss/Sum` with a
LoggingTensorHook), so estimator_lite's graphs must hold the same names.
This script records, under TensorFlow 2.15 + tensorflow-estimator 2.15, which
names those are; tests/graph/test_graph_names_215.py builds the same graphs
with estimator_lite and checks each name. Regenerate from the repository root
with:

    ~/.cache/estimator_lite/ref-venv-2.15/bin/python \
        tests/reference/make_graph_names_fixture.py tests/data/graph_names_215.json

The graphs: for every canned family (DNN, Linear, DNNLinearCombined,
Baseline), its v2 class and its compat.v1 class, as a binary classifier, a
3-class classifier and a regressor, and a few with string labels and
example weights (`CASES`), and for each mode (TRAIN,
EVAL, PREDICT), one fresh `tf.Graph` built as `Estimator.train`/`evaluate`/
`predict` build theirs: the global step first, then the input_fn's batch
(a one-shot iterator's `get_next`), then the estimator's public
`model_fn(features, labels, mode, config)` (`build_graph`). Nothing runs.

The selection rule (`selected_names`), the names a program can take from
the spec, TensorBoard or the head's scope:

1. the EstimatorSpec's tensors: `loss`; every value of `predictions`; for each
   `eval_metric_ops` entry its value and its update op; in PREDICT, every
   tensor of every `export_outputs` entry;
2. the value input of every summary op the model_fn added (what TensorBoard
   shows: `loss`, `average_loss`, the layers' fraction_of_zero_values and
   activation histograms, ...);
3. every float or integer output of an op directly under a head's name
   scope (`head/<op>`, and `dnn/head/<op>`, `linear/head/<op>` where the v1
   DNN and Linear estimators built their heads; not `head/<scope>/<op>`),
   other than constants and the ops that hold, read or assign variables: the
   loss's pieces the v1 heads left there (`head/truediv`, `head/Sum`,
   `head/labels`, ...).

Each selected entry is the tensor name (`head/truediv:0`), or for an update
op that is an `Operation`, the op name; it maps to {"dtype": the DType's name,
or "operation", "shape": the static shape as a list (None for an unknown
dimension), or None for an unknown rank or an operation}.

The script's functions take the estimator modules as arguments, so the test
imports them and builds estimator_lite's graphs exactly the same way.
"""
import json
import os
import re
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

BATCH_SIZE = 4
FEATURES = {
    "x": [[0.5, -1.0], [1.5, 0.25], [-0.75, 2.0], [0.0, 1.0]],
    "c": [["a"], ["b"], ["c"], ["a"]],
    "w": [[1.0], [2.0], [0.5], [1.5]],
}
LABELS = {
    "binary": [[0], [1], [1], [0]],
    "multi": [[0], [2], [1], [2]],
    "regression": [[0.5], [-1.5], [2.0], [1.0]],
    "binaryvocab": [["no"], ["yes"], ["yes"], ["no"]],
    "multivocab": [["low"], ["high"], ["mid"], ["high"]],
}
MODES = ("train", "eval", "infer")  # ModeKeys' values

# Classes of a family (classifier, regressor) and the label kinds they take.
FAMILIES = ("DNN", "Linear", "DNNLinearCombined", "Baseline")
KINDS = {"binary": ("Classifier", {}),
         "multi": ("Classifier", {"n_classes": 3}),
         "regression": ("Regressor", {}),
         # String labels and example weights, on one family each.
         "binaryvocab": ("Classifier", {"label_vocabulary": ["no", "yes"],
                                        "weight_column": "w"}),
         "multivocab": ("Classifier", {"n_classes": 3,
                                       "label_vocabulary": ["low", "mid", "high"],
                                       "weight_column": "w"})}
CASES = tuple(f"{'v1' if v1 else 'v2'}_{family}_{kind}"
              for v1 in (True, False) for family in FAMILIES
              for kind in ("binary", "multi", "regression")) + (
                  "v1_DNN_multivocab", "v1_Linear_binaryvocab", "v2_DNN_binaryvocab",
                  "v2_DNNLinearCombined_multivocab")

# Op types of rule 3's exceptions: variables' state and constants, not names a
# program logs under the head.
_VARIABLE_OP_TYPES = frozenset((
    "VariableV2", "VarHandleOp", "ReadVariableOp", "Identity_Variable",
    "AssignVariableOp", "Assign", "AssignAdd", "AssignSub", "VarIsInitializedOp",
    "Const"))
_SUMMARY_OP_TYPES = frozenset(("ScalarSummary", "HistogramSummary"))


def _columns(fc, family):
  """The family's feature columns (a numeric one; the linear part also a categorical one)."""
  x = fc.numeric_column("x", shape=(2,))
  c = fc.categorical_column_with_vocabulary_list("c", ["a", "b", "c"])
  if family == "DNN":
    return {"feature_columns": [x], "hidden_units": [3, 2]}
  if family == "Linear":
    return {"feature_columns": [x, c]}
  if family == "DNNLinearCombined":
    return {"linear_feature_columns": [x, c], "dnn_feature_columns": [x],
            "dnn_hidden_units": [3]}
  return {}


def make_estimator(case, estimators, estimators_v1, fc, model_dir):
  """The canned estimator of `case` (a key of CASES).

  Args:
    case: "<v1|v2>_<family>_<kind>".
    estimators: `tf.estimator` or `estimator_lite`.
    estimators_v1: `tf.compat.v1.estimator` or `estimator_lite.compat.v1`.
    fc: the feature-column module.
    model_dir: the model_dir (nothing is written there).
  """
  version, family, kind = case.split("_")
  suffix, kwargs = KINDS[kind]
  namespace = estimators_v1 if version == "v1" else estimators
  return getattr(namespace, family + suffix)(
      model_dir=model_dir, **_columns(fc, family), **kwargs)


def _batch(tf, case, mode):
  """The features (and labels) of one batch, as an input_fn's Dataset gives them."""
  kind = case.split("_")[2]
  features = {key: tf.constant(value) for key, value in FEATURES.items()}
  if mode == "infer":
    dataset = tf.data.Dataset.from_tensor_slices(features)
  else:
    dataset = tf.data.Dataset.from_tensor_slices((features, tf.constant(LABELS[kind])))
  batch = tf.compat.v1.data.make_one_shot_iterator(dataset.batch(BATCH_SIZE)).get_next()
  return (batch, None) if mode == "infer" else batch


def build_graph(tf, estimator, case, mode):
  """Builds `mode`'s graph of `estimator` as its Estimator does; returns (graph, spec)."""
  graph = tf.Graph()
  with graph.as_default():
    tf.compat.v1.set_random_seed(17)
    tf.compat.v1.train.get_or_create_global_step()
    features, labels = _batch(tf, case, mode)
    spec = estimator.model_fn(features, labels, mode, estimator.config)
  return graph, spec


def describe(value):
  """{"dtype", "shape"} of a tensor, or of an op."""
  if hasattr(value, "dtype"):
    shape = value.shape
    return {"dtype": value.dtype.name,
            "shape": None if shape.rank is None else [d for d in shape.as_list()]}
  return {"dtype": "operation", "shape": None}


def _spec_values(spec, mode):
  """The tensors (and update ops) of rule 1."""
  values = []
  if spec.loss is not None:
    values.append(spec.loss)
  values.extend(spec.predictions.values() if isinstance(spec.predictions, dict)
                else [spec.predictions])
  for value, update_op in (spec.eval_metric_ops or {}).values():
    values.extend((value, update_op))
  if mode == "infer":
    for output in (spec.export_outputs or {}).values():
      values.extend(_export_tensors(output))
  return values


def _export_tensors(output):
  """The tensors an ExportOutput serves (classes, scores, value, or its outputs)."""
  tensors = []
  for attribute in ("classes", "scores", "value"):
    tensor = getattr(output, attribute, None)
    if tensor is not None:
      tensors.append(tensor)
  outputs = getattr(output, "outputs", None)
  if isinstance(outputs, dict):
    tensors.extend(outputs.values())
  return tensors


def selected_names(graph, spec, mode):
  """The names of the selection rule (module docstring) in `graph`, with dtype and shape."""
  selected = {}
  for value in _spec_values(spec, mode):
    selected[value.name] = describe(value)
  for op in graph.get_operations():
    if op.type in _SUMMARY_OP_TYPES:
      value = op.inputs[1]
      selected[value.name] = describe(value)
  direct = re.compile(r"(.*/)?head/[^/]+$")
  for op in graph.get_operations():
    if not direct.match(op.name) or op.type in _VARIABLE_OP_TYPES:
      continue
    for output in op.outputs:
      if output.dtype.is_floating or output.dtype.is_integer:
        selected[output.name] = describe(output)
  return selected


def graph_names(tf, estimators, estimators_v1, fc, model_dir):
  """{case: {mode: selected_names}} for every case and mode."""
  names = {}
  for case in CASES:
    estimator = make_estimator(case, estimators, estimators_v1, fc,
                               os.path.join(model_dir, case))
    names[case] = {}
    for mode in MODES:
      graph, spec = build_graph(tf, estimator, case, mode)
      names[case][mode] = dict(sorted(selected_names(graph, spec, mode).items()))
  return names


def main(argv):
  if len(argv) != 2:
    sys.exit(__doc__)
  import tempfile  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if not tf.__version__.startswith("2.15.") or not hasattr(tf, "estimator"):
    sys.exit("make_graph_names_fixture.py must run under TensorFlow 2.15 with "
             f"tensorflow-estimator (found {tf.__version__}): use the reference "
             "venv, see `python tests/reference/ref_env.py`.")
  tf.get_logger().setLevel("ERROR")
  with tempfile.TemporaryDirectory() as model_dir:
    names = graph_names(tf, tf.estimator, tf.compat.v1.estimator, tf.feature_column,
                        model_dir)
  with open(argv[1], "w") as f:
    json.dump({"tensorflow_version": tf.__version__, "graphs": names}, f, indent=1,
              sort_keys=True)
    f.write("\n")


if __name__ == "__main__":
  main(sys.argv)
