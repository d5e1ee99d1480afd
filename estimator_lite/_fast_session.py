"""A faster per-step path under MonitoredSession, for Estimator.train.

benchmarks/RESULTS.md ("Profile") shows where a training step's time went under
`tf.compat.v1.train.MonitoredTrainingSession` on a small model (about 540 µs
a step where a bare `Session.run(train_op)` loop took 250): besides the hooks
themselves, (1) `_HookedSession` passes a fresh `RunOptions` and `RunMetadata`
to every `Session.run`, which makes TensorFlow serialise the options and
collect and parse run metadata on every step, and (2) `Session.run` rebuilds
its fetch handling for the nested fetch structure in Python on every call and
looks the fetched names up again in C++, although the hooks ask for the same
tensors step after step: together about 200 µs a step on the linear model.

`FastSession` wraps the `tf.compat.v1.Session` that the session creator made,
and is what MonitoredSession and every hook see (as `session` in
`after_create_session` and `run_context.session`). Its `run`:
* drops the options and metadata when the options are empty and the metadata
  is untouched: nothing would be traced, and TensorFlow returns an empty
  RunMetadata in that case, which is what hooks then see;
* when nothing is fed and the graph is finalized (as MonitoredSession makes
  it), runs a step compiled once per fetch structure (`_Step`): TensorFlow's
  C++ callable for the distinct tensors and operations fetched, and a
  prebuilt function that puts the values back into the nested structure.
  Results have the same structure, types and values as `Session.run`'s;
  TensorFlow errors are decorated by the session exactly as `Session.run`
  does. Anything else (feeds, options asked for by a hook such as
  ProfilerHook, a graph still growing) goes to `Session.run` unchanged.

`monitored_training_session` is `MonitoredTrainingSession` (same default
hooks, in the same order, same session creators) with the session wrapped.

`create_global_step_read` makes the global-step read that TensorFlow's hooks
share (StepCounterHook, SummarySaverHook, CheckpointSaverHook, StopAtStepHook)
a plain read instead of TensorFlow's default, a `tf.cond` on
`is_variable_initialized`: every one of those hooks fetches it on every step,
and the cond runs as a function call: tens of µs locally, and over gRPC, with
the global step on a ps, about 1 ms per step more than a plain read.
"""
import collections.abc

import tensorflow as tf
from tensorflow.core.protobuf import config_pb2  # pylint: disable=g-direct-tensorflow-import
# SessionInterface is the type Saver.save and start_queue_runners require.
from tensorflow.python.client import session as _tf_session  # pylint: disable=g-direct-tensorflow-import
from tensorflow.python.training import training_util  # pylint: disable=g-direct-tensorflow-import

_train = tf.compat.v1.train
# Distinct fetch structures cached per session; a hook fetching a new
# structure on every step would otherwise grow the cache without bound.
_MAX_CALLABLES = 64


# Types already seen as leaves (tensors, operations, ...): most of what is
# fetched, so they are recognised first, with one set lookup.
_LEAF_TYPES = set()


def _fetch_key(fetches):
  """A hashable key naming the fetch structure and the objects fetched.

  Leaves are keyed by identity (tensors are not hashable under TF2 behaviour)
  except strings (tensor names), keyed by value; the cache keeps each keyed
  structure alive, so an identity cannot be reused by another object.
  """
  kind = type(fetches)
  if kind in _LEAF_TYPES:
    return id(fetches)
  if kind is dict or (kind is not str and not isinstance(fetches, tuple) and
                      isinstance(fetches, collections.abc.Mapping)):
    # (Leaves are keyed inline: this runs for every step's fetches.)
    return (kind,) + tuple([
        (k if type(k) is str else id(k),  # pylint: disable=unidiomatic-typecheck
         id(v) if type(v) in _LEAF_TYPES else _fetch_key(v)) for k, v in fetches.items()])
  if kind is list or isinstance(fetches, tuple):
    return (kind,) + tuple([id(f) if type(f) in _LEAF_TYPES else _fetch_key(f)
                            for f in fetches])
  if kind is str:
    return fetches
  _LEAF_TYPES.add(kind)
  return id(fetches)


def _is_namedtuple(value):
  return isinstance(value, tuple) and hasattr(type(value), "_fields")


