"""Runs tf.estimator 2.15's own unit tests against estimator_lite.

The measure of issue 16 (fidelity): tf.estimator's tests, unchanged, with its
module names mapped onto estimator_lite. Nothing of tf.estimator is kept in this
repository: the tests are read from a checkout of github.com/tensorflow/estimator
(commit 26a7dc2, the last release) that the developer provides, and copied only
into a temporary working directory.

Usage, from the repository root in the current venv (TensorFlow 2.21 + tf-keras):

    git clone https://github.com/tensorflow/estimator /tmp/tf-estimator
    git -C /tmp/tf-estimator checkout 26a7dc2
    python tests/reference/upstream_suite.py --upstream /tmp/tf-estimator \
        [--files a_test.py b/c_test.py] [--workdir DIR] [--json FILE] [--failures] \
        [-k EXPR] [-x] [--timeout S] [--tpu-only | --no-tpu] [--reference-only] \
        [--reference-python PATH] [--reference-json FILE] [--reference-timeout S] \
        [--estimator-lite-root DIR]

The tests are every `py_test` of the BUILD files under
tensorflow_estimator/python/estimator (`tree_test_files`; --files picks some),
but tpu/'s (upstream_tpu.py's part) and tf_estimator_doctest.py. Each file is
measured as upstream_runner.py says: run whole on tf.estimator 2.15 in the
reference venv (cached in --reference-json), then the tests that passed there
and are in scope (`scope`) run here, against estimator_lite through a
name-mapping shim written in WORKDIR (a fresh temporary directory by default):

  - `tensorflow_estimator/...`: one module for each tf.estimator module the
    tests import (SHIM_MODULES). Each resolves a name from its alias table
    (tf.estimator's name -> estimator_lite's), else a public name from the
    estimator_lite modules listed for it; a name found in neither raises
    AttributeError, so a test that needs it fails (nothing is skipped). A
    module estimator_lite has no counterpart of (sdca_ops' internals,
    timeseries, ...) maps nothing: its tests fail;
  - beside them, tf.estimator's test-support modules (SUPPORT_FILES: the
    dnn/linear testing utils, the fake summary writer, head_utils' test
    helpers), copied as they are.

It prints a table per file (collected, 2.15 pass, out of scope, selected,
passed, failed), the totals with and without the files of the estimators
estimator_lite leaves out (MISSING_ESTIMATOR_FILES), and with --failures each
failure. Then (unless --no-tpu; alone with --tpu-only) the `tpu/` tests
against estimator_lite.tpu, in two passes (as written, and with use_tpu=False
forced): see upstream_tpu.py.
"""
import argparse
import ast
import collections
import fnmatch
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import ref_env
import upstream_runner

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE = "tensorflow_estimator/python/estimator"
_PREFIX = "tensorflow_estimator.python.estimator."

# py_test sources that are not part of the tree's measure: the TPU tests
# (upstream_tpu.py's), and the doctest of tf.estimator's docstrings.
_OTHER_TESTS = ("tpu/*", "tf_estimator_doctest.py")

# The test files of estimators estimator_lite leaves out on purpose (the
# time-series estimators, which 2.15 did not export): their tests fail here,
# and the totals are printed without them too.
MISSING_ESTIMATOR_FILES = (
    "canned/timeseries/*",
)

# tf.estimator's test-support modules the tests import: copied into the shim
# package as they are (upstream path -> path in the shim package). head_utils
# is a library module (its binary_or_multi_class_head is estimator_lite's
# too) that also holds the heads' test assertions (`_assert_no_hooks`, ...,
# which use only the public EstimatorSpec and Scaffold): they are copied
# under another name, and the shim's head_utils aliases them.
SUPPORT_FILES = {
    "hooks/fake_summary_writer.py": "hooks/fake_summary_writer.py",
    "canned/dnn_testing_utils.py": "canned/dnn_testing_utils.py",
    "canned/linear_testing_utils.py": "canned/linear_testing_utils.py",
    "canned/v1/dnn_testing_utils_v1.py": "canned/v1/dnn_testing_utils_v1.py",
    "canned/v1/linear_testing_utils_v1.py": "canned/v1/linear_testing_utils_v1.py",
    "head/head_utils.py": "head/head_utils_test_support.py",
}
_HEAD_TEST_SUPPORT = _PREFIX + "head.head_utils_test_support"


def _v1_v2(module, *names):
  """tf.estimator's v1 class `X` is estimator_lite's `XV1`, and its v2 class `XV2`
  estimator_lite's `X` (the same public classes under the other convention)."""
  aliases = {}
  for name in names:
    aliases[name] = "%s:%sV1" % (module, name)
    aliases[name + "V2"] = "%s:%s" % (module, name)
  return aliases


_TASKS = ("Classifier", "Regressor", "Estimator")
_NOTHING = ((), {})

