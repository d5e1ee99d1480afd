"""TrainSpec, EvalSpec and train_and_evaluate in one process: local mode and the evaluator task."""
import glob
import json
import os
import re
import threading

import pytest
import tensorflow as tf

import estimator_lite as est
from estimator_lite import launch
from conftest import one_weight_input_fn as input_fn
from conftest import one_weight_model_fn as model_fn


class RecordingExporter:
  """A user exporter (name + export): records each call and returns a fake export path."""

  def __init__(self, name="recorder"):
    self.name = name
    self.calls = []

  def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
    del estimator
    step = int(eval_result["global_step"])
    self.calls.append((export_path, os.path.basename(checkpoint_path), step, is_the_final_export))
    return os.path.join(export_path, str(step))


class CountingListener(est.CheckpointSaverListener):

  def __init__(self):
    self.saved_steps = []

  def after_save(self, session, global_step_value):
    self.saved_steps.append(global_step_value)


class CountingHook(est.SessionRunHook):

  def __init__(self):
    self.runs = 0

  def after_run(self, run_context, run_values):
    self.runs += 1


def eval_event_steps(model_dir, name=None):
  """Global steps of the evaluation points written to model_dir/eval[_NAME]."""
  steps = []
  pattern = os.path.join(model_dir, "eval_" + name if name else "eval", "events.out.tfevents.*")
  for path in glob.glob(pattern):
    for event in tf.compat.v1.train.summary_iterator(path):
      if any(value.tag == "loss" for value in event.summary.value):
        steps.append(event.step)
  return sorted(steps)


@pytest.fixture
def local(monkeypatch):
  monkeypatch.delenv("TF_CONFIG", raising=False)


def estimator_for(model_dir, **config):
  return est.Estimator(model_fn, config=est.RunConfig(model_dir=str(model_dir), **config))


# -- local mode ---------------------------------------------------------------------
def test_local_train_and_evaluate_evaluates_after_each_save_and_returns_the_last(local, tmp_path):
  estimator = estimator_for(tmp_path, save_checkpoints_steps=5)
  exporter, listener, hook = RecordingExporter(), CountingListener(), CountingHook()
  train_spec = est.TrainSpec(input_fn, max_steps=15, hooks=[hook], saving_listeners=[listener])
  eval_spec = est.EvalSpec(input_fn, steps=2, name="holdout", exporters=exporter,
                           start_delay_secs=0, throttle_secs=0)

  eval_result, export_results = est.train_and_evaluate(estimator, train_spec, eval_spec)

  assert eval_result["global_step"] == 15
  assert set(eval_result) == {"loss", "global_step"}
  # Not the save made when the session starts; every later one.
  assert eval_event_steps(str(tmp_path), "holdout") == [5, 10, 15]
  export_path = os.path.join(str(tmp_path), "export", "recorder")
  assert exporter.calls == [(export_path, "model.ckpt-5", 5, False),
                            (export_path, "model.ckpt-10", 10, False),
                            (export_path, "model.ckpt-15", 15, True)]
  assert export_results == [os.path.join(export_path, "15")]
  assert listener.saved_steps == [0, 5, 10, 15] and hook.runs == 15

  # Already at max_steps: nothing to train, nothing new to evaluate.
  assert est.train_and_evaluate(estimator, train_spec, eval_spec) == (None, None)


def test_throttle_secs_skips_saves_but_the_final_checkpoint_is_evaluated(local, tmp_path):
  estimator = estimator_for(tmp_path, save_checkpoints_steps=5)
  eval_spec = est.EvalSpec(input_fn, steps=1, start_delay_secs=0, throttle_secs=600)
  eval_result, export_results = est.train_and_evaluate(
      estimator, est.TrainSpec(input_fn, max_steps=20), eval_spec)
  assert eval_event_steps(str(tmp_path)) == [5, 20]
  assert eval_result["global_step"] == 20 and export_results == []


def test_every_n_steps_evaluates_at_each_multiple_and_at_the_end(local, tmp_path):
  estimator = estimator_for(tmp_path, save_checkpoints_steps=5)
  # throttle_secs is ignored when every_n_steps is set.
  eval_spec = est.EvalSpec(input_fn, steps=1, start_delay_secs=0, throttle_secs=600,
                           every_n_steps=10)
  eval_result, _ = est.train_and_evaluate(
      estimator, est.TrainSpec(input_fn, max_steps=25), eval_spec)
  assert eval_event_steps(str(tmp_path)) == [10, 20, 25]
  assert eval_result["global_step"] == 25


