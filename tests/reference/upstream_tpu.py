"""The TPU part of upstream_suite.py: tf.estimator 2.15's `tpu/` tests against estimator_lite.tpu.

estimator_lite.tpu is tf.compat.v1.estimator.tpu run on CPU (`use_tpu=False`);
`use_tpu=True` is refused when a TPUEstimator is built. Most of upstream's TPU
tests need a TPU, or test tf.estimator's TPU implementation, so the measure is
narrower than for the other files. A test is *selected* when it

  1. passes on tf.estimator 2.15 itself (the reference venv, see ref_env.py),
     run by this same harness with the real `tensorflow_estimator` package, and
  2. uses no tf.estimator name that 2.15 did not export (the shim maps the
     public names only; see TPU_SHIM_MODULES and `tpu_scope`), and no TPU.

Each test file runs twice, in both venvs:

  A. as written. A test that builds a TPUEstimator with use_tpu=True and then
     trains, evaluates, predicts or exports with it needs a TPU: out of scope
     ("tpu"); one that only builds it (expecting 2.15's constructor errors)
     stays in scope;
  B. with every TPUEstimator built with use_tpu=False, whatever the test
     passes: what a TPU program run with `--use_tpu=False` does.

How the tests are run, the same in both venvs (`_CONFTEST`):
  - each file in its own pytest process: each defines the absl flag
    `test_num_shards`, and absl refuses a flag defined twice;
  - absl flags parsed after collection, with the arguments upstream's BUILD
    passes (`--test_num_shards=2`), as absltest.main would have;
  - `tf.compat.v1.disable_v2_behavior()` first for a file whose `__main__`
    calls it (what absltest.main ran before the tests);
  - at 26a7dc2 the tests import `tensorflow_estimator.python.estimator.util`'s
    `tf_keras` / `tf_keras_v1`, which the 2.15.0 package lacks: on 2.15 they
    are set to tf.keras / tf.compat.v1.keras / tf.compat.v2.keras (here the
    shim maps them onto tf_keras, as for the other files).

2.15's outcomes are cached per file (keyed by the test file's sha256) in
WORKDIR/tpu_reference_215.json, or in the file given with --reference-json,
which later runs can pass back in: the 2.15 run takes a few minutes.
"""
import ast
import collections
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ElementTree

import ref_env

_TPU_DIR = "tensorflow_estimator/python/estimator/tpu"
_PREFIX = "tensorflow_estimator.python.estimator."

TPU_TEST_FILES = (
    "autotuning_iterations_per_loop_test.py",
    "error_handling_test.py",
    "tpu_config_test.py",
    "tpu_enqueue_sequence_test.py",
    "tpu_estimator_embedding_test.py",
    "tpu_estimator_evaluation_test.py",
    "tpu_estimator_export_test.py",
    "tpu_estimator_gradients_test.py",
    "tpu_estimator_input_v2_test.py",
    "tpu_estimator_integration_test.py",
    "tpu_estimator_model_parallelism_test.py",
    "tpu_estimator_signals_test.py",
    "tpu_estimator_test.py",
)

# The absl flags tpu/BUILD passes each test (`args`). The gradients test's
# `--xla_jf_conv_full_precision=true` is a flag of the TPU compiler, which
# neither venv has: left out.
TPU_TEST_ARGS = {
    name: ("--test_num_shards=2",) for name in (
        "tpu_estimator_test.py", "tpu_estimator_embedding_test.py",
        "tpu_estimator_evaluation_test.py", "tpu_estimator_export_test.py",
        "tpu_estimator_gradients_test.py", "tpu_estimator_integration_test.py")
}

# The shim's TPU modules: only what tf.compat.v1.estimator.tpu exported in
# 2.15 (TPUEstimator, TPUEstimatorSpec, RunConfig, TPUConfig,
# InputPipelineConfig, experimental.EmbeddingConfigSpec), each under the
# module name the tests reach it by; no module is searched, so every other
# name (`_InputPipeline`, `AdagradParameters`, ...) raises AttributeError.
# ExportSavedModelApiVersion, the value of TPUEstimator's public
# `export_saved_model_api_version` argument, which 2.15 left in its
# tpu_estimator module, is mapped too (estimator_lite has it there).
# Modules the tests import that 2.15 did not export map nothing, so that the
# test files import and only the tests that use them fail (they are out of
# scope: "private module").
_TPU_PUBLIC = {name: "estimator_lite.tpu:" + name for name in (
    "TPUEstimator", "TPUEstimatorSpec", "RunConfig", "TPUConfig", "InputPipelineConfig")}