# shim module (relative to tensorflow_estimator.python.estimator) ->
#   (estimator_lite modules searched in order for public names,
#    {tf.estimator name: "module:name", or None: no counterpart}).
# A `_`-prefixed name (not a dunder: util.tf_keras_v1.__internal__ is tf_keras')
# resolves only through the alias table: a private name of
# estimator_lite that happens to be spelt like tf.estimator's (canned.dnn's
# `_dnn_model_fn`, a builder of model_fns where tf.estimator's is a model_fn)
# is not its counterpart.
SHIM_MODULES = {
    "estimator": (
        ("estimator_lite.estimator", "estimator_lite"),
        {"EstimatorV2": "estimator_lite.estimator:Estimator",
         "_load_global_step_from_checkpoint_dir":
             "estimator_lite._session.checkpoints:latest_global_step",
         "_write_dict_to_summary": "estimator_lite._util.events:write_dict_to_summary"}),
    # tf.estimator's estimator_lib gathers the v1 namespace's names (its
    # DNNClassifier is the v1 class).
    "estimator_lib": (
        ("estimator_lite.compat.v1", "estimator_lite", "estimator_lite.experimental"),
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
    "export.function": _NOTHING,
    "early_stopping": (
        ("estimator_lite.experimental.early_stopping",),
        {"read_eval_metrics": "estimator_lite._util.events:read_eval_metrics",
         **{name: "estimator_lite.experimental.early_stopping:" + name for name in (
             "_CheckForStoppingHook", "_StopOnPredicateHook", "_get_or_create_stop_var")}}),
    "estimator_export": _NOTHING,
    "extenders": (("estimator_lite.canned.add_metrics",), {}),
    "gc": _NOTHING,
    "hooks.hooks": (
        ("estimator_lite.experimental.in_memory_evaluator_hook",
         "estimator_lite.experimental.stop_at_checkpoint_step"),
        {"_StopAtCheckpointStepHook":
             "estimator_lite.experimental.stop_at_checkpoint_step:_StopAtCheckpointStepHook"}),
    "hooks.basic_session_run_hooks": (("estimator_lite.hooks",), {}),
    "inputs.numpy_io": (("estimator_lite.inputs.numpy_io",), {}),
    "inputs.pandas_io": (("estimator_lite.inputs.pandas_io",), {}),
    # tf.estimator's queue-based feeding; estimator_lite's input_fns feed
    # tf.data datasets.
    "inputs.queues.feeding_functions": _NOTHING,
    "inputs.queues.feeding_queue_runner": _NOTHING,
    # A package: tf_keras* are its modules, and util.py's names its own.
    "util": (("estimator_lite._graph.input_fn",), {}),
    "util.tf_keras": (("tf_keras",), {}),
    "util.tf_keras_v1": (("tf_keras.api._v1.keras",), {}),
    "util.tf_keras_v2": (("tf_keras",), {}),
    "keras_lib": (("estimator_lite.keras",), {}),
    "tools.checkpoint_converter": _NOTHING,
    "canned.baseline": (("estimator_lite.canned.baseline",),
                        _v1_v2("estimator_lite.canned.baseline",
                               *("Baseline" + task for task in _TASKS))),
    "canned.dnn": (("estimator_lite.canned.dnn",),
                   _v1_v2("estimator_lite.canned.dnn", *("DNN" + task for task in _TASKS))),
    "canned.dnn_linear_combined": (
        ("estimator_lite.canned.dnn_linear_combined",),
        dict(_v1_v2("estimator_lite.canned.dnn_linear_combined",
                    *("DNNLinearCombined" + task for task in _TASKS)),
             # The same model_fn: arguments, order and defaults.
             _dnn_linear_combined_model_fn_v2=(
                 "estimator_lite.canned.dnn_linear_combined:dnn_linear_combined_model_fn_v2"))),
    "canned.linear": (
        ("estimator_lite.canned.linear", "estimator_lite.canned.linear_model",
         "estimator_lite.canned.linear_sdca"),
        dict(_v1_v2("estimator_lite.canned.linear", *("Linear" + task for task in _TASKS)),
             _compute_fraction_of_zero="estimator_lite.canned.linear_model:fraction_of_zero",
             # tf.estimator's is a Keras Model (not exported); estimator_lite's
             # LinearModel is its estimators' builder of the linear logits.
             LinearModel=None)),
    # tf.estimator's v1 heads (canned/head.py): private functions throughout.
    "canned.head": _NOTHING,
    "canned.metric_keys": (("estimator_lite.canned.metric_keys",), {}),
    "canned.prediction_keys": (("estimator_lite.canned.prediction_keys",), {}),
    "canned.optimizers": (("estimator_lite.canned.optimizers",), {}),
    "canned.parsing_utils": (
        ("estimator_lite.canned.parse_example_spec",),
        {name + "_v2": "estimator_lite.canned.parse_example_spec:" + name
         for name in ("classifier_parse_example_spec", "regressor_parse_example_spec")}),
    "canned.saved_model_estimator": _NOTHING,
    "canned.kmeans": (("estimator_lite.canned.kmeans",), {}),
    "canned.rnn": (("estimator_lite.canned.rnn",), {
        # The same builders, public here.
        "_make_rnn_layer": "estimator_lite.canned.rnn:make_rnn_layer",
        "_make_rnn_cell_fn": "estimator_lite.canned.rnn:make_rnn_cell_fn"}),
    "canned.linear_optimizer.python.utils.sdca_ops": _NOTHING,
    "canned.linear_optimizer.python.utils.sharded_mutable_dense_hashtable": _NOTHING,
    **{"canned.timeseries." + name: _NOTHING for name in (
        "ar_model", "estimators", "feature_keys", "head", "math_utils", "model",
        "model_utils", "saved_model_utils", "state_management")},
    "head.base_head": (("estimator_lite.head.base_head", "estimator_lite.head.losses"), {}),
    "head.binary_class_head": (("estimator_lite.head.binary_class_head",), {}),
    "head.multi_class_head": (("estimator_lite.head.multi_class_head",), {}),
    "head.multi_head": (("estimator_lite.head.multi_head",), {}),
    "head.multi_label_head": (("estimator_lite.head.multi_label_head",), {}),
    "head.regression_head": (("estimator_lite.head.regression_head",), {}),
    "head.sequential_head": (
        ("estimator_lite.head.sequential_head",),
        {"_SequentialHead": "estimator_lite.head.sequential_head:SequentialHead",
         "_flatten_tensor": "estimator_lite.head.sequential_head:flatten_tensor"}),
    "head.head_utils": (
        ("estimator_lite.head.head_utils",),
        {name: _HEAD_TEST_SUPPORT + ":" + name for name in (
            "_DEFAULT_SERVING_KEY", "_assert_no_hooks", "_assert_simple_summaries",
            "_initialize_variables")}),
}

_SHIM_TEMPLATE = '''"""Shim: tf.estimator's {name} resolved from estimator_lite (generated)."""
import importlib

_SOURCES = {sources!r}
_ALIASES = {aliases!r}


def __getattr__(name):
  if name in _ALIASES:
    if _ALIASES[name] is None:  # spelt like one of estimator_lite's, but not its counterpart
      raise AttributeError("shim {name}: estimator_lite has no counterpart of %r" % name)
    module_name, attribute = _ALIASES[name].split(":")
    return getattr(importlib.import_module(module_name), attribute)
  if not name.startswith("_") or name.startswith("__"):
    for module_name in _SOURCES:
      module = importlib.import_module(module_name)
      if hasattr(module, name):
        return getattr(module, name)
  raise AttributeError("shim {name}: estimator_lite has no %r" % name)
'''


def write_shim(workdir, modules=None):
  """Writes the shim package under `workdir`: SHIM_MODULES, or `modules`.

  A shim module that other shim modules are under (`util`, parent of
  `util.tf_keras`) is written as its package's __init__.py.
  """
  modules = modules or SHIM_MODULES
  packages = {"tensorflow_estimator", "tensorflow_estimator/python", PACKAGE}
  for name in modules:
    parts = name.split(".")
    for depth in range(1, len(parts)):
      packages.add(os.path.join(PACKAGE, *parts[:depth]))
  for name, (sources, aliases) in modules.items():
    path = os.path.join(workdir, PACKAGE, *name.split("."))
    path = os.path.join(path, "__init__.py") if os.path.relpath(path, workdir) in packages \
        else path + ".py"
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
      f.write(_SHIM_TEMPLATE.format(name=name, sources=sources, aliases=aliases))
  for package in packages:
    os.makedirs(os.path.join(workdir, package), exist_ok=True)
    open(os.path.join(workdir, package, "__init__.py"), "a").close()


def copy_support(upstream, workdir):
  """Copies SUPPORT_FILES into the shim package (its packages made as needed)."""
  for source, target in SUPPORT_FILES.items():
    path = os.path.join(workdir, PACKAGE, target)
    directory = os.path.dirname(path)
    while not os.path.exists(os.path.join(directory, "__init__.py")):
      os.makedirs(directory, exist_ok=True)
      open(os.path.join(directory, "__init__.py"), "a").close()
      directory = os.path.dirname(directory)
    shutil.copy(os.path.join(upstream, PACKAGE, source), path)


def tree_test_files(upstream):
  """The source of every `py_test` in the BUILD files under PACKAGE, but _OTHER_TESTS'.

  A target's test file is its `main`, else its first `srcs` entry; several
  targets (the `_gpu` variants) share one file.
  """
  root = os.path.join(upstream, PACKAGE)
  files = set()
  for directory, _, names in os.walk(root):
    if "BUILD" not in names:
      continue
    with open(os.path.join(directory, "BUILD")) as f:
      build = f.read()
    for target in re.finditer(r"^py_test\((.*?)^\)", build, re.M | re.S):
      main = re.search(r'\bmain = "([^"]+)"', target.group(1))
      srcs = re.search(r'\bsrcs = \[\s*"([^"]+)"', target.group(1))
      source = (main or srcs).group(1)
      files.add(os.path.relpath(os.path.join(directory, source), root))
  return sorted(name for name in files
                if not any(fnmatch.fnmatch(name, pattern) for pattern in _OTHER_TESTS))


def is_missing_estimator(name):
  """Whether `name` tests an estimator estimator_lite leaves out (MISSING_ESTIMATOR_FILES)."""
  return any(fnmatch.fnmatch(name, pattern) for pattern in MISSING_ESTIMATOR_FILES)


# -- Which tests are in scope -----------------------------------------------------

# What `scope()` says of a test that does not test the public API.
OUT_OF_SCOPE_REASONS = {
    "private": "uses a name of tf.estimator that 2.15 did not export (`_`-prefixed, an "
               "internal module's, or an attribute of its objects') and estimator_lite has "
               "no counterpart of",
    "tensorflow": "imports a TensorFlow module that this TensorFlow no longer has "
                  "(tensorflow.python.distribute.estimator_training)",
    "mock": "patches a module's function with mock (tf.estimator's implementation)",
    "unresolved": "a test method scope() cannot find in the file or its test-support "
                  "modules (inherited from TensorFlow's test bases)",
}


# TensorFlow modules and classes whose functions tf.estimator's implementation
# called: a test that patches them tests how tf.estimator was built.
_IMPLEMENTATION_TARGETS = {"training", "server_lib", "gfile", "basic_session_run_hooks",
                           "tf.train.SessionManager", "tf.compat.v1.train"}

# What scope() knows of one module (a test file or a test-support module):
#   aliases: {name it binds: the tf.estimator module or name it stands for};
#   tainted: {name or "alias.name": out-of-scope reasons of that helper};
#   classes: {name or "alias.Name": (ClassDef, the Context it is defined in)}.
Context = collections.namedtuple("Context", "aliases tainted classes")


def estimator_aliases(tree):
  """{name the module binds: tf.estimator module (the shim's) or name it stands for}."""
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


def dotted(node):
  """`a.b.c` for a Name/Attribute chain, else None."""
  parts = []
  while isinstance(node, ast.Attribute):
    parts.append(node.attr)
    node = node.value
  if not isinstance(node, ast.Name):
    return None
  return ".".join([node.id] + parts[::-1])


def _internal(module, name, public):
  """Whether `module.name` (a tf.estimator module's name) is one 2.15 did not export and
  the shim does not map: `public` is {module, relative: its exported names} (public_names)."""
  relative = module[len(_PREFIX):] if module.startswith(_PREFIX) else None
  return (relative in public and name not in public[relative]
          and relative + "." + name not in SHIM_MODULES  # a module (util.tf_keras)
          and not _shim_has(module, name))


def reads_private_attribute(node, aliases, nested=()):
  """Whether `node` reads a `_`-prefixed attribute of an object it made with a tf.estimator
  class (`est._session_config` of `est = estimator.EstimatorV2(...)`), or with one of
  `nested`, the test class's own subclasses of one (`self._InvalidHead()`):
  tf.estimator's implementation, which the names alone do not show."""
  made = set()
  for child in ast.walk(node):
    if isinstance(child, ast.Assign) and isinstance(child.value, ast.Call):
      function = dotted(child.value.func) or ""
      if (function.split(".")[0] in aliases
          or function.startswith("self.") and function[len("self."):] in nested):
        made |= {target.id for target in child.targets if isinstance(target, ast.Name)}
  return any(isinstance(child, ast.Attribute) and isinstance(child.value, ast.Name)
             and child.value.id in made and child.attr.startswith("_")
             and not child.attr.startswith("__")
             for child in ast.walk(node))


def reasons(node, aliases, tainted, public=None, nested=()):
  """The out-of-scope reasons that the code under `node` gives.

  `public` ({tf.estimator module, relative: the names 2.15 exported}, see
  public_names) also makes "private" an internal name that is not
  `_`-prefixed (canned.dnn's dnn_logit_fn_builder_v2, head.sequential_head's
  SequentialHeadWrapper) when estimator_lite has no counterpart of it, and so
  does reading a private attribute of a tf.estimator object (`nested`: see
  reads_private_attribute).
  """
  found = set()
  if public is not None and reads_private_attribute(node, aliases, nested):
    found.add("private")
  for child in ast.walk(node):
    if isinstance(child, ast.Attribute) and isinstance(child.value, ast.Name):
      if (child.value.id in aliases and child.attr.startswith("_")
          and not child.attr.startswith("__")
          and not _shim_has(aliases[child.value.id], child.attr)):
        found.add("private")
      if (public is not None and child.value.id in aliases and not child.attr.startswith("_")
          and _internal(aliases[child.value.id], child.attr, public)):
        found.add("private")
      found |= tainted.get(child.value.id + "." + child.attr, set())
    if isinstance(child, ast.Name):
      found |= tainted.get(child.id, set())
      if public is not None and child.id in aliases:
        module, _, name = aliases[child.id].rpartition(".")
        if _internal(module, name, public):
          found.add("private")
    if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute) and child.args:
      if child.func.attr == "object":
        target = dotted(child.args[0]) or ""
        if target.split(".")[0] in aliases or target in _IMPLEMENTATION_TARGETS:
          found.add("mock")
      elif child.func.attr == "patch" and isinstance(child.args[0], ast.Constant):
        if str(child.args[0].value).startswith("tensorflow_estimator"):
          found.add("mock")
  return found


