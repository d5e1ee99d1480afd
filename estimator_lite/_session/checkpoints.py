"""Checkpoint saving and restoring that fail with errors a user can act on.

* A save that fails (disk full, file too large, permissions, a read-only
  model_dir) names the step, the directory, the cause and the previous
  checkpoint, which stays intact: the Saver writes to temporary files and
  updates the `checkpoint` index only after a save completed. Training goes
  on and the next save tries again (storage that fails for a while, such as
  a network file system, need not end a long training); once saves have
  failed for MAX_FAILING_SAVES_SECS in a row, or when the save at the end of
  training fails, it raises CheckpointSaveError.
* A checkpoint from a different model (a variable missing, or of another
  shape) is reported before the session tries to restore it, naming every
  mismatched variable, instead of TensorFlow's restore error.
* graph.pbtxt is written beside the first checkpoint as tf.estimator wrote
  it, but off the path to the first training step (see
  SafeCheckpointSaverHook.after_create_session).

Also tf.estimator's default Saver, and the rules of when it is the one in use.
"""
from __future__ import annotations

import concurrent.futures
import errno
import os
import time
from typing import Any, Callable, Optional, Union

import tensorflow as tf

from estimator_lite._util import op_errors
from estimator_lite._util import tf_internals


class CheckpointSaveError(OSError):
  """A checkpoint could not be written; the previous one is intact."""


# How long saves may go on failing, from the first failure of a row, before
# training stops with CheckpointSaveError: a storage outage of minutes is
# ridden out, a full disk stops training with at most this much unsaved work
# (plus the save interval).
MAX_FAILING_SAVES_SECS = 600
# Failures of the session rather than of the storage: MonitoredSession
# recreates the session on them (a ps restarted, a network fault), as
# tf.estimator did, and the next save comes from the new session.
_SESSION_ERRORS = (tf.errors.UnavailableError, tf.errors.AbortedError)


class SafeCheckpointSaverHook(tf.compat.v1.train.CheckpointSaverHook):
  """TensorFlow's CheckpointSaverHook whose failed saves are retried, then raise an error.

  A save that fails is logged as an error and training goes on; the next
  save (at the usual cadence) tries again. Once saves have failed for
  MAX_FAILING_SAVES_SECS in a row, or when the save at the end of training
  fails, it raises CheckpointSaveError.

  It writes the same files and events, with one change of timing:
  `graph.pbtxt` is written by a background thread, which `end()` waits for.
  Its text encoding runs in pure Python (protobuf's text_format) and took
  about a sixth of the time from `train()` to the first step on the
  benchmarks' linear model; nothing reads the file during training.

  Its save at session start can run apart from its other saves, ahead of
  other hooks: `session_start_hook()`.
  """

  # Whether session_start_hook's hook makes the save at session start.
  _start_save_elsewhere = False

  def begin(self):
    super().begin()
    self._failed_in_a_row = 0
    self._failing_since = 0.0
    self._ending = False

  def session_start_hook(self) -> tf.compat.v1.train.SessionRunHook:
    """A hook, to put first, that makes this saver's save at session start in its stead.

    tf.estimator 2.15's default saver was the first of MonitoredSession's
    hooks, so its save at session start (graph.pbtxt, the graph and meta graph
    events, the checkpoint at the starting step) came before every other
    hook's after_create_session: model.ckpt-0 holds the variables as the
    session made them, before a hook that assigns some in
    after_create_session (weights loaded from elsewhere) changes them, and
    that hook's values are in the next checkpoint. Put the returned hook
    first to keep that order while this saver's other saves come after the
    other hooks' after_run.

    Returns:
      A SessionRunHook whose after_create_session is this saver's.
    """
    self._start_save_elsewhere = True
    return _SessionStartSave(self._save_at_session_start)

  def after_create_session(self, session, coord):
    del coord
    if not self._start_save_elsewhere:
      self._save_at_session_start(session)

  def _save_at_session_start(self, session):
    # CheckpointSaverHook.after_create_session, with the GraphDef built once
    # (it built it twice here) and the text file written in the background.
    global_step = session.run(self._global_step_tensor)
    graph = tf.compat.v1.get_default_graph()
    graph_def = graph.as_graph_def(add_shapes=True)
    if self._save_graph_def:
      # The pool's thread is joined at interpreter exit: a training that
      # fails still leaves the file complete (write_graph replaces it
      # atomically). shutdown(wait=False) lets it finish on its own.
      pool = concurrent.futures.ThreadPoolExecutor(1, "estimator_lite_graph_pbtxt")
      self._graph_written = pool.submit(tf.io.write_graph, graph_def, self._checkpoint_dir,
                                        "graph.pbtxt")
      pool.shutdown(wait=False)
    saver = self._get_saver()
    self._summary_writer.add_graph(graph)
    self._summary_writer.add_meta_graph(tf_internals.create_meta_graph_def(
        graph_def=graph_def, saver_def=saver.saver_def if saver else None))
    # The checkpoint saved here is the state at step `global_step`.
    self._save(session, global_step)
    self._timer.update_last_triggered_step(global_step)

  def end(self, session):
    self._ending = True   # the last save: nothing comes after it to try again
    super().end(session)
    if getattr(self, "_graph_written", None) is not None:
      self._graph_written.result()  # waits; raises the write's error

  def _save(self, session, step):
    try:
      should_stop = super()._save(session, step)
    except _SESSION_ERRORS:
      raise
    except (tf.errors.OpError, OSError) as e:
      if not self._failed_in_a_row:
        self._failing_since = time.monotonic()
      self._failed_in_a_row += 1
      failing_secs = time.monotonic() - self._failing_since
      checkpoint_dir = os.path.dirname(self._save_path)
      previous = tf.train.latest_checkpoint(checkpoint_dir)
      cause = op_errors.summary(e)
      failure = (f"Could not save the checkpoint for global step {step} into "
                 f"{checkpoint_dir}: {cause}. Is the disk full or the directory not "
                 f"writable? The previous checkpoint ({previous or 'none yet'}) is intact")
      if self._ending or failing_secs >= MAX_FAILING_SAVES_SECS:
        raise CheckpointSaveError(
            getattr(e, "errno", None) or errno.EIO,
            f"{failure}: free space (or fix permissions) and restart to resume from it. "
            f"({self._failed_in_a_row} saves in a row failed, over {failing_secs:.0f} s.)"
        ) from e
      tf.compat.v1.logging.error(
          "%s. Training goes on and the next save tries again (saves have failed %d times "
          "in a row, for %.0f s; training stops if they still fail after %d s).", failure,
          self._failed_in_a_row, failing_secs, MAX_FAILING_SAVES_SECS)
      return False
    if self._failed_in_a_row:
      tf.compat.v1.logging.info("Saved the checkpoint for global step %d after %d failed "
                                "saves.", step, self._failed_in_a_row)
    self._failed_in_a_row = 0
    return should_stop


