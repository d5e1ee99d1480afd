"""The export outputs of a converted Keras model: PredictOutput by default, plus the user's."""
from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Sequence

import tensorflow as tf

from estimator_lite.export import PredictOutput
from estimator_lite.keras.errors import FormattedKeyError


def build_export_outputs(predictions: Mapping[str, Any], output_names: Sequence[str],
                         export_outputs: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
  """serving_default (a PredictOutput of every prediction) and one output per given name.

  Args:
    predictions: output name -> tensor.
    output_names: the model's output names.
    export_outputs: output name -> ExportOutput class (called on that output's
      tensor); the name is also the signature name. None: only the default.

  Returns:
    signature name -> ExportOutput, for the EstimatorSpec.

  Raises:
    FormattedKeyError: a key of export_outputs is not an output name
      (tf.estimator's text, which names its arguments the other way round).
  """
  outputs: Dict[str, Any] = {
      tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY: PredictOutput(dict(predictions))}
  if export_outputs is None:
    return outputs
  names = list(output_names)
  unknown = set(export_outputs) - set(names)
  if unknown:
    raise FormattedKeyError(
        f"The list passed into {names} does not cover requested {export_outputs} keys "
        "defined in the keras model."
        f"\n\tExpected keys: {set(export_outputs)}"
        f"\n\t{names} keys: {set(names)}"
        f"\n\tMissed keys: {unknown}"
        f"\nKey export_outputs by the model's output names ({names}).")
  for key, output_class in export_outputs.items():
    outputs[key] = output_class(predictions[key])
  return outputs
