"""Everything estimator_lite borrows from TensorFlow's (and Keras's) private API, in one place.

tf.estimator lived inside TensorFlow and used its internals freely;
estimator_lite needs a few of the same to keep tf.estimator's behaviour on
TensorFlow 2.21. Each is here, with why, so that a TensorFlow upgrade that
moves one breaks this module alone (and tests/util/test_tf_internals.py says
which). No other module of estimator_lite reads a private name of
TensorFlow's.
"""
from __future__ import annotations

import contextlib
import sys
import warnings
from typing import Any, Callable, Iterable, Iterator, List, Optional

import tensorflow as tf
from tensorflow.core.protobuf import config_pb2
from tensorflow.python.checkpoint import checkpoint as _trackable_checkpoint
from tensorflow.python.checkpoint import graph_view as _graph_view
from tensorflow.python.client import session as _session_lib
from tensorflow.python.feature_column import feature_column_lib as _feature_column_lib
from tensorflow.python.framework import meta_graph as _meta_graph
# TensorFlow's k-means graph (no public API; unchanged from 2.15 to 2.21):
# the KMeans estimator builds on it, as tf.estimator's did.
from tensorflow.python.ops import clustering_ops  # pylint: disable=unused-import
from tensorflow.python.ops import summary_ops_v2 as _summary_ops_v2
from tensorflow.python.training import sync_replicas_optimizer as _sync_replicas
from tensorflow.python.training import training_util as _training_util
from tensorflow.python.util import deprecation as _deprecation

# -- the global step ---------------------------------------------------------------
# The collection of the global-step read that TensorFlow's hooks share
# (StepCounterHook, CheckpointSaverHook, StopAtStepHook, ...).
GLOBAL_STEP_READ_KEY = _training_util.GLOBAL_STEP_READ_KEY


def global_step_read(graph: Optional[tf.Graph] = None) -> Optional[tf.Tensor]:
  """The global-step read the hooks share (created by TensorFlow when missing)."""
  return _training_util._get_or_create_global_step_read(graph)


# -- TF2 summary writers in a graph ----------------------------------------------------
def summary_writer_init_ops() -> List[tf.Operation]:
  """The init ops of the `tf.summary.create_file_writer` writers made in the default graph.

  TPUEstimator's host_call writes TF2 summaries from the graph; a session runs
  these before the first write (TensorFlow has no public getter for the ops).
  """
  return list(_summary_ops_v2.summary_writer_initializer_op())


def summary_writer_flush(init_op: tf.Operation) -> tf.Operation:
  """An op that flushes the writer `init_op` initialises (its resource is the first input)."""
  return _summary_ops_v2.legacy_raw_flush(writer=init_op.inputs[0])


def variable_handle_names(variable: Any) -> List[str]:
  """Names of the tensors an assignment to `variable` takes as its first input.

  A resource variable's handle; a legacy ref variable's ref tensor, which
  only its private `_ref()` gives.
  """
  handle = getattr(variable, "handle", None)
  return [handle.name] if handle is not None else [variable._ref().name]


def add_control_inputs(op: tf.Operation, inputs: Iterable[tf.Operation]) -> None:
  """Makes `op` run after `inputs` in a graph already built (the only way after the fact)."""
  missing = [i for i in inputs if i not in op.control_inputs]
  if missing:
    op._add_control_inputs(missing)


def replace_input(op: tf.Operation, index: int, tensor: tf.Tensor) -> None:
  """Makes `op` read `tensor` as its input `index`, in a graph already built."""
  op._update_input(index, tensor)


def set_device(op: tf.Operation, device: str) -> None:
  """Places `op` on `device` in a graph already built (the only way after the fact)."""
  op._set_device(device)


def in_control_flow(op: tf.Operation) -> bool:
  """Whether `op` runs inside a v1 tf.cond or tf.while_loop (which its graph does not say)."""
  return op._control_flow_context is not None


# -- tensors ----------------------------------------------------------------------
def is_dense_tensor(value: Any) -> bool:
  """Whether `value` is what tf.estimator accepted as a Tensor.

  A graph or eager Tensor or a variable (tf-keras's or Keras 3's), but not a
  SparseTensor or RaggedTensor: tf.estimator checked against TensorFlow's
  internal Tensor type, which composite tensors are not.
  """
  return isinstance(value, tf.__internal__.types.Tensor)


