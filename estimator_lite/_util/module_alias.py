"""Module paths served as another module's very object (`import a.b` gives module `c`).

tf.estimator's namespaces nest (`tf.compat.v1.estimator.export`), while
estimator_lite keeps one module per concept (`estimator_lite.export` serves
both `tf.estimator.export` and `tf.compat.v1.estimator.export`). An
`AliasFinder` on `sys.meta_path` lets every import spelling of such a path
(`import X.export`, `from X.export import name`) reach that one module:
the program gets the target module object itself, so names compare identical
whichever way they were reached.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from typing import Callable, Optional, Sequence


class AliasLoader(importlib.abc.Loader):
  """Loads a path as the module `target`: sys.modules[path] becomes that module."""

  def __init__(self, target: str) -> None:
    self._target = target

  def create_module(self, spec: importlib.machinery.ModuleSpec) -> Optional[types.ModuleType]:
    return None  # The default module; exec_module replaces it.

  def exec_module(self, module: types.ModuleType) -> None:
    # The import system returns whatever sys.modules holds after exec_module:
    # the program gets the target's very module object, whose own __spec__
    # and __name__ stay untouched.
    sys.modules[module.__name__] = importlib.import_module(self._target)


class AliasFinder(importlib.abc.MetaPathFinder):
  """Serves the paths `target_of` maps (to the module it names); None passes a path on."""

  def __init__(self, target_of: Callable[[str], Optional[str]]) -> None:
    self.target_of = target_of

  def find_spec(self, fullname: str, path: Optional[Sequence[str]] = None,
                target: Optional[types.ModuleType] = None
                ) -> Optional[importlib.machinery.ModuleSpec]:
    del path, target  # An alias does not depend on where its parent lives.
    module = self.target_of(fullname)
    # A path whose target does not exist fails as any missing module does.
    if module is None or importlib.util.find_spec(module) is None:
      return None
    return importlib.util.spec_from_loader(fullname, AliasLoader(module))


def register(target_of: Callable[[str], Optional[str]]) -> None:
  """Puts an AliasFinder for `target_of` first on sys.meta_path, unless one is there already.

  Args:
    target_of: maps a module path to the module to serve it as, or to None
      for a path it does not serve (it is asked for every import: answer a
      path outside its namespace at once).
  """
  if not any(isinstance(finder, AliasFinder) and finder.target_of is target_of
             for finder in sys.meta_path):
    sys.meta_path.insert(0, AliasFinder(target_of))
