"""Keeps tf.compat.v1's deprecation notices out of the user's logs.

Every compat.v1 call the Estimator machinery makes (and most a model_fn makes)
prints a multi-line "is deprecated" warning once; a user of estimator_lite chose
graph mode on purpose and should not read a wall of them.
"""
import contextlib
import warnings
from typing import Iterator

from estimator_lite._util import tf_internals


@contextlib.contextmanager
def quiet_deprecations() -> Iterator[None]:
  """Context manager that silences TensorFlow deprecation notices inside it."""
  with tf_internals.deprecation_notices_silenced(), warnings.catch_warnings():
    # tf-keras's legacy tf.compat.v1.layers warn through Python warnings.
    warnings.filterwarnings("ignore", message=r".*is deprecated and will be removed",
                            category=UserWarning)
    yield
