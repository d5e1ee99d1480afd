"""Writes the list of every public name tf.estimator 2.15 had, by the path a program spells.

Runs ONLY under the reference environment (TensorFlow 2.15 + tensorflow-estimator
2.15). Regenerate the committed list from the repository root with:

    ~/.cache/estimator_lite/ref-venv-2.15/bin/python \
        tests/reference/make_public_api_fixture.py \
        estimator_lite/_porting/tf_estimator_2_15_api.json

It ships in the package: the migration tool rewrites only the names it
lists, and tests/compat/test_api_census.py resolves every one of them.

It walks the namespaces a program reaches tf.estimator through
(`tf.estimator`, `tf.compat.v1.estimator`, `tf.compat.v2.estimator`,
`tf.keras.estimator`, `tf.compat.v1.keras.estimator`), into every submodule
(`export`, `experimental`, `inputs`, `tpu`, `tpu.experimental`), and records
for each public attribute path:

  * "kind": "module", or the type of the object ("type" for a class,
    "function", ...);
  * "object": what the name is, as `module:qualname` of its implementation
    (a module's own name for a module). Two paths with the same "object" were
    the same object in 2.15 (`tf.estimator.Estimator` and
    `tf.compat.v2.estimator.Estimator`), so estimator_lite must resolve them
    to one object too;
  * "namedtuple_fields", for a class that was a namedtuple (EstimatorSpec,
    TrainSpec, ...): its fields in order.

"removed_before_2_15" lists the public tf.estimator names of earlier releases
that 2.15 no longer had, with the last release that exported each (read from
the `estimator_export` decorators at each release tag of tensorflow/estimator):
programs written for those releases still ask for them.
"""
import json
import sys
import types

# Paths as a program spells them, and how to reach each from `tf`.
ROOTS = ("tf.estimator", "tf.compat.v1.estimator", "tf.compat.v2.estimator",
         "tf.keras.estimator", "tf.compat.v1.keras.estimator")

# tf.estimator names removed before 2.15, by the namespaces that had them,
# with the last release whose estimator_export decorators exported them.
REMOVED = {
    "BoostedTreesClassifier": "v2.8.0",
    "BoostedTreesEstimator": "v2.8.0",
    "BoostedTreesRegressor": "v2.8.0",
    "experimental.SavedModelEstimator": "v2.14.0",
}
_REMOVED_FROM = ("tf.estimator", "tf.compat.v1.estimator", "tf.compat.v2.estimator")


def _describe(value):
  if isinstance(value, types.ModuleType):
    return {"kind": "module", "object": value.__name__}
  described = {
      "kind": type(value).__name__,
      "object": f"{getattr(value, '__module__', '')}:{getattr(value, '__qualname__', '')}"}
  if isinstance(value, type) and issubclass(value, tuple) and hasattr(value, "_fields"):
    described["namedtuple_fields"] = list(value._fields)  # pylint: disable=protected-access
  return described


def _walk(module, path, names):
  for name in sorted(dir(module)):
    if name.startswith("_"):
      continue
    value = getattr(module, name)
    child = f"{path}.{name}"
    names[child] = _describe(value)
    if isinstance(value, types.ModuleType):
      _walk(value, child, names)


def main(out_path):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if not tf.__version__.startswith("2.15."):
    sys.exit(f"run this in the TensorFlow 2.15 reference venv (found {tf.__version__})")
  names = {}
  for root in ROOTS:
    module = tf
    for part in root.split(".")[1:]:
      module = getattr(module, part)
    names[root] = _describe(module)
    _walk(module, root, names)
  removed = {f"{root}.{name}": {"last_release": release}
             for root in _REMOVED_FROM for name, release in REMOVED.items()}
  with open(out_path, "w") as f:
    json.dump({"tensorflow": tf.__version__, "names": names,
               "removed_before_2_15": removed}, f, indent=1, sort_keys=True)
    f.write("\n")
  print(f"{len(names)} names, {len(removed)} removed before 2.15 -> {out_path}")


if __name__ == "__main__":
  main(sys.argv[1])
