"""What the tool reports and leaves as it is."""
import importlib

import tensorflow as tf
import tensorflow_estimator as tfe
from tensorflow_estimator.python.estimator import estimator as estimator_lib
from tensorflow_estimator.python.estimator.canned import dnn
import tensorflow_estimator.python.estimator.run_config as run_config_lib

a = importlib.import_module("tensorflow.estimator")
b = __import__("tensorflow_estimator")
c = getattr(tf, "estimator")
d = tfe.python.estimator.estimator.Estimator
e = tfe.estimator.RunConfig()
print(tfe.__version__, estimator_lib, dnn, run_config_lib)
