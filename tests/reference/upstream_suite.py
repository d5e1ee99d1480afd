"""Runs tf.estimator 2.15's own public-API unit tests against estimator_lite.

The measure of issue 16 (fidelity): tf.estimator's tests, unchanged, with its
module names mapped onto estimator_lite. Nothing of tf.estimator is kept in this
repository: the tests are read from a checkout of github.com/tensorflow/estimator
(commit 26a7dc2, the last release) that the developer provides, and copied only
into a temporary working directory.

Usage, from the repository root in the current venv (TensorFlow 2.21 + tf-keras):

    git clone https://github.com/tensorflow/estimator /tmp/tf-estimator
    git -C /tmp/tf-estimator checkout 26a7dc2
    python tests/reference/upstream_suite.py --upstream /tmp/tf-estimator \
        [--workdir DIR] [--json FILE] [-k EXPR] [-x] [--tpu-only | --no-tpu] \
        [--reference-python PATH] [--reference-json FILE] [--reference-timeout S]

It writes, in WORKDIR (a fresh temporary directory by default):
  - `tensorflow_estimator/...`: a name-mapping shim, one module for each
    tf.estimator module the tests import. Each resolves a name first from its
    alias table (tf.estimator's name -> estimator_lite's), then from the
    estimator_lite modules listed for it; a name found in neither raises
    AttributeError, so a test that needs it fails (nothing is skipped);
  - the test files themselves, and tf.estimator's test helper
    `hooks/fake_summary_writer.py`;
then runs pytest over them and prints one line per file (passed / total) and
the total. Upstream tests that patch tf.estimator's privates with `mock` patch
the shim, not estimator_lite: they fail here, and count as failures.

Then (unless --no-tpu; alone with --tpu-only) tf.estimator 2.15's `tpu/` tests
against estimator_lite.tpu, measured on the tests that pass on tf.estimator
2.15 itself in the reference venv (ref_env.py), in two passes (as written, and
with use_tpu=False forced): see upstream_tpu.py.
"""
import argparse
import ast
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_PACKAGE = "tensorflow_estimator/python/estimator"

# The public-API tests of tf.estimator 2.15 (the measure named by issue 16),
# and its Keras model_to_estimator tests (issue 18).
TEST_FILES = (
    "run_config_test.py",
    "estimator_test.py",
    "model_fn_test.py",
    "training_test.py",
    "export/export_test.py",
    "exporter_test.py",
    "early_stopping_test.py",
    "object_checkpointing_test.py",
    "hooks/hooks_test.py",
    "hooks/basic_session_run_hooks_test.py",
    "keras_test.py",
)
# Upstream test helpers the tests import (test support, not library code).
HELPER_FILES = ("hooks/fake_summary_writer.py",)

# shim module (relative to tensorflow_estimator.python.estimator) ->
#   (estimator_lite modules searched in order, {tf.estimator name: "module:name"}).
SHIM_MODULES = {
    "estimator": (
        ("estimator_lite.estimator", "estimator_lite"),
        {"EstimatorV2": "estimator_lite.estimator:Estimator",
         "_load_global_step_from_checkpoint_dir":
             "estimator_lite._session.checkpoints:latest_global_step",
         "_write_dict_to_summary": "estimator_lite._util.events:write_dict_to_summary"}),
    "estimator_lib": (
        ("estimator_lite", "estimator_lite.experimental"),
        {"EstimatorV2": "estimator_lite.estimator:Estimator",
         "_write_dict_to_summary": "estimator_lite._util.events:write_dict_to_summary"}),
    "model_fn": (
        ("estimator_lite.estimator_spec", "estimator_lite.experimental"),
        {"LOSS_METRIC_KEY": "estimator_lite._util.validation:LOSS_KEY"}),
    "run_config": (("estimator_lite.run_config",), {}),
    "training": (("estimator_lite.training",), {}),
    "mode_keys": (("estimator_lite.mode_keys",), {}),
    "exporter": (("estimator_lite.export.exporter",), {}),
    "export.export": (
        ("estimator_lite.export", "estimator_lite.export.serving_input_receiver",
         "estimator_lite.export.supervised_input_receiver",
         "estimator_lite.export.receiver_tensors"), {}),
    "export.export_lib": (
        ("estimator_lite.export", "estimator_lite.export.serving_input_receiver",
         "estimator_lite.export.supervised_input_receiver",
         "estimator_lite.export.receiver_tensors", "estimator_lite.export.export_output"), {}),
    "export.export_output": (("estimator_lite.export.export_output",), {}),
    "early_stopping": (
        ("estimator_lite.experimental.early_stopping",),
        {"read_eval_metrics": "estimator_lite._util.events:read_eval_metrics"}),
    "hooks.hooks": (
        ("estimator_lite.experimental.in_memory_evaluator_hook",
         "estimator_lite.experimental.stop_at_checkpoint_step"), {}),
    "hooks.basic_session_run_hooks": (("estimator_lite.hooks",), {}),
    "inputs.numpy_io": (("estimator_lite.inputs.numpy_io",), {}),
    "util.tf_keras": (("tf_keras",), {}),
    "util.tf_keras_v1": (("tf_keras.api._v1.keras",), {}),
    "util.tf_keras_v2": (("tf_keras",), {}),
    "keras_lib": (("estimator_lite.keras",), {}),
    "canned.dnn": (("estimator_lite.canned.dnn",), {}),
    "canned.prediction_keys": (("estimator_lite.canned.prediction_keys",), {}),
}

