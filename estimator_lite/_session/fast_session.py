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

`FastSessionCreator` wraps the sessions another session creator makes.
"""
from __future__ import annotations

import collections.abc
from typing import Any, Callable, Dict, List, Optional, Set, Tuple, cast

import tensorflow as tf
from tensorflow.core.protobuf import config_pb2

from estimator_lite._util import tf_internals
# Distinct fetch structures cached per session; a hook fetching a new
# structure on every step would otherwise grow the cache without bound.
_MAX_CALLABLES = 64


# Types already seen as leaves (tensors, operations, ...): most of what is
# fetched, so they are recognised first, with one set lookup.
_LEAF_TYPES: Set[type] = set()


def _fetch_key(fetches: Any) -> Any:
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


def _is_namedtuple(value: Any) -> bool:
  return isinstance(value, tuple) and hasattr(type(value), "_fields")


Rebuild = Callable[[List[Any]], Any]


def _compile_structure(structure: Any, graph: Any, tensors: Dict[str, int],
                       ops: Dict[str, Any]) -> Optional[Rebuild]:
  """Returns rebuild(values) -> results shaped like `structure`, or None.

  Collects the distinct tensors (by name, in `tensors`: name -> index into
  values) and operations (`ops`: name -> Operation) fetched. None when a leaf
  is anything but a Tensor, an Operation or a name of one of `graph` (a
  Variable, a SparseTensor, ...): Session.run's own fetch handling then does it.
  """
  kind = type(structure)
  if kind is dict:
    named = [(k, _compile_structure(v, graph, tensors, ops)) for k, v in structure.items()]
    if any(part is None for _, part in named):
      return None
    named_parts = cast(List[Tuple[Any, Rebuild]], named)
    return lambda values: {k: part(values) for k, part in named_parts}
  if kind is list or kind is tuple or _is_namedtuple(structure):
    compiled = [_compile_structure(v, graph, tensors, ops) for v in structure]
    if any(part is None for part in compiled):
      return None
    parts = cast(List[Rebuild], compiled)
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
  # (An eager tensor has no graph: getattr.)
  if (isinstance(leaf, tf.Tensor) and graph.is_fetchable(leaf) and
      getattr(leaf, "graph", None) is graph and leaf.op.type not in _HANDLE_OPS):
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
    tensors: Dict[str, int] = {}
    ops: Dict[str, Any] = {}
    rebuild = _compile_structure(fetches, session.graph, tensors, ops)
    if rebuild is not None and (tensors or ops):
      options = config_pb2.CallableOptions(fetch=list(tensors), target=list(ops))
      try:
        raw = tf_internals.make_raw_callable(session, options)
      except (tf.errors.OpError, NotImplementedError):
        raw = None  # an unfetchable tensor: see below
      if raw is not None:
        self.run = lambda: rebuild(raw())
        self.compiled = True
        return
    # Session.make_callable handles every fetch Session.run does, and raises
    # Session.run's errors for bad ones. It is made only here: each callable
    # costs TensorFlow a graph pruning and optimization pass (milliseconds,
    # paid before the first step and at each new fetch structure).
    self.run = session.make_callable(fetches)


class FastSession(tf_internals.SessionInterface):
  """A `tf.compat.v1.Session` whose `run` avoids per-step rebuilding work.

  Everything other than `run` and `close` is the wrapped session's.

  Args:
    session: the `tf.compat.v1.Session` to wrap.
  """

  def __init__(self, session: tf.compat.v1.Session):
    self._session = session
    self._steps: Dict[Any, _Step] = {}
    # Raises TensorFlow's errors as Session.run does (the failing node and
    # where it was created, in the message).
    self._with_session_errors = tf_internals.session_error_decorator(session)

  @property
  def graph(self):
    return self._session.graph

  @property
  def sess_str(self):
    return self._session.sess_str

  @property
  def cached_steps(self) -> int:
    """How many fetch structures this session has compiled (for tests and benchmarks)."""
    return len(self._steps)

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
        not session.graph.finalized or tf_internals.session_is_closed(session)):
      return session.run(fetches, feed_dict=feed_dict, options=options,
                         run_metadata=run_metadata)
    key = _fetch_key(fetches)
    step = self._steps.get(key)
    if step is None:
      if len(self._steps) >= _MAX_CALLABLES:
        return session.run(fetches)
      step = self._steps[key] = _Step(session, fetches)
    return self._with_session_errors(step.run)


class FastSessionCreator(tf.compat.v1.train.SessionCreator):
  """Wraps the sessions another SessionCreator makes in FastSession."""

  def __init__(self, creator: tf.compat.v1.train.SessionCreator):
    self._creator = creator

  def create_session(self) -> FastSession:
    return FastSession(self._creator.create_session())
