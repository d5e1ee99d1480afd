"""Where each way of reaching tf.estimator lives in estimator_lite.

The one table that the zero-edit runner (`python -m estimator_lite.run`,
`estimator_lite.install()`) and the migration tool
(`python -m estimator_lite.migrate`) share: a dotted path a program imports or
reaches by attribute (`tf.estimator`, `tensorflow_estimator.estimator`, ...)
maps to the estimator_lite module that stands in for it. Submodules follow
their parent: `tensorflow.estimator.export` is `estimator_lite.export`.
"""
from __future__ import annotations

from typing import Dict, Optional, Tuple

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

# Submodules of a mapped namespace whose estimator_lite counterpart is not
# `<target>.<name>` (estimator_lite.compat.v1 is a module, not a package: its
# `inputs`, `export` and `experimental` are the top-level package's modules).
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