def module_context(tree, support=None, _contexts=None, public=None):
  """The Context of one parsed module.

  Args:
    tree: the module's AST.
    support: {test-support module's dotted name: its source}: the names the
      module reaches of those (a helper function, a base class) bring their
      own reasons, computed in their module.
    _contexts: the support modules' Contexts computed so far (a cache).
    public: see `reasons`.

  Returns:
    Its Context. A module-level function or class (not a test class:
    `_is_test_class`) is tainted with the reasons of its code, in order, so that one
    helper calling another passes its reasons on.
  """
  support = support or {}
  _contexts = {} if _contexts is None else _contexts
  aliases = estimator_aliases(tree)
  tainted, classes = {}, {}
  for alias, target in aliases.items():
    module, _, name = target.rpartition(".")
    if target in support:  # `from ... import dnn_testing_utils`
      other = _support_context(target, support, _contexts, public)
      tainted.update((alias + "." + key, value) for key, value in other.tainted.items()
                     if "." not in key)
      classes.update((alias + "." + key, value) for key, value in other.classes.items()
                     if "." not in key)
    elif module in support:  # `from ...dnn_testing_utils import assert_close`
      other = _support_context(module, support, _contexts, public)
      if name in other.tainted:
        tainted[alias] = other.tainted[name]
      if name in other.classes:
        classes[alias] = other.classes[name]
  context = Context(aliases, tainted, classes)
  for node in tree.body:
    if isinstance(node, ast.ClassDef):
      classes[node.name] = (node, context)
    if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not _is_test_class(node):
      found = reasons(node, aliases, tainted, public)
      if found:
        tainted[node.name] = found
  return context


