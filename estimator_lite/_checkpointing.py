"""Checkpoint saving and restoring that fail with errors a user can act on.

* A save that fails (disk full, file too large, permissions) names the step,
  the cause and the previous checkpoint, which stays intact: the Saver writes
  to temporary files and updates the `checkpoint` index only after a save
  completed.
* A checkpoint from a different model (a variable missing, or of another
  shape) is reported before the session tries to restore it, naming every
  mismatched variable, instead of TensorFlow's restore error.
"""
import errno
import os

import tensorflow as tf


class CheckpointSaveError(OSError):
  """A checkpoint could not be written; the previous one is intact."""


class SafeCheckpointSaverHook(tf.compat.v1.train.CheckpointSaverHook):
  """TensorFlow's CheckpointSaverHook whose failed saves raise CheckpointSaveError."""

  def _save(self, session, step):
    try:
      return super()._save(session, step)
    except (tf.errors.OpError, OSError) as e:
      checkpoint_dir = os.path.dirname(self._save_path)
      previous = tf.train.latest_checkpoint(checkpoint_dir)
      cause = getattr(e, "message", None) or str(e)
      raise CheckpointSaveError(
          getattr(e, "errno", None) or errno.EIO,
          f"Could not save the checkpoint for global step {step} into "
          f"{checkpoint_dir}: {cause.strip()}. Is the disk full or the directory "
          f"not writable? The previous checkpoint ({previous or 'none yet'}) is "
          "intact: free space (or fix permissions) and restart to resume from it.") from e


def _checkpoint_name(variable):
  info = getattr(variable, "_save_slice_info", None)
  if info is not None:   # a partition of a partitioned variable
    return info.full_name, tuple(info.full_shape)
  return variable.op.name, tuple(variable.shape.as_list())


def check_checkpoint_matches_graph(checkpoint_path, graph):
  """Raises ValueError naming variables of `graph` the checkpoint lacks or shapes differently.

  Args:
    checkpoint_path: the checkpoint about to be restored.
    graph: the graph whose global variables will be restored.

  Raises:
    ValueError: a variable is missing from the checkpoint or has another shape.
  """
  if not checkpoint_path:
    return
  saved = dict(tf.train.list_variables(checkpoint_path))
  missing, reshaped = [], []
  for variable in graph.get_collection(tf.compat.v1.GraphKeys.GLOBAL_VARIABLES):
    name, shape = _checkpoint_name(variable)
    if name not in saved:
      missing.append(name)
    elif None not in shape and tuple(saved[name]) != shape:
      reshaped.append(f"{name}: graph {list(shape)} vs checkpoint {list(saved[name])}")
  if not missing and not reshaped:
    return
  problems = []
  if missing:
    problems.append(f"variables not found in the checkpoint: {sorted(set(missing))}")
  if reshaped:
    problems.append(f"variables whose shape differs: {reshaped}")
  raise ValueError(
      f"The checkpoint {checkpoint_path} does not match this model_fn ("
      + "; ".join(problems) + "). It was probably written by a different model. "
      "Use a new model_dir, or start from the old checkpoint with "
      "warm_start_from=WarmStartSettings(...) (var_name_to_prev_var_name maps renamed "
      "variables).")


def check_model_dir_writable(model_dir):
  """Creates model_dir if needed; raises a clear error when it cannot be written.

  Raises:
    ValueError: model_dir cannot be created or written.
  """
  try:
    tf.io.gfile.makedirs(model_dir)
    probe = os.path.join(model_dir, ".estimator_lite_write_probe")
    with tf.io.gfile.GFile(probe, "w") as f:
      f.write("")
    tf.io.gfile.remove(probe)
  except (tf.errors.OpError, OSError) as e:
    cause = getattr(e, "message", None) or str(e)
    raise ValueError(
        f"model_dir {model_dir!r} is not writable ({cause.strip()}). Pass a "
        "directory this process can create and write, e.g. Estimator(..., "
        "model_dir='/tmp/my_model').") from e
