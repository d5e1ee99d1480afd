"""RunConfig(train_distribute=..., eval_distribute=...) with tf.distribute strategies, in graph mode.

Logical CPU devices have to be configured before TensorFlow initialises its
devices, and MultiWorkerMirroredStrategy starts servers: every strategy runs
in a fresh interpreter (a real process, killed in `finally` if it outlives its
timeout).
"""
import json
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf

from estimator_lite import launch

REPO = str(pathlib.Path(__file__).resolve().parents[2])
TIMEOUT_SECS = 150

# A model and data shared by the programs below: logistic regression through
# tf-keras layers with a Keras loss, as in TensorFlow's "Multi-worker training
# with Estimator" tutorial, on 64 fixed examples.
_MODEL = textwrap.dedent('''
    import json, os, sys
    import numpy as np
    import tensorflow as tf

    def data():
        rng = np.random.RandomState(0)
        x = rng.uniform(-1, 1, (64, 3)).astype(np.float32)
        y = (x @ np.array([1.0, -2.0, 0.5], np.float32) > 0).astype(np.int64)
        return x, y

    def make_input_fn(batch_size, repeat=True):
        def input_fn(mode, input_context=None):
            x, y = data()
            dataset = tf.data.Dataset.from_tensor_slices(({"x": x}, y))
            if input_context is not None:
                # Each input pipeline (worker) reads its own shard.
                dataset = dataset.shard(input_context.num_input_pipelines,
                                        input_context.input_pipeline_id)
            if repeat:
                dataset = dataset.repeat()
            return dataset.batch(batch_size)
        return input_fn

    def model_fn(features, labels, mode, params):
        import estimator_lite as est
        model = tf.keras.Sequential([
            tf.keras.layers.Dense(4, activation="tanh",
                                  kernel_initializer=tf.keras.initializers.GlorotUniform(seed=1)),
            tf.keras.layers.Dense(2, kernel_initializer=tf.keras.initializers.GlorotUniform(seed=2)),
        ])
        logits = model(features["x"])
        if mode == est.ModeKeys.PREDICT:
            return est.EstimatorSpec(mode, predictions={"class": tf.argmax(logits, 1)},
                                     export_outputs={"out": est.export.PredictOutput({"logits": logits})})
        per_example = tf.keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, reduction=tf.keras.losses.Reduction.NONE)(labels, logits)
        loss = tf.reduce_sum(per_example) * (1.0 / params["batch_size"])
        metrics = {"accuracy": tf.compat.v1.metrics.accuracy(labels, tf.argmax(logits, 1))}
        if mode == est.ModeKeys.EVAL:
            return est.EstimatorSpec(mode, loss=loss, eval_metric_ops=metrics)
        optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.5)
        return est.EstimatorSpec(mode, loss=loss, train_op=optimizer.minimize(
            loss, tf.compat.v1.train.get_or_create_global_step()))

    def trainable_values(estimator):
        return {name: estimator.get_variable_value(name).tolist()
                for name in estimator.get_variable_names()
                if "kernel" in name or "bias" in name}
''')

