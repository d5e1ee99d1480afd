"""Runs tf.estimator's test files one pytest process each, on tf.estimator 2.15 and here.

The machinery upstream_suite.py (the test tree) and upstream_tpu.py (tpu/)
share. A test is measured in two steps:

  1. `reference_outcomes`: every test of a file runs on tf.estimator 2.15
     itself, in the reference venv (ref_env.py), with the real
     `tensorflow_estimator` package; the outcomes are cached per file, keyed
     by the file's sha256, in a JSON file that later runs pass back in;
  2. `select` keeps the tests that passed there and are in scope (the
     caller's scope table), and `run_selected` runs just those here, against
     estimator_lite through the shim.

How a file runs, the same in both venvs (`CONFTEST`):
  - in its own pytest process: the tpu/ files each define the absl flag
    `test_num_shards`, which absl refuses to define twice, and a file that
    calls disable_v2_behavior() must not change the next file's TensorFlow;
  - absl flags parsed after collection, with the arguments upstream's BUILD
    passes, as absltest.main would have;
  - `tf.compat.v1.disable_v2_behavior()` first for a file whose `__main__`
    calls it (`runs_v1`: what absltest.main ran before the tests);
  - at 26a7dc2 the tests import `tensorflow_estimator.python.estimator.util`'s
    `tf_keras` / `tf_keras_v1` / `tf_keras_v2`, which the 2.15.0 package
    lacks: on 2.15 they are set to tf.keras / tf.compat.v1.keras /
    tf.compat.v2.keras (here the shim maps them onto tf_keras);
  - each test's outcome is appended to a JSON-lines file as it ends, and a
    test that hangs where pytest-timeout cannot interrupt it is killed by
    `run_file` (see there).
"""
import ast
import hashlib
import json
import os
import shutil
import signal
import subprocess
import time

import ref_env

CONFTEST = '''"""How upstream_suite.py runs tf.estimator's tests, one file per pytest process (generated).

UPSTREAM_V1=1: the file's __main__ called disable_v2_behavior().
UPSTREAM_TPU_FORCE_CPU=1 (tpu/ pass B): every TPUEstimator is built with
use_tpu=False. UPSTREAM_FLAGS: the absl flags upstream's BUILD passes, parsed
after collection as absltest.main would. UPSTREAM_SELECT: a JSON list of
"file::Class::test" to keep; UPSTREAM_DONE: a JSON list of those to leave out
(they ran before the process was restarted). UPSTREAM_OUTCOMES: the file each
test's outcome is appended to, one JSON object a line, as it ends.
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


def _read_ids(variable):
  if not os.environ.get(variable):
    return None
  with open(os.environ[variable]) as f:
    return set(json.load(f))


_SELECT = _read_ids("UPSTREAM_SELECT")
_DONE = _read_ids("UPSTREAM_DONE") or set()
_OUTCOMES = os.environ.get("UPSTREAM_OUTCOMES")


def pytest_collection_modifyitems(config, items):
  kept, dropped = [], []
  for item in items:
    keep = (_SELECT is None or item.nodeid in _SELECT) and item.nodeid not in _DONE
    (kept if keep else dropped).append(item)
  items[:] = kept
  config.hook.pytest_deselected(items=dropped)


def pytest_collection_finish(session):
  flags.FLAGS(["test"] + os.environ.get("UPSTREAM_FLAGS", "").split(), known_only=True)


def _record(**entry):
  if _OUTCOMES:
    with open(_OUTCOMES, "a") as f:
      f.write(json.dumps(entry) + "\\n")


def _message(report):
  if report.passed:
    return ""
  longrepr = report.longrepr
  if isinstance(longrepr, tuple):  # a skip: (path, line, reason)
    return str(longrepr[2])
  crash = getattr(longrepr, "reprcrash", None)
  text = crash.message if crash is not None else str(longrepr)
  return text.strip().split("\\n")[0][:300]


def pytest_runtest_logstart(nodeid, location):
  _record(id=nodeid, event="start")


def pytest_runtest_logreport(report):
  # The call's outcome; a setup or teardown only when it did not pass.
  if report.when == "call" or not report.passed:
    _record(id=report.nodeid, event=report.when, outcome=report.outcome,
            message=_message(report))


def pytest_collectreport(report):
  if report.failed:
    _record(id=report.nodeid.split("::")[0] + "::",
            event="collect", outcome="failed", message=_message(report))
'''

