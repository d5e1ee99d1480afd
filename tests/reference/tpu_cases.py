"""One TPUEstimator program (use_tpu=False), built the same way under tf.estimator 2.15 and estimator_lite.

tests/reference/make_tpu_fixture.py runs it in the reference venv (TensorFlow
2.15 + tf.estimator) and records what it did (tests/data/tpu/expected.json,
and the model_dir it wrote, tests/data/tpu/tf215_model_dir);
tests/tpu/test_tf215_tpu_compat.py runs it with estimator_lite and compares,
and has the reference venv read estimator_lite's model_dir
(`read_model_dir`, run by this file's `__main__`).

The model_fn uses what TPUEstimator programs use: a TPUEstimatorSpec with
`eval_metrics` (a dict of tensors), `host_call` writing a TF2 summary every
step, `scaffold_fn`, `export_outputs`, Adam (slot variables), and
`params["batch_size"]` / `params["use_tpu"]`. Nothing at module level imports
TensorFlow or an estimator package: each side passes its own modules in.
"""
import json
import os
import sys

# The model_dir listing (events files' host and time elided) that parity.py
# compares too; parity.py imports nothing but the standard library.
from parity import listing  # pylint: disable=unused-import

TRAIN_STEPS = 10
RESUME_STEPS = 4
TRAIN_BATCH_SIZE = 8
EVAL_BATCH_SIZE = 4
PREDICT_BATCH_SIZE = 4
ITERATIONS_PER_LOOP = 2
LOG_STEP_COUNT_STEPS = 4   # the rate is logged every 4 / 2 = 2 steps
SAVE_CHECKPOINTS_STEPS = 5
SEED = 7
NUM_ROWS = 32
HOST_CALL_DIR = "host_call"
HOST_CALL_TAG = "host_call_loss"


def rows():
  """(x, y): 32 rows of 3 features and a 3-class label, computed (no randomness)."""
  xs, ys = [], []
  for i in range(NUM_ROWS):
    x = [((i * 7) % 11) / 11.0, ((i * 5) % 13) / 13.0 - 0.5, ((i * 3) % 7) / 7.0]
    xs.append(x)
    ys.append(int(x[0] + x[1] > 0.5) + int(x[2] > 0.6))
  return xs, ys


def input_fn_for(tf, repeat):
  """input_fn(params): batches of params['batch_size'] rows, as TPU programs read them."""

  def input_fn(params):
    x, y = rows()
    dataset = tf.data.Dataset.from_tensor_slices(
        ({"x": tf.constant(x, tf.float32)}, tf.constant(y, tf.int32)))
    if repeat:
      dataset = dataset.repeat()
    return dataset.batch(params["batch_size"], drop_remainder=True)

  return input_fn


def predict_input_fn_for(tf):
  def input_fn(params):
    x, _ = rows()
    return tf.data.Dataset.from_tensor_slices({"x": tf.constant(x[:8], tf.float32)}).batch(
        params["batch_size"])
  return input_fn


