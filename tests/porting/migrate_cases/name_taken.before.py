"""A module that already uses the name estimator_lite for something else."""
import tensorflow as tf

estimator_lite = "my own variable"
config = tf.estimator.RunConfig(model_dir=estimator_lite)
spec = tf.compat.v1.estimator.EstimatorSpec
