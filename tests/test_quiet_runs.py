"""Plain runs are quiet and single: what a user's terminal shows (docs/logs.md).

Real programs in their own processes, as a user runs them: a tf.estimator
program started by `tf.compat.v1.app.run` (absl's handler joins the root
logger, which printed every TensorFlow record a second time in absl's format),
training a canned DNNClassifier (its graph makes TensorFlow 2.21 print the
27-line "Type inference failed" warning). Checked on stderr: each
`INFO:tensorflow:` record once, no absl-format copy, none of TensorFlow's C++
start-up noise; `ESTIMATOR_LITE_SHOW_TF_LOGS=1` shows the C++ lines again; a
C++ fatal line before an abort is never lost; a user's own logging
configuration is kept; a notebook's cell shows each record once.
"""
import collections
import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

from estimator_lite._util import cpp_noise

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIMEOUT_SECS = 180
IMPORTS_DONE = "imports done"

# A tf.estimator 2.15 program (run by estimator_lite.run) or, with
# `tf.estimator` replaced by `est`, an estimator_lite one. Two training steps
# of a canned DNN: its summaries hold the `cond` that type inference rejects.
_PROGRAM_BODY = textwrap.dedent("""\
    print("%s", file=sys.stderr, flush=True)


    def input_fn():
      features = {"x": [[0.0], [1.0], [2.0], [3.0]]}
      return tf.data.Dataset.from_tensor_slices(
          (features, [[0], [0], [1], [1]])).repeat().batch(2)


    def main(argv):
      tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)
      classifier = tf.estimator.DNNClassifier(
          hidden_units=[2], feature_columns=[tf.feature_column.numeric_column("x")],
          model_dir=argv[1])
      classifier.train(input_fn, steps=2)


    tf.compat.v1.app.run(main)
    """ % IMPORTS_DONE)
_IMPORTS = {
    "tensorflow_first": "import sys\nimport tensorflow as tf\nimport estimator_lite as est\n",
    "estimator_lite_first": "import sys\nimport estimator_lite as est\nimport tensorflow as tf\n",
    "tf_estimator_program": "import sys\nimport tensorflow as tf\n",
}

# absl's format ("I1127 12:00:00.123456 140... file.py:80] ...") and
# TensorFlow's C++ format ("I0000 00:00:1795576268.719883   10705 port.cc:153] ...").
_ABSL_PYTHON_LINE = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ [\w.]+\.py:\d+\] ")
_CPP_LINE = re.compile(r"^[IWEF]\d{4} [\d:.]+ +\d+ [\w.-]+\.cc:\d+\] ")


def _write_program(tmp_path, kind):
  body = _PROGRAM_BODY
  if kind != "tf_estimator_program":
    body = body.replace("tf.estimator.", "est.")
  path = tmp_path / f"{kind}.py"
  path.write_text(_IMPORTS[kind] + body)
  return path