# Mirrored (and CentralStorage) over two logical CPUs, batch 8 per replica,
# against one device on batch 16: same weights. Then the checkpoints cross
# over: the mirrored model resumes without a strategy and exports, and a
# single-device model resumes under MirroredStrategy.
_MIRRORED_PROGRAM = textwrap.dedent('''
    import tensorflow as tf
    cpu, = tf.config.list_physical_devices("CPU")
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    import estimator_lite as est
''') + _MODEL + textwrap.dedent('''
    base = sys.argv[1]
    devices = ["/cpu:0", "/cpu:1"]
    results = {}

    def estimator(name, batch_size, strategy=None, eval_strategy=None):
        config = est.RunConfig(train_distribute=strategy, eval_distribute=eval_strategy,
                               save_checkpoints_steps=10, log_step_count_steps=10,
                               save_summary_steps=5)
        return est.Estimator(model_fn, os.path.join(base, name), config=config,
                             params={"batch_size": batch_size})

    single = estimator("single", 16).train(make_input_fn(16), max_steps=20)
    results["single"] = trainable_values(single)
    results["single_eval"] = {k: float(v) for k, v in single.evaluate(make_input_fn(16, repeat=False)).items()}

    mirrored_strategy = tf.distribute.MirroredStrategy(devices)
    mirrored = estimator("mirrored", 8, mirrored_strategy, mirrored_strategy)
    mirrored.train(make_input_fn(8), max_steps=20)
    results["mirrored"] = trainable_values(mirrored)
    results["mirrored_names"] = sorted(mirrored.get_variable_names())
    results["single_names"] = sorted(single.get_variable_names())
    results["mirrored_eval"] = {k: float(v) for k, v in mirrored.evaluate(make_input_fn(8, repeat=False)).items()}

    central = estimator("central", 8, tf.distribute.experimental.CentralStorageStrategy(devices))
    results["central"] = trainable_values(central.train(make_input_fn(8), max_steps=20))

    # Cross-over: the mirrored checkpoint resumes on one device, and exports.
    plain = estimator("mirrored", 16).train(make_input_fn(16), max_steps=25)
    results["mirrored_then_single_step"] = int(plain.get_variable_value("global_step"))
    export_dir = plain.export_saved_model(
        os.path.join(base, "export"),
        est.export.build_raw_serving_input_receiver_fn({"x": tf.TensorSpec([None, 3], tf.float32)}))
    loaded = tf.saved_model.load(export_dir)
    results["export_signatures"] = sorted(loaded.signatures.keys())
    # ...and a single-device checkpoint resumes under MirroredStrategy.
    again = estimator("single", 8, mirrored_strategy).train(make_input_fn(8), max_steps=25)
    results["single_then_mirrored_step"] = int(again.get_variable_value("global_step"))

    # TensorFlow's "Multi-worker training with Estimator" tutorial, unchanged
    # but for its data (MNIST there; here 512 fixed 28x28 images, 256 for
    # evaluation) and MirroredStrategy over the two CPUs for its strategy.
    BUFFER_SIZE = 10000
    BATCH_SIZE = 64
    LEARNING_RATE = 1e-4
    images = np.random.RandomState(1).randint(0, 256, (768, 28, 28, 1)).astype(np.uint8)
    digits = (images.reshape(768, -1).mean(1) > 127.5).astype(np.int64)

    def input_fn(mode, input_context=None):
        train = mode == est.ModeKeys.TRAIN
        mnist_dataset = tf.data.Dataset.from_tensor_slices(
            (images[:512], digits[:512]) if train else (images[512:], digits[512:]))

        def scale(image, label):
            image = tf.cast(image, tf.float32)
            image /= 255
            return image, label

        if input_context:
            mnist_dataset = mnist_dataset.shard(input_context.num_input_pipelines,
                                                input_context.input_pipeline_id)
        return mnist_dataset.map(scale).cache().shuffle(BUFFER_SIZE).batch(BATCH_SIZE)

    def tutorial_model_fn(features, labels, mode):
        model = tf.keras.Sequential([
            tf.keras.layers.Conv2D(32, 3, activation="relu", input_shape=(28, 28, 1)),
            tf.keras.layers.MaxPooling2D(),
            tf.keras.layers.Flatten(),
            tf.keras.layers.Dense(64, activation="relu"),
            tf.keras.layers.Dense(10)
        ])
        logits = model(features, training=False)

        if mode == est.ModeKeys.PREDICT:
            predictions = {"logits": logits}
            return est.EstimatorSpec(labels=labels, predictions=predictions)

        optimizer = tf.compat.v1.train.GradientDescentOptimizer(learning_rate=LEARNING_RATE)
        loss = tf.keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, reduction=tf.keras.losses.Reduction.NONE)(labels, logits)
        loss = tf.reduce_sum(loss) * (1. / BATCH_SIZE)
        if mode == est.ModeKeys.EVAL:
            return est.EstimatorSpec(mode, loss=loss)

        return est.EstimatorSpec(
            mode=mode,
            loss=loss,
            train_op=optimizer.minimize(loss, tf.compat.v1.train.get_or_create_global_step()))

    strategy = tf.distribute.MirroredStrategy(devices)
    config = est.RunConfig(train_distribute=strategy, eval_distribute=strategy)
    classifier = est.Estimator(model_fn=tutorial_model_fn,
                               model_dir=os.path.join(base, "tutorial"), config=config)
    metrics, _ = est.train_and_evaluate(
        classifier,
        train_spec=est.TrainSpec(input_fn=input_fn),
        eval_spec=est.EvalSpec(input_fn=input_fn)
    )
    results["tutorial_metrics"] = {k: float(v) for k, v in metrics.items()}
    print("RESULTS " + json.dumps(results))
''')