def serving_input_receiver_fn():
  x = tf.compat.v1.placeholder(tf.float32, [None, 1], name="x")
  return est.export.ServingInputReceiver({"x": x}, {"x": x})


def test_saved_model_exporters_run_after_each_evaluation(local, tmp_path):
  estimator = estimator_for(tmp_path, save_checkpoints_steps=5)
  exporters = [est.LatestExporter("latest", serving_input_receiver_fn, exports_to_keep=1),
               est.FinalExporter("final", serving_input_receiver_fn)]
  eval_spec = est.EvalSpec(input_fn, steps=1, exporters=exporters, start_delay_secs=0,
                           throttle_secs=0)
  _, export_results = est.train_and_evaluate(
      estimator, est.TrainSpec(input_fn, max_steps=10), eval_spec)
  latest_dir, final_dir = (os.path.join(str(tmp_path), "export", name)
                           for name in ("latest", "final"))
  # The exporters' results: export directories as bytes, as in tf.estimator.
  assert all(isinstance(result, bytes) for result in export_results)
  export_results = [os.fsdecode(result) for result in export_results]
  assert [os.path.dirname(r) for r in export_results] == [latest_dir, final_dir]
  for result in export_results:
    assert os.path.exists(os.path.join(result, "saved_model.pb"))
  # Evaluated at steps 5 and 10: LatestExporter exported both and kept one;
  # FinalExporter exported only the final checkpoint.
  assert os.listdir(latest_dir) == [os.path.basename(export_results[0])]
  assert os.listdir(final_dir) == [os.path.basename(export_results[1])]


def test_ai_platform_master_with_job_key_trains_and_evaluates(monkeypatch, tmp_path):
  # Google Cloud AI Platform's TF_CONFIG for a single "master" replica: a
  # one-node cluster (trained in-process, no server), a "job" key and extra
  # task keys that estimator_lite does not use, and "environment": "cloud".
  port, = launch.free_ports(1)
  monkeypatch.setenv("TF_CONFIG", json.dumps({
      "cluster": {"master": [f"localhost:{port}"]},
      "task": {"type": "master", "index": 0, "cloud": "q1a2b3", "trial": ""},
      "job": {"python_module": "trainer.task", "args": ["--model_dir", str(tmp_path)],
              "region": "us-central1", "scale_tier": "BASIC"},
      "environment": "cloud"}))
  estimator = estimator_for(tmp_path, save_checkpoints_steps=5)
  assert (estimator.config.task_type, estimator.config.is_chief) == ("master", True)
  eval_spec = est.EvalSpec(input_fn, steps=1, start_delay_secs=0, throttle_secs=0)

  assert est.train_and_evaluate(estimator, est.TrainSpec(input_fn, max_steps=10),
                                eval_spec) is None  # a cluster role, as tf.estimator
  # The master trained to max_steps and evaluated after each save.
  assert estimator.get_variable_value("global_step") == 10
  assert eval_event_steps(str(tmp_path)) == [5, 10]


# -- the evaluator task ---------------------------------------------------------------
def _run_with_timeout(target, timeout):
  outcome = {}

  def run():
    try:
      outcome["result"] = target()
    except BaseException as e:  # pylint: disable=broad-except
      outcome["error"] = e

  thread = threading.Thread(target=run, daemon=True)
  thread.start()
  thread.join(timeout)
  assert not thread.is_alive(), f"still running after {timeout} s"
  if "error" in outcome:
    raise outcome["error"]
  return outcome["result"]


