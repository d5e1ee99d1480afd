"""One task (ps, chief or worker) of an asynchronous parameter-server cluster; writes JSON.

    python benchmarks/workloads/cluster_task.py --system SYSTEM --tf-config JSON
        --model-dir DIR --deadline-file FILE --out result.json

Runs `train_and_evaluate` with TF_CONFIG on the linear model (variables on
the ps through replica_device_setter, asynchronous updates), workers without
their staggered start (RunConfig(experimental_max_worker_delay_secs=0), on
both systems). Each trainer creates `DEADLINE_FILE.started.TASK` after its
first step; once all have, run.py writes a wall-clock deadline (a Unix time)
into `--deadline-file`, and every trainer stops at it. Each
records when its first and last steps finished, and the chief also records
(wall time, global step) after every Session.run: run.py measures global
steps/s on the chief over the interval in which every trainer was stepping.
A ps serves until run.py stops it.
"""
import argparse
import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import tensorflow as tf  # pylint: disable=g-import-not-at-top,wrong-import-position

import models  # pylint: disable=g-import-not-at-top,wrong-import-position
from train import load_api  # pylint: disable=g-import-not-at-top,wrong-import-position

_v1 = tf.compat.v1


_POLL_SECS = 0.25


class _DeadlineHook(_v1.train.SessionRunHook):
  """Stops at the deadline in a file; records step times (and, on the chief, the global step)."""

  def __init__(self, deadline_file, task, record_global_step):
    self._deadline_file = deadline_file
    self._task = task
    self._deadline = float("inf")
    self._next_poll = 0.0
    self._record_global_step = record_global_step
    self.first_wall = None
    self.last_wall = None
    self.local_steps = 0
    self.samples = []

  def begin(self):
    self._global_step = _v1.train.get_global_step()

  def before_run(self, run_context):
    if self._record_global_step:
      return _v1.train.SessionRunArgs(self._global_step)
    return None

  def after_run(self, run_context, run_values):
    now = time.time()
    if self.first_wall is None:
      self.first_wall = now
      with open(f"{self._deadline_file}.started.{self._task}", "w"):
        pass
    self.last_wall = now
    self.local_steps += 1
    if self._record_global_step:
      self.samples.append((now, int(run_values.results)))
    if now >= self._next_poll:
      self._next_poll = now + _POLL_SECS
      try:
        with open(self._deadline_file) as f:
          self._deadline = float(f.read())
      except (OSError, ValueError):  # not written yet, or being written
        pass
    if now >= self._deadline:
      run_context.request_stop()


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--system", required=True, choices=("tf_estimator", "estimator_lite"))
  parser.add_argument("--tf-config", required=True)
  parser.add_argument("--model-dir", required=True)
  parser.add_argument("--deadline-file", required=True)
  parser.add_argument("--out", required=True)
  args = parser.parse_args()
  os.environ["TF_CONFIG"] = args.tf_config
  task = json.loads(args.tf_config)["task"]
  task_type = task["type"]
  model = models.MODELS["linear"]
  api = load_api(args.system)
  estimator = api.Estimator(
      models.make_model_fn(model, api), model_dir=args.model_dir,
      config=api.RunConfig(tf_random_seed=1, experimental_max_worker_delay_secs=0))
  hook = _DeadlineHook(args.deadline_file, f"{task_type}{task['index']}",
                       record_global_step=task_type == "chief")
  input_fn = models.make_input_fn(model)
  api.train_and_evaluate(estimator, api.TrainSpec(input_fn, hooks=[hook]),
                         api.EvalSpec(input_fn, steps=1))
  with open(args.out, "w") as f:
    json.dump({"system": args.system, "task": task_type, "first_wall": hook.first_wall,
               "last_wall": hook.last_wall, "local_steps": hook.local_steps,
               "samples": hook.samples, "tf_version": tf.__version__}, f)


if __name__ == "__main__":
  main()
