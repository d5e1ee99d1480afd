"""FastSession (Estimator.train's per-step Session.run) behaves exactly like tf.compat.v1.Session."""
import collections

import pytest
import tensorflow as tf

from estimator_lite._session import fast_session as _fast_session

_v1 = tf.compat.v1
Pair = collections.namedtuple("Pair", ["a", "b"])


@pytest.fixture
def graph_and_sessions():
  graph = tf.Graph()
  with graph.as_default():
    counter = _v1.get_variable("counter", [], tf.int64, initializer=_v1.zeros_initializer())
    increment = _v1.assign_add(counter, 1)
    read = counter.read_value()
    x = _v1.placeholder_with_default(tf.constant(2.0), [], name="x")
    doubled = tf.identity(2.0 * x, name="doubled")
    bad = tf.debugging.check_numerics(tf.math.log(x - 2.0), "log of x - 2")
    unfetchable = tf.identity(x, name="unfetchable")
    graph.prevent_fetching(unfetchable.op)
    saver = _v1.train.Saver()
    plain = _v1.Session(graph=graph)
    plain.run(_v1.global_variables_initializer())
  graph.finalize()
  fast = _fast_session.FastSession(plain)
  yield dict(graph=graph, counter=counter, read=read, increment=increment, x=x,
             doubled=doubled, bad=bad, unfetchable=unfetchable, saver=saver, plain=plain,
             fast=fast)
  plain.close()


def test_results_errors_options_and_feeds_match_session_run(graph_and_sessions, tmp_path):
  g = graph_and_sessions
  fast, plain = g["fast"], g["plain"]
  structures = [
      g["doubled"],
      g["counter"],  # a Variable: left to Session.run's own fetch handling
      [g["doubled"], g["read"]],
      {"caller": [g["read"], g["doubled"]], "hook": (g["doubled"], g["read"])},
      Pair(a=g["doubled"], b={"nested": [g["doubled"]]}),
      "doubled:0",
      g["increment"].op,
  ]
  for _ in range(3):  # the second and third rounds come from the cache
    for fetches in structures:
      expected = plain.run(fetches)
      got = fast.run(fetches)
      assert type(got) is type(expected)
      assert got == expected
      flat_got = tf.nest.flatten(got, expand_composites=False)
      assert [type(v) for v in flat_got] == [type(v) for v in tf.nest.flatten(expected)]
  assert plain.run(g["counter"]) == 6  # each run of the increment op ran it once
  # Tensors, operations and their names ran as compiled C++ callables; the
  # Variable through Session.run's fetch handling.
  compiled = {type(step.fetches).__name__ if not isinstance(step.fetches, str) else "name":
              step.compiled for step in fast._steps.values()}  # pylint: disable=protected-access
  assert compiled == {"SymbolicTensor": True, "ResourceVariable": False, "list": True,
                      "dict": True, "Pair": True, "name": True, "Operation": True}
  # A fresh string naming a tensor (as some hooks build each step) is found by value.
  assert fast.run("".join(["doub", "led:0"])) == 4.0

  # A tensor marked not fetchable (as TensorFlow marks those inside v1
  # control flow): Session.run's own error, not a C++ one.
  with pytest.raises(ValueError, match="not fetchable") as from_plain:
    plain.run(g["unfetchable"])
  with pytest.raises(ValueError, match="not fetchable") as from_fast:
    fast.run([g["doubled"], g["unfetchable"]])
  assert str(from_fast.value) == str(from_plain.value)

  # Feeds go through Session.run.
  assert fast.run(g["doubled"], feed_dict={g["x"]: 5.0}) == 10.0

  # Errors: same type and the same decorated message as Session.run's.
  with pytest.raises(tf.errors.InvalidArgumentError) as from_plain:
    plain.run(g["bad"])
  with pytest.raises(tf.errors.InvalidArgumentError) as from_fast:
    fast.run(g["bad"])
  assert str(from_fast.value) == str(from_plain.value)
  assert "log of x - 2" in str(from_fast.value)

  # Options a hook asks for (ProfilerHook's tracing) still reach TensorFlow ...
  metadata = _v1.RunMetadata()
  fast.run(g["increment"], options=_v1.RunOptions(trace_level=_v1.RunOptions.FULL_TRACE),
           run_metadata=metadata)
  assert metadata.step_stats.dev_stats
  # ... while empty ones (what _HookedSession passes every step) are dropped.
  metadata = _v1.RunMetadata()
  assert fast.run(g["doubled"], options=_v1.RunOptions(), run_metadata=metadata) == 4.0
  assert metadata.ByteSize() == 0

  # Many distinct structures: still right past the cache's limit.
  for i in range(_fast_session._MAX_CALLABLES + 5):  # pylint: disable=protected-access
    assert fast.run([g["doubled"]] * (i + 1)) == [4.0] * (i + 1)

  # Saver, hooks and queue runners accept it as a Session.
  with g["graph"].as_default():
    path = g["saver"].save(fast, str(tmp_path / "model.ckpt"))
  assert tf.train.load_variable(path, "counter") == plain.run(g["counter"])
  assert fast.graph is g["graph"]