TPU_SHIM_MODULES = {
    "tpu.tpu_estimator": ((), dict(
        _TPU_PUBLIC, EmbeddingConfigSpec="estimator_lite.tpu.experimental:EmbeddingConfigSpec",
        ExportSavedModelApiVersion="estimator_lite.tpu.tpu_estimator:ExportSavedModelApiVersion")),
    "tpu.tpu_config": ((), {name: "estimator_lite.tpu.tpu_config:" + name for name in (
        "RunConfig", "TPUConfig", "InputPipelineConfig")}),
    "tpu._tpu_estimator_embedding": (
        (), {"EmbeddingConfigSpec": "estimator_lite.tpu.experimental:EmbeddingConfigSpec"}),
    "tpu.util": ((), {}),
    "tpu.error_handling": ((), {}),
    "tpu.iteration_count_estimator": ((), {}),
    "tpu.tpu_context": ((), {}),
}

# What `tpu_scope()` adds to upstream_suite.OUT_OF_SCOPE_REASONS.
TPU_OUT_OF_SCOPE_REASONS = {
    "private module": "uses a tf.estimator module or name 2.15 did not export (tpu.util, "
                      "tpu.error_handling, tpu_estimator.AdagradParameters, ...)",
    "tpu": "runs a TPUEstimator with use_tpu=True: needs a TPU (refused by design); "
           "pass B runs it with use_tpu=False",
    "no estimator": "uses no tf.estimator name (tests TensorFlow's TPU ops, or the test "
                    "file's own input pipeline)",
}
PASSES = {"A": "as written",
          "B": "every TPUEstimator built with use_tpu=False"}
_PASS_ENV = {"A": "0", "B": "1"}

# The methods of an Estimator that run its model_fn.
_RUN_METHODS = {"train", "evaluate", "predict", "export_saved_model", "export_savedmodel",
                "experimental_export_all_saved_models"}
# tf.TestCase's `test_session` is a deprecated helper, not a test: TensorFlow
# skips it ("Not a test.") under TF2 behaviour, but under
# disable_v2_behavior() it runs and passes. pytest (like unittest) collects it
# from every test class; it is not counted.
_NOT_TESTS = {"test_session"}


# -- Which tests are in scope -----------------------------------------------------

def not_runnable(source):
  """Why a test file cannot run under TensorFlow 2 in either venv, or None."""
  for node in ast.walk(ast.parse(source)):
    names = []
    if isinstance(node, ast.Import):
      names = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom):
      names = [node.module or ""]
    if any(name.startswith("tensorflow.contrib") for name in names):
      return "imports tensorflow.contrib, which TensorFlow 2 does not have"
  return None


def runs_v1(source):
  """Whether the file's `if __name__ == '__main__':` block calls disable_v2_behavior()."""
  for node in ast.parse(source).body:
    if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test):
      for child in ast.walk(node):
        if (isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute)
            and child.func.attr == "disable_v2_behavior"):
          return True
  return False


def _relative(module):
  return module[len(_PREFIX):] if module.startswith(_PREFIX) else module


def _private_module(node, aliases, shim_modules):
  """Whether `node` uses a name of a module the shim maps only public names of, that is
  not one of them, or a whole tf.estimator module the shim does not have."""
  for child in ast.walk(node):
    if isinstance(child, ast.Attribute) and isinstance(child.value, ast.Name):
      target = aliases.get(child.value.id)
      if target is None:
        continue
      module = _relative(target)
      if module in TPU_SHIM_MODULES:
        # `_`-prefixed names are upstream_suite's "private" already.
        if child.attr not in TPU_SHIM_MODULES[module][1] and not child.attr.startswith("_"):
          return True
      elif module not in shim_modules:
        return True
    elif isinstance(child, ast.Name) and child.id in aliases:
      module = _relative(aliases[child.id])
      if module in shim_modules:
        continue
      parent, _, name = module.rpartition(".")
      if parent in TPU_SHIM_MODULES and name not in TPU_SHIM_MODULES[parent][1]:
        return True
      if parent not in shim_modules:
        return True
  return False


