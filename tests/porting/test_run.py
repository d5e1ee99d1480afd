"""Unmodified tf.estimator programs on estimator_lite: `python -m estimator_lite.run` and `install()`.

The programs are tests/porting/corpus/, one per way a tf.estimator 2.15
program reached tf.estimator (`tf.estimator.X`, `from tensorflow.estimator
import ...`, `import tensorflow_estimator as tfe`, `v1 = tf.compat.v1`,
`tf.keras.estimator.model_to_estimator`, a TF_CONFIG cluster program, ...).
Each prints a final `RESULT {json}` line; tf.estimator 2.15's lines are
recorded in corpus_expected_2.15.json (make_corpus_reference.py).

Every program runs in its own process, as a user runs it; the processes run
side by side (a small pool) so the file stays short on two cores. Each is
bounded by a timeout and killed by its own PID.
"""
import concurrent.futures
import json
import os
import subprocess
import sys
import textwrap

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
# The cluster tests' bounded launcher helpers (stop by the PIDs we started).
sys.path.insert(0, os.path.join(REPO, "tests", "cluster"))
import test_roles as roles  # pylint: disable=g-import-not-at-top,wrong-import-position
CORPUS = os.path.join(HERE, "corpus")
PROGRAMS = sorted(p for p in os.listdir(CORPUS) if p.endswith(".py"))
with open(os.path.join(HERE, "corpus_expected_2.15.json")) as _f:
  EXPECTED = json.load(_f)
CLUSTER_PROGRAM = "cluster_train_and_evaluate.py"
TIMEOUT_SECS = 300

# tf.estimator 2.15's module of each class -> estimator_lite's.
_MODULE_PREFIXES = (("tensorflow_estimator.python.estimator.", "estimator_lite."),)


