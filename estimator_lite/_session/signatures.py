"""Builds an export's SignatureDefs from the receiver tensors and the model's export_outputs."""
from __future__ import annotations

import collections
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Mapping, Optional

import tensorflow as tf

if TYPE_CHECKING:
  from estimator_lite.export.export_output import ExportOutput

_logging = tf.compat.v1.logging
_constants = tf.compat.v1.saved_model.signature_constants
_sig_utils = tf.compat.v1.saved_model.signature_def_utils

_FRIENDLY_METHOD_NAMES = {
    _constants.CLASSIFY_METHOD_NAME: "Classify",
    _constants.REGRESS_METHOD_NAME: "Regress",
    _constants.PREDICT_METHOD_NAME: "Predict",
}
# Ops a caller must feed: a signature whose outputs need one that is not among
# its inputs cannot be served.
_MUST_FEED_OP_TYPES = ("Placeholder", "PlaceholderV2")


def build_signature_defs(receiver_tensors: Mapping[str, Any],
                         export_outputs: Mapping[str, ExportOutput],
                         receiver_tensors_alternatives: Optional[
                             Mapping[str, Mapping[str, Any]]] = None,
                         serving_only: bool = True) -> Dict[str, Any]:
  """Returns {signature name: SignatureDef} for every servable export output.

  Each export output gives one signature fed by `receiver_tensors`, under its
  own key, and one per receiver alternative, named `'<alternative>:<key>'`.
  A combination that cannot be served (e.g. a classification signature fed raw
  float features, or outputs that need a placeholder the signature does not
  feed) is left out and logged, as tf.estimator did.

  Args:
    receiver_tensors: dict of input name to tensor.
    export_outputs: dict of signature key to `ExportOutput`.
    receiver_tensors_alternatives: None or dict of alternative name to a dict
      of input name to tensor.
    serving_only: keep only signatures TensorFlow Serving can serve (Predict,
      Classify, Regress); False for a TRAIN or EVAL export, whose supervised
      signatures are loaded by programs, not served.

  Returns:
    dict of signature name to `SignatureDef`.
  """
  signatures: Dict[str, Any] = {}
  excluded: Dict[str, str] = {}

  def add(name: str, export_output: ExportOutput, inputs: Mapping[str, Any]) -> None:
    try:
      signature = export_output.as_signature_def(inputs)
      _check_servable(inputs, signature)
    except ValueError as e:
      excluded[name] = str(e)
      return
    if serving_only and not _sig_utils.is_valid_signature(signature):
      excluded[name] = "not a valid Predict, Classify or Regress signature"
      return
    signatures[name] = signature

  for key, export_output in export_outputs.items():
    add(str(key), export_output, receiver_tensors)
  for alternative, inputs in (receiver_tensors_alternatives or {}).items():
    for key, export_output in export_outputs.items():
      add(f"{alternative}:{key}", export_output, inputs)
  _log_report(signatures, excluded, serving_only)
  return signatures


def _flat_tensors(tensors: Iterable[Any]) -> List[Any]:
  return tf.nest.flatten(list(tensors), expand_composites=True)


def _check_servable(inputs: Mapping[str, Any], signature: Any) -> None:
  """Raises ValueError if the outputs need a placeholder the inputs do not feed."""
  input_tensors = _flat_tensors(inputs.values())
  if not input_tensors:
    return
  graph = input_tensors[0].graph
  outputs = [tf.compat.v1.saved_model.utils.get_tensor_from_tensor_info(info, graph)
             for info in signature.outputs.values()]
  fed = {t.name for t in input_tensors}
  pending = [t.op for t in _flat_tensors(outputs) if t.name not in fed]
  seen = set()
  while pending:
    op = pending.pop()
    if op.name in seen:
      continue
    seen.add(op.name)
    if op.type in _MUST_FEED_OP_TYPES:
      raise ValueError(
          f"The signature's inputs {sorted(fed)} are insufficient to compute its "
          f"outputs {sorted(signature.outputs)}: they depend on placeholder "
          f"{op.name!r}, which the signature does not feed.")
    pending.extend(t.op for t in op.inputs if t.name not in fed)
    pending.extend(op.control_inputs)


def _log_report(signatures: Mapping[str, Any], excluded: Mapping[str, str],
                serving_only: bool) -> None:
  by_method = collections.OrderedDict((m, []) for m in _FRIENDLY_METHOD_NAMES)
  for name, signature in signatures.items():
    by_method.setdefault(signature.method_name, []).append(name)
  for method, names in by_method.items():
    _logging.info("Signatures INCLUDED in export for %s: %s",
                  _FRIENDLY_METHOD_NAMES.get(method, method), names or "None")
  if excluded:
    _logging.info("Signatures EXCLUDED from export because they cannot be "
                  "served via TensorFlow Serving APIs:")
    for name, reason in excluded.items():
      _logging.info("'%s' : %s", name, reason)
  if not signatures:
    _logging.warning("Export includes no signatures!")
  elif serving_only and _constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY not in signatures:
    _logging.warning("Export includes no default signature!")