def _private_attribute(node, aliases, suite):
  """Whether `node` reads a `_`-prefixed attribute of an object it made with a tf.estimator
  class (`est._ctx` of `est = tpu_estimator.TPUEstimator(...)`): tf.estimator's
  implementation, which upstream_suite's alias-based "private" does not see."""
  made = set()
  for child in ast.walk(node):
    if isinstance(child, ast.Assign) and isinstance(child.value, ast.Call):
      if (suite._dotted(child.value.func) or "").split(".")[0] in aliases:
        made |= {target.id for target in child.targets if isinstance(target, ast.Name)}
  return any(isinstance(child, ast.Attribute) and isinstance(child.value, ast.Name)
             and child.value.id in made and child.attr.startswith("_")
             and not child.attr.startswith("__")
             for child in ast.walk(node))


def _reachable(roots, methods, functions):
  """The code `roots` runs: themselves, the `self.<helper>` methods and module-level
  functions and classes they name, transitively (a name shadowed locally is
  counted too: an over-approximation)."""
  seen, todo, ids = [], list(roots), set()
  while todo:
    node = todo.pop()
    if id(node) in ids:
      continue
    ids.add(id(node))
    seen.append(node)
    for child in ast.walk(node):
      if (isinstance(child, ast.Attribute) and isinstance(child.value, ast.Name)
          and child.value.id in ("self", "cls") and child.attr in methods
          and not child.attr.startswith("test")):
        todo.append(methods[child.attr])
      elif isinstance(child, ast.Name) and child.id in functions:
        todo.append(functions[child.id])
  return seen


def _constant_values(nodes, callables):
  """{name: constants it is bound to anywhere in `nodes`}: assignments, `for` loops
  over literals, keyword arguments, defaults, and positional arguments of calls
  of the helpers in `callables`."""
  values = collections.defaultdict(set)

  def add(name, value):
    if isinstance(value, ast.Constant):
      values[name].add(value.value)

  for node in nodes:
    for child in ast.walk(node):
      if isinstance(child, ast.Assign):
        for target in child.targets:
          if isinstance(target, ast.Name):
            add(target.id, child.value)
      elif (isinstance(child, ast.For) and isinstance(child.target, ast.Name)
            and isinstance(child.iter, (ast.List, ast.Tuple))):
        for element in child.iter.elts:
          add(child.target.id, element)
      elif isinstance(child, (ast.FunctionDef, ast.Lambda)):
        positional = child.args.args[len(child.args.args) - len(child.args.defaults):]
        for arg, default in zip(positional, child.args.defaults):
          add(arg.arg, default)
        for arg, default in zip(child.args.kwonlyargs, child.args.kw_defaults):
          if default is not None:
            add(arg.arg, default)
      elif isinstance(child, ast.Call):
        for keyword in child.keywords:
          if keyword.arg:
            add(keyword.arg, keyword.value)
        func = child.func
        callee, skip = None, 0
        if (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
            and func.value.id == "self"):
          callee, skip = callables.get(func.attr), 1
        elif isinstance(func, ast.Name):
          callee = callables.get(func.id)
        if isinstance(callee, ast.FunctionDef):
          for arg, value in zip(callee.args.args[skip:], child.args):
            add(arg.arg, value)
  return values


def _may_use_tpu(call, values):
  """Whether a `TPUEstimator(...)` call can get use_tpu=True (its default)."""
  keywords = {k.arg: k.value for k in call.keywords}
  if "use_tpu" in keywords:
    value = keywords["use_tpu"]
  elif len(call.args) > 4:  # (model_fn, model_dir, config, params, use_tpu, ...)
    value = call.args[4]
  else:
    return True
  if isinstance(value, ast.Constant):
    return bool(value.value)
  if isinstance(value, ast.Name):
    bound = values.get(value.id)
    # Unknown: counted as a TPU (the default).
    return not bound or any(bool(v) for v in bound)
  return True


