"""Estimator.predict's work: model_fn in PREDICT mode over input_fn's features, yielded as it runs."""
from __future__ import annotations

from typing import Any, Callable, Dict, Iterator, Optional, Sequence

import numpy as np
import tensorflow as tf

from estimator_lite._graph import input_fn as input_fn_lib
from estimator_lite._session import checkpoints
from estimator_lite._session import input_size
from estimator_lite._session import targets
from estimator_lite._util import quiet
from estimator_lite.mode_keys import ModeKeys

_logging = tf.compat.v1.logging


def predict(model_fn: Callable[..., Any], input_fn: Callable[..., Any], config: Any,
            params: dict, *, predict_keys: Optional[Sequence[str]],
            hooks: Sequence[tf.compat.v1.train.SessionRunHook], checkpoint_path: Optional[str],
            yield_single_examples: bool,
            warm_start: Optional[Callable[[], None]] = None) -> Iterator[Any]:
  """Yields predictions, as Estimator.predict documents.

  Args:
    model_fn: the Estimator's `ModelFn`.
    input_fn: the user's input_fn (labels, if any, are ignored).
    config: the RunConfig.
    params: the Estimator's params (passed to input_fn).
    predict_keys: the prediction keys to return; None or empty: all.
    hooks: the caller's hooks, checked.
    checkpoint_path: the checkpoint, or None to predict with the initialised model.
    yield_single_examples: one example at a time, or whole batches.
    warm_start: applies the Estimator's warm start to the graph; called when
      there is no checkpoint (as tf.estimator).

  Raises:
    ValueError: a predict_key that model_fn does not predict, or batch sizes
      that disagree when yielding single examples.
  """
  with quiet.quiet_deprecations(), tf.Graph().as_default() as graph:
    tf.compat.v1.set_random_seed(config.tf_random_seed)
    tf.compat.v1.train.get_or_create_global_step(graph)
    result = input_fn_lib.call_input_fn(input_fn, ModeKeys.PREDICT, params, config)
    features, _, input_hooks = input_fn_lib.parse_input_fn_result(result)
    if not input_fn_lib.has_end_of_input(features):
      _logging.warning(
          "Input graph does not use tf.data.Dataset or contain a QueueRunner. That "
          "means predict yields forever. This is probably a mistake. Return a finite "
          "tf.data.Dataset from input_fn, or stop iterating the predictions yourself.")
    elif input_size.is_infinite(input_fn_lib.cardinality(result), config):
      # Not an error, unlike evaluate(steps=None): a caller may take what it
      # needs from the generator (itertools.islice) and stop, as tf.estimator's could.
      _logging.warning(
          "input_fn returned an infinite tf.data.Dataset (e.g. .repeat() with no count), "
          "so predict yields forever: stop iterating when you have enough (e.g. "
          "itertools.islice), or make the dataset finite (drop .repeat(), or .take(N)).")
    spec = model_fn(features, None, ModeKeys.PREDICT, config)
    if warm_start is not None and not checkpoint_path:
      warm_start()
    predictions = _extract_keys(spec.predictions, predict_keys)
    checkpoints.check_restorable(spec.scaffold, checkpoint_path, graph)
    session_creator = tf.compat.v1.train.ChiefSessionCreator(
        scaffold=spec.scaffold,
        checkpoint_filename_with_path=checkpoint_path,
        master=config.master if not config.cluster_spec.jobs else "",
        config=targets.in_process_session_config(config))
    all_hooks = list(input_hooks) + list(hooks) + list(spec.prediction_hooks)
    with tf.compat.v1.train.MonitoredSession(session_creator=session_creator,
                                             hooks=all_hooks) as session:
      while not session.should_stop():
        batch = session.run(predictions)
        if not yield_single_examples:
          yield batch
        elif not isinstance(batch, dict):
          yield from batch
        else:
          for i in range(_batch_length(batch)):
            yield {key: value[i] for key, value in batch.items()}


def _extract_keys(predictions: Any, predict_keys: Optional[Sequence[str]]) -> Any:
  if not predict_keys:  # None or empty: every prediction, as tf.estimator
    return predictions
  if isinstance(predict_keys, str):
    predict_keys = [predict_keys]
  if not isinstance(predictions, dict):
    raise ValueError(
        "predict_keys argument is not valid in case of non-dict predictions. model_fn "
        f"returned a single tensor, {predictions!r}; leave predict_keys out.")
  missing = [k for k in predict_keys if k not in predictions]
  kept = {key: predictions[key] for key in predict_keys if key in predictions}
  if not kept:
    raise ValueError(
        f"Expected to run at least one output from {predictions.keys()}, provided "
        f"{predict_keys}. None of them is among the predictions.")
  if missing:
    # tf.estimator dropped unknown keys silently; a typo deserves a word.
    _logging.warning("predict_keys %s are not among the predictions %s; predicting %s.",
                     missing, sorted(predictions), sorted(kept))
  return kept


def _batch_length(batch: Dict[str, Any]) -> int:
  length = None
  for key, value in batch.items():
    size = np.shape(value)[0] if np.ndim(value) else None
    if size is None:
      raise ValueError(
          f"Prediction {key!r} is a scalar; with yield_single_examples=True every "
          "prediction needs a batch dimension. Use yield_single_examples=False.")
    if length is not None and size != length:
      raise ValueError(
          f"Batch length of predictions should be same. {key} has different batch "
          f"length than others: {size}, others {length}. Use yield_single_examples=False.")
    length = size
  return length or 0
