"""MultiHead: several named heads trained together on one model (tf.estimator 2.15's)."""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

import tensorflow as tf
import tf_keras

from estimator_lite.canned.metric_keys import MetricKeys
from estimator_lite.estimator_spec import EstimatorSpec
from estimator_lite.export import export_output
from estimator_lite.head import base_head
from estimator_lite.head import losses as losses_lib
from estimator_lite.head import train_op as train_op_lib
from estimator_lite.mode_keys import ModeKeys


def _no_op_train_fn(loss: Any) -> Any:
  """The train op of each head inside a MultiHead: training is done once, on the summed loss."""
  del loss
  return tf.no_op()


def _default_export_output(export_outputs: Mapping[str, export_output.ExportOutput],
                           head_name: str) -> export_output.ExportOutput:
  """The signature a head serves by default: its only one, or its `serving_default`."""
  if len(export_outputs) == 1:
    return next(iter(export_outputs.values()))
  try:
    return export_outputs[base_head.DEFAULT_SERVING_KEY]
  except KeyError:
    raise ValueError(
        f"{head_name} did not specify default export_outputs. Given: {export_outputs} "
        "Suggested fix: Use one of the heads in tf.estimator, or include key "
        f"{base_head.DEFAULT_SERVING_KEY} in export_outputs.") from None


