"""A module that already uses the name estimator_lite for something else."""
import estimator_lite as estimator_lite_
import estimator_lite.compat.v1 as estimator_lite_compat_v1_
import tensorflow as tf

estimator_lite = "my own variable"
config = estimator_lite_.RunConfig(model_dir=estimator_lite)
spec = estimator_lite_compat_v1_.EstimatorSpec
