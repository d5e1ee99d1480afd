"""Fine-tunes the tiny BERT on a sentence classification task with TPUEstimator (use_tpu=False).

A tf.estimator program in the style of BERT's run_classifier.py. The task is
synthetic (synthetic_data.py, seeded): is a sentence's adjective positive or
negative. From the checkpoint run_pretraining.py wrote, it trains, evaluates,
predicts and exports:

    python run_classifier.py --init_checkpoint=/tmp/pretrain/model.ckpt-20 \\
        --output_dir=/tmp/classifier --do_train --do_eval --do_predict \\
        --export_dir=/tmp/classifier/export --use_tpu=False

Under estimator_lite, unmodified: `python -m estimator_lite.run run_classifier.py ...`.

What it writes, as BERT's did: eval_results.txt and test_results.tsv (the
class probabilities of each prediction example, one line each) in
--output_dir, and the SavedModel under --export_dir. The model_fn returns a
TPUEstimatorSpec whose scaffold_fn loads the pre-trained encoder, whose
host_call writes the training loss and learning rate with TF2 summaries, and
whose eval_metrics compute accuracy and mean loss. --results_json collects the
evaluation, the predictions and the export's signatures (and what the export
serves for the first examples) as JSON.
"""
import collections
import json
import os
import random

from absl import app
from absl import flags
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

import modeling
import optimization
import synthetic_data
import tokenization

HERE = os.path.dirname(os.path.abspath(__file__))

flags.DEFINE_string("bert_config_file", os.path.join(HERE, "bert_config.json"),
                    "The BertConfig of the pre-trained model, as JSON.")
flags.DEFINE_string("vocab_file", os.path.join(HERE, "vocab.txt"), "The vocabulary.")
flags.DEFINE_string("task_name", "sentiment", "The task to train.")
flags.DEFINE_string("output_dir", None, "Where the checkpoints, events and results go.")
flags.DEFINE_string("init_checkpoint", None, "The pre-trained checkpoint (model.ckpt-N).")
flags.DEFINE_bool("do_lower_case", True, "Lower-case the text.")
flags.DEFINE_integer("max_seq_length", 16, "Tokens per example, [CLS] and [SEP] included.")
flags.DEFINE_bool("do_train", False, "Whether to train.")
flags.DEFINE_bool("do_eval", False, "Whether to evaluate.")
flags.DEFINE_bool("do_predict", False, "Whether to predict the test set.")
flags.DEFINE_integer("train_batch_size", 8, "Global batch size of training.")
flags.DEFINE_integer("eval_batch_size", 8, "Global batch size of evaluation.")
flags.DEFINE_integer("predict_batch_size", 8, "Global batch size of prediction.")
flags.DEFINE_float("learning_rate", 3e-3, "Peak learning rate of Adam.")
flags.DEFINE_float("num_train_epochs", 6.0, "Epochs over the training examples.")
flags.DEFINE_integer("num_train_steps", None, "Training steps; overrides num_train_epochs.")
flags.DEFINE_float("warmup_proportion", 0.1, "Fraction of training with a linear warm-up.")
flags.DEFINE_integer("num_train_examples", 64, "Synthetic training examples.")
flags.DEFINE_integer("num_eval_examples", 32, "Synthetic evaluation examples.")
flags.DEFINE_integer("num_predict_examples", 12, "Synthetic test examples.")
flags.DEFINE_integer("save_checkpoints_steps", 16, "How often to save a checkpoint.")
flags.DEFINE_integer("save_summary_steps", 4, "How often to write the loss summary.")
flags.DEFINE_integer("log_step_count_steps", 8, "How often to log the step rate.")
flags.DEFINE_integer("iterations_per_loop", 4, "Steps per TPU loop (session.run on a TPU).")
flags.DEFINE_integer("random_seed", 2024, "Seed of the data and of TensorFlow.")
flags.DEFINE_bool("use_tpu", False, "Whether to use a TPU (this program is run with False).")
flags.DEFINE_string("tpu_name", None, "The Cloud TPU to use with --use_tpu.")
flags.DEFINE_integer("num_tpu_cores", 8, "TPU cores, with --use_tpu.")
flags.DEFINE_string("export_dir", None, "Where to export the SavedModel; none if unset.")
flags.DEFINE_integer("num_served_examples", 2,
                     "Test examples --results_json runs through the export.")