# Seconds beyond the per-test timeout that a file may write no outcome before
# its process is killed (collection of a large parameterized file included).
_HANG_GRACE = 120


def runs_v1(source):
  """Whether the file's `if __name__ == '__main__':` block calls disable_v2_behavior()."""
  for node in ast.parse(source).body:
    if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test):
      for child in ast.walk(node):
        if (isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute)
            and child.func.attr == "disable_v2_behavior"):
          return True
  return False


def write_test_dir(directory, source_dir, files, reference):
  """Copies `files` (paths relative to `source_dir`) into `directory`, keeping their
  subdirectories, and writes the conftest (`reference`: the run on 2.15)."""
  for name in files:
    target = os.path.join(directory, name)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    shutil.copy(os.path.join(source_dir, name), target)
  os.makedirs(directory, exist_ok=True)
  with open(os.path.join(directory, "conftest.py"), "w") as f:
    f.write(CONFTEST.format(reference=reference))


def read_outcomes(path):
  """Reads a file's outcome log.

  Returns:
    ({"file::Class::test": (outcome, first line of the message)}, the id of the
    test that started last and has no outcome, or None). The outcome is passed,
    failed or skipped; a collection error is keyed "file::".
  """
  outcomes, running = {}, None
  if not os.path.exists(path):
    return outcomes, running
  with open(path) as f:
    for line in f:
      try:
        entry = json.loads(line)
      except ValueError:  # the last line of a killed process
        continue
      key = entry["id"]
      if entry["event"] == "start":
        running = key
        continue
      if key == running:
        running = None
      previous = outcomes.get(key, ("passed", ""))
      # A failure (call, setup or teardown) wins; then a skip.
      if previous[0] != "failed" and (entry["outcome"] != "passed" or key not in outcomes):
        outcomes[key] = (entry["outcome"], entry.get("message", ""))
  return outcomes, running


def _wait_or_kill(proc, outcomes_path, limit):
  """Waits for `proc`; kills its process group when the outcome log stays unchanged
  for `limit` seconds. Returns whether it was killed."""
  last = time.monotonic()
  size = -1
  while True:
    try:
      proc.wait(timeout=5)
      return False
    except subprocess.TimeoutExpired:
      pass
    current = os.path.getsize(outcomes_path) if os.path.exists(outcomes_path) else 0
    if current != size:
      size, last = current, time.monotonic()
    elif time.monotonic() - last > limit:
      os.killpg(proc.pid, signal.SIGKILL)
      proc.wait()
      return True


def file_env(base, v1, flags=(), **extra):
  """The environment of one file's run: `base`, plus how the conftest runs it (`extra`,
  a pass's switches, last: a pass may set UPSTREAM_V1 itself)."""
  env = dict(base, UPSTREAM_V1="1" if v1 else "0", UPSTREAM_FLAGS=" ".join(flags),
             TF_CPP_MIN_LOG_LEVEL="3")
  env.update(extra)
  return env


