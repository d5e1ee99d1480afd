"""estimator_lite.tpu.experimental: tf.compat.v1.estimator.tpu.experimental's one name."""
from __future__ import annotations

import collections
from typing import Any, Callable, Dict, Optional


class EmbeddingConfigSpec(collections.namedtuple("EmbeddingConfigSpec", [
    "feature_columns", "tensor_core_feature_columns", "optimization_parameters",
    "clipping_limit", "pipeline_execution_with_tensor_core",
    "experimental_gradient_multiplier_fn", "feature_to_config_dict", "table_to_config_dict",
    "partition_strategy", "profile_data_directory"])):
  """Configuration of TPU embeddings (tf.estimator 2.15's namedtuple, its checks).

  TPU embeddings need a TPU: a TPUEstimator given one refuses it when built,
  saying to use `tf.compat.v1.feature_column.embedding_column` instead. The
  spec itself is built and checked as 2.15 built it, so a program fails at
  the TPUEstimator, with that advice, rather than here.

  Args:
    feature_columns: the embedding feature columns the model uses.
    optimization_parameters: the TPU embedding optimizer's parameters.
    clipping_limit: gradient clipping limit, or None.
    pipeline_execution_with_tensor_core: a TPU pipelining option.
    experimental_gradient_multiplier_fn: global step -> gradient multiplier.
    feature_to_config_dict: feature name -> FeatureConfig (instead of
      feature_columns, with table_to_config_dict).
    table_to_config_dict: table name -> TableConfig.
    partition_strategy: "div" or "mod".
    profile_data_directory: where embedding lookup statistics go.

  Raises:
    ValueError: neither or both of feature_columns and the two dicts, or an
      unknown partition_strategy (2.15's texts).
  """

  def __new__(cls, feature_columns: Any = None, optimization_parameters: Any = None,
              clipping_limit: Optional[float] = None,
              pipeline_execution_with_tensor_core: bool = False,
              experimental_gradient_multiplier_fn: Optional[Callable[..., Any]] = None,
              feature_to_config_dict: Optional[Dict[str, Any]] = None,
              table_to_config_dict: Optional[Dict[str, Any]] = None,
              partition_strategy: str = "div",
              profile_data_directory: Optional[str] = None) -> "EmbeddingConfigSpec":
    has_dicts = bool(feature_to_config_dict and table_to_config_dict)
    if (not feature_columns and not has_dicts) or (feature_columns and has_dicts):
      raise ValueError("Exactly one of `feature_columns` and the pair "
                       "`feature_to_config_dict` and `table_to_config_dict` "
                       "must be be specified.")
    if partition_strategy not in ("div", "mod"):
      raise ValueError(f'Invalid partition_strategy {partition_strategy}. Must be one of '
                       '"mod" or "div".')
    return super().__new__(
        cls, feature_columns=list(feature_columns) if feature_columns else None,
        tensor_core_feature_columns=[] if feature_columns else None,
        optimization_parameters=optimization_parameters, clipping_limit=clipping_limit,
        pipeline_execution_with_tensor_core=pipeline_execution_with_tensor_core,
        experimental_gradient_multiplier_fn=experimental_gradient_multiplier_fn,
        feature_to_config_dict=feature_to_config_dict,
        table_to_config_dict=table_to_config_dict, partition_strategy=partition_strategy,
        profile_data_directory=profile_data_directory)


__all__ = ["EmbeddingConfigSpec"]
