"""A digit classifier trained with TPUEstimator, in the style of the Cloud TPU MNIST sample.

TPU programs of the tf.estimator era (tensorflow/tpu's models/official/mnist/
mnist_tpu.py among them) are written once for a TPU and run on a CPU with
--use_tpu=False: TPUEstimator then falls back to a normal Estimator. This is
such a program. The data are scikit-learn's 1,797 handwritten 8x8 digits
(bundled with scikit-learn, so it runs offline) instead of MNIST's 28x28:

    python mnist_tpu.py --use_tpu=False --model_dir=/tmp/mnist --train_steps=100

Under estimator_lite, unmodified:

    python -m estimator_lite.run mnist_tpu.py --use_tpu=False --model_dir=/tmp/mnist ...

It trains, evaluates --eval_steps batches of the held-out digits, predicts the
first few, and with --results_json writes the evaluation and the predictions
as JSON. --data_file reads the digits from an .npz (arrays "images" and
"target", as load_digits returns them) for a Python without scikit-learn.
"""
import json

from absl import app
from absl import flags
import numpy as np
import tensorflow as tf

# Cloud TPU cluster resolution (used with --use_tpu only).
flags.DEFINE_string("tpu", None, "The Cloud TPU to use for training: its name or grpc:// address.")
flags.DEFINE_string("gcp_project", None, "The GCP project of the Cloud TPU.")
flags.DEFINE_string("tpu_zone", None, "The GCE zone of the Cloud TPU.")

# Model specific parameters.
flags.DEFINE_string("data_file", None,
                    "An .npz with load_digits()' images and target; default: scikit-learn's.")
flags.DEFINE_string("model_dir", None, "Estimator model_dir.")
flags.DEFINE_integer("batch_size", 64, "Mini-batch size for training, evaluation and prediction.")
flags.DEFINE_integer("train_steps", 100, "Total number of training steps.")
flags.DEFINE_integer("eval_steps", 5, "Evaluation batches; 0 skips evaluation.")
flags.DEFINE_float("learning_rate", 0.2, "Learning rate.")
flags.DEFINE_bool("use_tpu", True, "Use TPUs rather than plain CPUs.")
flags.DEFINE_bool("enable_predict", True, "Do some predictions at the end.")
flags.DEFINE_integer("predict_count", 8, "How many held-out digits to predict.")
flags.DEFINE_integer("iterations", 10, "Number of iterations per TPU training loop.")
flags.DEFINE_integer("num_shards", 8, "Number of shards (TPU chips).")
flags.DEFINE_integer("random_seed", 7, "Seed of the shuffling and the initial weights.")
flags.DEFINE_string("results_json", None, "Where to write the evaluation and predictions.")

FLAGS = flags.FLAGS

NUM_CLASSES = 10
IMAGE_SIZE = 8
NUM_EVAL = 360  # the last 360 digits are held out


def load_digits(data_file):
  """(images [N, 8, 8, 1] float32 in [0, 1], labels [N] int32), from data_file or scikit-learn."""
  if data_file:
    with np.load(data_file) as data:
      images, target = data["images"], data["target"]
  else:
    from sklearn import datasets  # pylint: disable=g-import-not-at-top
    digits = datasets.load_digits()
    images, target = digits.images, digits.target
  images = (images / 16.0).astype(np.float32).reshape(-1, IMAGE_SIZE, IMAGE_SIZE, 1)
  return images, target.astype(np.int32)


def dataset(data_file, split):
  """The "train" or "eval" digits as a tf.data.Dataset of (image, label)."""
  images, labels = load_digits(data_file)
  if split == "train":
    images, labels = images[:-NUM_EVAL], labels[:-NUM_EVAL]
  else:
    images, labels = images[-NUM_EVAL:], labels[-NUM_EVAL:]
  return tf.data.Dataset.from_tensor_slices((images, labels))


def create_model(seed):
  """A small convnet for 8x8 digits (MNIST's sample had two 5x5 conv layers for 28x28).

  Each kernel initializer has its own seed. Keras 2 draws an unseeded
  initializer's seed from Python's `random` when the layer is built, so even
  with RunConfig(tf_random_seed) two runs would start from different weights.
  """
  layers = tf.keras.layers

  def kernel_initializer(offset):
    return tf.keras.initializers.GlorotUniform(seed=seed + offset)

  return tf.keras.Sequential([
      layers.Conv2D(16, 3, padding="same", activation=tf.nn.relu,
                    kernel_initializer=kernel_initializer(1),
                    input_shape=(IMAGE_SIZE, IMAGE_SIZE, 1)),
      layers.MaxPooling2D((2, 2), (2, 2), padding="same"),
      layers.Conv2D(32, 3, padding="same", activation=tf.nn.relu,
                    kernel_initializer=kernel_initializer(2)),
      layers.MaxPooling2D((2, 2), (2, 2), padding="same"),
      layers.Flatten(),
      layers.Dense(64, activation=tf.nn.relu, kernel_initializer=kernel_initializer(3)),
      layers.Dropout(0.4),
      layers.Dense(NUM_CLASSES, kernel_initializer=kernel_initializer(4)),
  ])


def metric_fn(labels, logits):
  """Evaluation metric: runs on the host (the CPU) even when training runs on a TPU."""
  predictions = tf.argmax(logits, axis=1)
  return {"accuracy": tf.compat.v1.metrics.accuracy(labels=labels, predictions=predictions)}


