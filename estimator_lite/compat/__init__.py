"""estimator_lite.compat: `v1` stands in for `tf.compat.v1.estimator`."""
from estimator_lite.compat import v1
