"""Runs an unmodified tf.estimator program on estimator_lite.

    python -m estimator_lite.run train.py ARGS...
    python -m estimator_lite.run -m package.train ARGS...

is `python train.py ARGS...` (`python -m package.train ARGS...`) with
`estimator_lite.install()` done first: every `tf.estimator`,
`tf.compat.v1.estimator`, `tensorflow_estimator` and `tf.keras.estimator` the
program reaches is estimator_lite's, and TensorFlow's C++ start-up noise is
left out of its stderr (docs/logs.md). The program runs as `__main__` with the
`sys.argv`, `sys.path[0]`, exit status and traceback plain Python gives it.
It works under the launcher too:

    python -m estimator_lite.launch --ps 1 --workers 1 -- \\
        python -m estimator_lite.run train.py ARGS...
"""
from __future__ import annotations

import builtins
import inspect
import importlib.machinery
import importlib.util
import os
import runpy
import signal
import sys
import types
from typing import Callable, List, NoReturn, Optional, Sequence

from estimator_lite._util import stderr_guard

USAGE = """\
usage: python -m estimator_lite.run SCRIPT [ARGS...]
       python -m estimator_lite.run -m MODULE [ARGS...]

Runs an unmodified tf.estimator program with tf.estimator, tf.compat.v1.estimator,
tensorflow_estimator and tf.keras.estimator resolving to estimator_lite, as
`python SCRIPT ARGS...` (`python -m MODULE ARGS...`) would run it.

options:
  -h, --help  show this help message and exit
  -m MODULE   run library module MODULE as a script (as python -m)

TensorFlow's C++ start-up noise is left out of the program's stderr;
ESTIMATOR_LITE_SHOW_TF_LOGS=1 in the environment shows it.
"""


def main(argv: Optional[Sequence[str]] = None) -> None:
  """Parses the runner's own arguments, installs the hooks and runs the program.

  Args:
    argv: the runner's arguments (default `sys.argv[1:]`): SCRIPT ARGS... or
      -m MODULE ARGS...; what follows SCRIPT / MODULE is the program's.

  Raises:
    SystemExit: with the program's exit status, or 2 for a bad command line.
  """
  args = list(sys.argv[1:] if argv is None else argv)
  if not args:
    sys.stderr.write(USAGE)
    raise SystemExit(2)
  if args[0] in ("-h", "--help"):
    sys.stdout.write(USAGE)
    raise SystemExit(0)
  if args[0] == "-m":
    if len(args) < 2:
      sys.stderr.write("Argument expected for the -m option\n" + USAGE)
      raise SystemExit(2)
    _install()
    _run_module(args[1], args[2:])
  elif args[0].startswith("-") and args[0] != "-":  # "-": the program on stdin
    sys.stderr.write(f"unknown option {args[0]}\n" + USAGE)
    raise SystemExit(2)
  else:
    _install()
    _run_script(args[0], args[1:])


def _install() -> None:
  # pylint: disable=g-import-not-at-top
  # Before TensorFlow is imported, so its start-up banners are left out too
  # (docs/logs.md; ESTIMATOR_LITE_SHOW_TF_LOGS=1 shows them).
  stderr_guard.start()
  # Imported only here, so `--help` answers without loading TensorFlow.
  from estimator_lite._porting import install
  install.install()


def _run_script(script: str, program_args: List[str]) -> None:
  if script == "-":
    # The program from standard input, as `python - ARGS`.
    sys.argv = ["-", *program_args]
    sys.path[0] = ""
    source = sys.stdin.read()
    stdin_main = _fresh_main(None, spec=None, package=None)
    _exec_guarded(lambda: exec(compile(source, "<stdin>", "exec"), stdin_main.__dict__))
    return
  if not os.path.isfile(script):
    if os.path.isdir(script) or (os.path.exists(script) and script.endswith(".zip")):
      # A directory or zip with __main__.py, as python runs it.
      sys.argv = [script, *program_args]
      sys.path[0] = script
      _exec_guarded(lambda: runpy.run_path(script, run_name="__main__"))
      return
    sys.stderr.write(f"{sys.executable}: can't open file {os.path.abspath(script)!r}: "
                     f"[Errno 2] No such file or directory\n")
    raise SystemExit(2)
  # As `python SCRIPT`: argv[0] as given, the script's (real) directory first
  # on sys.path in place of the runner's, __file__ absolute.
  sys.argv = [script, *program_args]
  sys.path[0] = os.path.dirname(os.path.realpath(script))
  with open(script, "rb") as f:
    source = f.read()
  main_module = _fresh_main(os.path.abspath(script), spec=None, package=None)
  loader = importlib.machinery.SourceFileLoader("__main__", os.path.abspath(script))
  main_module.__loader__ = loader
  # Compiled inside the guard: a SyntaxError reads as python's, with no frames.
  _exec_guarded(lambda: exec(compile(source, os.path.abspath(script), "exec"),
                             main_module.__dict__))


