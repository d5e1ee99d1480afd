"""op_errors.summary: the one line of a TensorFlow error a repeated log line shows.

The errors are TensorFlow's own: a checkpoint save that fails on a ps
cluster (real servers in this process, tests/conftest.py) and on one machine.
"""
import os

import pytest
import tensorflow as tf

from estimator_lite._util import op_errors

v1 = tf.compat.v1


def _failed_save(target, device_fn, directory):
  """The error of a save into `directory`, a path under a file (so it cannot be made)."""
  graph = tf.Graph()
  with graph.as_default(), graph.device(device_fn):
    v1.get_variable("w", [2], initializer=v1.ones_initializer())
    saver = v1.train.Saver(sharded=True)
    init = v1.global_variables_initializer()
  with v1.Session(target, graph=graph) as session:
    session.run(init)
    with pytest.raises(tf.errors.OpError) as raised:  # the save op itself, as Saver.save runs it
      session.run(saver.saver_def.save_tensor_name,
                  {saver.saver_def.filename_tensor_name: os.path.join(directory, "model.ckpt")})
  return raised.value


def test_a_save_failing_on_a_ps_is_summarised_by_its_status(ps_and_worker, tmp_path):
  spec, worker, _ = ps_and_worker
  (tmp_path / "a_file").write_text("")
  device_fn = v1.train.replica_device_setter(ps_tasks=1, worker_device="/job:worker/task:0",
                                            cluster=spec)
  error = _failed_save(worker.target, device_fn, str(tmp_path / "a_file" / "model"))
  # The message repeats the stack and the status for each task the step
  # failed on, each status after a "<CODE>: From /job:..." line.
  assert "From /job:" in error.message
  line = op_errors.summary(error)
  assert str(tmp_path / "a_file") in line, (line, error.message)
  assert "\n" not in line and "=" not in line and "From /job:" not in line, line


def test_a_save_failing_on_one_machine_is_summarised_by_its_status(tmp_path):
  (tmp_path / "a_file").write_text("")
  error = _failed_save("", None, str(tmp_path / "a_file" / "model"))
  line = op_errors.summary(error)
  assert str(tmp_path / "a_file") in line and "\n" not in line, (line, error.message)


def test_a_status_after_the_failing_tasks_code_is_the_summary():
  # The message of a save into a read-only model_dir on a ps cluster, as
  # TensorFlow 2.21 wrote it (the stack lines cut to one a repeat): the
  # statuses follow "<CODE>: From /job:..." lines, after a rule of "=".
  path = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "op_errors",
                      "read_only_save_on_a_ps_cluster.txt")
  with open(path) as f:
    error = tf.errors.PermissionDeniedError(None, None, f.read())
  assert op_errors.summary(error) == (
      "/tmp/tmp3huqz1qg/model.ckpt-2_temp; Read-only file system")
