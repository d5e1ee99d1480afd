"""Migrating files: finding them under the paths given, rewriting each in place.

`.py` files go through `rewriter`, `.ipynb` notebooks through `notebook`. A
file that does not parse is reported and left untouched; a directory is
searched recursively, skipping hidden directories, virtual environments and
`__pycache__`.
"""
from __future__ import annotations

import difflib
import os
from typing import Iterator, List, Optional, Sequence, TextIO, Tuple

import libcst as cst

from estimator_lite._porting import notebook
from estimator_lite._porting import rewriter
from estimator_lite._porting.report import FileResult

SUFFIXES = (".py", ".ipynb")
# Directories that hold no code of the program itself.
_SKIPPED_DIRS = ("__pycache__", "node_modules", "site-packages")


def _skipped_dir(parent: str, name: str) -> bool:
  return (name.startswith(".") or name in _SKIPPED_DIRS
          or os.path.exists(os.path.join(parent, name, "pyvenv.cfg")))


def iter_files(paths: Sequence[str]) -> Iterator[Tuple[str, Optional[str]]]:
  """The files to migrate under `paths`, in a stable order.

  Args:
    paths: files and directories as the user named them.

  Yields:
    (path, None) for each file, or (path, reason) for a path that does not
    exist.
  """
  for path in paths:
    if os.path.isdir(path):
      for parent, dirs, files in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not _skipped_dir(parent, d))
        for name in sorted(files):
          if name.endswith(SUFFIXES) and not name.startswith("."):
            yield os.path.join(parent, name), None
    elif os.path.isfile(path):
      yield path, None
    else:
      yield path, "no such file or directory"


def _syntax_error(data: bytes, error: cst.ParserSyntaxError) -> str:
  # Python's own parser places the error better than libcst's; when Python
  # accepts the code, libcst's grammar is the one that falls short.
  try:
    compile(data, "<file>", "exec", dont_inherit=True)
  except SyntaxError as python_error:
    return f"syntax error at line {python_error.lineno}: {python_error.msg}"
  return (f"libcst cannot parse it (line {error.raw_line}, column "
          f"{error.raw_column}: {error.message})")


def _migrate_python(path: str, result: FileResult
                    ) -> Optional[Tuple[str, str, bytes]]:
  with open(path, "rb") as f:
    data = f.read()
  try:
    module = cst.parse_module(data)
  except cst.ParserSyntaxError as e:
    result.error = _syntax_error(data, e)
    return None
  except (UnicodeDecodeError, SyntaxError, LookupError) as e:
    result.error = f"cannot read the file as Python: {e}"
    return None
  outcome = rewriter.rewrite(module)
  result.changes = outcome.changes
  result.problems = outcome.problems
  new_data = outcome.module.bytes
  if new_data == data:
    return None
  encoding = module.encoding
  return data.decode(encoding), new_data.decode(encoding), new_data


def _migrate_notebook(path: str, result: FileResult
                      ) -> Optional[Tuple[str, str, bytes]]:
  with open(path, "rb") as f:
    data = f.read()
  try:
    text = data.decode("utf-8")
    outcome = notebook.migrate_notebook(text)
  except (UnicodeDecodeError, ValueError) as e:
    # json.JSONDecodeError is a ValueError.
    result.error = f"cannot read the file as a notebook: {e}"
    return None
  result.changes = outcome.changes
  result.problems = outcome.problems
  if outcome.text == text:
    return None
  return text, outcome.text, outcome.text.encode("utf-8")


def migrate_file(path: str, write: bool,
                 diff_out: Optional[TextIO] = None) -> FileResult:
  """Migrates one file in place, or prints what would change.

  Args:
    path: a `.py` file or `.ipynb` notebook (any other name is read as
      Python).
    write: whether to write the migrated text back.
    diff_out: where to print a unified diff of the change, or None.

  Returns:
    The FileResult (with `error` set, and the file untouched, when it does
    not parse).
  """
  result = FileResult(path)
  migrate = _migrate_notebook if path.endswith(".ipynb") else _migrate_python
  try:
    outcome = migrate(path, result)
  except OSError as e:
    result.error = f"cannot read the file: {e}"
    return result
  if outcome is None:
    return result
  old_text, new_text, new_data = outcome
  result.changed = True
  if diff_out is not None:
    # git's a/ b/ prefixes for relative paths (`patch -p1` applies them).
    relative = not os.path.isabs(path)
    diff_out.writelines(difflib.unified_diff(
        old_text.splitlines(keepends=True), new_text.splitlines(keepends=True),
        fromfile=f"a/{path}" if relative else path,
        tofile=f"b/{path}" if relative else path))
  if write:
    with open(path, "wb") as f:
      f.write(new_data)
  return result


def migrate_paths(paths: Sequence[str], write: bool,
                  diff_out: Optional[TextIO] = None) -> List[FileResult]:
  """Migrates every `.py` and `.ipynb` file under `paths`.

  Args:
    paths: files and directories.
    write: whether to write the changed files.
    diff_out: where to print unified diffs, or None.

  Returns:
    One FileResult per file (and per path that does not exist, with
    `error` set).
  """
  results: List[FileResult] = []
  for path, missing in iter_files(paths):
    if missing is not None:
      results.append(FileResult(path, error=missing))
    else:
      results.append(migrate_file(path, write, diff_out))
  return results
