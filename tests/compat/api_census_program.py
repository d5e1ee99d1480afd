"""Resolves every public tf.estimator 2.15 name in every spelling a program uses; prints JSON.

Run by tests/compat/test_api_census.py in a fresh interpreter per scenario:

    python api_census_program.py API_LIST SCENARIO OUT.json

API_LIST is estimator_lite/_porting/tf_estimator_2_15_api.json (written by
tests/reference/make_public_api_fixture.py in the 2.15 venv).

SCENARIO says how estimator_lite was put in place before the names are looked up:

  install-first   `estimator_lite.install()`, then TensorFlow is imported;
  tf-first        `import tensorflow as tf` first, nothing else touched;
  tf-compat-first `import tensorflow as tf`, `tf.compat.v1` and `tf.compat.v2`
                  touched, then `install()`;
  tf-v1-first     `import tensorflow.compat.v1 as tf` (a TF1 program's first
                  line), then `install()`;
  run             nothing: the program runs under `python -m estimator_lite.run`;
  lite            no install: only estimator_lite's own spellings (what the
                  migration tool writes) are looked up.

For each path of the fixture (`tf.compat.v1.estimator.export.ServingInputReceiver`)
it tries each spelling and records the object's identity or the error:

  attribute   `tf.compat.v1.estimator.export.ServingInputReceiver`, attribute by
              attribute from the `tensorflow` module;
  from        `from tensorflow.compat.v1.estimator.export import ServingInputReceiver`;
  import      for a module path, `import tensorflow.compat.v1.estimator.export`;
  lite-*      the same three spelt with estimator_lite's namespace
              (`estimator_lite.compat.v1.export.ServingInputReceiver`).

The names removed before 2.15 are looked up the same ways; their errors are recorded.
"""
import importlib
import json
import sys

# The estimator_lite namespace that stands in for each tf.estimator root, as
# the migration tool spells it.
LITE_ROOTS = {
    "tf.estimator": "estimator_lite",
    "tf.compat.v2.estimator": "estimator_lite",
    "tf.compat.v1.estimator": "estimator_lite.compat.v1",
    "tf.keras.estimator": "estimator_lite.keras",
    "tf.compat.v1.keras.estimator": "estimator_lite.keras.v1",
}


def lite_path(path):
  """`path` spelt with estimator_lite's namespace (the longest root that matches)."""
  for root in sorted(LITE_ROOTS, key=len, reverse=True):
    if path == root or path.startswith(root + "."):
      return LITE_ROOTS[root] + path[len(root):]
  raise ValueError(path)


def _outcome(thunk):
  try:
    value = thunk()
  except Exception as e:  # pylint: disable=broad-except
    return {"error": f"{type(e).__name__}: {e}"}
  return describe(value)


def describe(value):
  """What the checks compare: identity (within one process), home module, kind."""
  is_module = isinstance(value, type(sys))
  return {"id": id(value), "is_module": is_module, "is_class": isinstance(value, type),
          "module": value.__name__ if is_module else getattr(value, "__module__", None)}


def _attribute(dotted, top):
  def thunk():
    value = importlib.import_module(top)
    for part in dotted.split(".")[len(top.split(".")):]:
      value = getattr(value, part)
    return value
  return thunk


def _from_import(dotted):
  module, name = dotted.rsplit(".", 1)
  def thunk():
    scope = {}
    exec(f"from {module} import {name} as value", scope)  # pylint: disable=exec-used
    return scope["value"]
  return thunk


def _import(dotted):
  def thunk():
    scope = {}
    exec(f"import {dotted}", scope)  # pylint: disable=exec-used
    return sys.modules[dotted]
  return thunk


def spellings(path, is_module, tf_spellings):
  """{spelling: thunk} for one fixture path."""
  out = {}
  if tf_spellings:
    dotted = "tensorflow" + path[len("tf"):]
    out["attribute"] = _attribute(dotted, "tensorflow")
    out["from"] = _from_import(dotted)
    if is_module:
      out["import"] = _import(dotted)
  lite = lite_path(path)
  out["lite-attribute"] = _attribute(lite, "estimator_lite")
  if "." in lite:
    out["lite-from"] = _from_import(lite)
  if is_module:
    out["lite-import"] = _import(lite)
  return out


def main(fixture_path, scenario, out_path):
  with open(fixture_path) as f:
    fixture = json.load(f)
  # pylint: disable=g-import-not-at-top
  if scenario == "install-first":
    import estimator_lite
    estimator_lite.install()
  elif scenario == "tf-first":
    import tensorflow as tf  # noqa: F401
    import estimator_lite
    estimator_lite.install()
  elif scenario == "tf-compat-first":
    import tensorflow as tf
    tf.compat.v1.logging.get_verbosity()
    tf.compat.v2.constant(0)
    import estimator_lite
    estimator_lite.install()
  elif scenario == "tf-v1-first":
    import tensorflow.compat.v1 as tf  # noqa: F401
    import estimator_lite
    estimator_lite.install()
  elif scenario not in ("run", "lite"):
    raise ValueError(scenario)
  tf_spellings = scenario != "lite"
  results = {}
  for section in ("names", "removed_before_2_15"):
    results[section] = {}
    for path, entry in sorted(fixture[section].items()):
      is_module = entry.get("kind") == "module"
      results[section][path] = {spelling: _outcome(thunk) for spelling, thunk
                                in spellings(path, is_module, tf_spellings).items()}
  with open(out_path, "w") as f:
    json.dump(results, f, indent=1)


if __name__ == "__main__":
  main(*sys.argv[1:])
