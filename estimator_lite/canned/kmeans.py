"""K-means clustering: tf.compat.v1.estimator.experimental.KMeans (tf.estimator 2.15's KMeansClustering).

The graph is TensorFlow's own k-means (`tensorflow.python.ops.clustering_ops.
KMeans`, which TensorFlow 2.21 still ships unchanged from 2.15): the input
points go in as one `(N, d)` tensor, and it builds the cluster-center
variables, the initialisation op and one step of Lloyd's algorithm (full
batch or mini-batch). This module wraps it in an `Estimator`:

```python
kmeans = estimator_lite.compat.v1.experimental.KMeans(num_clusters=5,
                                                       use_mini_batch=False)
for _ in range(10):
  kmeans.train(input_fn)                    # one Lloyd iteration a step
kmeans.cluster_centers()                    # (5, d) numpy array
kmeans.score(input_fn)                      # sum of squared distances
list(kmeans.predict_cluster_index(input_fn))
```

The checkpoint holds what 2.15's held, under the same names: `clusters`,
`initialized` and `global_step`; with mini-batches also the cluster counts
(`Variable`: TensorFlow's op leaves them unnamed), and with
`mini_batch_steps_per_iteration > 1` `clusters_updated` and
`update_in_steps`. So a model_dir either version wrote restores in the
other. Predictions, the `score` metric and the exported signatures
(`all_distances`, `cluster_index`, and `serving_default`, the cluster index)
have 2.15's keys.

Seeded initialisation and full-batch steps are deterministic, and
estimator_lite reproduces 2.15's models there. A mini-batch step is not:
TensorFlow's op reads the centers and counts it also updates, with nothing
ordering the reads and the updates (in 2.15 as here), so two mini-batch runs
may end with different centers.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Iterable, Iterator, List, Optional, Union

import numpy as np
import tensorflow as tf

from estimator_lite._util import tf_internals
from estimator_lite.estimator import Estimator
from estimator_lite.estimator_spec import EstimatorSpec
from estimator_lite.export import export_output
from estimator_lite.run_config import RunConfig

# num_clusters / initial_clusters may be Python values, tensors, numpy arrays
# or (initial_clusters) a callable `f(inputs, k)`.
NumClusters = Union[int, tf.Tensor]
InitialClusters = Union[str, tf.Tensor, np.ndarray, Callable[[tf.Tensor, Any], tf.Tensor]]

_logging = tf.compat.v1.logging


class _LossRelativeChangeHook(tf.compat.v1.train.SessionRunHook):
  """Requests a stop once the loss changes by less than a relative tolerance between steps."""

  def __init__(self, loss_tensor: tf.Tensor, tolerance: float) -> None:
    """Creates the hook.

    Args:
      loss_tensor: the scalar loss of a training step.
      tolerance: the relative change `|loss - previous| / (1 + |previous|)`
        under which training stops.
    """
    self._loss_tensor = loss_tensor
    self._tolerance = tolerance
    self._previous_loss: Optional[float] = None

  def before_run(self, run_context: Any) -> tf.compat.v1.train.SessionRunArgs:
    del run_context
    return tf.compat.v1.train.SessionRunArgs(self._loss_tensor)

  def after_run(self, run_context: Any, run_values: Any) -> None:
    loss = run_values.results
    # As in 2.15, a previous loss of exactly 0 counts as "no previous loss".
    if self._previous_loss:
      relative_change = abs(loss - self._previous_loss) / (1 + abs(self._previous_loss))
      if relative_change < self._tolerance:
        run_context.request_stop()
    self._previous_loss = loss


class _InitializeClustersHook(tf.compat.v1.train.SessionRunHook):
  """Chooses the initial cluster centers once the session exists.

  Initialisation may need several input batches (RANDOM_INIT with a batch
  smaller than `num_clusters`, or a callable returning fewer centers), so the
  chief runs the init op until the `initialized` variable says all centers
  are chosen; other workers wait for it. It runs in `after_create_session`,
  after the queue runners started: the init op reads the input.
  """

  def __init__(self, init_op: tf.Operation, is_initialized_var: tf.Variable,
               is_chief: bool) -> None:
    """Creates the hook.

    Args:
      init_op: the op that picks (some of) the initial centers from a batch.
      is_initialized_var: the boolean variable set once all centers are
        chosen.
      is_chief: whether this task runs `init_op` (the others wait).
    """
    self._init_op = init_op
    self._is_initialized_var = is_initialized_var
    self._is_chief = is_chief

  def after_create_session(self, session: Any, coord: Any) -> None:
    del coord
    while True:
      try:
        if session.run(self._is_initialized_var):
          break
        if self._is_chief:
          session.run(self._init_op)
        else:
          time.sleep(1)
      except RuntimeError as error:
        # 2.15 logged and retried (a session being recreated, say).
        _logging.info(error)


def _parse_features_if_necessary(features: Any, feature_columns: Optional[Iterable[Any]]) -> Any:
  """Turns the input_fn's features into the `(n, k)` points k-means clusters.

  Args:
    features: a tensor of points, or a dict of features, each `n` scalars
      (shape `(n, 1)`).
    feature_columns: the feature columns to read from a dict with
      `tf.compat.v1.feature_column.input_layer`, or None for every feature.

  Returns:
    `features` unchanged if it is not a dict; else a `(n, k)` tensor: the
    columns' dense output, or without columns every feature concatenated in
    the sorted order of their keys.
  """
  if not isinstance(features, dict):
    return features
  if feature_columns:
    return tf.compat.v1.feature_column.input_layer(features, feature_columns)
  keys = sorted(features.keys())
  # Next to the first feature, as 2.15 placed it: the points are read where
  # the input lives.
  with tf.compat.v1.colocate_with(features[keys[0]]):
    return tf.concat([features[key] for key in keys], axis=1)


class _KMeansModelFn:
  """The model_fn of `KMeansClustering`: TensorFlow's k-means graph as an EstimatorSpec."""

  def __init__(self, num_clusters: NumClusters, initial_clusters: InitialClusters,
               distance_metric: str, seed: Optional[int], use_mini_batch: bool,
               mini_batch_steps_per_iteration: int, kmeans_plus_plus_num_retries: int,
               relative_tolerance: Optional[float],
               feature_columns: Optional[Iterable[Any]]) -> None:
    self._num_clusters = num_clusters
    self._initial_clusters = initial_clusters
    self._distance_metric = distance_metric
    self._seed = seed
    self._use_mini_batch = use_mini_batch
    self._mini_batch_steps_per_iteration = mini_batch_steps_per_iteration
    self._kmeans_plus_plus_num_retries = kmeans_plus_plus_num_retries
    self._relative_tolerance = relative_tolerance
    self._feature_columns = feature_columns

  def __call__(self, features: Any, mode: str, config: RunConfig) -> EstimatorSpec:
    """Builds the k-means graph for `mode`.

    There is no `labels` argument: the input_fn returns the points, or
    `(points, None)`.

    Args:
      features: the input points (see `_parse_features_if_necessary`).
      mode: a `ModeKeys` value.
      config: the estimator's `RunConfig` (its `is_chief` says who
        initialises the centers).

    Returns:
      An `EstimatorSpec`: a train_op running one (mini-)batch step of Lloyd's
      algorithm and incrementing the global step; as loss the sum of each
      point's distance to its nearest center; the `score` metric (the mean of
      that loss over the evaluated batches); predictions `all_distances` and
      `cluster_index`; and their export signatures.
    """
    points = _parse_features_if_necessary(features, self._feature_columns)
    # The points are a single tensor, so TensorFlow's sharded k-means returns
    # one-element lists: distances (N, k), the nearest center's index (N,)
    # and the distance to it (N,) each come as [tensor].
    (all_distances, cluster_indices, nearest_distances, is_initialized, init_op,
     training_op) = tf_internals.clustering_ops.KMeans(
         inputs=points,
         num_clusters=self._num_clusters,
         initial_clusters=self._initial_clusters,
         distance_metric=self._distance_metric,
         use_mini_batch=self._use_mini_batch,
         mini_batch_steps_per_iteration=self._mini_batch_steps_per_iteration,
         random_seed=self._seed,
         kmeans_plus_plus_num_retries=self._kmeans_plus_plus_num_retries,
     ).training_graph()

    loss = tf.math.reduce_sum(nearest_distances)
    tf.compat.v1.summary.scalar("loss/raw", loss)

    # k-means updates its variables itself (no optimizer), so the global step
    # is counted here; the train_op's value is the loss, as in 2.15.
    increment_step = tf.compat.v1.assign_add(tf.compat.v1.train.get_global_step(), 1)
    with tf.control_dependencies([training_op, increment_step]):
      train_op = tf.identity(loss)

    training_hooks: List[tf.compat.v1.train.SessionRunHook] = [
        _InitializeClustersHook(init_op, is_initialized, config.is_chief)]
    if self._relative_tolerance is not None:
      training_hooks.append(_LossRelativeChangeHook(loss, self._relative_tolerance))

    distances, nearest_cluster = all_distances[0], cluster_indices[0]
    return EstimatorSpec(
        mode=mode,
        predictions={
            KMeansClustering.ALL_DISTANCES: distances,
            KMeansClustering.CLUSTER_INDEX: nearest_cluster,
        },
        loss=loss,
        train_op=train_op,
        eval_metric_ops={KMeansClustering.SCORE: tf.compat.v1.metrics.mean(loss)},
        training_hooks=training_hooks,
        export_outputs={
            KMeansClustering.ALL_DISTANCES: export_output.PredictOutput(distances),
            KMeansClustering.CLUSTER_INDEX: export_output.PredictOutput(nearest_cluster),
            tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY:
                export_output.PredictOutput(nearest_cluster),
        })


