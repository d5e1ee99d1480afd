"""Finds, or creates, the reference environment: TensorFlow 2.15 + tf.estimator.

`tensorflow-estimator` 2.15 needs `tensorflow<2.16` and Python <= 3.11, so it
can never share a venv with estimator_lite's current TensorFlow: parity checks,
fixtures and benchmarks run it in a separate venv, by default
`~/.cache/estimator_lite/ref-venv-2.15` (override with the
ESTIMATOR_LITE_REF_VENV environment variable or the `venv_dir` argument).

    python tests/reference/ref_env.py            # print the interpreter, create if missing
    python tests/reference/ref_env.py --check    # print it, never create (exit 1 if missing)

From Python:

    import ref_env
    python = ref_env.ensure_ref_python()        # creates the venv when missing
    python = ref_env.find_ref_python()         # None when missing

Creation runs `python3.11 -m venv DIR` and `DIR/bin/python -m pip install
tensorflow-cpu==2.15.1 tensorflow-estimator==2.15.0 "numpy<2"` (about 300 MB of
downloads), printing each command; it fails with RefEnvError carrying pip's
output. `ensure_packages(python, TEST_REQUIREMENTS)` adds, once, what
tf.estimator's own tests need besides (upstream_suite.py calls it).
"""
import contextlib
import os
import shutil
import subprocess
import sys
import time

DEFAULT_VENV_DIR = os.path.join("~", ".cache", "estimator_lite", "ref-venv-2.15")
VENV_ENV_VAR = "ESTIMATOR_LITE_REF_VENV"
PYTHON_ENV_VAR = "ESTIMATOR_LITE_REF_PYTHON"  # a python3.11 to build the venv with
REQUIREMENTS = ("tensorflow-cpu==2.15.1", "tensorflow-estimator==2.15.0",
                "numpy<2")
TF_VERSION_PREFIX = "2.15."
# What tf.estimator's own tests need beyond tf.estimator (upstream_suite.py):
# pandas for the pandas_io tests (a version of numpy<2's time), portpicker for
# the in-process clusters of the distribute tests (TensorFlow's
# multi_worker_test_base picks their ports with it), scikit-learn for
# kmeans_test.py (its reference clustering).
TEST_REQUIREMENTS = ("pandas<2.2", "portpicker", "scikit-learn")

# Prints the requirements (argv[1:]) that the interpreter's installed
# distributions do not satisfy, one a line.
_MISSING = ("import sys, importlib.metadata as md; "
            "from packaging.requirements import Requirement\n"
            "for text in sys.argv[1:]:\n"
            "  r = Requirement(text)\n"
            "  try:\n"
            "    ok = r.specifier.contains(md.version(r.name), prereleases=True)\n"
            "  except md.PackageNotFoundError:\n"
            "    ok = False\n"
            "  if not ok: print(text)")

# Prints the versions; fails (rc != 0) when tf.estimator is not usable.
_PROBE = ("import os; os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3'); "
          "import importlib.metadata as md, tensorflow as tf, numpy; "
          "assert hasattr(tf, 'estimator') and tf.estimator.Estimator; "
          "print(tf.__version__, md.version('tensorflow-estimator'), numpy.__version__)")