def _env(**extra):
  env = dict(os.environ)
  # A user's fresh shell: none of the test run's own settings.
  for name in ("TF_CPP_MIN_LOG_LEVEL", "TF_USE_LEGACY_KERAS", "TF_CONFIG",
               cpp_noise.SHOW_TF_LOGS_ENV, "ESTIMATOR_LITE_FILTERED_STDERR"):
    env.pop(name, None)
  env["PYTHONPATH"] = os.pathsep.join(
      [REPO_ROOT] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
  env.update(extra)
  return env


def _run(command, tmp_path, **env):
  return subprocess.run(command, cwd=str(tmp_path), env=_env(**env), capture_output=True,
                        text=True, timeout=TIMEOUT_SECS, check=False, stdin=subprocess.DEVNULL)


def _assert_each_record_once(stderr):
  records = [line for line in stderr.splitlines() if line.startswith("INFO:tensorflow:")]
  assert any(line.startswith("INFO:tensorflow:Loss for final step: ") for line in records), stderr
  # One train() call: each of its records is logged once.
  repeated = [line for line, n in collections.Counter(records).items() if n > 1]
  assert not repeated, stderr
  absl_copies = [line for line in stderr.splitlines() if _ABSL_PYTHON_LINE.match(line)]
  assert not absl_copies, stderr


def _cpp_lines(stderr):
  return [line for line in stderr.splitlines()
          if _CPP_LINE.match(line) or "absl::InitializeLog" in line
          or "rebuild TensorFlow with the appropriate compiler flags" in line
          or "type_id: TFT_" in line or "while inferring type of node" in line]


@pytest.mark.parametrize("kind", ["estimator_lite_first", "tensorflow_first"])
def test_a_plain_python_run_prints_each_record_once_and_no_cpp_noise(tmp_path, kind):
  program = _write_program(tmp_path, kind)
  done = _run([sys.executable, str(program), str(tmp_path / "model")], tmp_path)
  assert done.returncode == 0, done.stderr[-4000:]
  _assert_each_record_once(done.stderr)
  before, _, after = done.stderr.partition(IMPORTS_DONE + "\n")
  assert after, done.stderr
  # What TensorFlow prints as it is imported, before estimator_lite is, it
  # cannot take back; from estimator_lite's import on, nothing.
  assert not _cpp_lines(after), after
  if kind == "estimator_lite_first":
    assert not _cpp_lines(before), before


def test_estimator_lite_run_prints_each_record_once_and_no_cpp_noise(tmp_path):
  program = _write_program(tmp_path, "tf_estimator_program")
  done = _run([sys.executable, "-m", "estimator_lite.run", str(program),
               str(tmp_path / "model")], tmp_path)
  assert done.returncode == 0, done.stderr[-4000:]
  _assert_each_record_once(done.stderr)
  assert not _cpp_lines(done.stderr), done.stderr
  assert "type_inference" not in done.stderr


def test_the_switch_shows_tensorflows_cpp_lines(tmp_path):
  program = _write_program(tmp_path, "tf_estimator_program")
  done = _run([sys.executable, "-m", "estimator_lite.run", str(program),
               str(tmp_path / "model")], tmp_path, **{cpp_noise.SHOW_TF_LOGS_ENV: "1"})
  assert done.returncode == 0, done.stderr[-4000:]
  assert "absl::InitializeLog" in done.stderr
  assert "type_inference.cc" in done.stderr
  assert "while inferring type of node" in done.stderr
  # Still one line per record: the switch is about C++ lines.
  _assert_each_record_once(done.stderr)


_ABORTING = textwrap.dedent("""\
    import os, sys, time
    import estimator_lite
    print("python's own line", file=sys.stderr)
    os.write(2, b"I0000 00:00:1795576268.719883   10705 port.cc:153] oneDNN custom "
                b"operations are on.\\n")
    os.write(2, b"W0000 00:00:1.5   7 type_inference.cc:340] Type inference failed. This "
                b"indicates an invalid graph that escaped type checking.\\n"
                b"goo.gle/debugstr    \\ntype_id: TFT_OPTIONAL\\nargs {\\n}\\n\\n"
                b"\\tfor Tuple type infernce function 0\\n"
                b"\\twhile inferring type of node 'dnn/zero_fraction/cond/output/_9'\\n")
    os.write(2, b"W0000 00:00:1.5   7 some_kernel.cc:12] a real warning\\n")
    os.write(2, b"a prompt without newline")
    time.sleep(0.5)
    os.write(2, b"\\nF0000 00:00:1.5   7 tensor.cc:99] Check failed: dtype() == expected_dtype\\n")
    os.abort()
    """)


def test_a_cpp_fatal_line_before_an_abort_is_kept(tmp_path):
  program = tmp_path / "aborting.py"
  program.write_text(_ABORTING)
  done = _run([sys.executable, str(program)], tmp_path)
  assert done.returncode == -6, done.stderr
  assert "python's own line" in done.stderr
  assert "oneDNN" not in done.stderr and "type_inference" not in done.stderr
  assert "TFT_OPTIONAL" not in done.stderr and "while inferring" not in done.stderr
  assert "some_kernel.cc:12] a real warning" in done.stderr
  assert "a prompt without newline" in done.stderr
  assert done.stderr.rstrip().endswith("Check failed: dtype() == expected_dtype"), done.stderr


_USER_LOGGING = textwrap.dedent("""\
    import logging
    import tensorflow as tf
    import estimator_lite as est
    from absl import logging as absl_logging
    tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)
    tf.compat.v1.logging.info("before the user's configuration")
    logging.basicConfig(format="USER %(levelname)s %(name)s: %(message)s")
    tf.compat.v1.logging.info("after the user's configuration")
    absl_logging.use_absl_handler()  # what absl.app.run does
    tf.compat.v1.logging.info("after absl's handler")
    logging.getLogger("mine").warning("a user's own record")
    """)


def test_a_users_own_logging_configuration_is_kept(tmp_path):
  program = tmp_path / "user_logging.py"
  program.write_text(_USER_LOGGING)
  done = _run([sys.executable, str(program)], tmp_path)
  assert done.returncode == 0, done.stderr
  lines = [line for line in done.stderr.splitlines() if "configuration" in line
           or "absl's handler" in line or "own record" in line]
  # absl's use_absl_handler() removes the root handlers that write to stderr
  # (basicConfig's), so TensorFlow's own handler prints the last records.
  assert lines[:3] == ["INFO:tensorflow:before the user's configuration",
                       "USER INFO tensorflow: after the user's configuration",
                       "INFO:tensorflow:after absl's handler"], done.stderr
  # Other loggers' records are absl's to print, in its format.
  assert len(lines) == 4 and re.match(
      r"W\d{4} [\d:.]+ +\d+ user_logging\.py:11\] a user's own record$", lines[3]), lines


def test_the_noise_filter_drops_the_whole_type_inference_warning_only():
  noise = cpp_noise.NoiseFilter(cpu_only=True)
  warning = [
      b"W0000 00:00:1795863332.121392   14072 type_inference.cc:340] Type inference failed. "
      b"This indicates an invalid graph that escaped type checking. Error message: INVALID",
      b"goo.gle/debugstr    ", b"type_id: TFT_OPTIONAL", b"args {", b"  type_id: TFT_INT64",
      b"}", b" is neither a subtype nor a supertype of the combined inputs preceding it:",
      b"", b"\tfor Tuple type infernce function 0",
      b"\twhile inferring type of node 'dnn/zero_fraction/cond/output/_9'"]
  assert all(noise.is_noise(line + b"\n") for line in warning)
  # After the message ends, lines of the same shape are the program's own.
  assert not noise.is_noise(b"}\n")
  # A message cut short: the next line that is not its shape is judged afresh.
  assert noise.is_noise(warning[0])
  assert noise.is_noise(b"type_id: TFT_OPTIONAL")
  assert not noise.is_noise(b"Traceback (most recent call last):")
  assert not noise.is_noise(b"}")
  assert noise.hidden == len(warning) + 2


def test_the_switch_reads_as_a_yes_or_no(monkeypatch):
  for value, shown in (("1", True), ("yes", True), ("0", False), ("", False), ("false", False)):
    monkeypatch.setenv(cpp_noise.SHOW_TF_LOGS_ENV, value)
    assert cpp_noise.show_tf_logs() is shown, value
  monkeypatch.delenv(cpp_noise.SHOW_TF_LOGS_ENV)
  assert not cpp_noise.show_tf_logs()


_NOTEBOOK = textwrap.dedent("""\
    import io, os, sys

    class CellOutput(io.TextIOBase):
      # Like ipykernel's OutStream: what the cell shows, no file of its own.
      def __init__(self):
        self.text = []
      def write(self, s):
        self.text.append(s)
        return len(s)
      def writable(self):
        return True

    real_stdout = sys.stdout
    sys.stdout, sys.stderr = CellOutput(), CellOutput()
    sys.ps1 = "In [1]: "  # an interactive shell: TensorFlow logs to stdout
    import estimator_lite
    estimator_lite.install()
    import tensorflow as tf
    from absl import logging as absl_logging
    tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)
    tf.compat.v1.logging.info("a record in the first cell")
    absl_logging.use_absl_handler()  # a notebook that uses absl, or a library that does
    tf.compat.v1.logging.info("a record in the second cell")
    estimator_lite.install()
    cell = "".join(sys.stdout.text) + "".join(sys.stderr.text)
    real_stdout.write(json.dumps({"cell": cell,
                                  "guard": "ESTIMATOR_LITE_FILTERED_STDERR" in os.environ}))
    """).replace("import io, os, sys", "import io, json, os, sys")


def test_a_notebook_shows_each_record_once(tmp_path):
  program = tmp_path / "notebook.py"
  program.write_text(_NOTEBOOK)
  done = _run([sys.executable, str(program)], tmp_path, TF_CPP_MIN_LOG_LEVEL="3")
  assert done.returncode == 0, done.stderr[-4000:]
  shown = json.loads(done.stdout)
  lines = shown["cell"].splitlines()
  assert [line for line in lines if "cell" in line] == [
      "INFO:tensorflow:a record in the first cell",
      "INFO:tensorflow:a record in the second cell"], lines
  assert len([line for line in lines if "estimator_lite.install()" in line]) == 1, lines
  # The kernel's own stderr is not the notebook's: it is left alone.
  assert not shown["guard"]
