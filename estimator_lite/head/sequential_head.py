"""Sequential heads: a head for models with one output per time step (tf.estimator 2.15's).

A sequential model (an RNN with `return_sequences=True`) gives logits of shape
`[batch_size, max_steps, ...]`, where the steps past each sequence's length
are padding. A sequential head reads a boolean sequence mask (`[batch_size,
max_steps]`) from the features dict under its `input_sequence_mask_key` and
lets only the real steps count in the loss and the metrics.

`SequentialHeadWrapper` makes one of a head that scores single examples
(`BinaryClassHead`, `MultiClassHead`, ...): in TRAIN and EVAL it keeps the
masked steps of the labels, the logits and the named per-step features (the
weights), flattened to `[number_of_real_steps, ...]`, and hands them to the
wrapped head; in PREDICT the wrapped head predicts every step and the mask is
added to the predictions.

```python
head = SequentialHeadWrapper(estimator_lite.BinaryClassHead(weight_column="w"),
                             sequence_length_mask="mask", feature_columns="w")

def model_fn(features, labels, mode):
  sequence_input, sequence_length = tf_keras.experimental.SequenceFeatures(columns)(features)
  mask = tf.sequence_mask(sequence_length)
  outputs = tf_keras.layers.SimpleRNN(4, return_sequences=True)(sequence_input, mask=mask)
  logits = tf_keras.layers.Dense(head.logits_dimension)(outputs)
  features["mask"] = mask
  return head.create_estimator_spec(features=features, mode=mode, labels=labels,
                                    logits=logits, optimizer=optimizer,
                                    trainable_variables=...)
```
"""
from __future__ import annotations

import abc
import collections.abc
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

import tensorflow as tf

from estimator_lite.estimator_spec import EstimatorSpec
from estimator_lite.head import base_head
from estimator_lite.head.multi_head import MultiHead
from estimator_lite.mode_keys import ModeKeys

# tf.estimator's text when a flattened tensor does not have as many rows as
# the mask has real steps.
_SHAPE_MISMATCH = "Tensor shape is incompatible with provided mask."


class SequentialHead(base_head.Head):
  """A head for sequence outputs: it reads a sequence mask from the features.

  tf.estimator 2.15's `_SequentialHead` (its error texts still say that
  name). Subclasses add `input_sequence_mask_key`, the key of the boolean
  `[batch_size, max_steps]` mask in the features dict: a model_fn sets it
  (`features[head.input_sequence_mask_key] = tf.sequence_mask(lengths)`) unless
  the input already carries it.
  """

  @property
  @abc.abstractmethod
  def input_sequence_mask_key(self) -> str:
    """The key of the sequence mask tensor in the features dict.

    Returns:
      A string.
    """
    raise NotImplementedError("Calling an abstract method.")


