"""Writes evaluation results as TensorBoard events (model_dir/eval[_NAME])."""
import contextlib

import numpy as np
import tensorflow as tf
from tensorflow.core.framework import summary_pb2

_GLOBAL_STEP = "global_step"


@contextlib.contextmanager
def _writer(output_dir):
  # tf.compat.v1's FileWriter refuses to be created in eager mode.
  with tf.Graph().as_default():
    writer = tf.compat.v1.summary.FileWriterCache.get(output_dir)
    yield writer
    writer.flush()


def write_dict_to_summary(output_dir, dictionary, global_step):
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
    if value is None or key == _GLOBAL_STEP:
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


def write_checkpoint_path_to_summary(output_dir, checkpoint_path, global_step):
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
