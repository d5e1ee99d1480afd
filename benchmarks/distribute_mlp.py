"""Steps/s of the benchmark MLP under RunConfig(train_distribute=MirroredStrategy), 1 vs 2 devices.

    python benchmarks/distribute_mlp.py                 # CPU: the CPU split into 2 logical devices
    python benchmarks/distribute_mlp.py --device gpu    # the first 2 GPUs (needs 2)

The model is benchmarks/models.py's MLP (784-512-512-10, Adam, batch 256 from
a cached pool of generated batches). Each configuration trains with
Estimator.train in this process; a hook times the steps after a warm-up.

Configurations (input_fn's batch is per replica, as in tf.estimator):
* none:        no strategy, batch 256;
* 1 device:    MirroredStrategy over one device, batch 256;
* 2 devices:   MirroredStrategy over two devices, 256 per replica (512 a step);
* 2 devices:   MirroredStrategy over two devices, 128 per replica (256 a step).

Two logical CPUs share the same cores and thread pools: on CPU the figures
show the overhead of replication and gradient aggregation, not a speed-up
from more hardware.
"""
import argparse
import json
import os
import platform
import sys
import tempfile
import time

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, _REPO)


def _configure_devices(kind):
  """Splits the CPU into 2 logical devices (or takes 2 GPUs); returns their names."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if kind == "cpu":
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    return ["/cpu:0", "/cpu:1"]
  gpus = tf.config.list_physical_devices("GPU")
  if len(gpus) < 2:
    # Splitting one GPU into logical GPUs would also need the virtual-device
    # settings in the graph-mode Session's ConfigProto; not done (untested).
    raise SystemExit(f"--device gpu needs 2 GPUs; TensorFlow sees {len(gpus)}.")
  return ["/gpu:0", "/gpu:1"]


def _step_timer(warmup):
  """A SessionRunHook recording the wall time of the steps after the first `warmup`."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  class StepTimer(tf.compat.v1.train.SessionRunHook):

    def __init__(self):
      self.steps = 0
      self.first_time = None
      self.last_time = None

    def after_run(self, run_context, run_values):
      del run_context, run_values
      self.steps += 1
      if self.steps == warmup:
        self.first_time = time.perf_counter()
      self.last_time = time.perf_counter()

    def steps_per_sec(self):
      return (self.steps - warmup) / (self.last_time - self.first_time)

  return StepTimer()


def _measure(name, strategy, batch_size, devices_used, steps, warmup, work_dir):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import estimator_lite as est  # pylint: disable=g-import-not-at-top
  from benchmarks import models  # pylint: disable=g-import-not-at-top
  model = models.MODELS["mlp"]._replace(batch_size=batch_size)

  def make_batch(i):
    features, labels = models.MODELS["mlp"].make_batch(i)
    return {"x": features["x"][:batch_size]}, labels[:batch_size]

  model = model._replace(make_batch=make_batch)
  config = est.RunConfig(train_distribute=strategy, save_checkpoints_steps=None,
                         save_checkpoints_secs=None, save_summary_steps=None,
                         log_step_count_steps=None)
  estimator = est.Estimator(models.make_model_fn(model, est),
                            model_dir=tempfile.mkdtemp(dir=work_dir), config=config)
  timer = _step_timer(warmup)
  tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.WARN)
  estimator.train(models.make_input_fn(model), steps=warmup + steps, hooks=[timer])
  rate = timer.steps_per_sec()
  replicas = strategy.num_replicas_in_sync if strategy is not None else 1
  return {"configuration": name, "devices": devices_used, "batch_per_replica": batch_size,
          "examples_per_step": batch_size * replicas, "steps_per_sec": round(rate, 1),
          "examples_per_sec": round(rate * batch_size * replicas)}


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
  parser.add_argument("--steps", type=int, default=200, help="timed steps per configuration")
  parser.add_argument("--warmup", type=int, default=20)
  parser.add_argument("--json", help="also write the results to this file")
  args = parser.parse_args(argv)
  devices = _configure_devices(args.device)
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  def mirrored(devs):
    return tf.distribute.MirroredStrategy(devs)

  work_dir = tempfile.mkdtemp(prefix="distribute_mlp_")
  runs = [
      ("none", None, 256, devices[0]),
      ("MirroredStrategy, 1 device", mirrored(devices[:1]), 256, devices[0]),
      ("MirroredStrategy, 2 devices", mirrored(devices), 256, ",".join(devices)),
      ("MirroredStrategy, 2 devices", mirrored(devices), 128, ",".join(devices)),
  ]
  results = []
  for name, strategy, batch_size, used in runs:
    result = _measure(name, strategy, batch_size, used, args.steps, args.warmup, work_dir)
    print(json.dumps(result), flush=True)
    results.append(result)
  info = {"tensorflow": tf.__version__, "python": platform.python_version(),
          "device": args.device, "cpus": os.cpu_count(),
          "gpus": [d.name for d in tf.config.list_physical_devices("GPU")],
          "timed_steps": args.steps, "warmup_steps": args.warmup}
  print(json.dumps(info))
  print("\n| configuration | devices | batch per replica | examples per step | steps/s | examples/s |")
  print("|---|---|---|---|---|---|")
  for r in results:
    print(f"| {r['configuration']} | {r['devices']} | {r['batch_per_replica']} | "
          f"{r['examples_per_step']} | {r['steps_per_sec']} | {r['examples_per_sec']} |")
  if args.json:
    with open(args.json, "w") as f:
      json.dump({"machine": info, "results": results}, f, indent=1)


if __name__ == "__main__":
  main()
