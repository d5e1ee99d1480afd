"""A tiny BERT: the transformer encoder of BERT, in tf.compat.v1 graph ops.

Written the way BERT's TF1 modeling code was: variables made with
`tf.compat.v1.get_variable` and `tf.compat.v1.layers.dense` under
`tf.compat.v1.variable_scope("bert")`, so a checkpoint's names are BERT's
("bert/embeddings/word_embeddings", "bert/encoder/layer_0/attention/self/
query/kernel", ..., "bert/pooler/dense/kernel") and a fine-tuning program loads
the pre-trained encoder by name with `get_assignment_map_from_checkpoint`.

    config = BertConfig.from_json_file("bert_config.json")
    model = BertModel(config, is_training, input_ids, input_mask, segment_ids)
    model.get_pooled_output()     # [batch, hidden]: the [CLS] summary
    model.get_sequence_output()   # [batch, seq, hidden]
"""
import collections
import copy
import json
import math
import re

import tensorflow as tf


class BertConfig(object):
  """The sizes of a BertModel.

  Args:
    vocab_size: number of tokens in vocab.txt.
    hidden_size: width of the embeddings and of every layer's output.
    num_hidden_layers: transformer layers.
    num_attention_heads: heads of each attention layer (divides hidden_size).
    intermediate_size: width of each layer's feed-forward part.
    hidden_act: activation of the feed-forward part ("gelu", "relu", "tanh").
    hidden_dropout_prob: dropout of embeddings and layer outputs in training.
    attention_probs_dropout_prob: dropout of the attention probabilities.
    max_position_embeddings: longest sequence the model can read.
    type_vocab_size: number of segment ids (2: sentence A and B).
    initializer_range: stddev of the truncated normal weight initializer.
  """

  def __init__(self, vocab_size, hidden_size=32, num_hidden_layers=2,
               num_attention_heads=2, intermediate_size=64, hidden_act="gelu",
               hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
               max_position_embeddings=32, type_vocab_size=2,
               initializer_range=0.02):
    self.vocab_size = vocab_size
    self.hidden_size = hidden_size
    self.num_hidden_layers = num_hidden_layers
    self.num_attention_heads = num_attention_heads
    self.intermediate_size = intermediate_size
    self.hidden_act = hidden_act
    self.hidden_dropout_prob = hidden_dropout_prob
    self.attention_probs_dropout_prob = attention_probs_dropout_prob
    self.max_position_embeddings = max_position_embeddings
    self.type_vocab_size = type_vocab_size
    self.initializer_range = initializer_range

  @classmethod
  def from_dict(cls, json_object):
    config = cls(vocab_size=None)
    for key, value in json_object.items():
      config.__dict__[key] = value
    return config

  @classmethod
  def from_json_file(cls, json_file):
    with open(json_file) as reader:
      return cls.from_dict(json.load(reader))

  def to_dict(self):
    return copy.deepcopy(self.__dict__)

  def to_json_string(self):
    return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"