def test_tensorflows_training_hooks_work_over_a_fast_session(tmp_path):
  """MonitoredTrainingSession's default hooks and a user's hook, step by step, over FastSession."""

  class Recorder(_v1.train.SessionRunHook):

    def __init__(self):
      self.steps = []
      self.sessions = []

    def after_create_session(self, session, coord):
      self.sessions.append(session)

    def before_run(self, run_context):
      return _v1.train.SessionRunArgs({"step": _v1.train.get_global_step()})

    def after_run(self, run_context, run_values):
      self.steps.append(int(run_values.results["step"]))
      assert isinstance(run_values.run_metadata, _v1.RunMetadata)

  with tf.Graph().as_default():
    global_step = _v1.train.get_or_create_global_step()
    loss = tf.cast(global_step, tf.float32) * 0.5
    _v1.summary.scalar("loss", loss)
    train_op = _v1.assign_add(global_step, 1)
    recorder = Recorder()
    scaffold = _v1.train.Scaffold()
    creator = _fast_session.FastSessionCreator(_v1.train.ChiefSessionCreator(
        scaffold=scaffold, checkpoint_dir=str(tmp_path)))
    default_hooks = [
        _v1.train.StepCounterHook(output_dir=str(tmp_path), every_n_steps=2),
        _v1.train.SummarySaverHook(scaffold=scaffold, save_steps=2, output_dir=str(tmp_path)),
        _v1.train.CheckpointSaverHook(str(tmp_path), save_steps=5, scaffold=scaffold)]
    with _v1.train.MonitoredSession(
        session_creator=creator,
        hooks=default_hooks + [recorder, _v1.train.StopAtStepHook(last_step=7)]) as session:
      losses = []
      while not session.should_stop():
        losses.append(session.run([train_op, loss])[1])
  assert isinstance(recorder.sessions[0], _fast_session.FastSession)
  assert len(losses) == 7 and len(recorder.steps) == 7
  assert recorder.steps == sorted(recorder.steps)
  # CheckpointSaverHook: at the start, once in between (step 5, or 6 when the
  # read raced the increment) and at the end.
  assert tf.train.latest_checkpoint(str(tmp_path)).endswith("model.ckpt-7")
  state = tf.train.get_checkpoint_state(str(tmp_path))
  steps = [p.rsplit("-", 1)[1] for p in state.all_model_checkpoint_paths]
  assert steps[0] == "0" and steps[-1] == "7" and len(steps) == 3
  # SummarySaverHook and StepCounterHook wrote their events.
  tags = set()
  for path in tf.io.gfile.glob(str(tmp_path / "events.out.tfevents.*")):
    for event in _v1.train.summary_iterator(path):
      tags.update(v.tag for v in event.summary.value)
  assert {"loss", "global_step/sec"} <= tags
