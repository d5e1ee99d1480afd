"""What the benchmark measures: systems, models, targets (each written once here), mode settings.

run.py runs every system on every model, and the pairs that pairs() derives
from TARGETS; report.py judges each target from the same table.
"""
import collections

System = collections.namedtuple("System", "key label kind steps_per_loop reference options",
                                defaults=(None,))
# kind: what workload.py trains; reference: runs on the reference venv (TF 2.15);
# options: more of workload.run's arguments (benchmarks/tpu_estimator.py's systems).
SYSTEMS = (
    System("tf_estimator", "tf.estimator 2.15", "tf_estimator", 1, True),
    System("estimator_lite", "estimator_lite", "estimator_lite", 1, False),
    System("estimator_lite_k100", "estimator_lite K=100", "estimator_lite", 100, False),
    System("bare", "bare Session.run", "bare", 1, False),
    System("in_graph", "in-graph loop K=100", "in_graph", 100, False),
    # The bare loop on TF 2.15: what TensorFlow itself gained or lost since.
    System("bare_tf215", "bare Session.run, TF 2.15", "bare", 1, True))
MODELS = ("linear", "mlp", "wide_deep")

Target = collections.namedtuple("Target", "models a b bound figure")
# On each of `models`, A's figure / B's: at least `bound` for steps_per_sec,
# at most `bound` for first_step_s (a time).
TARGETS = (
    Target(MODELS, "estimator_lite", "tf_estimator", 1.0, "steps_per_sec"),
    Target(("linear",), "estimator_lite", "bare", 0.9, "steps_per_sec"),
    Target(("linear",), "estimator_lite_k100", "tf_estimator", 3.0, "steps_per_sec"),
    Target(MODELS, "estimator_lite_k100", "in_graph", 0.9, "steps_per_sec"),
    Target(MODELS, "estimator_lite", "tf_estimator", 1.0, "first_step_s"))
# Pairs without a target, that explain the others: the control pair (the
# in-graph loop against itself) shows how far two identical systems' ratios
# spread on this machine; on wide_deep, estimator_lite against TF 2.21's bare
# loop, and that loop against TF 2.15's, split our cost from TensorFlow's.
UNTARGETED_PAIRS = (("linear", "in_graph", "in_graph"), ("wide_deep", "estimator_lite", "bare"),
                    ("wide_deep", "bare", "bare_tf215"))


def higher_is_better(target):
  return target.figure == "steps_per_sec"


def pairs(model):
  """[(A key, B key, bound or None)] trained in turns on `model`: every steps/s target
  (a time to first step cannot be measured in turns), then UNTARGETED_PAIRS."""
  return ([(t.a, t.b, t.bound) for t in TARGETS if higher_is_better(t) and model in t.models]
          + [(a, b, None) for m, a, b in UNTARGETED_PAIRS if m == model])


def target_of(model, a, b):
  """The bound that TARGETS sets on pair (A, B)'s steps/s on `model`, or None."""
  return next((bound for a_, b_, bound in pairs(model) if (a_, b_) == (a, b)), None)


# Per mode: fresh-process runs per (system, model), their training steps
# (multiples of 100); the pairs' steps and rounds (the linear model's swing
# most: more rounds); evaluator checkpoints; step_costs' steps.
PROFILES = {
    "full": dict(runs=5, steps={"linear": 4000, "mlp": 600, "wide_deep": 600},
                 pair_steps={"linear": 10000, "mlp": 1000, "wide_deep": 1000},
                 pair_rounds={"linear": 11, "mlp": 5, "wide_deep": 5},
                 eval_ckpts=5, cost_steps=1000, models=MODELS),
    "quick": dict(runs=1, steps={"linear": 2000, "mlp": 300, "wide_deep": 300},
                  pair_steps={"linear": 2000, "mlp": 300, "wide_deep": 300},
                  pair_rounds={"linear": 1, "mlp": 1, "wide_deep": 1},
                  eval_ckpts=3, cost_steps=500, models=MODELS),
    "smoke": dict(runs=1, steps={"linear": 300}, pair_steps={"linear": 300},
                  pair_rounds={"linear": 1}, eval_ckpts=0, cost_steps=0, models=("linear",)),
}