def _runs_tpu(nodes, callables):
  """Whether the code builds a TPUEstimator that can get use_tpu=True, and trains,
  evaluates, predicts or exports with an estimator."""
  values = _constant_values(nodes, callables)
  builds = runs = False
  for node in nodes:
    for child in ast.walk(node):
      if not isinstance(child, ast.Call):
        continue
      func = child.func
      name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
      if name == "TPUEstimator" and _may_use_tpu(child, values):
        builds = True
      if isinstance(func, ast.Attribute) and func.attr in _RUN_METHODS:
        runs = True
  return builds and runs


def _uses_estimator(nodes, aliases):
  """Whether the code names a tf.estimator module or name (its Keras aliases aside)."""
  estimator_names = {name for name, target in aliases.items()
                     if not _relative(target).startswith("util")}
  return any(isinstance(child, ast.Name) and child.id in estimator_names
             for node in nodes for child in ast.walk(node))


def tpu_scope(source, suite):
  """Returns {(class, test method): set of out-of-scope reasons} for one TPU test file.

  The reasons are upstream_suite's ("private", "mock": `suite._reasons`) and
  TPU_OUT_OF_SCOPE_REASONS', over all the code a test runs: the method, its
  class's setUp/setUpClass and decorators, and what they call (`_reachable`).
  Every TestCase class of the file counts (pytest collects them whatever their
  name). "tpu" is pass A's only: see `reasons_for_pass`. The shim must be
  importable.
  """
  tree = ast.parse(source)
  aliases = suite._estimator_aliases(tree)
  shim_modules = set(suite.SHIM_MODULES) | set(TPU_SHIM_MODULES)
  classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}

  def is_test_class(node):
    for base in node.bases:
      if (suite._dotted(base) or "").endswith("TestCase"):
        return True
      if isinstance(base, ast.Name) and base.id in classes and is_test_class(classes[base.id]):
        return True
    return False

  test_classes = {name for name, node in classes.items() if is_test_class(node)}
  functions = {node.name: node for node in tree.body
               if isinstance(node, (ast.FunctionDef, ast.ClassDef))
               and node.name not in test_classes}
  tests = {}
  for class_name in sorted(test_classes):
    node = classes[class_name]
    methods = suite._class_methods(node, classes)
    shared = [methods[name] for name in ("setUp", "setUpClass") if name in methods]
    for name, method in methods.items():
      if not name.startswith("test") or name in _NOT_TESTS:
        continue
      nodes = _reachable([method] + shared + node.decorator_list, methods, functions)
      callables = dict(functions, **methods)
      reasons = set()
      for reached in nodes:
        reasons |= suite._reasons(reached, aliases, {})
        if _private_attribute(reached, aliases, suite):
          reasons.add("private")
        if _private_module(reached, aliases, shim_modules):
          reasons.add("private module")
      if _runs_tpu(nodes, callables):
        reasons.add("tpu")
      if not _uses_estimator(nodes, aliases):
        reasons.add("no estimator")
      tests[(class_name, name)] = reasons
  return tests


def reasons_for_pass(reasons, pass_name):
  """A test's out-of-scope reasons in a pass: pass B forces use_tpu=False, so "tpu" is A's."""
  return set(reasons) - ({"tpu"} if pass_name == "B" else set())


def source_method(test_name, methods):
  """The test method a collected test comes from: absl's parameterized tests are
  named <method><suffix>."""
  candidates = [m for m in methods if test_name.startswith(m)]
  return max(candidates, key=len) if candidates else None


# -- Running the tests --------------------------------------------------------------

