"""A user's model_fn built on a head, as the head tests train it through the Estimator."""
import tensorflow as tf
import tf_keras


def keras_model_fn(head, optimizer_fn):
  """A model_fn: one Dense layer gives `head` its logits from feature "x".

  Args:
    head: the head whose EstimatorSpec the model_fn returns.
    optimizer_fn: makes the Keras 2 optimizer (called in the model's graph).

  Returns:
    The model_fn.
  """
  def model_fn(features, labels, mode):
    # From zeros, every run trains the same weights: Keras draws an unseeded
    # initializer's seed from NumPy, which RunConfig(tf_random_seed) does not
    # fix, and 40 steps of a linear model on three classes end at 0.675-0.75
    # accuracy depending on where they started.
    layer = tf_keras.layers.Dense(head.logits_dimension, name="logits",
                                  kernel_initializer="zeros")
    logits = layer(features["x"])
    optimizer = optimizer_fn()
    # As the canned estimators do: the Keras optimizer counts the global step.
    optimizer.iterations = tf.compat.v1.train.get_or_create_global_step()
    return head.create_estimator_spec(features=features, mode=mode, logits=logits, labels=labels,
                                      optimizer=optimizer,
                                      trainable_variables=layer.trainable_weights)
  return model_fn
