"""Import hooks that make an unmodified tf.estimator program use estimator_lite.

TensorFlow 2.16+ has no `tf.estimator`, and `tensorflow_estimator` is not
installable next to it. `install()` puts back every way a tf.estimator 2.15
program reached it, each resolving to the estimator_lite module that
`names.py` maps it to:

- attributes: `tf.estimator`, `tf.compat.v1.estimator`,
  `tf.compat.v2.estimator` on TensorFlow's module objects (so
  `import tensorflow.compat.v1 as tf; tf.estimator` and module aliases such as
  `v1 = tf.compat.v1; v1.estimator` work too), also on a copy of a compat
  namespace that TensorFlow loads later (`import tensorflow.compat.v2` loads
  one and makes it `tf.compat.v2`): the finder wraps its loader;
- imports: a `sys.meta_path` finder serves `tensorflow.estimator[...]`,
  `tensorflow.compat.v1.estimator[...]`, `tensorflow_estimator[...]` (and
  every other path in `names.MODULES`) as the estimator_lite modules
  themselves, so `from tensorflow.estimator.export import ServingInputReceiver`
  gives estimator_lite's class;
- `tensorflow_estimator` itself (and the packages on the way to its public API
  paths) is a small namespace module whose `estimator` is
  `estimator_lite.compat.v1`, as tensorflow_estimator 2.15's was the v1 API;
  its private modules (`tensorflow_estimator.python.estimator.estimator`, ...)
  raise ImportError with `names.PRIVATE_HINT`;
- Keras: tf-keras's `estimator` modules (what `tf.keras.estimator` and
  `tf.compat.v1.keras.estimator` resolve to) are served as thin modules whose
  `model_to_estimator` is estimator_lite.keras's (.v1's). tf-keras 2.21's own
  raises NotImplementedError. This stays lazy: nothing imports tf-keras until
  the program touches `tf.keras`; a tf-keras imported before `install()` has
  its modules patched in place instead, and a Keras 3 that `tf.keras`
  already resolved to gets an `estimator` attribute.

The finder sits first on `sys.meta_path`, ahead of a real tensorflow_estimator
if one is installed (it could not work with TensorFlow 2.16+).
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import re
import sys
import types
from typing import Any, List, Optional, Sequence

from estimator_lite._porting import names
from estimator_lite._util import module_alias

# tf-keras's modules behind `tf.keras.estimator` (TensorFlow's KerasLazyLoader
# resolves `tf.keras` to tf_keras.api._v2.keras and `tf.compat.v1.keras` to
# tf_keras.api._v1.keras), by the public path whose names.py entry they take.
# They are imported while tf-keras itself initialises, so they get a module
# that looks the estimator_lite function up on first use: importing
# estimator_lite.keras there would import tf-keras inside its own __init__.
_KERAS_MODULES = {
    "tf_keras.api._v2.keras.estimator": "tensorflow.keras.estimator",
    "tf_keras.api._v1.keras.estimator": "tensorflow.compat.v1.keras.estimator",
    "tf_keras.estimator": "tf_keras.estimator",
}

# The TensorFlow module objects that get an `estimator` attribute, by the
# dotted path names.py knows them under.
_TF_NAMESPACES = ("tensorflow", "tensorflow.compat.v1", "tensorflow.compat.v2")
# The module names TensorFlow loads its compat namespaces under. A program's
# `import tensorflow.compat.v1` loads a second module object for
# tf.compat.v1 (and makes it `tf.compat.v1`): the finder gives every such
# copy, loaded after install(), its `estimator` too.
_TF_NAMESPACE_MODULES = re.compile(r"tensorflow(?:\._api\.v2)?\.compat\.(v1|v2)")

_NAMESPACE = "namespace"
_KERAS = "keras"


def private_import_error(fullname: str) -> ImportError:
  """The error for importing tf.estimator's private module `fullname`."""
  return ImportError(
      f"No module named {fullname!r}: estimator_lite stands in for "
      f"tf.estimator's public API only. {names.PRIVATE_HINT}", name=fullname)


