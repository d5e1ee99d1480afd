"""Build script: metadata lives in setup.cfg; this file only picks the TensorFlow package.

`tensorflow` is the default requirement. Users who run the CPU-only wheel set
ESTIMATOR_LITE_TENSORFLOW=tensorflow-cpu at install time so pip does not pull the
full `tensorflow` wheel over `tensorflow-cpu` (both install into the same
package directory).
"""
import os

from setuptools import setup

_TF_RANGE = ">=2.16,<2.22"
_tf_package = os.environ.get("ESTIMATOR_LITE_TENSORFLOW", "tensorflow").strip()
if _tf_package not in ("tensorflow", "tensorflow-cpu"):
    raise SystemExit(
        f"ESTIMATOR_LITE_TENSORFLOW={_tf_package!r} is not supported: "
        "use 'tensorflow' (default) or 'tensorflow-cpu'.")

# tf-keras: the canned estimators train with Keras 2's OptimizerV2 classes and
# build their layers with it, as tf.estimator 2.15 did (their checkpoints hold
# those variables); Keras 3 cannot build graph-mode train ops.
# libcst: `python -m estimator_lite.migrate` rewrites programs on their
# concrete syntax tree, so formatting and comments survive.
setup(install_requires=[f"{_tf_package}{_TF_RANGE}", "numpy", "attrs>=22.2",
                        "tf-keras>=2.16,<2.22", "libcst>=1.1"])
