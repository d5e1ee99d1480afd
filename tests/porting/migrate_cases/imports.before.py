"""Every import form of tf.estimator 2.15."""
import os, sys
# tensorflow_estimator is gone on TF 2.16+.
import tensorflow_estimator as tfe
import tensorflow.estimator
import tensorflow.compat.v1.estimator as v1_estimator
from tensorflow import estimator as tf_estimator, keras
from tensorflow.compat.v1 import estimator
from tensorflow.compat.v1 import (
    estimator as estimator_v1,  # the v1 namespace
    logging,
)
from tensorflow.estimator import RunConfig, Estimator as E
from tensorflow.estimator import export
from tensorflow.estimator.export import ServingInputReceiver
from tensorflow_estimator import estimator as tfe_estimator
from tensorflow_estimator.python.estimator.api._v2 import estimator as api_v2
from tensorflow.keras.estimator import model_to_estimator
try:
  import tensorflow_estimator
except ImportError:
  tensorflow_estimator = None

print(tensorflow.constant(1), os.sep, sys.argv, keras, logging)
print(tensorflow.estimator.ModeKeys.TRAIN, tfe.estimator.RunConfig)
print(v1_estimator, tf_estimator, estimator, estimator_v1, RunConfig, E)
print(export, ServingInputReceiver, tfe_estimator, api_v2, model_to_estimator)
if tf_estimator: import tensorflow_estimator as unused_tfe
