"""Module aliases and the Keras bridge."""
import tensorflow as tf
from tensorflow import compat
from tensorflow import keras

v1 = tf.compat.v1
est = tf.estimator
tf2 = tf


def main():
  fn = v1.estimator.inputs.numpy_input_fn
  config = est.RunConfig(tf_random_seed=1)
  spec = tf2.estimator.TrainSpec
  ctor = compat.v1.estimator.DNNClassifier
  model = keras.Sequential([])
  a = tf.keras.estimator.model_to_estimator(keras_model=model, config=config)
  b = tf.compat.v1.keras.estimator.model_to_estimator(keras_model=model)
  c = keras.estimator.model_to_estimator
  return fn, spec, ctor, a, b, c


tf = tf.compat.v1
print(tf.estimator.Estimator, tf.estimator.inputs.pandas_input_fn)


def with_parameter(tf, v1=None):
  return tf.estimator, v1.estimator  # parameters here, not TensorFlow
