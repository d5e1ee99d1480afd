"""Module aliases and the Keras bridge."""
import estimator_lite
import estimator_lite.compat.v1
import estimator_lite.keras
import estimator_lite.keras.v1
import tensorflow as tf
from tensorflow import compat
from tensorflow import keras

v1 = tf.compat.v1
est = estimator_lite
tf2 = tf


def main():
  fn = estimator_lite.inputs.numpy_input_fn
  config = est.RunConfig(tf_random_seed=1)
  spec = estimator_lite.TrainSpec
  ctor = estimator_lite.compat.v1.DNNClassifier
  model = keras.Sequential([])
  a = estimator_lite.keras.model_to_estimator(keras_model=model, config=config)
  b = estimator_lite.keras.v1.model_to_estimator(keras_model=model)
  c = estimator_lite.keras.model_to_estimator
  return fn, spec, ctor, a, b, c


tf = tf.compat.v1
print(estimator_lite.compat.v1.Estimator, estimator_lite.inputs.pandas_input_fn)


def with_parameter(tf, v1=None):
  return tf.estimator, v1.estimator  # parameters here, not TensorFlow
