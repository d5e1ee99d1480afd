"""compat.v1 canned classes under each v1 loss reduction, against tf.estimator 2.15.

tests/data/v1_reduction_expected.json holds what tf.estimator 2.15's v1
LinearClassifier, LinearRegressor and DNNClassifier did with a weight column
(one weight 0) under SUM, MEAN, SUM_OVER_BATCH_SIZE and
SUM_BY_NONZERO_WEIGHTS (tests/reference/make_v1_reduction_fixture.py): the
`loss` summary of each training step, the training summary tags (`average_loss`
with SUM only), the trained variables and evaluate()'s dict. The same cases
run here with estimator_lite.compat.v1 and must agree to 1e-4.
"""
import json
import os
import sys

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
TESTS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TESTS_DIR, "reference"))

import make_v1_reduction_fixture as fixture  # pylint: disable=g-import-not-at-top,wrong-import-position
import tensorflow as tf  # pylint: disable=g-import-not-at-top,wrong-import-position

import estimator_lite as est  # pylint: disable=g-import-not-at-top,wrong-import-position

TOL = 1e-4


@pytest.fixture(scope="module")
def expected():
  with open(os.path.join(TESTS_DIR, "data", "v1_reduction_expected.json")) as f:
    return json.load(f)["cases"]


@pytest.mark.parametrize("case", fixture.CASES)
@pytest.mark.parametrize("reduction", fixture.REDUCTIONS)
def test_trains_and_evaluates_as_tf_estimator_2_15(case, reduction, expected, tmp_path):
  want = expected[f"{case}/{reduction}"]
  got = fixture.run_case(case, reduction, est.compat.v1, tf, est.RunConfig, str(tmp_path))

  np.testing.assert_allclose(got["losses"], want["losses"], rtol=TOL, atol=TOL)
  assert got["summary_tags"] == want["summary_tags"]
  assert sorted(got["variables"]) == sorted(want["variables"])
  for name, value in want["variables"].items():
    np.testing.assert_allclose(got["variables"][name], value, rtol=TOL, atol=TOL, err_msg=name)
  assert sorted(got["evaluate"]) == sorted(want["evaluate"])
  for key, value in want["evaluate"].items():
    np.testing.assert_allclose(got["evaluate"][key], value, rtol=TOL, atol=TOL, err_msg=key)


def test_none_reduction_is_refused_with_tf_estimator_text():
  with pytest.raises(ValueError, match="Invalid loss_reduction: none"):
    est.compat.v1.LinearClassifier([tf.feature_column.numeric_column("x")],
                                   loss_reduction=tf.compat.v1.losses.Reduction.NONE)