def test_evaluator_skips_a_checkpoint_deleted_before_it_is_read(monkeypatch, tmp_path):
  model_dir = str(tmp_path)
  monkeypatch.delenv("TF_CONFIG", raising=False)
  estimator_for(model_dir, save_checkpoints_steps=5, keep_checkpoint_max=0).train(
      input_fn, max_steps=10)

  def ckpt(step):
    return os.path.join(model_dir, f"model.ckpt-{step}")

  # As the chief's index looked when step 5 was the newest checkpoint.
  tf.compat.v1.train.update_checkpoint_state(model_dir, ckpt(5), [ckpt(0), ckpt(5)])

  def eval_input_fn():
    if os.path.exists(ckpt(5) + ".index"):
      # Between the evaluator choosing ckpt-5 and reading it, the chief saves
      # step 10 and keep_checkpoint_max deletes step 5.
      tf.compat.v1.train.update_checkpoint_state(model_dir, ckpt(10), [ckpt(10)])
      for path in glob.glob(ckpt(5) + ".*"):
        os.remove(path)
    return input_fn()

  monkeypatch.setenv("TF_CONFIG", json.dumps({
      "cluster": {"chief": ["localhost:1"], "ps": ["localhost:2"]},
      "task": {"type": "evaluator", "index": 0}}))
  evaluator = estimator_for(model_dir)
  assert evaluator.config.task_type == "evaluator"
  exporter = RecordingExporter("best")
  eval_spec = est.EvalSpec(eval_input_fn, steps=1, exporters=[exporter],
                           start_delay_secs=0, throttle_secs=0)

  result = _run_with_timeout(lambda: est.train_and_evaluate(
      evaluator, est.TrainSpec(input_fn, max_steps=10), eval_spec), timeout=120)

  assert result is None  # as tf.estimator, for every cluster role
  assert eval_event_steps(model_dir) == [10]  # ckpt-5 was skipped, and not retried
  assert exporter.calls == [(os.path.join(model_dir, "export", "best"), "model.ckpt-10", 10, True)]


