"""Masked-LM pre-training of the tiny BERT with TPUEstimator (use_tpu=False runs it on CPU).

A tf.estimator program in the style of BERT's run_pretraining.py: it makes
masked-LM training data from synthetic sentences (synthetic_data.py, seeded),
writes it as TFRecord files in --output_dir, trains with
`tf.compat.v1.estimator.tpu.TPUEstimator`, evaluates the masked-LM accuracy
and loss, and leaves the checkpoint run_classifier.py fine-tunes from:

    python run_pretraining.py --output_dir=/tmp/pretrain --num_train_steps=20 --use_tpu=False

Under estimator_lite, unmodified:

    python -m estimator_lite.run run_pretraining.py --output_dir=/tmp/pretrain ...

--results_json writes the evaluation and the training losses as JSON.
"""
import collections
import json
import os
import random

from absl import app
from absl import flags
import tensorflow as tf

import modeling
import optimization
import synthetic_data
import tokenization

HERE = os.path.dirname(os.path.abspath(__file__))

flags.DEFINE_string("bert_config_file", os.path.join(HERE, "bert_config.json"),
                    "The BertConfig of the model, as JSON.")
flags.DEFINE_string("vocab_file", os.path.join(HERE, "vocab.txt"), "The vocabulary.")
flags.DEFINE_string("output_dir", None, "Where the data, checkpoints and events go.")
flags.DEFINE_string("init_checkpoint", None, "A checkpoint to start from (default: random).")
flags.DEFINE_integer("max_seq_length", 16, "Tokens per instance, [CLS] and [SEP]s included.")
flags.DEFINE_integer("max_predictions_per_seq", 3, "Masked positions per instance, at most.")
flags.DEFINE_float("masked_lm_prob", 0.15, "Fraction of tokens masked.")
flags.DEFINE_bool("do_train", True, "Whether to train.")
flags.DEFINE_bool("do_eval", True, "Whether to evaluate.")
flags.DEFINE_integer("train_batch_size", 8, "Global batch size of training.")
flags.DEFINE_integer("eval_batch_size", 8, "Global batch size of evaluation.")
flags.DEFINE_float("learning_rate", 1e-3, "Peak learning rate of Adam.")
flags.DEFINE_integer("num_train_steps", 20, "Training steps.")
flags.DEFINE_integer("num_warmup_steps", 2, "Steps of linear learning-rate warm-up.")
flags.DEFINE_integer("num_train_documents", 32, "Synthetic documents to train on.")
flags.DEFINE_integer("num_eval_documents", 8, "Synthetic documents to evaluate on.")
flags.DEFINE_integer("save_checkpoints_steps", 10, "How often to save a checkpoint.")
flags.DEFINE_integer("save_summary_steps", 5, "How often to write the loss summary.")
flags.DEFINE_integer("log_step_count_steps", 10, "How often to log the step rate.")
flags.DEFINE_integer("iterations_per_loop", 5, "Steps per TPU loop (session.run on a TPU).")
flags.DEFINE_integer("max_eval_steps", 4, "Evaluation batches.")
flags.DEFINE_integer("random_seed", 12345, "Seed of the data and of TensorFlow.")
flags.DEFINE_bool("use_tpu", False, "Whether to use a TPU (this program is run with False).")
flags.DEFINE_string("tpu_name", None, "The Cloud TPU to use with --use_tpu.")
flags.DEFINE_integer("num_tpu_cores", 8, "TPU cores, with --use_tpu.")
flags.DEFINE_string("results_json", None, "Where to write the results as JSON.")

FLAGS = flags.FLAGS

TrainingInstance = collections.namedtuple(
    "TrainingInstance", ["tokens", "segment_ids", "masked_lm_positions", "masked_lm_labels"])


