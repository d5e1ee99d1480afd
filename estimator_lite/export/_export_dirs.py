"""Numeric version directories under an export base, as TensorFlow Serving watches them.

TensorFlow Serving's file-system source serves the highest-numbered child
directory of a base path and ignores names that are not integers. Exports are
therefore written to a `temp-<version>` sibling and renamed into place once
complete, and a new version is always higher than every existing one.
"""
import os
import time

import tensorflow as tf

_logging = tf.compat.v1.logging
TEMP_PREFIX = "temp-"
# Gives up after this many taken names in a row (other writers racing us).
_MAX_RESERVE_ATTEMPTS = 1000


def _is_remote(path):
  return "://" in path


def _children(export_dir_base):
  if not tf.io.gfile.isdir(export_dir_base):
    return []
  return [name.rstrip("/") for name in tf.io.gfile.listdir(export_dir_base)]


def list_versions(export_dir_base):
  """Returns the sorted integer versions of the finished exports under export_dir_base."""
  return sorted(int(name) for name in _children(export_dir_base) if name.isdigit())


def _taken_versions(export_dir_base):
  taken = set()
  for name in _children(export_dir_base):
    if name.startswith(TEMP_PREFIX):
      name = name[len(TEMP_PREFIX):]
    if name.isdigit():
      taken.add(int(name))
  return taken


def _try_mkdir(path):
  """Creates directory `path`; returns False if it already existed."""
  if _is_remote(path):
    # Object stores have no atomic mkdir; an existence check is the best there is.
    if tf.io.gfile.exists(path):
      return False
    tf.io.gfile.mkdir(path)
    return True
  try:
    os.mkdir(path)  # atomic: exactly one concurrent exporter gets each name
  except FileExistsError:
    return False
  return True


def reserve_export_dir(export_dir_base):
  """Picks the next version and creates its temporary directory.

  The version is the current time in seconds since the epoch (as tf.estimator
  named exports), bumped past every existing or in-progress version, so two
  exports in the same second get distinct directories and the newest export
  is always the highest number.

  Args:
    export_dir_base: directory holding the version directories (created if
      missing).

  Returns:
    (final_dir, temp_dir) as str; temp_dir exists and is empty.

  Raises:
    RuntimeError: no free version name was found.
  """
  export_dir_base = os.fspath(export_dir_base)
  tf.io.gfile.makedirs(export_dir_base)
  taken = _taken_versions(export_dir_base)
  version = max(int(time.time()), max(taken) + 1 if taken else 0)
  for _ in range(_MAX_RESERVE_ATTEMPTS):
    final_dir = os.path.join(export_dir_base, str(version))
    temp_dir = os.path.join(export_dir_base, TEMP_PREFIX + str(version))
    if not tf.io.gfile.exists(final_dir) and _try_mkdir(temp_dir):
      if not tf.io.gfile.exists(final_dir):
        return final_dir, temp_dir
      tf.io.gfile.rmtree(temp_dir)
    version += 1
  raise RuntimeError(
      f"Failed to obtain a unique export directory name under {export_dir_base} "
      f"after {_MAX_RESERVE_ATTEMPTS} attempts; is another process flooding it?")


def publish(temp_dir, final_dir):
  """Renames the finished temp_dir to final_dir, never over an existing export."""
  tf.io.gfile.rename(temp_dir, final_dir, overwrite=False)


def garbage_collect(export_dir_base, exports_to_keep):
  """Deletes all but the `exports_to_keep` highest-numbered exports.

  Args:
    export_dir_base: directory holding the version directories.
    exports_to_keep: how many to keep; None keeps all.

  Returns:
    list of the deleted directories (str).
  """
  if exports_to_keep is None:
    return []
  versions = list_versions(export_dir_base)
  doomed = versions[:-exports_to_keep] if len(versions) > exports_to_keep else []
  deleted = []
  for version in doomed:
    path = os.path.join(export_dir_base, str(version))
    try:
      tf.io.gfile.rmtree(path)
      deleted.append(path)
    except tf.errors.NotFoundError as e:
      # Another process (a second evaluator) may have removed it first.
      _logging.warning("Can not delete %s recursively: %s", path, e)
  return deleted
