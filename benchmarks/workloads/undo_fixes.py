"""Undoes estimator_lite's per-step fixes in this process, to measure them (before/after).

A workload calls `apply()` after importing estimator_lite; the environment
variable ESTIMATOR_LITE_BENCH_UNDO lists, comma-separated, what to undo:

  fast_session  FastSession.run calls Session.run exactly as TensorFlow's
                MonitoredSession would (RunOptions/RunMetadata every step, no
                cached callables);
  step_read     the global-step read shared by the hooks is TensorFlow's
                default one (a tf.cond on is_variable_initialized).

Only benchmarks/ab_fixes.py and `run.py --undo` set it; it never affects users.
"""
import os

ENV_VAR = "ESTIMATOR_LITE_BENCH_UNDO"
FIXES = ("fast_session", "step_read")


def apply():
  """Applies the undo list from the environment; returns it."""
  undo = [name for name in os.environ.get(ENV_VAR, "").split(",") if name]
  unknown = [name for name in undo if name not in FIXES]
  if unknown:
    raise ValueError(f"{ENV_VAR}={os.environ[ENV_VAR]!r}: unknown {unknown}; known {FIXES}")
  if not undo:
    return undo
  from estimator_lite import _fast_session  # pylint: disable=g-import-not-at-top
  if "fast_session" in undo:
    def plain_run(self, fetches, feed_dict=None, options=None, run_metadata=None):
      return self._session.run(fetches, feed_dict=feed_dict, options=options,  # pylint: disable=protected-access
                               run_metadata=run_metadata)
    _fast_session.FastSession.run = plain_run
  if "step_read" in undo:
    from tensorflow.python.training import training_util  # pylint: disable=g-import-not-at-top,g-direct-tensorflow-import
    _fast_session.create_global_step_read = training_util._get_or_create_global_step_read  # pylint: disable=protected-access
  return undo
