"""Imports of tensorflow_estimator inside blocks and on shared lines."""
import estimator_lite.compat.v1
import os, sys
if os.environ.get("V1"): V1 = True
try:
  # tf.estimator 2.15 shipped in its own package.
  import tensorflow_estimator as tfe_pkg
except ImportError:
  tfe_pkg = None


def make_config(tf):
  # `tf` is this function's parameter: left alone.
  return tf.estimator.RunConfig()


def local_import():
  import tensorflow.compat.v1 as tf1
  return estimator_lite.compat.v1.RunConfig(), estimator_lite.compat.v1.RunConfig()


print(estimator_lite.compat.v1.ModeKeys, sys.argv)
