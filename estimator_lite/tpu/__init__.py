"""estimator_lite.tpu: tf.compat.v1.estimator.tpu, run on CPU and GPU (use_tpu=False).

A program written for tf.estimator 2.15's TPUEstimator that runs it with
`use_tpu=False` ("falls back to a normal Estimator on CPU or GPU") runs here
unchanged; what needs a TPU is refused when the TPUEstimator is built. Also
reachable as `estimator_lite.compat.v1.tpu`, and, after
`estimator_lite.install()` or under `python -m estimator_lite.run`, as
`tf.compat.v1.estimator.tpu` and `tensorflow_estimator.estimator.tpu`.
"""
from estimator_lite.tpu import experimental
from estimator_lite.tpu.tpu_config import InputPipelineConfig
from estimator_lite.tpu.tpu_config import RunConfig
from estimator_lite.tpu.tpu_config import TPUConfig
from estimator_lite.tpu.tpu_estimator import TPUEstimator
from estimator_lite.tpu.tpu_estimator_spec import TPUEstimatorSpec

__all__ = ["InputPipelineConfig", "RunConfig", "TPUConfig", "TPUEstimator",
           "TPUEstimatorSpec", "experimental"]
