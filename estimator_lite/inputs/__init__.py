"""estimator_lite.inputs: input_fns over in-memory data (tf.compat.v1.estimator.inputs)."""
from estimator_lite.inputs.numpy_io import numpy_input_fn
from estimator_lite.inputs.pandas_io import pandas_input_fn