# -- Data: masked-LM instances from synthetic documents ---------------------------------
def create_training_instances(documents, tokenizer, max_seq_length, masked_lm_prob,
                              max_predictions_per_seq, rng):
  """Pairs of consecutive sentences of a document, as [CLS] A [SEP] B [SEP], with tokens masked."""
  vocab_words = list(tokenizer.vocab.keys())
  instances = []
  for document in documents:
    tokenized = [tokenizer.tokenize(sentence) for sentence in document]
    for first, second in zip(tokenized[:-1], tokenized[1:]):
      tokens_a, tokens_b = list(first), list(second)
      truncate_seq_pair(tokens_a, tokens_b, max_seq_length - 3)
      tokens = ["[CLS]"] + tokens_a + ["[SEP]"] + tokens_b + ["[SEP]"]
      segment_ids = [0] * (len(tokens_a) + 2) + [1] * (len(tokens_b) + 1)
      tokens, positions, labels = create_masked_lm_predictions(
          tokens, masked_lm_prob, max_predictions_per_seq, vocab_words, rng)
      instances.append(TrainingInstance(tokens, segment_ids, positions, labels))
  rng.shuffle(instances)
  return instances


def create_masked_lm_predictions(tokens, masked_lm_prob, max_predictions_per_seq,
                                 vocab_words, rng):
  """Masks some tokens as BERT did: 80% [MASK], 10% a random word, 10% unchanged."""
  candidates = [i for i, token in enumerate(tokens) if token not in ("[CLS]", "[SEP]")]
  rng.shuffle(candidates)
  num_to_predict = min(max_predictions_per_seq,
                       max(1, int(round(len(tokens) * masked_lm_prob))))
  output_tokens = list(tokens)
  masked = []
  for index in sorted(candidates[:num_to_predict]):
    draw = rng.random()
    if draw < 0.8:
      replacement = "[MASK]"
    elif draw < 0.9:
      replacement = tokens[index]
    else:
      replacement = vocab_words[rng.randint(0, len(vocab_words) - 1)]
    output_tokens[index] = replacement
    masked.append((index, tokens[index]))
  return output_tokens, [i for i, _ in masked], [label for _, label in masked]


def truncate_seq_pair(tokens_a, tokens_b, max_num_tokens):
  """Drops tokens from the end of the longer list until both fit."""
  while len(tokens_a) + len(tokens_b) > max_num_tokens:
    longer = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
    longer.pop()


def write_instances_to_example_file(instances, tokenizer, max_seq_length,
                                    max_predictions_per_seq, output_file):
  """Writes instances as tf.train.Examples, padded to fixed lengths (a TPU needs static shapes)."""

  def int_feature(values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))

  def float_feature(values):
    return tf.train.Feature(float_list=tf.train.FloatList(value=list(values)))

  with tf.io.TFRecordWriter(output_file) as writer:
    for instance in instances:
      input_ids = tokenizer.convert_tokens_to_ids(instance.tokens)
      input_mask = [1] * len(input_ids)
      segment_ids = list(instance.segment_ids)
      padding = max_seq_length - len(input_ids)
      input_ids += [0] * padding
      input_mask += [0] * padding
      segment_ids += [0] * padding

      positions = list(instance.masked_lm_positions)
      label_ids = tokenizer.convert_tokens_to_ids(instance.masked_lm_labels)
      weights = [1.0] * len(label_ids)
      padding = max_predictions_per_seq - len(positions)
      positions += [0] * padding
      label_ids += [0] * padding
      weights += [0.0] * padding

      features = collections.OrderedDict([
          ("input_ids", int_feature(input_ids)),
          ("input_mask", int_feature(input_mask)),
          ("segment_ids", int_feature(segment_ids)),
          ("masked_lm_positions", int_feature(positions)),
          ("masked_lm_ids", int_feature(label_ids)),
          ("masked_lm_weights", float_feature(weights)),
      ])
      example = tf.train.Example(features=tf.train.Features(feature=features))
      writer.write(example.SerializeToString())
  return len(instances)


def input_fn_builder(input_files, max_seq_length, max_predictions_per_seq, is_training):
  """The input_fn TPUEstimator calls, with params["batch_size"] the global batch size."""

  def input_fn(params):
    batch_size = params["batch_size"]
    name_to_features = {
        "input_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "input_mask": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "segment_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "masked_lm_positions": tf.io.FixedLenFeature([max_predictions_per_seq], tf.int64),
        "masked_lm_ids": tf.io.FixedLenFeature([max_predictions_per_seq], tf.int64),
        "masked_lm_weights": tf.io.FixedLenFeature([max_predictions_per_seq], tf.float32),
    }
    dataset = tf.data.TFRecordDataset(input_files)
    dataset = dataset.repeat()
    if is_training:
      dataset = dataset.shuffle(buffer_size=100)
    # drop_remainder: a TPU compiles one batch shape, so every batch is full.
    return dataset.apply(tf.data.experimental.map_and_batch(
        lambda record: _decode_record(record, name_to_features),
        batch_size=batch_size, drop_remainder=True))

  return input_fn


