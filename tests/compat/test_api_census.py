"""Every public name of tf.estimator 2.15, in every spelling a program uses, is estimator_lite's.

The list of names (estimator_lite/_porting/tf_estimator_2_15_api.json) was
written in the 2.15 venv by tests/reference/make_public_api_fixture.py: every
attribute path under tf.estimator, tf.compat.v1.estimator,
tf.compat.v2.estimator and the Keras bridges, with what object each was.
api_census_program.py resolves each path in a fresh interpreter, as
`tf.a.b` attribute chains, `from tensorflow.a import b`, `import
tensorflow.a` for modules, and the estimator_lite spellings the migration
tool writes, under each way estimator_lite is put in place (install() before
or after TensorFlow, with tf.compat touched or not, `python -m
estimator_lite.run`, after `import tensorflow.compat.v1 as tf`, nothing at
all). A program migrated by
`python -m estimator_lite.migrate` that spells every name resolves them too.

Each must hold:
  * every name resolves, in every spelling;
  * names that were one object in 2.15 are one object here, whichever
    spelling reached them; a module is a module, a class a class;
  * what tf.estimator implemented is estimator_lite's (TensorFlow's own
    objects, such as the export outputs' base, may stay TensorFlow's);
  * the names tf.estimator removed before 2.15 (BoostedTrees*,
    SavedModelEstimator) raise the error that says what to use instead: an
    AttributeError by attribute, an ImportError by `from ... import`, and the
    migration tool leaves them as they were and reports them.
"""
import collections
import json
import os
import re
import subprocess
import sys

import pytest

from estimator_lite._porting import names

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAM = os.path.join(HERE, "api_census_program.py")
API_LIST = names._PUBLIC_API_FILE  # pylint: disable=protected-access
SCENARIOS = ("install-first", "tf-first", "tf-compat-first", "tf-v1-first", "run", "lite")
TIMEOUT_S = 300
NOT_PROVIDED_TEXT = "is not part of estimator_lite"

sys.path.insert(0, HERE)
import api_census_program  # pylint: disable=g-import-not-at-top,wrong-import-position


def _api():
  with open(API_LIST) as f:
    return json.load(f)


def _command(scenario, out):
  if scenario == "run":
    return [sys.executable, "-m", "estimator_lite.run", PROGRAM, API_LIST, scenario, out]
  return [sys.executable, PROGRAM, API_LIST, scenario, out]


@pytest.fixture(scope="module")
def census(tmp_path_factory):
  """{scenario: the program's results}, the scenarios run side by side."""
  workdir = tmp_path_factory.mktemp("census")
  runs = {}
  for scenario in SCENARIOS:
    out = str(workdir / f"{scenario}.json")
    log = open(workdir / f"{scenario}.log", "wb")  # pylint: disable=consider-using-with
    runs[scenario] = (out, log, subprocess.Popen(_command(scenario, out), stdout=log,
                                                 stderr=subprocess.STDOUT))
  results = {}
  try:
    for scenario, (out, log, process) in runs.items():
      process.wait(timeout=TIMEOUT_S)
      log.close()
      assert process.returncode == 0, (
          scenario, (workdir / f"{scenario}.log").read_text()[-3000:])
      with open(out) as f:
        results[scenario] = json.load(f)
  finally:
    for _, log, process in runs.values():
      if process.poll() is None:
        process.kill()
        process.wait(timeout=30)
      log.close()
  return results


def _failures(results, api):
  """What breaks the module docstring's rules in one process's results."""
  failures = []
  ids_by_object = collections.defaultdict(set)
  for path, outcomes in results["names"].items():
    listed = api["names"][path]
    for spelling, outcome in outcomes.items():
      where = f"{spelling} {path}"
      if "error" in outcome:
        failures.append(f"{where}: {outcome['error']}")
        continue
      ids_by_object[listed["object"]].add(outcome["id"])
      if (listed["kind"] == "module") != outcome["is_module"]:
        failures.append(f"{where}: a module in 2.15, here {outcome}")
      if listed["kind"] in ("type", "ABCMeta") and not outcome["is_class"]:
        failures.append(f"{where}: a class in 2.15, here {outcome}")
      implemented_by_tf_estimator = listed["object"].startswith("tensorflow_estimator")
      if implemented_by_tf_estimator and not str(outcome["module"]).startswith(
          "estimator_lite"):
        failures.append(f"{where}: resolves to {outcome['module']}, not estimator_lite")
  for obj, ids in ids_by_object.items():
    # tf.keras.estimator's module, reached by attribute, is tf-keras's own
    # module, which install() turns into a forwarder while tf-keras initialises
    # (estimator_lite.keras cannot be imported then); imported, it is
    # estimator_lite.keras itself. Its one name, model_to_estimator, is the
    # same function either way (checked as a name of its own).
    if len(ids) > 1 and not obj.startswith("keras.api."):
      failures.append(f"2.15's one object {obj} is {len(ids)} objects here")
  for path, outcomes in results["removed_before_2_15"].items():
    for spelling, outcome in outcomes.items():
      error = outcome.get("error", "")
      expected = "ImportError" if spelling.endswith("from") else "AttributeError"
      if not error.startswith(expected) or NOT_PROVIDED_TEXT not in error:
        failures.append(f"removed {spelling} {path}: {error or 'resolved'}")
  return failures


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_2_15_name_resolves_to_estimator_lite_in_every_spelling(census, scenario):
  api = _api()
  results = census[scenario]
  assert set(results["names"]) == set(api["names"])
  assert len(api["names"]) > 240  # the whole list, not a part of it
  failures = _failures(results, api)
  assert not failures, "\n".join(failures[:40])