def run_file(python, directory, name, env, timeout, tag="", extra=()):
  """Runs one test file (relative to `directory`) in its own pytest process.

  A test that blocks where pytest-timeout's signal cannot reach it (a
  Session.run waiting on an empty queue keeps the main thread in C++) would
  stop the whole file: when the outcome log stays unchanged for `timeout` +
  _HANG_GRACE seconds the process is killed, that test counts as failed, and
  the file runs again without the tests that have an outcome.

  Args:
    python: the interpreter (its venv's pytest and pytest-timeout).
    directory: the test directory (`write_test_dir`), pytest's rootdir.
    name: the file, relative to `directory`.
    env: the environment (`file_env`).
    timeout: seconds before one test fails (pytest-timeout).
    tag: prefix of the log files' names (e.g. the pass).
    extra: more pytest arguments (-k, -x).

  Returns:
    (outcomes as `read_outcomes`' first value, seconds, the last line pytest printed).
  """
  stem = tag + name[:-3].replace("/", "__")
  outcomes_path = os.path.join(directory, "outcomes_%s.jsonl" % stem)
  done_path = os.path.join(directory, "done_%s.json" % stem)
  if os.path.exists(outcomes_path):
    os.remove(outcomes_path)
  with open(done_path, "w") as f:
    json.dump([], f)
  # A class that fails to build (its __init__ given a name the shim lacks)
  # fails its own tests, not the file's others.
  command = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", directory,
             "-o", "addopts=", "--timeout", str(timeout), "--continue-on-collection-errors",
             *extra, name]
  env = dict(env, UPSTREAM_OUTCOMES=outcomes_path, UPSTREAM_DONE=done_path)
  start = time.monotonic()
  log_path = os.path.join(directory, "log_%s.txt" % stem)
  with open(log_path, "w") as log:
    while True:
      proc = subprocess.Popen(command, cwd=directory, env=env, stdout=log,
                              stderr=subprocess.STDOUT, start_new_session=True)
      killed = _wait_or_kill(proc, outcomes_path, timeout + _HANG_GRACE)
      outcomes, running = read_outcomes(outcomes_path)
      if not killed:
        break
      message = "hung: no outcome in %d s, process killed" % (timeout + _HANG_GRACE)
      if running is None:  # before the first test, or between two
        outcomes.setdefault(name + "::", ("failed", message))
        break
      with open(outcomes_path, "a") as f:
        f.write(json.dumps({"id": running, "event": "call", "outcome": "failed",
                            "message": message}) + "\n")
      outcomes[running] = ("failed", message)
      with open(done_path, "w") as f:
        json.dump(sorted(outcomes), f)
      log.write("\n[upstream_runner] %s: %s; running the rest again\n" % (running, message))
      log.flush()
  seconds = time.monotonic() - start
  with open(log_path) as f:
    lines = [line.strip() for line in f if line.strip()]
  return outcomes, seconds, lines[-1] if lines else ""


def sha256(path):
  with open(path, "rb") as f:
    return hashlib.sha256(f.read()).hexdigest()


def reference_outcomes(source_dir, files, directory, cache_path, python, timeout, passes,
                       flags=None, label="tf.estimator 2.15"):
  """2.15's outcome of every test of `files` in each pass, from the cache or run now.

  Args:
    source_dir: the upstream directory the files are relative to.
    files: the test files.
    directory: where to copy and run them (a directory of its own).
    cache_path: the JSON cache: read, and written after each file run.
    python: the reference interpreter, or None for ref_env.ensure_ref_python().
    timeout: seconds before one test fails.
    passes: {pass name: {environment variable: value}} (the conftest's switches).
    flags: {file: absl arguments its BUILD passes}.
    label: printed before each file's line.

  Returns:
    The cache: {"versions": ..., "files": {file: {"sha256", "v1", "timeout",
    "passes": {pass: {"file::Class::test": [outcome, message]}}, "seconds"}}}.
  """
  cache = {"files": {}}
  if os.path.exists(cache_path):
    with open(cache_path) as f:
      cache = json.load(f)
  # A file whose source changed runs again in every pass; otherwise only the
  # passes the cache lacks run.
  todo = {}
  for name in files:
    cached = cache["files"].get(name)
    if not cached or cached.get("sha256") != sha256(os.path.join(source_dir, name)):
      todo[name] = list(passes)
    elif set(passes) - set(cached["passes"]):
      todo[name] = [p for p in passes if p not in cached["passes"]]
  stale = list(todo)
  if not stale:
    print("%s's outcomes: from %s" % (label, cache_path))
    return cache
  python = python or ref_env.ensure_ref_python()
  ok, versions = ref_env.probe(python)
  if not ok:
    raise SystemExit("the reference interpreter %s cannot import tf.estimator 2.15: %s"
                     % (python, versions))
  ref_env.ensure_packages(python, ref_env.TEST_REQUIREMENTS)
  cache["python"], cache["versions"] = python, versions
  write_test_dir(directory, source_dir, stale, reference=True)
  for name in stale:
    with open(os.path.join(directory, name)) as f:
      v1 = runs_v1(f.read())
    entry = cache["files"].get(name) if len(todo[name]) < len(passes) else None
    entry = entry or {"sha256": sha256(os.path.join(directory, name)), "v1": v1,
                      "passes": {}, "seconds": {}, "timeout": timeout}
    for pass_name in todo[name]:
      switches = passes[pass_name]
      env = file_env(ref_env.subprocess_env(), v1, (flags or {}).get(name, ()), **switches)
      outcomes, seconds, tail = run_file(python, directory, name, env, timeout,
                                         tag=pass_name + "_")
      entry["passes"][pass_name] = outcomes
      entry["seconds"][pass_name] = round(seconds, 1)
      print("%s, pass %s, %s: %s (%.0f s)" % (label, pass_name, name, tail, seconds),
            flush=True)
    cache["files"][name] = entry
    # Saved after each file: an interrupted run keeps what it measured.
    with open(cache_path, "w") as f:
      json.dump(cache, f, indent=1, sort_keys=True)
  return cache