flags.DEFINE_string("results_json", None, "Where to write the results as JSON.")

FLAGS = flags.FLAGS

FEATURE_NAMES = ("input_ids", "input_mask", "segment_ids")

InputFeatures = collections.namedtuple(
    "InputFeatures", ["input_ids", "input_mask", "segment_ids", "label_id"])


class SentimentProcessor(object):
  """The synthetic sentiment task: each split drawn from its own seeded random.Random."""

  def __init__(self, seed):
    self._seed = seed

  def _examples(self, split, offset, count):
    return synthetic_data.sentiment_examples(random.Random(self._seed + offset), count, split)

  def get_train_examples(self, count):
    return self._examples("train", 0, count)

  def get_dev_examples(self, count):
    return self._examples("dev", 1, count)

  def get_test_examples(self, count):
    return self._examples("test", 2, count)

  def get_labels(self):
    return ["0", "1"]


def convert_single_example(ex_index, example, label_list, max_seq_length, tokenizer):
  """[CLS] text [SEP], padded with id 0 (input_mask 0) to max_seq_length."""
  label_map = {label: i for i, label in enumerate(label_list)}
  tokens = tokenizer.tokenize(example.text_a)[:max_seq_length - 2]
  tokens = ["[CLS]"] + tokens + ["[SEP]"]
  input_ids = tokenizer.convert_tokens_to_ids(tokens)
  input_mask = [1] * len(input_ids)
  padding = max_seq_length - len(input_ids)
  input_ids += [0] * padding
  input_mask += [0] * padding
  segment_ids = [0] * max_seq_length
  if ex_index < 2:
    tf.compat.v1.logging.info("*** Example ***")
    tf.compat.v1.logging.info("guid: %s", example.guid)
    tf.compat.v1.logging.info("tokens: %s", " ".join(tokens))
    tf.compat.v1.logging.info("input_ids: %s", " ".join(map(str, input_ids)))
    tf.compat.v1.logging.info("label: %s (id = %d)", example.label, label_map[example.label])
  return InputFeatures(input_ids, input_mask, segment_ids, label_map[example.label])


def file_based_convert_examples_to_features(examples, label_list, max_seq_length, tokenizer,
                                            output_file):
  """Writes the examples' features to a TFRecord file of tf.train.Examples."""
  with tf.io.TFRecordWriter(output_file) as writer:
    for ex_index, example in enumerate(examples):
      feature = convert_single_example(ex_index, example, label_list, max_seq_length,
                                       tokenizer)

      def int_feature(values):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))

      features = collections.OrderedDict([
          ("input_ids", int_feature(feature.input_ids)),
          ("input_mask", int_feature(feature.input_mask)),
          ("segment_ids", int_feature(feature.segment_ids)),
          ("label_ids", int_feature([feature.label_id])),
      ])
      writer.write(tf.train.Example(
          features=tf.train.Features(feature=features)).SerializeToString())


def file_based_input_fn_builder(input_file, seq_length, is_training, drop_remainder):
  """The input_fn TPUEstimator calls, with params["batch_size"] the global batch size."""
  name_to_features = {
      "input_ids": tf.io.FixedLenFeature([seq_length], tf.int64),
      "input_mask": tf.io.FixedLenFeature([seq_length], tf.int64),
      "segment_ids": tf.io.FixedLenFeature([seq_length], tf.int64),
      "label_ids": tf.io.FixedLenFeature([], tf.int64),
  }

  def decode_record(record):
    # A TPU takes int32, not int64.
    example = tf.io.parse_single_example(record, name_to_features)
    return {name: tf.cast(value, tf.int32) if value.dtype == tf.int64 else value
            for name, value in example.items()}

  def input_fn(params):
    batch_size = params["batch_size"]
    dataset = tf.data.TFRecordDataset(input_file)
    if is_training:
      dataset = dataset.repeat()
      dataset = dataset.shuffle(buffer_size=100)
    return dataset.apply(tf.data.experimental.map_and_batch(
        decode_record, batch_size=batch_size, drop_remainder=drop_remainder))

  return input_fn