def _is_test_class(node):
  """Whether `node` is a class of tests (named *Test, or with test methods): its
  tests take their own reasons, it passes none on to the code naming it
  (`super(ThisTest, self)`)."""
  return isinstance(node, ast.ClassDef) and (
      node.name.endswith("Test") or any(isinstance(m, ast.FunctionDef)
                                        and m.name.startswith("test") for m in node.body))


def _support_context(name, support, contexts, public):
  if name not in contexts:
    contexts[name] = Context({}, {}, {})  # a module importing itself back: nothing more
    contexts[name] = module_context(ast.parse(support[name]), support, contexts, public)
  return contexts[name]


def class_methods(node, context):
  """{name: (FunctionDef, the Context it is defined in)} of class `node` (defined in
  `context`), with those of the bases that context knows (its own classes, the
  test-support modules' ones)."""
  methods = {}
  for base in node.bases:
    key = dotted(base)
    if key in context.classes:
      base_node, base_context = context.classes[key]
      methods.update(class_methods(base_node, base_context))
  # A class defined in the class body (a test's own Head subclass) counts as a
  # helper of the tests that name it through self.
  methods.update((m.name, (m, context)) for m in node.body
                 if isinstance(m, (ast.FunctionDef, ast.ClassDef)))
  return methods


def _self_calls(method):
  """Names of `self.<name>` the method uses."""
  return {child.attr for child in ast.walk(method)
          if isinstance(child, ast.Attribute) and isinstance(child.value, ast.Name)
          and child.value.id == "self"}


