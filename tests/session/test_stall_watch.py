"""The stall watch: when it warns, what it says about each ps task, and the line when steps resume.

The rule is driven by a clock the test moves; the probes are real TCP
connections, to a listening socket and to a closed port. A cluster whose
worker is cut off from its ps (the probe then gets no answer), with the
warning in its log, is in tests/test_network_faults.py.
"""
import socket

import pytest
import tensorflow as tf

from estimator_lite._session import stall_watch


class _Clock:
  def __init__(self):
    self.now = 1000.0

  def __call__(self):
    return self.now


def _step(hook, clock, secs):
  hook.before_run(None)
  clock.now += secs
  hook.after_run(None, None)


@pytest.fixture
def listening():
  server = socket.socket()
  server.bind(("127.0.0.1", 0))
  server.listen()
  yield f"127.0.0.1:{server.getsockname()[1]}"
  server.close()


@pytest.fixture
def closed_port():
  sock = socket.socket()
  sock.bind(("127.0.0.1", 0))
  address = f"127.0.0.1:{sock.getsockname()[1]}"
  sock.close()
  return address


def test_warns_after_the_stall_time_then_every_stall_time_then_says_when_steps_resume(
    listening, closed_port, tf_logs):
  clock = _Clock()
  hook = stall_watch.StallWatchHook([("ps:0", listening), ("ps:1", closed_port)],
                                    stall_secs=20, clock=clock)
  hook.after_create_session(None, None)
  for _ in range(5):
    _step(hook, clock, 0.1)
  clock.now += 19
  assert hook.check() is None
  clock.now += 2
  warning = hook.check()
  assert warning.startswith("No training step has finished for 21 s.")
  assert f"ps:0 at {listening}: accepts connections" in warning
  assert (f"ps:1 at {closed_port}: connection refused: not running, or a firewall refuses it"
          in warning)
  clock.now += 10
  assert hook.check() is None          # not again before another 20 s
  clock.now += 11
  assert hook.check().startswith("No training step has finished for 42 s.")
  _step(hook, clock, 0.1)
  assert "Training goes on after a stall of 42 s." in tf_logs.text
  clock.now += 5
  assert hook.check() is None


def test_slow_steps_raise_the_threshold_to_ten_usual_steps(listening):
  clock = _Clock()
  hook = stall_watch.StallWatchHook([("ps:0", listening)], stall_secs=20, clock=clock)
  hook.after_create_session(None, None)
  for _ in range(5):
    _step(hook, clock, 6.0)   # a big model: 6 s a step
  assert hook.threshold() == 60
  clock.now += 59
  assert hook.check() is None
  clock.now += 2
  assert hook.check().startswith("No training step has finished for 61 s.")


def test_no_warning_before_the_first_step(listening):
  # Waiting then is expected (a worker for the chief's initialisation, the
  # launcher's join) and logged by what waits.
  clock = _Clock()
  hook = stall_watch.StallWatchHook([("ps:0", listening)], stall_secs=20, clock=clock)
  hook.begin()
  try:
    hook.after_create_session(None, None)
    hook.before_run(None)
    clock.now += 300
    assert hook.check() is None
    hook.after_run(None, None)
    _step(hook, clock, 0.1)      # the median of the usual steps forgets the long first one
    _step(hook, clock, 0.1)
    clock.now += 25
    assert hook.check().startswith("No training step has finished for 25 s.")
  finally:
    hook.stop()


def test_for_cluster_watches_the_ps_tasks_of_a_ps_cluster_only(monkeypatch):
  import estimator_lite as est
  cluster = {"chief": ["127.0.0.3:2222"], "worker": ["127.0.0.4:2222"],
             "ps": ["127.0.0.2:2222", "127.0.0.2:2223"]}
  monkeypatch.setenv("TF_CONFIG", '{"cluster": %s, "task": {"type": "worker", "index": 0}}'
                     % str(cluster).replace("'", '"'))
  hook = stall_watch.for_cluster(est.RunConfig())
  assert hook is not None
  assert hook.peers == [("ps:0", "127.0.0.2:2222"), ("ps:1", "127.0.0.2:2223")]
  monkeypatch.delenv("TF_CONFIG")
  assert stall_watch.for_cluster(est.RunConfig()) is None