class _SessionStartSave(tf.compat.v1.train.SessionRunHook):
  """Runs a saver's save at session start (SafeCheckpointSaverHook.session_start_hook)."""

  def __init__(self, save: Callable[[Any], None]):
    self._save = save

  def after_create_session(self, session, coord):
    del coord
    self._save(session)


def _checkpoint_name(variable: tf.Variable) -> tuple:
  info = tf_internals.partition_of(variable)
  if info is not None:   # a partition of a partitioned variable
    return info.full_name, tuple(info.full_shape)
  if variable.shape.rank is None:
    # Made with validate_shape=False (k-means' `clusters`): any saved shape fits.
    return variable.op.name, None
  return variable.op.name, tuple(variable.shape.as_list())


# tf.compat.v1.train.Saver.restore's text (which tf.estimator 2.15 raised) for a
# checkpoint that does not fit the graph; {0} says how.
_RESTORE_FAILED = (
    "Restoring from checkpoint failed. This is most likely due to {0} from the checkpoint. "
    "Please ensure that you have not altered the graph expected based on the checkpoint. "
    "Original error:\n\n")


def check_checkpoint_matches_graph(checkpoint_path: Optional[str], graph: tf.Graph) -> None:
  """Raises the Saver's error, naming variables of `graph` the checkpoint lacks or shapes differently.

  Checked before the Saver restores, so that the error names every such
  variable and says what to do; its type and first words are those of
  `Saver.restore`, which tf.estimator raised.

  Args:
    checkpoint_path: the checkpoint about to be restored.
    graph: the graph whose global variables will be restored.

  Raises:
    tf.errors.NotFoundError: a variable is missing from the checkpoint.
    tf.errors.InvalidArgumentError: a variable has another shape there.
  """
  if not checkpoint_path:
    return
  saved = dict(tf.train.list_variables(checkpoint_path))
  missing, reshaped = [], []
  for variable in graph.get_collection(tf.compat.v1.GraphKeys.GLOBAL_VARIABLES):
    name, shape = _checkpoint_name(variable)
    if name not in saved:
      missing.append(name)
    elif shape is not None and None not in shape and tuple(saved[name]) != shape:
      reshaped.append(f"{name}: graph {list(shape)} vs checkpoint {list(saved[name])}")
  if not missing and not reshaped:
    return
  problems = []
  if missing:
    problems.append(f"variables not found in the checkpoint: {sorted(set(missing))}")
  if reshaped:
    problems.append(f"variables whose shape differs: {reshaped}")
  detail = (f"The checkpoint {checkpoint_path} does not match this model_fn ("
            + "; ".join(problems) + "). It was probably written by a different model. "
            "Use a new model_dir, or start from the old checkpoint with "
            "warm_start_from=WarmStartSettings(...) (var_name_to_prev_var_name maps renamed "
            "variables).")
  if missing:
    raise tf.errors.NotFoundError(None, None, _RESTORE_FAILED.format(
        "a Variable name or other graph key that is missing") + detail)
  raise tf.errors.InvalidArgumentError(None, None, _RESTORE_FAILED.format(
      "a mismatch between the current graph and the graph") + detail)


