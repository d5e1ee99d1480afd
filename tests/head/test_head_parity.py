"""Every head against tf.estimator 2.15: losses, predictions, metrics, exports and error texts.

Replays tests/data/heads_expected.json (written by
tests/reference/make_head_fixture.py under tf.estimator 2.15): each case's
numbers must match within head_fixture_cases.TOLERANCE, each bad argument or
label must fail with 2.15's text.
"""
import pytest

import head_fixture_cases as cases  # pylint: disable=g-bad-import-order


@pytest.mark.parametrize("case_id", sorted(cases.DATA["cases"]))
def test_loss_predictions_metrics_and_exports_match_tf215(case_id):
  case = cases.DATA["cases"][case_id]
  cases.assert_matches_reference(cases.run_case(case), case["expected"])


@pytest.mark.parametrize("error_id", sorted(cases.DATA["errors"]))
def test_bad_arguments_and_labels_fail_with_tf215_text(error_id):
  cases.assert_error_matches_reference(cases.DATA["errors"][error_id])