def test_evaluator_skips_a_damaged_checkpoint_and_evaluates_the_next(monkeypatch, tmp_path,
                                                                     tf_logs):
  model_dir = str(tmp_path)
  monkeypatch.delenv("TF_CONFIG", raising=False)
  estimator_for(model_dir, save_checkpoints_steps=5).train(input_fn, max_steps=10)

  def ckpt(step):
    return os.path.join(model_dir, f"model.ckpt-{step}")

  # ckpt-5 is the newest when the evaluator starts; its data file is damaged
  # (cut short, as by a storage fault) but still there. The chief goes on and
  # saves step 10 while the evaluator reads it.
  tf.compat.v1.train.update_checkpoint_state(model_dir, ckpt(5), [ckpt(0), ckpt(5)])
  (data,) = glob.glob(ckpt(5) + ".data-*")
  with open(data, "r+b") as f:
    f.truncate(os.path.getsize(data) // 2)

  def eval_input_fn():
    tf.compat.v1.train.update_checkpoint_state(model_dir, ckpt(10), [ckpt(5), ckpt(10)])
    return input_fn()

  monkeypatch.setenv("TF_CONFIG", json.dumps({
      "cluster": {"chief": ["localhost:1"], "ps": ["localhost:2"]},
      "task": {"type": "evaluator", "index": 0}}))
  eval_spec = est.EvalSpec(eval_input_fn, steps=1, start_delay_secs=0, throttle_secs=0)
  _run_with_timeout(lambda: est.train_and_evaluate(
      estimator_for(model_dir), est.TrainSpec(input_fn, max_steps=10), eval_spec), timeout=120)

  assert eval_event_steps(model_dir) == [10]
  assert re.search(rf"Checkpoint {re.escape(ckpt(5))} cannot be read \(.+\); skipping it\.",
                   tf_logs.text), tf_logs.text[-3000:]
  # The final checkpoint is never skipped: damaged, it is an error.
  (data,) = glob.glob(ckpt(10) + ".data-*")
  with open(data, "r+b") as f:
    f.truncate(os.path.getsize(data) // 2)
  with pytest.raises(tf.errors.OutOfRangeError, match="Read less bytes than requested"):
    _run_with_timeout(lambda: est.train_and_evaluate(
        estimator_for(model_dir), est.TrainSpec(input_fn, max_steps=10),
        est.EvalSpec(input_fn, steps=1, start_delay_secs=0, throttle_secs=0)), timeout=120)


# -- the specs -------------------------------------------------------------------------
def test_specs_are_frozen_validated_and_replaceable():
  train_spec = est.TrainSpec(input_fn, 100)
  assert (train_spec.max_steps, train_spec.hooks, train_spec.saving_listeners) == (100, (), ())
  with pytest.raises(AttributeError):
    train_spec.max_steps = 5
  assert train_spec.replace(max_steps=5).max_steps == 5
  assert train_spec._replace(max_steps=7).max_steps == 7  # tf.estimator's namedtuple spelling
  with pytest.raises(ValueError, match=r"Must specify max_steps > 0, given: 0"):
    train_spec.replace(max_steps=0)

  eval_spec = est.EvalSpec(input_fn)
  assert (eval_spec.steps, eval_spec.name, eval_spec.start_delay_secs, eval_spec.throttle_secs,
          eval_spec.every_n_steps) == (100, None, 120, 600, None)
  # Positional order is tf.estimator's; every_n_steps is keyword-only.
  positional = est.EvalSpec(input_fn, 5, "n", None, None, 1, 2)
  assert (positional.steps, positional.name, positional.start_delay_secs,
          positional.throttle_secs) == (5, "n", 1, 2)
  with pytest.raises(TypeError):
    est.EvalSpec(input_fn, 5, "n", None, None, 1, 2, 10)  # pylint: disable=too-many-function-args
  assert eval_spec.replace(every_n_steps=10).every_n_steps == 10
  # A whole-number float, as tf.estimator programs write max_steps=1e6.
  assert est.TrainSpec(input_fn, max_steps=1e6).max_steps == 1e6


@pytest.mark.parametrize("make, error, message", [
    (lambda: est.TrainSpec("input.csv"), TypeError, "`input_fn` must be callable, given: input.csv"),
    (lambda: est.TrainSpec(input_fn, max_steps=-3), ValueError,
     "Must specify max_steps > 0, given: -3"),
    (lambda: est.TrainSpec(input_fn, max_steps=1.5), TypeError,
     "max_steps must be an int or None, given: 1.5"),
    (lambda: est.TrainSpec(input_fn, hooks=["not a hook"]), TypeError,
     "All hooks must be `SessionRunHook` instances, given: not a hook"),
    (lambda: est.TrainSpec(input_fn, saving_listeners=[CountingHook()]), TypeError,
     "All saving_listeners must be `CheckpointSaverListener` instances"),
    (lambda: est.EvalSpec(input_fn, steps=0), ValueError, "Must specify steps > 0, given: 0"),
    (lambda: est.EvalSpec(input_fn, name=3), TypeError, "`name` must be string, given: 3"),
    (lambda: est.EvalSpec(input_fn, start_delay_secs=-1), ValueError,
     "Must specify start_delay_secs >= 0, given: -1"),
    (lambda: est.EvalSpec(input_fn, throttle_secs=-1), ValueError,
     "Must specify throttle_secs >= 0, given: -1"),
    (lambda: est.EvalSpec(input_fn, every_n_steps=0), ValueError,
     "Must specify every_n_steps > 0, given: 0"),
    (lambda: est.EvalSpec(input_fn, exporters=[RecordingExporter("a"), RecordingExporter("a")]),
     ValueError, "`exporters` must have unique names. Such a name cannot be `None`. All exporter "
     "names: ['a', 'a']"),
    (lambda: est.EvalSpec(input_fn, exporters=[RecordingExporter("")]), ValueError,
     "An Exporter cannot have a name that is `None` or empty"),
    (lambda: est.EvalSpec(input_fn, exporters=[RecordingExporter(7)]), ValueError,
     "An Exporter must have a string name"),
    (lambda: est.EvalSpec(input_fn, exporters=["latest"]), TypeError,
     "`exporters` must be an Exporter, an iterable of Exporter, or `None`"),
])
def test_bad_spec_arguments_are_refused_with_the_reason(make, error, message):
  with pytest.raises(error) as raised:
    make()
  assert message in str(raised.value)


def test_train_and_evaluate_checks_its_arguments(local, tmp_path):
  estimator = estimator_for(tmp_path)
  train_spec, eval_spec = est.TrainSpec(input_fn), est.EvalSpec(input_fn)
  # tf.estimator's texts, which name its classes.
  with pytest.raises(TypeError, match=r"^`estimator` must have type `tf\.estimator\.Estimator`\. "
                                      r"Got: <class 'str'>"):
    est.train_and_evaluate("estimator", train_spec, eval_spec)
  with pytest.raises(TypeError, match=r"^`train_spec` must have type `tf\.estimator\.TrainSpec`\. "
                                      r"Got: <class 'estimator_lite\.training\.EvalSpec'>"):
    est.train_and_evaluate(estimator, eval_spec, eval_spec)
  with pytest.raises(TypeError, match=r"^`eval_spec` must have type `tf\.estimator\.EvalSpec`\. "
                                      r"Got: <class 'NoneType'>"):
    est.train_and_evaluate(estimator, train_spec, None)