_SHIM_TEMPLATE = '''"""Shim: tf.estimator's {name} resolved from estimator_lite (generated)."""
import importlib

_SOURCES = {sources!r}
_ALIASES = {aliases!r}


def __getattr__(name):
  if name in _ALIASES:
    module_name, attribute = _ALIASES[name].split(":")
    return getattr(importlib.import_module(module_name), attribute)
  for module_name in _SOURCES:
    module = importlib.import_module(module_name)
    if hasattr(module, name):
      return getattr(module, name)
  raise AttributeError("shim {name}: estimator_lite has no %r" % name)
'''


def write_shim(workdir, modules=None):
  """Writes the shim package under `workdir`: SHIM_MODULES, or `modules`."""
  packages = {"tensorflow_estimator", "tensorflow_estimator/python", _PACKAGE}
  for name, (sources, aliases) in (modules or SHIM_MODULES).items():
    parts = name.split(".")
    for depth in range(1, len(parts)):
      packages.add(os.path.join(_PACKAGE, *parts[:depth]))
    path = os.path.join(workdir, _PACKAGE, *parts) + ".py"
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
      f.write(_SHIM_TEMPLATE.format(name=name, sources=sources, aliases=aliases))
  for package in packages:
    os.makedirs(os.path.join(workdir, package), exist_ok=True)
    open(os.path.join(workdir, package, "__init__.py"), "a").close()


def copy_tests(upstream, workdir):
  """Copies the tests and their helpers from the upstream checkout."""
  for relative in TEST_FILES + HELPER_FILES:
    source = os.path.join(upstream, _PACKAGE, relative)
    if not os.path.exists(source):
      raise SystemExit("not in the upstream checkout: %s" % source)
    shutil.copy(source, os.path.join(workdir, _PACKAGE, relative))


# What `scope()` says of a test that does not test the public API.
OUT_OF_SCOPE_REASONS = {
    "private": "calls a private name of tf.estimator that estimator_lite has no counterpart of",
    "mock": "patches a module's function with mock (tf.estimator's implementation)",
}


# TensorFlow modules and classes whose functions tf.estimator's implementation
# called: a test that patches them tests how tf.estimator was built.
_IMPLEMENTATION_TARGETS = {"training", "server_lib", "gfile", "basic_session_run_hooks",
                           "tf.train.SessionManager", "tf.compat.v1.train"}


def _estimator_aliases(tree):
  """{name the test binds: tf.estimator module (the shim's) it stands for}."""
  aliases = {}
  for node in ast.walk(tree):
    if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tensorflow_estimator"):
      for a in node.names:
        aliases[a.asname or a.name] = node.module + "." + a.name
  return aliases


def _shim_has(module_name, attribute):
  """Whether the shim resolves `module_name.attribute` (it must be importable)."""
  try:
    return hasattr(importlib.import_module(module_name), attribute)
  except ImportError:
    return False


def _dotted(node):
  """`a.b.c` for a Name/Attribute chain, else None."""
  parts = []
  while isinstance(node, ast.Attribute):
    parts.append(node.attr)
    node = node.value
  if not isinstance(node, ast.Name):
    return None
  return ".".join([node.id] + parts[::-1])


def _reasons(node, aliases, tainted):
  """The out-of-scope reasons that the code under `node` gives."""
  reasons = set()
  for child in ast.walk(node):
    if isinstance(child, ast.Attribute) and isinstance(child.value, ast.Name):
      if (child.value.id in aliases and child.attr.startswith("_")
          and not child.attr.startswith("__")
          and not _shim_has(aliases[child.value.id], child.attr)):
        reasons.add("private")
    if isinstance(child, ast.Name):
      reasons |= tainted.get(child.id, set())
    if (isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute)
        and child.func.attr == "object" and child.args):
      target = _dotted(child.args[0]) or ""
      if target.split(".")[0] in aliases or target in _IMPLEMENTATION_TARGETS:
        reasons.add("mock")
  return reasons