def check_model_dir_writable(model_dir: str) -> None:
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


def uses_default_saver(scaffold: tf.compat.v1.train.Scaffold, graph: tf.Graph) -> bool:
  """Whether the default Saver (every global variable) saves and restores this graph.

  A model_fn's own Saver (in its Scaffold, or the SAVERS collection) may
  save or restore a subset on purpose.
  """
  return scaffold.saver is None and not graph.get_collection(tf.compat.v1.GraphKeys.SAVERS)


def install_default_saver(scaffold: tf.compat.v1.train.Scaffold, graph: tf.Graph,
                          config: Any) -> bool:
  """Installs tf.estimator's default Saver unless the model_fn brought its own.

  Returns:
    True when the default Saver is the one in use.
  """
  if not uses_default_saver(scaffold, graph):
    return False
  graph.add_to_collection(
      tf.compat.v1.GraphKeys.SAVERS,
      tf.compat.v1.train.Saver(
          sharded=True,
          max_to_keep=config.keep_checkpoint_max,
          keep_checkpoint_every_n_hours=config.keep_checkpoint_every_n_hours,
          defer_build=True,
          save_relative_paths=True))
  return True


def check_restorable(scaffold: tf.compat.v1.train.Scaffold, checkpoint_path: Optional[str],
                     graph: tf.Graph) -> None:
  """Names the variables the checkpoint lacks before the default Saver fails on them.

  Raises:
    tf.errors.NotFoundError / InvalidArgumentError: the default Saver is in
      use and the checkpoint does not fit the graph (check_checkpoint_matches_graph).
  """
  if uses_default_saver(scaffold, graph):
    check_checkpoint_matches_graph(checkpoint_path, graph)


def latest_global_step(model_dir: str) -> int:
  """The global step of model_dir's newest checkpoint (0 without one).

  Also 0 when the checkpoint has no `global_step` key, as tf.estimator: an
  object-based checkpoint (model_to_estimator's default format, a
  Scaffold(saver=tf.train.Checkpoint)) keys it by object path. train(max_steps)
  then starts, restores, and stops at once if the step is already reached.
  """
  path = tf.train.latest_checkpoint(model_dir)
  if not path:
    return 0
  try:
    return int(tf.train.load_variable(path, tf.compat.v1.GraphKeys.GLOBAL_STEP))
  except tf.errors.NotFoundError:
    return 0


def checkpoint_to_export(model_dir: str, checkpoint_path: Union[None, str, "os.PathLike[str]"],
                         warm_start: Any) -> str:
  """The checkpoint given, else model_dir's latest, else the warm-start one (as tf.estimator).

  A warm-started model that has not trained yet exports the checkpoint it
  would start from.

  Raises:
    ValueError: there is none.
  """
  if checkpoint_path:
    return os.fspath(checkpoint_path)
  found: Optional[str] = tf.train.latest_checkpoint(model_dir)
  if not found and warm_start:
    path = warm_start.ckpt_to_initialize_from
    found = tf.train.latest_checkpoint(path) if tf.io.gfile.isdir(path) else path
  if not found:
    raise ValueError(
        f"Couldn't find trained model at {model_dir}. Train the Estimator first "
        "(Estimator.train writes checkpoints there), or pass checkpoint_path.")
  return found