class MultiHead(base_head.Head):
  """A head that combines named heads: multi-objective learning on one model.

  * Loss: the sum of the heads' losses (each times its `head_weights` entry).
  * Training: one train op on that sum.
  * Evaluation: every head's metrics, keyed with its name (`"auc/head1"`),
    plus each head's loss as `"loss/<name>"`.
  * Prediction: every head's predictions, keyed by `(head name, key)`.
  * Export: the first head's default signature is `serving_default`; every
    head's signatures are also exported as `"<name>"` (its default) and
    `"<name>/<key>"`, and `predict` merges all heads' predict outputs as
    `"<name>/<prediction key>"`.

  Logits and labels are dicts keyed by head name; logits may also be one
  `[D0, ... DN, logits_dimension]` tensor, split along its last dimension in
  the heads' order (`logits_dimension` is the sum of theirs).

  ```python
  head = estimator_lite.MultiHead([
      estimator_lite.MultiClassHead(n_classes=3, name="kind"),
      estimator_lite.BinaryClassHead(name="spam")])
  spec = head.create_estimator_spec(
      features, mode, logits={"kind": kind_logits, "spam": spam_logits},
      labels={"kind": kind_labels, "spam": spam_labels}, optimizer=optimizer,
      trainable_variables=variables)
  ```

  Args:
    heads: a list or tuple of `Head`s, each with a `name`. The first is
      served by default.
    head_weights: optional weights of the heads' losses in the sum, one per
      head; None weighs each 1.

  Raises:
    ValueError: no heads, a head without a name, or `head_weights` of another
      length (tf.estimator's texts).
  """

  def __init__(self, heads: Sequence[base_head.Head],
               head_weights: Optional[Sequence[float]] = None) -> None:
    if not heads:
      raise ValueError(f"Must specify heads. Given: {heads}. Pass a list of named heads.")
    if head_weights and len(head_weights) != len(heads):
      raise ValueError(
          "heads and head_weights must have the same size. "
          f"Given len(heads): {len(heads)}. Given len(head_weights): {len(head_weights)}. "
          "Give one weight per head.")
    self._logits_dimension = 0
    for head in heads:
      if head.name is None:
        raise ValueError(
            f"All given heads must have name specified. Given: {head}. Pass name= to "
            "each head.")
      self._logits_dimension += head.logits_dimension
    self._heads = tuple(heads)
    self._head_weights = tuple(head_weights) if head_weights else ()
    self._loss_regularization_key = base_head.summary_key(self.name, MetricKeys.LOSS_REGULARIZATION)
    self._loss_keys = tuple(f"{MetricKeys.LOSS}/{head.name}" for head in self._heads)

  @property
  def name(self) -> str:
    """See `Head`: the heads' names joined by "_"."""
    return "_".join(str(head.name) for head in self._heads)

  @property
  def logits_dimension(self) -> int:
    """See `Head`: the sum of the heads' logits dimensions."""
    return self._logits_dimension

  @property
  def loss_reduction(self) -> str:
    """See `Head`: the heads' common reduction.

    Raises:
      ValueError: the heads reduce their losses differently.
    """
    loss_reductions = [head.loss_reduction for head in self._heads]
    if len(set(loss_reductions)) > 1:
      raise ValueError(
          f"The loss_reduction must be the same for different heads. Given: {loss_reductions}. "
          "Build every head with the same loss_reduction.")
    return loss_reductions[0]

  def _split_logits(self, logits: Any) -> Dict[str, Any]:
    """One logits tensor split along its last dimension into each head's part, by name."""
    logits_dict: Dict[str, Any] = {}
    with tf.compat.v1.name_scope("split_logits", values=[logits]):
      logits = tf.convert_to_tensor(logits)
      logits_dimensions = [head.logits_dimension for head in self._heads]
      total_logits_dimension = sum(logits_dimensions)
      logits_tensor_shape = logits.shape.as_list()
      last_dimension_size = logits_tensor_shape[-1]
      if last_dimension_size is not None and last_dimension_size != total_logits_dimension:
        # tf.estimator's text, which swaps the last two numbers.
        raise ValueError(
            "Could not split logits of shape %r among the heads with individual logits "
            "dimensions: %r. The last dimension of the logits tensor should equal %d but "
            "is %d." % (logits_tensor_shape, logits_dimensions, last_dimension_size,
                        total_logits_dimension) +
            " The model must output sum(head.logits_dimension) logits.")
      batch_shape = tf.shape(logits)[:-1]
      zeros_like_batch_shape = tf.zeros_like(batch_shape)
      minus_ones_like_batch_shape = -1 * tf.ones_like(batch_shape)
      begin_idx = 0
      for head in self._heads:
        begin = tf.concat([zeros_like_batch_shape, [begin_idx]], axis=0)
        size = tf.concat([minus_ones_like_batch_shape, [head.logits_dimension]], axis=0)
        logits_dict[str(head.name)] = tf.slice(logits, begin=begin, size=size)
        begin_idx += head.logits_dimension
    return logits_dict

  def _check_logits_and_labels(self, logits: Any, labels: Any = None) -> Dict[str, Any]:
    """Logits as a dict by head name, after checking logits and labels name every head."""
    head_names = [str(head.name) for head in self._heads]
    if isinstance(logits, dict):
      missing = list(set(head_names) - set(logits))
      if missing:
        raise ValueError(
            f"logits has missing values for head(s): {missing}. Key logits by head name.")
      logits_dict = logits
    else:
      logits_dict = self._split_logits(logits)
    if labels is not None:
      if not isinstance(labels, dict):
        raise ValueError(
            f"labels must be a dict. Given: {labels}. input_fn must return labels keyed "
            "by head name.")
      missing = list(set(head_names) - set(labels))
      if missing:
        raise ValueError(
            f"labels has missing values for head(s): {missing}. Key labels by head name.")
    return logits_dict

  def loss(self, labels: Any, logits: Any, features: base_head.Features = None,
           mode: Optional[str] = None,
           regularization_losses: base_head.RegularizationLosses = None) -> Any:
    """Builds the merged training loss; see `Head.loss`.

    Args:
      labels: a dict of head name to that head's labels.
      logits: a dict of head name to logits, or one tensor to split.
      features: the features dict.
      mode: passed to each head.
      regularization_losses: scalar losses added to the merged loss.

    Returns:
      A scalar `Tensor`: the (weighted) sum of the heads' losses plus the
      regularization.

    Raises:
      ValueError: logits or labels miss a head, or labels is not a dict.
    """
    logits_dict = self._check_logits_and_labels(logits, labels)
    training_losses: List[Any] = [
        head.loss(logits=logits_dict[str(head.name)], labels=labels[head.name],
                  features=features, mode=mode)
        for head in self._heads]
    with tf.compat.v1.name_scope("merge_losses",
                                 values=tuple(training_losses) + self._head_weights):
      if self._head_weights:
        training_losses = [tf.math.multiply(loss, weight)
                           for loss, weight in zip(training_losses, self._head_weights)]
      return losses_lib.regularized(tf.math.add_n(training_losses), regularization_losses)

  def predictions(self, logits: Any, keys: Optional[Sequence[str]] = None) -> Dict[Any, Any]:
    """Builds every head's predictions; see `Head.predictions`.

    Args:
      logits: a dict of head name to logits, or one tensor to split.
      keys: unused: each head makes all its predictions.

    Returns:
      A dict of `(head name, prediction key)` to `Tensor`.
    """
    logits_dict = self._check_logits_and_labels(logits)
    predictions: Dict[Any, Any] = {}
    with tf.compat.v1.name_scope("merge_pred"):
      for head in self._heads:
        for key, value in head.predictions(logits=logits_dict[str(head.name)]).items():
          predictions[(head.name, key)] = value
    return predictions

  def metrics(self, regularization_losses: base_head.RegularizationLosses = None) -> Dict[str, Any]:
    """Creates the merged metrics' own objects (each head's loss); see `Head.metrics`.

    The heads' metrics are created by `update_metrics`.

    Args:
      regularization_losses: when given, `regularization_loss` is created too.

    Returns:
      A dict of metric key to Keras 2 metric object.
    """
    eval_metrics: Dict[str, Any] = {}
    losses_lib.add_regularization_metric(
        eval_metrics, self._loss_regularization_key, regularization_losses)
    with tf.compat.v1.name_scope("merge_eval"):
      for loss_key in self._loss_keys:
        eval_metrics[loss_key] = tf_keras.metrics.Mean(name=loss_key)
    return eval_metrics

  def update_metrics(self, eval_metrics: Dict[str, Any], features: base_head.Features,  # type: ignore[override]
                     logits: Any, labels: Any,
                     regularization_losses: base_head.RegularizationLosses = None) -> Dict[str, Any]:
    """Updates the merged metrics and adds every head's, updated; see `Head.update_metrics`.

    Args:
      eval_metrics: the dict `metrics()` returned.
      features: the features dict.
      logits: a dict of head name to logits, or one tensor to split.
      labels: a dict of head name to labels.
      regularization_losses: scalar losses for `regularization_loss`.

    Returns:
      `eval_metrics`, updated, with each head's metrics added.
    """
    logits_dict = self._check_logits_and_labels(logits, labels)
    losses_lib.update_regularization_metric(
        eval_metrics, self._loss_regularization_key, regularization_losses)
    for i, head in enumerate(self._heads):
      head_logits = logits_dict[str(head.name)]
      head_labels = labels[head.name]
      training_loss = head.loss(logits=head_logits, labels=head_labels, features=features)
      eval_metrics[self._loss_keys[i]].update_state(values=training_loss)
      head_metrics = head.metrics()
      updated_metrics = head.update_metrics(head_metrics, features, head_logits, head_labels)
      eval_metrics.update(updated_metrics or {})
    return eval_metrics

  def create_estimator_spec(self, features: base_head.Features, mode: str, logits: Any,
                            labels: Any = None, optimizer: Any = None,
                            trainable_variables: Optional[Sequence[Any]] = None,
                            train_op_fn: Optional[Callable[[Any], Any]] = None,
                            update_ops: Optional[Sequence[Any]] = None,
                            regularization_losses: base_head.RegularizationLosses = None
                            ) -> EstimatorSpec:
    """Builds the merged `EstimatorSpec` for `mode`; see `Head.create_estimator_spec`.

    Args:
      features: the features dict.
      mode: a `ModeKeys` value.
      logits: a dict of head name to logits, or one tensor to split.
      labels: a dict of head name to labels (TRAIN and EVAL).
      optimizer: a Keras 2 optimizer (TRAIN), or None.
      trainable_variables: the variables `optimizer` trains.
      train_op_fn: builds the train op from the merged loss when `optimizer`
        is None.
      update_ops: ops run with each training step.
      regularization_losses: scalar losses added to the merged loss (on top
        of any the heads add themselves).

    Returns:
      An `EstimatorSpec`.

    Raises:
      ValueError: in TRAIN both or neither of `optimizer` and `train_op_fn`;
        a mode that is not a `ModeKeys` value.
    """
    with tf.compat.v1.name_scope(self.name, "multi_head"):
      logits_dict = self._check_logits_and_labels(logits, labels)
      all_estimator_spec = [
          head.create_estimator_spec(
              features=features, mode=mode, logits=logits_dict[str(head.name)],
              labels=labels[head.name] if labels else None, train_op_fn=_no_op_train_fn)
          for head in self._heads]
      predictions = self.predictions(logits)
      if mode == ModeKeys.PREDICT:
        return EstimatorSpec(mode=ModeKeys.PREDICT, predictions=predictions,
                             export_outputs=self._merge_predict_export_outputs(all_estimator_spec))
      loss = self.loss(labels, logits, features, mode, regularization_losses)
      if mode == ModeKeys.EVAL:
        eval_metrics = self.metrics(regularization_losses=regularization_losses)
        updated_metrics = self.update_metrics(
            eval_metrics, features, logits, labels, regularization_losses=regularization_losses)
        return EstimatorSpec(mode=ModeKeys.EVAL, predictions=predictions, loss=loss,
                             eval_metric_ops=updated_metrics)
      if mode == ModeKeys.TRAIN:
        train_op = train_op_lib.create_estimator_spec_train_op(
            head_name=self.name, optimizer=optimizer, train_op_fn=train_op_fn,
            update_ops=update_ops, trainable_variables=trainable_variables,
            regularized_training_loss=loss, loss_reduction=self.loss_reduction)
        train_op_lib.create_estimator_spec_summary(loss, regularization_losses)
        eval_metrics = {}
        for spec in all_estimator_spec:
          eval_metrics.update(spec.eval_metric_ops or {})
        return EstimatorSpec(mode=ModeKeys.TRAIN, loss=loss, train_op=train_op,
                             predictions=predictions, eval_metric_ops=eval_metrics)
      raise ValueError(f"mode={mode} unrecognized. Use a ModeKeys value.")

  def _merge_predict_export_outputs(self, all_estimator_spec: Sequence[EstimatorSpec]
                                    ) -> Dict[str, export_output.ExportOutput]:
    """The heads' PREDICT signatures, merged; the first head's default is served by default."""
    export_outputs: Dict[str, export_output.ExportOutput] = {
        base_head.DEFAULT_SERVING_KEY: _default_export_output(
            all_estimator_spec[0].export_outputs or {}, str(self._heads[0].name)),
    }
    merged_predict_outputs: Dict[str, Any] = {}
    for head, spec in zip(self._heads, all_estimator_spec):
      for key, value in (spec.export_outputs or {}).items():
        name = str(head.name) if key == base_head.DEFAULT_SERVING_KEY else f"{head.name}/{key}"
        export_outputs[name] = value
        if key == base_head.PREDICT_SERVING_KEY and isinstance(value, export_output.PredictOutput):
          for output_key, tensor in value.outputs.items():
            merged_predict_outputs[f"{head.name}/{output_key}"] = tensor
    export_outputs[base_head.PREDICT_SERVING_KEY] = export_output.PredictOutput(merged_predict_outputs)
    return export_outputs