class KMeansClustering(Estimator):
  """An Estimator for k-means clustering (tf.compat.v1.estimator.experimental.KMeans).

  ```python
  points = np.random.uniform(0, 1000, [100, 2]).astype(np.float32)

  def input_fn():
    return tf.compat.v1.train.limit_epochs(tf.constant(points), num_epochs=1)

  kmeans = estimator_lite.compat.v1.experimental.KMeans(num_clusters=5,
                                                         use_mini_batch=False)
  previous_centers = None
  for _ in range(10):
    kmeans.train(input_fn)
    centers = kmeans.cluster_centers()
    if previous_centers is not None:
      print("delta:", centers - previous_centers)
    previous_centers = centers
    print("score:", kmeans.score(input_fn))

  for point, index in zip(points, kmeans.predict_cluster_index(input_fn)):
    print("point", point, "is in cluster", index, "centered at", centers[index])
  ```

  The SavedModel `export_saved_model` writes does not contain the cluster
  centers as an output; read them from the latest checkpoint:
  `kmeans.cluster_centers()` is
  `tf.train.load_variable(kmeans.model_dir, KMeansClustering.CLUSTER_CENTERS_VAR_NAME)`.
  """

  # The distance_metric values.
  SQUARED_EUCLIDEAN_DISTANCE = tf_internals.clustering_ops.SQUARED_EUCLIDEAN_DISTANCE
  COSINE_DISTANCE = tf_internals.clustering_ops.COSINE_DISTANCE

  # The initial_clusters algorithms given by name.
  RANDOM_INIT = tf_internals.clustering_ops.RANDOM_INIT
  KMEANS_PLUS_PLUS_INIT = tf_internals.clustering_ops.KMEANS_PLUS_PLUS_INIT

  # evaluate()'s metric: the sum of each point's distance to its nearest center.
  SCORE = "score"

  # predict()'s keys: the index of each point's nearest center, and its
  # distance to every center.
  CLUSTER_INDEX = "cluster_index"
  ALL_DISTANCES = "all_distances"

  # The checkpoint variable cluster_centers() reads.
  CLUSTER_CENTERS_VAR_NAME = tf_internals.clustering_ops.CLUSTERS_VAR_NAME

  def __init__(self,
               num_clusters: NumClusters,
               model_dir: Optional[str] = None,
               initial_clusters: InitialClusters = RANDOM_INIT,
               distance_metric: str = SQUARED_EUCLIDEAN_DISTANCE,
               seed: Optional[int] = None,
               use_mini_batch: bool = True,
               mini_batch_steps_per_iteration: int = 1,
               kmeans_plus_plus_num_retries: int = 2,
               relative_tolerance: Optional[float] = None,
               config: Optional[RunConfig] = None,
               feature_columns: Optional[Iterable[Any]] = None) -> None:
    r"""Creates an Estimator that trains and applies k-means.

    With `use_mini_batch=False` it runs full-batch k-means: each training step
    is one iteration of Lloyd's algorithm over the whole input, so the
    train input_fn must return the entire data set in one batch.

    With `use_mini_batch=True` it runs a generalisation of mini-batch
    k-means: an iteration is `mini_batch_steps_per_iteration` steps, each
    accumulating one mini-batch's contribution; at the end of an iteration
    the centers are updated and the accumulators cleared. For instance, with
    64k examples in batches of 64, `mini_batch_steps_per_iteration=100` uses
    about 10% of the data per update. With 1 it is standard mini-batch
    k-means; with `num_inputs / batch_size` an asynchronous version of full
    batch k-means (no guarantee that each input is seen exactly once per
    iteration, and updates are applied asynchronously without locking).

    Args:
      num_clusters: the number of clusters (an int or an integer tensor).
        Ignored when `initial_clusters` is a tensor or numpy array.
      model_dir: where checkpoints and summaries go.
      initial_clusters: how the initial centers are chosen:
        * a tensor or numpy array: the initial centers themselves;
        * a callable `f(inputs, k)` returning up to `k` centers from a batch
          (any number from 0 to `k`); it is called on successive batches
          until all `num_clusters` centers are chosen. `inputs` is TensorFlow
          k-means' list of input shards: `[points]`, one `(n, d)` tensor;
        * `KMeansClustering.RANDOM_INIT`: random points of a batch; with a
          batch smaller than `num_clusters` the whole batch is taken and the
          rest come from the following batches;
        * `KMeansClustering.KMEANS_PLUS_PLUS_INIT`: k-means++ on the first
          batch; a batch smaller than `num_clusters` is a TensorFlow runtime
          error.
      distance_metric: `KMeansClustering.SQUARED_EUCLIDEAN_DISTANCE`
        (\\(||u - v||_2^2\\); `transform` reports its square root) or
        `KMeansClustering.COSINE_DISTANCE` (\\(1 - (u . v) / (||u||_2
        ||v||_2)\\)).
      seed: Python integer seeding the choice of the initial centers.
      use_mini_batch: whether to run mini-batch k-means (see above).
      mini_batch_steps_per_iteration: the steps after which the accumulated
        updates are applied to the centers; only with `use_mini_batch=True`.
      kmeans_plus_plus_num_retries: with k-means++ initialisation, how many
        more points to draw from the current distribution for each sampled
        point before keeping the best; a negative value uses a heuristic of
        `O(log(num_to_sample))` extra points.
      relative_tolerance: stop training once the loss changes by less than
        this between steps (relative); may misbehave with mini-batches. None
        (the default) never stops early.
      config: a `RunConfig`.
      feature_columns: the feature columns (for
        `tf.compat.v1.feature_column.input_layer`) to cluster on when the
        input_fn returns a dict; None uses every feature.

    Raises:
      ValueError: `initial_clusters` is a string other than RANDOM_INIT or
        KMEANS_PLUS_PLUS_INIT, or `distance_metric` is not one of the two
        metrics.
    """
    if isinstance(initial_clusters, str) and initial_clusters not in (
        KMeansClustering.RANDOM_INIT, KMeansClustering.KMEANS_PLUS_PLUS_INIT):
      raise ValueError(
          f"Unsupported initialization algorithm '{initial_clusters}'. Use "
          f"KMeansClustering.RANDOM_INIT ('{KMeansClustering.RANDOM_INIT}'), "
          f"KMeansClustering.KMEANS_PLUS_PLUS_INIT "
          f"('{KMeansClustering.KMEANS_PLUS_PLUS_INIT}'), the initial centers as a tensor or "
          "numpy array, or a callable f(inputs, k).")
    if distance_metric not in (KMeansClustering.SQUARED_EUCLIDEAN_DISTANCE,
                               KMeansClustering.COSINE_DISTANCE):
      raise ValueError(
          f"Unsupported distance metric '{distance_metric}'. Use "
          "KMeansClustering.SQUARED_EUCLIDEAN_DISTANCE "
          f"('{KMeansClustering.SQUARED_EUCLIDEAN_DISTANCE}') or "
          f"KMeansClustering.COSINE_DISTANCE ('{KMeansClustering.COSINE_DISTANCE}').")
    self._distance_metric = distance_metric
    super().__init__(
        model_fn=_KMeansModelFn(num_clusters, initial_clusters, distance_metric, seed,
                                use_mini_batch, mini_batch_steps_per_iteration,
                                kmeans_plus_plus_num_retries, relative_tolerance,
                                feature_columns),
        model_dir=model_dir,
        config=config)

  def _predict_one_key(self, input_fn: Callable[..., Any], predict_key: str) -> Iterator[Any]:
    for prediction in self.predict(input_fn=input_fn, predict_keys=[predict_key]):
      yield prediction[predict_key]

  def predict_cluster_index(self, input_fn: Callable[..., Any]) -> Iterator[int]:
    """Yields the index of the nearest cluster center of each input point.

    Args:
      input_fn: the input points, as for `Estimator.predict`.

    Yields:
      For each point, the index of its nearest center.
    """
    yield from self._predict_one_key(input_fn, KMeansClustering.CLUSTER_INDEX)

  def score(self, input_fn: Callable[..., Any]) -> float:
    """Returns the sum of the distances of a batch's points to their nearest centers.

    Unlike scikit-learn's `score`, this is the sum itself, not its negation.

    Args:
      input_fn: the input points, as for `Estimator.evaluate`. Only its first
        batch is read.

    Returns:
      The sum, over the points of the first batch, of the (squared
      Euclidean, or cosine) distance to the nearest center.
    """
    return self.evaluate(input_fn=input_fn, steps=1)[KMeansClustering.SCORE]

  def transform(self, input_fn: Callable[..., Any]) -> Iterator[np.ndarray]:
    """Yields each input point's distances to all the cluster centers.

    With `SQUARED_EUCLIDEAN_DISTANCE` the distances are Euclidean (the square
    root of the model's squared distances), as scikit-learn's `transform`
    returns them.

    Args:
      input_fn: the input points, as for `Estimator.predict`.

    Yields:
      For each point, a vector of its distances to the `num_clusters` centers.
    """
    for distances in self._predict_one_key(input_fn, KMeansClustering.ALL_DISTANCES):
      if self._distance_metric == KMeansClustering.SQUARED_EUCLIDEAN_DISTANCE:
        yield np.sqrt(distances)
      else:
        yield distances

  def cluster_centers(self) -> np.ndarray:
    """Returns the cluster centers of the latest checkpoint, shape `(num_clusters, d)`."""
    return self.get_variable_value(KMeansClustering.CLUSTER_CENTERS_VAR_NAME)
