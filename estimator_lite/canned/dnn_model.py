"""The layers of the canned DNN: feature columns in, hidden layers, logits out.

Two builds, as tf.estimator 2.15 had them, because their variables are named
differently in a checkpoint:

* `DNNModelV2` (the top-level DNN estimators): Keras 2 layers named after
  name scopes, so that the model called "dnn" owns
  `dnn/input_from_feature_columns/input_layer/...`, `dnn/hiddenlayer_N/kernel`,
  `dnn/hiddenlayer_N/batchnorm_N/...` and `dnn/logits/...`. Its trainable
  variables and update ops are handed to the head explicitly.
* `DNNModelV1` (`compat.v1` and `dnn_logit_fn_builder`): Keras 2's
  `tf.compat.v1.layers`, which create their variables with `get_variable` in
  variable scopes captured when the model is built, so that the enclosing
  `variable_scope("dnn", partitioner=...)` partitions them across parameter
  servers; the input layer runs in `input_from_feature_columns` with its own
  partitioner.

Both write, for every hidden layer and the logits, the summaries
`<layer>/fraction_of_zero_values` and `<layer>/activation` (a histogram).
"""
from __future__ import annotations

import re
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import tensorflow as tf
import tf_keras

from estimator_lite._util import tf_internals
from estimator_lite.canned import estimator_rules
from estimator_lite.mode_keys import ModeKeys

Activation = Optional[Callable[..., Any]]

# TensorFlow's text when a column's key is not among the features.
_MISSING_FEATURE = re.compile(r"Feature (.+?) is not in features dictionary\.")


def check_units(units: Any) -> None:
  """Checks the logits dimension is an int.

  Args:
    units: the logits dimension given.

  Raises:
    ValueError: `units` is not an int (tf.estimator's text).
  """
  if not isinstance(units, int) or isinstance(units, bool):
    raise ValueError(f"units must be an int.  Given type: {type(units)}")


def check_feature_columns(feature_columns: Sequence[Any]) -> None:
  """Checks a DNN has feature columns.

  Args:
    feature_columns: the columns given.

  Raises:
    ValueError: none (the input layer's text, with the fix).
  """
  if not feature_columns:
    raise ValueError(
        "feature_columns must not be empty. Give the DNN the dense feature "
        "columns it reads, e.g. [tf.feature_column.numeric_column('x')].")


def add_layer_summary(value: Any, tag: str) -> None:
  """Writes the fraction of zeros and a histogram of a layer's output (tf.estimator's summaries).

  Args:
    value: the layer's output.
    tag: the summaries' prefix (the layer's name).
  """
  tf.compat.v1.summary.scalar(f"{tag}/fraction_of_zero_values", tf.math.zero_fraction(value))
  tf.compat.v1.summary.histogram(f"{tag}/activation", value)


def _scope_name(scope: str) -> str:
  # "hiddenlayer_0/" -> "hiddenlayer_0": a layer named after a name scope.
  return scope[:-1] if scope.endswith("/") else scope


def missing_feature_error(error: Exception, feature_columns: Sequence[Any],
                          features: Mapping[str, Any]) -> Optional[ValueError]:
  """A clearer error for a feature column whose key is not among the features, or None.

  Args:
    error: what building the input layer raised.
    feature_columns: the columns the input layer reads.
    features: the features the input_fn gave.

  Returns:
    A ValueError that keeps TensorFlow's text ("Feature z is not in features
    dictionary.") and adds the columns that read the key, the keys present
    and the fix; None when `error` is some other error.
  """
  match = _MISSING_FEATURE.search(str(error))
  if match is None:
    return None
  key = match.group(1)
  users = []
  for column in feature_columns:
    try:
      keys = tf.compat.v1.feature_column.make_parse_example_spec([column])
    except (TypeError, ValueError):
      continue
    if key in keys:
      users.append(getattr(column, "name", str(column)))
  used_by = f" (read by feature column {', '.join(repr(u) for u in users)})" if users else ""
  present = sorted(str(k) for k in features)
  return ValueError(
      f"{match.group(0)} The key {key!r}{used_by} is not among the features "
      f"the input_fn returned: {present}. Add a {key!r} entry to the features "
      "dict, or build the column on a key that is there.")