def _compile_structure(structure, graph, tensors, ops):
  """Returns rebuild(values) -> results shaped like `structure`, or None.

  Collects the distinct tensors (by name, in `tensors`: name -> index into
  values) and operations (`ops`: name -> Operation) fetched. None when a leaf
  is anything but a Tensor, an Operation or a name of one of `graph` (a
  Variable, a SparseTensor, ...): Session.run's own fetch handling then does it.
  """
  kind = type(structure)
  if kind is dict:
    parts = [(k, _compile_structure(v, graph, tensors, ops)) for k, v in structure.items()]
    if any(part is None for _, part in parts):
      return None
    return lambda values: {k: part(values) for k, part in parts}
  if kind is list or kind is tuple or _is_namedtuple(structure):
    parts = [_compile_structure(v, graph, tensors, ops) for v in structure]
    if any(part is None for part in parts):
      return None
    if kind is list:
      return lambda values: [part(values) for part in parts]
    if kind is tuple:
      return lambda values: tuple(part(values) for part in parts)
    return lambda values: kind(*[part(values) for part in parts])
  leaf = structure
  if isinstance(leaf, str):
    try:
      leaf = graph.as_graph_element(leaf, allow_tensor=True, allow_operation=True)
    except (KeyError, ValueError, TypeError):
      return None
  # (An unfetchable leaf is left to Session.run, which raises its own error.)
  if isinstance(leaf, tf.Operation) and leaf.graph is graph and graph.is_fetchable(leaf):
    ops.setdefault(leaf.name, leaf)
    return lambda values: None
  if (isinstance(leaf, tf.Tensor) and getattr(leaf, "graph", None) is graph and
      leaf.op.type not in _HANDLE_OPS and graph.is_fetchable(leaf)):
    index = tensors.setdefault(leaf.name, len(tensors))
    return lambda values: values[index]
  return None


# Fetching these returns a TensorHandle, which Session.run builds.
_HANDLE_OPS = ("GetSessionHandle", "GetSessionHandleV2")


class _Step:
  """A fetch structure compiled for repeated runs (feeds, options: none).

  Runs as one `Session._make_callable_from_options` callable (TensorFlow's
  C++ callable: no per-run lookup of the fetched names) plus a prebuilt
  function that rebuilds the nested results, when every leaf is a Tensor or
  an Operation; else as a `Session.make_callable` callable. The structure is
  kept, so the identities in its cache key stay unique while it is cached.
  """

  __slots__ = ("fetches", "run", "compiled")

  def __init__(self, session, fetches):
    self.fetches = fetches
    self.compiled = False
    tensors, ops = {}, {}
    rebuild = _compile_structure(fetches, session.graph, tensors, ops)
    make = getattr(session, "_make_callable_from_options", None)
    if rebuild is not None and make is not None and (tensors or ops):
      options = config_pb2.CallableOptions(fetch=list(tensors), target=list(ops))
      try:
        raw = make(options)
      except (tf.errors.OpError, NotImplementedError):
        pass  # a session without callables, or an unfetchable tensor: see below
      else:
        self.run = lambda: rebuild(raw())
        self.compiled = True
        return
    # Session.make_callable handles every fetch Session.run does, and raises
    # Session.run's errors for bad ones. It is made only here: each callable
    # costs TensorFlow a graph pruning and optimization pass (milliseconds,
    # paid before the first step and at each new fetch structure).
    self.run = session.make_callable(fetches)


class FastSession(_tf_session.SessionInterface):
  """A `tf.compat.v1.Session` whose `run` avoids per-step rebuilding work.

  Everything other than `run` and `close` is the wrapped session's.

  Args:
    session: the `tf.compat.v1.Session` to wrap.
  """

  def __init__(self, session):
    self._session = session
    self._steps = {}

  @property
  def graph(self):
    return self._session.graph

  @property
  def sess_str(self):
    return self._session.sess_str

  @property
  def wrapped_session(self):
    """The `tf.compat.v1.Session` underneath."""
    return self._session

  def partial_run_setup(self, fetches, feeds=None):
    return self._session.partial_run_setup(fetches, feeds)

  def partial_run(self, handle, fetches, feed_dict=None):
    return self._session.partial_run(handle, fetches, feed_dict)

  def __getattr__(self, name):
    return getattr(self._session, name)

  def close(self):
    self._steps.clear()  # releases the callables while the session is open
    self._session.close()

  def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
    """As `tf.compat.v1.Session.run`."""
    if (options is not None and run_metadata is not None and options.ByteSize() == 0 and
        run_metadata.ByteSize() == 0):
      options = run_metadata = None
    session = self._session
    if (options is not None or run_metadata is not None or feed_dict or
        not session.graph.finalized or getattr(session, "_closed", True)):
      return session.run(fetches, feed_dict=feed_dict, options=options,
                         run_metadata=run_metadata)
    key = _fetch_key(fetches)
    step = self._steps.get(key)
    if step is None:
      if len(self._steps) >= _MAX_CALLABLES:
        return session.run(fetches)
      step = self._steps[key] = _Step(session, fetches)
    # _do_call turns TensorFlow errors into the ones Session.run raises (the
    # failing node and where it was created, in the message).
    do_call = getattr(session, "_do_call", None)
    return do_call(step.run) if do_call else step.run()