# One task of a MultiWorkerMirroredStrategy cluster, written like the
# tutorial: the strategy is created first (it reads TF_CONFIG), then
# train_and_evaluate. A hook saves each training task's final weights.
_MULTI_WORKER_PROGRAM = textwrap.dedent('''
    import tensorflow as tf
    import estimator_lite as est
''') + _MODEL + textwrap.dedent('''
    model_dir, out_dir = sys.argv[1:3]
    task = json.loads(os.environ["TF_CONFIG"])["task"]
    strategy = tf.distribute.MultiWorkerMirroredStrategy()

    class SaveFinalWeights(est.SessionRunHook):
        def end(self, session):
            variables = {v.op.name: v for v in tf.compat.v1.trainable_variables()}
            values = session.run(variables)
            with open(os.path.join(out_dir, "%s_%d.json" % (task["type"], task["index"])), "w") as f:
                json.dump({k: np.asarray(v).tolist() for k, v in values.items()}, f)

    config = est.RunConfig(train_distribute=strategy, save_checkpoints_steps=10,
                           log_step_count_steps=10)
    estimator = est.Estimator(model_fn, model_dir, config=config, params={"batch_size": 8})
    est.train_and_evaluate(
        estimator,
        est.TrainSpec(make_input_fn(8), max_steps=20, hooks=[SaveFinalWeights()]),
        est.EvalSpec(make_input_fn(8, repeat=False), steps=None, start_delay_secs=0,
                     throttle_secs=0))
    print("DONE", task["type"], flush=True)
''')