def _imports_missing_tensorflow_module(tree):
  """Whether the module imports a `tensorflow.*` module this TensorFlow does not have."""
  for node in ast.walk(tree):
    names = []
    if isinstance(node, ast.Import):
      names = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tensorflow."):
      names = [node.module + "." + alias.name for alias in node.names]
    for name in names:
      if name.startswith("tensorflow.") and not _importable(name):
        return True
  return False


def _imports_unmapped_private_name(tree):
  """Whether the module imports a private tf.estimator name the shim does not map.

  `from tensorflow_estimator...sdca_ops import _SDCAModel` at the top of a
  test file fails the file's import, so no test of it can run, whatever the
  test itself uses.
  """
  for node in tree.body:
    if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(_PREFIX):
      _, aliases = SHIM_MODULES.get(node.module[len(_PREFIX):], _NOTHING)
      for alias in node.names:
        if (alias.name.startswith("_") and not alias.name.startswith("__")
            and not aliases.get(alias.name)):
          return True
  return False


def _importable(name):
  """Whether `name` is a module, or a name of a module, that imports here."""
  try:
    importlib.import_module(name)
    return True
  except ImportError:
    module, _, attribute = name.rpartition(".")
    try:
      return hasattr(importlib.import_module(module), attribute)
    except ImportError:
      return False


def scope(source, support=None, public=None):
  """Returns {(class, test method): set of out-of-scope reasons} for one test file.

  A test is in scope (empty set) when it exercises tf.estimator's public API,
  or private names the shim maps onto estimator_lite. Module-level helpers,
  the class's own helper methods, its __init__, setUp, setUpClass and
  decorators pass their reasons on to the tests that use them; so do the
  test-support modules in `support` ({dotted name: source}): a test class
  inheriting from dnn_testing_utils.BaseDNNModelFnTest gets its test methods,
  each with the reasons of its code there, and a __init__ in the test file that
  hands the base `dnn._dnn_model_fn` makes all of them private. Every class of
  the file is listed (pytest collects TestCase classes whatever their name).
  With `public` (see `reasons`), an internal tf.estimator name estimator_lite
  has no counterpart of, and a `_` attribute of an object a tf.estimator class
  made, are "private" too; a file importing a TensorFlow module this
  TensorFlow lacks is out of scope whole ("tensorflow"), and so is one that
  imports a private tf.estimator name the shim does not map ("private").
  The shim must be importable.
  """
  tree = ast.parse(source)
  context = module_context(tree, support, public=public)
  file_reasons = set()
  if public is not None and _imports_missing_tensorflow_module(tree):
    file_reasons.add("tensorflow")
  if public is not None and _imports_unmapped_private_name(tree):
    file_reasons.add("private")
  tests = {}
  for node in tree.body:
    if not isinstance(node, ast.ClassDef):
      continue
    methods = class_methods(node, context)
    shared = set(file_reasons)
    for decorator in node.decorator_list:
      shared |= reasons(decorator, context.aliases, context.tainted, public)
    # The class's own classes that subclass a tf.estimator one.
    nested = {name for name, (member, where) in methods.items()
              if isinstance(member, ast.ClassDef)
              and any((dotted(base) or "").split(".")[0] in where.aliases
                      for base in member.bases)}
    own = {name: reasons(method, where.aliases, where.tainted, public, nested)
           for name, (method, where) in methods.items()}
    for name in ("__init__", "setUp", "setUpClass"):
      shared |= own.get(name, set())
    for name, (method, _) in methods.items():
      if name.startswith("test"):
        helpers = _helpers(method, methods)
        tests[(node.name, name)] = shared.union(own[name], *(own[h] for h in helpers))
  return tests