def create_model(bert_config, is_training, input_ids, input_mask, segment_ids, labels,
                 num_labels, use_one_hot_embeddings):
  """A classifier on BERT's pooled output.

  Returns:
    (loss, per_example_loss, logits, probabilities); the losses are None
    without labels (prediction, export).
  """
  model = modeling.BertModel(
      config=bert_config, is_training=is_training, input_ids=input_ids,
      input_mask=input_mask, token_type_ids=segment_ids,
      use_one_hot_embeddings=use_one_hot_embeddings)
  output_layer = model.get_pooled_output()
  hidden_size = output_layer.shape[-1]

  output_weights = tf.compat.v1.get_variable(
      "output_weights", [num_labels, hidden_size],
      initializer=tf.compat.v1.truncated_normal_initializer(stddev=0.02))
  output_bias = tf.compat.v1.get_variable(
      "output_bias", [num_labels], initializer=tf.compat.v1.zeros_initializer())

  with tf.compat.v1.variable_scope("loss"):
    output_layer = modeling.dropout(output_layer, 0.1 if is_training else 0.0)
    logits = tf.nn.bias_add(tf.matmul(output_layer, output_weights, transpose_b=True),
                            output_bias)
    probabilities = tf.nn.softmax(logits, axis=-1)
    if labels is None:
      return None, None, logits, probabilities
    log_probs = tf.nn.log_softmax(logits, axis=-1)
    one_hot_labels = tf.one_hot(labels, depth=num_labels, dtype=tf.float32)
    per_example_loss = -tf.reduce_sum(one_hot_labels * log_probs, axis=-1)
    loss = tf.reduce_mean(per_example_loss)
    return loss, per_example_loss, logits, probabilities


