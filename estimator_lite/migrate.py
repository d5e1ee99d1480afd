"""`python -m estimator_lite.migrate PATH... [--diff]`: port programs to estimator_lite.

Rewrites `.py` files and the code cells of `.ipynb` notebooks in place so
that every way they reach tf.estimator (`tf.estimator.X`,
`tf.compat.v1.estimator.X`, `from tensorflow import estimator`,
`tensorflow_estimator`, `tf.keras.estimator.model_to_estimator`, module
aliases such as `v1 = tf.compat.v1`) uses estimator_lite instead, keeping
everything else (comments, formatting, other TensorFlow code) as it was.
"""
from __future__ import annotations

import argparse
import sys
from typing import List, Optional, Sequence

from estimator_lite._porting import migration
from estimator_lite._porting import report

_EPILOG = """\
The rewrite, for a program that did `import tensorflow as tf`:
  tf.estimator.RunConfig(...)            -> estimator_lite.RunConfig(...)
  tf.compat.v1.estimator.X               -> estimator_lite.compat.v1.X
  tf.keras.estimator.model_to_estimator  -> estimator_lite.keras.model_to_estimator
and `import estimator_lite` is added before the first TensorFlow import
(`import tensorflow as tf` is kept: tf is still used for other things).
Imports of an estimator namespace keep the name they bind:
  from tensorflow import estimator as tfe    -> import estimator_lite as tfe
  from tensorflow.estimator import RunConfig -> from estimator_lite import RunConfig
An import of tensorflow_estimator that nothing uses any more is removed.
Running the tool again changes nothing. In notebooks only code cells change
(outputs and metadata are kept); IPython lines (%magic, !shell) stay as they
are, and cells run by a cell magic such as %%bash are skipped and reported.

What it cannot rewrite is listed at the end with a hint: imports of
tensorflow_estimator's private modules, modules named by a string
(importlib.import_module("tensorflow.estimator"), __import__) and
getattr(tf, "estimator"). A program can also run unchanged with
`python -m estimator_lite.run PROGRAM`.

Exit status: 0 when every file was read (also when nothing needed changing,
or some uses could not be rewritten); 1 when a file could not be parsed or
read (it is reported and left untouched; the other files are migrated);
2 on a usage error.
"""


def _parser() -> argparse.ArgumentParser:
  parser = argparse.ArgumentParser(
      prog="python -m estimator_lite.migrate",
      description=(
          "Rewrite programs (.py files and .ipynb notebooks) in place so that "
          "they use estimator_lite wherever they used tf.estimator, and "
          "report every rewrite."),
      epilog=_EPILOG,
      formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument(
      "paths", nargs="+", metavar="PATH",
      help="a .py file, a .ipynb notebook, or a directory (searched "
      "recursively for both; hidden directories, virtual environments and "
      "__pycache__ are skipped)")
  parser.add_argument(
      "--diff", action="store_true",
      help="print a unified diff of each change to stdout (the report goes "
      "to stderr) and write nothing")
  return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
  """Runs the migration tool.

  Args:
    argv: the command-line arguments after the program name (sys.argv[1:]
      when None).

  Returns:
    The exit status: 0 on success, 1 when a file could not be parsed.
  """
  args = _parser().parse_args(argv)
  paths: List[str] = args.paths
  if args.diff:
    results = migration.migrate_paths(paths, write=False, diff_out=sys.stdout)
    sys.stdout.flush()
    sys.stderr.write(report.format_report(results, written=False))
  else:
    results = migration.migrate_paths(paths, write=True)
    sys.stdout.write(report.format_report(results, written=True))
  return 1 if any(result.error is not None for result in results) else 0


if __name__ == "__main__":
  sys.exit(main())