_CONFTEST = '''"""How upstream_suite.py runs tf.estimator's TPU tests (generated).

Each test file runs in its own pytest process (each defines the absl flag
test_num_shards). UPSTREAM_V1=1: the file's __main__ called
disable_v2_behavior(). UPSTREAM_TPU_FORCE_CPU=1 (pass B): every TPUEstimator
is built with use_tpu=False. UPSTREAM_FLAGS: the absl flags upstream's BUILD
passes, parsed after collection as absltest.main would. UPSTREAM_SELECT: a
JSON list of "file::Class::test" to keep (the others are deselected).
"""
import functools
import inspect
import json
import os

import tensorflow as tf
from absl import flags

if {reference!r}:
  # 26a7dc2's tests import these from util, which tf.estimator 2.15.0 lacks.
  from tensorflow_estimator.python.estimator import util
  util.tf_keras = tf.keras
  util.tf_keras_v1 = tf.compat.v1.keras
  util.tf_keras_v2 = tf.compat.v2.keras

if os.environ.get("UPSTREAM_V1") == "1":
  tf.compat.v1.disable_v2_behavior()

if os.environ.get("UPSTREAM_TPU_FORCE_CPU") == "1":
  # The class the tests' `tpu_estimator.TPUEstimator` resolves to: 2.15's, or
  # estimator_lite's through the shim; patched in this test process only.
  from tensorflow_estimator.python.estimator.tpu import tpu_estimator
  _estimator_class = tpu_estimator.TPUEstimator
  _init = _estimator_class.__init__
  _signature = inspect.signature(_init)

  @functools.wraps(_init)
  def _init_without_tpu(self, *args, **kwargs):
    bound = _signature.bind(self, *args, **kwargs)
    bound.arguments["use_tpu"] = False
    _init(*bound.args, **bound.kwargs)

  _estimator_class.__init__ = _init_without_tpu

_SELECT = None
if os.environ.get("UPSTREAM_SELECT"):
  with open(os.environ["UPSTREAM_SELECT"]) as f:
    _SELECT = set(json.load(f))


def pytest_collection_modifyitems(config, items):
  if _SELECT is None:
    return
  kept, dropped = [], []
  for item in items:
    key = "::".join((os.path.basename(str(item.fspath)),
                     item.cls.__name__ if item.cls else "", item.name))
    (kept if key in _SELECT else dropped).append(item)
  items[:] = kept
  config.hook.pytest_deselected(items=dropped)


def pytest_collection_finish(session):
  flags.FLAGS(["test"] + os.environ.get("UPSTREAM_FLAGS", "").split(), known_only=True)
'''


def _write_test_dir(directory, upstream, files, reference):
  os.makedirs(directory, exist_ok=True)
  for name in files:
    shutil.copy(os.path.join(upstream, _TPU_DIR, name), os.path.join(directory, name))
  with open(os.path.join(directory, "conftest.py"), "w") as f:
    f.write(_CONFTEST.format(reference=reference))


def read_junit(path):
  """{"file::Class::test": (outcome, first line of the message)}; outcome is
  passed, failed or skipped. A collection error is keyed "file::".
  """
  outcomes = {}
  if not os.path.exists(path):
    return outcomes
  for case in ElementTree.parse(path).iter("testcase"):
    classname = case.get("classname") or ""
    module, _, class_name = classname.partition(".")
    if not class_name:  # a collection error: classname "", name the module
      key = (module or case.get("name", "").split(".")[-1]) + ".py::"
    else:
      key = "%s.py::%s::%s" % (module, class_name, case.get("name"))
    tags = {child.tag: child for child in case}
    problem = tags.get("failure", tags.get("error"))
    if problem is not None:
      lines = (problem.get("message") or problem.text or "").strip().splitlines()
      outcomes[key] = ("failed", lines[0][:300] if lines else "")
    elif "skipped" in tags:
      outcomes[key] = ("skipped", (tags["skipped"].get("message") or "")[:300])
    else:
      outcomes[key] = ("passed", "")
  return outcomes


def _run_file(python, directory, name, pass_name, v1, env, timeout, extra=()):
  """Runs one test file in one pass; returns (outcomes, seconds, log tail)."""
  junit = os.path.join(directory, "junit_%s_%s.xml" % (pass_name, name[:-3]))
  if os.path.exists(junit):
    os.remove(junit)
  env = dict(env, UPSTREAM_V1="1" if v1 else "0",
             UPSTREAM_TPU_FORCE_CPU=_PASS_ENV[pass_name],
             UPSTREAM_FLAGS=" ".join(TPU_TEST_ARGS.get(name, ())), TF_CPP_MIN_LOG_LEVEL="3")
  command = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--junitxml", junit,
             "--rootdir", directory, "-o", "addopts=", "--timeout", str(timeout), *extra, name]
  start = time.monotonic()
  proc = subprocess.run(command, cwd=directory, env=env, capture_output=True, text=True,
                        check=False)
  seconds = time.monotonic() - start
  with open(os.path.join(directory, "log_%s_%s.txt" % (pass_name, name[:-3])), "w") as f:
    f.write(proc.stdout + proc.stderr)
  tail = (proc.stdout.strip().splitlines() or [""])[-1]
  return read_junit(junit), seconds, tail