def model_fn_builder(bert_config, num_labels, init_checkpoint, learning_rate, num_train_steps,
                     num_warmup_steps, use_tpu, use_one_hot_embeddings, summary_dir):
  """The model_fn for TPUEstimator; host_call's summaries go to `summary_dir`."""

  def model_fn(features, labels, mode, params):
    del labels  # In the features: "label_ids".
    tf.compat.v1.logging.info("*** Features (batch size %s) ***", params.get("batch_size"))
    for name in sorted(features.keys()):
      tf.compat.v1.logging.info("  name = %s, shape = %s", name, features[name].shape)

    is_training = mode == tf.compat.v1.estimator.ModeKeys.TRAIN
    label_ids = None
    if mode != tf.compat.v1.estimator.ModeKeys.PREDICT:
      label_ids = features["label_ids"]
    total_loss, per_example_loss, logits, probabilities = create_model(
        bert_config, is_training, features["input_ids"], features["input_mask"],
        features["segment_ids"], label_ids, num_labels, use_one_hot_embeddings)

    tvars = tf.compat.v1.trainable_variables()
    scaffold_fn = None
    initialized_variable_names = {}
    if init_checkpoint:
      assignment_map, initialized_variable_names = (
          modeling.get_assignment_map_from_checkpoint(tvars, init_checkpoint))

      # On a TPU the initialisation must happen in the Scaffold (on the host);
      # this program takes that path with or without one.
      def tpu_scaffold():
        tf.compat.v1.train.init_from_checkpoint(init_checkpoint, assignment_map)
        return tf.compat.v1.train.Scaffold()

      scaffold_fn = tpu_scaffold

    tf.compat.v1.logging.info("**** Trainable Variables ****")
    for var in tvars:
      init_string = ", *INIT_FROM_CKPT*" if var.name in initialized_variable_names else ""
      tf.compat.v1.logging.info("  name = %s, shape = %s%s", var.name, var.shape, init_string)

    if mode == tf.compat.v1.estimator.ModeKeys.TRAIN:
      train_op, learning_rate_t, new_global_step = optimization.create_optimizer(
          total_loss, learning_rate, num_train_steps, num_warmup_steps, use_tpu)

      def host_call_fn(global_step, loss, learning_rate):
        # On a TPU these tensors arrive from the outfeed with a leading batch
        # dimension: hence the [0]s.
        step = global_step[0]
        with tf.compat.v2.summary.create_file_writer(summary_dir).as_default():
          with tf.compat.v2.summary.record_if(True):
            tf.compat.v2.summary.scalar("host_call/loss", loss[0], step=step)
            tf.compat.v2.summary.scalar("host_call/learning_rate", learning_rate[0], step=step)
            return tf.compat.v1.summary.all_v2_summary_ops()

      host_call = (host_call_fn, [tf.reshape(new_global_step, [1]),
                                  tf.reshape(total_loss, [1]),
                                  tf.reshape(learning_rate_t, [1])])
      return tf.compat.v1.estimator.tpu.TPUEstimatorSpec(
          mode=mode, loss=total_loss, train_op=train_op, host_call=host_call,
          scaffold_fn=scaffold_fn)

    if mode == tf.compat.v1.estimator.ModeKeys.EVAL:

      def metric_fn(per_example_loss, label_ids, logits):
        predictions = tf.argmax(logits, axis=-1, output_type=tf.int32)
        return {
            "eval_accuracy": tf.compat.v1.metrics.accuracy(
                labels=label_ids, predictions=predictions),
            "eval_loss": tf.compat.v1.metrics.mean(values=per_example_loss),
        }

      return tf.compat.v1.estimator.tpu.TPUEstimatorSpec(
          mode=mode, loss=total_loss,
          eval_metrics=(metric_fn, [per_example_loss, label_ids, logits]),
          scaffold_fn=scaffold_fn)

    predictions = {"probabilities": probabilities}
    # Two serving signatures. (A ClassificationOutput would be dropped from the
    # export: Classify signatures take serialized tf.Examples, and this
    # export takes raw ids.)
    export_outputs = {
        tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY:
            tf.compat.v1.estimator.export.PredictOutput(predictions),
        "predict_label": tf.compat.v1.estimator.export.PredictOutput(
            {"label_id": tf.argmax(probabilities, axis=-1, output_type=tf.int32)}),
    }
    return tf.compat.v1.estimator.tpu.TPUEstimatorSpec(
        mode=mode, predictions=predictions, export_outputs=export_outputs,
        scaffold_fn=scaffold_fn)

  return model_fn


def serving_input_receiver_fn_builder(seq_length):
  """A receiver of raw int32 [batch, seq_length] tensors (not serialized Examples)."""
  features = {name: tf.zeros([1, seq_length], dtype=tf.int32) for name in FEATURE_NAMES}
  return tf.compat.v1.estimator.export.build_raw_serving_input_receiver_fn(features)


def describe_export(export_dir):
  """{tag set: signature keys} of each MetaGraph of the SavedModel, tags joined by ","."""
  saved_model = saved_model_pb2.SavedModel()
  with tf.io.gfile.GFile(os.path.join(export_dir, "saved_model.pb"), "rb") as f:
    saved_model.ParseFromString(f.read())
  return {",".join(sorted(meta_graph.meta_info_def.tags)): sorted(meta_graph.signature_def)
          for meta_graph in saved_model.meta_graphs}


def serve(export_dir, features):
  """Runs the export's default signature on `features` (lists of ids), loaded with TF2's loader.

  The MetaGraph tagged "serve" alone is the one for CPU/GPU: TPUEstimator
  (export_to_tpu=True, the default) may also write one tagged "serve", "tpu".
  """
  loaded = tf.saved_model.load(export_dir, tags=[tf.saved_model.SERVING])
  signature = loaded.signatures[tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY]
  inputs = {name: tf.constant([getattr(f, name) for f in features], dtype=tf.int32)
            for name in FEATURE_NAMES}
  outputs = signature(**inputs)
  return {name: value.numpy().tolist() for name, value in outputs.items()}


