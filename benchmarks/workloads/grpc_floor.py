"""The gRPC floor of one TensorFlow version: a bare Session.run loop against a ps; writes JSON.

    python benchmarks/workloads/grpc_floor.py --steps N --out result.json

Starts a ps and a worker `tf.distribute.Server` in this process (they still
talk gRPC over localhost), places the linear model's variables on the ps with
replica_device_setter as an Estimator would, and times `Session.run(train_op)`
on the worker's target. Run with each venv's python, it shows how much of the
distributed difference between tf.estimator 2.15 and estimator_lite is the
TensorFlow runtime itself (no hooks, no MonitoredSession).
"""
import argparse
import json
import os
import socket
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import tensorflow as tf  # pylint: disable=g-import-not-at-top,wrong-import-position

import models  # pylint: disable=g-import-not-at-top,wrong-import-position
from train import steady_steps_per_sec  # pylint: disable=g-import-not-at-top,wrong-import-position

_v1 = tf.compat.v1


def _free_port():
  with socket.socket() as s:
    s.bind(("localhost", 0))
    return s.getsockname()[1]


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--steps", type=int, default=2000)
  parser.add_argument("--out", required=True)
  args = parser.parse_args()
  cluster = tf.train.ClusterSpec({"ps": [f"localhost:{_free_port()}"],
                                  "worker": [f"localhost:{_free_port()}"]})
  servers = [tf.distribute.Server(cluster, job_name=job, task_index=0)  # pylint: disable=unused-variable
             for job in ("ps", "worker")]
  device_fn = _v1.train.replica_device_setter(ps_tasks=1, worker_device="/job:worker/task:0",
                                              merge_devices=True, cluster=cluster)
  graph, iterator, train_op, init = models.bare_training_graph(models.MODELS["linear"],
                                                               device_fn)
  config = _v1.ConfigProto(device_filters=["/job:ps", "/job:worker/task:0"])
  times = []
  with _v1.Session(servers[1].target, graph=graph, config=config) as session:
    session.run(init)
    session.run(iterator.initializer)
    for _ in range(args.steps):
      session.run(train_op)
      times.append(time.perf_counter())
  with open(args.out, "w") as f:
    json.dump({"steps_per_sec": steady_steps_per_sec(times, 1), "tf_version": tf.__version__},
              f)


if __name__ == "__main__":
  main()