class BertModel(object):
  """BERT's encoder: embeddings, a stack of transformer layers, and the pooler.

  Args:
    config: a BertConfig.
    is_training: True applies dropout; False turns it off (evaluation,
      prediction, export).
    input_ids: int32 Tensor [batch_size, seq_length] of token ids.
    input_mask: int32 Tensor [batch_size, seq_length], 1 for real tokens and
      0 for padding; None: all ones.
    token_type_ids: int32 Tensor [batch_size, seq_length] of segment ids;
      None: all zeros.
    use_one_hot_embeddings: look embeddings up with a one-hot matmul (what a
      TPU does fastest) instead of tf.gather.
    scope: variable scope; None: "bert".

  Raises:
    ValueError: a shape that does not fit the config.
  """

  def __init__(self, config, is_training, input_ids, input_mask=None,
               token_type_ids=None, use_one_hot_embeddings=False, scope=None):
    config = copy.deepcopy(config)
    if not is_training:
      config.hidden_dropout_prob = 0.0
      config.attention_probs_dropout_prob = 0.0

    batch_size, seq_length = get_shape_list(input_ids, expected_rank=2)
    if input_mask is None:
      input_mask = tf.ones([batch_size, seq_length], dtype=tf.int32)
    if token_type_ids is None:
      token_type_ids = tf.zeros([batch_size, seq_length], dtype=tf.int32)

    with tf.compat.v1.variable_scope(scope, default_name="bert"):
      with tf.compat.v1.variable_scope("embeddings"):
        self.embedding_output, self.embedding_table = embedding_lookup(
            input_ids=input_ids, vocab_size=config.vocab_size,
            embedding_size=config.hidden_size,
            initializer_range=config.initializer_range,
            word_embedding_name="word_embeddings",
            use_one_hot_embeddings=use_one_hot_embeddings)
        self.embedding_output = embedding_postprocessor(
            input_tensor=self.embedding_output, token_type_ids=token_type_ids,
            token_type_vocab_size=config.type_vocab_size,
            initializer_range=config.initializer_range,
            max_position_embeddings=config.max_position_embeddings,
            dropout_prob=config.hidden_dropout_prob)

      with tf.compat.v1.variable_scope("encoder"):
        attention_mask = create_attention_mask_from_input_mask(input_ids, input_mask)
        self.all_encoder_layers = transformer_model(
            input_tensor=self.embedding_output, attention_mask=attention_mask,
            hidden_size=config.hidden_size,
            num_hidden_layers=config.num_hidden_layers,
            num_attention_heads=config.num_attention_heads,
            intermediate_size=config.intermediate_size,
            intermediate_act_fn=get_activation(config.hidden_act),
            hidden_dropout_prob=config.hidden_dropout_prob,
            attention_probs_dropout_prob=config.attention_probs_dropout_prob,
            initializer_range=config.initializer_range)
      self.sequence_output = self.all_encoder_layers[-1]

      # The pooler summarises the sequence by the [CLS] token's final hidden
      # state: a dense tanh layer on it, pre-trained as BERT's was.
      with tf.compat.v1.variable_scope("pooler"):
        first_token = tf.squeeze(self.sequence_output[:, 0:1, :], axis=1)
        self.pooled_output = tf.compat.v1.layers.dense(
            first_token, config.hidden_size, activation=tf.tanh,
            kernel_initializer=create_initializer(config.initializer_range))

  def get_pooled_output(self):
    return self.pooled_output

  def get_sequence_output(self):
    return self.sequence_output

  def get_all_encoder_layers(self):
    return self.all_encoder_layers

  def get_embedding_output(self):
    return self.embedding_output

  def get_embedding_table(self):
    return self.embedding_table


def gelu(x):
  """Gaussian Error Linear Unit, the tanh approximation BERT used."""
  cdf = 0.5 * (1.0 + tf.tanh(
      math.sqrt(2.0 / math.pi) * (x + 0.044715 * tf.pow(x, 3))))
  return x * cdf


def get_activation(name):
  """Maps a config's activation name to the function; None or "linear" is no activation."""
  if name is None or not isinstance(name, str):
    return name
  name = name.lower()
  if name in ("", "linear"):
    return None
  activations = {"relu": tf.nn.relu, "gelu": gelu, "tanh": tf.tanh}
  if name not in activations:
    raise ValueError(f"Unsupported activation: {name}")
  return activations[name]


