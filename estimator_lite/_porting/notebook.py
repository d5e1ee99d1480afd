"""Migrating a Jupyter notebook: its code cells, rewritten as one program.

A notebook's cells share one namespace (`import tensorflow as tf` in the
first cell, `tf.estimator.X` in the fifth), so the code cells are joined into
one module, rewritten together and split back. IPython syntax (`%magic`,
`!shell`, `x?`) is not Python: such lines are masked by a placeholder
statement while libcst parses and put back afterwards. Cells that still do
not parse (a `%%bash` cell, a syntax error) are left as they are and
reported. Outputs, metadata and the JSON layout are kept: only the `source`
of changed cells changes.
"""
from __future__ import annotations

import dataclasses
import json
import re
from typing import Any, Dict, List, Optional, Tuple

import libcst as cst

from estimator_lite._porting import rewriter
from estimator_lite._porting.report import Change, Problem

_CELL_MARK = "# estimator_lite.migrate: cell {} #"
_CELL_MARK_RE = re.compile(r"^# estimator_lite\.migrate: cell (\d+) #$")
_MAGIC_MARK = "pass  # estimator_lite.migrate: magic {} #"
_MAGIC_MARK_RE = re.compile(
    r"^(\s*)pass  # estimator_lite\.migrate: magic (\d+) #$")
_MAGIC_START = ("%", "!", "?")
# Cell magics whose body is Python run in the notebook's namespace.
_PYTHON_CELL_MAGICS = ("time", "timeit", "capture", "prun", "debug")


@dataclasses.dataclass
class NotebookResult:
  """A migrated notebook.

  Attributes:
    text: the notebook's new JSON text (the input when nothing changed).
    changes: the rewrites, located by cell and line in the cell.
    problems: what could not be rewritten, and the cells skipped.
  """
  text: str
  changes: List[Change]
  problems: List[Problem]


def _source_text(cell: Dict[str, Any]) -> str:
  source = cell.get("source", "")
  return "".join(source) if isinstance(source, list) else str(source)


def _foreign_cell(source: str) -> bool:
  """Whether a cell magic makes the cell something else than notebook Python."""
  first = source.lstrip().split("\n")[0]
  if not first.startswith("%%"):
    return False
  return first[2:].split(" ")[0] not in _PYTHON_CELL_MAGICS


def _mask(text: str, magics: List[str]) -> str:
  """`text` with its IPython lines replaced by placeholder statements."""
  lines = text.split("\n")
  for i, line in enumerate(lines):
    stripped = line.strip()
    if stripped.startswith(_MAGIC_START) or (
        stripped.endswith("?") and not stripped.startswith("#")):
      indent = line[:len(line) - len(line.lstrip())]
      lines[i] = indent + _MAGIC_MARK.format(len(magics))
      magics.append(line)
  return "\n".join(lines)


def _unmask(text: str, magics: List[str]) -> str:
  lines = text.split("\n")
  for i, line in enumerate(lines):
    match = _MAGIC_MARK_RE.match(line)
    if match:
      lines[i] = magics[int(match.group(2))]
  return "\n".join(lines)


def _parses(text: str) -> bool:
  try:
    cst.parse_module(text)
  except cst.ParserSyntaxError:
    return False
  return True


def _indent_of(text: str) -> Optional[int]:
  match = re.search(r"^\{\s*\n( *)\S", text)
  return len(match.group(1)) if match else None


def _as_source(text: str, like: Any) -> Any:
  # nbformat keeps a cell's source as a list of lines, each with its "\n".
  if isinstance(like, list):
    return text.splitlines(keepends=True)
  return text


def migrate_notebook(text: str) -> NotebookResult:
  """Rewrites the tf.estimator uses in a notebook's code cells.

  Args:
    text: the notebook file's JSON text.

  Returns:
    The new JSON text, the changes and the problems.

  Raises:
    ValueError: `text` is not a notebook (not JSON, or no `cells` list).
  """
  notebook = json.loads(text)
  if not isinstance(notebook, dict) or not isinstance(
      notebook.get("cells"), list):
    raise ValueError("not a Jupyter notebook: no list of cells")
  cells: List[Dict[str, Any]] = notebook["cells"]
  problems: List[Problem] = []
  magics: List[str] = []
  parts: List[str] = []
  sources: Dict[int, str] = {}
  for index, cell in enumerate(cells):
    if cell.get("cell_type") != "code":
      continue
    source = _source_text(cell)
    masked = _mask(source, magics)
    if _foreign_cell(source) or not _parses(masked):
      problems.append(Problem(
          1, source.split("\n")[0],
          "cell skipped: it is not Python of the notebook (a cell magic such "
          "as %%bash or %%writefile, or a syntax error); port its "
          "tf.estimator uses by hand", cell=index))
      continue
    sources[index] = source
    parts.append(_CELL_MARK.format(index) + "\n" + masked.rstrip("\n") + "\n")
  if not parts:
    return NotebookResult(text, [], problems)
  joined = "".join(parts)
  try:
    joined_module = cst.parse_module(joined)
  except cst.ParserSyntaxError as e:
    # Every cell parsed alone; together they should too.
    raise ValueError(f"the code cells do not parse as one program: {e}") from e
  result = rewriter.rewrite(joined_module)
  # Where each joined line came from: (cell, line in the cell).
  origin: Dict[int, Tuple[int, int]] = {}
  current, first = -1, 0
  for number, line in enumerate(joined.split("\n"), start=1):
    match = _CELL_MARK_RE.match(line)
    if match:
      current, first = int(match.group(1)), number
    origin[number] = (current, number - first)
  changes = [_locate(change, origin) for change in result.changes]
  problems.extend(_locate(problem, origin) for problem in result.problems)
  problems.sort(key=lambda p: (p.cell or 0, p.line))
  if not result.changes:
    return NotebookResult(text, [], problems)
  new_sources = _split(_unmask(result.module.code, magics))
  for index, old in sources.items():
    body = old.rstrip("\n")
    new = new_sources[index]
    if new != body:
      # The cell keeps its own trailing newlines.
      cells[index]["source"] = _as_source(new + old[len(body):],
                                          cells[index].get("source"))
  indent = _indent_of(text)
  new_text = json.dumps(notebook, indent=1 if indent is None else indent,
                        ensure_ascii=False)
  if text.endswith("\n"):
    new_text += "\n"
  return NotebookResult(new_text, changes, problems)


def _split(code: str) -> Dict[int, str]:
  cells: Dict[int, List[str]] = {}
  current: Optional[List[str]] = None
  for line in code.split("\n"):
    match = _CELL_MARK_RE.match(line)
    if match:
      current = cells.setdefault(int(match.group(1)), [])
    elif current is not None:
      current.append(line)
  return {index: "\n".join(lines).rstrip("\n") for index, lines in cells.items()}


def _locate(item: Any, origin: Dict[int, Tuple[int, int]]) -> Any:
  cell, line = origin.get(item.line, (None, item.line))
  if cell == -1 or line < 1:
    cell, line = None, item.line
  return dataclasses.replace(item, line=line, cell=cell)
