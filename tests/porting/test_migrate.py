"""`python -m estimator_lite.migrate`: the rewrite, its report, notebooks, and migrated programs that run.

The cases in migrate_cases/ are before/after pairs written for the tool
(formatting and comments, every import form, module aliases, the Keras bridge,
what cannot be rewritten, a module that already uses the name
`estimator_lite`, a notebook with IPython magics). The end-to-end test
migrates the corpus of unmodified tf.estimator 2.15 programs (corpus/) and
the notebook, then runs each result with plain `python` on TensorFlow 2.21
and compares its RESULT line with tf.estimator 2.15's.
"""
import concurrent.futures
import difflib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tokenize

import pytest

from estimator_lite import migrate
from estimator_lite._porting import names

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, "migrate_cases")
CORPUS = os.path.join(HERE, "corpus")
EXPECTED = os.path.join(HERE, "corpus_expected_2.15.json")
REPO = os.path.dirname(os.path.dirname(HERE))

# Any way of naming tf.estimator left in code (strings and comments removed).
_LEFTOVER = re.compile(
    r"\btensorflow_estimator\b|\b(tf|tensorflow)(\.compat\.v[12])?(\.keras)?\.estimator\b"
    r"|\bfrom\s+tensorflow(\.compat\.v[12])?\s+import\s+estimator\b"
    r"|\bfrom\s+tensorflow(\.compat\.v[12])?\.estimator\b")


def _copy_cases(dest, which=".before"):
  """Copies the `NAME.before.EXT` cases to dest/NAME.EXT; returns the names."""
  copied = []
  for name in sorted(os.listdir(CASES)):
    if which in name:
      target = name.replace(which, "")
      shutil.copy(os.path.join(CASES, name), os.path.join(dest, target))
      copied.append(target)
  return copied


def _run_tool(capsys, *argv):
  status = migrate.main([str(a) for a in argv])
  out, err = capsys.readouterr()
  return status, out, err


def _read(path):
  with open(path, encoding="utf-8") as f:
    return f.read()


def test_cases_become_the_expected_text_and_a_second_run_changes_nothing(tmp_path, capsys):
  copied = _copy_cases(tmp_path)
  status, out, _ = _run_tool(capsys, tmp_path)
  assert status == 0, out
  for name in copied:
    stem, ext = os.path.splitext(name)
    expected = _read(os.path.join(CASES, f"{stem}.after{ext}"))
    assert _read(tmp_path / name) == expected, name
  assert f"{len(copied)} file(s) looked at, {len(copied)} changed, 0 not parsed" in out

  before = {name: (tmp_path / name).read_bytes() for name in copied}
  status, out, _ = _run_tool(capsys, tmp_path)
  assert status == 0
  assert f"{len(copied)} file(s) looked at, 0 changed" in out
  assert "Rewrites by kind" not in out
  assert {name: (tmp_path / name).read_bytes() for name in copied} == before


def test_notebook_keeps_outputs_metadata_and_magics(tmp_path, capsys):
  shutil.copy(os.path.join(CASES, "notebook.before.ipynb"), tmp_path / "nb.ipynb")
  status, out, _ = _run_tool(capsys, tmp_path / "nb.ipynb")
  assert status == 0
  before = json.loads(_read(os.path.join(CASES, "notebook.before.ipynb")))
  after = json.loads(_read(tmp_path / "nb.ipynb"))
  assert after["metadata"] == before["metadata"]
  for old, new in zip(before["cells"], after["cells"]):
    assert {k: v for k, v in old.items() if k != "source"} == {
        k: v for k, v in new.items() if k != "source"}
    assert isinstance(new["source"], list)
  sources = ["".join(cell["source"]) for cell in after["cells"]]
  assert "%env TF_CPP_MIN_LOG_LEVEL=3\n" in sources[1]
  assert "import numpy as np\nimport estimator_lite\nimport tensorflow as tf  # TensorFlow\n" in sources[1]
  assert ("!echo inputs ready\n"
          "numpy_input_fn = estimator_lite.inputs.numpy_input_fn  # v1 only\n") in sources[2]
  assert sources[3] == "".join(before["cells"][3]["source"])  # %%bash: skipped
  assert sources[4].startswith("est = estimator_lite\n")
  assert "if True:\n    %time estimator.train(input_fn, steps=4)\n" in sources[4]
  assert sources[4].endswith("\nestimator?")
  assert sources[7] == "%%time\nmode = estimator_lite.ModeKeys.TRAIN\nprint(mode)"
  assert sources[0] == "".join(before["cells"][0]["source"])  # markdown
  # The file's JSON differs only in the rewritten source lines.
  changed = [line for line in difflib.ndiff(
      _read(os.path.join(CASES, "notebook.before.ipynb")).splitlines(),
      _read(tmp_path / "nb.ipynb").splitlines()) if line[:1] in "+-"]
  assert len(changed) == 11 and all("estimator" in line for line in changed), changed
  assert "cell 2, line 8: attribute: tf.compat.v1.estimator.inputs.numpy_input_fn" in out
  assert "cell 3, line 1: %%bash" in out and "cell skipped" in out