def _decode_record(record, name_to_features):
  """Parses one Example; int64 features become int32 (what a TPU takes)."""
  example = tf.io.parse_single_example(record, name_to_features)
  for name in list(example.keys()):
    if example[name].dtype == tf.int64:
      example[name] = tf.cast(example[name], tf.int32)
  return example


# -- Model -------------------------------------------------------------------------------
def gather_indexes(sequence_tensor, positions):
  """The vectors of `sequence_tensor` [batch, seq, width] at `positions` [batch, n].

  Returns:
    [batch * n, width].
  """
  batch_size, seq_length, width = modeling.get_shape_list(sequence_tensor, expected_rank=3)
  flat_offsets = tf.reshape(tf.range(0, batch_size, dtype=tf.int32) * seq_length, [-1, 1])
  flat_positions = tf.reshape(positions + flat_offsets, [-1])
  flat_sequence = tf.reshape(sequence_tensor, [batch_size * seq_length, width])
  return tf.gather(flat_sequence, flat_positions)


def get_masked_lm_output(bert_config, input_tensor, output_weights, positions, label_ids,
                         label_weights):
  """The masked-LM head and loss; its output layer is the transposed embedding table.

  Returns:
    (loss, per_example_loss, log_probs).
  """
  input_tensor = gather_indexes(input_tensor, positions)
  with tf.compat.v1.variable_scope("cls/predictions"):
    with tf.compat.v1.variable_scope("transform"):
      input_tensor = tf.compat.v1.layers.dense(
          input_tensor, units=bert_config.hidden_size,
          activation=modeling.get_activation(bert_config.hidden_act),
          kernel_initializer=modeling.create_initializer(bert_config.initializer_range))
      input_tensor = modeling.layer_norm(input_tensor)
    # Only the bias is new: the weights are the word embeddings (tied).
    output_bias = tf.compat.v1.get_variable(
        "output_bias", shape=[bert_config.vocab_size],
        initializer=tf.compat.v1.zeros_initializer())
    logits = tf.matmul(input_tensor, output_weights, transpose_b=True)
    logits = tf.nn.bias_add(logits, output_bias)
    log_probs = tf.nn.log_softmax(logits, axis=-1)

    label_ids = tf.reshape(label_ids, [-1])
    label_weights = tf.reshape(label_weights, [-1])
    one_hot_labels = tf.one_hot(label_ids, depth=bert_config.vocab_size, dtype=tf.float32)
    per_example_loss = -tf.reduce_sum(log_probs * one_hot_labels, axis=[-1])
    # Padded predictions have weight 0; the epsilon keeps an all-padding batch finite.
    loss = (tf.reduce_sum(label_weights * per_example_loss) /
            (tf.reduce_sum(label_weights) + 1e-5))
  return loss, per_example_loss, log_probs


