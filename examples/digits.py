"""Train, evaluate, export and serve a digit classifier with estimator_lite.

The data (1,797 8x8 images of handwritten digits) ships inside scikit-learn, so
this runs offline. It is a plain tf.estimator program: only the import changed.

    python examples/digits.py [--model_dir DIR] [--max_steps N]

It trains with `train_and_evaluate`, evaluating on held-out digits at every
checkpoint (five in a run: one every max_steps / 5 steps), exports a
SavedModel, reloads it with `tf.saved_model.load` and predicts from it, then
prints the commands that show what it wrote: `tensorboard` (opened on the
training and evaluation loss curves) and `saved_model_cli` for the export.
The export's two signatures take serialized tf.Example protos, as TensorFlow
Serving's classify and predict APIs send them; the program also writes a
request body for each (docs/serving.md, "Serve the export").
"""
import argparse
import base64
import json
import os
import shlex
import shutil
import sys
import tempfile

# Imported before TensorFlow, as the migration tool places it, so that
# TensorFlow's C++ start-up lines stay out of the output (docs/logs.md).
import estimator_lite as est  # was: tf.estimator
import numpy as np
import tensorflow as tf
from sklearn import datasets

NUM_CLASSES = 10
CLASS_NAMES = [str(digit) for digit in range(NUM_CLASSES)]
NUM_PIXELS = 64
_EVAL_FRACTION = 0.2
# Checkpoints, and so evaluations, per run: enough points for TensorBoard to
# draw evaluation curves, few enough to keep the run short.
_EVALUATIONS = 5
# TensorBoard's time-series dashboard reads its tag filter (a regex) from the
# URL's query: this opens on the loss cards, training and evaluation.
_TENSORBOARD_URL = "http://localhost:6006/?tagFilter=loss#timeseries"
# What a served request carries: one tf.Example per image, its 64 pixels as
# floats under "pixels".
FEATURE_SPEC = {"pixels": tf.io.FixedLenFeature([NUM_PIXELS], tf.float32)}


def load_digits(seed=0):
  """Returns ((train_x, train_y), (eval_x, eval_y)) as float32 / int32 arrays."""
  digits = datasets.load_digits()
  x = (digits.data / 16.0).astype(np.float32)
  y = digits.target.astype(np.int32)
  order = np.random.RandomState(seed).permutation(len(x))
  split = int(len(x) * (1 - _EVAL_FRACTION))
  train, test = order[:split], order[split:]
  return (x[train], y[train]), (x[test], y[test])


def make_input_fn(x, y, batch_size, shuffle, repeat):
  """An input_fn over in-memory arrays (small: embedding them in the graph is fine)."""
  def input_fn(params):
    del params
    dataset = tf.data.Dataset.from_tensor_slices(({"pixels": x}, y))
    if shuffle:
      dataset = dataset.shuffle(len(x), seed=1)
    if repeat:
      dataset = dataset.repeat()
    return dataset.batch(batch_size)
  return input_fn


def model_fn(features, labels, mode, params):
  """A two-layer perceptron written with tf.compat.v1 ops, as TF 1.x programs were."""
  net = features["pixels"]
  for units in params["hidden_units"]:
    net = tf.compat.v1.layers.dense(net, units, activation=tf.nn.relu)
  logits = tf.compat.v1.layers.dense(net, NUM_CLASSES)
  classes = tf.argmax(logits, axis=1, output_type=tf.int32)
  predictions = {"class_ids": classes, "probabilities": tf.nn.softmax(logits)}
  if mode == est.ModeKeys.PREDICT:
    # The export's signatures: "serving_default" classifies (class names and
    # their scores, TensorFlow Serving's classify API), "predict" returns
    # every prediction.
    class_names = tf.tile(tf.constant([CLASS_NAMES]), [tf.shape(logits)[0], 1])
    export_outputs = {
        "serving_default": est.export.ClassificationOutput(
            scores=predictions["probabilities"], classes=class_names),
        "predict": est.export.PredictOutput(predictions),
    }
    return est.EstimatorSpec(mode, predictions=predictions, export_outputs=export_outputs)
  loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
  if mode == est.ModeKeys.EVAL:
    metrics = {"accuracy": tf.compat.v1.metrics.accuracy(labels, classes)}
    return est.EstimatorSpec(mode, loss=loss, eval_metric_ops=metrics)
  optimizer = tf.compat.v1.train.AdamOptimizer(params["learning_rate"])
  train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
  return est.EstimatorSpec(mode, loss=loss, train_op=train_op)


def to_example(pixels):
  """One image as the tf.Example a client sends."""
  return tf.train.Example(features=tf.train.Features(feature={
      "pixels": tf.train.Feature(float_list=tf.train.FloatList(value=pixels))}))