def _env():
  env = dict(os.environ)
  env["PYTHONPATH"] = os.pathsep.join([REPO] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
  env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
  env.pop("TF_CONFIG", None)
  env.pop("TF_USE_LEGACY_KERAS", None)
  return env


def _run(program, args, tmp_path, name):
  """Runs `program` in a fresh interpreter; returns its combined output (asserts exit 0)."""
  script = tmp_path / f"{name}.py"
  script.write_text(program)
  process = subprocess.Popen(  # pylint: disable=consider-using-with
      [sys.executable, str(script), *map(str, args)], cwd=str(tmp_path), env=_env(),
      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True)
  try:
    output, _ = process.communicate(timeout=TIMEOUT_SECS)
  finally:
    if process.poll() is None:
      process.kill()
      process.wait()
  assert process.returncode == 0, output[-6000:]
  return output


def _results(output):
  line = [l for l in output.splitlines() if l.startswith("RESULTS ")][-1]
  return json.loads(line[len("RESULTS "):])


def _assert_same_weights(expected, actual):
  assert sorted(expected) == sorted(actual)
  for name in expected:
    np.testing.assert_allclose(actual[name], expected[name], rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.fixture(scope="module")
def mirrored_run(tmp_path_factory):
  """(results, models dir) of _MIRRORED_PROGRAM, run once for the tests below."""
  tmp_path = tmp_path_factory.mktemp("mirrored")
  return _results(_run(_MIRRORED_PROGRAM, [tmp_path / "models"], tmp_path, "mirrored")), tmp_path / "models"


def test_mirrored_strategy_trains_like_one_device_on_the_global_batch(mirrored_run):
  results, _ = mirrored_run
  # Two replicas x 8 examples, gradients averaged and applied once per step:
  # the weights of one device on batch 16.
  _assert_same_weights(results["single"], results["mirrored"])
  _assert_same_weights(results["single"], results["central"])
  # Checkpoints hold the plain variable names of single-device training.
  assert results["mirrored_names"] == results["single_names"]
  # Evaluation over the replicas (eval_distribute) gives the one-device metrics.
  for key in ("loss", "accuracy", "global_step"):
    assert results["mirrored_eval"][key] == pytest.approx(results["single_eval"][key], rel=1e-5)
  # Both checkpoints resume in the other mode.
  assert results["mirrored_then_single_step"] == 25
  assert results["single_then_mirrored_step"] == 25
  assert "out" in results["export_signatures"]


def test_mirrored_strategy_reports_the_loss_of_the_global_batch(mirrored_run, read_scalars):
  # tf.estimator's rule: the optimizer divided each replica's mean loss by
  # the replicas, so the `loss` summary is the mean over replicas: one
  # device's loss on the batch of 16. Past step 20 each model_dir trained on
  # in the other mode (the cross-over above): the same comparison, reversed.
  _, models = mirrored_run
  single = dict(read_scalars(str(models / "single"))["loss"])
  mirrored = dict(read_scalars(str(models / "mirrored"))["loss"])
  assert sorted(mirrored) == sorted(single)
  assert len([step for step in single if step <= 20]) >= 4, sorted(single)
  for step, loss in single.items():
    assert mirrored[step] == pytest.approx(loss, rel=1e-5, abs=1e-6), step


def test_tensorflow_multi_worker_tutorial_runs_unchanged_under_mirrored_strategy(mirrored_run):
  # TrainSpec without max_steps over a finite dataset: training ends with
  # the input (512 examples, 2 replicas x 64 a step: 4 steps), then the
  # final checkpoint is evaluated with EvalSpec's defaults.
  metrics = mirrored_run[0]["tutorial_metrics"]
  assert {"loss", "global_step"} <= set(metrics), metrics
  assert metrics["global_step"] == 4
  assert np.isfinite(metrics["loss"]) and metrics["loss"] > 0


@pytest.mark.long  # tests/tiers.py
def test_multi_worker_mirrored_strategy_trains_in_sync_with_an_evaluator(tmp_path):
  model_dir, out_dir = tmp_path / "model", tmp_path / "out"
  out_dir.mkdir()
  script = tmp_path / "task.py"
  script.write_text(_MULTI_WORKER_PROGRAM)
  chief_port, worker_port, evaluator_port = launch.free_ports(3)
  cluster = {"chief": [f"localhost:{chief_port}"], "worker": [f"localhost:{worker_port}"]}
  evaluator_cluster = dict(cluster, evaluator=[f"localhost:{evaluator_port}"])
  processes, logs = {}, {}
  try:
    for job in ("chief", "worker", "evaluator"):
      env = _env()
      # The evaluator's TF_CONFIG lists it inside "cluster", as Kubeflow does.
      env["TF_CONFIG"] = launch.tf_config(evaluator_cluster if job == "evaluator" else cluster,
                                          job, 0)
      logs[job] = open(str(tmp_path / f"{job}.log"), "w")  # pylint: disable=consider-using-with
      processes[job] = subprocess.Popen(  # pylint: disable=consider-using-with
          [sys.executable, str(script), str(model_dir), str(out_dir)], cwd=str(tmp_path),
          env=env, stdout=logs[job], stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    statuses = {job: process.wait(TIMEOUT_SECS) for job, process in processes.items()}
  finally:
    for process in processes.values():
      if process.poll() is None:
        process.kill()
        process.wait()
    for log in logs.values():
      log.close()
  outputs = {job: (tmp_path / f"{job}.log").read_text(errors="replace") for job in logs}
  for job, status in statuses.items():
    assert status == 0, f"{job} exited with {status}:\n{outputs[job][-5000:]}"
    assert f"DONE {job}" in outputs[job]
  # The two training tasks end with identical weights (all-reduced
  # gradients), which the chief's final checkpoint holds.
  chief = json.loads((out_dir / "chief_0.json").read_text())
  worker = json.loads((out_dir / "worker_0.json").read_text())
  assert sorted(chief) == sorted(worker) and chief
  for name in chief:
    np.testing.assert_array_equal(chief[name], worker[name], err_msg=name)
    np.testing.assert_allclose(tf.train.load_variable(str(model_dir), name), chief[name],
                               rtol=1e-6, err_msg=name)
  # Only the chief wrote into model_dir: one events file, no worker copies.
  assert sorted(p.name for p in model_dir.iterdir() if p.is_dir()) == ["eval"]
  assert len(list(model_dir.glob("events.out.tfevents.*"))) == 1
  assert tf.train.load_variable(str(model_dir), "global_step") == 20
  # The evaluator evaluated the final checkpoint and exited on its own.
  eval_steps = _event_steps(model_dir / "eval", "accuracy")
  assert eval_steps and max(eval_steps) == 20
  # 2 workers x 8 examples per step, each worker reading its own shard: the
  # weights of one process on batch 16 of the unsharded data.
  namespace = {}
  exec(_MODEL, namespace)  # pylint: disable=exec-used
  import estimator_lite as est  # pylint: disable=g-import-not-at-top
  single = est.Estimator(namespace["model_fn"], str(tmp_path / "single"),
                         params={"batch_size": 16})
  single.train(namespace["make_input_fn"](16), max_steps=20)
  _assert_same_weights(namespace["trainable_values"](single), chief)


def _event_steps(event_dir, tag):
  steps = []
  for path in event_dir.glob("events.out.tfevents.*"):
    for event in tf.compat.v1.train.summary_iterator(str(path)):
      if any(value.tag == tag for value in event.summary.value):
        steps.append(event.step)
  return steps


# Every combination TensorFlow 2.21 cannot run in graph mode, or that does not
# fit TF_CONFIG, fails when the RunConfig is built, with the reason and the
# alternative; an input_fn that is not a Dataset fails when training starts.
_ERRORS_PROGRAM = textwrap.dedent('''
    import json, os
    import tensorflow as tf
    import estimator_lite as est

    errors = {}
    def expect_error(case, make):
        try:
            make()
        except (ValueError, TypeError) as e:
            errors[case] = "%s: %s" % (type(e).__name__, e)
        else:
            errors[case] = "no error"

    mirrored = tf.distribute.MirroredStrategy(["/cpu:0"])
    local_multi_worker = tf.distribute.MultiWorkerMirroredStrategy()  # no TF_CONFIG: 1 worker
    expect_error("not_a_strategy", lambda: est.RunConfig(train_distribute="mirrored"))
    expect_error("class", lambda: est.RunConfig(eval_distribute=tf.distribute.MirroredStrategy))
    expect_error("ps_strategy", lambda: est.RunConfig(
        train_distribute=tf.compat.v1.distribute.experimental.ParameterServerStrategy()))
    expect_error("steps_per_loop", lambda: est.RunConfig(train_distribute=mirrored, steps_per_loop=4))
    expect_error("device_fn", lambda: est.RunConfig(train_distribute=mirrored, device_fn=lambda op: ""))

    def cluster(**jobs):
        return {job: ["localhost:%d" % (2000 + i) for i in range(n)] for job, n in jobs.items()}
    os.environ["TF_CONFIG"] = json.dumps({"cluster": cluster(chief=1, worker=1), "task": {"type": "worker", "index": 0}})
    expect_error("mirrored_in_cluster", lambda: est.RunConfig(train_distribute=mirrored))
    expect_error("strategy_before_tf_config", lambda: est.RunConfig(train_distribute=local_multi_worker))
    os.environ["TF_CONFIG"] = json.dumps({"cluster": cluster(chief=1, worker=1, ps=1), "task": {"type": "worker", "index": 0}})
    expect_error("multi_worker_with_ps", lambda: est.RunConfig(train_distribute=local_multi_worker))
    # The evaluator never trains: the same program's train_distribute is fine there.
    os.environ["TF_CONFIG"] = json.dumps({"cluster": cluster(chief=1, worker=1), "task": {"type": "evaluator", "index": 0}})
    est.RunConfig(train_distribute=mirrored)
    del os.environ["TF_CONFIG"]

    def model_fn(features, labels, mode):
        w = tf.compat.v1.get_variable("w", [1, 1])
        loss = tf.reduce_mean(tf.square(tf.matmul(features, w) - labels))
        return est.EstimatorSpec(mode, loss=loss, train_op=tf.compat.v1.train.GradientDescentOptimizer(
            0.1).minimize(loss, tf.compat.v1.train.get_global_step()))
    estimator = est.Estimator(model_fn, config=est.RunConfig(train_distribute=mirrored))
    expect_error("tensors_not_dataset", lambda: estimator.train(
        lambda: (tf.ones([2, 1]), tf.ones([2, 1])), max_steps=1))
    print("RESULTS " + json.dumps(errors))
''')


def test_unsupported_combinations_fail_at_run_config_with_the_reason(tmp_path):
  errors = _results(_run(_ERRORS_PROGRAM, [], tmp_path, "errors"))
  expected = {
      "not_a_strategy": ["must be a tf.distribute.Strategy instance"],
      "class": ["pass a strategy instance", "MirroredStrategy()"],
      "ps_strategy": ["ParameterServerStrategy is not supported", "needs eager",
                      "leave train_distribute=None and list 'ps' tasks"],
      "steps_per_loop": ["steps_per_loop=4", "Use steps_per_loop=1"],
      "device_fn": ["device_fn", "Pass one or the other"],
      "mirrored_in_cluster": ["this one process", "use MultiWorkerMirroredStrategy"],
      "strategy_before_tf_config": ["spans 1 worker(s) but TF_CONFIG lists 2",
                                    "set TF_CONFIG before creating it"],
      "multi_worker_with_ps": ["'ps' task(s)", "uses no parameter servers"],
      "tensors_not_dataset": ["TypeError", "must return a tf.data.Dataset"],
  }
  assert sorted(errors) == sorted(expected)
  for case, fragments in expected.items():
    for fragment in fragments:
      assert fragment in errors[case], (case, errors[case])
    assert "ValueError: RunConfig(" in errors[case] or case == "tensors_not_dataset", errors[case]