def test_the_spellings_of_one_name_agree_across_scenarios(census):
  # Which module each name comes from does not depend on how estimator_lite
  # was put in place.
  homes = {}
  for results in census.values():
    for path, outcomes in results["names"].items():
      for spelling, outcome in outcomes.items():
        # tf.keras.estimator's module: tf-keras's forwarder or estimator_lite.keras,
        # depending on whether tf-keras was loaded first (see _failures).
        if _api()["names"][path]["object"].startswith("keras.api."):
          continue
        homes.setdefault((path, spelling), set()).add(
            (outcome.get("module"), outcome.get("is_module")))
  disagreeing = {key: value for key, value in homes.items() if len(value) > 1}
  assert not disagreeing, disagreeing


def _program_spelling_every_name(api):
  """Source that names every 2.15 path tf-style (attribute, from-import, import-as)."""
  lines = ["import json", "import sys", "import tensorflow as tf",
           "sys.path.insert(0, %r)" % HERE, "import api_census_program", "found = {}"]
  for index, (path, entry) in enumerate(sorted(api["names"].items())):
    dotted = "tensorflow" + path[len("tf"):]
    lines.append(f"found[{path + ' attribute'!r}] = {path}")
    module, name = dotted.rsplit(".", 1)
    lines.append(f"from {module} import {name} as _name{index}")
    lines.append(f"found[{path + ' from'!r}] = _name{index}")
    if entry["kind"] == "module":
      lines.append(f"import {dotted} as _module{index}")
      lines.append(f"found[{path + ' import'!r}] = _module{index}")
  lines.append("json.dump({'names': {key: api_census_program.describe(value) "
               "for key, value in found.items()}}, open(sys.argv[1], 'w'))")
  return "\n".join(lines) + "\n"


def _removed_program(api):
  lines = ["import tensorflow as tf"]
  for path in sorted(api["removed_before_2_15"]):
    module, name = ("tensorflow" + path[len("tf"):]).rsplit(".", 1)
    lines += [f"value = {path}", f"from {module} import {name}"]
  return "\n".join(lines) + "\n"


def _migrate(path):
  return subprocess.run([sys.executable, "-m", "estimator_lite.migrate", str(path)],
                        capture_output=True, text=True, timeout=TIMEOUT_S, check=True)


def test_a_migrated_program_resolves_every_name_and_leaves_removed_ones_reported(tmp_path):
  api = _api()
  program = tmp_path / "every_name.py"
  program.write_text(_program_spelling_every_name(api))
  _migrate(program)
  # No tf.estimator spelling is left outside the keys' strings.
  left = re.findall(r"(?<![\w'])(?:tf|tensorflow)(?:\.compat\.v[12])?(?:\.keras)?\.estimator\b",
                    program.read_text())
  assert not left, left[:5]
  out = tmp_path / "found.json"
  run = subprocess.run([sys.executable, str(program), str(out)], capture_output=True,
                       text=True, timeout=TIMEOUT_S, check=False)
  assert run.returncode == 0, run.stderr[-3000:]
  with open(out) as f:
    found = json.load(f)["names"]
  # The same checks, on the migrated program's one process.
  results = {"names": collections.defaultdict(dict), "removed_before_2_15": {}}
  for key, outcome in found.items():
    path, spelling = key.rsplit(" ", 1)
    results["names"][path][spelling] = outcome
  failures = _failures(results, api)
  assert not failures, "\n".join(failures[:40])
  assert set(results["names"]) == set(api["names"])

  removed = tmp_path / "removed.py"
  source = _removed_program(api)
  removed.write_text(source)
  report = _migrate(removed)
  assert removed.read_text() == source  # every line left as it was
  listed = report.stdout + report.stderr
  for path in api["removed_before_2_15"]:
    assert f": {path}\n" in listed, path
  assert f"Could not rewrite ({2 * len(api['removed_before_2_15'])})" in listed
  assert listed.count(NOT_PROVIDED_TEXT) == 2 * len(api["removed_before_2_15"])
  assert "TensorFlow Decision Forests" in listed