def call_input_layer(layer: Any, feature_columns: Sequence[Any], features: Mapping[str, Any],
                     training: bool) -> Any:
  """Runs an input layer on `features`, with missing_feature_error's text for a missing key.

  Args:
    layer: a DenseFeatures layer, or tf.compat.v1's InputLayer.
    feature_columns: the columns the layer reads.
    features: the features dict.
    training: whether the model trains.

  Returns:
    The dense input Tensor, `[batch_size, total width of the columns]`.

  Raises:
    ValueError: a column's key is missing (missing_feature_error's text), or
      the layer's own errors.
  """
  try:
    if isinstance(layer, tf_keras.layers.Layer):
      return layer(features, training=training)
    return layer(features)  # tf.compat.v1's InputLayer takes no `training`
  except ValueError as error:
    clearer = missing_feature_error(error, feature_columns, features)
    if clearer is None:
      raise
    raise clearer from error


class _DNNLayers(tf_keras.Model):
  """What DNNModelV2 and DNNModelV1 run alike, once their layers are made.

  Each hidden layer, then (in training) its dropout, then its batch norm, then
  the logits layer; every output is summarized under its layer's name.
  """

  _hidden_layers: List[Any]
  _hidden_layer_names: List[str]
  _dropout: Optional[float]
  _dropout_layers: List[Any]
  _batch_norm: bool
  _batch_norm_layers: List[Any]
  _logits_layer: Any
  _logits_name: str

  def _hidden_layers_and_logits(self, net: Any, is_training: bool) -> Any:
    for index, hidden_layer in enumerate(self._hidden_layers):
      net = hidden_layer(net)
      if self._dropout is not None and is_training:
        net = self._dropout_layers[index](net, training=True)
      if self._batch_norm:
        net = self._batch_norm_layers[index](net, training=is_training)
      add_layer_summary(net, self._hidden_layer_names[index])
    logits = self._logits_layer(net)
    add_layer_summary(logits, self._logits_name)
    return logits


class DNNModelV2(_DNNLayers):
  """tf.estimator 2.15's v2 DNN: DenseFeatures, Dense (+ dropout, batch norm) layers, logits.

  Build it inside the graph (and name scope) the model_fn runs in: the layer
  names come from name scopes opened there, as tf.estimator's did.
  """

  def __init__(self, units: int, hidden_units: Sequence[int], feature_columns: Sequence[Any],
               activation_fn: Activation, dropout: Optional[float], batch_norm: bool,
               name: Optional[str] = None, **kwargs: Any) -> None:
    """Creates the layers (their variables are created on the first call).

    Args:
      units: the logits dimension.
      hidden_units: units of each hidden layer.
      feature_columns: v2 dense feature columns.
      activation_fn: activation of the hidden layers.
      dropout: the rate of dropout after each hidden layer in training, or None.
      batch_norm: whether to batch-normalise each hidden layer's output.
      name: the model's name ("dnn" in the canned estimators).
      **kwargs: more Keras Model arguments.

    Raises:
      ValueError: a v1-only feature column (tf.estimator's text), or no columns.
    """
    super().__init__(name=name, **kwargs)
    self._feature_columns = tuple(feature_columns)
    check_feature_columns(self._feature_columns)
    with tf.compat.v1.name_scope("input_from_feature_columns") as input_scope:
      estimator_rules.check_v2_feature_columns(self._feature_columns)
      self._input_layer = tf_keras.layers.DenseFeatures(
          feature_columns=self._feature_columns, name=input_scope + "input_layer")
    self._dropout = dropout
    self._batch_norm = batch_norm
    self._hidden_layers: List[Any] = []
    self._dropout_layers: List[Any] = []
    self._batch_norm_layers: List[Any] = []
    self._hidden_layer_names: List[str] = []
    for layer_id, num_units in enumerate(hidden_units):
      with tf.compat.v1.name_scope(f"hiddenlayer_{layer_id}") as hidden_scope:
        layer_name = _scope_name(hidden_scope)
        self._hidden_layer_names.append(layer_name)
        self._hidden_layers.append(tf_keras.layers.Dense(
            units=num_units, activation=activation_fn,
            kernel_initializer=tf.compat.v1.glorot_uniform_initializer(), name=layer_name))
        if dropout is not None:
          self._dropout_layers.append(tf_keras.layers.Dropout(rate=dropout))
        if batch_norm:
          # momentum 0.999 (tf.contrib.layers.batch_norm's), as tf.estimator:
          # Keras's 0.99 diverged on some problems.
          self._batch_norm_layers.append(tf_keras.layers.BatchNormalization(
              momentum=0.999, trainable=True, name=f"{layer_name}/batchnorm_{layer_id}"))
    with tf.compat.v1.name_scope("logits") as logits_scope:
      self._logits_name = _scope_name(logits_scope)
      self._logits_layer = tf_keras.layers.Dense(
          units=units, activation=None,
          kernel_initializer=tf.compat.v1.glorot_uniform_initializer(), name=self._logits_name)

  def call(self, features: Mapping[str, Any], mode: str) -> Any:  # pylint: disable=arguments-differ
    """Returns the logits for `features` in `mode` (dropout only in TRAIN).

    Args:
      features: the features dict.
      mode: a ModeKeys value.

    Returns:
      The logits, `[batch_size, units]`.
    """
    is_training = mode == ModeKeys.TRAIN
    net = call_input_layer(self._input_layer, self._feature_columns, features, is_training)
    return self._hidden_layers_and_logits(net, is_training)