def model_fn_for(tf, tpu, export_lib):
  """model_fn(features, labels, mode, params) returning a TPUEstimatorSpec."""

  def model_fn(features, labels, mode, params):
    assert params["use_tpu"] is False, params
    # Seeded initializers: Keras's default draws an unseeded initializer's
    # seed at random (tf.estimator 2.15's runs differed from each other too).
    hidden = tf.compat.v1.layers.dense(
        features["x"], 8, activation=tf.nn.relu, name="hidden",
        kernel_initializer=tf.compat.v1.glorot_uniform_initializer(seed=1))
    logits = tf.compat.v1.layers.dense(
        hidden, 3, name="logits",
        kernel_initializer=tf.compat.v1.glorot_uniform_initializer(seed=2))
    probabilities = tf.nn.softmax(logits)
    classes = tf.argmax(logits, axis=1)
    predictions = {"probabilities": probabilities, "classes": classes}
    if mode == "infer":  # ModeKeys.PREDICT on both sides
      return tpu.TPUEstimatorSpec(
          mode, predictions=predictions,
          export_outputs={"serving_default": export_lib.PredictOutput(predictions),
                          "classes": export_lib.PredictOutput({"classes": classes})})
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    global_step = tf.compat.v1.train.get_global_step()
    # Read before the step's update, so the host_call's step is the step's own.
    step_before = tf.identity(global_step)
    with tf.control_dependencies([step_before]):
      train_op = tf.compat.v1.train.AdamOptimizer(0.05).minimize(loss, global_step)
    model_dir = params["model_dir"]

    def host_call_fn(step, loss_value):
      writer = tf.compat.v2.summary.create_file_writer(os.path.join(model_dir, HOST_CALL_DIR))
      with writer.as_default(), tf.compat.v2.summary.record_if(True):
        tf.compat.v2.summary.scalar(HOST_CALL_TAG, loss_value[0], step=step[0])
        return tf.compat.v1.summary.all_v2_summary_ops()

    def metric_fn(labels, logits, batch_size):
      del batch_size
      return {"accuracy": tf.compat.v1.metrics.accuracy(labels, tf.argmax(logits, 1)),
              "mean_max_probability": tf.compat.v1.metrics.mean(
                  tf.reduce_max(tf.nn.softmax(logits), axis=1))}

    batch = tf.fill([params["batch_size"]], params["batch_size"])
    return tpu.TPUEstimatorSpec(
        mode, loss=loss, train_op=train_op,
        eval_metrics=(metric_fn, {"labels": labels, "logits": logits, "batch_size": batch}),
        host_call=(host_call_fn, [tf.reshape(step_before, [1]), tf.reshape(loss, [1])]),
        scaffold_fn=tf.compat.v1.train.Scaffold)

  return model_fn


def make_estimator(tf, tpu, export_lib, model_dir):
  config = tpu.RunConfig(
      model_dir=model_dir, tf_random_seed=SEED, save_checkpoints_steps=SAVE_CHECKPOINTS_STEPS,
      log_step_count_steps=LOG_STEP_COUNT_STEPS, keep_checkpoint_max=1,
      tpu_config=tpu.TPUConfig(iterations_per_loop=ITERATIONS_PER_LOOP))
  return tpu.TPUEstimator(
      model_fn=model_fn_for(tf, tpu, export_lib), config=config,
      params={"model_dir": model_dir}, use_tpu=False, train_batch_size=TRAIN_BATCH_SIZE,
      eval_batch_size=EVAL_BATCH_SIZE, predict_batch_size=PREDICT_BATCH_SIZE)


def serving_input_receiver_fn_for(tf, export_lib):
  def serving_input_receiver_fn():
    x = tf.compat.v1.placeholder(tf.float32, [None, 3], name="x")
    return export_lib.ServingInputReceiver({"x": x}, {"x": x})
  return serving_input_receiver_fn


# -- what a run is recorded as ----------------------------------------------------------
def to_json(value):
  import numpy as np  # pylint: disable=g-import-not-at-top
  if isinstance(value, dict):
    return {str(k): to_json(v) for k, v in value.items()}
  if isinstance(value, (list, tuple)):
    return [to_json(v) for v in value]
  if isinstance(value, bytes):
    return value.decode()
  if isinstance(value, (np.ndarray, np.generic)):
    return to_json(value.tolist())
  return value


def checkpoint_variables(tf, model_dir):
  """{name: value} of the latest checkpoint (what 2.15 and estimator_lite must agree on)."""
  return {name: to_json(tf.train.load_variable(model_dir, name))
          for name, _ in tf.train.list_variables(model_dir)}


def event_steps(tf, event_dir):
  """{tag: [steps]} of the scalars in one directory's event files (all of them, in order)."""
  found = {}
  for name in sorted(os.listdir(event_dir)):
    if not name.startswith("events.out.tfevents."):
      continue
    for event in tf.compat.v1.train.summary_iterator(os.path.join(event_dir, name)):
      for value in event.summary.value:
        found.setdefault(value.tag, []).append(int(event.step))
  return found


