"""What the migration tool did to each file, and the summary it prints at the end."""
from __future__ import annotations

import collections
import dataclasses
from typing import Dict, List, Optional, Sequence

# The kinds of rewrite, in the order the summary lists them.
KINDS = ("attribute", "module alias", "keras", "import", "import added",
         "import removed")


@dataclasses.dataclass(frozen=True)
class Change:
  """One rewrite in one file.

  Attributes:
    kind: one of KINDS.
    line: 1-based line in the source the rewrite was made on (in the cell,
      for a notebook).
    before: the code that was there (empty for an added import).
    after: the code that replaces it (empty for a removed import).
    cell: for a notebook, the 0-based index of the cell in the notebook.
  """
  kind: str
  line: int
  before: str
  after: str
  cell: Optional[int] = None


@dataclasses.dataclass(frozen=True)
class Problem:
  """A way of reaching tf.estimator that the tool left as it was.

  Attributes:
    line: 1-based line (in the cell, for a notebook).
    code: the code in question.
    hint: how to port it by hand.
    cell: for a notebook, the 0-based index of the cell.
  """
  line: int
  code: str
  hint: str
  cell: Optional[int] = None


@dataclasses.dataclass
class FileResult:
  """The outcome for one file.

  Attributes:
    path: the file, as the user named it (or as found under a directory).
    changed: whether the migrated text differs from the file's.
    changes: the rewrites made.
    problems: what could not be rewritten.
    error: why the file was left untouched (a parse error), or None.
  """
  path: str
  changed: bool = False
  changes: List[Change] = dataclasses.field(default_factory=list)
  problems: List[Problem] = dataclasses.field(default_factory=list)
  error: Optional[str] = None


def _where(line: int, cell: Optional[int]) -> str:
  if cell is None:
    return f"line {line}"
  return f"cell {cell}, line {line}"


def _one_line(code: str) -> str:
  # Multi-line imports are summarised on one line: the report is a list.
  return " ".join(code.split())


def format_report(results: Sequence[FileResult], written: bool) -> str:
  """The summary the tool prints after it ran.

  Args:
    results: one FileResult per file looked at.
    written: whether the changed files were written (False under --diff).

  Returns:
    The text: counts of files, rewrites by kind, the rewrites of each file
    with their lines, what could not be rewritten with a hint, parse errors.
  """
  changed = [r for r in results if r.changed]
  failed = [r for r in results if r.error is not None]
  action = "changed" if written else "would change (--diff: nothing written)"
  lines = [f"estimator_lite.migrate: {len(results)} file(s) looked at, "
           f"{len(changed)} {action}, {len(failed)} not parsed"]
  counts: Dict[str, int] = collections.Counter(
      change.kind for result in results for change in result.changes)
  if counts:
    lines.append("Rewrites by kind:")
    for kind in KINDS:
      if counts.get(kind):
        lines.append(f"  {kind:<15}{counts[kind]:>5}")
  for result in changed:
    lines.append(f"{result.path}: {len(result.changes)} rewrite(s)")
    for change in result.changes:
      where = _where(change.line, change.cell)
      if change.kind == "import added":
        text = change.after
      elif change.kind == "import removed":
        text = _one_line(change.before)
      else:
        text = f"{_one_line(change.before)} -> {_one_line(change.after)}"
      lines.append(f"  {where}: {change.kind}: {text}")
  problems = [(r.path, p) for r in results for p in r.problems]
  if problems:
    lines.append(f"Could not rewrite ({len(problems)}):")
    for path, problem in problems:
      lines.append(f"  {path}, {_where(problem.line, problem.cell)}: "
                   f"{_one_line(problem.code)}")
      lines.append(f"    hint: {problem.hint}")
  if failed:
    lines.append(f"Not parsed, left untouched ({len(failed)}):")
    for result in failed:
      lines.append(f"  {result.path}: {result.error}")
  return "\n".join(lines) + "\n"
