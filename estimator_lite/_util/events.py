"""Evaluation results as TensorBoard events (model_dir/eval[_NAME]): written, and read back.

Written by evaluate() and the in-memory evaluator; read by the evaluator task
(which checkpoints were evaluated before a restart), early stopping (the
metric history) and BestExporter (the best result so far).
"""
from __future__ import annotations

import collections
import contextlib
import os
from typing import Any, Dict, Iterator, Mapping, Optional, Tuple

import numpy as np
import tensorflow as tf
from tensorflow.core.framework import summary_pb2

from estimator_lite._util import validation

_EVENT_FILE_GLOB_PATTERN = "events.out.tfevents.*"


@contextlib.contextmanager
def _writer(output_dir):
  # tf.compat.v1's FileWriter refuses to be created in eager mode.
  with tf.Graph().as_default():
    writer = tf.compat.v1.summary.FileWriterCache.get(output_dir)
    yield writer
    writer.flush()


def write_dict_to_summary(output_dir: str, dictionary: Mapping[str, Any], global_step: int) -> None:
  """Writes each scalar (and serialized Summary) in `dictionary` at `global_step`.

  Args:
    output_dir: directory of the events file.
    dictionary: metric name -> value, as returned by evaluate().
    global_step: the evaluated checkpoint's global step.
  """
  tf.compat.v1.logging.info("Saving dict for global step %d: %s", global_step,
                            _dict_to_str(dictionary))
  summary = summary_pb2.Summary()
  for key, value in sorted(dictionary.items()):
    if value is None or key == validation.GLOBAL_STEP_KEY:
      continue
    if isinstance(value, (bytes, np.bytes_)):
      try:
        nested = summary_pb2.Summary.FromString(value)
      except Exception:  # pylint: disable=broad-except
        tf.compat.v1.logging.warning(
            "Skipping summary for %s: bytes that are not a serialized Summary.", key)
        continue
      for i, item in enumerate(nested.value):
        item.tag = f"{key}/{i}"
      summary.value.extend(nested.value)
    elif isinstance(value, (tuple, list, dict)):
      # A metric whose value is a nested structure has no single summary; numpy
      # cannot even take the shape of a ragged one.
      tf.compat.v1.logging.warning(
          "Skipping summary for %s, must be a number, np.ndarray or a serialized "
          "Summary; got the nested value %r.", key, value)
    elif np.ndim(value) == 0 and np.issubdtype(np.asarray(value).dtype, np.number):
      summary.value.add(tag=key, simple_value=float(value))
    elif isinstance(value, np.ndarray):
      item = summary.value.add(tag=key, node_name=key)
      item.tensor.CopyFrom(tf.make_tensor_proto(value))
    else:
      tf.compat.v1.logging.warning(
          "Skipping summary for %s, must be a number, np.ndarray or a serialized "
          "Summary; got %r.", key, value)
  with _writer(output_dir) as writer:
    writer.add_summary(summary, global_step)


def write_checkpoint_path_to_summary(output_dir: str, checkpoint_path: str, global_step: int) -> None:
  """Records which checkpoint an evaluation read, as a text summary."""
  tf.compat.v1.logging.info("Saving 'checkpoint_path' summary for global step %d: %s",
                            global_step, checkpoint_path)
  summary = summary_pb2.Summary()
  item = summary.value.add(tag="checkpoint_path")
  item.metadata.plugin_data.plugin_name = "text"
  item.tensor.CopyFrom(tf.make_tensor_proto(str(checkpoint_path).encode(), dtype=tf.string))
  with _writer(output_dir) as writer:
    writer.add_summary(summary, global_step)


def _dict_to_str(dictionary):
  return ", ".join(f"{k} = {v}" for k, v in sorted(dictionary.items())
                   if not isinstance(v, bytes))


def scalar_results(pattern: str, skip_step: Optional[int] = None
                   ) -> Iterator[Tuple[int, Dict[str, float]]]:
  """Yields (global step, {tag: value}) of each event with scalar summaries, file by file.

  Args:
    pattern: a glob of event files.
    skip_step: leave out events at this step.
  """
  for path in sorted(tf.io.gfile.glob(pattern)):
    try:
      for event in tf.compat.v1.train.summary_iterator(path):
        if not event.HasField("summary") or event.step == skip_step:
          continue
        scalars = {value.tag: value.simple_value for value in event.summary.value
                   if value.HasField("simple_value")}
        if scalars:
          yield event.step, scalars
    except tf.errors.DataLossError as e:
      # A file still being written ends with a partial record: keep what was read.
      tf.compat.v1.logging.warning("Skipping rest of the file due to encountering data "
                                   "corruption error; file path: %s; error: %s", path, e)


def read_eval_metrics(eval_dir: str) -> "collections.OrderedDict[int, Dict[str, float]]":
  """Reads the scalar evaluation results in an eval directory's event files.

  Args:
    eval_dir: directory with `events.out.tfevents.*` files.

  Returns:
    OrderedDict global step -> {metric name: float}, by increasing step.
  """
  metrics_by_step: Dict[int, Dict[str, float]] = collections.defaultdict(dict)
  if tf.io.gfile.exists(eval_dir):
    for step, scalars in scalar_results(os.path.join(eval_dir, _EVENT_FILE_GLOB_PATTERN)):
      metrics_by_step[step].update(scalars)
  return collections.OrderedDict(sorted(metrics_by_step.items()))