def _sha256(path):
  with open(path, "rb") as f:
    return hashlib.sha256(f.read()).hexdigest()


def reference_outcomes(upstream, workdir, files, cache_path, python, timeout):
  """2.15's outcome of every test of `files` in both passes, from the cache or run now.

  Returns the cache: {"versions": ..., "files": {file: {"sha256", "v1",
  "passes": {pass: {"file::Class::test": [outcome, message]}}, "seconds"}}}.
  """
  cache = {"files": {}}
  if os.path.exists(cache_path):
    with open(cache_path) as f:
      cache = json.load(f)
  stale = [name for name in files
           if cache["files"].get(name, {}).get("sha256")
           != _sha256(os.path.join(upstream, _TPU_DIR, name))]
  if not stale:
    print("tf.estimator 2.15's outcomes: from %s" % cache_path)
    return cache
  python = python or ref_env.ensure_ref_python()
  ok, versions = ref_env.probe(python)
  if not ok:
    raise SystemExit("the reference interpreter %s cannot import tf.estimator 2.15: %s"
                     % (python, versions))
  cache["python"], cache["versions"], cache["timeout"] = python, versions, timeout
  directory = os.path.join(workdir, "tpu_tests_215")
  _write_test_dir(directory, upstream, stale, reference=True)
  env = ref_env.subprocess_env()
  for name in stale:
    with open(os.path.join(directory, name)) as f:
      v1 = runs_v1(f.read())
    entry = {"sha256": _sha256(os.path.join(directory, name)), "v1": v1, "passes": {},
             "seconds": {}}
    for pass_name in PASSES:
      outcomes, seconds, tail = _run_file(python, directory, name, pass_name, v1, env, timeout)
      entry["passes"][pass_name] = outcomes
      entry["seconds"][pass_name] = round(seconds, 1)
      print("tf.estimator 2.15, pass %s, %s: %s (%.0f s)" % (pass_name, name, tail, seconds))
    cache["files"][name] = entry
    # Saved after each file: an interrupted run keeps what it measured.
    with open(cache_path, "w") as f:
      json.dump(cache, f, indent=1, sort_keys=True)
  return cache


def _select(reference, table, pass_name):
  """Selects a file's tests for one pass.

  Args:
    reference: 2.15's outcomes of the file in this pass.
    table: its `tpu_scope()`.
    pass_name: "A" or "B".

  Returns:
    ((collected, passed on 2.15, of those out of scope), selected ids, the number
    of collected items that are not tests).
  """
  methods = {method for (_, method) in table}
  collected = passed = out = not_tests = 0
  selected = []
  for key, (outcome, _) in sorted(reference.items()):
    _, class_name, test = key.split("::")
    reasons = table.get((class_name, source_method(test, methods))) if test else None
    if reasons is None:  # test_session, or a collection error
      not_tests += bool(test)
      continue
    collected += 1
    if outcome != "passed":
      continue
    passed += 1
    if reasons_for_pass(reasons, pass_name):
      out += 1
    else:
      selected.append(key)
  return (collected, passed, out), selected, not_tests


def _run_selected(args, workdir, suite, directory, name, pass_name, v1, selected):
  """Runs a file's selected tests here; returns (passed ids, ["id | outcome: message"], s)."""
  if not selected:
    return [], [], 0.0
  select_path = os.path.join(directory, "select_%s_%s.json" % (pass_name, name[:-3]))
  with open(select_path, "w") as f:
    json.dump(selected, f)
  env = dict(os.environ, PYTHONPATH=os.pathsep.join([workdir, suite._REPO_ROOT]),
             TF_USE_LEGACY_KERAS="1", UPSTREAM_SELECT=select_path)
  extra = (["-k", args.k] if args.k else []) + (["-x"] if args.x else [])
  outcomes, seconds, _ = _run_file(sys.executable, directory, name, pass_name, v1, env,
                                   args.timeout, extra)
  error = outcomes.get(name + "::")
  passed, failed = [], []
  for key in selected:
    if key in outcomes:
      outcome, message = outcomes[key]
    elif args.k:  # deselected by -k: not counted
      continue
    else:
      outcome, message = "failed", "not run: %s" % (error[1] if error else "not collected")
    if outcome == "passed":
      passed.append(key)
    else:
      failed.append("%s | %s: %s" % (key, outcome, message))
  return passed, failed, seconds


