"""A wide-and-deep canned estimator under train_and_evaluate, run by tests as one task of a cluster.

Started through `python -m estimator_lite.launch` (TF_CONFIG says the role),
or alone. `--v1` uses compat.v1.DNNLinearCombinedClassifier with its input
layer split in two (`input_layer_partitioner`), as tf.estimator's v1 classes
partitioned embeddings over the ps tasks. Each training task logs where every
model variable lives; the chief exports at the end and says where.
"""
import argparse
import json
import os

import tensorflow as tf

import estimator_lite as est

_WORDS = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta")


def _example(index):
  """Row `index`, computed from the index: the label follows `x` and the word."""
  x = tf.random.stateless_uniform([1], seed=tf.stack([index, 3]), minval=-1.0, maxval=1.0)
  word_id = tf.random.stateless_uniform([], seed=tf.stack([index, 5]), maxval=len(_WORDS),
                                        dtype=tf.int64)
  word = tf.gather(tf.constant(_WORDS), word_id)
  label = tf.cast(x[0] + tf.cast(word_id % 2, tf.float32) - 0.5 > 0, tf.int64)
  return {"x": x, "word": tf.reshape(word, [1])}, tf.reshape(label, [1])


def _train_input_fn(input_context, batch_size):
  rows = tf.data.Dataset.range(100000)
  rows = rows.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
  return rows.repeat().map(_example).batch(batch_size)


def _eval_input_fn(batch_size):
  return tf.data.Dataset.range(200000, 200256).map(_example).batch(batch_size)


def _columns():
  x = tf.feature_column.numeric_column("x")
  word = tf.feature_column.categorical_column_with_vocabulary_list("word", _WORDS)
  return [x, word], [x, tf.feature_column.embedding_column(word, 4)]


class _DevicesHook(est.SessionRunHook):
  """Logs the device of every model variable (for the test to read)."""

  def __init__(self, task):
    self._task = task

  def begin(self):
    devices = {v.op.name: v.device for v in tf.compat.v1.global_variables()}
    tf.compat.v1.logging.info("canned_cluster %s: variable devices %s", self._task,
                              json.dumps(devices, sort_keys=True))


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--model_dir", required=True)
  parser.add_argument("--max_steps", type=int, default=300)
  parser.add_argument("--batch_size", type=int, default=16)
  parser.add_argument("--v1", action="store_true")
  parser.add_argument("--ps_placement", help="RunConfig(ps_placement); default: RunConfig's")
  parser.add_argument("--tf_random_seed", type=int)
  args = parser.parse_args()
  tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)

  placement = {"ps_placement": args.ps_placement} if args.ps_placement else {}
  config = est.RunConfig(model_dir=args.model_dir, save_checkpoints_steps=100,
                         experimental_max_worker_delay_secs=1,
                         tf_random_seed=args.tf_random_seed, **placement)
  linear_columns, dnn_columns = _columns()
  if args.v1:
    estimator = est.compat.v1.DNNLinearCombinedClassifier(
        linear_feature_columns=linear_columns, dnn_feature_columns=dnn_columns,
        dnn_hidden_units=[8, 4], config=config,
        input_layer_partitioner=tf.compat.v1.fixed_size_partitioner(2))
  else:
    estimator = est.DNNLinearCombinedClassifier(
        linear_feature_columns=linear_columns, dnn_feature_columns=dnn_columns,
        dnn_hidden_units=[8, 4], config=config)
  task = f"{config.task_type}:{config.task_id}"
  train_spec = est.TrainSpec(lambda input_context: _train_input_fn(input_context, args.batch_size),
                             max_steps=args.max_steps, hooks=[_DevicesHook(task)])
  eval_spec = est.EvalSpec(lambda: _eval_input_fn(args.batch_size), steps=4,
                           start_delay_secs=0, throttle_secs=0)
  result = est.train_and_evaluate(estimator, train_spec, eval_spec)
  if config.is_chief:
    spec = tf.feature_column.make_parse_example_spec(linear_columns + dnn_columns)
    export_dir = estimator.export_saved_model(
        os.path.join(args.model_dir, "export"),
        est.export.build_parsing_serving_input_receiver_fn(spec))
    print(f"canned_cluster {task}: exported {export_dir.decode()} after {result}")


if __name__ == "__main__":
  main()