def _helpers(method, methods):
  """The class's non-test methods `method` calls through `self`, and those they call."""
  found, todo = set(), [method]
  while todo:
    for helper in _self_calls(todo.pop()):
      if helper in methods and not helper.startswith("test") and helper not in found:
        found.add(helper)
        todo.append(methods[helper][0])
  return found


def support_sources(upstream):
  """{dotted module name: source} of SUPPORT_FILES, as the tests import them."""
  sources = {}
  for source in SUPPORT_FILES:
    with open(os.path.join(upstream, PACKAGE, source)) as f:
      sources[_PREFIX + source[:-3].replace("/", ".")] = f.read()
  return sources


# -- tf.estimator 2.15's public names ------------------------------------------------

# Run by the reference interpreter: prints {module, relative to
# tensorflow_estimator.python.estimator: [its names whose objects 2.15's public
# API (tf.estimator, tf.compat.v1.estimator, tf.compat.v2.estimator and their
# submodules) holds]}, for the modules given as arguments. Objects are
# compared by identity; numbers and strings are not objects of their own.
_PUBLIC_NAMES_PROBE = """
import importlib, json, os, sys, types
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf
public, seen = set(), set()
def walk(module):
  if id(module) in seen:
    return
  seen.add(id(module))
  for name in dir(module):
    if name.startswith("_"):
      continue
    try:
      value = getattr(module, name)
    except Exception:
      continue
    if isinstance(value, types.ModuleType):
      if "estimator" in value.__name__:
        walk(value)
    elif not isinstance(value, (str, bytes, int, float, bool, tuple, type(None))):
      public.add(id(value))
for root in (tf.estimator, tf.compat.v1.estimator, tf.compat.v2.estimator):
  walk(root)
names = {}
for relative in sys.argv[1:]:
  try:
    module = importlib.import_module("tensorflow_estimator.python.estimator." + relative)
  except Exception:
    continue
  names[relative] = sorted(n for n in dir(module) if not n.startswith("_")
                           and id(getattr(module, n)) in public)
print(json.dumps(names))
"""


def public_names(python, cache_path):
  """{tf.estimator module, relative: the names 2.15 exported}, for SHIM_MODULES' modules.

  Read from `cache_path` when it exists; else computed by the reference
  interpreter (`python`, or ref_env's) and written there.
  """
  if os.path.exists(cache_path):
    with open(cache_path) as f:
      return json.load(f)
  python = python or ref_env.ensure_ref_python()
  proc = subprocess.run([python, "-c", _PUBLIC_NAMES_PROBE, *sorted(SHIM_MODULES)],
                        capture_output=True, text=True, env=ref_env.subprocess_env(),
                        check=False)
  if proc.returncode != 0:
    raise SystemExit("listing tf.estimator 2.15's public names failed:\n" + proc.stderr[-3000:])
  names = json.loads(proc.stdout.strip().splitlines()[-1])
  with open(cache_path, "w") as f:
    json.dump(names, f, indent=1, sort_keys=True)
  return names


# -- Running the tree ----------------------------------------------------------------

# The tree's passes, as upstream ran its tests (the conftest's switches): A, as
# written, with TensorFlow 2 behaviour; v1, with disable_v2_behavior() first,
# as upstream also ran every test (its `run_v1_only` tests, the canned/v1/
# files and numpy_io/pandas_io among them, run only there).
PASSES = {"A": {}, "v1": {"UPSTREAM_V1": "1"}}
PASS_DESCRIPTIONS = {"A": "as written (TensorFlow 2 behaviour)",
                     "v1": "disable_v2_behavior() first"}
# Seconds before one test fails on tf.estimator 2.15: generous, the slowest
# canned-estimator tests take over a minute on a 2-core machine.
TREE_REFERENCE_TIMEOUT = 300


def local_env(pythonpath):
  """The environment of a test process here: the shim and estimator_lite first."""
  return dict(os.environ, PYTHONPATH=os.pathsep.join(pythonpath), TF_USE_LEGACY_KERAS="1")


def _counts(rows):
  return dict(zip(upstream_runner.TABLE_FIELDS[:6],
                  (sum(row[i] for row in rows) for i in range(1, 7))))