def test_report_counts_kinds_and_lists_what_could_not_be_rewritten(tmp_path, capsys):
  for name in ("not_rewritable", "aliases"):
    shutil.copy(os.path.join(CASES, f"{name}.before.py"), tmp_path / f"{name}.py")
  status, out, _ = _run_tool(capsys, tmp_path)
  assert status == 0  # uses left as they were are reported, not failures
  kinds = dict(re.findall(r"^  (attribute|module alias|keras|import added)\s+(\d+)$", out, re.M))
  assert kinds == {"attribute": "6", "module alias": "1", "keras": "3", "import added": "5"}
  assert "line 7: module alias: tf.estimator -> estimator_lite" in out
  assert ("line 18: keras: tf.compat.v1.keras.estimator.model_to_estimator -> "
          "estimator_lite.keras.v1.model_to_estimator") in out
  problems = out.split("Could not rewrite (9):\n")[1]
  for line, code in [(5, "import tensorflow_estimator as tfe"),
                     (6, "from tensorflow_estimator.python.estimator import estimator as"),
                     (7, "from tensorflow_estimator.python.estimator.canned import dnn"),
                     (10, 'importlib.import_module("tensorflow.estimator")'),
                     (11, '__import__("tensorflow_estimator")'),
                     (12, 'getattr(tf, "estimator")'),
                     (13, "tfe.python.estimator.estimator.Estimator")]:
    assert f"not_rewritable.py, line {line}: {code}" in problems
  assert problems.count(names.PRIVATE_HINT) == 5  # lines 6, 7, 8, 13, 15
  assert "`tfe` is still used (line 13, 15)" in problems
  # The import stays while something still uses it.
  assert "import tensorflow_estimator as tfe\n" in _read(tmp_path / "not_rewritable.py")


def test_diff_prints_a_unified_diff_and_writes_nothing(tmp_path, capsys):
  shutil.copy(os.path.join(CASES, "formatting.before.py"), tmp_path / "model.py")
  original = (tmp_path / "model.py").read_bytes()
  status, out, err = _run_tool(capsys, "--diff", tmp_path / "model.py")
  assert status == 0
  assert (tmp_path / "model.py").read_bytes() == original
  assert out.startswith(f"--- {tmp_path / 'model.py'}\n+++ {tmp_path / 'model.py'}\n@@ ")
  assert "\n-config = tf.estimator.RunConfig(\n+config = estimator_lite.RunConfig(\n" in out
  assert "\n+import estimator_lite\n" in out
  assert "would change (--diff: nothing written)" in err


def test_unparsable_file_is_reported_untouched_and_fails_the_run(tmp_path, capsys):
  shutil.copy(os.path.join(CASES, "bad_syntax.py.txt"), tmp_path / "bad.py")
  shutil.copy(os.path.join(CASES, "name_taken.before.py"), tmp_path / "good.py")
  bad = (tmp_path / "bad.py").read_bytes()
  status, out, _ = _run_tool(capsys, tmp_path)
  assert status == 1
  assert (tmp_path / "bad.py").read_bytes() == bad
  assert _read(tmp_path / "good.py") == _read(os.path.join(CASES, "name_taken.after.py"))
  assert f"{tmp_path / 'bad.py'}: syntax error at line 2" in out
  assert _run_tool(capsys, tmp_path / "missing.py")[0] == 1


def test_directories_skip_hidden_dirs_venvs_and_pycache(tmp_path, capsys):
  program = "import tensorflow as tf\nconfig = tf.estimator.RunConfig()\n"
  for sub in ("pkg", ".hidden", "__pycache__", "venv", "pkg/.ipynb_checkpoints"):
    os.makedirs(tmp_path / sub, exist_ok=True)
    (tmp_path / sub / "m.py").write_text(program)
  (tmp_path / "venv" / "pyvenv.cfg").write_text("home = /usr\n")
  (tmp_path / "pkg" / "notes.txt").write_text(program)
  status, out, _ = _run_tool(capsys, tmp_path)
  assert status == 0
  assert "1 file(s) looked at, 1 changed" in out
  assert "estimator_lite.RunConfig()" in _read(tmp_path / "pkg" / "m.py")
  for sub in (".hidden", "__pycache__", "venv", "pkg/.ipynb_checkpoints"):
    assert _read(tmp_path / sub / "m.py") == program