class SequentialHeadWrapper(SequentialHead):
  """A sequential head made of a head that scores single examples.

  The sequence mask decides which steps count:
    - the loss (`loss`, and `create_estimator_spec` in TRAIN and EVAL) is the
      wrapped head's over the real steps only;
    - the metrics (`update_metrics`, and EVAL) likewise;
    - in PREDICT, the wrapped head's predictions for every step, plus the mask
      under `input_sequence_mask_key`.
  """

  def __init__(self, static_head: base_head.Head,
               sequence_length_mask: str = "sequence_length_mask",
               feature_columns: Any = None) -> None:
    """Wraps `static_head`.

    Args:
      static_head: the `Head` to apply to each real step (not a `MultiHead`).
      sequence_length_mask: the key of the sequence mask in the features dict:
        a dense boolean (or 0/1) tensor of shape `[batch_size, max_steps]`.
      feature_columns: a feature name, or an iterable of them: the per-step
        features (typically the example weights) that are flattened with the
        mask and passed to `static_head` in TRAIN and EVAL. Other features are
        not passed.

    Raises:
      TypeError: `sequence_length_mask` is not a string; `feature_columns` is
        neither a string nor an iterable of strings.
      ValueError: `static_head` is a `MultiHead`.
    """
    if not isinstance(sequence_length_mask, str):
      raise TypeError(
          "`sequence_mask` column must be a string. Given type: "
          f"{type(sequence_length_mask)}. Pass the features-dict key of the "
          "[batch_size, max_steps] mask, e.g. 'sequence_mask'.")
    self._sequence_length_mask = sequence_length_mask

    feature_columns = feature_columns or []
    if not isinstance(feature_columns, collections.abc.Iterable):
      raise TypeError(
          "`feature_columns` must be either a string or an iterable of strings "
          f"got {type(feature_columns)} instead.")
    columns = [feature_columns] if isinstance(feature_columns, str) else list(feature_columns)
    for column in columns:
      # Only feature names: a feature column would need its transformation
      # applied before the mask, which tf.estimator did not support either.
      if not isinstance(column, str):
        raise TypeError(
            f"Column must a string. Given type: {type(column)}. Name the "
            "per-step feature by its key in the features dict.")
    self._feature_columns = columns

    if isinstance(static_head, MultiHead):
      raise ValueError("`MultiHead` is not supported with `SequentialHeadWrapper`.")
    self._static_head = static_head

  # -- the properties of the wrapped head ----------------------------------------

  @property
  def input_sequence_mask_key(self) -> str:
    """The key of the sequence mask in the features dict."""
    return self._sequence_length_mask

  @property
  def logits_dimension(self) -> int:
    """The wrapped head's logits dimension (of each step)."""
    return self._static_head.logits_dimension

  @property
  def loss_reduction(self) -> str:
    """The wrapped head's loss reduction."""
    return self._static_head.loss_reduction

  @property
  def name(self) -> Optional[str]:
    """`<wrapped head's name>_sequential`, or None when the wrapped head has none."""
    if self._static_head.name:
      return f"{self._static_head.name}_sequential"
    return None

  @property
  def static_head(self) -> base_head.Head:
    """The wrapped head."""
    return self._static_head

  # -- flattening ------------------------------------------------------------------

  def _sequence_mask(self, features: base_head.Features) -> Any:
    """The mask in `features`; ValueError (tf.estimator's text) when it is not there."""
    features = features or {}
    if self.input_sequence_mask_key not in features:
      raise ValueError(
          f"The provided sequence_length_mask key `{self.input_sequence_mask_key}` "
          "should be included in the features dictionary, but was not found. "
          f"Found keys: {list(features.keys())}.")
    return features[self.input_sequence_mask_key]

  def _flatten(self, labels: Any, logits: Any,
               features: base_head.Features) -> Tuple[Any, Any, Dict[str, Any]]:
    """The real steps of labels, logits and the head's per-step features.

    Args:
      labels: a `Tensor` or `SparseTensor` of rank >= 2 (`[batch_size,
        max_steps, ...]`).
      logits: a `Tensor` of rank >= 2.
      features: the features dict, holding the mask.

    Returns:
      (labels, logits, features): dense tensors of shape
      `[number_of_real_steps, ...]` (a rank-2 input gets a trailing dimension
      of 1), and a dict of the head's feature columns flattened alike.

    Raises:
      ValueError: the mask is missing or not of rank 2, a feature column is
        missing, or a tensor has rank < 2.
    """
    features = features or {}
    sequence_mask = self._sequence_mask(features)
    if sequence_mask.get_shape().ndims != 2:
      raise ValueError(
          "Mask is expected to have two dimensions, got "
          f"{sequence_mask.get_shape().ndims} instead.")

    with tf.name_scope("flatten"):
      real_steps = tf.math.reduce_sum(tf.cast(sequence_mask, tf.int32))
      flat_logits = flatten_tensor(logits, sequence_mask, real_steps)
      flat_labels = flatten_tensor(labels, sequence_mask, real_steps)
      flat_features = {}
      for column in self._feature_columns:
        if column not in features:
          raise ValueError(f"`{column}` column expected in features dictionary.")
        flat_features[column] = flatten_tensor(features[column], sequence_mask, real_steps)
    return flat_labels, flat_logits, flat_features

  # -- the Head methods --------------------------------------------------------------

  # tf.estimator's order: logits before labels (unlike `Head.loss`).
  def loss(self, logits: Any, labels: Any,  # type: ignore[override]
           features: base_head.Features = None, mode: Optional[str] = None,
           regularization_losses: base_head.RegularizationLosses = None) -> Any:
    """The wrapped head's training loss over the real steps.

    Args:
      logits: `[batch_size, max_steps, ...]` logits.
      labels: `[batch_size, max_steps, ...]` labels (`Tensor` or
        `SparseTensor`).
      features: the features dict, with the mask and the head's per-step
        features.
      mode: a `ModeKeys` value.
      regularization_losses: scalar losses added to the loss.

    Returns:
      A scalar `Tensor`.
    """
    flat_labels, flat_logits, flat_features = self._flatten(labels, logits, features)
    return self._static_head.loss(
        logits=flat_logits, labels=flat_labels, features=flat_features, mode=mode,
        regularization_losses=regularization_losses)

  def predictions(self, logits: Any, keys: Optional[Sequence[str]] = None) -> Dict[Any, Any]:
    """The wrapped head's predictions (of every step)."""
    return self._static_head.predictions(logits, keys=keys)

  def metrics(self, regularization_losses: base_head.RegularizationLosses = None
              ) -> Dict[str, Any]:
    """The wrapped head's metric objects."""
    return self._static_head.metrics(regularization_losses)

  def update_metrics(  # type: ignore[override]
      self, eval_metrics: Dict[str, Any], features: base_head.Features, logits: Any,
      labels: Any, regularization_losses: base_head.RegularizationLosses = None
  ) -> Dict[str, Any]:
    """Updates the wrapped head's metrics with the real steps of one batch.

    Args:
      eval_metrics: the dict `metrics()` returned.
      features: the features dict, with the mask and the head's per-step
        features.
      logits: `[batch_size, max_steps, ...]` logits.
      labels: `[batch_size, max_steps, ...]` labels.
      regularization_losses: scalar losses for the `regularization_loss`
        metric.

    Returns:
      `eval_metrics`, updated.
    """
    flat_labels, flat_logits, flat_features = self._flatten(labels, logits, features)
    return self._static_head.update_metrics(
        eval_metrics=eval_metrics, features=flat_features, logits=flat_logits,
        labels=flat_labels, regularization_losses=regularization_losses)

  def create_estimator_spec(self, features: base_head.Features, mode: str, logits: Any,
                            labels: Any = None, optimizer: Any = None,
                            trainable_variables: Optional[Sequence[Any]] = None,
                            train_op_fn: Optional[Callable[[Any], Any]] = None,
                            update_ops: Optional[Sequence[Any]] = None,
                            regularization_losses: base_head.RegularizationLosses = None
                            ) -> EstimatorSpec:
    """The `EstimatorSpec` for `mode`.

    In TRAIN and EVAL, the wrapped head's spec for the real steps (labels,
    logits and the head's per-step features flattened with the mask). In
    PREDICT, the wrapped head's spec for every step, its predictions plus the
    mask under `input_sequence_mask_key` (the export signatures are the
    wrapped head's, without the mask).

    Args:
      features: the features dict, with the mask.
      mode: a `ModeKeys` value.
      logits: `[batch_size, max_steps, ...]` logits.
      labels: `[batch_size, max_steps, ...]` labels (TRAIN and EVAL).
      optimizer: a Keras 2 optimizer (TRAIN), or None.
      trainable_variables: the variables `optimizer` trains.
      train_op_fn: builds the train op from the loss when `optimizer` is None.
      update_ops: ops run with each training step.
      regularization_losses: scalar losses added to the loss.

    Returns:
      An `EstimatorSpec`.

    Raises:
      ValueError: the mask is missing or not of rank 2 (see `_flatten`); the
        wrapped head's errors.
    """
    if mode == ModeKeys.PREDICT:
      spec = self._static_head.create_estimator_spec(features=features, mode=mode,
                                                     logits=logits)
      predictions = dict(spec.predictions or {})
      predictions[self.input_sequence_mask_key] = self._sequence_mask(features)
      return spec.replace(predictions=predictions)

    flat_labels, flat_logits, flat_features = self._flatten(labels, logits, features)
    return self._static_head.create_estimator_spec(
        features=flat_features, mode=mode, logits=flat_logits, labels=flat_labels,
        optimizer=optimizer, trainable_variables=trainable_variables,
        train_op_fn=train_op_fn, update_ops=update_ops,
        regularization_losses=regularization_losses)