def _child_env(**extra):
  env = dict(os.environ, PYTHONPATH=os.pathsep.join(
      [REPO] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
  for name in ("TF_CONFIG", "TF_USE_LEGACY_KERAS"):
    env.pop(name, None)  # a user's fresh program (importing estimator_lite here set the latter)
  env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
  env.update(extra)
  return env


def _run(command, cwd, env=None):
  """Runs `command` to completion (killed after TIMEOUT_SECS); returns CompletedProcess."""
  return subprocess.run(command, cwd=cwd, env=env or _child_env(), capture_output=True,
                        text=True, timeout=TIMEOUT_SECS, check=False, stdin=subprocess.DEVNULL)


def result_of(output):
  lines = [line for line in output.splitlines() if line.startswith("RESULT ")]
  assert lines, output[-3000:]
  return json.loads(lines[-1][len("RESULT "):])


def _as_estimator_lite(expected):
  expected = dict(expected)
  for old, new in _MODULE_PREFIXES:
    expected["estimator_module"] = expected["estimator_module"].replace(old, new)
  return expected


# -- every job runs once, side by side --------------------------------------------


def _script_job(program, tmp):
  model_dir = os.path.join(tmp, "script", program[:-3])
  args = ["--model_dir", model_dir] if program == CLUSTER_PROGRAM else [model_dir]
  done = _run([sys.executable, "-m", "estimator_lite.run", program, *args], cwd=CORPUS)
  return done, model_dir


def _module_job(program, tmp):
  # `-m name` finds the program through sys.path[0], the current directory.
  model_dir = os.path.join(tmp, "module", program[:-3])
  done = _run([sys.executable, "-m", "estimator_lite.run", "-m", program[:-3], model_dir],
              cwd=CORPUS)
  return done, model_dir


# A notebook: TensorFlow imported, tf.keras used, then install() (twice), then
# the corpus programs' code, each as its own __main__, in this one process.
_INSTALL_PROGRAMS = ("keras_model_to_estimator.py", "tensorflow_estimator_alias.py",
                     "from_export_import_serving_input_receiver.py",
                     "from_tensorflow_estimator_import_names.py")
_INSTALL_DRIVER = textwrap.dedent("""\
    import json, logging, os, runpy, sys
    os.environ["TF_USE_LEGACY_KERAS"] = "1"  # tf.keras is tf-keras, as on TF 2.16+ for Keras 2
    import tensorflow as tf
    tf.keras.layers.Dense(1)  # tf-keras is loaded before install()
    records = []
    class Keep(logging.Handler):
      def emit(self, record):
        records.append(record.getMessage())
    logging.getLogger("tensorflow").addHandler(Keep())
    logging.getLogger("tensorflow").setLevel(logging.INFO)
    import estimator_lite
    estimator_lite.install()
    estimator_lite.install()
    print("LOGGED " + json.dumps([r for r in records if "install" in r]))
    corpus, out = sys.argv[1], sys.argv[2]
    for program in sys.argv[3:]:
      sys.argv = [program, os.path.join(out, program[:-3])]
      runpy.run_path(os.path.join(corpus, program), run_name="__main__")
    try:
      from tensorflow_estimator.python.estimator import estimator as estimator_lib
    except ImportError as e:
      print("PRIVATE " + json.dumps(str(e)))
    """)


def _install_job(tmp):
  driver = os.path.join(tmp, "notebook.py")
  with open(driver, "w") as f:
    f.write(_INSTALL_DRIVER)
  return _run([sys.executable, driver, CORPUS, os.path.join(tmp, "install"),
               *_INSTALL_PROGRAMS], cwd=tmp)


def _launcher_job(tmp):
  """chief, worker, ps and evaluator, each `python -m estimator_lite.run PROGRAM`."""
  model_dir = os.path.join(tmp, "cluster")
  status, output = roles.run_launcher(
      tmp, ["--ps", "1", "--workers", "1", "--evaluator", "--grace-secs", "120"],
      ["--model_dir", model_dir], program=("-m", "estimator_lite.run", CLUSTER_PROGRAM),
      cwd=CORPUS, env=_child_env(), timeout_secs=TIMEOUT_SECS)
  return status, output.decode(errors="replace"), model_dir


_MODULE_FORM = ("tf_estimator.py", "tensorflow_estimator_alias.py")


@pytest.fixture(scope="module")
def jobs(tmp_path_factory):
  """Starts every program run at once (3 at a time); name -> future."""
  tmp = str(tmp_path_factory.mktemp("porting"))
  pool = concurrent.futures.ThreadPoolExecutor(3)
  futures = {"launcher": pool.submit(_launcher_job, tmp)}  # slowest first
  futures["install"] = pool.submit(_install_job, tmp)
  for program in PROGRAMS:
    futures[("script", program)] = pool.submit(_script_job, program, tmp)
  for program in _MODULE_FORM:
    futures[("module", program)] = pool.submit(_module_job, program, tmp)
  yield futures
  pool.shutdown(wait=True)


# -- the tests ---------------------------------------------------------------------


@pytest.mark.parametrize("program", PROGRAMS)
def test_unmodified_program_runs_on_estimator_lite(jobs, program):
  done, model_dir = jobs[("script", program)].result()
  assert done.returncode == 0, done.stderr[-4000:]
  result = result_of(done.stdout)
  expected = _as_estimator_lite(EXPECTED[program])
  # estimator_lite's class, reached through the program's own import form;
  # the model trained in the directory given on its command line.
  assert result["estimator_module"] == expected["estimator_module"]
  assert result["estimator_module"].startswith("estimator_lite.")
  assert any(name.startswith("model.ckpt-") for name in os.listdir(model_dir)), model_dir
  assert result == expected  # tf.estimator 2.15's numbers, exports, names


@pytest.mark.parametrize("program", _MODULE_FORM)
def test_module_form_runs_the_same_program(jobs, program):
  done, model_dir = jobs[("module", program)].result()
  assert done.returncode == 0, done.stderr[-4000:]
  script_done, _ = jobs[("script", program)].result()
  assert result_of(done.stdout) == result_of(script_done.stdout)
  assert os.path.isdir(model_dir)


def test_install_in_a_running_process(jobs):
  done = jobs["install"].result()
  assert done.returncode == 0, done.stderr[-4000:]
  # One line says what was installed, however often install() is called.
  logged = json.loads(next(l for l in done.stdout.splitlines() if l.startswith("LOGGED "))[7:])
  assert len(logged) == 1 and "tf.estimator" in logged[0], logged
  results = [json.loads(l[7:]) for l in done.stdout.splitlines() if l.startswith("RESULT ")]
  assert len(results) == len(_INSTALL_PROGRAMS), done.stdout[-3000:]
  for program, result in zip(_INSTALL_PROGRAMS, results):
    script_done, _ = jobs[("script", program)].result()
    assert result == result_of(script_done.stdout), program
  # tf.estimator's private modules have no counterpart: the error says what to import.
  private = json.loads(next(l for l in done.stdout.splitlines() if l.startswith("PRIVATE "))[8:])
  assert "tensorflow_estimator.python.estimator.estimator" in private
  assert "from estimator_lite import Estimator" in private


def test_launcher_runs_the_program_in_every_role(jobs):
  status, output, model_dir = jobs["launcher"].result()
  assert status is not None, f"cluster still running after {TIMEOUT_SECS} s:\n{output[-6000:]}"
  assert status == 0, output[-6000:]
  summary = [l for l in output.splitlines() if l.startswith("[launch] ")][-1]
  for task in ("chief:0", "worker:0", "evaluator:0"):
    assert f"{task} exited with 0" in summary, summary
    assert f"[{task}] task {task.split(':')[0]}:0 finished" in output, output[-6000:]
  assert "ps:0 done" in summary, summary
  chief = [l[len("[chief:0] "):] for l in output.splitlines() if l.startswith("[chief:0] RESULT ")]
  result = result_of("\n".join(chief))
  # The chief saw the cluster TF_CONFIG described and trained to max_steps
  # (the worker may add steps: asynchronous training, so no fixed loss here).
  assert result["estimator_module"] == "estimator_lite.canned.linear"
  assert result["num_ps"] == 1 and result["num_workers"] == 2
  assert result["global_step"] >= 5
  assert any(name.startswith("model.ckpt-") for name in os.listdir(model_dir))


# -- the runner's own command line, as plain python's ------------------------------

_PROBE = textwrap.dedent("""\
    import json, sys
    import __main__
    print("PROBE " + json.dumps({
        "argv": sys.argv, "path0": sys.path[0], "name": __name__, "file": __file__,
        "spec": getattr(__spec__, "name", None), "package": __package__,
        "main_module": sys.modules["__main__"] is __main__}))
    def fail():
      raise ValueError("boom")
    if sys.argv[1] == "raise":
      fail()
    sys.exit(int(sys.argv[1]))
    """)


def test_program_sees_what_plain_python_gives_it(tmp_path):
  package = tmp_path / "pkg"
  package.mkdir()
  (package / "__init__.py").write_text("")
  (package / "probe.py").write_text(_PROBE)
  (tmp_path / "probe.py").write_text(_PROBE)
  # argv, sys.path[0], __main__ and the exit status (script form); the
  # traceback of an uncaught exception (module form) -- both in the two forms
  # would cost two more TensorFlow imports.
  cases = [["probe.py", "3", "--flag", "x y"], ["-m", "pkg.probe", "raise"]]
  with concurrent.futures.ThreadPoolExecutor(2) as pool:
    runs = list(pool.map(
        lambda args: (_run([sys.executable, *args], cwd=str(tmp_path)),
                      _run([sys.executable, "-m", "estimator_lite.run", *args],
                           cwd=str(tmp_path))), cases))
  for (plain, lite), args in zip(runs, cases):
    assert lite.returncode == plain.returncode, (args, lite.stderr[-3000:])
    assert lite.stdout == plain.stdout, args
  assert runs[0][1].returncode == 3
  assert runs[1][1].returncode == 1
  plain_tb = runs[1][0].stderr[runs[1][0].stderr.index("Traceback"):]
  assert runs[1][1].stderr.endswith(plain_tb), runs[1][1].stderr[-3000:]


def test_help_answers_without_tensorflow(tmp_path):
  # A `tensorflow` that fails on import comes first on sys.path: --help (and
  # the usage error) must not need it.
  (tmp_path / "tensorflow.py").write_text("raise ImportError('tensorflow was imported')\n")
  env = _child_env(PYTHONPATH=os.pathsep.join([str(tmp_path), REPO]))
  done = _run([sys.executable, "-m", "estimator_lite.run", "--help"], cwd=str(tmp_path), env=env)
  assert done.returncode == 0, done.stderr
  assert "python -m estimator_lite.run SCRIPT" in done.stdout
  done = _run([sys.executable, "-m", "estimator_lite.run"], cwd=str(tmp_path), env=env)
  assert done.returncode == 2 and "usage:" in done.stderr, done.stderr