def export_signatures(export_dir):
  """{tag set: {signature: {method, inputs, outputs}}} of a SavedModel, from saved_model.pb."""
  from tensorflow.core.protobuf import saved_model_pb2  # pylint: disable=g-import-not-at-top
  saved_model = saved_model_pb2.SavedModel()
  with open(os.path.join(export_dir, "saved_model.pb"), "rb") as f:
    saved_model.ParseFromString(f.read())
  found = {}
  for meta_graph in saved_model.meta_graphs:
    tags = ",".join(sorted(meta_graph.meta_info_def.tags))
    found[tags] = {
        key: {"method": signature.method_name,
              "inputs": sorted(signature.inputs), "outputs": sorted(signature.outputs)}
        for key, signature in meta_graph.signature_def.items()}
  return found


def export_predictions(tf, export_dir):
  """What the export's default signature returns for the first 4 rows, loaded in TF2.

  `tags`: 2.15 also wrote a 'serve,tpu' MetaGraph, so a load must name one.
  """
  x, _ = rows()
  loaded = tf.saved_model.load(export_dir, tags=["serve"])
  outputs = loaded.signatures["serving_default"](x=tf.constant(x[:4], tf.float32))
  return {key: to_json(value.numpy()) for key, value in outputs.items()}


def run_program(tf, tpu, export_lib, model_dir, export=True):
  """Trains, evaluates, predicts (and exports) in a fresh model_dir; returns the record."""
  estimator = make_estimator(tf, tpu, export_lib, model_dir)
  estimator.train(input_fn_for(tf, repeat=True), max_steps=TRAIN_STEPS)
  record = {
      "evaluate": to_json(estimator.evaluate(input_fn_for(tf, repeat=False))),
      "predict": to_json(list(estimator.predict(predict_input_fn_for(tf)))),
      "variables": checkpoint_variables(tf, model_dir),
      "events": event_steps(tf, model_dir),
      "eval_events": event_steps(tf, os.path.join(model_dir, "eval")),
      "host_call_events": event_steps(tf, os.path.join(model_dir, HOST_CALL_DIR)),
  }
  if export:
    export_dir = estimator.export_saved_model(
        os.path.join(model_dir, "export"), serving_input_receiver_fn_for(tf, export_lib))
    record["export_signatures"] = export_signatures(export_dir.decode())
    record["export_predictions"] = export_predictions(tf, export_dir.decode())
  return record


def read_model_dir(tf, tpu, export_lib, model_dir):
  """Evaluates and predicts a trained model_dir, then resumes it; returns the record."""
  estimator = make_estimator(tf, tpu, export_lib, model_dir)
  record = {"evaluate": to_json(estimator.evaluate(input_fn_for(tf, repeat=False))),
            "predict": to_json(list(estimator.predict(predict_input_fn_for(tf))))}
  estimator.train(input_fn_for(tf, repeat=True), steps=RESUME_STEPS)
  record["resumed_variables"] = checkpoint_variables(tf, model_dir)
  record["resumed_evaluate"] = to_json(estimator.evaluate(input_fn_for(tf, repeat=False)))
  return record


def _reference_modules():
  """TensorFlow 2.15's own: tf, tf.compat.v1.estimator.tpu, tf.estimator.export."""
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return tf, tf.compat.v1.estimator.tpu, tf.estimator.export


if __name__ == "__main__":
  # In the reference venv: python tpu_cases.py read MODEL_DIR  (prints the record as JSON)
  if len(sys.argv) != 3 or sys.argv[1] != "read":
    sys.exit("usage: tpu_cases.py read MODEL_DIR")
  ref_tf, ref_tpu, ref_export = _reference_modules()
  print(json.dumps({"tensorflow_version": ref_tf.__version__,
                    "record": read_model_dir(ref_tf, ref_tpu, ref_export, sys.argv[2])}))