def flatten_tensor(tensor: Any, sequence_mask: Any, expected_length: Any) -> tf.Tensor:
  """Keeps the real steps of a `[batch_size, max_steps, ...]` tensor, as rows.

  A dense tensor keeps the steps where `sequence_mask` is true; a
  `SparseTensor` keeps its values (in row-major order: its indices are
  reordered first), its padding being the values it does not have. A rank-2
  input gets a trailing dimension of 1.

  Args:
    tensor: a `Tensor` or `SparseTensor` of rank >= 2.
    sequence_mask: a boolean `[batch_size, max_steps]` tensor.
    expected_length: a scalar int32 tensor, the number of real steps.

  Returns:
    A dense `Tensor` of shape `[expected_length, D2, ... DN]` (`[expected_length,
    1]` for a rank-2 input).

  Raises:
    ValueError: `tensor` has rank < 2, or is neither a `Tensor` nor a
      `SparseTensor`; eagerly, its real steps are not `expected_length`.
    tf.errors.InvalidArgumentError: in a graph, when run, its real steps are
      not `expected_length`.
  """
  shape = tensor.get_shape()
  if shape.ndims < 2:
    raise ValueError(
        f"Input tensor expected to have at least 2 dimensions, got {shape.ndims} instead.")
  if isinstance(tensor, tf.sparse.SparseTensor):
    # The values follow the order of the indices, so the rows come out in
    # step order only once the indices are in row-major order.
    flat_tensor = tf.sparse.reorder(tensor).values
    if shape.ndims > 2:
      flat_tensor = tf.reshape(flat_tensor, tf.concat([[-1], shape[2:]], axis=0))
  elif isinstance(tensor, tf.Tensor):
    flat_tensor = tf.boolean_mask(tensor, sequence_mask)
  else:
    raise ValueError(
        f"`tensor` expected to be a `Tensor` or  `SparseTensor` got `{tensor}` instead.")
  if shape.ndims == 2:
    flat_tensor = tf.expand_dims(flat_tensor, -1)
    expected_shape = tf.concat([[expected_length], [1]], axis=0)
  else:
    expected_shape = tf.concat([[expected_length], shape[2:]], axis=0)

  if tf.executing_eagerly():
    if tuple(flat_tensor.shape) != tuple(expected_shape.numpy()):
      raise ValueError(_SHAPE_MISMATCH)
    return flat_tensor
  with tf.control_dependencies([
      tf.compat.v1.debugging.assert_equal(tf.shape(flat_tensor), expected_shape,
                                          message=_SHAPE_MISMATCH)]):
    return tf.identity(flat_tensor)

