"""ModelFn: the one place model_fn is called: the arguments it may take, what it must return.

Through the public Estimator, as users meet these rules: a model_fn may take
any subset of (features, labels, mode, params, config) by name; a wrong
return names the mode and the field.
"""
import functools

import pytest
import tensorflow as tf

import estimator_lite as est


def _config(**kwargs):
  kwargs.setdefault("tf_random_seed", 1)
  return est.RunConfig(**kwargs)


def _spec(features, labels, mode):
  """A minimal valid spec for `mode` from features["x"] (and labels)."""
  w = tf.compat.v1.get_variable("w", [2, 1], initializer=tf.compat.v1.zeros_initializer())
  prediction = tf.matmul(features["x"], w)
  if mode == est.ModeKeys.PREDICT:
    return est.EstimatorSpec(mode, predictions=prediction)
  target = labels if labels is not None else tf.zeros_like(prediction)
  loss = tf.reduce_mean(tf.square(prediction - target))
  train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
      loss, global_step=tf.compat.v1.train.get_global_step())
  return est.EstimatorSpec(mode, loss=loss, train_op=train_op, predictions=prediction)


def _features_only(features):
  return _spec(features, None, est.ModeKeys.TRAIN)


def _features_labels(features, labels):
  return _spec(features, labels, est.ModeKeys.TRAIN)


def _keyword_order(mode, labels, features):
  return _spec(features, labels, mode)


def _all_five(features, labels, mode, params, config):
  assert params == {"lr": 1} and isinstance(config, est.RunConfig)
  assert config.model_dir
  return _spec(features, labels, mode)


def _with_params_config(features, mode, params, config):
  assert params == {"lr": 1} and isinstance(config, est.RunConfig)
  return _spec(features, None, mode)


def _with_extra(features, labels, mode, extra):
  assert extra == "bound"
  return _spec(features, labels, mode)


@pytest.mark.parametrize("model_fn,params,with_labels", [
    (_features_only, None, False),
    (_features_labels, None, True),
    (_keyword_order, None, True),
    (_all_five, {"lr": 1}, True),
    (_with_params_config, {"lr": 1}, False),
    (functools.partial(_with_extra, extra="bound"), None, True),
], ids=["features", "features_labels", "by_name_any_order", "all_five",
        "params_config", "functools_partial"])
def test_model_fn_may_take_any_subset_of_arguments_by_name(
    tmp_path, linear_data, make_input_fn, model_fn, params, with_labels):
  x, y = linear_data
  estimator = est.Estimator(model_fn, model_dir=str(tmp_path), params=params,
                            config=_config())
  estimator.train(make_input_fn(x, y if with_labels else None), steps=2)
  assert estimator.get_variable_value("global_step") == 2


def test_unusable_model_fns_raise_tf_estimator_errors():
  # tf.estimator's type and text first, in its order; then what to do.
  with pytest.raises(ValueError, match=r"^model_fn must be provided to Estimator\. "):
    est.Estimator(None)
  with pytest.raises(TypeError, match=r"unsupported callable.*'model.py'"):
    est.Estimator("model.py")
  with pytest.raises(ValueError, match=r"^model_fn \(<function _features_labels at .*\) does "
                                       r"not include params argument, but params "
                                       r"\(\{'lr': 1\}\) is passed to Estimator\."):
    est.Estimator(_features_labels, params={"lr": 1})
  with pytest.raises(ValueError, match=r"^model_fn \(.*\) must include features argument\. "):
    est.Estimator(lambda labels, mode: None)
  with pytest.raises(ValueError, match=r"^model_fn \(.*\) has following not expected args: "
                                       r"\['hidden_units'\]"):
    est.Estimator(lambda features, hidden_units: None)
  # One with a default is refused too: Estimator would never pass it.
  with pytest.raises(ValueError, match=r"not expected args: \['debug'\]"):
    est.Estimator(lambda features, labels, debug=False: None)


def _returns(make):
  """A model_fn whose spec `make(mode, loss, train_op, predictions)` builds."""
  def model_fn(features, labels, mode):
    w = tf.compat.v1.get_variable("w", [2, 1])
    prediction = tf.matmul(features["x"], w)
    loss = tf.reduce_mean(tf.square(prediction - (0.0 if labels is None else labels)))
    train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(
        loss, global_step=tf.compat.v1.train.get_global_step())
    return make(mode, loss, train_op, prediction)
  return model_fn


@pytest.mark.parametrize("call,make,pattern", [
    ("train", lambda m, l, t, p: est.EstimatorSpec(m, train_op=t),
     r"Missing loss.*mode 'train'"),
    ("evaluate", lambda m, l, t, p: est.EstimatorSpec(m, predictions=p),
     r"Missing loss.*mode 'eval'"),
    ("train", lambda m, l, t, p: est.EstimatorSpec(m, loss=l),
     r"Missing train_op.*mode 'train'"),
    ("predict", lambda m, l, t, p: est.EstimatorSpec(m, loss=l),
     r"Missing predictions.*mode 'infer'"),
    ("train", lambda m, l, t, p: {"loss": l, "train_op": t},
     r"model_fn should return an EstimatorSpec\. In mode 'train' it returned \{'loss'"),
    ("evaluate", lambda m, l, t, p: est.EstimatorSpec(est.ModeKeys.TRAIN, loss=l, train_op=t),
     r"called with mode 'eval' but returned an EstimatorSpec for mode 'train'"),
], ids=["train_no_loss", "eval_no_loss", "no_train_op", "no_predictions",
        "not_a_spec", "wrong_mode"])
def test_wrong_model_fn_returns_name_the_mode_and_field(
    tmp_path, linear_data, make_input_fn, call, make, pattern):
  x, y = linear_data
  estimator = est.Estimator(_returns(make), model_dir=str(tmp_path))
  with pytest.raises((ValueError, TypeError), match=pattern):
    if call == "train":
      estimator.train(make_input_fn(x, y), steps=1)
    elif call == "evaluate":
      estimator.evaluate(make_input_fn(x, y, repeat=False))
    else:
      next(estimator.predict(make_input_fn(x, y, repeat=False)))
  assert not estimator.latest_checkpoint()


def test_spec_without_mode_is_for_the_mode_model_fn_was_called_in(
    tmp_path, linear_data, make_input_fn):
  # A model_fn with no `mode` argument cannot name its mode: as in
  # tf.estimator, EstimatorSpec(mode=None, ...) serves train, evaluate and
  # predict, and must hold what the mode it serves needs.
  x, y = linear_data

  def model_fn(features, labels):
    spec = _spec(features, labels, est.ModeKeys.TRAIN)
    return est.EstimatorSpec(None, loss=spec.loss, train_op=spec.train_op,
                             predictions=spec.predictions)

  estimator = est.Estimator(model_fn, model_dir=str(tmp_path / "no_mode"), config=_config())
  estimator.train(make_input_fn(x, y), steps=3)
  assert estimator.evaluate(make_input_fn(x, y, repeat=False), steps=1)["global_step"] == 3
  assert len(list(estimator.predict(make_input_fn(x, None, repeat=False)))) == len(x)

  def no_train_op(features, labels):
    return est.EstimatorSpec(None, loss=_spec(features, labels, est.ModeKeys.EVAL).loss)

  estimator = est.Estimator(no_train_op, model_dir=str(tmp_path / "no_train_op"))
  with pytest.raises(ValueError, match="Missing train_op"):
    estimator.train(make_input_fn(x, y), steps=1)
