"""The error a tf.estimator name that estimator_lite leaves out raises.

Every estimator_lite module mirroring a tf.estimator namespace (the top level,
estimator_lite.compat.v1, estimator_lite.experimental) raises it from its
`__getattr__`, so a program asking for a tf.estimator name that estimator_lite
does not provide learns what to do instead of seeing a bare AttributeError,
and code probing with `hasattr` still sees the name missing.

`from tensorflow.estimator import Name` turns any AttributeError into
Python's bare "cannot import name" ImportError, losing the text; so when the
name is asked for by a `from ... import` statement, the error is an
ImportError with the same text instead.
"""
import dis
import inspect
import os
import types
from typing import Dict, Optional, Tuple, Union

# tf.estimator name -> (the tf.estimator namespace that had it, what it was,
# what to use instead).
NotProvided = Dict[str, Tuple[str, str, str]]


_IMPORT_FROM = dis.opmap["IMPORT_FROM"]
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _asked_by_from_import() -> bool:
  """Whether the code asking for the attribute is a `from module import name` statement.

  The first frame outside estimator_lite (the module `__getattr__`s, and
  install()'s namespaces, sit between it and here) is the program's; its
  current instruction says how it asked.
  """
  current = inspect.currentframe()
  frame: Optional[types.FrameType] = current.f_back if current is not None else None
  while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(
      _PACKAGE_DIR + os.sep):
    frame = frame.f_back
  if frame is None:
    return False
  return frame.f_code.co_code[frame.f_lasti] == _IMPORT_FROM


def not_provided_error(module_name: str, name: str, not_provided: NotProvided
                       ) -> Union[AttributeError, ImportError]:
  """Returns the AttributeError for `name`, missing from module `module_name`.

  Args:
    module_name: the estimator_lite module's name.
    name: the attribute asked for.
    not_provided: the tf.estimator names the module leaves out (see `NotProvided`).

  Returns:
    The error to raise: Python's usual AttributeError for a name tf.estimator
    did not have either, else one saying what it was and what to use: an
    ImportError (with `name` and `path` unset) when a `from ... import`
    statement asked, an AttributeError otherwise.
  """
  if name not in not_provided:
    return AttributeError(f"module {module_name!r} has no attribute {name!r}")
  tf_module, what, instead = not_provided[name]
  text = (f"{module_name} has no {name!r}: {tf_module}.{name} ({what}) is not part "
          f"of estimator_lite. {instead}")
  if _asked_by_from_import():
    return ImportError(text)
  return AttributeError(text)
