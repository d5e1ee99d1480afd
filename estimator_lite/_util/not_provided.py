"""The error a tf.estimator name that estimator_lite leaves out raises.

Every estimator_lite module mirroring a tf.estimator namespace (the top level,
estimator_lite.compat.v1, estimator_lite.experimental) raises it from its
`__getattr__`, so a program asking for a tf.estimator name that estimator_lite
does not provide learns what to do instead of seeing a bare AttributeError,
and code probing with `hasattr` still sees the name missing.
"""
from typing import Dict, Tuple

# tf.estimator name -> (the tf.estimator namespace that had it, what it was,
# what to use instead).
NotProvided = Dict[str, Tuple[str, str, str]]


def not_provided_error(module_name: str, name: str, not_provided: NotProvided
                       ) -> AttributeError:
  """Returns the AttributeError for `name`, missing from module `module_name`.

  Args:
    module_name: the estimator_lite module's name.
    name: the attribute asked for.
    not_provided: the tf.estimator names the module leaves out (see `NotProvided`).

  Returns:
    An AttributeError to raise: Python's usual one for a name tf.estimator
    did not have either, else one saying what it was and what to use.
  """
  if name not in not_provided:
    return AttributeError(f"module {module_name!r} has no attribute {name!r}")
  tf_module, what, instead = not_provided[name]
  return AttributeError(
      f"{module_name} has no {name!r}: {tf_module}.{name} ({what}) is not part "
      f"of estimator_lite. {instead}")