# -- sessions and hooks -------------------------------------------------------------
# The type Saver.save and start_queue_runners require of a session.
SessionInterface = _session_lib.SessionInterface


def make_raw_callable(session: tf.compat.v1.Session,
                      options: config_pb2.CallableOptions) -> Optional[Callable[[], Any]]:
  """TensorFlow's C++ callable for `options`, or None for a session without one.

  Raises:
    tf.errors.OpError: a fetch cannot be run.
  """
  make = getattr(session, "_make_callable_from_options", None)
  return None if make is None else make(options)


def session_error_decorator(session: tf.compat.v1.Session) -> Callable[[Callable[[], Any]], Any]:
  """`run(fn)` that raises TensorFlow's errors as `Session.run` decorates them.

  Session.run names the failing node and where it was created in an error's
  message; a raw callable's errors lack that until passed through here.
  """
  do_call = getattr(session, "_do_call", None)
  return do_call if do_call is not None else (lambda fn: fn())


def session_is_closed(session: tf.compat.v1.Session) -> bool:
  return getattr(session, "_closed", True)


def saver_hook_listeners(hook: tf.compat.v1.train.CheckpointSaverHook) -> list:
  """The listener list of a CheckpointSaverHook that exists already (a user's own).

  tf.estimator added train()'s saving_listeners to it the same way.
  """
  return hook._listeners


def scaffold_user_init_fn(scaffold: tf.compat.v1.train.Scaffold) -> Optional[Callable]:
  """The init_fn a model_fn gave its Scaffold (the public one is wrapped, 2 arguments)."""
  return scaffold._user_init_fn


def is_sync_replicas_hook(hook: Any) -> bool:
  """Whether `hook` is the one SyncReplicasOptimizer.make_session_run_hook made."""
  hook_class = getattr(_sync_replicas, "_SyncReplicasOptimizerHook", None)
  return hook_class is not None and isinstance(hook, hook_class)


def create_meta_graph_def(graph_def: Any, saver_def: Any) -> Any:
  """The MetaGraphDef CheckpointSaverHook writes into the events (it has no public name)."""
  return _meta_graph.create_meta_graph_def(graph_def=graph_def, saver_def=saver_def)


def name_based_saver(saver: Any) -> Any:
  """A name-based Saver for a Scaffold's saver, which may be a `tf.train.Checkpoint`.

  `Scaffold.finalize` makes the same conversion when a session starts, but
  an export restores and writes variables without finalizing (the graph
  still grows); a Checkpoint has no `restore(session, path)` of its own.
  The Saver reads and writes the Checkpoint's object-based keys.
  """
  if not isinstance(saver, _trackable_checkpoint.Checkpoint):
    return saver
  return tf.compat.v1.train.Saver(
      var_list=_graph_view.ObjectGraphView(saver).frozen_saveable_objects(), sharded=True)


def partition_of(variable: Any) -> Optional[Any]:
  """The slice info of a partitioned variable's part (full name, full shape), or None."""
  return getattr(variable, "_save_slice_info", None)


@contextlib.contextmanager
def deprecation_notices_silenced() -> Iterator[None]:
  """Silences TensorFlow's "is deprecated" notices inside the block."""
  with _deprecation.silence():
    yield


# -- distribution strategies ----------------------------------------------------------
def strategy_session_config(strategy: tf.distribute.Strategy,
                            config: tf.compat.v1.ConfigProto) -> tf.compat.v1.ConfigProto:
  """The strategy's own session settings (collective leader, device filters, isolation)."""
  return strategy.extended._update_config_proto(config)


def strategy_num_workers(strategy: tf.distribute.Strategy) -> int:
  """How many worker processes a MultiWorkerMirroredStrategy spans (1 without a cluster)."""
  return int(getattr(strategy.extended, "_num_workers", 1) or 1)


def strategy_task(strategy: tf.distribute.Strategy) -> tuple:
  """(task_type, task_id) a MultiWorkerMirroredStrategy was built for (None, None if none)."""
  return (getattr(strategy.extended, "_task_type", None),
          getattr(strategy.extended, "_task_id", None))