# Variables of the caller's environment that would break the reference
# interpreter: TF_USE_LEGACY_KERAS=1 (set by importing estimator_lite) makes TF
# 2.15 look for the tf_keras package, which the reference venv does not have;
# PYTHONPATH/PYTHONHOME/VIRTUAL_ENV point at the current venv's packages.
_FOREIGN_VARS = ("TF_USE_LEGACY_KERAS", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")


def subprocess_env(base=None, **extra):
  """Environment for running the reference interpreter: `base` (default
  os.environ) without the variables of the current venv, plus `extra`."""
  env = dict(os.environ if base is None else base)
  for name in _FOREIGN_VARS:
    env.pop(name, None)
  env.update(extra)
  return env


class RefEnvError(RuntimeError):
  """The reference venv is missing or broken and could not be (re)created."""


def venv_dir(path=None):
  """The reference venv directory: `path`, $ESTIMATOR_LITE_REF_VENV, or the default."""
  path = path or os.environ.get(VENV_ENV_VAR) or DEFAULT_VENV_DIR
  return os.path.abspath(os.path.expanduser(path))


def venv_python(path=None):
  return os.path.join(venv_dir(path), "bin", "python")


def probe(python, timeout=300):
  """Returns (ok, output) of importing TF + tf.estimator with `python`."""
  if not os.path.exists(python):
    return False, f"{python} does not exist"
  try:
    proc = subprocess.run([python, "-c", _PROBE], capture_output=True,
                          text=True, timeout=timeout, env=subprocess_env())
  except (OSError, subprocess.TimeoutExpired) as e:
    return False, str(e)
  out = (proc.stdout + proc.stderr).strip()
  if proc.returncode != 0:
    return False, out
  versions = proc.stdout.split()
  if not versions or not versions[0].startswith(TF_VERSION_PREFIX):
    return False, f"expected TensorFlow {TF_VERSION_PREFIX}x, found: {out}"
  return True, proc.stdout.strip()


def find_ref_python(path=None):
  """The reference venv's python when it exists and imports tf.estimator 2.15, else None."""
  python = venv_python(path)
  ok, _ = probe(python)
  return python if ok else None


def _find_base_python():
  """A Python 3.11 interpreter to create the venv with."""
  candidates = [os.environ.get(PYTHON_ENV_VAR), shutil.which("python3.11")]
  if sys.version_info[:2] == (3, 11):
    candidates.append(sys.executable)
  for candidate in candidates:
    if candidate and os.path.exists(candidate):
      return candidate
  raise RefEnvError(
      "creating the reference venv needs Python 3.11 (tensorflow 2.15 has no "
      "wheels for newer Pythons): install python3.11 or set "
      f"{PYTHON_ENV_VAR}=/path/to/python3.11")


@contextlib.contextmanager
def _lock(directory):
  """Serialises creation between processes (e.g. pytest-xdist workers)."""
  os.makedirs(os.path.dirname(directory), exist_ok=True)
  lock_path = directory.rstrip(os.sep) + ".lock"
  with open(lock_path, "w") as lock_file:
    try:
      import fcntl  # pylint: disable=g-import-not-at-top
      fcntl.flock(lock_file, fcntl.LOCK_EX)
    except ImportError:  # not POSIX: no lock
      pass
    yield


def _run(cmd, log, timeout):
  log("$ " + " ".join(cmd))
  start = time.monotonic()
  try:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          env=subprocess_env())
  except subprocess.TimeoutExpired as e:
    raise RefEnvError(f"`{' '.join(cmd)}` timed out after {timeout} s:\n"
                      f"{e.stdout or ''}{e.stderr or ''}") from e
  if proc.returncode != 0:
    raise RefEnvError(f"`{' '.join(cmd)}` failed (exit {proc.returncode}):\n"
                      f"{proc.stdout}{proc.stderr}")
  log(f"  ... done in {time.monotonic() - start:.1f} s")
  return proc


def ensure_ref_python(path=None, log=print, timeout=1800):
  """Returns the reference venv's python, creating or repairing the venv first.

  Args:
    path: venv directory; default $ESTIMATOR_LITE_REF_VENV or
      ~/.cache/estimator_lite/ref-venv-2.15.
    log: called with one line per step (the commands run).
    timeout: seconds allowed for each command.

  Raises:
    RefEnvError: with pip's output when the venv cannot be created.
  """
  directory = venv_dir(path)
  python = venv_python(path)
  ok, info = probe(python)
  if ok:
    return python
  with _lock(directory):
    ok, info = probe(python)  # another process may have created it meanwhile
    if ok:
      return python
    start = time.monotonic()
    log(f"reference venv {directory} is missing or unusable ({info.splitlines()[-1] if info else 'no output'}); creating it")
    if not os.path.exists(python):
      _run([_find_base_python(), "-m", "venv", directory], log, timeout)
    _run([python, "-m", "pip", "install", "--disable-pip-version-check",
          *REQUIREMENTS], log, timeout)
    ok, info = probe(python)
    if not ok:
      raise RefEnvError(f"{python} still cannot import tf.estimator after "
                        f"installing {' '.join(REQUIREMENTS)}:\n{info}")
    log(f"reference venv ready in {time.monotonic() - start:.1f} s "
        f"(tensorflow, tensorflow-estimator, numpy: {info})")
  return python


def missing_packages(python, requirements):
  """The `requirements` (pip's syntax) that `python`'s installed distributions do not
  satisfy (it must have `packaging`, as TensorFlow does)."""
  proc = subprocess.run([python, "-c", _MISSING, *requirements], capture_output=True,
                        text=True, env=subprocess_env(), check=True)
  return proc.stdout.split()


def ensure_packages(python, requirements, log=print, timeout=1800):
  """Installs into the reference venv (`python`) the `requirements` it does not satisfy
  yet (printed), keeping REQUIREMENTS' versions (TensorFlow 2.15's numpy<2)."""
  missing = missing_packages(python, requirements)
  if missing:
    _run([python, "-m", "pip", "install", "--disable-pip-version-check", *missing,
          *REQUIREMENTS], log, timeout)


def main(argv):
  check_only = "--check" in argv[1:]
  if check_only:
    python = find_ref_python()
    if python is None:
      print(f"no usable reference venv at {venv_dir()}", file=sys.stderr)
      return 1
  else:
    try:
      python = ensure_ref_python(log=lambda line: print(line, file=sys.stderr))
    except RefEnvError as e:
      print(e, file=sys.stderr)
      return 1
  print(python)
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv))
