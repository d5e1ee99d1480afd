"""What the fixture scripts share: values as JSON, a checkpoint's variables, trimming a model_dir.

Imported by the scripts that run in the reference venv (TensorFlow 2.15) and
by the tests that read what they wrote, so each takes the `tf` module it is
to use as an argument and imports nothing of TensorFlow itself.
"""
import os
import shutil


def to_json(value):
  """numpy arrays and scalars, bytes and nested containers of them, as JSON values."""
  if isinstance(value, dict):
    return {str(k): to_json(v) for k, v in value.items()}
  if isinstance(value, (list, tuple)):
    return [to_json(v) for v in value]
  if hasattr(value, "tolist"):
    return to_json(value.tolist())
  if isinstance(value, bytes):
    return value.decode()
  return value


def checkpoint_variables(tf, model_dir):
  """{name: [shape, dtype name]} of the latest checkpoint in model_dir."""
  reader = tf.train.load_checkpoint(model_dir)
  shapes = reader.get_variable_to_shape_map()
  dtypes = reader.get_variable_to_dtype_map()
  return {name: [list(shapes[name]), dtypes[name].name] for name in shapes}


def trim_model_dir(tf, model_dir):
  """Deletes all of model_dir but `checkpoint` and the latest checkpoint's index and data.

  What a reader needs: restoring a canned estimator rebuilds the graph from
  code and reads the variables only (the events, graph.pbtxt and .meta files
  are most of the bytes).
  """
  latest = os.path.basename(tf.train.latest_checkpoint(model_dir))
  keep = {"checkpoint", latest + ".index", latest + ".data-00000-of-00001"}
  for entry in os.listdir(model_dir):
    if entry not in keep:
      path = os.path.join(model_dir, entry)
      if os.path.isdir(path):
        shutil.rmtree(path)
      else:
        os.remove(path)
