"""The error a tf.estimator name that estimator_lite leaves out raises."""


def not_provided_error(module_name, name, not_provided):
  """Returns the AttributeError for `name`, missing from module `module_name`.

  Every estimator_lite module mirroring a tf.estimator namespace
  (estimator_lite.compat.v1, estimator_lite.experimental) raises it from its
  `__getattr__`, so a program asking for a tf.estimator name that
  estimator_lite leaves out learns what to do instead of seeing a bare
  AttributeError.

  Args:
    module_name: the estimator_lite module's name.
    name: the attribute asked for.
    not_provided: dict of tf.estimator names left out to (tf.estimator module
      that had it, what it was, what to use instead).

  Returns:
    An AttributeError to raise.
  """
  if name not in not_provided:
    return AttributeError(f"module {module_name!r} has no attribute {name!r}")
  tf_module, what, instead = not_provided[name]
  return AttributeError(
      f"{module_name} has no {name!r}: {tf_module}.{name} ({what}) is not part "
      f"of estimator_lite. {instead}")
