"""The one place in benchmarks/ that reaches into estimator_lite's private modules.

They move as the package is restructured: each function fetches one thing,
so a move is followed here only. The imports are inside the functions: the
reference venv (TF 2.15) imports benchmark modules without estimator_lite.
"""


def fast_session_class():
  """FastSession: the session MonitoredSession and the hooks see in Estimator.train."""
  from estimator_lite._session.fast_session import FastSession  # pylint: disable=g-import-not-at-top
  return FastSession


def cached_callables(session):
  """How many compiled steps a FastSession holds (None for any other session)."""
  return session.cached_steps if isinstance(session, fast_session_class()) else None


def step_read_factory():
  """(module, name) of the function making the hooks' shared global-step read (Estimator.train
  looks it up on the module at each call: ab_fixes replaces it there)."""
  from estimator_lite._graph import global_step  # pylint: disable=g-import-not-at-top
  return global_step, "create_shared_read"


def training_step_hook_class():
  """TrainingStepHook: estimator_lite's one hook in place of TensorFlow's five per-step hooks."""
  from estimator_lite._session.step_hook import TrainingStepHook  # pylint: disable=g-import-not-at-top
  return TrainingStepHook


def sigterm_watcher_class():
  """SigtermWatcher, whose hook() Estimator.train adds."""
  from estimator_lite._session.preemption import SigtermWatcher  # pylint: disable=g-import-not-at-top
  return SigtermWatcher


def checkpoint_saver_hook_class():
  """SafeCheckpointSaverHook: the chief's checkpoint saver in Estimator.train."""
  from estimator_lite._session.checkpoints import SafeCheckpointSaverHook  # pylint: disable=g-import-not-at-top
  return SafeCheckpointSaverHook


def examples_per_second_hook_class():
  """ExamplesPerSecondHook: the step-rate hook TPUEstimator adds (a StepCounterHook)."""
  from estimator_lite.tpu.examples_per_second import ExamplesPerSecondHook  # pylint: disable=g-import-not-at-top
  return ExamplesPerSecondHook