def model_fn_builder(bert_config, init_checkpoint, learning_rate, num_train_steps,
                     num_warmup_steps, use_tpu, use_one_hot_embeddings, train_losses=None):
  """The model_fn for TPUEstimator; training appends each step's loss to `train_losses`."""

  def model_fn(features, labels, mode, params):
    del labels, params  # The labels are in the features; the batch size is static.
    tf.compat.v1.logging.info("*** Features ***")
    for name in sorted(features.keys()):
      tf.compat.v1.logging.info("  name = %s, shape = %s", name, features[name].shape)

    is_training = mode == tf.compat.v1.estimator.ModeKeys.TRAIN
    model = modeling.BertModel(
        config=bert_config, is_training=is_training, input_ids=features["input_ids"],
        input_mask=features["input_mask"], token_type_ids=features["segment_ids"],
        use_one_hot_embeddings=use_one_hot_embeddings)
    masked_lm_loss, masked_lm_example_loss, masked_lm_log_probs = get_masked_lm_output(
        bert_config, model.get_sequence_output(), model.get_embedding_table(),
        features["masked_lm_positions"], features["masked_lm_ids"],
        features["masked_lm_weights"])
    total_loss = masked_lm_loss

    tvars = tf.compat.v1.trainable_variables()
    scaffold_fn = None
    if init_checkpoint:
      assignment_map, _ = modeling.get_assignment_map_from_checkpoint(tvars, init_checkpoint)

      def tpu_scaffold():
        tf.compat.v1.train.init_from_checkpoint(init_checkpoint, assignment_map)
        return tf.compat.v1.train.Scaffold()

      scaffold_fn = tpu_scaffold

    if mode == tf.compat.v1.estimator.ModeKeys.TRAIN:
      train_op, _, _ = optimization.create_optimizer(
          total_loss, learning_rate, num_train_steps, num_warmup_steps, use_tpu)
      hooks = [] if train_losses is None else [LossRecorderHook(total_loss, train_losses)]
      return tf.compat.v1.estimator.tpu.TPUEstimatorSpec(
          mode=mode, loss=total_loss, train_op=train_op, scaffold_fn=scaffold_fn,
          training_hooks=hooks)

    if mode == tf.compat.v1.estimator.ModeKeys.EVAL:

      def metric_fn(masked_lm_example_loss, masked_lm_log_probs, masked_lm_ids,
                    masked_lm_weights):
        predictions = tf.argmax(masked_lm_log_probs, axis=-1, output_type=tf.int32)
        masked_lm_ids = tf.reshape(masked_lm_ids, [-1])
        masked_lm_weights = tf.reshape(masked_lm_weights, [-1])
        return {
            "masked_lm_accuracy": tf.compat.v1.metrics.accuracy(
                labels=masked_lm_ids, predictions=predictions, weights=masked_lm_weights),
            "masked_lm_loss": tf.compat.v1.metrics.mean(
                values=masked_lm_example_loss, weights=masked_lm_weights),
        }

      eval_metrics = (metric_fn, [masked_lm_example_loss, masked_lm_log_probs,
                                  features["masked_lm_ids"], features["masked_lm_weights"]])
      return tf.compat.v1.estimator.tpu.TPUEstimatorSpec(
          mode=mode, loss=total_loss, eval_metrics=eval_metrics, scaffold_fn=scaffold_fn)

    raise ValueError(f"Only TRAIN and EVAL modes are supported: {mode}")

  return model_fn


class LossRecorderHook(tf.compat.v1.train.SessionRunHook):
  """Appends the loss of every training step to `losses` (for --results_json)."""

  def __init__(self, loss, losses):
    self._loss = loss
    self._losses = losses

  def before_run(self, run_context):
    return tf.compat.v1.train.SessionRunArgs(self._loss)

  def after_run(self, run_context, run_values):
    del run_context
    self._losses.append(float(run_values.results))


