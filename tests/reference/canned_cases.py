"""The canned-estimator cases that tf.estimator 2.15 and estimator_lite both build.

One module for both sides of the compatibility proof of the canned estimators
(tests/reference/make_canned_fixtures.py and
tests/reference/read_canned_model_dir.py under TF 2.15 + tf.estimator,
tests/canned/test_tf215_compat.py under estimator_lite): nothing here imports
an estimator package. The caller passes the estimator module (`tf.estimator` or
`estimator_lite`), its v1 namespace (`tf.compat.v1.estimator` or
`estimator_lite.compat.v1`) and the feature-column module
(`tf.feature_column`), and gets the same estimator, input_fns and serving
receiver on either side.

Every case is described by plain data (`CASES`): the class, whether it is the
v1 variant, the label kind and the constructor arguments, feature columns named
by the keys of `feature_columns()`. expected.json records that description, so
the fixture says what built it.

Also here, because both sides need them: `to_json` (numpy/bytes -> JSON
values), `checkpoint_variables` (tf.train.list_variables as a dict),
`export_signatures` (the signature_defs of an exported SavedModel, read from
saved_model.pb) and `compare` (same keys, numbers within a tolerance).
"""
import math
import os

import numpy as np

# Fixed data: 8 rows, every column filled (the weighted column needs a weight
# for every term). "Clerk" is not in the occupation vocabulary (the OOV bucket).
FEATURES = {
    # Ages and hours in hundreds: inputs near 1 keep 6 steps of every
    # optimizer (SGD included) far from overflow.
    "age": [[0.23], [0.35], [0.47], [0.61], [0.29], [0.52], [0.38], [0.70]],
    "hours": [[0.40], [0.20], [0.45], [0.10], [0.38], [0.50], [0.30], [0.05]],
    "occupation": [["doctor"], ["engineer"], ["teacher"], ["clerk"],
                   ["engineer"], ["doctor"], ["teacher"], ["engineer"]],
    "city": [["paris"], ["oslo"], ["lima"], ["paris"], ["quito"], ["oslo"],
             ["rome"], ["lima"]],
    "terms": [["a", "b"], ["c", "d"], ["a", "c"], ["b", "b"], ["d", "a"],
              ["c", "c"], ["b", "d"], ["a", "a"]],
    "term_weights": [[1.0, 0.5], [2.0, 1.0], [0.5, 0.5], [1.5, 1.0],
                     [1.0, 2.0], [0.25, 1.0], [1.0, 1.0], [3.0, 0.5]],
    "weight": [[1.0], [2.0], [0.5], [1.0], [1.5], [1.0], [2.0], [0.5]],
}
LABELS = {
    "binary": [[0], [1], [1], [0], [1], [0], [1], [0]],
    "vocab3": [["low"], ["mid"], ["high"], ["low"], ["mid"], ["high"],
               ["mid"], ["low"]],
    "regression": [[1.5], [-0.5], [2.0], [0.25], [1.0], [-1.0], [0.5], [3.0]],
}
NUM_ROWS = 8
BATCH_SIZE = 4
PREDICT_ROWS = 6  # two batches, the second one short
TRAIN_STEPS = 6  # steps of the fixtures (and of estimator_lite's own dirs)
TF_RANDOM_SEED = 17
OCCUPATIONS = ["doctor", "engineer", "teacher"]
TERMS = ["a", "b", "c", "d"]
LABEL_VOCABULARY = ["low", "mid", "high"]
# Inputs every serving signature parses (the feature columns' parse spec).
WEIGHT_KEY = "weight"

_DEEP = ["age", "hours", "occupation_embedding", "age_buckets"]
_WIDE = ["occupation", "city_hashed", "occupation_x_age_buckets",
         "weighted_terms", "age"]

