#!/usr/bin/env python
# -*- coding: utf-8 -*-
"""A model whose docstring names tf.estimator.Estimator (left alone)."""
from __future__ import print_function

import os  # the os module

# TensorFlow, as tf.
import tensorflow as tf  # keep this comment


def model_fn(features, labels, mode):   # odd spacing is kept
  """Uses tf.estimator.ModeKeys, says the docstring."""
  if mode == tf.estimator.ModeKeys.PREDICT:  # predict
    return tf.estimator.EstimatorSpec(
        mode,   # the mode
        predictions=features)
  loss = tf.constant(0.0)
  return tf.estimator.EstimatorSpec(mode,loss=loss,train_op=tf.no_op())


config = tf.estimator.RunConfig(
    model_dir=os.environ.get("MODEL_DIR"),  # where checkpoints go
)
hooks = [tf.estimator.StopAtStepHook(last_step=3) ,]
MESSAGE = 'tf.estimator.RunConfig'  # a string is not code
estimator_cls = (tf.compat.v1.estimator.
                 Estimator)
print(tf.__version__, MESSAGE)