def get_assignment_map_from_checkpoint(tvars, init_checkpoint):
  """Which of `tvars` a checkpoint holds, by name, for `init_from_checkpoint`.

  Args:
    tvars: the variables of the graph being built (usually the trainable ones).
    init_checkpoint: a checkpoint path (model.ckpt-N).

  Returns:
    (assignment_map, initialized_variable_names): an OrderedDict checkpoint
    name -> graph name for every variable both have, and a dict whose keys are
    those names with and without ":0" (to log which variables were loaded).
  """
  name_to_variable = collections.OrderedDict()
  for var in tvars:
    match = re.match(r"^(.*):\d+$", var.name)
    name = match.group(1) if match else var.name
    name_to_variable[name] = var

  assignment_map = collections.OrderedDict()
  initialized_variable_names = {}
  for name, _ in tf.train.list_variables(init_checkpoint):
    if name not in name_to_variable:
      continue
    assignment_map[name] = name
    initialized_variable_names[name] = 1
    initialized_variable_names[name + ":0"] = 1
  return assignment_map, initialized_variable_names


def dropout(input_tensor, dropout_prob):
  """Dropout with probability `dropout_prob` of dropping; 0.0 or None returns the input.

  No op seed: the masks derive from the graph-level seed (the programs set
  RunConfig(tf_random_seed)), so a run repeats exactly, on tf.estimator 2.15
  and on estimator_lite alike.
  """
  if dropout_prob is None or dropout_prob == 0.0:
    return input_tensor
  return tf.compat.v1.nn.dropout(input_tensor, rate=dropout_prob)


def layer_norm(input_tensor, name=None):
  """Normalises the last axis, with learned scale (gamma) and offset (beta).

  The variables are "<scope>/LayerNorm/gamma" and ".../beta", the names BERT's
  checkpoints use.
  """
  with tf.compat.v1.variable_scope(name, default_name="LayerNorm"):
    params_shape = input_tensor.shape[-1:]
    beta = tf.compat.v1.get_variable(
        "beta", shape=params_shape, initializer=tf.compat.v1.zeros_initializer())
    gamma = tf.compat.v1.get_variable(
        "gamma", shape=params_shape, initializer=tf.compat.v1.ones_initializer())
    mean, variance = tf.nn.moments(input_tensor, axes=[-1], keepdims=True)
    return tf.nn.batch_normalization(input_tensor, mean, variance, offset=beta,
                                     scale=gamma, variance_epsilon=1e-12)


def layer_norm_and_dropout(input_tensor, dropout_prob, name=None):
  return dropout(layer_norm(input_tensor, name), dropout_prob)


def create_initializer(initializer_range=0.02):
  return tf.compat.v1.truncated_normal_initializer(stddev=initializer_range)


def embedding_lookup(input_ids, vocab_size, embedding_size=32,
                     initializer_range=0.02, word_embedding_name="word_embeddings",
                     use_one_hot_embeddings=False):
  """Looks up word embeddings of `input_ids` ([batch, seq]).

  Returns:
    (output, table): output [batch, seq, embedding_size], and the embedding
    table [vocab_size, embedding_size] (the masked-LM head shares it).
  """
  embedding_table = tf.compat.v1.get_variable(
      name=word_embedding_name, shape=[vocab_size, embedding_size],
      initializer=create_initializer(initializer_range))
  flat_ids = tf.reshape(input_ids, [-1])
  if use_one_hot_embeddings:
    one_hot = tf.one_hot(flat_ids, depth=vocab_size)
    output = tf.matmul(one_hot, embedding_table)
  else:
    output = tf.gather(embedding_table, flat_ids)
  input_shape = get_shape_list(input_ids)
  output = tf.reshape(output, input_shape + [embedding_size])
  return output, embedding_table