# name -> description. "v1": built from the v1 namespace; "labels": a key of
# LABELS; "kwargs": constructor arguments, the values of *feature_columns
# naming keys of feature_columns(); "features": the keys of FEATURES the
# input_fns feed (default all). tf.estimator 2.15's v2 Baseline estimators
# cannot train on more than one feature (their bias variable is created under
# the batch-size checks between features, so its initializer reads the input
# iterator before it is initialised; BaselineRegressor does not even exempt its
# weight_column from those checks): the Baseline cases feed "age" (and
# BaselineClassifier its weight) only.
CASES = {
    "dnn_classifier_binary": {
        "class": "DNNClassifier", "v1": False, "labels": "binary",
        "kwargs": {"hidden_units": [8, 4], "feature_columns": _DEEP}},
    "dnn_classifier_vocab3": {
        "class": "DNNClassifier", "v1": False, "labels": "vocab3",
        "kwargs": {"hidden_units": [6], "feature_columns": _DEEP,
                   "n_classes": 3, "label_vocabulary": LABEL_VOCABULARY,
                   "weight_column": WEIGHT_KEY, "optimizer": "Adam"}},
    "dnn_regressor": {
        "class": "DNNRegressor", "v1": False, "labels": "regression",
        "kwargs": {"hidden_units": [5, 3], "feature_columns": _DEEP,
                   "dropout": 0.1, "batch_norm": True}},
    "linear_classifier": {
        "class": "LinearClassifier", "v1": False, "labels": "binary",
        "kwargs": {"feature_columns": _WIDE, "weight_column": WEIGHT_KEY}},
    "linear_regressor": {
        "class": "LinearRegressor", "v1": False, "labels": "regression",
        "kwargs": {"feature_columns": _WIDE, "sparse_combiner": "mean",
                   "optimizer": "SGD"}},
    "dnn_linear_combined_classifier": {
        "class": "DNNLinearCombinedClassifier", "v1": False, "labels": "vocab3",
        "kwargs": {"linear_feature_columns": ["occupation_x_age_buckets",
                                              "occupation"],
                   "dnn_feature_columns": ["occupation_embedding", "age",
                                           "hours"],
                   "dnn_hidden_units": [4], "n_classes": 3,
                   "label_vocabulary": LABEL_VOCABULARY}},
    "dnn_linear_combined_regressor": {
        "class": "DNNLinearCombinedRegressor", "v1": False,
        "labels": "regression",
        "kwargs": {"linear_feature_columns": ["occupation_x_age_buckets",
                                              "city_hashed"],
                   "dnn_feature_columns": ["occupation_embedding", "age"],
                   "dnn_hidden_units": [4, 2], "weight_column": WEIGHT_KEY}},
    "baseline_classifier": {
        "class": "BaselineClassifier", "v1": False, "labels": "vocab3",
        "features": ["age", WEIGHT_KEY],
        "kwargs": {"n_classes": 3, "label_vocabulary": LABEL_VOCABULARY,
                   "weight_column": WEIGHT_KEY}},
    "baseline_regressor": {
        "class": "BaselineRegressor", "v1": False, "labels": "regression",
        "features": ["age"], "kwargs": {}},
    "dnn_classifier_v1": {
        "class": "DNNClassifier", "v1": True, "labels": "binary",
        "kwargs": {"hidden_units": [4], "feature_columns": ["age",
                                                            "occupation_embedding"]}},
    "linear_classifier_v1": {
        "class": "LinearClassifier", "v1": True, "labels": "vocab3",
        "kwargs": {"feature_columns": ["age", "occupation", "city_hashed",
                                       "occupation_x_age_buckets"],
                   "n_classes": 3, "label_vocabulary": LABEL_VOCABULARY}},
}


def feature_columns(fc):
  """The named feature columns, built with the feature-column module `fc`."""
  age = fc.numeric_column("age")
  age_buckets = fc.bucketized_column(age, boundaries=[0.3, 0.45, 0.6])
  occupation = fc.categorical_column_with_vocabulary_list(
      "occupation", OCCUPATIONS, num_oov_buckets=1)
  return {
      "age": age,
      "hours": fc.numeric_column("hours"),
      "age_buckets": age_buckets,
      "occupation": occupation,
      "occupation_embedding": fc.embedding_column(occupation, dimension=3),
      "city_hashed": fc.categorical_column_with_hash_bucket("city", 16),
      "occupation_x_age_buckets": fc.crossed_column(
          ["occupation", age_buckets], hash_bucket_size=20),
      "weighted_terms": fc.weighted_categorical_column(
          fc.categorical_column_with_vocabulary_list("terms", TERMS),
          "term_weights"),
  }