def test_help_documents_the_exit_status(capsys):
  with pytest.raises(SystemExit) as exit_info:
    migrate.main(["--help"])
  assert exit_info.value.code == 0
  out = capsys.readouterr().out
  assert "--diff" in out and "Exit status: 0" in out and "1 when a file could not be parsed" in out


# End to end: migrated programs run on plain TensorFlow 2.21.


def _code_only(text):
  """`text` without its strings and comments."""
  tokens = tokenize.generate_tokens(io.StringIO(text).readline)
  return " ".join(t.string for t in tokens
                  if t.type not in (tokenize.STRING, tokenize.COMMENT))


def _notebook_script(path, dest):
  """The notebook's code cells as a script, as IPython would run them (`%time X` runs X)."""
  lines = []
  for cell in json.loads(_read(path))["cells"]:
    source = "".join(cell["source"])
    if source.startswith(("%%time\n", "%%capture\n")):
      source = source.split("\n", 1)[1]
    if cell["cell_type"] != "code" or source.startswith("%%"):
      continue
    for line in source.split("\n"):
      stripped = line.strip()
      if stripped.startswith("%time "):
        line = line.replace("%time ", "", 1)
      elif stripped.startswith(("%", "!")) or stripped.endswith("?"):
        continue
      lines.append(line)
  with open(dest, "w") as f:
    f.write("\n".join(lines) + "\n")
  return dest


def _result(argv, cwd):
  env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=REPO)
  for name in ("TF_CONFIG", "TF_USE_LEGACY_KERAS"):
    env.pop(name, None)
  done = subprocess.run([sys.executable, *argv], cwd=cwd, env=env, capture_output=True,
                        text=True, timeout=600, check=False)
  lines = [l for l in done.stdout.splitlines() if l.startswith("RESULT ")]
  assert done.returncode == 0 and lines, f"{argv} failed:\n{done.stderr[-3000:]}"
  return json.loads(lines[-1][len("RESULT "):])


def _as_estimator_lite(expected):
  # tf.estimator 2.15's classes live in tensorflow_estimator.python.estimator.*,
  # estimator_lite's in estimator_lite.*.
  return dict(expected, estimator_module=expected["estimator_module"].replace(
      "tensorflow_estimator.python.estimator.", "estimator_lite."))


@pytest.mark.long  # tests/tiers.py
def test_migrated_corpus_and_notebook_run_on_plain_tensorflow(tmp_path, capsys):
  programs = sorted(p for p in os.listdir(CORPUS) if p.endswith(".py"))
  work = tmp_path / "programs"
  shutil.copytree(CORPUS, work)
  shutil.copy(os.path.join(CASES, "notebook.before.ipynb"), work / "notebook.ipynb")

  status, out, _ = _run_tool(capsys, work)
  assert status == 0, out
  assert f"{len(programs) + 1} file(s) looked at, {len(programs) + 1} changed" in out
  migrated_notebook = _notebook_script(work / "notebook.ipynb", work / "notebook_script.py")
  for name in programs + ["notebook_script.py"]:
    code = _code_only(_read(work / name))
    assert not _LEFTOVER.search(code), (name, _LEFTOVER.search(code))
  snapshot = {p: (work / p).read_bytes() for p in os.listdir(work) if p.endswith((".py", ".ipynb"))}
  assert _run_tool(capsys, work)[0] == 0
  assert {p: (work / p).read_bytes() for p in snapshot} == snapshot

  with concurrent.futures.ThreadPoolExecutor(2) as pool:
    futures = {name: pool.submit(_result, [name], work)
               for name in programs + [os.path.basename(migrated_notebook)]}
    results = {name: future.result() for name, future in futures.items()}

  with open(EXPECTED) as f:
    expected = json.load(f)
  for name in programs:
    assert results[name] == _as_estimator_lite(expected[name]), name
  # The notebook is corpus/tf_estimator.py in cells: tf.estimator 2.15's numbers.
  assert results["notebook_script.py"] == _as_estimator_lite(expected["tf_estimator.py"])
