"""Recurrent neural network estimators: RNNClassifier, RNNEstimator (tf.estimator 2.15's experimental ones).

An RNN estimator reads sequences through sequence feature columns
(`tf.feature_column.sequence_numeric_column`, or an `embedding_column` /
`indicator_column` of a `sequence_categorical_column_*`), optionally joined at
every step by context features (dense columns, repeated along the sequence);
a Keras recurrent layer runs over the real steps (its mask comes from the
sequence lengths), a dense layer named "logits" maps its output to the
logits, and a head turns them into a loss, predictions and metrics.

With `return_sequences=False` the last real step's output gives one
prediction per sequence; with `return_sequences=True` every step gets one,
and the head must be a `SequentialHead` (RNNClassifier wraps its head in a
`SequentialHeadWrapper`) so that padding steps do not count.

The network is a `tf_keras` model named "rnn_model", so a checkpoint holds
`rnn_model/rnn/simple_rnn_cell/kernel` (or `.../lstm/lstm_cell/...`,
`.../rnn/stacked_rnn_cells/simple_rnn_cell_1/...`), `rnn_model/logits/kernel`,
`sequence_features/<column>_embedding/embedding_weights` and the optimizer's
`training/<Optimizer>/...` slots: tf.estimator 2.15's names.

```python
tokens = tf.feature_column.sequence_categorical_column_with_hash_bucket("tokens", 100)
classifier = estimator_lite.experimental.RNNClassifier(
    sequence_feature_columns=[tf.feature_column.embedding_column(tokens, 8)],
    units=[32, 16], cell_type="lstm", n_classes=3)
classifier.train(input_fn=train_input_fn, steps=1000)
```
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Union

import tensorflow as tf
import tf_keras

from estimator_lite._util import tf_internals
from estimator_lite.canned import estimator_rules
from estimator_lite.canned import optimizers
from estimator_lite.canned.estimator_rules import SUM_OVER_BATCH_SIZE
from estimator_lite.estimator import Estimator
from estimator_lite.estimator_spec import EstimatorSpec
from estimator_lite.head import base_head
from estimator_lite.head import head_utils
from estimator_lite.head import sequential_head
from estimator_lite.mode_keys import ModeKeys
from estimator_lite.run_config import RunConfig

# An optimizer given by name trains with this learning rate and clips the
# gradients to this norm (tf.estimator's defaults for the RNN estimators).
DEFAULT_LEARNING_RATE = 0.05
DEFAULT_CLIP_NORM = 5.0

SIMPLE_RNN_KEY = "simple_rnn"
LSTM_KEY = "lstm"
GRU_KEY = "gru"

# `units` given as one int: the cell type's own Keras layer. Looked up when a
# layer is made, so that it is the tf_keras class of that moment.
_LAYER_NAMES = {LSTM_KEY: "LSTM", GRU_KEY: "GRU", SIMPLE_RNN_KEY: "SimpleRNN"}
# `units` given as a list: one cell of the type per entry, in a
# `tf_keras.layers.RNN` (stacked when there are several).
_CELL_NAMES = {LSTM_KEY: "LSTMCell", GRU_KEY: "GRUCell", SIMPLE_RNN_KEY: "SimpleRNNCell"}


class _UseDefault:
  """The type of USE_DEFAULT: `cell_type` was not given."""

  def __repr__(self) -> str:
    return "USE_DEFAULT"


# Marks `cell_type` as not given (so that giving 'simple_rnn', the default,
# beside `rnn_cell_fn` is still an error, as in tf.estimator).
USE_DEFAULT: Any = _UseDefault()

CellType = Union[str, Callable[..., Any], _UseDefault]
OptimizerArg = Union[str, Callable[[], Any], Any]


# The Keras cells the names of _CELL_NAMES make.
_KERAS_CELLS = tuple(getattr(tf_keras.layers, name) for name in _CELL_NAMES.values())


def _cell_class(cell_type: Any) -> Any:
  """The cell class `cell_type` names, or `cell_type` itself (a class or factory)."""
  if isinstance(cell_type, str) and cell_type in _CELL_NAMES:
    return getattr(tf_keras.layers, _CELL_NAMES[cell_type])
  return cell_type


def _single_rnn_cell(units: int, cell_type: Any) -> Any:
  """Makes one RNN cell of `units` units.

  Args:
    units: the cell's number of units.
    cell_type: 'simple_rnn', 'lstm', 'gru', or a callable taking `units=` and
      returning a cell.

  Returns:
    The cell.

  Raises:
    ValueError: `cell_type` is neither a known name nor callable, or what it
      made has no `call` or `state_size`.
  """
  cell_class = _cell_class(cell_type)
  if not callable(cell_class):
    raise ValueError(
        "`cell_type` should be a class producing a RNN cell, or a string specifying "
        f"the cell type. Supported strings are: {[SIMPLE_RNN_KEY, LSTM_KEY, GRU_KEY]}.")
  if cell_class in _KERAS_CELLS:
    # Keras's own constructor switch (its default is off in graph mode): the
    # cell reads its variables once per session step instead of once per
    # time step of the while loop.
    cell = cell_class(units=units, enable_caching_device=True)
  else:
    cell = cell_class(units=units)
  if not hasattr(cell, "call") or not hasattr(cell, "state_size"):
    raise ValueError("RNN cell should have a `call` and `state_size` method.")
  return cell


def make_rnn_cell_fn(units: Iterable[int], cell_type: Any = SIMPLE_RNN_KEY
                     ) -> Callable[[], Any]:
  """Returns an `rnn_cell_fn` making one cell per entry of `units`.

  Args:
    units: the number of units of each RNN layer, in order.
    cell_type: 'simple_rnn', 'lstm', 'gru', or a class (callable) producing a
      cell from `units=`.

  Returns:
    `rnn_cell_fn() -> cell`, or a list of cells when `units` has several
    entries (a `tf_keras.layers.RNN` stacks a list).
  """
  units = tuple(units)

  def rnn_cell_fn() -> Any:
    cells = [_single_rnn_cell(n, cell_type) for n in units]
    return cells[0] if len(cells) == 1 else cells

  return rnn_cell_fn


def _check_rnn_cell_arguments(rnn_cell_fn: Optional[Callable[[], Any]], units: Any,
                              cell_type: Any) -> None:
  if rnn_cell_fn and (units or cell_type is not USE_DEFAULT):
    raise ValueError(
        "units and cell_type must not be specified when using rnn_cell_fn. Give "
        "either rnn_cell_fn alone, or units (and optionally cell_type).")


def make_rnn_layer(rnn_cell_fn: Optional[Callable[[], Any]], units: Any, cell_type: CellType,
                   return_sequences: bool) -> Any:
  """Makes the recurrent layer of an RNN estimator from its arguments.

  Args:
    rnn_cell_fn: a function returning a cell (or a list of cells), or None.
    units: an int (with a cell type named by string: that type's Keras
      layer), or the number of units of each layer.
    cell_type: 'simple_rnn', 'lstm', 'gru', a class producing a cell, or
      USE_DEFAULT ('simple_rnn').
    return_sequences: whether the layer returns every step's output or the
      last one.

  Returns:
    A `tf_keras.layers.RNN` (or `LSTM`, `GRU`, `SimpleRNN`).

  Raises:
    ValueError: `rnn_cell_fn` given with `units` or `cell_type`; a bad
      `cell_type`.
  """
  _check_rnn_cell_arguments(rnn_cell_fn, units, cell_type)
  if isinstance(cell_type, str) and cell_type in _LAYER_NAMES and isinstance(units, int):
    layer_class = getattr(tf_keras.layers, _LAYER_NAMES[cell_type])
    return layer_class(units=units, return_sequences=return_sequences)
  if not rnn_cell_fn:
    rnn_cell_fn = make_rnn_cell_fn(
        units, SIMPLE_RNN_KEY if cell_type is USE_DEFAULT else cell_type)
  return tf_keras.layers.RNN(cell=rnn_cell_fn(), return_sequences=return_sequences)


class RNNModel(tf_keras.models.Model):
  """The network of the RNN estimators as a Keras model: features in, logits out.

  Sequence features (and context features, repeated at every step) feed
  `rnn_layer` over the real steps of each sequence; a dense layer named
  "logits" maps its output to `units` logits. With `return_sequences`, the
  logits (`[batch_size, max_steps, units]`) carry the sequence mask as their
  Keras mask (`compute_mask`), which Keras losses and metrics (and the RNN
  estimators' sequential head) use to leave the padding out.
  """

  def __init__(self, rnn_layer: Any, units: int,
               sequence_feature_columns: Optional[Sequence[Any]],
               context_feature_columns: Optional[Sequence[Any]] = None,
               activation: Optional[Callable[..., Any]] = None,
               return_sequences: bool = False, **kwargs: Any) -> None:
    """Creates the model.

    Args:
      rnn_layer: a Keras recurrent layer (its `return_sequences` should match
        `return_sequences`).
      units: the dimension of the logits.
      sequence_feature_columns: the sequence columns (`sequence_numeric_column`,
        or embedding/indicator columns of `sequence_categorical_column_*`).
      context_feature_columns: dense columns (`numeric_column`, ...) whose
        values are repeated at every step, or None.
      activation: the activation of the logits layer (e.g.
        `tf_keras.activations.sigmoid`); None: none.
      return_sequences: whether to output every step's logits or the last
        real step's.
      **kwargs: passed to `tf_keras.Model` (e.g. `name`).

    Raises:
      ValueError: `units` is not an int.
    """
    super().__init__(**kwargs)
    if not isinstance(units, int):
      raise ValueError(f"units must be an int.  Given type: {type(units)}")
    self._return_sequences = return_sequences
    self._sequence_feature_columns = sequence_feature_columns
    self._context_feature_columns = context_feature_columns
    self._sequence_features_layer = tf_keras.experimental.SequenceFeatures(
        sequence_feature_columns)
    self._dense_features_layer: Any = None
    if context_feature_columns:
      # The v1 DenseFeatures, as tf.estimator used: it takes v1 and v2 columns.
      self._dense_features_layer = tf_internals.keras2_v1_dense_features()(context_feature_columns)
    self._rnn_layer = rnn_layer
    self._logits_layer = tf_keras.layers.Dense(units=units, activation=activation,
                                               name="logits")
    self._sequence_mask: Any = None

  def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
    """The sequence mask of the last call's logits with `return_sequences`, else None.

    Keras attaches it to the logits after each call (its mask convention), so
    that Keras losses and metrics leave the padding steps out; the RNN
    estimators' model_fn hands it to their sequential head.
    """
    del inputs, mask
    return self._sequence_mask

  def call(self, inputs: Dict[str, Any], training: Optional[bool] = None) -> tf.Tensor:
    """Computes the logits.

    Args:
      inputs: the features dict.
      training: whether the layers run in training mode (cell dropout).

    Returns:
      `[batch_size, max_steps, units]` logits with `return_sequences`
      (masked), else `[batch_size, units]`.

    Raises:
      ValueError: `inputs` is not a dict.
    """
    if not isinstance(inputs, dict):
      raise ValueError(
          f"inputs should be a dictionary of `Tensor`s. Given type: {type(inputs)}")
    with tf.name_scope("sequence_input_layer"):
      sequence_input, sequence_length = self._sequence_features_layer(inputs, training=training)
      tf.compat.v1.summary.histogram("sequence_length", sequence_length)
      if self._context_feature_columns:
        context_input = self._dense_features_layer(inputs, training=training)
        sequence_input = tf_internals.concatenate_context_input(
            context_input, sequence_input=sequence_input)

    sequence_length_mask = tf.sequence_mask(sequence_length)
    rnn_outputs = self._rnn_layer(sequence_input, mask=sequence_length_mask, training=training)
    logits = self._logits_layer(rnn_outputs)
    # What compute_mask returns: Keras asks for it right after this call.
    self._sequence_mask = sequence_length_mask if self._return_sequences else None
    return logits

  def get_config(self) -> Dict[str, Any]:
    """The model's constructor arguments, serialized (layers, activation, feature columns)."""
    context = self._context_feature_columns
    return {
        "name": self.name,
        "rnn_layer": {"class_name": self._rnn_layer.__class__.__name__,
                      "config": self._rnn_layer.get_config()},
        "units": self._logits_layer.units,
        "return_sequences": self._return_sequences,
        "activation": tf_keras.activations.serialize(self._logits_layer.activation),
        "sequence_feature_columns": tf_internals.serialize_feature_columns(
            self._sequence_feature_columns),
        "context_feature_columns": (tf_internals.serialize_feature_columns(context)
                                    if context else None),
    }

  @classmethod
  def from_config(cls, config: Dict[str, Any],
                  custom_objects: Optional[Dict[str, Any]] = None) -> "RNNModel":
    """Makes an RNNModel from `get_config()`'s dict.

    Args:
      config: the dict (consumed).
      custom_objects: names of custom classes or functions used in it.

    Returns:
      The model.
    """
    rnn_layer = tf_keras.layers.deserialize(config.pop("rnn_layer"),
                                            custom_objects=custom_objects)
    sequence_feature_columns = tf_internals.deserialize_feature_columns(
        config.pop("sequence_feature_columns"), custom_objects=custom_objects)
    context_feature_columns = config.pop("context_feature_columns", None)
    if context_feature_columns:
      context_feature_columns = tf_internals.deserialize_feature_columns(
          context_feature_columns, custom_objects=custom_objects)
    activation = tf_keras.activations.deserialize(config.pop("activation", None),
                                                  custom_objects=custom_objects)
    return cls(rnn_layer=rnn_layer, sequence_feature_columns=sequence_feature_columns,
               context_feature_columns=context_feature_columns, activation=activation,
               **config)


def _optimizer_for_training(optimizer: OptimizerArg) -> Any:
  """The Keras 2 optimizer a TRAIN graph uses, counting steps with the global step.

  A name gets learning rate 0.05 and gradients clipped to norm 5.0
  (tf.estimator's RNN defaults); an instance or callable is used as it is.
  """
  if isinstance(optimizer, str):
    optimizer = optimizers.get_optimizer_instance_v2(optimizer,
                                                     learning_rate=DEFAULT_LEARNING_RATE)
    optimizer.clipnorm = DEFAULT_CLIP_NORM
  else:
    optimizer = optimizers.get_optimizer_instance_v2(optimizer)
  estimator_rules.count_steps_with_global_step(optimizer)
  return optimizer


def rnn_estimator_spec(features: Dict[str, Any], labels: Any, mode: str, head: base_head.Head,
                       rnn_model: RNNModel, optimizer: OptimizerArg,
                       return_sequences: bool) -> EstimatorSpec:
  """Runs `rnn_model` on the features and returns `head`'s spec for `mode`.

  Args:
    features: the features dict. With `return_sequences`, the sequence mask
      is added to it under the head's `input_sequence_mask_key` unless the
      input already has it.
    labels: the labels (TRAIN, EVAL).
    mode: a `ModeKeys` value.
    head: the head (a `SequentialHead` with `return_sequences`).
    rnn_model: the network.
    optimizer: the estimator's optimizer argument (used in TRAIN only).
    return_sequences: whether the model outputs every step.

  Returns:
    The head's `EstimatorSpec`.

  Raises:
    ValueError: a bad optimizer (TRAIN), features not a dict.
  """
  training = mode == ModeKeys.TRAIN
  # The optimizer first: a bad one is reported before any graph is built.
  optimizer = _optimizer_for_training(optimizer) if training else None
  logits = rnn_model(features, training)
  # (The estimators check that a head given with return_sequences is sequential.)
  if (return_sequences and isinstance(head, sequential_head.SequentialHead)
      and head.input_sequence_mask_key not in features):
    features[head.input_sequence_mask_key] = rnn_model.compute_mask(features)
  return head.create_estimator_spec(
      features=features, mode=mode, labels=labels, optimizer=optimizer, logits=logits,
      update_ops=rnn_model.updates, trainable_variables=rnn_model.trainable_variables)


def _rnn_model_fn(head: base_head.Head, sequence_feature_columns: Optional[Sequence[Any]],
                  context_feature_columns: Optional[Sequence[Any]], units: Any,
                  cell_type: CellType, rnn_cell_fn: Optional[Callable[[], Any]],
                  return_sequences: bool, optimizer: OptimizerArg
                  ) -> Callable[..., EstimatorSpec]:
  """The model_fn an RNN estimator hands to `Estimator`: a fresh layer and model per graph."""

  def model_fn(features: Dict[str, Any], labels: Any, mode: str,
               config: Optional[RunConfig]) -> EstimatorSpec:
    del config  # Nothing to partition: the variables are a Keras model's.
    rnn_layer = make_rnn_layer(rnn_cell_fn=rnn_cell_fn, units=units, cell_type=cell_type,
                               return_sequences=return_sequences)
    rnn_model = RNNModel(rnn_layer=rnn_layer, units=head.logits_dimension,
                         sequence_feature_columns=sequence_feature_columns,
                         context_feature_columns=context_feature_columns,
                         return_sequences=return_sequences, name="rnn_model")
    return rnn_estimator_spec(features, labels, mode, head=head, rnn_model=rnn_model,
                              optimizer=optimizer, return_sequences=return_sequences)

  return model_fn


class RNNEstimator(Estimator):
  """A recurrent neural network topped by a head of your choice (tf.estimator.experimental.RNNEstimator).

  The features the input_fn returns need, for each sequence column, its key
  with a `SparseTensor` (`[batch_size, max_steps]`, or with more dimensions
  for a multi-dimensional sequence_numeric_column); for each context column,
  its key(s) as for any dense column (a `Tensor`, or `SparseTensor`s for a
  categorical column inside an embedding or indicator column); and the
  head's weight column when it has one.

  The loss, predictions, metrics and export signatures are the head's.
  """

  def __init__(self, head: base_head.Head, sequence_feature_columns: Iterable[Any],
               context_feature_columns: Optional[Iterable[Any]] = None, units: Any = None,
               cell_type: CellType = USE_DEFAULT,
               rnn_cell_fn: Optional[Callable[[], Any]] = None,
               return_sequences: bool = False, model_dir: Optional[str] = None,
               optimizer: OptimizerArg = "Adagrad", config: Optional[RunConfig] = None) -> None:
    """Creates the estimator.

    Args:
      head: a `Head`; a `SequentialHead` (such as a `SequentialHeadWrapper`)
        when `return_sequences` is True.
      sequence_feature_columns: the columns of the sequence input: sequence
        columns (`sequence_numeric_column`) or columns built on one
        (`embedding_column` of a `sequence_categorical_column_*`).
      context_feature_columns: dense columns (`numeric_column`, ..., not the
        sequence ones) whose values join the input at every step, or None.
      units: the number of units of each RNN layer (an iterable), or one int
        with a `cell_type` string (that type's Keras layer). Not with
        `rnn_cell_fn`.
      cell_type: 'simple_rnn' (the default), 'lstm', 'gru', or a class
        producing a cell from `units=`. Not with `rnn_cell_fn`.
      rnn_cell_fn: a function returning the RNN cell (for stacked layers, a
        `tf_keras.layers.StackedRNNCells`), for customisation beyond `units`
        and `cell_type`. Not with `units` or `cell_type`.
      return_sequences: whether to predict at every step (True) or once per
        sequence, from the last real step (False).
      model_dir: where checkpoints and summaries go (and where training
        resumes from).
      optimizer: a Keras 2 optimizer (`tf_keras.optimizers.legacy.*`), a
        callable returning one, or a name ('Adagrad', 'Adam', 'Ftrl',
        'RMSProp', 'SGD'): then learning rate 0.05 and gradients clipped to
        norm 5.0.
      config: a `RunConfig`.

    A cell has a `call` method and `state_size`, `output_size` and
    `get_initial_state` (see `tf_keras.layers.RNN`).

    Raises:
      ValueError: `return_sequences` with a head that is not a
        `SequentialHead`; `rnn_cell_fn` given with `units` or `cell_type`.
    """
    if return_sequences and not isinstance(head, sequential_head.SequentialHead):
      raise ValueError(
          "Provided head must be a `_SequentialHead` object when `return_sequences` is "
          "set to True. Wrap it: estimator_lite.head.sequential_head."
          "SequentialHeadWrapper(head, sequence_length_mask='sequence_mask').")
    _check_rnn_cell_arguments(rnn_cell_fn, units, cell_type)
    model_fn = _rnn_model_fn(
        head, sequence_feature_columns=_frozen(sequence_feature_columns),
        context_feature_columns=_frozen(context_feature_columns), units=units,
        cell_type=cell_type, rnn_cell_fn=rnn_cell_fn, return_sequences=return_sequences,
        optimizer=optimizer)
    super().__init__(model_fn=model_fn, model_dir=model_dir, config=config)


class RNNClassifier(RNNEstimator):
  """A classifier on a recurrent neural network (tf.estimator.experimental.RNNClassifier).

  Inputs as for `RNNEstimator`. The loss is the softmax (sigmoid for 2
  classes) cross-entropy; predictions carry "logits", "probabilities",
  "class_ids", "classes", "all_class_ids" and "all_classes" (and "logistic"
  for 2 classes), one per sequence, or one per step with
  `return_sequences=True`, then with the sequence mask too (under
  `sequence_mask`'s name).
  """

  def __init__(self, sequence_feature_columns: Iterable[Any],
               context_feature_columns: Optional[Iterable[Any]] = None, units: Any = None,
               cell_type: CellType = USE_DEFAULT,
               rnn_cell_fn: Optional[Callable[[], Any]] = None,
               return_sequences: bool = False, model_dir: Optional[str] = None,
               n_classes: int = 2, weight_column: Any = None,
               label_vocabulary: Optional[Sequence[str]] = None,
               optimizer: OptimizerArg = "Adagrad",
               loss_reduction: str = SUM_OVER_BATCH_SIZE,
               sequence_mask: str = "sequence_mask",
               config: Optional[RunConfig] = None) -> None:
    """Creates the classifier.

    Args:
      sequence_feature_columns: the columns of the sequence input (see
        `RNNEstimator`).
      context_feature_columns: dense columns repeated at every step, or None.
      units: the number of units of each RNN layer, or one int with a
        `cell_type` string. Not with `rnn_cell_fn`.
      cell_type: 'simple_rnn' (the default), 'lstm', 'gru', or a class
        producing a cell. Not with `rnn_cell_fn`.
      rnn_cell_fn: a function returning the RNN cell. Not with `units` or
        `cell_type`.
      return_sequences: whether to classify every step (labels
        `[batch_size, max_steps]`) or each sequence. With True,
        `weight_column` must be None or a string (a per-step weight feature).
      model_dir: where checkpoints and summaries go.
      n_classes: the number of classes, at least 2.
      weight_column: a feature name or `tf.feature_column.numeric_column`
        giving each example's weight in the loss and metrics.
      label_vocabulary: the class names when labels are strings; None: labels
        are class ids (0/1 or a probability for 2 classes).
      optimizer: a Keras 2 optimizer, a callable returning one, or a name
        (learning rate 0.05, gradients clipped to norm 5.0).
      loss_reduction: how the training loss reduces over the batch, a
        `tf_keras.losses.Reduction` other than NONE.
      sequence_mask: with `return_sequences`, the features key of the sequence
        mask: taken from the input when there, else computed from the
        sequence lengths; it keeps the padding out of the loss and metrics
        and is added to the predictions.
      config: a `RunConfig`.

    Raises:
      ValueError: n_classes < 2, a bad label_vocabulary or loss_reduction (the
        head's checks); `rnn_cell_fn` given with `units` or `cell_type`.
    """
    head: base_head.Head = head_utils.binary_or_multi_class_head(
        n_classes, weight_column=weight_column, label_vocabulary=label_vocabulary,
        loss_reduction=loss_reduction)
    if return_sequences:
      tf.compat.v1.logging.info("Converting head to sequential head with "
                                "`SequentialHeadWrapper` to allow sequential predictions.")
      head = sequential_head.SequentialHeadWrapper(head, sequence_length_mask=sequence_mask,
                                                   feature_columns=weight_column)
    super().__init__(
        head=head, sequence_feature_columns=sequence_feature_columns,
        context_feature_columns=context_feature_columns, units=units, cell_type=cell_type,
        rnn_cell_fn=rnn_cell_fn, return_sequences=return_sequences, model_dir=model_dir,
        optimizer=optimizer, config=config)


def _frozen(columns: Optional[Iterable[Any]]) -> Optional[List[Any]]:
  """The columns as a list read once (a generator would be empty in the second graph)."""
  return None if columns is None else list(columns)
