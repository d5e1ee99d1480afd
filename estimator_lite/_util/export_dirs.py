"""Numeric version directories under an export base, as TensorFlow Serving watches them.

TensorFlow Serving's file-system source serves the highest-numbered child
directory of a base path and ignores names that are not integers. Exports are
therefore written to a `temp-<version>` sibling and renamed into place once
complete, and a new version is always higher than every existing one. A
`temp-<version>` left by an exporter that died before the rename is removed
by a later export once it is old (see STALE_TEMP_DIR_SECS).
"""
from __future__ import annotations

import os
import shutil
import time
from typing import List, Optional, Set, Tuple, Union

import tensorflow as tf

_logging = tf.compat.v1.logging
TEMP_PREFIX = "temp-"
# Gives up after this many taken names in a row (other writers racing us).
_MAX_RESERVE_ATTEMPTS = 1000
# A temp-* directory is removed only when nothing in it was written for this
# long: an exporter in another process (a second evaluator, a user's script)
# may be writing a fresh one under the same base right now, and a SavedModel
# export takes seconds to minutes, never an hour without writing a file.
STALE_TEMP_DIR_SECS = 3600.0


def _is_remote(path: str) -> bool:
  return "://" in path


def _children(export_dir_base: Union[str, os.PathLike[str]]) -> List[str]:
  if not tf.io.gfile.isdir(export_dir_base):
    return []
  return [name.rstrip("/") for name in tf.io.gfile.listdir(export_dir_base)]


def list_versions(export_dir_base: Union[str, os.PathLike[str]]) -> List[int]:
  """Returns the sorted integer versions of the finished exports under export_dir_base."""
  return sorted(int(name) for name in _children(export_dir_base) if name.isdigit())


def _taken_versions(export_dir_base: str) -> Set[int]:
  taken = set()
  for name in _children(export_dir_base):
    if name.startswith(TEMP_PREFIX):
      name = name[len(TEMP_PREFIX):]
    if name.isdigit():
      taken.add(int(name))
  return taken


def _try_mkdir(path: str) -> bool:
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


def _newest_mtime(path: str) -> float:
  """The latest modification time of `path` or anything under it, symlinks not followed."""
  newest = os.lstat(path).st_mtime
  # os.walk neither follows symlinks (followlinks=False) nor raises: an entry
  # removed meanwhile is skipped.
  for root, dirs, files in os.walk(path):
    for name in dirs + files:
      try:
        newest = max(newest, os.lstat(os.path.join(root, name)).st_mtime)
      except OSError:
        pass  # removed meanwhile, or unreadable: rmtree below reports the latter
  return newest


def remove_stale_temp_dirs(export_dir_base: Union[str, os.PathLike[str]],
                           max_age_secs: float = STALE_TEMP_DIR_SECS) -> List[str]:
  """Removes the `temp-*` directories of exports that died before being published.

  Only real directories (not symlinks, which are left alone and never
  followed) directly under export_dir_base whose name starts with
  TEMP_PREFIX and in which nothing was written for max_age_secs are removed;
  each removal is logged at INFO. A failed removal is logged as a warning,
  and one done meanwhile by another process is ignored: clean-up never fails
  an export. Remote paths (gs://, s3://) are skipped: object stores have no
  reliable modification time for a directory.

  Args:
    export_dir_base: directory holding the version directories.
    max_age_secs: how long a temp directory must have gone unwritten.

  Returns:
    list of the removed directories (str).
  """
  export_dir_base = os.fspath(export_dir_base)
  if _is_remote(export_dir_base):
    return []
  try:
    with os.scandir(export_dir_base) as entries:
      candidates = [entry.path for entry in entries
                    if entry.name.startswith(TEMP_PREFIX)
                    and entry.is_dir(follow_symlinks=False)]
  except FileNotFoundError:
    return []
  removed = []
  now = time.time()
  for path in candidates:
    try:
      age_secs = now - _newest_mtime(path)
    except OSError:
      continue  # removed by another process meanwhile
    if age_secs < max_age_secs:
      continue
    try:
      # rmtree unlinks symlinks inside the tree without following them.
      shutil.rmtree(path)
    except FileNotFoundError:
      continue  # another exporter is removing it too
    except OSError as e:
      _logging.warning("Could not remove the stale export directory %s: %s", path, e)
      continue
    _logging.info(
        "Removed %s: an unfinished export, unchanged for %.1f h (its exporter "
        "died before publishing it).", path, age_secs / 3600)
    removed.append(path)
  return removed


def reserve_export_dir(export_dir_base: Union[str, os.PathLike[str]]) -> Tuple[str, str]:
  """Picks the next version and creates its temporary directory.

  The version is the current time in seconds since the epoch (as tf.estimator
  named exports), bumped past every existing or in-progress version, so two
  exports in the same second get distinct directories and the newest export
  is always the highest number. Stale temp directories of crashed exports are
  removed first (remove_stale_temp_dirs).

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
  remove_stale_temp_dirs(export_dir_base)
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


def publish(temp_dir: str, final_dir: str) -> None:
  """Renames the finished temp_dir to final_dir, never over an existing export."""
  tf.io.gfile.rename(temp_dir, final_dir, overwrite=False)


def garbage_collect(export_dir_base: Union[str, os.PathLike[str]],
                    exports_to_keep: Optional[int]) -> List[str]:
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