def run_tree(args, workdir, pythonpath):
  """The tree's measure, in each of PASSES: scopes, runs and prints; returns the summary."""
  start = time.monotonic()
  source_dir = os.path.join(args.upstream, PACKAGE)
  files = args.files or tree_test_files(args.upstream)
  for name in files:
    if not os.path.exists(os.path.join(source_dir, name)):
      raise SystemExit("not in the upstream checkout: %s" % os.path.join(source_dir, name))
  cache_path = args.reference_json or os.path.join(workdir, "reference_215.json")
  passes = {name: PASSES[name] for name in args.passes or PASSES}
  reference = upstream_runner.reference_outcomes(
      source_dir, files, os.path.join(workdir, "tree_tests_215"), cache_path,
      args.reference_python, args.reference_timeout or TREE_REFERENCE_TIMEOUT, passes)
  public = public_names(args.reference_python,
                        os.path.splitext(cache_path)[0] + "_public_names.json")
  if args.reference_only:
    return None

  support = support_sources(args.upstream)
  scopes = {}
  for name in files:
    with open(os.path.join(source_dir, name)) as f:
      scopes[name] = scope(f.read(), support, public)
  directory = os.path.join(workdir, "tree_tests")
  upstream_runner.write_test_dir(directory, source_dir, files, reference=False)
  env = local_env(pythonpath)
  saved = _load_saved_run(args.rescore) if args.rescore else None
  if saved is not None:
    passes = {name: switches for name, switches in passes.items() if name in saved}
    print("re-scored from %s: its outcomes of the tests in scope now" % args.rescore)
  summary = {"passes": {}, "scope": {"::".join((name,) + key): sorted(found)
                                     for name, table in scopes.items()
                                     for key, found in table.items()}}
  for pass_name, switches in passes.items():
    rows, failures, selections, out_of_scope, not_counted = [], [], {}, {}, 0
    for name in files:
      entry = reference["files"][name]
      counts, selected, out, not_tests = upstream_runner.select(entry["passes"][pass_name],
                                                                scopes[name])
      selections[name], not_counted = selected, not_counted + not_tests
      out_of_scope.update(out)
      if saved is not None:
        passed, failed, seconds = _saved_outcomes(saved, pass_name, name, selected)
      else:
        passed, failed, seconds = upstream_runner.run_selected(
            sys.executable, directory, name,
            upstream_runner.file_env(env, entry["v1"], **switches), selected, args.timeout,
            tag=pass_name + "_", k=args.k, x=args.x)
      failures += ["[%s] %s" % (pass_name, failure) for failure in failed]
      rows.append((name,) + counts + (len(passed) + len(failed), len(passed), len(failed),
                                      round(seconds, 1)))
      print("pass %s, %s: %d selected, %d passed (%.0f s)"
            % (pass_name, name, len(selected), len(passed), seconds), flush=True)
    print("\npass %s (%s), out of scope:" % (pass_name, PASS_DESCRIPTIONS[pass_name]))
    for reason, text in OUT_OF_SCOPE_REASONS.items():
      tests = sum(reason in found for found in out_of_scope.values())
      print("  %s: %d of the tests that pass on 2.15" % (text, tests))
    print("\npass %s: tf.estimator 2.15's tests (%d files) that pass on tf.estimator 2.15 "
          "and are in scope" % (pass_name, len(files)))
    upstream_runner.print_table(rows, width=60)
    kept = [row for row in rows if not is_missing_estimator(row[0])]
    totals = {"all": _counts(rows), "without_missing_estimators": _counts(kept)}
    for label, counts in (("all files", totals["all"]),
                          ("without the missing estimators' files",
                           totals["without_missing_estimators"])):
      print("pass %s total, %s: %d selected, %d passed, %d failed"
            % (pass_name, label, counts["selected"], counts["passed"], counts["failed"]))
    print("(collected: on 2.15; out of scope: of the tests 2.15 passed; not counted: %d "
          "test_session methods of tf.test.TestCase that pytest collects)" % not_counted)
    if args.failures:
      for failure in failures:
        print("FAILED " + failure)
    summary["passes"][pass_name] = {
        "description": PASS_DESCRIPTIONS[pass_name],
        "files": {row[0]: dict(zip(upstream_runner.TABLE_FIELDS, row[1:]),
                               missing_estimator=is_missing_estimator(row[0]))
                  for row in rows},
        "totals": totals, "failures": failures, "selected": selections,
        "out_of_scope": out_of_scope}
  summary["totals"] = {key: {field: sum(p["totals"][key][field]
                                        for p in summary["passes"].values())
                             for field in next(iter(summary["passes"].values()))["totals"][key]}
                       for key in ("all", "without_missing_estimators")}
  for key, label in (("all", "all files"),
                     ("without_missing_estimators", "without the missing estimators' files")):
    counts = summary["totals"][key]
    print("tree total, both passes, %s: %d selected, %d passed, %d failed"
          % (label, counts["selected"], counts["passed"], counts["failed"]))
  if args.k:
    print("(-k %s: selected counts only the selected tests it matches)" % args.k)
  print("tree: %.0f s" % (time.monotonic() - start))
  return summary


def _load_saved_run(path):
  """{pass: ({file: selected ids}, {failed id: message})} of a saved run's --json (this
  script's; one of a version with a single pass has it as pass A)."""
  with open(path) as f:
    tree = json.load(f)["tree"]
  runs = tree["passes"] if "passes" in tree else {"A": tree}
  saved = {}
  for pass_name, run in runs.items():
    failed = {}
    for line in run["failures"]:
      test_id, _, message = re.sub(r"^\[\w+\] ", "", line).partition(" | ")
      failed[test_id] = message
    saved[pass_name] = (run["selected"], failed)
  return saved