def _run_module(module: str, program_args: List[str]) -> None:
  # As `python -m MODULE`: sys.path[0] stays the current directory (the
  # runner was started with -m too); a package runs its __main__.
  sys.argv = ["-m", *program_args]  # Python's placeholder until the module is found.
  spec = _module_spec(module)
  assert spec.loader is not None
  code = spec.loader.get_code(spec.name)  # type: ignore[attr-defined]
  if code is None:
    sys.stderr.write(f"{sys.executable}: No code object available for {module}\n")
    raise SystemExit(1)
  sys.argv[0] = spec.origin or module
  main_module = _fresh_main(spec.origin, spec=spec, package=spec.parent)
  main_module.__loader__ = spec.loader
  _exec_guarded(lambda: exec(code, main_module.__dict__), under_runpy=True)


def _module_spec(module: str) -> importlib.machinery.ModuleSpec:
  try:
    spec = importlib.util.find_spec(module)
    if spec is not None and spec.submodule_search_locations is not None:
      spec = importlib.util.find_spec(module + ".__main__")
      if spec is None:
        sys.stderr.write(f"{sys.executable}: No module named {module}.__main__; "
                         f"'{module}' is a package and cannot be directly executed\n")
        raise SystemExit(1)
  except ImportError as e:
    sys.stderr.write(f"{sys.executable}: Error while finding module specification "
                     f"for {module!r} ({type(e).__name__}: {e})\n")
    raise SystemExit(1) from None
  if spec is None:
    sys.stderr.write(f"{sys.executable}: No module named {module}\n")
    raise SystemExit(1)
  return spec


def _fresh_main(origin: Optional[str], spec: Optional[importlib.machinery.ModuleSpec],
                package: Optional[str]) -> types.ModuleType:
  """A new `__main__` module in sys.modules, as Python's own for the program."""
  module = types.ModuleType("__main__")
  module.__file__ = origin
  module.__spec__ = spec
  module.__package__ = package
  module.__cached__ = getattr(spec, "cached", None) if spec is not None else None  # type: ignore[attr-defined]
  module.__builtins__ = builtins  # type: ignore[attr-defined]
  # The runner's own __main__ is replaced for good: pickle, multiprocessing
  # and `sys.modules["__main__"]` lookups see the program, as under python.
  sys.modules["__main__"] = module
  return module


def _exec_guarded(run: Callable[[], object], under_runpy: bool = False) -> None:
  """Runs the program; an uncaught exception ends the process as under python.

  Args:
    run: runs the program's code.
    under_runpy: the traceback starts with runpy's frames, as `python -m`'s.
  """
  try:
    run()
  except SystemExit:
    raise
  except BaseException as error:  # pylint: disable=broad-except
    _exit_like_python(error, under_runpy)


def _exit_like_python(error: BaseException, under_runpy: bool) -> NoReturn:
  # The traceback starts at the program's first frame: the runner's own
  # frames (this file, runpy) are left out, so it reads as python's would.
  tb = error.__traceback__
  while tb is not None and tb.tb_frame.f_code.co_filename in _RUNNER_FILES:
    tb = tb.tb_next
  if under_runpy:
    # `python -m` shows the two runpy frames that started the module; this
    # runner was started by the very same ones (`python -m estimator_lite.run`).
    frame = inspect.currentframe()
    while frame is not None:
      if frame.f_code.co_filename in _RUNNER_FILES - {__file__}:
        tb = types.TracebackType(tb, frame, frame.f_lasti, frame.f_lineno)
      frame = frame.f_back
  error.__traceback__ = tb
  sys.excepthook(type(error), error, tb)
  if isinstance(error, KeyboardInterrupt):
    # Python ends on an uncaught Ctrl-C by dying of SIGINT (status -2 / 130).
    sys.stdout.flush()
    sys.stderr.flush()
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGINT)
  raise SystemExit(1)


# runpy's code names its file "<frozen runpy>" where the stdlib is frozen.
_RUNNER_FILES = frozenset({__file__, runpy.__file__, "<frozen runpy>"})

if __name__ == "__main__":
  main()