def dnn_logits_v2(units: int, hidden_units: Sequence[int], feature_columns: Sequence[Any],
                  activation_fn: Activation, dropout: Optional[float], batch_norm: bool,
                  features: Mapping[str, Any], mode: str) -> Tuple[Any, List[Any], List[Any]]:
  """Builds the v2 DNN named "dnn" on `features`.

  Args:
    units: the logits dimension (the head's `logits_dimension`).
    hidden_units: units of each hidden layer.
    feature_columns: v2 dense feature columns.
    activation_fn: activation of the hidden layers.
    dropout: dropout rate in training, or None.
    batch_norm: whether to batch-normalise the hidden layers.
    features: the features dict.
    mode: a ModeKeys value.

  Returns:
    (logits, the model's trainable variables, its update ops (batch norm's
    moving statistics)).

  Raises:
    ValueError: `units` is not an int, a v1-only feature column, no columns,
      or a column's key missing from `features`.
  """
  check_units(units)
  model = DNNModelV2(units, hidden_units, feature_columns, activation_fn, dropout,
                     batch_norm, name="dnn")
  logits = model(features, mode)
  return logits, list(model.trainable_variables), list(model.updates)


def _previous_name_scope() -> str:
  # The name scope around the one a Keras model opens for its own call.
  current = tf.compat.v1.get_default_graph().get_name_scope()
  return current.rsplit("/", 1)[0] + "/" if "/" in current else ""


