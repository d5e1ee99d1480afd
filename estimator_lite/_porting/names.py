"""Where each way of reaching tf.estimator lives in estimator_lite.

The one table that the zero-edit runner (`python -m estimator_lite.run`,
`estimator_lite.install()`) and the migration tool
(`python -m estimator_lite.migrate`) share: a dotted path a program imports or
reaches by attribute (`tf.estimator`, `tensorflow_estimator.estimator`, ...)
maps to the estimator_lite module that stands in for it. Submodules follow
their parent: `tensorflow.estimator.export` is `estimator_lite.export`.
"""
from __future__ import annotations

import functools
import json
import os
from typing import Any, Dict, Optional, Tuple

from estimator_lite import canned

# tf.estimator 2.15's namespaces, by the path a program names them with.
# `tensorflow_estimator.estimator` is the v1 API (the package's top level
# re-exports `_api.v1`), so it maps to compat.v1, as `tf.compat.v1.estimator`.
MODULES: Dict[str, str] = {
    "tensorflow.estimator": "estimator_lite",
    "tensorflow.compat.v2.estimator": "estimator_lite",
    "tensorflow.compat.v1.estimator": "estimator_lite.compat.v1",
    "tensorflow_estimator.estimator": "estimator_lite.compat.v1",
    "tensorflow_estimator.python.estimator.api._v2.estimator": "estimator_lite",
    "tensorflow_estimator.python.estimator.api._v1.estimator":
        "estimator_lite.compat.v1",
    "tensorflow_estimator._api.v2.estimator": "estimator_lite",
    "tensorflow_estimator._api.v1.estimator": "estimator_lite.compat.v1",
    # Keras's bridge to estimators: v2 defaults to object-based checkpoints,
    # v1 to name-based ones, as in tf.keras 2.15.
    "tensorflow.keras.estimator": "estimator_lite.keras",
    "tensorflow.compat.v2.keras.estimator": "estimator_lite.keras",
    "tensorflow.compat.v1.keras.estimator": "estimator_lite.keras.v1",
    "tf_keras.estimator": "estimator_lite.keras",
}

# The namespace of tf.estimator 2.15's list of public names
# (tf_estimator_2_15_api.json, written in its venv) that each path of MODULES
# is: the list spells each name once per namespace a program reached it by.
PUBLIC_NAMESPACES: Dict[str, str] = {
    "tensorflow.estimator": "tf.estimator",
    "tensorflow.compat.v2.estimator": "tf.compat.v2.estimator",
    "tensorflow.compat.v1.estimator": "tf.compat.v1.estimator",
    "tensorflow_estimator.estimator": "tf.compat.v1.estimator",
    "tensorflow_estimator.python.estimator.api._v2.estimator": "tf.estimator",
    "tensorflow_estimator.python.estimator.api._v1.estimator": "tf.compat.v1.estimator",
    "tensorflow_estimator._api.v2.estimator": "tf.estimator",
    "tensorflow_estimator._api.v1.estimator": "tf.compat.v1.estimator",
    "tensorflow.keras.estimator": "tf.keras.estimator",
    "tensorflow.compat.v2.keras.estimator": "tf.keras.estimator",
    "tensorflow.compat.v1.keras.estimator": "tf.compat.v1.keras.estimator",
    "tf_keras.estimator": "tf.keras.estimator",
}
_PUBLIC_API_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "tf_estimator_2_15_api.json")

# Submodules of a mapped namespace whose estimator_lite counterpart is not
# `<target>.<name>` (estimator_lite.compat.v1 is a module, not a package: its
# `inputs`, `export` and `experimental` are the top-level package's modules).
_COMPAT_V1 = "estimator_lite.compat.v1"
SUBMODULES: Dict[str, str] = {
    "estimator_lite.compat.v1.inputs": "estimator_lite.inputs",
    "estimator_lite.compat.v1.export": "estimator_lite.export",
    "estimator_lite.compat.v1.experimental": "estimator_lite.experimental",
    "estimator_lite.compat.v1.estimator": "estimator_lite.compat.v1",
    "estimator_lite.compat.v1.tpu": "estimator_lite.tpu",
}

# Packages under which anything not in MODULES is tf.estimator's private code:
# nothing in estimator_lite stands in for it module by module.
PRIVATE_PACKAGES: Tuple[str, ...] = ("tensorflow_estimator",)

PRIVATE_HINT = (
    "tensorflow_estimator's private modules have no one-to-one counterpart in "
    "estimator_lite: import the public name instead (for example "
    "`from estimator_lite import Estimator` for "
    "`tensorflow_estimator.python.estimator.estimator.Estimator`, "
    "`estimator_lite.canned.*` for the canned estimators).")


