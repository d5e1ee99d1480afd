"""Imports of tensorflow_estimator inside blocks and on shared lines."""
import os, tensorflow_estimator as tfe, sys
if os.environ.get("V1"): import tensorflow_estimator as tfe_v1; V1 = True
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
  return tf1.estimator.RunConfig(), tfe.estimator.RunConfig()


print(tfe_v1.estimator.ModeKeys, sys.argv)