def strategy_serves_this_task(strategy: tf.distribute.Strategy) -> bool:
  """Whether the strategy started this task's gRPC server (created eagerly with TF_CONFIG)."""
  return bool(getattr(strategy.extended, "_std_server_started", False))


def stop_strategy_health_checks(strategy: tf.distribute.Strategy) -> None:
  """Asks a MultiWorkerMirroredStrategy's peer health-check thread to end."""
  stop = getattr(strategy.extended, "_check_health_thread_should_stop", None)
  if stop is not None:
    stop.set()


def estimator_loss_scaling(strategy: tf.distribute.Strategy) -> Optional[Callable[[], Any]]:
  """The context manager that makes v1 optimizers divide a mean loss by the replicas, or None."""
  return getattr(strategy, "_scale_loss_for_estimator_enabled", None)


def loss_scaled_by_optimizer(graph: tf.Graph) -> bool:
  """Whether a v1 optimizer divided each replica's loss by the number of replicas."""
  return bool(getattr(graph, "_is_loss_scaled_by_optimizer", False))


# -- Keras 3 ------------------------------------------------------------------------
def is_keras3_variable_in_v1_code(error: BaseException) -> bool:
  """Whether `error` is tf.compat.v1 code meeting a Keras 3 variable.

  Keras 3's `keras.Variable` holds a tf.Variable and acts as one in most of
  TensorFlow, but lacks ResourceVariable's private `_in_graph_mode`, which the
  tf.compat.v1.train optimizers read for each variable of `var_list`.
  """
  return (isinstance(error, AttributeError) and "_in_graph_mode" in str(error)
          and "keras" in sys.modules)


def reset_keras3_layer_names() -> None:
  """Restarts Keras 3's automatic layer names ("dense", "dense_1", ...) for a new graph.

  Keras 3 does not reset them per tf.Graph, so without this the export
  graph's "dense" becomes "dense_1" and no longer matches the checkpoint.
  `keras.backend.clear_session()` would also reset the default graph, which
  is not allowed inside the graph being built. Keras 3 is touched only if the
  user imported it.
  """
  keras = sys.modules.get("keras")
  if keras is None or not getattr(keras, "__version__", "").startswith("3."):
    return
  try:
    from keras.src.utils import naming  # pylint: disable=g-import-not-at-top
  except ImportError:
    return
  naming.reset_uids()


# -- heads ----------------------------------------------------------------------------
def numeric_column_dense_tensor(column: Any, features: Any) -> Any:
  """The dense tensor a weight column (a NumericColumn) reads from `features`.

  tf.estimator's heads asked the column itself for its tensor, so a
  NumericColumn's `normalizer_fn` and its "not in features dictionary" error
  apply to weights as they do to inputs. Feature columns offer that only
  through their transformation cache, a non-public class. Both
  `tf.feature_column.numeric_column` and `tf.compat.v1.feature_column.numeric_column`
  make this NumericColumn class on TF >= 2.16.

  Raises:
    TypeError: `column` is not a NumericColumn (tf.estimator's text).
    ValueError: the column's key is missing from `features`.
  """
  from tensorflow.python.feature_column import feature_column_v2 as _fc_v2  # pylint: disable=g-import-not-at-top
  if isinstance(column, _fc_v2.NumericColumn):
    return column.get_dense_tensor(_fc_v2.FeatureTransformationCache(features), None)
  raise TypeError(
      f"Weight column must be either a string or NumericColumn. Given type: {type(column)}. "
      "Pass the feature's name or tf.feature_column.numeric_column(name).")


def broadcast_weights(weights: Any, values: Any) -> Any:
  """`weights` broadcast to the shape of `values` (tf.estimator's heads' metric weights)."""
  return tf.__internal__.ops.broadcast_weights(weights, values)


def compute_weighted_loss(losses: Any, sample_weight: Any, reduction: str) -> Any:
  """Keras 2's weighted loss reduction, which tf.estimator's heads used for the training loss."""
  import tf_keras  # pylint: disable=g-import-not-at-top
  return tf_keras.__internal__.losses.compute_weighted_loss(
      losses, sample_weight=sample_weight, reduction=reduction)