def embedding_postprocessor(input_tensor, token_type_ids, token_type_vocab_size=2,
                            initializer_range=0.02, max_position_embeddings=32,
                            dropout_prob=0.1):
  """Adds segment and position embeddings to the word embeddings, then layer norm and dropout.

  Raises:
    ValueError: the sequence is longer than max_position_embeddings.
  """
  batch_size, seq_length, width = get_shape_list(input_tensor, expected_rank=3)
  output = input_tensor

  # Few segment ids: a one-hot matmul is as cheap as a gather, and is what
  # BERT did.
  token_type_table = tf.compat.v1.get_variable(
      name="token_type_embeddings", shape=[token_type_vocab_size, width],
      initializer=create_initializer(initializer_range))
  flat_token_type_ids = tf.reshape(token_type_ids, [-1])
  one_hot_ids = tf.one_hot(flat_token_type_ids, depth=token_type_vocab_size)
  token_type_embeddings = tf.matmul(one_hot_ids, token_type_table)
  output += tf.reshape(token_type_embeddings, [batch_size, seq_length, width])

  if seq_length > max_position_embeddings:
    raise ValueError(f"sequence length {seq_length} is longer than "
                     f"max_position_embeddings {max_position_embeddings}")
  full_position_embeddings = tf.compat.v1.get_variable(
      name="position_embeddings", shape=[max_position_embeddings, width],
      initializer=create_initializer(initializer_range))
  # Positions are 0..seq_length-1 for every example: the table's first rows,
  # broadcast over the batch.
  position_embeddings = tf.slice(full_position_embeddings, [0, 0], [seq_length, -1])
  output += tf.reshape(position_embeddings, [1, seq_length, width])

  return layer_norm_and_dropout(output, dropout_prob)


def create_attention_mask_from_input_mask(from_tensor, to_mask):
  """[batch, from_seq, to_seq] float mask: 1 where a position may attend to a real token."""
  batch_size, from_seq_length = get_shape_list(from_tensor)[:2]
  to_seq_length = get_shape_list(to_mask, expected_rank=2)[1]
  to_mask = tf.cast(tf.reshape(to_mask, [batch_size, 1, to_seq_length]), tf.float32)
  # Every query position sees the same keys: a broadcast of ones does it.
  broadcast_ones = tf.ones(shape=[batch_size, from_seq_length, 1], dtype=tf.float32)
  return broadcast_ones * to_mask


def attention_layer(from_tensor, to_tensor, attention_mask=None, num_attention_heads=1,
                    size_per_head=32, attention_probs_dropout_prob=0.0,
                    initializer_range=0.02, batch_size=None, from_seq_length=None,
                    to_seq_length=None):
  """Multi-head scaled dot-product attention from `from_tensor` to `to_tensor`.

  Both tensors come in flattened to [batch * seq, width] (the transformer
  keeps them 2D between layers, as BERT did, to avoid reshapes).

  Returns:
    [batch * from_seq, num_attention_heads * size_per_head].
  """

  def split_heads(tensor, seq_length):
    tensor = tf.reshape(tensor, [batch_size, seq_length, num_attention_heads, size_per_head])
    return tf.transpose(tensor, [0, 2, 1, 3])

  query = tf.compat.v1.layers.dense(
      from_tensor, num_attention_heads * size_per_head, name="query",
      kernel_initializer=create_initializer(initializer_range))
  key = tf.compat.v1.layers.dense(
      to_tensor, num_attention_heads * size_per_head, name="key",
      kernel_initializer=create_initializer(initializer_range))
  value = tf.compat.v1.layers.dense(
      to_tensor, num_attention_heads * size_per_head, name="value",
      kernel_initializer=create_initializer(initializer_range))

  query = split_heads(query, from_seq_length)
  key = split_heads(key, to_seq_length)
  scores = tf.matmul(query, key, transpose_b=True)
  scores = scores * (1.0 / math.sqrt(float(size_per_head)))

  if attention_mask is not None:
    # Padding gets a large negative score, so softmax gives it ~0 weight.
    attention_mask = tf.expand_dims(attention_mask, axis=1)
    scores += (1.0 - tf.cast(attention_mask, tf.float32)) * -10000.0

  probs = dropout(tf.nn.softmax(scores), attention_probs_dropout_prob)
  value = split_heads(value, to_seq_length)
  context = tf.transpose(tf.matmul(probs, value), [0, 2, 1, 3])
  return tf.reshape(context, [batch_size * from_seq_length,
                              num_attention_heads * size_per_head])


