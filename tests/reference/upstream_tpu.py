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

How the tests are run, the same in both venvs, is upstream_runner.py's (each
file in its own pytest process, with the absl flags tpu/BUILD passes:
TPU_TEST_ARGS); pass B sets its conftest's UPSTREAM_TPU_FORCE_CPU.

2.15's outcomes are cached per file (keyed by the test file's sha256) in
WORKDIR/tpu_reference_215.json, or in the file given with --reference-json,
which later runs can pass back in: the 2.15 run takes a few minutes.
"""
import ast
import collections
import os
import sys
import time

import upstream_runner

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
# Each pass's switches of upstream_runner's conftest.
_PASS_ENV = {"A": {"UPSTREAM_TPU_FORCE_CPU": "0"}, "B": {"UPSTREAM_TPU_FORCE_CPU": "1"}}
# The slowest tpu/ test that passes on 2.15 takes 8 s; with use_tpu=False
# forced, a few of 2.15's run endlessly (predict over a `.repeat()` dataset).
REFERENCE_TIMEOUT = 30

# The methods of an Estimator that run its model_fn.
_RUN_METHODS = {"train", "evaluate", "predict", "export_saved_model", "export_savedmodel",
                "experimental_export_all_saved_models"}
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

  The reasons are upstream_suite's ("private", "mock": `suite.reasons`) and
  TPU_OUT_OF_SCOPE_REASONS', over all the code a test runs: the method, its
  class's setUp/setUpClass and decorators, and what they call (`_reachable`).
  Every TestCase class of the file counts (pytest collects them whatever their
  name). "tpu" is pass A's only: see `reasons_for_pass`. The shim must be
  importable.
  """
  tree = ast.parse(source)
  context = suite.module_context(tree)
  aliases = context.aliases
  shim_modules = set(suite.SHIM_MODULES) | set(TPU_SHIM_MODULES)
  classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}

  def is_test_class(node):
    for base in node.bases:
      if (suite.dotted(base) or "").endswith("TestCase"):
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
    methods = {name: method for name, (method, _) in suite.class_methods(node, context).items()}
    shared = [methods[name] for name in ("setUp", "setUpClass") if name in methods]
    for name, method in methods.items():
      if not name.startswith("test") or name in upstream_runner.NOT_TESTS:
        continue
      nodes = _reachable([method] + shared + node.decorator_list, methods, functions)
      callables = dict(functions, **methods)
      reasons = set()
      for reached in nodes:
        reasons |= suite.reasons(reached, aliases, {})
        if suite.reads_private_attribute(reached, aliases):
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


def run(args, workdir, suite, pythonpath):
  """The TPU part of upstream_suite.main: scopes, runs and prints; returns the summary
  (None with --reference-only). Test processes here get `pythonpath` (the shim,
  the estimator_lite under test)."""
  start = time.monotonic()
  suite.write_shim(workdir, TPU_SHIM_MODULES)
  source_dir = os.path.join(args.upstream, _TPU_DIR)
  runnable, skipped_files = [], {}
  for name in TPU_TEST_FILES:
    path = os.path.join(source_dir, name)
    if not os.path.exists(path):
      raise SystemExit("not in the upstream checkout: %s" % path)
    with open(path) as f:
      reason = not_runnable(f.read())
    if reason:
      skipped_files[name] = reason
    else:
      runnable.append(name)

  cache_path = args.reference_json or os.path.join(workdir, "tpu_reference_215.json")
  reference = upstream_runner.reference_outcomes(
      source_dir, runnable, os.path.join(workdir, "tpu_tests_215"), cache_path,
      args.reference_python, args.reference_timeout or REFERENCE_TIMEOUT, _PASS_ENV,
      flags=TPU_TEST_ARGS, label="tf.estimator 2.15, tpu/")
  if args.reference_only:
    return None

  # Scope, per test method.
  scopes = {}
  for name in runnable:
    with open(os.path.join(source_dir, name)) as f:
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
  upstream_runner.write_test_dir(directory, source_dir, runnable, reference=False)
  env = suite.local_env(pythonpath)
  summary = {"not_runnable": skipped_files, "passes": {}}
  for pass_name, description in PASSES.items():
    rows, failures, selections, not_counted = [], [], {}, 0
    for name in runnable:
      entry = reference["files"][name]
      counts, selected, _, not_tests = upstream_runner.select(
          entry["passes"][pass_name], scopes[name],
          lambda reasons, pass_name=pass_name: reasons_for_pass(reasons, pass_name))
      selections[name] = selected
      not_counted += not_tests
      file_env = upstream_runner.file_env(env, entry["v1"], TPU_TEST_ARGS.get(name, ()),
                                          **_PASS_ENV[pass_name])
      passed, failed, seconds = upstream_runner.run_selected(
          sys.executable, directory, name, file_env, selected, args.timeout,
          tag=pass_name + "_", k=args.k, x=args.x)
      failures += failed
      rows.append((name,) + counts + (len(passed) + len(failed), len(passed), len(failed),
                                      round(seconds, 1)))
    print("\nTPU pass %s (%s): tests that pass on tf.estimator 2.15 and are in scope"
          % (pass_name, description))
    upstream_runner.print_table(rows)
    print("(collected: on 2.15; out of scope: of the tests 2.15 passed; not counted: %d "
          "test_session methods of tf.test.TestCase that pytest collects)" % not_counted)
    if args.k:
      print("(-k %s: selected counts only the selected tests it matches)" % args.k)
    for failure in failures:
      print("FAILED [%s] %s" % (pass_name, failure))
    summary["passes"][pass_name] = {
        "description": description, "failures": failures, "selected": selections,
        "files": {row[0]: dict(zip(upstream_runner.TABLE_FIELDS, row[1:])) for row in rows}}
  summary["scope"] = {"::".join((name,) + key): sorted(reasons)
                      for name, table in scopes.items() for key, reasons in table.items()}
  print("\nTPU part: %.0f s" % (time.monotonic() - start))
  return summary