class DNNModelV1(_DNNLayers):
  """tf.estimator 2.15's v1 DNN: variables in variable scopes, partitioned as the scopes say.

  Build it inside `tf.compat.v1.variable_scope("dnn", partitioner=...)`:
  each layer captures `hiddenlayer_N` / `logits` under it at construction.
  """

  def __init__(self, units: int, hidden_units: Sequence[int], feature_columns: Sequence[Any],
               activation_fn: Activation, dropout: Optional[float],
               input_layer_partitioner: Optional[Callable[..., Any]], batch_norm: bool,
               name: Optional[str] = None, **kwargs: Any) -> None:
    """Creates the layers in the current variable scope.

    Args:
      units: the logits dimension.
      hidden_units: units of each hidden layer.
      feature_columns: v1 or v2 dense feature columns.
      activation_fn: activation of the hidden layers.
      dropout: the rate of dropout after each hidden layer in training, or None.
      input_layer_partitioner: the partitioner of the input layer's variables.
      batch_norm: whether to batch-normalise each hidden layer's output.
      name: the model's name ("dnn" in the canned estimators).
      **kwargs: more Keras Model arguments.
    """
    super().__init__(name=name, **kwargs)
    dense, dropout_class, batch_normalization = tf_internals.keras2_legacy_layer_classes()
    self._feature_columns = tuple(feature_columns)
    check_feature_columns(self._feature_columns)
    if tf_internals.is_feature_column_v2(self._feature_columns):
      self._input_layer = tf_internals.keras2_v1_dense_features()(
          feature_columns=self._feature_columns, name="input_layer")
    else:
      self._input_layer = tf_internals.feature_column_input_layer_v1(
          self._feature_columns, name="input_layer")
    self._track_layer(self._input_layer, "input_layer")
    self._dropout = dropout
    self._batch_norm = batch_norm
    self._input_layer_partitioner = input_layer_partitioner
    self._hidden_layers: List[Any] = []
    self._dropout_layers: List[Any] = []
    self._batch_norm_layers: List[Any] = []
    self._hidden_layer_names: List[str] = []
    for layer_id, num_units in enumerate(hidden_units):
      with tf.compat.v1.variable_scope(f"hiddenlayer_{layer_id}") as hidden_scope:
        hidden_layer = dense(
            units=num_units, activation=activation_fn,
            kernel_initializer=tf.compat.v1.glorot_uniform_initializer(),
            name=hidden_scope, _scope=hidden_scope)
        self._track_layer(hidden_layer, hidden_scope.name)
        self._hidden_layer_names.append(hidden_scope.name)
        self._hidden_layers.append(hidden_layer)
        if dropout is not None:
          dropout_layer = dropout_class(rate=dropout)
          self._track_layer(dropout_layer, dropout_layer.name)
          self._dropout_layers.append(dropout_layer)
        if batch_norm:
          batch_norm_layer = batch_normalization(
              momentum=0.999, trainable=True, name=f"batchnorm_{layer_id}",
              _scope=f"batchnorm_{layer_id}")
          self._track_layer(batch_norm_layer, batch_norm_layer.name)
          self._batch_norm_layers.append(batch_norm_layer)
    with tf.compat.v1.variable_scope("logits") as logits_scope:
      self._logits_layer = dense(
          units=units, activation=None,
          kernel_initializer=tf.compat.v1.glorot_uniform_initializer(),
          name=logits_scope, _scope=logits_scope)
      self._track_layer(self._logits_layer, logits_scope.name)
      self._logits_name = logits_scope.name

  def _track_layer(self, layer: Any, attribute: str) -> None:
    # Keras tracks the variables of layers set as attributes; the names are
    # scope names ("dnn/hiddenlayer_0"), as tf.estimator's were.
    setattr(self, attribute, layer)

  def call(self, features: Mapping[str, Any], mode: str) -> Any:  # pylint: disable=arguments-differ
    """Builds the v1 network on `features` in the caller's scopes and returns its logits.

    Args:
      features: feature name -> Tensor or SparseTensor.
      mode: a ModeKeys value; dropout and batch-norm updates in TRAIN only.

    Returns:
      The logits, `[batch_size, units]`.
    """
    is_training = mode == ModeKeys.TRAIN
    # Keras opened a name scope of the model's name ("dnn/dnn/"): back to the
    # one around it, where tf.estimator's ops and summaries were.
    with tf.compat.v1.name_scope(_previous_name_scope()):
      with tf.compat.v1.variable_scope("input_from_feature_columns",
                                       partitioner=self._input_layer_partitioner):
        net = call_input_layer(self._input_layer, self._feature_columns, features, is_training)
      return self._hidden_layers_and_logits(net, is_training)


def dnn_logit_fn_v1(units: int, hidden_units: Sequence[int], feature_columns: Sequence[Any],
                    activation_fn: Activation, dropout: Optional[float],
                    input_layer_partitioner: Optional[Callable[..., Any]],
                    batch_norm: bool) -> Callable[[Dict[str, Any], str], Any]:
  """Returns `logit_fn(features, mode) -> logits` building a DNNModelV1 named "dnn".

  Args:
    units: the logits dimension.
    hidden_units: units of each hidden layer.
    feature_columns: v1 or v2 dense feature columns.
    activation_fn: activation of the hidden layers.
    dropout: dropout rate in training, or None.
    input_layer_partitioner: the input layer's partitioner, or None.
    batch_norm: whether to batch-normalise the hidden layers.

  Returns:
    The logit function.

  Raises:
    ValueError: `units` is not an int (tf.estimator's text).
  """
  check_units(units)

  def logit_fn(features: Dict[str, Any], mode: str) -> Any:
    model = DNNModelV1(units, hidden_units, feature_columns, activation_fn, dropout,
                       input_layer_partitioner, batch_norm, name="dnn")
    return model(features, mode)

  return logit_fn