# -- feature columns (the linear model) -----------------------------------------------
def feature_column_classes() -> tuple:
  """(FeatureColumn, DenseColumn, CategoricalColumn, NumericColumn): the v2 column types.

  tf.estimator's linear model told a categorical column (one weight row per
  bucket, summed with `sparse_combiner`) from a dense one (a weight matrix
  multiplied with its tensor) by these types; TensorFlow exports the first two
  only under `tf.__internal__` and the others not at all. A bucketized column
  is both dense and categorical: the linear model treats it as categorical.
  """
  from tensorflow.python.feature_column import feature_column_v2 as _fc_v2  # pylint: disable=g-import-not-at-top
  return (tf.__internal__.feature_column.FeatureColumn, tf.__internal__.feature_column.DenseColumn,
          _fc_v2.CategoricalColumn, _fc_v2.NumericColumn)


def feature_transformation_cache(features: Any) -> Any:
  """A v2 feature column's cache of transformed features (what `get_dense_tensor` takes)."""
  return tf.__internal__.feature_column.FeatureTransformationCache(features)


# -- feature columns and Keras 2's layers for the canned DNN --------------------------
def is_feature_column_v2(feature_columns: Iterable[Any]) -> bool:
  """Whether every column is a v2 feature column (TensorFlow's own test, not public).

  tf.estimator chose the input layer by it: the v1-only columns (such as
  tf.compat.v1.feature_column.shared_embedding_columns) need the v1 input
  layer, which a v2 estimator refuses.
  """
  from tensorflow.python.feature_column import feature_column_lib as _fc_lib  # pylint: disable=g-import-not-at-top
  return bool(_fc_lib.is_feature_column_v2(feature_columns))


def feature_column_input_layer_v1(feature_columns: Iterable[Any], name: str) -> Any:
  """tf.compat.v1.feature_column.input_layer as a layer object (`InputLayer`).

  Its variables are created in the variable scope the layer is first called
  in (create_scope_now=False), which gives v1 columns tf.estimator's
  `.../input_from_feature_columns/input_layer/...` names; the public
  `input_layer` function offers no way to call it twice on the same variables.
  """
  from tensorflow.python.feature_column import feature_column as _fc_v1  # pylint: disable=g-import-not-at-top
  return _fc_v1.InputLayer(feature_columns=feature_columns, name=name, create_scope_now=False)


def keras2_v1_dense_features() -> Any:
  """Keras 2's `tf.compat.v1.keras.layers.DenseFeatures` class (honours a variable scope's partitioner).

  Reached through tf-keras itself: `tf.compat.v1.keras` resolves to Keras 3
  when the user opted out of tf-keras with TF_USE_LEGACY_KERAS=0.
  """
  from tf_keras.src.feature_column import dense_features  # pylint: disable=g-import-not-at-top
  return dense_features.DenseFeatures


def keras2_legacy_layer_classes() -> tuple:
  """Keras 2's `tf.compat.v1.layers` (Dense, Dropout, BatchNormalization), which build on variable scopes.

  For the same reason as keras2_v1_dense_features: independent of what
  `tf.compat.v1.layers` resolves to.

  Returns:
    (Dense, Dropout, BatchNormalization) classes.
  """
  from tf_keras.src.legacy_tf_layers import core, normalization  # pylint: disable=g-import-not-at-top
  return core.Dense, core.Dropout, normalization.BatchNormalization


# -- model_to_estimator on tf-keras (Keras 2) ------------------------------------------
# tf.estimator's model_to_estimator drove Keras 2's graph-mode (training_v1)
# model directly: the clone's loss, train op and compiled metric objects exist
# only as its private attributes. tf-keras 2.21 still has all of them.
KERAS2_GLOBAL_STEP_NAME = "estimator_global_step"


def keras2_is_graph_network(model: Any) -> bool:
  """Whether a tf-keras model is Functional or Sequential (not a Model subclass)."""
  return bool(getattr(model, "_is_graph_network", False))


def keras2_train_loss_and_op(model: Any) -> tuple:
  """(total loss, train op) of a compiled tf-keras clone built in the current graph."""
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", UserWarning)  # "state_updates will be removed"
    model._make_train_function()
  return model.total_loss, model.train_function.updates_op