def model_fn(features, labels, mode, params):
  """model_fn constructs the ML model used to predict handwritten digits."""
  del params
  image = features
  if isinstance(image, dict):
    image = features["image"]

  model = create_model(FLAGS.random_seed)

  if mode == tf.estimator.ModeKeys.PREDICT:
    logits = model(image, training=False)
    predictions = {
        "class_ids": tf.argmax(logits, axis=1),
        "probabilities": tf.nn.softmax(logits),
    }
    return tf.compat.v1.estimator.tpu.TPUEstimatorSpec(mode, predictions=predictions)

  logits = model(image, training=(mode == tf.estimator.ModeKeys.TRAIN))
  loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)

  if mode == tf.estimator.ModeKeys.TRAIN:
    learning_rate = tf.compat.v1.train.exponential_decay(
        FLAGS.learning_rate, tf.compat.v1.train.get_global_step(), decay_steps=100000,
        decay_rate=0.96)
    optimizer = tf.compat.v1.train.GradientDescentOptimizer(learning_rate=learning_rate)
    if FLAGS.use_tpu:
      optimizer = tf.compat.v1.tpu.CrossShardOptimizer(optimizer)
    return tf.compat.v1.estimator.tpu.TPUEstimatorSpec(
        mode=mode, loss=loss,
        train_op=optimizer.minimize(loss, tf.compat.v1.train.get_global_step()))

  if mode == tf.estimator.ModeKeys.EVAL:
    return tf.compat.v1.estimator.tpu.TPUEstimatorSpec(
        mode=mode, loss=loss, eval_metrics=(metric_fn, [labels, logits]))
  raise ValueError(f"unknown mode {mode}")


def train_input_fn(params):
  """train_input_fn defines the input pipeline used for training."""
  batch_size = params["batch_size"]
  data_file = params["data_file"]
  # Training repeats and shuffles; drop_remainder makes every batch the same
  # static shape, which a TPU requires.
  ds = dataset(data_file, "train").cache().repeat().shuffle(buffer_size=1500)
  return ds.batch(batch_size, drop_remainder=True)


def eval_input_fn(params):
  batch_size = params["batch_size"]
  data_file = params["data_file"]
  return dataset(data_file, "eval").batch(batch_size, drop_remainder=True)


def predict_input_fn(params):
  batch_size = params["batch_size"]
  data_file = params["data_file"]
  # The first held-out images, without labels.
  return (dataset(data_file, "eval").take(FLAGS.predict_count)
          .map(lambda image, label: image).batch(batch_size))


def main(argv):
  del argv  # Unused.
  tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.INFO)

  tpu_cluster_resolver = None
  if FLAGS.use_tpu:
    tpu_cluster_resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
        FLAGS.tpu, zone=FLAGS.tpu_zone, project=FLAGS.gcp_project)

  run_config = tf.compat.v1.estimator.tpu.RunConfig(
      cluster=tpu_cluster_resolver,
      model_dir=FLAGS.model_dir,
      session_config=tf.compat.v1.ConfigProto(allow_soft_placement=True),
      # The loss summary once per TPU loop, and a fixed graph-level seed so
      # that every run starts from the same weights and shuffles alike.
      save_summary_steps=FLAGS.iterations,
      tf_random_seed=FLAGS.random_seed,
      tpu_config=tf.compat.v1.estimator.tpu.TPUConfig(FLAGS.iterations, FLAGS.num_shards),
  )

  estimator = tf.compat.v1.estimator.tpu.TPUEstimator(
      model_fn=model_fn,
      use_tpu=FLAGS.use_tpu,
      train_batch_size=FLAGS.batch_size,
      eval_batch_size=FLAGS.batch_size,
      predict_batch_size=FLAGS.batch_size,
      params={"data_file": FLAGS.data_file},
      config=run_config)
  results = {"tensorflow_version": tf.__version__,
             "estimator_class": f"{type(estimator).__module__}.{type(estimator).__name__}"}

  # TPUEstimator.train *requires* a max_steps argument.
  estimator.train(input_fn=train_input_fn, max_steps=FLAGS.train_steps)
  # TPUEstimator.evaluate *requires* a steps argument.
  # Note that the number of examples used during evaluation is
  # --eval_steps * --batch_size.
  # So if you change --batch_size then change --eval_steps too.
  if FLAGS.eval_steps:
    metrics = estimator.evaluate(input_fn=eval_input_fn, steps=FLAGS.eval_steps)
    tf.compat.v1.logging.info("Evaluation: %s", metrics)
    results["eval"] = {key: float(value) for key, value in metrics.items()}

  # Run prediction on top few samples of test data.
  if FLAGS.enable_predict:
    predictions = estimator.predict(input_fn=predict_input_fn)
    results["predictions"] = []
    for pred_dict in predictions:
      template = 'Prediction is "{}" ({:.1f}%).'
      class_id = int(pred_dict["class_ids"])
      probability = float(pred_dict["probabilities"][class_id])
      tf.compat.v1.logging.info(template.format(class_id, 100 * probability))
      results["predictions"].append({
          "class_ids": class_id,
          "probabilities": [float(p) for p in pred_dict["probabilities"]]})

  if FLAGS.results_json:
    with open(FLAGS.results_json, "w") as f:
      json.dump(results, f, indent=2, sort_keys=True)


if __name__ == "__main__":
  app.run(main)