def _leads_to_public(fullname: str) -> bool:
  return any(key.startswith(fullname + ".") for key in names.MODULES)


class _Loader(importlib.abc.Loader):
  """Serves one path: a namespace, or a Keras forwarder."""

  def __init__(self, kind: str, target: Optional[str]) -> None:
    self._kind = kind
    self._target = target

  def create_module(self, spec: importlib.machinery.ModuleSpec) -> Optional[types.ModuleType]:
    return None  # The default module; exec_module fills or replaces it.

  def exec_module(self, module: types.ModuleType) -> None:
    if self._kind == _NAMESPACE:
      module.__path__ = []  # A package: its children come through the finder.
      module.__getattr__ = _namespace_getattr(module.__name__)  # type: ignore[method-assign]
    else:
      assert self._target is not None
      module.__getattr__ = _forwarding_getattr(self._target)  # type: ignore[method-assign]


def _namespace_getattr(package: str) -> Any:
  """`tfe.estimator`, `tensorflow_estimator.python....`: children on attribute access."""

  def getattr_(name: str) -> Any:
    child = f"{package}.{name}"
    if names.target_of(child) is None and not _leads_to_public(child):
      raise AttributeError(f"module {package!r} has no attribute {name!r}")
    return importlib.import_module(child)

  return getattr_


def _forwarding_getattr(target: str) -> Any:
  """Module `__getattr__` that reads each name from `target` on first use."""

  def getattr_(name: str) -> Any:
    if name.startswith("__"):
      raise AttributeError(name)
    return getattr(importlib.import_module(target), name)

  return getattr_


class _EstimatorAttributeLoader(importlib.abc.Loader):
  """TensorFlow's loader of a namespace module, which then gets its `estimator`."""

  def __init__(self, loader: importlib.abc.Loader, public_path: str) -> None:
    self._loader = loader
    self._public_path = public_path

  def create_module(self, spec: importlib.machinery.ModuleSpec) -> Optional[types.ModuleType]:
    return self._loader.create_module(spec)

  def exec_module(self, module: types.ModuleType) -> None:
    self._loader.exec_module(module)
    # On first use: this may run while `import tensorflow` itself is under
    # way (TensorFlow loads its compat namespaces as it initialises), before
    # estimator_lite's modules can import it.
    original = module.__dict__.get("__getattr__")
    public_path = self._public_path

    def getattr_(name: str) -> Any:
      if name == "estimator":
        _set_estimator(module, public_path)
        return module.estimator
      if original is not None:
        return original(name)
      raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}")

    module.__getattr__ = getattr_  # type: ignore[method-assign]


class EstimatorFinder(importlib.abc.MetaPathFinder):
  """Finds tf.estimator's import paths; see the module docstring."""

  def find_spec(self, fullname: str, path: Optional[Sequence[str]] = None,
                target: Optional[types.ModuleType] = None
                ) -> Optional[importlib.machinery.ModuleSpec]:
    """The spec serving `fullname`, or None for paths that are not tf.estimator's.

    Raises:
      ImportError: `fullname` is tf.estimator's private code.
    """
    if fullname in _KERAS_MODULES:
      keras_target = names.target_of(_KERAS_MODULES[fullname])
      return importlib.util.spec_from_loader(fullname, _Loader(_KERAS, keras_target))
    if not fullname.startswith(("tensorflow", "tf_keras")):
      return None  # The common case, answered at once.
    namespace = _TF_NAMESPACE_MODULES.fullmatch(fullname)
    if namespace is not None:
      return self._namespace_spec(fullname, path, target,
                                  f"tensorflow.compat.{namespace.group(1)}.estimator")
    mapped = names.target_of(fullname)
    if mapped is not None:
      # A path below a namespace that estimator_lite does not have
      # (`tensorflow.estimator.nothing`) fails as a missing module would.
      if importlib.util.find_spec(mapped) is None:
        return None
      return importlib.util.spec_from_loader(fullname, module_alias.AliasLoader(mapped))
    if names.is_private(fullname):
      raise private_import_error(fullname)
    if fullname.split(".")[0] in names.PRIVATE_PACKAGES and _leads_to_public(fullname):
      return importlib.util.spec_from_loader(
          fullname, _Loader(_NAMESPACE, None), is_package=True)
    return None

  def _namespace_spec(self, fullname: str, path: Optional[Sequence[str]],
                      target: Optional[types.ModuleType], public_path: str
                      ) -> Optional[importlib.machinery.ModuleSpec]:
    """TensorFlow's own spec for a tf.compat.vN module, whose loader adds `estimator`."""
    for finder in sys.meta_path:
      find_spec = getattr(finder, "find_spec", None)
      if finder is self or find_spec is None:
        continue
      spec = find_spec(fullname, path, target)
      if spec is not None and spec.loader is not None:
        spec.loader = _EstimatorAttributeLoader(spec.loader, public_path)
        return spec
    return None


