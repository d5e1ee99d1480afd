"""FormattedKeyError: the KeyError model_to_estimator raises for a features/labels mismatch."""
from __future__ import annotations


class FormattedKeyError(KeyError):
  """A KeyError whose message prints as written, newlines included.

  `str(KeyError("a\\nb"))` shows the repr of the text (quotes, `\\n`);
  tf.estimator raised this class so its multi-line mismatch report stays
  readable, and callers catch it as a KeyError.

  Args:
    message: the text `str(error)` returns.
  """

  def __init__(self, message: str) -> None:
    super().__init__(message)
    self.message = message

  def __str__(self) -> str:
    return self.message