def _resolved_kwargs(case, fc):
  columns = feature_columns(fc)
  kwargs = {}
  for key, value in CASES[case]["kwargs"].items():
    if key.endswith("feature_columns"):
      value = [columns[name] for name in value]
    kwargs[key] = value
  return kwargs


def _column_names(case):
  names = []
  for key, value in CASES[case]["kwargs"].items():
    if key.endswith("feature_columns"):
      names.extend(value)
  return names


def make_estimator(case, estimators, estimators_v1, fc, model_dir):
  """Builds the estimator of `case` in `model_dir`.

  Args:
    case: a key of CASES.
    estimators: `tf.estimator` or `estimator_lite` (RunConfig, the v2 classes).
    estimators_v1: `tf.compat.v1.estimator` or `estimator_lite.compat.v1`.
    fc: the feature-column module (`tf.feature_column`).
    model_dir: the estimator's model_dir.
  """
  spec = CASES[case]
  namespace = estimators_v1 if spec["v1"] else estimators
  # keep_checkpoint_max=1: the fixtures keep the latest checkpoint only.
  config = estimators.RunConfig(tf_random_seed=TF_RANDOM_SEED,
                                keep_checkpoint_max=1)
  return getattr(namespace, spec["class"])(
      model_dir=model_dir, config=config, **_resolved_kwargs(case, fc))


def _feature_keys(case):
  return CASES[case].get("features", sorted(FEATURES))


def _features(case, rows):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return {key: tf.constant(FEATURES[key][:rows]) for key in _feature_keys(case)}


def train_input_fn(case):
  """input_fn: the 8 rows with the case's labels, batches of 4, repeated."""
  labels = LABELS[CASES[case]["labels"]]

  def input_fn():
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    return tf.data.Dataset.from_tensor_slices(
        (_features(case, NUM_ROWS), tf.constant(labels))).batch(BATCH_SIZE).repeat()
  return input_fn


def eval_input_fn(case):
  """input_fn: the 8 rows once, 2 batches (evaluate(steps=None) ends there)."""
  labels = LABELS[CASES[case]["labels"]]

  def input_fn():
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    return tf.data.Dataset.from_tensor_slices(
        (_features(case, NUM_ROWS), tf.constant(labels))).batch(BATCH_SIZE)
  return input_fn


def predict_input_fn(case):
  """input_fn: features of the first PREDICT_ROWS rows, batches of 4."""
  def input_fn():
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    return tf.data.Dataset.from_tensor_slices(
        _features(case, PREDICT_ROWS)).batch(BATCH_SIZE)
  return input_fn


def serving_input_receiver_fn(case, estimators, fc):
  """A parsing receiver (serialized tf.Example) for the case's feature columns.

  One string input, so the classify/regress signatures are exported too.
  Baseline cases have no feature columns: their fed features are numeric
  columns here.
  """
  columns = feature_columns(fc)
  used = [columns[name] for name in _column_names(case)]
  if not used:
    used = [fc.numeric_column(key) for key in _feature_keys(case)
            if key != WEIGHT_KEY]
  spec = fc.make_parse_example_spec(used)
  return estimators.export.build_parsing_serving_input_receiver_fn(spec)


def to_json(value):
  """numpy arrays/scalars -> lists/numbers, bytes -> str, recursively."""
  if isinstance(value, dict):
    return {str(k): to_json(v) for k, v in value.items()}
  if isinstance(value, (list, tuple)):
    return [to_json(v) for v in value]
  if isinstance(value, np.ndarray):
    return to_json(value.tolist())
  if isinstance(value, bytes):
    return value.decode("utf-8")
  if isinstance(value, (np.bool_, bool)):
    return bool(value)
  if isinstance(value, (np.integer, int)):
    return int(value)
  if isinstance(value, (np.floating, float)):
    return float(value)
  return value


