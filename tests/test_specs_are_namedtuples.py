"""The classes that were namedtuples in tf.estimator 2.15 are namedtuples here, still validated.

Programs unpack specs (`mode, predictions, loss, *_ = spec`), test
`isinstance(spec, tuple)`, call `_replace`, `_asdict` and `_fields`, and
compare specs. Which classes were namedtuples, and their fields in order,
comes from tf.estimator 2.15's list of public names
(estimator_lite/_porting/tf_estimator_2_15_api.json, written in its venv).
"""
import json

import pytest
import tensorflow as tf

import estimator_lite as est
from estimator_lite._porting import names

_SIX = ("EstimatorSpec", "TrainSpec", "EvalSpec", "WarmStartSettings",
        "export.ServingInputReceiver", "export.TensorServingInputReceiver")


def _namedtuples_of_2_15():
  with open(names._PUBLIC_API_FILE) as f:  # pylint: disable=protected-access
    listed = json.load(f)["names"]
  return {path: entry["namedtuple_fields"] for path, entry in listed.items()
          if "namedtuple_fields" in entry}


def _resolve(path):
  value = est.compat.v1 if path.startswith("tf.compat.v1.estimator") else est
  root = "tf.compat.v1.estimator." if value is est.compat.v1 else "tf.estimator."
  if not path.startswith(root):
    root = path.split(".estimator.")[0] + ".estimator."
  for part in path[len(root):].split("."):
    value = getattr(value, part)
  return value


def test_every_2_15_namedtuple_class_is_one_with_the_same_fields():
  namedtuples = _namedtuples_of_2_15()
  for name in _SIX:
    assert f"tf.estimator.{name}" in namedtuples
  for path, fields in namedtuples.items():
    cls = _resolve(path)
    assert issubclass(cls, tuple), path
    assert list(cls._fields) == fields, path  # pylint: disable=protected-access


def _input_fn():
  return {"x": tf.constant([[1.0]])}, tf.constant([[1.0]])


@pytest.fixture
def graph():
  with tf.Graph().as_default() as g:
    yield g


def _values(graph):
  del graph
  x = tf.compat.v1.placeholder(tf.float32, [None, 1], name="x")
  serialized = tf.compat.v1.placeholder(tf.string, [None], name="examples")
  global_step = tf.compat.v1.train.get_or_create_global_step()
  loss = tf.reduce_sum(x)
  train_op = tf.compat.v1.assign_add(global_step, 1)
  return {
      "EstimatorSpec": (est.EstimatorSpec, dict(mode=est.ModeKeys.TRAIN, loss=loss,
                                                train_op=train_op),
                        {"loss": "not a tensor"}),
      "TrainSpec": (est.TrainSpec, dict(input_fn=_input_fn, max_steps=10), {"max_steps": -1}),
      "EvalSpec": (est.EvalSpec, dict(input_fn=_input_fn, steps=3, name="e"), {"steps": 0}),
      "WarmStartSettings": (est.WarmStartSettings, dict(ckpt_to_initialize_from="/tmp/ckpt"),
                            {"ckpt_to_initialize_from": ""}),
      "ServingInputReceiver": (est.export.ServingInputReceiver,
                               dict(features={"x": x}, receiver_tensors={"examples": serialized}),
                               {"features": None}),
      "TensorServingInputReceiver": (est.export.TensorServingInputReceiver,
                                     dict(features=x, receiver_tensors={"examples": serialized}),
                                     {"features": None}),
  }


@pytest.mark.parametrize("name", [name.split(".")[-1] for name in _SIX])
def test_a_spec_behaves_as_2_15s_namedtuple_and_stays_validated(graph, name):
  cls, arguments, bad = _values(graph)[name]
  spec = cls(**arguments)
  assert isinstance(spec, tuple) and len(spec) == len(cls._fields)  # pylint: disable=protected-access
  # Unpacking and indexing follow the fields.
  unpacked = tuple(spec)
  for index, field in enumerate(spec._fields):  # pylint: disable=protected-access
    assert unpacked[index] is getattr(spec, field) and spec[index] is getattr(spec, field)
  first, *_ = spec
  assert first is getattr(spec, spec._fields[0])  # pylint: disable=protected-access
  assert list(spec._asdict()) == list(spec._fields)  # pylint: disable=protected-access
  # Equality is the fields'; a copy made by _replace with nothing changed is equal.
  assert spec == cls(**arguments) or name == "EstimatorSpec"  # its default Scaffold is new
  copy = spec._replace()  # pylint: disable=protected-access
  assert copy == spec and copy is not spec and type(copy) is cls
  # Immutable, and a replaced copy is validated like a new value.
  with pytest.raises(AttributeError):
    setattr(spec, spec._fields[0], None)  # pylint: disable=protected-access
  with pytest.raises((ValueError, TypeError)):
    spec._replace(**bad)  # pylint: disable=protected-access
  with pytest.raises((ValueError, TypeError)):
    cls(**{**arguments, **bad})
  with pytest.raises(ValueError, match="Got unexpected field names"):
    spec._replace(no_such_field=1)  # pylint: disable=protected-access


def test_eval_spec_every_n_steps_lives_beside_2_15s_seven_fields():
  spec = est.EvalSpec(_input_fn, every_n_steps=5)
  assert len(spec) == 7 and spec.every_n_steps == 5
  assert spec._replace(steps=2).every_n_steps == 5  # pylint: disable=protected-access
  assert spec._replace(every_n_steps=None).every_n_steps is None  # pylint: disable=protected-access
  assert spec != est.EvalSpec(_input_fn) and spec == est.EvalSpec(_input_fn, every_n_steps=5)
  assert "every_n_steps=5" in repr(spec)
  with pytest.raises(AttributeError):
    spec.every_n_steps = 1
