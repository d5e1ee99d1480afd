"""The package root: every public name resolves, lazily, and importing it loads no TensorFlow."""
import ast
import importlib
import os
import subprocess
import sys

import estimator_lite

_INIT = os.path.join(os.path.dirname(estimator_lite.__file__), "__init__.py")


def _type_checking_imports():
  # The names the `if TYPE_CHECKING:` block imports, with their modules.
  tree = ast.parse(open(_INIT).read())
  block = next(node for node in tree.body
               if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING")
  found = {}
  for node in block.body:
    if isinstance(node, ast.ImportFrom):
      for alias in node.names:
        found[alias.name] = node.module
  return found


def test_type_checkers_see_the_names_the_package_resolves():
  # The lazy table is the runtime truth; the static imports must mirror it, or
  # a type checker (and an IDE) would see a different package than Python.
  static = _type_checking_imports()
  expected = dict(estimator_lite._NAMES)  # pylint: disable=protected-access
  for submodule in estimator_lite._SUBMODULES:  # pylint: disable=protected-access
    expected[submodule] = "estimator_lite"
  assert static == expected


def test_every_public_name_resolves_to_its_module():
  for name, module in estimator_lite._NAMES.items():  # pylint: disable=protected-access
    # The very object of its module (hooks are TensorFlow's own classes).
    assert getattr(estimator_lite, name) is getattr(importlib.import_module(module), name), name
  assert estimator_lite.DNNClassifier.__name__ == "DNNClassifier"
  assert estimator_lite.export.ServingInputReceiver is not None
  assert set(estimator_lite._NAMES) <= set(dir(estimator_lite))  # pylint: disable=protected-access


def test_import_loads_no_tensorflow_until_a_name_is_used():
  # `python -m estimator_lite.launch --help` (and .run, .migrate) must answer
  # at once: the package import alone must not pull TensorFlow in.
  code = ("import sys, estimator_lite; print('tensorflow' in sys.modules); "
          "estimator_lite.RunConfig; print('tensorflow' in sys.modules)")
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120, check=True).stdout.split()
  assert out == ["False", "True"]