def _class_methods(node, classes):
  """{name: FunctionDef} of class `node`, with those of its module-level bases."""
  methods = {}
  for base in node.bases:
    if isinstance(base, ast.Name) and base.id in classes:
      methods.update(_class_methods(classes[base.id], classes))
  methods.update((m.name, m) for m in node.body if isinstance(m, ast.FunctionDef))
  return methods


def _self_calls(method):
  """Names of `self.<name>` the method uses."""
  return {child.attr for child in ast.walk(method)
          if isinstance(child, ast.Attribute) and isinstance(child.value, ast.Name)
          and child.value.id == "self"}


def scope(source):
  """Returns {(class, test method): set of out-of-scope reasons} for one test file.

  A test is in scope (empty set) when it exercises tf.estimator's public API,
  or private names the shim maps onto estimator_lite. Module-level helpers, and
  the class's own helper methods and decorators, pass their reasons on to the
  tests that use them. The shim must be importable.
  """
  tree = ast.parse(source)
  aliases = _estimator_aliases(tree)
  tainted = {}
  for node in tree.body:
    if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.endswith("Test"):
      reasons = _reasons(node, aliases, tainted)
      if reasons:
        tainted[node.name] = reasons
  classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
  tests = {}
  for node in classes.values():
    if not node.name.endswith("Test"):
      continue
    methods = _class_methods(node, classes)
    shared = set()
    for decorator in node.decorator_list:
      shared |= _reasons(decorator, aliases, tainted)
    own = {name: _reasons(method, aliases, tainted) for name, method in methods.items()}
    for name in ("setUp", "setUpClass"):
      shared |= own.get(name, set())
    for name, method in methods.items():
      if name.startswith("test"):
        helpers = {helper for helper in _self_calls(method)
                   if helper in own and not helper.startswith("test")}
        tests[(node.name, name)] = shared.union(own[name], *(own[h] for h in helpers))
  return tests


_CONFTEST = '''"""Deselects the tests upstream_suite.py found out of scope (generated)."""
import json
import os

with open(os.path.join(os.path.dirname(__file__), "out_of_scope.json")) as f:
  _OUT = {tuple(key.split("::")) for key in json.load(f)}


def _source_method(item):
  # absl's parameterized tests are named <method><suffix>: find <method>.
  defined = [name for name in dir(item.cls) if item.name.startswith(name)]
  return max(defined, key=len) if defined else item.name


def pytest_collection_modifyitems(config, items):
  kept, dropped = [], []
  for item in items:
    key = (os.path.basename(str(item.fspath)), item.cls.__name__ if item.cls else "",
           _source_method(item))
    (dropped if key in _OUT else kept).append(item)
  items[:] = kept
  config.hook.pytest_deselected(items=dropped)
'''


def write_scope(workdir):
  """Writes out_of_scope.json and the conftest that applies it; returns the scope table."""
  table = {}
  for relative in TEST_FILES:
    with open(os.path.join(workdir, _PACKAGE, relative)) as f:
      for (cls, method), reasons in scope(f.read()).items():
        table["::".join((os.path.basename(relative), cls, method))] = sorted(reasons)
  out = [key for key, reasons in table.items() if reasons]
  with open(os.path.join(workdir, "out_of_scope.json"), "w") as f:
    json.dump(out, f)
  with open(os.path.join(workdir, "conftest.py"), "w") as f:
    f.write(_CONFTEST)
  return table