def _saved_outcomes(saved, pass_name, name, selected):
  """(passed ids, ["id | message"], 0) of `selected` in a saved run; a test it did not
  run fails ("not in the saved run"), so a re-score never counts more passes."""
  ran, failed = saved[pass_name]
  ran = set(ran.get(name, ()))
  passed = [t for t in selected if t in ran and t not in failed]
  failures = ["%s | %s" % (t, failed[t] if t in ran else "not in the saved run")
              for t in selected if t not in passed]
  return passed, failures, 0.0


def _grand_totals(tree, tpu):
  """The tree's totals plus tpu/'s pass A (as written), with and without the files
  of the missing estimators."""
  tpu_counts = _counts([(name,) + tuple(entry[field] for field in upstream_runner.TABLE_FIELDS)
                        for name, entry in tpu["passes"]["A"]["files"].items()])
  return {key: {field: counts[field] + tpu_counts[field] for field in counts}
          for key, counts in tree["totals"].items()}


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--upstream", required=True,
                      help="checkout of github.com/tensorflow/estimator at 26a7dc2")
  parser.add_argument("--files", nargs="+",
                      help="test files to run, relative to %s (default: the whole tree)"
                           % PACKAGE)
  parser.add_argument("--passes", nargs="+", choices=sorted(PASSES),
                      help="the tree's passes to run (default: all)")
  parser.add_argument("--rescore", metavar="JSON",
                      help="run nothing here: count a saved run's (--json) outcomes of the "
                           "tests in scope now (e.g. an older run, after the scope changed)")
  parser.add_argument("--workdir", help="default: a fresh temporary directory")
  parser.add_argument("--json", help="write the summary here")
  parser.add_argument("-k", help="pytest -k expression")
  parser.add_argument("-x", action="store_true", help="stop each file at its first failure")
  parser.add_argument("--failures", action="store_true",
                      help="print each failure with the first line of its message")
  parser.add_argument("--timeout", type=int, default=120,
                      help="seconds before one test counts as failed here (default 120)")
  parser.add_argument("--estimator-lite-root", default=REPO_ROOT,
                      help="the checkout whose estimator_lite is tested (default: this one)")
  tpu = parser.add_mutually_exclusive_group()
  tpu.add_argument("--tpu-only", action="store_true",
                   help="run only the tpu/ tests (upstream_tpu.py)")
  tpu.add_argument("--no-tpu", action="store_true", help="do not run the tpu/ tests")
  parser.add_argument("--reference-only", action="store_true",
                      help="only fill the cache of tf.estimator 2.15's outcomes")
  parser.add_argument("--reference-python",
                      help="python of a venv with TensorFlow 2.15 + tf.estimator 2.15 "
                           "(default: ref_env.ensure_ref_python())")
  parser.add_argument("--reference-json",
                      help="cache of tf.estimator 2.15's outcomes: read, and completed when "
                           "files are missing (default: in WORKDIR)")
  parser.add_argument("--reference-timeout", type=int,
                      help="seconds before one test counts as failed on tf.estimator 2.15 "
                           "(default: %d for the tree; upstream_tpu.py's for tpu/)"
                           % TREE_REFERENCE_TIMEOUT)
  args = parser.parse_args(argv)

  workdir = args.workdir or tempfile.mkdtemp(prefix="upstream_suite_")
  os.makedirs(workdir, exist_ok=True)
  root = os.path.abspath(args.estimator_lite_root)
  pythonpath = [workdir, root]
  write_shim(workdir)
  copy_support(args.upstream, workdir)
  # scope() imports the shim, hence estimator_lite, in this process.
  sys.path[:0] = pythonpath
  os.environ["TF_USE_LEGACY_KERAS"] = "1"
  print("estimator_lite under test: %s" % root)
  missing = ref_env.missing_packages(sys.executable, ("pandas", "portpicker"))
  if missing and not args.reference_only:
    print("this venv lacks %s: the tests that import it fail here" % ", ".join(missing))
  result = {"estimator_lite_root": root}
  if not args.tpu_only:
    result["tree"] = run_tree(args, workdir, pythonpath)
  if not args.no_tpu:
    # Imported here: upstream_tpu.py is this script's TPU part, and takes this
    # module (which runs as __main__) as an argument rather than importing it.
    import upstream_tpu  # pylint: disable=g-import-not-at-top
    result["tpu"] = upstream_tpu.run(args, workdir, sys.modules[__name__], pythonpath)
  if result.get("tree") and result.get("tpu"):
    result["totals"] = _grand_totals(result["tree"], result["tpu"])
    for key, label in (("all", "all files"),
                       ("without_missing_estimators", "without the missing estimators' files")):
      counts = result["totals"][key]
      print("total with tpu/ pass A, %s: %d selected, %d passed, %d failed"
            % (label, counts["selected"], counts["passed"], counts["failed"]))
  if args.json:
    with open(args.json, "w") as f:
      json.dump(result, f, indent=1)
  return 0


if __name__ == "__main__":
  sys.exit(main())