def _finder() -> Optional[EstimatorFinder]:
  return next((f for f in sys.meta_path if isinstance(f, EstimatorFinder)), None)


def _set_estimator(module: types.ModuleType, public_path: str) -> None:
  mapped = names.target_of(public_path)
  assert mapped is not None
  setattr(module, "estimator", importlib.import_module(mapped))


def _set_tensorflow_attributes() -> List[str]:
  """Gives TensorFlow's module objects their `estimator`; returns the paths set."""
  tensorflow = importlib.import_module("tensorflow")
  done = []
  for dotted in _TF_NAMESPACES:
    module: Any = tensorflow
    for part in dotted.split(".")[1:]:
      module = getattr(module, part)
    _set_estimator(module, f"{dotted}.estimator")
    done.append(dotted.replace("tensorflow", "tf", 1) + ".estimator")
  # The other copies TensorFlow loaded of its compat namespaces (under their
  # _api names, or a second `tensorflow.compat.v1` an import made).
  for name, module in list(sys.modules.items()):
    namespace = _TF_NAMESPACE_MODULES.fullmatch(name)
    if namespace is not None and module is not None:
      _set_estimator(module, f"tensorflow.compat.{namespace.group(1)}.estimator")
  return done


def _patch_loaded_keras() -> None:
  """Points an already imported tf-keras's `model_to_estimator` at estimator_lite."""
  for module_name, public in _KERAS_MODULES.items():
    module = sys.modules.get(module_name)
    if module is None or isinstance(getattr(module, "__loader__", None), _Loader):
      continue
    keras_target = names.target_of(public)
    assert keras_target is not None
    replacement = importlib.import_module(keras_target)
    module.model_to_estimator = replacement.model_to_estimator  # type: ignore[attr-defined]


def _patch_loaded_keras3() -> None:
  """Gives a Keras 3 that `tf.keras` already resolved to an `estimator`.

  That happens when the program touched `tf.keras` before estimator_lite
  selected tf-keras (or chose Keras 3 with TF_USE_LEGACY_KERAS=0); Keras 3
  has no `estimator`, and estimator_lite.keras also takes Keras 3 models.
  """
  module = sys.modules.get("keras._tf_keras.keras")
  if module is not None and not hasattr(module, "estimator"):
    keras_target = names.target_of("tensorflow.keras.estimator")
    assert keras_target is not None
    setattr(module, "estimator", importlib.import_module(keras_target))


def install() -> bool:
  """Makes tf.estimator's import paths and attributes resolve to estimator_lite.

  Returns:
    True when this call installed the hooks, False when they already were.
  """
  if _finder() is not None:
    return False
  sys.meta_path.insert(0, EstimatorFinder())
  attributes = _set_tensorflow_attributes()
  _patch_loaded_keras()
  _patch_loaded_keras3()
  # Imported here: TensorFlow is loaded by now, and its logger is the one
  # estimator_lite logs through.
  tensorflow = importlib.import_module("tensorflow")
  tensorflow.compat.v1.logging.info(
      "estimator_lite.install(): %s, the tensorflow.estimator / "
      "tensorflow_estimator imports and tf.keras.estimator.model_to_estimator "
      "now resolve to estimator_lite.", ", ".join(attributes))
  return True
