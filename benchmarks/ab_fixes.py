"""Before/after figures for estimator_lite's per-step fixes, checked to measure what they claim.

    python benchmarks/run.py ab-fixes [--rounds 5] [--model linear] [--steps 6000]

estimator_lite trains (workload.run(undo=...)) with combinations of its fixes
undone in that fresh process, and the bare loop for scale, rounds interleaved.
The fixes' "before": fast_session, FastSession.run calls Session.run as
MonitoredSession does (RunOptions/RunMetadata every step, no compiled
callables); step_read, the hooks' shared step read is TensorFlow's (a tf.cond).
A monkeypatch that silently misses would measure "after" twice: undo() checks
that each replacement is in place and differs from what it replaced, check()
that the run used a tf.cond read exactly when step_read is undone, and filled
FastSession's callable cache exactly when fast_session is not.
"""
import statistics

import lite_internals

FIXES = ("fast_session", "step_read")
VARIANTS = (  # (label, system, fixes undone; None: not estimator_lite, nothing to check)
    ("before: TensorFlow's path, tf.cond step read", "estimator_lite", "fast_session,step_read"),
    ("FastSession only", "estimator_lite", "step_read"),
    ("plain step read only", "estimator_lite", "fast_session"),
    ("after: both (estimator_lite as shipped)", "estimator_lite", ""),
    ("bare Session.run loop (for scale)", "bare", None))


def _names(undo):
  names = [name for name in undo.split(",") if name]
  if set(names) - set(FIXES):
    raise ValueError(f"undo {undo!r}: unknown {sorted(set(names) - set(FIXES))}; known {FIXES}")
  return names


def _replace(owner, name, replacement):
  if getattr(owner, name) is replacement:
    raise AssertionError(f"{owner.__name__}.{name} already is the code from before the fix: "
                         "undoing it would measure the same code twice")
  setattr(owner, name, replacement)
  if getattr(owner, name) is not replacement:
    raise AssertionError(f"{owner.__name__}.{name} could not be replaced")


def undo(undo_list):
  """Puts back, in this process, the code from before the named fixes (comma-separated)."""
  names = _names(undo_list)
  if "fast_session" in names:
    def plain_run(self, fetches, feed_dict=None, options=None, run_metadata=None):
      return self.wrapped_session.run(fetches, feed_dict=feed_dict, options=options,
                                      run_metadata=run_metadata)
    _replace(lite_internals.fast_session_class(), "run", plain_run)
  if "step_read" in names:
    from tensorflow.python.training import training_util  # pylint: disable=g-import-not-at-top,g-direct-tensorflow-import
    _replace(*lite_internals.step_read_factory(), training_util._get_or_create_global_step_read)  # pylint: disable=protected-access


def has_cond(tensor):
  """Whether `tensor` is computed through a tf.cond (v2: If; v1: Switch/Merge)."""
  stack, seen = [tensor.op], set()
  while stack and len(seen) < 100:
    op = stack.pop()
    if op.type in ("If", "StatelessIf", "Switch", "Merge"):
      return True
    if op.name not in seen:
      seen.add(op.name)
      stack.extend(i.op for i in op.inputs)
  return False


def check(undo_list, seen):
  """Raises unless a run (workload.py's `seen` record) ran what `undo_list` says it did."""
  names = _names(undo_list)
  expected = {"step_read_has_cond": "step_read" in names,
              "used_callables": "fast_session" not in names}
  actual = {"step_read_has_cond": seen.get("step_read_has_cond"),
            "used_callables": bool(seen.get("cached_callables"))}
  if seen.get("cached_callables") is None or actual != expected:
    raise AssertionError(f"undo {undo_list!r} should have run {expected}, but the run saw "
                         f"{seen}: 'before' would not be the code from before the fixes")


def measure(train, rounds=5, model="linear", steps=6000):
  """A markdown table of VARIANTS; train(system, model, steps, undo) -> workload.py's result."""
  results = {label: [] for label, _, _ in VARIANTS}
  for index in range(rounds):
    for label, system, undone in VARIANTS:
      result = train(system, model, steps, undone)
      if undone is not None:
        check(undone, result["seen"])
      results[label].append(result)
      print(f"round {index + 1}: {label}: {result['steps_per_sec']:.0f} steps/s", flush=True)
  lines = [f"| {model}, {steps} steps, {rounds} rounds | steps/s median [min–max] | µs/step "
           "| train() → first step, s |", "|---|---|---|---|"]
  for label, runs in results.items():
    rates = [r["steps_per_sec"] for r in runs]
    median, first = statistics.median(rates), statistics.median(r["first_step_s"] for r in runs)
    lines.append(f"| {label} | {median:.0f} [{min(rates):.0f}–{max(rates):.0f}] | "
                 f"{1e6 / median:.0f} | {first:.2f} |")
  return "\n".join(lines)
