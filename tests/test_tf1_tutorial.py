"""A TF1-tutorial program (the layers/Estimator MNIST CNN) runs through estimator_lite.compat.v1.

The program is the TensorFlow 1 "Build a Convolutional Neural Network using
Estimators" tutorial as `tf_upgrade_v2` leaves it, on scikit-learn's bundled
8x8 digits instead of MNIST, with one change: `tf.compat.v1.estimator` became
`estimator_lite.compat.v1`. It runs in its own process, as a user's script.
"""
import json
import os

import numpy as np
import tensorflow as tf

_PROGRAM = r'''
import json
import sys

import numpy as np
import tensorflow as tf                      # imported first, as the tutorial did
from sklearn.datasets import load_digits

import estimator_lite
est = estimator_lite.compat.v1   # was: est = tf.compat.v1.estimator

tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)


def cnn_model_fn(features, labels, mode):
  """Model function for CNN."""
  input_layer = tf.reshape(features["x"], [-1, 8, 8, 1])
  conv1 = tf.compat.v1.layers.conv2d(
      inputs=input_layer, filters=8, kernel_size=[3, 3], padding="same",
      activation=tf.nn.relu)
  pool1 = tf.compat.v1.layers.max_pooling2d(inputs=conv1, pool_size=[2, 2], strides=2)
  conv2 = tf.compat.v1.layers.conv2d(
      inputs=pool1, filters=16, kernel_size=[3, 3], padding="same", activation=tf.nn.relu)
  pool2 = tf.compat.v1.layers.max_pooling2d(inputs=conv2, pool_size=[2, 2], strides=2)
  pool2_flat = tf.reshape(pool2, [-1, 2 * 2 * 16])
  dense = tf.compat.v1.layers.dense(inputs=pool2_flat, units=64, activation=tf.nn.relu)
  dropout = tf.compat.v1.layers.dropout(
      inputs=dense, rate=0.4, training=mode == est.ModeKeys.TRAIN)
  logits = tf.compat.v1.layers.dense(inputs=dropout, units=10)

  predictions = {
      "classes": tf.argmax(input=logits, axis=1),
      "probabilities": tf.nn.softmax(logits, name="softmax_tensor"),
  }
  if mode == est.ModeKeys.PREDICT:
    return est.EstimatorSpec(mode=mode, predictions=predictions)

  loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
  if mode == est.ModeKeys.TRAIN:
    optimizer = tf.compat.v1.train.AdamOptimizer(learning_rate=0.01)
    train_op = optimizer.minimize(loss=loss, global_step=tf.compat.v1.train.get_global_step())
    return est.EstimatorSpec(mode=mode, loss=loss, train_op=train_op)

  eval_metric_ops = {
      "accuracy": tf.compat.v1.metrics.accuracy(labels=labels,
                                                predictions=predictions["classes"])}
  return est.EstimatorSpec(mode=mode, loss=loss, eval_metric_ops=eval_metric_ops)


def serving_input_receiver_fn():
  images = tf.compat.v1.placeholder(tf.float32, [None, 64], name="images")
  return est.export.ServingInputReceiver({"x": images}, {"x": images})


def main(model_dir):
  digits = load_digits()
  data = (digits.data / 16.0).astype(np.float32)
  labels = digits.target.astype(np.int32)
  train_data, eval_data = data[:1400], data[1400:]
  train_labels, eval_labels = labels[:1400], labels[1400:]

  mnist_classifier = est.Estimator(
      model_fn=cnn_model_fn, model_dir=model_dir,
      config=est.RunConfig(tf_random_seed=1, save_checkpoints_steps=200))
  logging_hook = tf.compat.v1.train.LoggingTensorHook(
      tensors={"probabilities": "softmax_tensor"}, every_n_iter=200)

  train_input_fn = est.inputs.numpy_input_fn(
      x={"x": train_data}, y=train_labels, batch_size=100, num_epochs=None, shuffle=True)
  eval_input_fn = est.inputs.numpy_input_fn(
      x={"x": eval_data}, y=eval_labels, num_epochs=1, shuffle=False)
  train_spec = est.TrainSpec(input_fn=train_input_fn, max_steps=400,
                                   hooks=[logging_hook])
  eval_spec = est.EvalSpec(
      input_fn=eval_input_fn, steps=None, throttle_secs=0,
      exporters=[est.FinalExporter("digits", serving_input_receiver_fn)])
  eval_results, export_results = est.train_and_evaluate(
      mnist_classifier, train_spec, eval_spec)

  export_dir = mnist_classifier.export_savedmodel(
      model_dir + "/export/v1_name", serving_input_receiver_fn)
  predict_input_fn = est.inputs.numpy_input_fn(
      x={"x": eval_data[:50]}, num_epochs=1, shuffle=False)
  classes = [int(p["classes"]) for p in mnist_classifier.predict(predict_input_fn)]
  print(json.dumps({
      "accuracy": float(eval_results["accuracy"]),
      "global_step": int(eval_results["global_step"]),
      "final_export": export_results[0].decode(),
      "final_export_type": type(export_results[0]).__name__,
      "export_dir": export_dir.decode(),
      "export_dir_type": type(export_dir).__name__,
      "classes": classes,
  }))


main(sys.argv[1])
'''


def _last_json_line(completed):
  assert completed.returncode == 0, (
      f"program failed (rc {completed.returncode}):\n{completed.stdout[-3000:]}\n"
      f"{completed.stderr[-6000:]}")
  lines = [line for line in completed.stdout.splitlines() if line.startswith("{")]
  assert lines, f"no result printed:\n{completed.stdout}\n{completed.stderr[-6000:]}"
  return json.loads(lines[-1])


def test_tf1_cnn_tutorial_trains_evaluates_exports_and_serves(tmp_path, run_python):
  from sklearn.datasets import load_digits  # pylint: disable=g-import-not-at-top
  model_dir = tmp_path / "mnist_convnet_model"
  result = _last_json_line(run_python(_PROGRAM, model_dir, timeout=240))

  assert result["global_step"] == 400
  assert result["accuracy"] > 0.85  # 397 held-out digits
  # The FinalExporter ran on the last evaluation: model_dir/export/digits/<version>.
  final_export = result["final_export"]
  assert os.path.dirname(final_export) == str(model_dir / "export" / "digits")
  assert os.path.basename(final_export).isdigit()
  # export_savedmodel (the v1 name) exported the same model; both paths are
  # bytes, as tf.estimator returned them.
  assert result["export_dir_type"] == result["final_export_type"] == "bytes"
  assert os.path.dirname(result["export_dir"]) == str(model_dir / "export" / "v1_name")

  digits = load_digits()
  images = (digits.data[1400:1450] / 16.0).astype(np.float32)
  for export_dir in (final_export, result["export_dir"]):
    loaded = tf.saved_model.load(export_dir)
    serve = loaded.signatures["serving_default"]
    outputs = serve(x=tf.constant(images))  # the receiver_tensors key
    np.testing.assert_allclose(outputs["probabilities"].numpy().sum(axis=1), 1.0, rtol=1e-5)
    # The served model predicts what Estimator.predict did (dropout is off).
    assert outputs["classes"].numpy().tolist() == result["classes"]
  assert np.mean(np.array(result["classes"]) == digits.target[1400:1450]) > 0.8