def keras2_eval_loss(model: Any) -> Any:
  """The total loss of a compiled tf-keras clone built in the current graph (eval)."""
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", UserWarning)  # "state_updates will be removed"
    model._make_test_function()
  return model.total_loss


def keras2_compiled_metrics(model: Any) -> list:
  """The metric objects compile(metrics=...) made on a tf-keras clone (not add_metric's)."""
  if not getattr(model, "_compile_metrics", None):
    return []
  return list(model._compile_metric_functions)


def keras2_weight_loss_by(model: Any, weights: List[Any]) -> None:
  """Rebuilds a tf-keras clone's loss and weighted metrics with per-output sample weights."""
  model._compile_weights_loss_and_weighted_metrics(weights)


def keras2_track_global_step(model: Any, global_step: Any) -> None:
  """Makes the global step part of the model's object graph, as tf.estimator named it."""
  model._track_trackable(global_step, KERAS2_GLOBAL_STEP_NAME)


def object_based_saver(root: Any) -> tf.compat.v1.train.Saver:
  """A Saver that writes and reads `root`'s object-based checkpoint keys in graph mode.

  tf.estimator saved a Keras model's checkpoints this way with
  checkpoint_format='checkpoint': `layer_with_weights-0/kernel/.ATTRIBUTES/
  VARIABLE_VALUE` and the `_CHECKPOINTABLE_OBJECT_GRAPH` entry, as
  `model.save_weights` writes them.
  """
  return tf.compat.v1.train.Saver(
      var_list=_graph_view.ObjectGraphView(root).frozen_saveable_objects(), sharded=True)


def keras2_restore_subclassed_state(model: Any) -> None:
  """Gives a subclassed tf-keras model back the layers cloning it reset in place.

  Only when cloning saved them: restoring without that cache would reset
  the model to never-compiled (its optimizer gone).
  """
  if getattr(model, "_original_attributes_cache", None) is not None:
    import tf_keras  # pylint: disable=g-import-not-at-top
    tf_keras.__internal__.models.in_place_subclassed_model_state_restoration(model)


def tensorflow_export_output_class() -> type:
  """TensorFlow's own ExportOutput base class (saved_model.model_utils.export_output).

  tf.estimator 2.15's `tf.estimator.export.PredictOutput` & co. were these
  classes, and programs (tf.estimator's Keras tests among them) built export
  outputs from that module directly. Their instances build a SignatureDef
  with the same `as_signature_def(receiver_tensors)` as estimator_lite's, so
  EstimatorSpec takes them too.
  """
  from tensorflow.python.saved_model.model_utils import export_output  # pylint: disable=g-import-not-at-top
  return export_output.ExportOutput


def keras2_any_weight_initialized(model: Any) -> bool:
  """Whether a tf-keras model's weights already hold values.

  Always in eager mode; in graph mode (a model built under
  `tf.Graph().as_default()`) only once tf-keras initialised one in its
  session, which marks the variable `_keras_initialized`.
  """
  if tf.compat.v1.executing_eagerly_outside_functions():
    return True
  return any(hasattr(weight, "_keras_initialized")
             for layer in model.layers for weight in layer.weights)


def keras2_set_session(session: tf.compat.v1.Session) -> None:
  """Makes `session` tf-keras's graph-mode backend session (tf.compat.v1.keras.backend.set_session)."""
  from tf_keras.api._v1 import keras as tf_keras_v1  # pylint: disable=g-import-not-at-top
  tf_keras_v1.backend.set_session(session)


def concatenate_context_input(context_input: Any, sequence_input: Any) -> Any:
  """Appends the context features to every step of the sequence input (the RNN estimators)."""
  return _feature_column_lib.concatenate_context_input(context_input, sequence_input)


def serialize_feature_columns(feature_columns: Any) -> list:
  """Feature columns as the Keras configs TensorFlow serializes them to."""
  return _feature_column_lib.serialize_feature_columns(feature_columns)


def deserialize_feature_columns(configs: Iterable[Any], custom_objects: Any = None) -> list:
  """Feature columns back from `serialize_feature_columns`'s configs."""
  return _feature_column_lib.deserialize_feature_columns(configs, custom_objects=custom_objects)