def run(args, workdir, suite):
  """The TPU part of upstream_suite.main: scopes, runs and prints; returns the summary."""
  start = time.monotonic()
  suite.write_shim(workdir, TPU_SHIM_MODULES)
  runnable, skipped_files = [], {}
  for name in TPU_TEST_FILES:
    path = os.path.join(args.upstream, _TPU_DIR, name)
    if not os.path.exists(path):
      raise SystemExit("not in the upstream checkout: %s" % path)
    with open(path) as f:
      reason = not_runnable(f.read())
    if reason:
      skipped_files[name] = reason
    else:
      runnable.append(name)

  cache_path = args.reference_json or os.path.join(workdir, "tpu_reference_215.json")
  reference = reference_outcomes(args.upstream, workdir, runnable, cache_path,
                                 args.reference_python, args.reference_timeout)

  # Scope, per test method.
  scopes = {}
  for name in runnable:
    with open(os.path.join(args.upstream, _TPU_DIR, name)) as f:
      scopes[name] = tpu_scope(f.read(), suite)
  reasons_text = dict(suite.OUT_OF_SCOPE_REASONS, **TPU_OUT_OF_SCOPE_REASONS)
  print("\nTPU tests (tf.estimator 2.15's tpu/), %d files; not runnable in either venv:"
        % len(TPU_TEST_FILES))
  for name, reason in skipped_files.items():
    print("  %s: %s" % (name, reason))
  for reason, text in reasons_text.items():
    methods = [key for table in scopes.values() for key, r in table.items() if reason in r]
    if methods:
      print("out of scope, %s: %d test methods" % (text, len(methods)))

  directory = os.path.join(workdir, "tpu_tests")
  _write_test_dir(directory, args.upstream, runnable, reference=False)
  summary = {"not_runnable": skipped_files, "passes": {}}
  for pass_name, description in PASSES.items():
    rows, failures, selections, not_counted = [], [], {}, 0
    for name in runnable:
      counts, selected, not_tests = _select(
          reference["files"][name]["passes"][pass_name], scopes[name], pass_name)
      selections[name] = selected
      not_counted += not_tests
      passed, failed, seconds = _run_selected(args, workdir, suite, directory, name, pass_name,
                                              reference["files"][name]["v1"], selected)
      failures += failed
      rows.append((name,) + counts + (len(passed) + len(failed), len(passed), len(failed),
                                      round(seconds, 1)))
    print("\nTPU pass %s (%s): tests that pass on tf.estimator 2.15 and are in scope"
          % (pass_name, description))
    header = ("file", "collected", "2.15 pass", "out of scope", "selected", "passed", "failed")
    print("%-42s %9s %9s %12s %8s %6s %6s" % header)
    for row in rows + [("total",) + tuple(sum(r[i] for r in rows) for i in range(1, 7))]:
      print("%-42s %9d %9d %12d %8d %6d %6d" % row[:7])
    print("(collected: on 2.15; out of scope: of the tests 2.15 passed; not counted: %d "
          "test_session methods of tf.test.TestCase that pytest collects)" % not_counted)
    if args.k:
      print("(-k %s: selected counts only the selected tests it matches)" % args.k)
    for failure in failures:
      print("FAILED [%s] %s" % (pass_name, failure))
    summary["passes"][pass_name] = {
        "description": description, "failures": failures, "selected": selections,
        "files": {row[0]: dict(zip(("collected", "passed_215", "out_of_scope", "selected",
                                    "passed", "failed", "seconds"), row[1:])) for row in rows}}
  summary["scope"] = {"::".join((name,) + key): sorted(reasons)
                      for name, table in scopes.items() for key, reasons in table.items()}
  print("\nTPU part: %.0f s" % (time.monotonic() - start))
  return summary