def checkpoint_variables(model_dir):
  """{name: shape} of the latest checkpoint in model_dir."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return {name: list(shape) for name, shape in tf.train.list_variables(model_dir)}


def export_signatures(export_dir):
  """What a serving client sees in an exported SavedModel.

  Returns:
    {"tags": [[tag, ...] per meta graph], "serving_default": the key of the
    signature serving_default equals (other than itself), "signatures":
    {key: {"method_name", "inputs", "outputs"}}} of the serving meta graph.
  """
  # The proto module is the same in every TF 2.x: read saved_model.pb directly.
  from tensorflow.core.protobuf import saved_model_pb2  # pylint: disable=g-import-not-at-top
  if isinstance(export_dir, bytes):
    export_dir = export_dir.decode("utf-8")
  saved_model = saved_model_pb2.SavedModel()
  with open(os.path.join(export_dir, "saved_model.pb"), "rb") as f:
    saved_model.ParseFromString(f.read())
  tags = [sorted(mg.meta_info_def.tags) for mg in saved_model.meta_graphs]
  serving = [mg for mg in saved_model.meta_graphs
             if list(mg.meta_info_def.tags) == ["serve"]]
  assert len(serving) == 1, tags
  signatures = {
      key: {"method_name": sig.method_name,
            "inputs": sorted(sig.inputs),
            "outputs": sorted(sig.outputs)}
      for key, sig in serving[0].signature_def.items()}
  default = serving[0].signature_def.get("serving_default")
  same_as_default = sorted(
      key for key, sig in serving[0].signature_def.items()
      if key != "serving_default" and default is not None and
      sig.method_name == default.method_name and
      sorted(sig.outputs) == sorted(default.outputs) and
      [v.name for _, v in sorted(sig.outputs.items())] ==
      [v.name for _, v in sorted(default.outputs.items())])
  return {"tags": sorted(tags), "serving_default": same_as_default,
          "signatures": signatures}


def compare(expected, actual, tol, path=""):
  """Differences between two JSON values: same keys, numbers within `tol`.

  Numbers match when |a - e| <= tol * max(1, |e|); strings and bools exactly;
  lists need the same length.

  Returns:
    A list of "path: what differs" lines, empty when they match.
  """
  if isinstance(expected, dict):
    if not isinstance(actual, dict):
      return [f"{path}: expected a dict, got {actual!r}"]
    diffs = []
    if sorted(expected) != sorted(actual):
      diffs.append(f"{path}: keys differ: missing "
                   f"{sorted(set(expected) - set(actual))}, extra "
                   f"{sorted(set(actual) - set(expected))}")
    for key in sorted(set(expected) & set(actual)):
      diffs.extend(compare(expected[key], actual[key], tol, f"{path}/{key}"))
    return diffs
  if isinstance(expected, list):
    if not isinstance(actual, list) or len(actual) != len(expected):
      return [f"{path}: expected {expected!r}, got {actual!r}"]
    diffs = []
    for i, (e, a) in enumerate(zip(expected, actual)):
      diffs.extend(compare(e, a, tol, f"{path}[{i}]"))
    return diffs
  if isinstance(expected, bool) or isinstance(expected, str) or expected is None:
    return [] if expected == actual else [f"{path}: expected {expected!r}, got {actual!r}"]
  if isinstance(expected, (int, float)):
    if isinstance(actual, bool) or not isinstance(actual, (int, float)):
      return [f"{path}: expected {expected!r}, got {actual!r}"]
    if math.isnan(expected) and math.isnan(actual):
      return []
    if abs(actual - expected) <= tol * max(1.0, abs(expected)):
      return []
    return [f"{path}: expected {expected!r}, got {actual!r}"]
  return [] if expected == actual else [f"{path}: expected {expected!r}, got {actual!r}"]
