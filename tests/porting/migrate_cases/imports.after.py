"""Every import form of tf.estimator 2.15."""
import os, sys
# tensorflow_estimator is gone on TF 2.16+.
import estimator_lite
import estimator_lite.compat.v1
import tensorflow
import estimator_lite.compat.v1 as v1_estimator
from tensorflow import keras
import estimator_lite as tf_estimator
import estimator_lite.compat.v1 as estimator
from tensorflow.compat.v1 import (
    logging,
)
import estimator_lite.compat.v1 as estimator_v1
from estimator_lite import RunConfig, Estimator as E
from estimator_lite import export
from estimator_lite.export import ServingInputReceiver
import estimator_lite.compat.v1 as tfe_estimator
import estimator_lite as api_v2
from estimator_lite.keras import model_to_estimator
try:
  import tensorflow_estimator
except ImportError:
  tensorflow_estimator = None

print(tensorflow.constant(1), os.sep, sys.argv, keras, logging)
print(estimator_lite.ModeKeys.TRAIN, estimator_lite.compat.v1.RunConfig)
print(v1_estimator, tf_estimator, estimator, estimator_v1, RunConfig, E)
print(export, ServingInputReceiver, tfe_estimator, api_v2, model_to_estimator)
if tf_estimator: pass
