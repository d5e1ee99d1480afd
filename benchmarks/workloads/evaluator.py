"""Evaluator latency: one role (trainer or evaluator task) of one system; writes JSON.

    python benchmarks/workloads/evaluator.py --system SYSTEM --role trainer|evaluator
        --model-dir DIR --max-steps N --save-every S --gap-secs G --out result.json

trainer: Estimator.train on the linear model, saving a checkpoint every S
  steps; a CheckpointSaverListener records when each save finished
  (time.time()) and then pauses G seconds, so the evaluator is never behind.
evaluator: train_and_evaluate as the `evaluator` task of TF_CONFIG
  (start_delay_secs=0, throttle_secs=1, 10 eval batches) on the same model_dir;
  returns after the checkpoint at N. It then reads its eval events and reports,
  per evaluated step, the wall time of the last event written for it.

run.py pairs them: latency = eval events written - checkpoint written.
"""
import argparse
import glob
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
_EVAL_BATCHES = 10
_THROTTLE_SECS = 1


class _SaveRecorder(_v1.train.CheckpointSaverListener):

  def __init__(self, gap_secs):
    self.saves = []
    self._gap_secs = gap_secs

  def after_save(self, session, global_step_value):
    self.saves.append((int(global_step_value), time.time()))
    time.sleep(self._gap_secs)


def eval_event_times(eval_dir):
  """{step: wall time of the last event written for that step} in eval_dir."""
  times = {}
  for path in glob.glob(os.path.join(eval_dir, "events.out.tfevents.*")):
    for event in _v1.train.summary_iterator(path):
      if event.HasField("summary"):
        times[event.step] = max(times.get(event.step, 0.0), event.wall_time)
  return times


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--system", required=True, choices=("tf_estimator", "estimator_lite"))
  parser.add_argument("--role", required=True, choices=("trainer", "evaluator"))
  parser.add_argument("--model-dir", required=True)
  parser.add_argument("--max-steps", type=int, required=True)
  parser.add_argument("--save-every", type=int, required=True)
  parser.add_argument("--gap-secs", type=float, default=2.0)
  parser.add_argument("--out", required=True)
  args = parser.parse_args()
  model = models.MODELS["linear"]
  if args.role == "evaluator":
    # Port 1 is never contacted: the evaluator is outside the training cluster.
    os.environ["TF_CONFIG"] = json.dumps({"cluster": {"chief": ["localhost:1"]},
                                          "task": {"type": "evaluator", "index": 0}})
  api = load_api(args.system)
  estimator = api.Estimator(
      models.make_model_fn(model, api), model_dir=args.model_dir,
      config=api.RunConfig(tf_random_seed=1, save_checkpoints_steps=args.save_every))
  if args.role == "trainer":
    recorder = _SaveRecorder(args.gap_secs)
    estimator.train(models.make_input_fn(model), max_steps=args.max_steps,
                    saving_listeners=[recorder])
    result = {"saves": recorder.saves}
  else:
    api.train_and_evaluate(
        estimator, api.TrainSpec(models.make_input_fn(model), max_steps=args.max_steps),
        api.EvalSpec(models.make_input_fn(model), steps=_EVAL_BATCHES, start_delay_secs=0,
                     throttle_secs=_THROTTLE_SECS))
    events = eval_event_times(os.path.join(args.model_dir, "eval"))
    result = {"eval_events": sorted(events.items())}
  result.update(system=args.system, role=args.role, tf_version=tf.__version__)
  with open(args.out, "w") as f:
    json.dump(result, f)


if __name__ == "__main__":
  main()