def summarize(junit_path):
  """Returns {test file: {"passed": n, "total": n, "failed": ["id | message"], "skipped": n}}.

  A test upstream skips itself (under TensorFlow 2, e.g. `run_v1_only`) is not
  counted in the total.
  """
  per_file = {}
  for case in ElementTree.parse(junit_path).iter("testcase"):
    file_key = case.get("classname", "").split(".")
    file_key = "/".join(part for part in file_key if not part[:1].isupper())
    entry = per_file.setdefault(file_key, {"passed": 0, "total": 0, "failed": [], "skipped": 0})
    outcome = [child.tag for child in case]
    if "skipped" in outcome:
      entry["skipped"] += 1
      continue
    entry["total"] += 1
    problems = [child for child in case if child.tag in ("failure", "error")]
    if problems:
      message = " ".join((problems[0].get("message") or "").split())[:300]
      entry["failed"].append("%s::%s | %s" % (case.get("classname").split(".")[-1],
                                              case.get("name"), message))
    else:
      entry["passed"] += 1
  return per_file


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--upstream", required=True,
                      help="checkout of github.com/tensorflow/estimator at 26a7dc2")
  parser.add_argument("--workdir", help="default: a fresh temporary directory")
  parser.add_argument("--json", help="write the per-file summary here")
  parser.add_argument("-k", help="pytest -k expression")
  parser.add_argument("-x", action="store_true", help="stop at the first failure")
  parser.add_argument("--failures", action="store_true",
                      help="print each failure with the first 300 characters of its message")
  parser.add_argument("--timeout", type=int, default=120,
                      help="seconds before one test counts as failed (default 120)")
  tpu = parser.add_mutually_exclusive_group()
  tpu.add_argument("--tpu-only", action="store_true",
                   help="run only the tpu/ tests (upstream_tpu.py)")
  tpu.add_argument("--no-tpu", action="store_true", help="do not run the tpu/ tests")
  parser.add_argument("--reference-python",
                      help="python of a venv with TensorFlow 2.15 + tf.estimator 2.15, which "
                           "selects the tpu/ tests (default: ref_env.ensure_ref_python())")
  parser.add_argument("--reference-json",
                      help="cache of tf.estimator 2.15's tpu/ outcomes: read when it exists, "
                           "written otherwise (default: WORKDIR/tpu_reference_215.json)")
  # The slowest tpu/ test that passes on 2.15 takes 8 s; with use_tpu=False
  # forced, a few of 2.15's run endlessly (predict over a `.repeat()` dataset).
  parser.add_argument("--reference-timeout", type=int, default=30,
                      help="seconds before one tpu/ test counts as failed on tf.estimator 2.15 "
                           "(default 30)")
  args = parser.parse_args(argv)

  workdir = args.workdir or tempfile.mkdtemp(prefix="upstream_suite_")
  write_shim(workdir)
  sys.path[:0] = [workdir, _REPO_ROOT]
  os.environ["TF_USE_LEGACY_KERAS"] = "1"
  if args.tpu_only:
    tpu_summary = _run_tpu(args, workdir)
    if args.json:
      with open(args.json, "w") as f:
        json.dump({"tpu": tpu_summary}, f, indent=1)
    return 0
  copy_tests(args.upstream, workdir)
  table = write_scope(workdir)
  for reason, text in OUT_OF_SCOPE_REASONS.items():
    methods = [key for key, reasons in table.items() if reason in reasons]
    print("out of scope, %s: %d test methods" % (text, len(methods)))
  junit = os.path.join(workdir, "junit.xml")
  command = [sys.executable, "-m", "pytest", "-q", "-rfE", "-p", "no:cacheprovider",
             "--junitxml", junit, "--rootdir", workdir, "-o", "addopts=",
             "--timeout", str(args.timeout)]
  command += ["-k", args.k] if args.k else []
  command += ["-x"] if args.x else []
  command += [os.path.join(_PACKAGE, relative) for relative in TEST_FILES]
  env = dict(os.environ, PYTHONPATH=os.pathsep.join([workdir, _REPO_ROOT]),
             TF_CPP_MIN_LOG_LEVEL="3", TF_USE_LEGACY_KERAS="1")
  subprocess.run(command, cwd=workdir, env=env, check=False)

  per_file = summarize(junit)
  passed = sum(entry["passed"] for entry in per_file.values())
  total = sum(entry["total"] for entry in per_file.values())
  for file_key, entry in sorted(per_file.items()):
    print("%-70s %4d / %4d" % (file_key, entry["passed"], entry["total"]))
  print("%-70s %4d / %4d" % ("total", passed, total))
  if args.failures:
    for entry in per_file.values():
      for failure in entry["failed"]:
        print("FAILED " + failure)
  result = {"passed": passed, "total": total, "files": per_file, "scope": table}
  if not args.no_tpu:
    result["tpu"] = _run_tpu(args, workdir)
  if args.json:
    with open(args.json, "w") as f:
      json.dump(result, f, indent=1)
  return 0


def _run_tpu(args, workdir):
  # Imported here: upstream_tpu.py is this script's TPU part, and takes this
  # module (which runs as __main__) as an argument rather than importing it.
  import upstream_tpu  # pylint: disable=g-import-not-at-top
  return upstream_tpu.run(args, workdir, sys.modules[__name__])


if __name__ == "__main__":
  sys.exit(main())
