"""A ps and a worker server in this process, on free ports from the OS.

TensorFlow cannot stop an in-process server, so the session shares one pair.
"""
import pytest
import tensorflow as tf

from estimator_lite import launch


@pytest.fixture(scope="session")
def cluster():
  """(ClusterSpec, worker server, ps server) of jobs "worker" and "ps", one task each."""
  ps_port, worker_port = launch.free_ports(2, "127.0.0.1")
  spec = tf.train.ClusterSpec({"ps": [f"127.0.0.1:{ps_port}"],
                               "worker": [f"127.0.0.1:{worker_port}"]})
  ps = tf.distribute.Server(spec, job_name="ps", task_index=0)
  worker = tf.distribute.Server(spec, job_name="worker", task_index=0)
  return spec, worker, ps
