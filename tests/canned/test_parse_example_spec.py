"""classifier_parse_example_spec, regressor_parse_example_spec: tf.estimator 2.15's specs, texts."""
import pytest
import tensorflow as tf

import estimator_lite as est

fc = tf.feature_column


def _columns():
  price = fc.numeric_column("price")
  return [price, fc.bucketized_column(price, [1.0, 10.0]),
          fc.crossed_column(["city", fc.bucketized_column(price, [5.0])], 20)]


def test_classifier_spec_adds_label_and_weight():
  spec = est.classifier_parse_example_spec(_columns(), label_key="clicked",
                                           label_dtype=tf.string, weight_column="w")
  assert spec == {
      "price": tf.io.FixedLenFeature((1,), tf.float32),
      "city": tf.io.VarLenFeature(tf.string),
      "clicked": tf.io.FixedLenFeature((1,), tf.string),
      "w": tf.io.FixedLenFeature((1,), tf.float32),
  }
  assert est.compat.v1.classifier_parse_example_spec is est.classifier_parse_example_spec


def test_regressor_spec_label_dimension_default_and_numeric_weight_column():
  spec = est.regressor_parse_example_spec(
      [fc.numeric_column("x")], label_key="y", label_default=0.0, label_dimension=3,
      weight_column=fc.numeric_column("w", dtype=tf.float64))
  assert spec == {
      "x": tf.io.FixedLenFeature((1,), tf.float32),
      "y": tf.io.FixedLenFeature((3,), tf.float32, 0.0),
      "w": tf.io.FixedLenFeature((1,), tf.float64),
  }


def test_the_spec_parses_examples_a_classifier_trains_on(tmp_path):
  columns = [fc.numeric_column("x"),
             fc.categorical_column_with_vocabulary_list("c", ["a", "b"])]
  spec = est.classifier_parse_example_spec(columns, label_key="label", label_default=0)
  records = [tf.train.Example(features=tf.train.Features(feature={
      "x": tf.train.Feature(float_list=tf.train.FloatList(value=[float(k)])),
      "c": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"ab"[k % 2:k % 2 + 1]])),
      **({"label": tf.train.Feature(int64_list=tf.train.Int64List(value=[1]))}
         if k % 2 else {})})).SerializeToString() for k in range(4)]

  def input_fn():
    dataset = tf.data.Dataset.from_tensors(tf.constant(records)).repeat()
    parsed = dataset.map(lambda batch: tf.io.parse_example(batch, spec))
    return parsed.map(lambda features: (features, features.pop("label")))

  classifier = est.LinearClassifier(columns, model_dir=str(tmp_path))
  classifier.train(input_fn, steps=20)
  assert classifier.evaluate(input_fn, steps=1)["accuracy"] == 1.0


def test_errors_keep_tf_estimator_texts():
  with pytest.raises(ValueError, match="label should not be used as feature. label_key: price"):
    est.classifier_parse_example_spec(_columns(), label_key="price")
  with pytest.raises(ValueError, match="weight_column should not be used as feature. "
                     "weight_column: city"):
    est.regressor_parse_example_spec(_columns(), label_key="y", weight_column="city")
  with pytest.raises(ValueError, match="weight_column should be an instance of "
                     "tf.feature_column.numeric_column"):
    est.classifier_parse_example_spec(_columns(), label_key="y",
                                      weight_column=fc.categorical_column_with_identity("w", 2))
  with pytest.raises(ValueError, match="All feature_columns must be FeatureColumn instances"):
    est.classifier_parse_example_spec(["price"], label_key="y")


def test_v1_only_columns_take_the_v1_path():
  with tf.Graph().as_default():
    shared = tf.compat.v1.feature_column.shared_embedding_columns(
        [fc.categorical_column_with_identity("i", 3)], 2)
  spec = est.compat.v1.regressor_parse_example_spec(shared, label_key="y")
  assert spec == {"i": tf.io.VarLenFeature(tf.int64),
                  "y": tf.io.FixedLenFeature((1,), tf.float32)}