def write_requests(directory, images):
  """Writes request bodies for `images`; returns their paths by name.

  classify.json and predict.json are the JSON bodies TensorFlow Serving's
  REST API takes for the two signatures; examples.txt is the same examples as
  `saved_model_cli run --input_examples` reads them.
  """
  os.makedirs(directory, exist_ok=True)
  examples = [{"pixels": [float(p) for p in image]} for image in images]
  serialized = [to_example(image).SerializeToString() for image in images]
  bodies = {
      "classify.json": {"signature_name": "serving_default", "examples": examples},
      "predict.json": {"signature_name": "predict",
                       "instances": [{"b64": base64.b64encode(s).decode()}
                                     for s in serialized]},
  }
  paths = {}
  for name, body in bodies.items():
    paths[name] = os.path.join(directory, name)
    with open(paths[name], "w") as f:
      json.dump(body, f)
  paths["examples.txt"] = os.path.join(directory, "examples.txt")
  with open(paths["examples.txt"], "w") as f:
    f.write(json.dumps(examples))
  return paths


def tool(name):
  """The command for a tool installed beside this Python (the venv's), else its bare name."""
  path = shutil.which(name, path=os.path.dirname(sys.executable))
  return shlex.quote(path) if path else name


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--model_dir", default=None,
                      help="where checkpoints go (default: a new temporary directory)")
  parser.add_argument("--max_steps", type=int, default=1000)
  args = parser.parse_args()
  tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)
  model_dir = os.path.abspath(args.model_dir or tempfile.mkdtemp(prefix="digits_"))

  (train_x, train_y), (eval_x, eval_y) = load_digits()
  eval_every_steps = max(1, args.max_steps // _EVALUATIONS)
  estimator = est.Estimator(
      model_fn, model_dir=model_dir,
      config=est.RunConfig(save_checkpoints_steps=eval_every_steps, tf_random_seed=42),
      params={"hidden_units": [64, 32], "learning_rate": 0.01})
  # Every checkpoint is evaluated (throttle_secs=0): model_dir/eval holds one
  # point of accuracy and loss per checkpoint, TensorBoard's evaluation curves.
  eval_input_fn = make_input_fn(eval_x, eval_y, 128, shuffle=False, repeat=False)
  metrics, _ = est.train_and_evaluate(
      estimator,
      est.TrainSpec(make_input_fn(train_x, train_y, 64, shuffle=True, repeat=True),
                    max_steps=args.max_steps),
      est.EvalSpec(eval_input_fn, steps=None, start_delay_secs=0, throttle_secs=0))
  trained_nothing = metrics is None
  if trained_nothing:
    # model_dir already held max_steps: train_and_evaluate trained and
    # evaluated nothing (as tf.estimator's did). Evaluate what it holds.
    metrics = estimator.evaluate(eval_input_fn)
  first = next(estimator.predict(make_input_fn(eval_x[:1], None, 1, shuffle=False, repeat=False)))

  # Export, reload the SavedModel as a server would, and predict from it.
  export_dir = estimator.export_saved_model(
      os.path.join(model_dir, "export"),
      est.export.build_parsing_serving_input_receiver_fn(FEATURE_SPEC)).decode()
  served = tf.saved_model.load(export_dir).signatures["predict"](
      examples=tf.constant([to_example(x).SerializeToString() for x in eval_x[:5]]))
  requests = write_requests(os.path.join(model_dir, "requests"), eval_x[:1])

  if trained_nothing:
    print(f"\nTrained nothing: {model_dir} already holds step {metrics['global_step']} "
          f">= --max_steps {args.max_steps}; pass a new --model_dir or a larger --max_steps "
          f"to train more.\nEvaluation of its latest checkpoint on {len(eval_x)} held-out "
          "digits:")
  else:
    print(f"\nEvaluated every {eval_every_steps} steps on {len(eval_x)} held-out digits; "
          "the last evaluation:")
  for key in sorted(metrics):
    print(f"  {key}: {metrics[key]}")
  print(f"First held-out digit: true {eval_y[0]}, predicted {first['class_ids']}")
  print(f"Checkpoints are in {model_dir} (latest: {estimator.latest_checkpoint()})")
  print(f"Exported SavedModel: {export_dir}")
  print(f"Reloaded it and predicted the first 5 held-out digits: "
        f"{served['class_ids'].numpy().tolist()} (true {eval_y[:5].tolist()})")
  print(f"\nSee the training and evaluation curves: run this, then open {_TENSORBOARD_URL}")
  print(f"  {tool('tensorboard')} --logdir {shlex.quote(model_dir)}")
  print("See the export's signatures, and run one on the first held-out digit:")
  print(f"  {tool('saved_model_cli')} show --dir {shlex.quote(export_dir)} --all")
  print(f"  {tool('saved_model_cli')} run --dir {shlex.quote(export_dir)} --tag_set serve "
        f"--signature_def predict --input_examples "
        f"\"examples=$(cat {shlex.quote(requests['examples.txt'])})\"")
  print(f"Request bodies for TensorFlow Serving's REST API: {requests['classify.json']} "
        f"(POST to /v1/models/digits:classify), {requests['predict.json']} "
        f"(POST to /v1/models/digits:predict)")


if __name__ == "__main__":
  main()