def create_global_step_read(graph):
  """Creates (or returns) the global-step read that TensorFlow's hooks share.

  It goes in the collection `training_util._get_or_create_global_step_read`
  looks in, so hooks built afterwards fetch it. Unlike TensorFlow's own it does
  not fall back to the initial value when the variable is uninitialised; hooks
  only run it in sessions whose variables are initialised (the chief's after
  initialisation, a worker's once the chief has), as tf.estimator's
  distribution-strategy path relied on with its own plain read.

  Args:
    graph: the training graph, with a global step.

  Returns:
    The read tensor, or None when the graph has no global step.
  """
  existing = graph.get_collection(training_util.GLOBAL_STEP_READ_KEY)
  if existing:
    return existing[0]
  global_step = _train.get_global_step(graph)
  if global_step is None:
    return None
  with graph.as_default(), graph.name_scope(None), graph.name_scope(
      global_step.op.name + "/"):
    read = global_step.read_value()
  graph.add_to_collection(training_util.GLOBAL_STEP_READ_KEY, read)
  return read


class FastSessionCreator(_train.SessionCreator):
  """Wraps the sessions another SessionCreator makes in FastSession."""

  def __init__(self, creator):
    self._creator = creator

  def create_session(self):
    return FastSession(self._creator.create_session())


def monitored_training_session(master="", is_chief=True, checkpoint_dir=None, scaffold=None,
                               hooks=None, chief_only_hooks=None, save_checkpoint_secs=None,
                               save_checkpoint_steps=None, save_summaries_steps=None,
                               config=None, stop_grace_period_secs=120,
                               log_step_count_steps=100, max_wait_secs=7200,
                               save_graph_def=True):
  """`tf.compat.v1.train.MonitoredTrainingSession` over a FastSession.

  The same session creators and default hooks in the same order (chief-only
  hooks, StepCounterHook, SummarySaverHook, CheckpointSaverHook, then
  `hooks`); the arguments mean what they mean there, except that None (not
  the USE_DEFAULT marker) turns summaries and checkpoints off.

  Returns:
    A `tf.compat.v1.train.MonitoredSession`.
  """
  scaffold = scaffold or _train.Scaffold()
  if not is_chief:
    creator = _train.WorkerSessionCreator(scaffold=scaffold, master=master, config=config,
                                          max_wait_secs=max_wait_secs)
    return _train.MonitoredSession(session_creator=FastSessionCreator(creator),
                                   hooks=list(hooks or []),
                                   stop_grace_period_secs=stop_grace_period_secs)
  all_hooks = list(chief_only_hooks or [])
  creator = _train.ChiefSessionCreator(scaffold=scaffold, checkpoint_dir=checkpoint_dir,
                                       master=master, config=config)
  if checkpoint_dir:
    if log_step_count_steps and log_step_count_steps > 0:
      all_hooks.append(_train.StepCounterHook(output_dir=checkpoint_dir,
                                              every_n_steps=log_step_count_steps))
    if save_summaries_steps and save_summaries_steps > 0:
      all_hooks.append(_train.SummarySaverHook(scaffold=scaffold, save_steps=save_summaries_steps,
                                               output_dir=checkpoint_dir))
    if (save_checkpoint_secs and save_checkpoint_secs > 0) or (
        save_checkpoint_steps and save_checkpoint_steps > 0):
      all_hooks.append(_train.CheckpointSaverHook(
          checkpoint_dir, save_secs=save_checkpoint_secs, save_steps=save_checkpoint_steps,
          scaffold=scaffold, save_graph_def=save_graph_def))
  all_hooks.extend(hooks or [])
  return _train.MonitoredSession(session_creator=FastSessionCreator(creator),
                                 hooks=all_hooks, stop_grace_period_secs=stop_grace_period_secs)
