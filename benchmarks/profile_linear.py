"""cProfile of estimator_lite training the linear model: where the per-step time goes.

    PYTHONPATH=. python benchmarks/profile_linear.py [--steps 3000] [--steps-per-loop 1]
        [--system estimator_lite|tf_estimator|bare] [--top 25]

Profiles the whole train() call in this process and prints, per training step,
the functions with the most own time and the most cumulative time (µs/step).
Session.run's C++ work shows up as the own time of `_call_tf_sessionrun`.
With the reference venv's python and `--system tf_estimator` it profiles
tf.estimator 2.15 the same way.
"""
import argparse
import cProfile
import io
import os
import pstats
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "workloads"))

import train  # pylint: disable=g-import-not-at-top,wrong-import-position


def profile(system, steps, steps_per_loop, top):
  """Returns the report text."""
  profiler = cProfile.Profile()
  profiler.enable()
  result = train.run(system, "linear", steps, steps_per_loop)
  profiler.disable()
  out = io.StringIO()
  stats = pstats.Stats(profiler, stream=out)
  total_steps = result["final_step"]
  lines = [f"{system} linear, {total_steps} steps, steps_per_loop={steps_per_loop}, "
           f"TF {result['tf_version']}: {result['steps_per_sec']:.0f} steps/s under the "
           "profiler", ""]
  for key, title in (("tottime", "own time"), ("cumtime", "cumulative time")):
    rows = []
    for (filename, line, name), (_, calls, tottime, cumtime, _) in stats.stats.items():
      rows.append((tottime if key == "tottime" else cumtime, calls, filename, line, name))
    rows.sort(reverse=True)
    lines.append(f"Top {top} by {title} (µs per training step; calls per step):")
    for seconds, calls, filename, line, name in rows[:top]:
      where = f"{os.path.basename(filename)}:{line}" if line else filename
      lines.append(f"  {1e6 * seconds / total_steps:9.1f}  {calls / total_steps:6.2f}  "
                   f"{name} ({where})")
    lines.append("")
  return "\n".join(lines)


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--system", default="estimator_lite",
                      choices=("estimator_lite", "tf_estimator", "bare"))
  parser.add_argument("--steps", type=int, default=3000)
  parser.add_argument("--steps-per-loop", type=int, default=1)
  parser.add_argument("--top", type=int, default=25)
  args = parser.parse_args()
  print(profile(args.system, args.steps, args.steps_per_loop, args.top))


if __name__ == "__main__":
  main()
