"""BERT's optimizer: Adam with decoupled weight decay, linear warm-up then linear decay.

`create_optimizer` builds the whole training step the way BERT's programs did:
gradients clipped to a global norm of 1.0, the update applied by
AdamWeightDecayOptimizer (Adam without bias correction, plus weight decay
added to the update rather than to the loss), and the global step incremented
by the step itself. On a TPU the optimizer is wrapped in CrossShardOptimizer
so gradients are summed across cores.
"""
import re

import tensorflow as tf


def create_optimizer(loss, init_lr, num_train_steps, num_warmup_steps, use_tpu):
  """Builds the training step of `loss`.

  Returns:
    (train_op, learning_rate, new_global_step): the op to run, the learning
    rate of this step and the global step it leads to (host_call logs both).
  """
  global_step = tf.compat.v1.train.get_or_create_global_step()
  # One read of the global step for everything this step computes. The
  # increment below runs after the update and after this read, so the learning
  # rate and the step host_call logs are the ones of this step, whatever order
  # the session schedules the ops in.
  step = tf.identity(global_step, name="current_step")

  learning_rate = tf.compat.v1.train.polynomial_decay(
      tf.constant(init_lr, dtype=tf.float32), step, num_train_steps,
      end_learning_rate=0.0, power=1.0, cycle=False)
  if num_warmup_steps:
    # Linear warm-up from 0 to init_lr over the first num_warmup_steps steps.
    step_float = tf.cast(step, tf.float32)
    warmup_lr = init_lr * step_float / float(num_warmup_steps)
    is_warmup = tf.cast(step_float < num_warmup_steps, tf.float32)
    learning_rate = (1.0 - is_warmup) * learning_rate + is_warmup * warmup_lr

  optimizer = AdamWeightDecayOptimizer(
      learning_rate=learning_rate, weight_decay_rate=0.01, beta_1=0.9, beta_2=0.999,
      epsilon=1e-6, exclude_from_weight_decay=["LayerNorm", "layer_norm", "bias"])
  if use_tpu:
    optimizer = tf.compat.v1.tpu.CrossShardOptimizer(optimizer)

  tvars = tf.compat.v1.trainable_variables()
  grads = tf.compat.v1.gradients(loss, tvars)
  # The same clipping BERT pre-trained with: it keeps early steps stable.
  grads, _ = tf.clip_by_global_norm(grads, clip_norm=1.0)
  apply_op = optimizer.apply_gradients(zip(grads, tvars), global_step=global_step)

  # AdamWeightDecayOptimizer leaves the global step alone; the step does it.
  new_global_step = step + 1
  with tf.control_dependencies([apply_op]):
    train_op = global_step.assign(new_global_step)
  return train_op, learning_rate, new_global_step


class AdamWeightDecayOptimizer(tf.compat.v1.train.Optimizer):
  """Adam with weight decay applied to the update, as BERT trained with.

  Adding `weight_decay_rate * w` to the loss would mix it into Adam's moment
  estimates; adding it to the update keeps the two apart. There is no bias
  correction of the moments (BERT had none either).

  Args:
    learning_rate: float or scalar Tensor.
    weight_decay_rate: decay of each weight per step, times learning_rate.
    beta_1, beta_2, epsilon: Adam's.
    exclude_from_weight_decay: regexes; a variable whose name matches one is
      not decayed (layer norm parameters and biases).
    name: the op name.
  """

  def __init__(self, learning_rate, weight_decay_rate=0.0, beta_1=0.9, beta_2=0.999,
               epsilon=1e-6, exclude_from_weight_decay=None,
               name="AdamWeightDecayOptimizer"):
    super().__init__(use_locking=False, name=name)
    self.learning_rate = learning_rate
    self.weight_decay_rate = weight_decay_rate
    self.beta_1 = beta_1
    self.beta_2 = beta_2
    self.epsilon = epsilon
    self.exclude_from_weight_decay = exclude_from_weight_decay

  def apply_gradients(self, grads_and_vars, global_step=None, name=None):
    """One Adam step for every (gradient, variable) pair; `global_step` is not incremented."""
    del global_step  # create_optimizer increments it after this update.
    assignments = []
    for grad, param in grads_and_vars:
      if grad is None or param is None:
        continue
      param_name = self._get_variable_name(param.name)
      # Slots are plain variables named after the parameter, so a checkpoint
      # holds "<param>/adam_m" and "<param>/adam_v" beside it.
      m = tf.compat.v1.get_variable(
          name=param_name + "/adam_m", shape=param.shape.as_list(), dtype=tf.float32,
          trainable=False, initializer=tf.compat.v1.zeros_initializer())
      v = tf.compat.v1.get_variable(
          name=param_name + "/adam_v", shape=param.shape.as_list(), dtype=tf.float32,
          trainable=False, initializer=tf.compat.v1.zeros_initializer())
      if isinstance(grad, tf.IndexedSlices):
        # Embedding gradients come as slices; the moments are dense.
        grad = tf.convert_to_tensor(grad)

      next_m = self.beta_1 * m + (1.0 - self.beta_1) * grad
      next_v = self.beta_2 * v + (1.0 - self.beta_2) * tf.square(grad)
      update = next_m / (tf.sqrt(next_v) + self.epsilon)
      if self._do_use_weight_decay(param_name):
        update += self.weight_decay_rate * param
      next_param = param - self.learning_rate * update
      assignments.extend([param.assign(next_param), m.assign(next_m), v.assign(next_v)])
    return tf.group(*assignments, name=name)

  def _do_use_weight_decay(self, param_name):
    if not self.weight_decay_rate:
      return False
    for pattern in self.exclude_from_weight_decay or ():
      if re.search(pattern, param_name) is not None:
        return False
    return True

  @staticmethod
  def _get_variable_name(param_name):
    match = re.match(r"^(.*):\d+$", param_name)
    return match.group(1) if match else param_name