def target_of(dotted: str) -> Optional[str]:
  """The estimator_lite module that stands in for the module path `dotted`.

  Args:
    dotted: a module path as a program names it, e.g. `tensorflow.estimator`
      or `tensorflow.compat.v1.estimator.inputs`.

  Returns:
    The estimator_lite module path (`estimator_lite`,
    `estimator_lite.inputs`, ...), or None when `dotted` is not a tf.estimator
    namespace (nor inside one).
  """
  parts = dotted.split(".")
  for cut in range(len(parts), 0, -1):
    head = ".".join(parts[:cut])
    if head in MODULES:
      target = ".".join([MODULES[head], *parts[cut:]])
      return _resolve_submodule(target)
  return None


def _resolve_submodule(target: str) -> str:
  for prefix, replacement in SUBMODULES.items():
    if target == prefix or target.startswith(prefix + "."):
      return replacement + target[len(prefix):]
  return target


@functools.lru_cache(maxsize=None)
def public_api() -> Dict[str, Any]:
  """tf.estimator 2.15's public names: {"names": {path: {"kind", "object"}}, ...}."""
  with open(_PUBLIC_API_FILE, encoding="utf-8") as f:
    return json.load(f)


def _namespace_of(dotted: str) -> Optional[str]:
  parts = dotted.split(".")
  for cut in range(len(parts), 0, -1):
    head = ".".join(parts[:cut])
    if head in MODULES:
      return head
  return None


def unknown_name_hint(dotted: str) -> Optional[str]:
  """Why `dotted`, under a tf.estimator namespace, names nothing estimator_lite has; else None.

  estimator_lite provides every public name of tf.estimator 2.15 (the list
  in tf_estimator_2_15_api.json); a name 2.15 did not have is either one
  tf.estimator removed earlier (canned.REMOVED says what to use instead) or
  a misspelling.

  Args:
    dotted: an attribute or import path as the program spells it
      (`tensorflow.estimator.BoostedTreesClassifier`).

  Returns:
    None when `dotted` is not under a tf.estimator namespace, or names a
    2.15 name (or an attribute of one: `tensorflow.estimator.ModeKeys.TRAIN`);
    otherwise the hint the migration tool reports.
  """
  namespace = _namespace_of(dotted)
  if namespace is None:
    return None
  listed = public_api()["names"]
  root = PUBLIC_NAMESPACES[namespace]
  current = root
  for part in dotted[len(namespace):].split(".")[1:]:
    child = f"{current}.{part}"
    if child not in listed:
      if listed[current]["kind"] != "module":
        return None  # An attribute of a class or function of the list.
      relative = child[len(root) + 1:]
      spelled = f"{root}.{relative}"
      if relative in canned.REMOVED:
        what, instead = canned.REMOVED[relative]
        return f"`{spelled}` ({what}) is not part of estimator_lite. {instead}"
      return (f"tf.estimator 2.15 has no `{spelled}`, and estimator_lite has no "
              "counterpart: check the name, or port this use by hand")
    if listed[child]["kind"] != "module":
      return None
    current = child
  return None


def compat_v1_child(dotted: str) -> Optional[str]:
  """The module that stands in for `estimator_lite.compat.v1.<child>`, else None.

  estimator_lite.compat.v1 is one module; its `export`, `inputs`,
  `experimental`, `tpu` (and `estimator`) are other modules of the package,
  served under its path so that `from estimator_lite.compat.v1.export import
  X` works as `from tensorflow.compat.v1.estimator.export import X` did.

  Args:
    dotted: a module path.

  Returns:
    The estimator_lite module path, or None for a path not under compat.v1.
  """
  if not dotted.startswith(_COMPAT_V1 + "."):
    return None
  target = _resolve_submodule(dotted)
  return None if target == dotted else target


def is_private(dotted: str) -> bool:
  """Whether `dotted` is inside tf.estimator's private code (no counterpart).

  Args:
    dotted: a module path.

  Returns:
    True for a path under `tensorflow_estimator` that `target_of` does not map
    and that is not on the way to a mapped one (`tensorflow_estimator` itself
    and `tensorflow_estimator.python.estimator.api` lead to public namespaces).
  """
  top = dotted.split(".")[0]
  leads_to_public = any(key.startswith(dotted + ".") for key in MODULES)
  return (top in PRIVATE_PACKAGES and target_of(dotted) is None
          and not leads_to_public)