# tf.TestCase's `test_session` is a deprecated helper, not a test: TensorFlow
# skips it ("Not a test.") under TF2 behaviour, but under
# disable_v2_behavior() it runs and passes. pytest (like unittest) collects it
# from every test class; it is not counted.
NOT_TESTS = {"test_session"}


def source_method(test_name, methods):
  """The test method a collected test comes from: absl's parameterized tests are
  named <method><suffix>."""
  candidates = [m for m in methods if test_name.startswith(m)]
  return max(candidates, key=len) if candidates else None


def select(reference, table, reasons_for=set):
  """Selects a file's tests: those that passed on 2.15 and are in scope.

  Args:
    reference: 2.15's outcomes of the file ({"file::Class::test": (outcome, message)}).
    table: its scope, {(class, test method): out-of-scope reasons}.
    reasons_for: maps a test's reasons to those that count (in this pass).

  Returns:
    ((collected, passed on 2.15, of those out of scope), selected ids,
    {id: reasons} of the out-of-scope ones that passed on 2.15, the number of
    collected items that are not tests). A collected test whose method the
    table lacks is out of scope ("unresolved").
  """
  methods = {method for (_, method) in table}
  collected = passed = 0
  selected, out, not_tests = [], {}, 0
  for key, (outcome, _) in sorted(reference.items()):
    if key.endswith("::"):  # the file's: a collection error, or a hang outside a test
      continue
    _, class_name, test = key.split("::")
    if test in NOT_TESTS:
      not_tests += 1
      continue
    reasons = table.get((class_name, source_method(test, methods)), {"unresolved"})
    collected += 1
    if outcome != "passed":
      continue
    passed += 1
    counted = reasons_for(reasons)
    if counted:
      out[key] = sorted(counted)
    else:
      selected.append(key)
  return (collected, passed, len(out)), selected, out, not_tests


def run_selected(python, directory, name, env, selected, timeout, tag="", k=None, x=False):
  """Runs a file's selected tests; returns (passed ids, ["id | outcome: message"], seconds).

  A selected test with no outcome (its file failed to import) fails with the
  collection error; with `k`, tests it deselects are not counted.
  """
  if not selected:
    return [], [], 0.0
  select_path = os.path.join(directory, "select_%s%s.json"
                             % (tag, name[:-3].replace("/", "__")))
  with open(select_path, "w") as f:
    json.dump(selected, f)
  extra = (["-k", k] if k else []) + (["-x"] if x else [])
  outcomes, seconds, _ = run_file(python, directory, name,
                                  dict(env, UPSTREAM_SELECT=select_path), timeout, tag, extra)
  errors = [message for key, (_, message) in outcomes.items() if key.endswith("::")]
  passed, failed = [], []
  for key in selected:
    if key in outcomes:
      outcome, message = outcomes[key]
    elif k or x:  # deselected by -k, or not run after -x stopped: not counted
      continue
    else:
      outcome, message = "failed", "not run: %s" % (errors[0] if errors else "not collected")
    if outcome == "passed":
      passed.append(key)
    else:
      failed.append("%s | %s: %s" % (key, outcome, message))
  return passed, failed, seconds


TABLE_FIELDS = ("collected", "passed_215", "out_of_scope", "selected", "passed", "failed",
                "seconds")


def print_table(rows, width=42):
  """Prints per-file rows (file, then TABLE_FIELDS' values) and their total."""
  header = ("file", "collected", "2.15 pass", "out of scope", "selected", "passed", "failed")
  print(("%-" + str(width) + "s %9s %9s %12s %8s %6s %6s") % header)
  total = ("total",) + tuple(sum(row[i] for row in rows) for i in range(1, 7))
  for row in list(rows) + [total]:
    print(("%-" + str(width) + "s %9d %9d %12d %8d %6d %6d") % tuple(row[:7]))
