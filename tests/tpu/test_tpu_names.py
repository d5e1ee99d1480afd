"""tf.compat.v1.estimator.tpu's names: 2.15's signatures and public members, reached every way a program does.

The signatures and member lists below were read from tf.estimator 2.15 in its
venv (inspect.signature, dir()). The import forms run in fresh interpreters,
as a user's program starts.
"""
import inspect
import os
import subprocess
import sys
import textwrap

import pytest

import estimator_lite as est

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# inspect.signature in tf.estimator 2.15: (name, default) in order; "" = no default.
SIGNATURES_2_15 = {
    "TPUEstimator.__init__": [
        ("self", ""), ("model_fn", None), ("model_dir", None), ("config", None),
        ("params", None), ("use_tpu", True), ("train_batch_size", None),
        ("eval_batch_size", None), ("predict_batch_size", None), ("batch_axis", None),
        ("eval_on_tpu", True), ("export_to_tpu", True), ("export_to_cpu", True),
        ("warm_start_from", None), ("embedding_config_spec", None),
        ("export_saved_model_api_version", "V1")],
    "TPUEstimatorSpec.__new__": [
        ("cls", ""), ("mode", ""), ("predictions", None), ("loss", None), ("train_op", None),
        ("eval_metrics", None), ("export_outputs", None), ("scaffold_fn", None),
        ("host_call", None), ("training_hooks", None), ("evaluation_hooks", None),
        ("prediction_hooks", None)],
    "RunConfig.__init__": [
        ("self", ""), ("tpu_config", None), ("evaluation_master", None), ("master", None),
        ("cluster", None), ("kwargs", "")],
    "TPUConfig.__new__": [
        ("cls", ""), ("iterations_per_loop", 2), ("num_shards", None),
        ("num_cores_per_replica", None), ("per_host_input_for_training", True),
        ("tpu_job_name", None), ("initial_infeed_sleep_secs", None),
        ("input_partition_dims", None), ("eval_training_input_configuration", 2),
        ("experimental_host_call_every_n_steps", 1),
        ("experimental_allow_per_host_v2_parallel_get_next", False),
        ("experimental_feed_hook", None)],
    "experimental.EmbeddingConfigSpec.__new__": [
        ("cls", ""), ("feature_columns", None), ("optimization_parameters", None),
        ("clipping_limit", None), ("pipeline_execution_with_tensor_core", False),
        ("experimental_gradient_multiplier_fn", None), ("feature_to_config_dict", None),
        ("table_to_config_dict", None), ("partition_strategy", "div"),
        ("profile_data_directory", None)],
}
# dir() in 2.15, public names only.
MEMBERS_2_15 = {
    "tpu": ["InputPipelineConfig", "RunConfig", "TPUConfig", "TPUEstimator",
            "TPUEstimatorSpec", "experimental"],
    "TPUEstimator": ["config", "eval_dir", "evaluate", "experimental_export_all_saved_models",
                     "export_saved_model", "export_savedmodel", "get_variable_names",
                     "get_variable_value", "latest_checkpoint", "model_dir", "model_fn",
                     "params", "predict", "train"],
    "TPUEstimatorSpec": ["as_estimator_spec", "count", "eval_metrics", "evaluation_hooks",
                         "export_outputs", "host_call", "index", "loss", "mode",
                         "prediction_hooks", "predictions", "scaffold_fn", "train_op",
                         "training_hooks"],
    "TPUConfig": ["count", "eval_training_input_configuration",
                  "experimental_allow_per_host_v2_parallel_get_next", "experimental_feed_hook",
                  "experimental_host_call_every_n_steps", "index", "initial_infeed_sleep_secs",
                  "input_partition_dims", "iterations_per_loop", "num_cores_per_replica",
                  "num_shards", "per_host_input_for_training", "tpu_job_name"],
    "RunConfig": ["checkpoint_save_graph_def", "cluster", "cluster_spec", "device_fn",
                  "eval_distribute", "evaluation_master", "experimental_max_worker_delay_secs",
                  "global_id_in_cluster", "is_chief", "keep_checkpoint_every_n_hours",
                  "keep_checkpoint_max", "log_step_count_steps", "master", "model_dir",
                  "num_ps_replicas", "num_worker_replicas", "protocol", "replace",
                  "save_checkpoints_secs", "save_checkpoints_steps", "save_summary_steps",
                  "service", "session_config", "session_creation_timeout_secs", "task_id",
                  "task_type", "tf_random_seed", "tpu_config", "train_distribute"],
    "experimental.EmbeddingConfigSpec": [
        "clipping_limit", "count", "experimental_gradient_multiplier_fn", "feature_columns",
        "feature_to_config_dict", "index", "optimization_parameters", "partition_strategy",
        "pipeline_execution_with_tensor_core", "profile_data_directory", "table_to_config_dict",
        "tensor_core_feature_columns"],
    "InputPipelineConfig": ["BROADCAST", "PER_HOST_V1", "PER_HOST_V2", "PER_SHARD_V1", "SLICED"],
}


