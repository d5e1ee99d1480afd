"""Fuzzing: arbitrary TF_CONFIGs and constructor arguments give only the library's own errors.

"Own" is checked on the traceback: the exception must be raised from a frame
in estimator_lite, with a message, never from deep inside TensorFlow or the
standard library.
"""
import json
import os
import traceback

import hypothesis
from hypothesis import strategies as st
import pytest
import tensorflow as tf

import estimator_lite as est
from estimator_lite._cluster import tf_config as _tf_config

_SETTINGS = hypothesis.settings(max_examples=150, deadline=None, derandomize=True,
                                suppress_health_check=[hypothesis.HealthCheck.too_slow])

_json_scalars = st.none() | st.booleans() | st.integers(-5, 5) | st.floats(
    allow_nan=True) | st.text(max_size=12)
_json = st.recursive(_json_scalars,
                     lambda inner: st.lists(inner, max_size=4) |
                     st.dictionaries(st.text(max_size=8), inner, max_size=4),
                     max_leaves=12)
_job = st.sampled_from(["chief", "worker", "ps", "master", "evaluator", "boss", ""])
_address = st.sampled_from(["localhost:2222", "h:1", "nohost", "", 7]) | st.text(max_size=6)
_cluster = st.dictionaries(_job, st.lists(_address, max_size=3) | _json, max_size=4)
_task = st.fixed_dictionaries({}, optional={"type": _job | _json,
                                            "index": st.integers(-2, 4) | _json})
_tf_configs = st.fixed_dictionaries(
    {}, optional={"cluster": _cluster | _json, "task": _task | _json,
                  "environment": st.sampled_from(["cloud", "local"]) | _json})


def _raised_by_us(error):
  frames = traceback.extract_tb(error.__traceback__)
  return frames and f"{os.sep}estimator_lite{os.sep}" in frames[-1].filename


def _check_error(error):
  assert isinstance(error, (ValueError, TypeError)), repr(error)
  assert _raised_by_us(error), "".join(traceback.format_exception(error))
  assert str(error).strip()


@_SETTINGS
@hypothesis.given(_tf_configs | _json)
def test_tf_config_parser_gives_only_its_own_errors(config):
  try:
    role = _tf_config.parse_tf_config(json.dumps(config))
  except _tf_config.TFConfigError as e:
    _check_error(e)
    assert "TF_CONFIG" in str(e)
    return
  # Any job of "cluster" may be a task's type, as in tf.estimator.
  assert role.task_type in _tf_config.TASK_TYPES or role.task_type in config["cluster"]
  assert role.task_id >= 0


@_SETTINGS
@hypothesis.given(st.text(max_size=40))
def test_tf_config_parser_survives_any_text(raw):
  try:
    _tf_config.parse_tf_config(raw)
  except _tf_config.TFConfigError as e:
    _check_error(e)


_values = (st.none() | st.booleans() | st.integers(-3, 10**6) | st.floats(allow_nan=True) |
           st.text(max_size=5) | st.lists(st.integers(), max_size=2))
_run_config_args = st.fixed_dictionaries({}, optional={
    name: _values for name in (
        "model_dir", "tf_random_seed", "save_summary_steps", "save_checkpoints_steps",
        "save_checkpoints_secs", "session_config", "keep_checkpoint_max",
        "keep_checkpoint_every_n_hours", "log_step_count_steps", "device_fn",
        "session_creation_timeout_secs", "steps_per_loop")})


@_SETTINGS
@hypothesis.given(_run_config_args)
def test_run_config_gives_only_its_own_errors(kwargs):
  try:
    config = est.RunConfig(**kwargs)
  except (ValueError, TypeError) as e:
    _check_error(e)
    return
  assert config.replace(tf_random_seed=1).tf_random_seed == 1


_modes = st.sampled_from([est.ModeKeys.TRAIN, est.ModeKeys.EVAL, est.ModeKeys.PREDICT,
                          "training", None, 3])
_slots = st.sampled_from(["none", "scalar", "vector", "number", "string", "dict", "list",
                          "op", "pair", "metric_dict"])


def _make(slot, graph):
  with graph.as_default():
    return {
        "none": None,
        "scalar": tf.constant(1.0),
        "vector": tf.constant([1.0, 2.0]),
        "number": 1.5,
        "string": "loss",
        "dict": {"a": tf.constant([1.0])},
        "list": [tf.constant(1.0)],
        "op": tf.no_op(),
        "pair": (tf.constant(1.0), tf.no_op()),
        "metric_dict": {"m": (tf.constant(1.0), tf.no_op())},
    }[slot]


@_SETTINGS
@hypothesis.given(_modes, _slots, _slots, _slots, _slots, _slots)
def test_estimator_spec_gives_only_its_own_errors(mode, predictions, loss, train_op,
                                                  eval_metric_ops, hooks):
  graph = tf.Graph()
  kwargs = {name: _make(slot, graph) for name, slot in [
      ("predictions", predictions), ("loss", loss), ("train_op", train_op),
      ("eval_metric_ops", eval_metric_ops), ("training_hooks", hooks)]}
  with graph.as_default():
    try:
      spec = est.EstimatorSpec(mode, **kwargs)
    except (ValueError, TypeError) as e:
      _check_error(e)
      return
  assert spec.mode == mode
  if mode in (est.ModeKeys.TRAIN, est.ModeKeys.EVAL):
    assert spec.loss is not None


def test_estimator_spec_error_names_mode_and_field():
  with tf.Graph().as_default():
    with pytest.raises(ValueError, match=r"Missing loss.*'eval'"):
      est.EstimatorSpec(est.ModeKeys.EVAL, predictions=tf.constant([1.0]))