def main(_):
  tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)
  if not FLAGS.do_train and not FLAGS.do_eval and not FLAGS.do_predict:
    raise ValueError("At least one of `do_train`, `do_eval` or `do_predict' must be True.")
  processors = {"sentiment": SentimentProcessor}
  task_name = FLAGS.task_name.lower()
  if task_name not in processors:
    raise ValueError(f"Task not found: {task_name}")
  processor = processors[task_name](FLAGS.random_seed)
  label_list = processor.get_labels()

  bert_config = modeling.BertConfig.from_json_file(FLAGS.bert_config_file)
  if FLAGS.max_seq_length > bert_config.max_position_embeddings:
    raise ValueError(f"max_seq_length {FLAGS.max_seq_length} is longer than the model's "
                     f"max_position_embeddings {bert_config.max_position_embeddings}")
  tf.io.gfile.makedirs(FLAGS.output_dir)
  tokenizer = tokenization.FullTokenizer(FLAGS.vocab_file, FLAGS.do_lower_case)

  tpu_cluster_resolver = None
  if FLAGS.use_tpu and FLAGS.tpu_name:
    tpu_cluster_resolver = tf.distribute.cluster_resolver.TPUClusterResolver(FLAGS.tpu_name)
  run_config = tf.compat.v1.estimator.tpu.RunConfig(
      cluster=tpu_cluster_resolver,
      model_dir=FLAGS.output_dir,
      save_checkpoints_steps=FLAGS.save_checkpoints_steps,
      save_summary_steps=FLAGS.save_summary_steps,
      log_step_count_steps=FLAGS.log_step_count_steps,
      # A fixed graph-level seed: the classifier's initial weights, dropout
      # and shuffling are then the same on every run.
      tf_random_seed=FLAGS.random_seed,
      tpu_config=tf.compat.v1.estimator.tpu.TPUConfig(
          iterations_per_loop=FLAGS.iterations_per_loop,
          num_shards=FLAGS.num_tpu_cores,
          per_host_input_for_training=tf.compat.v1.estimator.tpu.InputPipelineConfig.PER_HOST_V2))

  train_examples = None
  num_train_steps = None
  num_warmup_steps = None
  if FLAGS.do_train:
    train_examples = processor.get_train_examples(FLAGS.num_train_examples)
    num_train_steps = FLAGS.num_train_steps or int(
        len(train_examples) / FLAGS.train_batch_size * FLAGS.num_train_epochs)
    num_warmup_steps = int(num_train_steps * FLAGS.warmup_proportion)

  model_fn = model_fn_builder(
      bert_config=bert_config, num_labels=len(label_list),
      init_checkpoint=FLAGS.init_checkpoint, learning_rate=FLAGS.learning_rate,
      num_train_steps=num_train_steps, num_warmup_steps=num_warmup_steps,
      use_tpu=FLAGS.use_tpu, use_one_hot_embeddings=FLAGS.use_tpu,
      summary_dir=FLAGS.output_dir)
  # Without a TPU, TPUEstimator falls back to a normal Estimator on CPU/GPU.
  estimator = tf.compat.v1.estimator.tpu.TPUEstimator(
      use_tpu=FLAGS.use_tpu, model_fn=model_fn, config=run_config,
      train_batch_size=FLAGS.train_batch_size, eval_batch_size=FLAGS.eval_batch_size,
      predict_batch_size=FLAGS.predict_batch_size)

  results = {"tensorflow_version": tf.__version__,
             "estimator_class": f"{type(estimator).__module__}.{type(estimator).__name__}"}

  if FLAGS.do_train:
    train_file = os.path.join(FLAGS.output_dir, "train.tf_record")
    file_based_convert_examples_to_features(train_examples, label_list, FLAGS.max_seq_length,
                                            tokenizer, train_file)
    tf.compat.v1.logging.info("***** Running training *****")
    tf.compat.v1.logging.info("  Num examples = %d", len(train_examples))
    tf.compat.v1.logging.info("  Batch size = %d", FLAGS.train_batch_size)
    tf.compat.v1.logging.info("  Num steps = %d", num_train_steps)
    estimator.train(
        input_fn=file_based_input_fn_builder(train_file, FLAGS.max_seq_length,
                                             is_training=True, drop_remainder=True),
        max_steps=num_train_steps)
    results["checkpoint"] = estimator.latest_checkpoint()

  if FLAGS.do_eval:
    eval_examples = processor.get_dev_examples(FLAGS.num_eval_examples)
    eval_file = os.path.join(FLAGS.output_dir, "eval.tf_record")
    file_based_convert_examples_to_features(eval_examples, label_list, FLAGS.max_seq_length,
                                            tokenizer, eval_file)
    # A TPU needs full batches, hence a fixed number of steps; on CPU the
    # last, partial batch is evaluated too and the input decides when to stop.
    eval_steps = None
    if FLAGS.use_tpu:
      eval_steps = len(eval_examples) // FLAGS.eval_batch_size
    result = estimator.evaluate(
        input_fn=file_based_input_fn_builder(eval_file, FLAGS.max_seq_length,
                                             is_training=False,
                                             drop_remainder=FLAGS.use_tpu),
        steps=eval_steps)
    output_eval_file = os.path.join(FLAGS.output_dir, "eval_results.txt")
    with tf.io.gfile.GFile(output_eval_file, "w") as writer:
      tf.compat.v1.logging.info("***** Eval results *****")
      for key in sorted(result.keys()):
        tf.compat.v1.logging.info("  %s = %s", key, str(result[key]))
        writer.write(f"{key} = {result[key]}\n")
    results["eval"] = {key: float(value) for key, value in result.items()}

  if FLAGS.do_predict:
    predict_examples = processor.get_test_examples(FLAGS.num_predict_examples)
    predict_file = os.path.join(FLAGS.output_dir, "predict.tf_record")
    file_based_convert_examples_to_features(predict_examples, label_list,
                                            FLAGS.max_seq_length, tokenizer, predict_file)
    result = estimator.predict(
        input_fn=file_based_input_fn_builder(predict_file, FLAGS.max_seq_length,
                                             is_training=False,
                                             drop_remainder=FLAGS.use_tpu))
    output_predict_file = os.path.join(FLAGS.output_dir, "test_results.tsv")
    probabilities = []
    with tf.io.gfile.GFile(output_predict_file, "w") as writer:
      tf.compat.v1.logging.info("***** Predict results *****")
      for prediction in result:
        writer.write("\t".join(str(p) for p in prediction["probabilities"]) + "\n")
        probabilities.append([float(p) for p in prediction["probabilities"]])
    if len(probabilities) != len(predict_examples):
      raise RuntimeError(f"predicted {len(probabilities)} of {len(predict_examples)} examples")
    results["predictions"] = probabilities
    results["test_results_tsv"] = output_predict_file

  if FLAGS.export_dir:
    export_path = estimator.export_saved_model(
        FLAGS.export_dir, serving_input_receiver_fn_builder(FLAGS.max_seq_length))
    export_path = export_path.decode() if isinstance(export_path, bytes) else export_path
    tf.compat.v1.logging.info("Exported the model to %s", export_path)
    served = [convert_single_example(i, example, label_list, FLAGS.max_seq_length, tokenizer)
              for i, example in enumerate(processor.get_test_examples(
                  FLAGS.num_predict_examples)[:FLAGS.num_served_examples])]
    results["export"] = {"path": export_path, "meta_graphs": describe_export(export_path),
                         "served": serve(export_path, served)}

  if FLAGS.results_json:
    with open(FLAGS.results_json, "w") as f:
      json.dump(results, f, indent=2, sort_keys=True)


if __name__ == "__main__":
  flags.mark_flag_as_required("output_dir")
  app.run(main)
