"""Warm start: WarmStartSettings with renamed variables and a grown vocabulary; a model_dir string."""
import numpy as np
import pytest

import estimator_lite as est
import tensorflow as tf

OLD_VOCAB = ["a", "b", "c"]
# Reordered and grown: "c" and "b" swap rows, "d" and "e" are new words.
NEW_VOCAB = ["a", "c", "b", "d", "e"]
NUM_OOV = 1
# The backup initializer gets a dynamic shape: ones/zeros/random initializers
# work; tf.compat.v1.constant_initializer does not (a TensorFlow limitation).
BACKUP = 1.0


def _model_fn(emb_name, w_name, vocab_rows, with_fresh=False):
  """Bag-of-ids regression: embedding `emb_name` [vocab_rows, 2] and dense `w_name`."""
  def model_fn(features, labels, mode):
    embedding = tf.compat.v1.get_variable(
        emb_name, [vocab_rows, 2],
        initializer=tf.compat.v1.random_normal_initializer(seed=1))
    w = tf.compat.v1.get_variable(
        w_name, [2, 1], initializer=tf.compat.v1.random_normal_initializer(seed=2))
    h = tf.reduce_sum(tf.nn.embedding_lookup(embedding, features["ids"]), axis=1)
    prediction = tf.matmul(h, w)
    if with_fresh:
      prediction += tf.compat.v1.get_variable(
          "fresh", [1], initializer=tf.compat.v1.constant_initializer(3.0))
    loss = tf.compat.v1.losses.mean_squared_error(labels, prediction)
    train_op = tf.compat.v1.train.GradientDescentOptimizer(0.05).minimize(
        loss, global_step=tf.compat.v1.train.get_global_step())
    return est.EstimatorSpec(mode, loss=loss, train_op=train_op,
                             predictions={"y": prediction})
  return model_fn


def _input_fn():
  ids = np.array([[0, 1], [1, 2], [2, 0], [0, 0]], np.int64)
  y = np.array([[1.0], [2.0], [3.0], [4.0]], np.float32)
  return tf.data.Dataset.from_tensor_slices(({"ids": ids}, y)).repeat().batch(2)


def _write_vocab(path, words):
  path.write_text("\n".join(words) + "\n")
  return str(path)


@pytest.fixture
def old_model(tmp_path):
  """A trained model with variables "embedding_old" [3, 2] and "old_w"."""
  estimator = est.Estimator(_model_fn("embedding_old", "old_w", len(OLD_VOCAB)),
                            model_dir=str(tmp_path / "old"))
  estimator.train(_input_fn, steps=5)
  return estimator


def test_renamed_variable_and_grown_vocabulary(tmp_path, old_model):
  old_vocab = _write_vocab(tmp_path / "old_vocab.txt", OLD_VOCAB)
  new_vocab = _write_vocab(tmp_path / "new_vocab.txt", NEW_VOCAB)
  vocab_info = est.VocabInfo(
      new_vocab=new_vocab, new_vocab_size=len(NEW_VOCAB), num_oov_buckets=NUM_OOV,
      old_vocab=old_vocab, old_vocab_size=len(OLD_VOCAB),
      backup_initializer=tf.compat.v1.ones_initializer())
  settings = est.WarmStartSettings(
      ckpt_to_initialize_from=old_model.model_dir,
      vars_to_warm_start=["embedding", "w"],  # not "fresh"
      var_name_to_vocab_info={"embedding": vocab_info},
      var_name_to_prev_var_name={"embedding": "embedding_old", "w": "old_w"})
  model_dir = tmp_path / "new"
  estimator = est.Estimator(
      _model_fn("embedding", "w", len(NEW_VOCAB) + NUM_OOV, with_fresh=True),
      model_dir=str(model_dir), warm_start_from=settings)
  estimator.train(_input_fn, steps=1)

  # model.ckpt-0 holds the values training started from.
  start = tf.train.load_checkpoint(str(model_dir / "model.ckpt-0"))
  old_embedding = old_model.get_variable_value("embedding_old")
  embedding = start.get_tensor("embedding")
  assert embedding.shape == (6, 2)
  for row, word in enumerate(NEW_VOCAB[:3]):  # copied by word, not by row
    np.testing.assert_array_equal(embedding[row], old_embedding[OLD_VOCAB.index(word)])
  # New words and the OOV bucket come from the backup initializer.
  np.testing.assert_array_equal(embedding[3:], np.full((3, 2), BACKUP, np.float32))
  np.testing.assert_array_equal(start.get_tensor("w"), old_model.get_variable_value("old_w"))
  np.testing.assert_array_equal(start.get_tensor("fresh"), [3.0])
  assert start.get_tensor("global_step") == 0
  assert "embedding_old" not in estimator.get_variable_names()


def test_warm_start_from_a_model_dir_string(tmp_path, old_model):
  model_dir = tmp_path / "new"
  estimator = est.Estimator(_model_fn("embedding_old", "old_w", len(OLD_VOCAB)),
                            model_dir=str(model_dir), warm_start_from=old_model.model_dir)
  estimator.train(_input_fn, steps=2)
  start = tf.train.load_checkpoint(str(model_dir / "model.ckpt-0"))
  for name in ("embedding_old", "old_w"):
    np.testing.assert_array_equal(start.get_tensor(name), old_model.get_variable_value(name))
  # The global step is not warm-started: the new model counts its own steps.
  assert estimator.get_variable_value("global_step") == 2
  # Once the new model_dir has a checkpoint, training resumes from it instead.
  trained = estimator.get_variable_value("old_w")
  estimator.train(_input_fn, steps=1)
  restart = tf.train.load_checkpoint(estimator.latest_checkpoint())
  assert restart.get_tensor("global_step") == 3
  assert not np.array_equal(restart.get_tensor("old_w"), old_model.get_variable_value("old_w"))
  assert not np.array_equal(trained, old_model.get_variable_value("old_w"))


def test_settings_are_validated_and_immutable(tmp_path):
  # tf.estimator's texts, which users' tests match.
  for empty in ("", None):
    with pytest.raises(ValueError, match="`ckpt_to_initialize_from` MUST be set in "
                                         "WarmStartSettings"):
      est.WarmStartSettings(ckpt_to_initialize_from=empty)
  with pytest.raises(ValueError, match=r"ckpt_to_initialize_from=3\)"):
    est.WarmStartSettings(ckpt_to_initialize_from=3)
  assert est.WarmStartSettings(str(tmp_path).encode()).ckpt_to_initialize_from == str(tmp_path)
  settings = est.WarmStartSettings(str(tmp_path))
  assert settings.vars_to_warm_start == ".*"
  assert settings.var_name_to_vocab_info == {} and settings.var_name_to_prev_var_name == {}
  with pytest.raises(AttributeError):
    settings.vars_to_warm_start = "w"
  assert settings.replace(vars_to_warm_start="w").vars_to_warm_start == "w"
  with pytest.raises(ValueError, match="warm_start_from must be a string or a "
                                       "WarmStartSettings, instead got <class 'int'>"):
    est.Estimator(lambda features: None, warm_start_from=3)
