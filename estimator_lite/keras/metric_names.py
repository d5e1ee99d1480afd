"""The eval_metric_ops of a converted Keras model: its compiled metrics, optionally renamed."""
from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Sequence


def rename_metrics(metrics: Sequence[Any], metric_names_map: Optional[Mapping[str, str]]
                   ) -> Dict[str, Any]:
  """{name: metric object} for the compiled metrics, names mapped by `metric_names_map`.

  Args:
    metrics: the metric objects compile() made (their `.name` is the Keras name).
    metric_names_map: Keras metric name -> Estimator metric key, covering every
      compiled metric and nothing else; None keeps the Keras names.

  Returns:
    Metric objects keyed by their eval_metric_ops name.

  Raises:
    ValueError: the map misses a compiled metric or names an unknown one
      (tf.estimator's texts).
  """
  if not metric_names_map:
    return {m.name: m for m in metrics}
  given = set(metric_names_map)
  expected = {m.name for m in metrics}
  unknown = expected - given
  if unknown:
    raise ValueError(
        "Invalid `metric_names_map`. The following keras model metric names:"
        f"\"{list(unknown)}\" do not exist in the `metric_names_map` dictionary. Map every "
        f"compiled metric of the model ({sorted(expected)}) to its Estimator name.")
  extra = given - expected
  if extra:
    raise ValueError(
        "Invalid `metric_names_map`. There are unexpected keys in the `metric_names_map` "
        f"dictionary. Expected keys: {list(expected)}, Received: {list(extra)}. Use the "
        "names of the model's compiled metrics as keys.")
  return {metric_names_map[m.name]: m for m in metrics}