def _resolve(dotted):
  value = est.compat.v1.tpu
  for part in dotted.split("."):
    value = getattr(value, part)
  return value


@pytest.mark.parametrize("name", sorted(SIGNATURES_2_15))
def test_signatures_are_2_15s(name):
  parameters = inspect.signature(_resolve(name)).parameters.values()
  found = [(p.name, "" if p.default is p.empty else
            getattr(p.default, "name", p.default)) for p in parameters]
  assert found == SIGNATURES_2_15[name]
  assert inspect.getdoc(_resolve(name.rsplit(".", 1)[0]))


@pytest.mark.parametrize("name", sorted(MEMBERS_2_15))
def test_public_members_include_2_15s(name):
  value = est.compat.v1.tpu if name == "tpu" else _resolve(name)
  public = {member for member in dir(value) if not member.startswith("_")}
  missing = sorted(set(MEMBERS_2_15[name]) - public)
  assert not missing, missing


def test_tpu_namespace_is_one_package_everywhere():
  import estimator_lite.tpu  # pylint: disable=g-import-not-at-top
  assert est.compat.v1.tpu is estimator_lite.tpu is est.tpu
  assert est.compat.v1.tpu.experimental.EmbeddingConfigSpec.__name__ == "EmbeddingConfigSpec"


_IMPORT_FORMS = textwrap.dedent("""
    import estimator_lite.tpu as lite_tpu
    {before}
    import tensorflow as tf
    {after}
    from tensorflow.compat.v1.estimator.tpu import (
        InputPipelineConfig, RunConfig, TPUConfig, TPUEstimator, TPUEstimatorSpec)
    from tensorflow.compat.v1.estimator.tpu.experimental import EmbeddingConfigSpec
    from tensorflow.compat.v1.estimator import tpu as tpu_module
    import tensorflow.compat.v1.estimator.tpu
    import tensorflow_estimator as tfe
    from tensorflow_estimator.estimator.tpu import TPUEstimator as tfe_tpu_estimator
    import tensorflow.compat.v1 as v1
    assert TPUEstimator is lite_tpu.TPUEstimator is tfe_tpu_estimator
    assert tf.compat.v1.estimator.tpu.TPUEstimatorSpec is TPUEstimatorSpec is lite_tpu.TPUEstimatorSpec
    assert v1.estimator.tpu.RunConfig is RunConfig is lite_tpu.RunConfig
    assert tfe.estimator.tpu.TPUConfig is TPUConfig is lite_tpu.TPUConfig
    assert tpu_module is lite_tpu and tensorflow.compat.v1.estimator.tpu is lite_tpu
    assert InputPipelineConfig.PER_HOST_V2 == 3
    assert EmbeddingConfigSpec is lite_tpu.experimental.EmbeddingConfigSpec
    assert tf.compat.v1.estimator.tpu.experimental.EmbeddingConfigSpec is EmbeddingConfigSpec
    print("resolved")
""")


@pytest.mark.parametrize("order", ["install_first", "tensorflow_first"])
def test_import_forms_resolve_after_install(run_python, order):
  # install() before TensorFlow is imported, and in a notebook that imported it first.
  install = "import estimator_lite; estimator_lite.install()"
  source = _IMPORT_FORMS.format(before=install if order == "install_first" else "",
                                after=install if order == "tensorflow_first" else "")
  proc = run_python(source, timeout=180)
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert "resolved" in proc.stdout


def _fresh_program(tmp_path):
  """The import forms as a program file, and the environment a user's fresh process has."""
  program = tmp_path / "tpu_program.py"
  program.write_text(_IMPORT_FORMS.format(before="", after=""))
  env = dict(os.environ, PYTHONPATH=REPO_ROOT, TF_CPP_MIN_LOG_LEVEL="2")
  env.pop("TF_USE_LEGACY_KERAS", None)
  return program, env


def _run(command, env, cwd):
  return subprocess.run([sys.executable, *command], cwd=str(cwd), env=env,
                        capture_output=True, text=True, timeout=180, check=False)


def test_import_forms_resolve_under_the_runner_unmodified(tmp_path):
  program, env = _fresh_program(tmp_path)
  proc = _run(["-m", "estimator_lite.run", str(program)], env, tmp_path)
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert "resolved" in proc.stdout


def test_migrate_rewrites_every_form_and_the_program_runs_without_install(tmp_path):
  program, env = _fresh_program(tmp_path)
  migrate = _run(["-m", "estimator_lite.migrate", str(program)], env, tmp_path)
  assert migrate.returncode == 0, migrate.stderr[-3000:]
  assert "could not rewrite" not in migrate.stderr, migrate.stderr
  rewritten = program.read_text()
  assert "tensorflow_estimator" not in rewritten and ".estimator.tpu" not in rewritten, rewritten
  assert "from estimator_lite.tpu import" in rewritten
  proc = _run([str(program)], env, tmp_path)
  assert proc.returncode == 0, proc.stderr[-3000:]
  assert "resolved" in proc.stdout