def transformer_model(input_tensor, attention_mask=None, hidden_size=32,
                      num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                      intermediate_act_fn=gelu, hidden_dropout_prob=0.1,
                      attention_probs_dropout_prob=0.1, initializer_range=0.02):
  """The encoder stack ("Attention Is All You Need"), post-layer-norm as in BERT.

  Returns:
    A list of every layer's output, each [batch, seq, hidden_size].

  Raises:
    ValueError: hidden_size is not a multiple of num_attention_heads, or the
      input's width is not hidden_size (residuals add them).
  """
  if hidden_size % num_attention_heads != 0:
    raise ValueError(f"hidden size {hidden_size} is not a multiple of the number of "
                     f"attention heads {num_attention_heads}")
  size_per_head = hidden_size // num_attention_heads
  batch_size, seq_length, input_width = get_shape_list(input_tensor, expected_rank=3)
  if input_width != hidden_size:
    raise ValueError(f"input width {input_width} differs from hidden size {hidden_size}")

  prev_output = tf.reshape(input_tensor, [-1, input_width])
  all_layer_outputs = []
  for layer_idx in range(num_hidden_layers):
    with tf.compat.v1.variable_scope(f"layer_{layer_idx}"):
      layer_input = prev_output
      with tf.compat.v1.variable_scope("attention"):
        with tf.compat.v1.variable_scope("self"):
          attention_output = attention_layer(
              from_tensor=layer_input, to_tensor=layer_input,
              attention_mask=attention_mask, num_attention_heads=num_attention_heads,
              size_per_head=size_per_head,
              attention_probs_dropout_prob=attention_probs_dropout_prob,
              initializer_range=initializer_range, batch_size=batch_size,
              from_seq_length=seq_length, to_seq_length=seq_length)
        with tf.compat.v1.variable_scope("output"):
          attention_output = tf.compat.v1.layers.dense(
              attention_output, hidden_size,
              kernel_initializer=create_initializer(initializer_range))
          attention_output = dropout(attention_output, hidden_dropout_prob)
          attention_output = layer_norm(attention_output + layer_input)

      with tf.compat.v1.variable_scope("intermediate"):
        intermediate_output = tf.compat.v1.layers.dense(
            attention_output, intermediate_size, activation=intermediate_act_fn,
            kernel_initializer=create_initializer(initializer_range))

      with tf.compat.v1.variable_scope("output"):
        layer_output = tf.compat.v1.layers.dense(
            intermediate_output, hidden_size,
            kernel_initializer=create_initializer(initializer_range))
        layer_output = dropout(layer_output, hidden_dropout_prob)
        layer_output = layer_norm(layer_output + attention_output)
        prev_output = layer_output
        all_layer_outputs.append(
            tf.reshape(layer_output, [batch_size, seq_length, hidden_size]))
  return all_layer_outputs


def get_shape_list(tensor, expected_rank=None, name=None):
  """The shape of `tensor` as a list: ints where static, scalar Tensors where not.

  A model built for export has batch size None; the dynamic dimension then
  comes from tf.shape, so the same code serves training and serving.

  Raises:
    ValueError: the rank is not `expected_rank` (an int or a list of ints).
  """
  if expected_rank is not None:
    assert_rank(tensor, expected_rank, name)
  shape = tensor.shape.as_list()
  dynamic = None
  for index, dim in enumerate(shape):
    if dim is None:
      if dynamic is None:
        dynamic = tf.shape(tensor)
      shape[index] = dynamic[index]
  return shape


def assert_rank(tensor, expected_rank, name=None):
  """Raises ValueError when the static rank of `tensor` is not `expected_rank`."""
  expected = {expected_rank} if isinstance(expected_rank, int) else set(expected_rank)
  actual = tensor.shape.ndims
  if actual not in expected:
    raise ValueError(f"Tensor {name or tensor.name} has rank {actual}, expected "
                     f"{sorted(expected)} (shape {tensor.shape})")
