"""Writes tests/porting/corpus_expected_2.15.json: each corpus program's RESULT under tf.estimator 2.15.

The corpus (tests/porting/corpus/) holds unmodified tf.estimator 2.15
programs; run plainly in the reference environment (TensorFlow 2.15 +
tensorflow-estimator 2.15) each prints a final `RESULT {json}` line. This
script records those lines, so tests/porting/test_run.py (and the migration
tool's tests) compare estimator_lite's runs without the reference venv.
Regenerate from the repository root with:

    python tests/porting/make_corpus_reference.py tests/porting/corpus_expected_2.15.json

(it finds the reference interpreter with tests/reference/ref_env.py, creating
the venv if missing). The cluster program is recorded as run alone (no
TF_CONFIG).
"""
import concurrent.futures
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "reference"))

import ref_env  # pylint: disable=g-import-not-at-top,wrong-import-position


def result_line(output):
  """The RESULT dict of a program's stdout, or None."""
  lines = [l for l in output.splitlines() if l.startswith("RESULT ")]
  return json.loads(lines[-1][len("RESULT "):]) if lines else None


def run_reference(python, program):
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
  for name in ("TF_CONFIG", "PYTHONPATH", "TF_USE_LEGACY_KERAS"):
    env.pop(name, None)
  done = subprocess.run([python, program], cwd=CORPUS, env=env, capture_output=True,
                        text=True, timeout=600, check=False)
  result = result_line(done.stdout)
  if done.returncode != 0 or result is None:
    raise RuntimeError(f"{program} failed under the reference (rc {done.returncode}):\n"
                       f"{done.stderr[-3000:]}")
  return result


def main(argv):
  out_path = argv[1] if len(argv) > 1 else os.path.join(HERE, "corpus_expected_2.15.json")
  python = ref_env.ensure_ref_python()
  programs = sorted(p for p in os.listdir(CORPUS) if p.endswith(".py"))
  with concurrent.futures.ThreadPoolExecutor(4) as pool:
    results = dict(zip(programs, pool.map(lambda p: run_reference(python, p), programs)))
  with open(out_path, "w") as f:
    json.dump(results, f, indent=1, sort_keys=True)
    f.write("\n")
  print(f"wrote {out_path}: {len(results)} programs")


if __name__ == "__main__":
  main(sys.argv)