def main(_):
  tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)
  if not FLAGS.do_train and not FLAGS.do_eval:
    raise ValueError("At least one of `do_train` or `do_eval` must be True.")
  bert_config = modeling.BertConfig.from_json_file(FLAGS.bert_config_file)
  if FLAGS.max_seq_length > bert_config.max_position_embeddings:
    raise ValueError(f"max_seq_length {FLAGS.max_seq_length} is longer than the model's "
                     f"max_position_embeddings {bert_config.max_position_embeddings}")
  tf.io.gfile.makedirs(FLAGS.output_dir)
  tokenizer = tokenization.FullTokenizer(FLAGS.vocab_file)
  if len(tokenizer.vocab) != bert_config.vocab_size:
    raise ValueError(f"{FLAGS.vocab_file} has {len(tokenizer.vocab)} tokens, the config "
                     f"{bert_config.vocab_size}: run make_vocab.py")

  # The data: seeded, so every run (and every TensorFlow) trains on the same
  # instances.
  rng = random.Random(FLAGS.random_seed)
  files = {}
  for name, num_documents in (("train", FLAGS.num_train_documents),
                              ("eval", FLAGS.num_eval_documents)):
    instances = create_training_instances(
        synthetic_data.documents(rng, num_documents), tokenizer, FLAGS.max_seq_length,
        FLAGS.masked_lm_prob, FLAGS.max_predictions_per_seq, rng)
    files[name] = os.path.join(FLAGS.output_dir, f"{name}.tf_record")
    count = write_instances_to_example_file(instances, tokenizer, FLAGS.max_seq_length,
                                            FLAGS.max_predictions_per_seq, files[name])
    tf.compat.v1.logging.info("Wrote %d %s instances to %s", count, name, files[name])

  tpu_cluster_resolver = None
  if FLAGS.use_tpu and FLAGS.tpu_name:
    tpu_cluster_resolver = tf.distribute.cluster_resolver.TPUClusterResolver(FLAGS.tpu_name)
  run_config = tf.compat.v1.estimator.tpu.RunConfig(
      cluster=tpu_cluster_resolver,
      model_dir=FLAGS.output_dir,
      save_checkpoints_steps=FLAGS.save_checkpoints_steps,
      save_summary_steps=FLAGS.save_summary_steps,
      log_step_count_steps=FLAGS.log_step_count_steps,
      # A fixed graph-level seed: the initial weights, dropout and shuffling
      # are then the same on every run.
      tf_random_seed=FLAGS.random_seed,
      tpu_config=tf.compat.v1.estimator.tpu.TPUConfig(
          iterations_per_loop=FLAGS.iterations_per_loop,
          num_shards=FLAGS.num_tpu_cores,
          per_host_input_for_training=tf.compat.v1.estimator.tpu.InputPipelineConfig.PER_HOST_V2))
  train_losses = []
  model_fn = model_fn_builder(
      bert_config=bert_config, init_checkpoint=FLAGS.init_checkpoint,
      learning_rate=FLAGS.learning_rate, num_train_steps=FLAGS.num_train_steps,
      num_warmup_steps=FLAGS.num_warmup_steps, use_tpu=FLAGS.use_tpu,
      use_one_hot_embeddings=FLAGS.use_tpu, train_losses=train_losses)
  # Without a TPU, TPUEstimator falls back to a normal Estimator on CPU/GPU.
  estimator = tf.compat.v1.estimator.tpu.TPUEstimator(
      use_tpu=FLAGS.use_tpu, model_fn=model_fn, config=run_config,
      train_batch_size=FLAGS.train_batch_size, eval_batch_size=FLAGS.eval_batch_size)

  results = {"tensorflow_version": tf.__version__,
             "estimator_class": f"{type(estimator).__module__}.{type(estimator).__name__}"}
  if FLAGS.do_train:
    tf.compat.v1.logging.info("***** Running training *****")
    estimator.train(
        input_fn=input_fn_builder([files["train"]], FLAGS.max_seq_length,
                                  FLAGS.max_predictions_per_seq, is_training=True),
        max_steps=FLAGS.num_train_steps)
    results["train_losses"] = train_losses
    results["checkpoint"] = estimator.latest_checkpoint()

  if FLAGS.do_eval:
    tf.compat.v1.logging.info("***** Running evaluation *****")
    result = estimator.evaluate(
        input_fn=input_fn_builder([files["eval"]], FLAGS.max_seq_length,
                                  FLAGS.max_predictions_per_seq, is_training=False),
        steps=FLAGS.max_eval_steps)
    output_eval_file = os.path.join(FLAGS.output_dir, "eval_results.txt")
    with tf.io.gfile.GFile(output_eval_file, "w") as writer:
      tf.compat.v1.logging.info("***** Eval results *****")
      for key in sorted(result.keys()):
        tf.compat.v1.logging.info("  %s = %s", key, str(result[key]))
        writer.write(f"{key} = {result[key]}\n")
    results["eval"] = {key: float(value) for key, value in result.items()}

  if FLAGS.results_json:
    with open(FLAGS.results_json, "w") as f:
      json.dump(results, f, indent=2, sort_keys=True)


if __name__ == "__main__":
  flags.mark_flag_as_required("output_dir")
  app.run(main)
