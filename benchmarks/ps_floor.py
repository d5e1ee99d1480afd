"""The parameter-server step floor: TensorFlow 2.21 against TensorFlow 2.15.

    python benchmarks/ps_floor.py                    # all three parts, ~15 min on 2 cores
    python benchmarks/ps_floor.py --parts steps      # one part: steps, trace or sweep
    python benchmarks/ps_floor.py --quick            # a smoke run (a minute or two)

The probe is the smallest parameter-server training step there is: a
tf.compat.v1 graph, a linear model (w[10, 1], b[1] and the global step on the
ps through replica_device_setter), batch 32, GradientDescentOptimizer, and
`Session(worker.target)` calling `run(train_op)`. The ps and the worker are
`tf.distribute.Server`s in separate processes (the worker's process also runs
the client, as an estimator worker does). Every run is a fresh pair of
processes on free ports (benchmarks/cluster.py, the harness of every cluster
measurement here); TensorFlow versions are interleaved round by round.

Parts:
  steps  steps/s, per version and layout (ps in its own process, both servers
         in one process, and `Session('')` with no server as a control).
  trace  FULL_TRACE steps: RunMetadata.step_stats split into the client's share
         (wall time minus the traced execution), the ps and worker partitions
         and the RecvTensor RPCs, and the step's critical path, medians.
  sweep  each session/server/gRPC setting in its own fresh run, against two
         default runs of the same round (first and last), so that a setting
         counts as moving the floor only beyond the default-against-default
         spread of the same rounds.

Output: a JSON file (--out, default benchmarks/ps_floor.json) and markdown
tables on stdout. Only the standard library and TensorFlow are used; the
script runs under either interpreter (--py-new, --py-ref name the two).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import cluster as harness  # pylint: disable=g-import-not-at-top,wrong-import-position

READY_TIMEOUT_SECS = 120  # a ps's start-up: import TensorFlow, start its server

# Each setting: name -> (ConfigProto fields as dotted paths, environment, what it is).
# ConfigProto fields go to both servers' default session config (which builds the
# worker's thread pools and gRPC channels) and to the client's Session.
# gRPC logs the experiments it runs with at GRPC_VERBOSITY=DEBUG ("gRPC experiments: ..."):
# it honours these names; the first five are TF 2.21's default-on EventEngine experiments
# that its transport uses, the two more of "_all" are the remaining default-on ones.
_EE_OFF = ("-event_engine_client,-event_engine_listener,-event_engine_dns,"
           "-event_engine_callback_cq,-event_engine_for_all_other_endpoints")
_EE_OFF_ALL = _EE_OFF + ",-event_engine_dns_non_client_channel,-event_engine_secure_endpoint"
SETTINGS: dict[str, tuple[list[tuple[str, Any]], dict[str, str], str]] = {
  "rpc_gzip": ([("rpc_options.compression_algorithm", "gzip"),
                ("rpc_options.compression_level", 1)], {}, "rpc_options compression gzip, level 1"),
  "rpc_no_conn_sharing": ([("rpc_options.disable_session_connection_sharing", True)], {},
                          "rpc_options.disable_session_connection_sharing"),
  "rpc_channels_4": ([("rpc_options.num_channels_per_target", 4)], {},
                     "rpc_options.num_channels_per_target = 4"),
  "rpc_cache_response": ([("rpc_options.cache_rpc_response", True)], {},
                         "rpc_options.cache_rpc_response"),
  "rpc_inprocess_master": ([("rpc_options.use_rpc_for_inprocess_master", True)], {},
                           "rpc_options.use_rpc_for_inprocess_master"),
  "grappler_off": ([("graph_options.rewrite_options.disable_meta_optimizer", True)], {},
                   "graph_options.rewrite_options.disable_meta_optimizer"),
  "opt_level_L0": ([("graph_options.optimizer_options.opt_level", -1)], {},
                   "graph_options.optimizer_options.opt_level = L0"),
  "min_graph_nodes": ([("graph_options.rewrite_options.min_graph_nodes", -1)], {},
                      "graph_options.rewrite_options.min_graph_nodes = -1"),
  "threads_1_1": ([("inter_op_parallelism_threads", 1), ("intra_op_parallelism_threads", 1)], {},
                  "inter_op = intra_op = 1"),
  "threads_2_2": ([("inter_op_parallelism_threads", 2), ("intra_op_parallelism_threads", 2)], {},
                  "inter_op = intra_op = 2"),
  "no_spinning": ([("experimental.disable_thread_spinning", True)], {},
                  "experimental.disable_thread_spinning"),
  "share_cs_state": ([("experimental.share_session_state_in_clusterspec_propagation", True)], {},
                     "experimental.share_session_state_in_clusterspec_propagation"),
  "isolate_state": ([("isolate_session_state", True)], {}, "isolate_session_state"),
  "device_filters": ([("device_filters", ["/job:ps", "/job:worker/task:0"])], {},
                     "device_filters = [/job:ps, /job:worker/task:0]"),
  "static_graph": ([("experimental.optimize_for_static_graph", True)], {},
                   "experimental.optimize_for_static_graph"),
  "env_cache_threads": ([], {"TF_GRPC_WORKER_CACHE_THREADS": "2", "TF_GRPC_WORKER_CACHE_QUEUES": "1"},
                        "TF_GRPC_WORKER_CACHE_THREADS=2, TF_GRPC_WORKER_CACHE_QUEUES=1"),
  "env_onednn_off": ([], {"TF_ENABLE_ONEDNN_OPTS": "0"}, "TF_ENABLE_ONEDNN_OPTS=0"),
  "env_poll": ([], {"GRPC_POLL_STRATEGY": "poll"}, "GRPC_POLL_STRATEGY=poll"),
  "env_latency": ([], {"TF_GRPC_DEFAULT_OPTIONS": "grpc.optimization_target=latency"},
                  "TF_GRPC_DEFAULT_OPTIONS=grpc.optimization_target=latency"),
  "env_no_event_engine": ([], {"GRPC_EXPERIMENTS": _EE_OFF},
                          "GRPC_EXPERIMENTS with the EventEngine experiments off"),
  "env_no_event_engine_all": ([], {"GRPC_EXPERIMENTS": _EE_OFF_ALL},
                              "GRPC_EXPERIMENTS with all seven EventEngine experiments off"),
  "no_spinning_no_ee_all": ([("experimental.disable_thread_spinning", True)], {"GRPC_EXPERIMENTS": _EE_OFF_ALL},
                            "disable_thread_spinning + all seven EventEngine experiments off"),
}
# GRPC_EXPERIMENTS only exists in the gRPC that TF 2.21 bundles.
NEW_ONLY = {"env_no_event_engine", "env_no_event_engine_all", "no_spinning_no_ee_all"}


# ---------------------------------------------------------------------------
# Child processes: the ps server, and the worker (server + client).

def _make_config(tf: Any, fields: list[tuple[str, Any]]) -> Any:
  """A ConfigProto with the dotted fields set; KeyError names a field this TF lacks."""
  config = tf.compat.v1.ConfigProto()
  for path, value in fields:
    msg = config
    parts = path.split(".")
    for i, part in enumerate(parts):
      if part not in msg.DESCRIPTOR.fields_by_name:
        raise KeyError(path)
      if i < len(parts) - 1:
        msg = getattr(msg, part)
    field = msg.DESCRIPTOR.fields_by_name[parts[-1]]
    repeated = getattr(field, "is_repeated", None)  # newer protobuf; .label before
    if repeated if repeated is not None else field.label == field.LABEL_REPEATED:
      getattr(msg, parts[-1]).extend(value)
    else:
      setattr(msg, parts[-1], value)
  return config


def _child_ps(spec: dict[str, Any]) -> None:
  import tensorflow as tf
  try:
    config = _make_config(tf, spec["fields"])
  except KeyError as e:
    print("unsupported " + str(e), flush=True)
    return
  cluster = tf.train.ClusterSpec(spec["cluster"])
  server = tf.distribute.Server(cluster, job_name="ps", task_index=0, config=config, start=True)
  print("ready", flush=True)
  server.join()  # until the harness stops it


def _build(tf: Any, cluster: Any) -> tuple[Any, Any, Any]:
  rng = random.Random(0)
  xs = [[rng.uniform(-1, 1) for _ in range(10)] for _ in range(32)]
  ys = [[sum(x) * 0.3 + 0.1] for x in xs]
  graph = tf.Graph()
  with graph.as_default():
    setter = (tf.compat.v1.train.replica_device_setter(cluster=cluster, worker_device="/job:worker/task:0")
              if cluster is not None else None)
    with tf.compat.v1.device(setter):
      global_step = tf.compat.v1.train.get_or_create_global_step()
      w = tf.compat.v1.get_variable("w", [10, 1], initializer=tf.compat.v1.zeros_initializer())
      b = tf.compat.v1.get_variable("b", [1], initializer=tf.compat.v1.zeros_initializer())
      loss = tf.reduce_mean(tf.square(tf.matmul(tf.constant(xs), w) + b - tf.constant(ys)))
      train_op = tf.compat.v1.train.GradientDescentOptimizer(0.05).minimize(loss, global_step=global_step)
      init = tf.compat.v1.global_variables_initializer()
  return graph, train_op, init


def _op_type(label: str) -> str:
  rhs = label.split(" = ", 1)[1] if " = " in label else label
  return rhs.split("(", 1)[0].strip()


def _analyse(step_stats: Any, wall_us: float) -> dict[str, float]:
  """One traced step: where its time goes (µs). All timestamps share the host clock."""
  nodes: dict[str, list[tuple[str, str, int, int, int]]] = {"ps": [], "worker": []}
  rpcs: dict[str, list[tuple[str, str, int, int]]] = {"ps": [], "worker": []}
  for dev in step_stats.dev_stats:
    job = "ps" if "/job:ps" in dev.device else "worker" if "/job:worker" in dev.device else None
    if job is None:
      continue
    for n in dev.node_stats:
      start, end = n.all_start_micros, n.all_start_micros + n.all_end_rel_micros
      if n.node_name == "RecvTensor":
        # "[40B] [..Mb/s] edge_6_MatMul/ReadVariableOp from /job:ps/... to /job:worker/..."
        label = n.timeline_label
        edge = label.split("] ", 2)[-1].split(" from ", 1)[0]
        producer = edge.split("_", 2)[2] if edge.startswith("edge_") else edge
        src = "ps" if " from /job:ps" in label else "worker"
        rpcs[job].append((producer.split(":")[0], src, start, end))
      else:
        nodes[job].append((n.node_name, _op_type(n.timeline_label), start, end,
                           n.op_end_rel_micros - n.op_start_rel_micros))
  every = [s for job in nodes for (_, _, s, _, _) in nodes[job]] + [s for job in rpcs for (_, _, s, _) in rpcs[job]]
  ends = [e for job in nodes for (_, _, _, e, _) in nodes[job]] + [e for job in rpcs for (_, _, _, e) in rpcs[job]]
  t0, t1 = min(every), max(ends)
  out: dict[str, float] = {"wall": wall_us, "exec_span": t1 - t0, "client_and_master": wall_us - (t1 - t0)}
  end_of = {job: {name: e for (name, _, _, e, _) in nodes[job]} for job in nodes}
  for job in ("worker", "ps"):
    out[f"{job}_nodes"] = len(nodes[job])
    out[f"{job}_op_us"] = sum(op for (*_, op) in nodes[job])
    out[f"{job}_start_offset"] = min(s for (_, _, s, _, _) in nodes[job]) - t0
    out[f"{job}_partition_span"] = max(e for (_, _, _, e, _) in nodes[job]) - min(s for (_, _, s, _, _) in nodes[job])
    out[f"{job}_recvtensor_n"] = len(rpcs[job])
    out[f"{job}_recvtensor_us"] = statistics.median([e - s for (*_, s, e) in rpcs[job]]) if rpcs[job] else 0.0
    # A hop: from the producer's end on the other side to the tensor's arrival, latest tensor.
    other = "ps" if job == "worker" else "worker"
    hops = [e - end_of[other][p] for (p, _, _, e) in rpcs[job] if p in end_of[other]]
    out[f"hop_to_{job}"] = max(hops) if hops else float("nan")
  # The critical path of this step, in order.
  ps_reads_done = max((end_of["ps"][p] for (p, _, _, _) in rpcs["worker"] if p in end_of["ps"]), default=t0)
  worker_inputs = max((e for (*_, e) in rpcs["worker"]), default=ps_reads_done)
  worker_grads = max((end_of["worker"][p] for (p, _, _, _) in rpcs["ps"] if p in end_of["worker"]), default=worker_inputs)
  ps_grads = max((e for (*_, e) in rpcs["ps"]), default=worker_grads)
  out["cp_start_to_ps_reads"] = ps_reads_done - t0
  out["cp_ps_to_worker"] = worker_inputs - ps_reads_done
  out["cp_worker_compute"] = worker_grads - worker_inputs
  out["cp_worker_to_ps"] = ps_grads - worker_grads
  out["cp_ps_apply_to_end"] = t1 - ps_grads
  return out


def _child_worker(spec: dict[str, Any]) -> None:
  import tensorflow as tf
  result: dict[str, Any] = {"tf": tf.__version__}
  try:
    config = _make_config(tf, spec["fields"])
  except KeyError as e:
    print(json.dumps({"tf": tf.__version__, "unsupported": str(e)}))
    return
  layout = spec["layout"]
  if layout == "local":
    cluster, target = None, ""
  else:
    cluster = tf.train.ClusterSpec(spec["cluster"])
    if layout == "one_process":
      tf.distribute.Server(cluster, job_name="ps", task_index=0, config=config, start=True)
    worker = tf.distribute.Server(cluster, job_name="worker", task_index=0, config=config, start=True)
    target = worker.target
  graph, train_op, init = _build(tf, cluster)
  with tf.compat.v1.Session(target, graph=graph, config=config) as sess:
    sess.run(init)
    for _ in range(spec["warmup"]):
      sess.run(train_op)
    t = time.perf_counter()
    for _ in range(spec["steps"]):
      sess.run(train_op)
    result["steps_per_s"] = spec["steps"] / (time.perf_counter() - t)
    if spec["traced"]:
      options = tf.compat.v1.RunOptions(trace_level=tf.compat.v1.RunOptions.FULL_TRACE)
      per_step: list[dict[str, float]] = []
      for _ in range(spec["traced"]):
        meta = tf.compat.v1.RunMetadata()
        t = time.perf_counter()
        sess.run(train_op, options=options, run_metadata=meta)
        wall_us = (time.perf_counter() - t) * 1e6
        per_step.append(_analyse(meta.step_stats, wall_us))
      result["trace"] = {k: statistics.median(s[k] for s in per_step) for k in per_step[0]}
      result["traced_steps"] = len(per_step)
  print(json.dumps(result))


# ---------------------------------------------------------------------------
# The parent: runs, rounds, tables.

def _log_lines(c: harness.Cluster, name: str) -> list[str]:
  with open(c.log_path(name)) as f:
    return [line.strip() for line in f]


def run_once(py: tuple[str, dict[str, str]], layout: str, setting: str | None, warmup: int,
             steps: int, traced: int, timeout: float) -> dict[str, Any]:
  """One fresh run: a ps process (for layout ps_separate) and the worker+client process.

  Args:
    py: the interpreter and its environment (cluster.python_for).
    layout: ps_separate, one_process or local.
    setting: a SETTINGS name, or None for TensorFlow's defaults.
    warmup: untimed steps first.
    steps: timed steps.
    traced: FULL_TRACE steps after them.
    timeout: bound on the worker's run, s.

  Returns:
    The worker's figures, or "error"/"unsupported" saying why there are none.
  """
  fields, extra_env, _ = SETTINGS[setting] if setting else ([], {}, "")
  python, base_env = py
  env = dict(base_env, TF_CPP_MIN_LOG_LEVEL="3", **extra_env)
  record: dict[str, Any] = {"py": python, "layout": layout, "setting": setting or "default"}
  t = time.monotonic()
  with harness.Cluster({"ps": 1, "worker": 1}, prefix="ps_floor_") as c:
    spec = {"cluster": c.spec, "layout": layout, "fields": fields, "warmup": warmup,
            "steps": steps, "traced": traced}
    try:
      if layout == "ps_separate":
        c.start("ps", 0, [python, os.path.abspath(__file__), "_ps", json.dumps(spec)], env)
        c.wait_for(lambda: any(line == "ready" or line.startswith("unsupported")
                               for line in _log_lines(c, "ps0")),
                   timeout=READY_TIMEOUT_SECS, what="the ps's server")
        unsupported = [line for line in _log_lines(c, "ps0") if line.startswith("unsupported")]
        if unsupported:
          record["unsupported"] = unsupported[0].split(" ", 1)[1]
          return record
      c.start("worker", 0, [python, os.path.abspath(__file__), "_worker", json.dumps(spec)], env)
      rc = c.wait_exit("worker0", timeout)
      results = [line for line in _log_lines(c, "worker0") if line.startswith("{")]
      if rc != 0 or not results:
        record["error"] = f"rc {rc}: {c.tail('worker0')[-600:]}"
        return record
      record.update(json.loads(results[-1]))
    except RuntimeError as e:  # a task ended early, or a bound passed
      record["error"] = str(e)[-800:]
    finally:
      record["run_s"] = round(time.monotonic() - t, 1)
  return record


def _med(values: list[float]) -> float:
  values = [v for v in values if v is not None and not math.isnan(v)]
  return statistics.median(values) if values else float("nan")


def _log(msg: str) -> None:
  print(msg, file=sys.stderr, flush=True)


def _in_turns(pys: dict[str, Any], rnd: int) -> list[str]:
  """The versions in the order round `rnd` runs them: alternating, so neither always goes first."""
  return list(pys) if rnd % 2 == 0 else list(pys)[::-1]


def _measure(runs: list[dict[str, Any]], py: tuple[str, dict[str, str]], layout: str, setting: str | None,
             args: argparse.Namespace, steps: int, traced: int, **tags: Any) -> dict[str, Any]:
  """One fresh run, tagged (version, round, ...) and appended to `runs`; returns it."""
  r = run_once(py, layout, setting, args.warmup, steps, traced, args.timeout)
  r.update(tags)
  runs.append(r)
  return r


def part_steps(pys: dict[str, tuple[str, dict[str, str]]], args: argparse.Namespace) -> dict[str, Any]:
  runs: list[dict[str, Any]] = []
  for rnd in range(args.rounds):
    for layout in ("ps_separate", "one_process", "local"):
      steps = args.steps * (4 if layout == "local" else 1)
      for ver in _in_turns(pys, rnd):
        r = _measure(runs, pys[ver], layout, None, args, steps, 0, version=ver, round=rnd)
        _log(f"steps r{rnd} {ver} {layout}: {r.get('steps_per_s', r.get('error'))}")
  return {"runs": runs}


def part_trace(pys: dict[str, tuple[str, dict[str, str]]], args: argparse.Namespace) -> dict[str, Any]:
  runs: list[dict[str, Any]] = []
  for rnd in range(args.trace_rounds):
    for ver in _in_turns(pys, rnd):
      r = _measure(runs, pys[ver], "ps_separate", None, args, args.steps // 2, args.traced,
                   version=ver, round=rnd)
      _log(f"trace r{rnd} {ver}: wall {r.get('trace', {}).get('wall', r.get('error'))}")
  return {"runs": runs}


def part_sweep(pys: dict[str, tuple[str, dict[str, str]]], args: argparse.Namespace) -> dict[str, Any]:
  runs: list[dict[str, Any]] = []
  rng = random.Random(1)
  for ver, rounds in (("new", args.sweep_rounds), ("ref", args.sweep_rounds_ref)):
    if ver not in pys:
      continue
    names = [n for n in (args.settings or list(SETTINGS)) if ver == "new" or n not in NEW_ONLY]
    for rnd in range(rounds):
      order = names[:]
      rng.shuffle(order)
      for slot, name in enumerate([None] + order + [None]):
        r = _measure(runs, pys[ver], "ps_separate", name, args, args.steps, 0,
                     version=ver, round=rnd, slot="default_first" if slot == 0 else
                     "default_last" if name is None else "setting")
        _log(f"sweep {ver} r{rnd} {name or 'default'}: "
             f"{r.get('steps_per_s', r.get('unsupported') or r.get('error'))}")
  return {"runs": runs}


# ---------------------------------------------------------------------------
# Summaries.

def summarize(data: dict[str, Any]) -> str:
  out: list[str] = []
  versions = data["versions"]
  label = {k: f"TF {v}" for k, v in versions.items()}
  if "steps" in data:
    out.append("### Steps/s, median over fresh runs [min–max]\n")
    out.append(f"| layout | {label.get('ref', 'ref')} | {label.get('new', 'new')} | 2.21 / 2.15 |")
    out.append("|---|---|---|---|")
    for layout, text in (("ps_separate", "ps in its own process"), ("one_process", "both servers in one process"),
                         ("local", "no server, `Session('')` (control)")):
      cells, meds = [], {}
      for ver in ("ref", "new"):
        vals = [r["steps_per_s"] for r in data["steps"]["runs"]
                if r["layout"] == layout and r["version"] == ver and "steps_per_s" in r]
        meds[ver] = _med(vals)
        cells.append(f"{meds[ver]:.0f} [{min(vals):.0f}–{max(vals):.0f}] (n={len(vals)})" if vals else "–")
      out.append(f"| {text} | {cells[0]} | {cells[1]} | {meds['new'] / meds['ref']:.2f} |")
    out.append("")
  if "trace" in data:
    rows = [
      ("wall", "wall time of the traced Session.run"),
      ("exec_span", "traced execution: first node start to last node end, all devices"),
      ("client_and_master", "outside execution: client + master + RunGraph dispatch (wall − span)"),
      ("cp_start_to_ps_reads", "critical path 1: start to ps variable reads done"),
      ("cp_ps_to_worker", "critical path 2: ps→worker transfer (reads done → last RecvTensor on worker done)"),
      ("cp_worker_compute", "critical path 3: worker compute (inputs in → gradients done)"),
      ("cp_worker_to_ps", "critical path 4: worker→ps transfer (gradients done → last RecvTensor on ps done)"),
      ("cp_ps_apply_to_end", "critical path 5: ps apply to end of step"),
      ("worker_start_offset", "worker partition's first node after step start"),
      ("ps_start_offset", "ps partition's first node after step start"),
      ("worker_op_us", "worker: op time, sum over nodes"),
      ("ps_op_us", "ps: op time, sum over nodes"),
      ("worker_partition_span", "worker partition span"),
      ("ps_partition_span", "ps partition span"),
      ("worker_recvtensor_us", "RecvTensor RPC on the worker (ps→worker), median per RPC"),
      ("ps_recvtensor_us", "RecvTensor RPC on the ps (worker→ps), median per RPC"),
      ("hop_to_worker", "hop ps→worker: producer end → arrival, latest tensor"),
      ("hop_to_ps", "hop worker→ps: producer end → arrival, latest tensor"),
      ("worker_nodes", "worker: nodes traced / RecvTensor RPCs"),
      ("ps_nodes", "ps: nodes traced / RecvTensor RPCs"),
    ]
    n = {ver: [r for r in data["trace"]["runs"] if r["version"] == ver and "trace" in r] for ver in ("ref", "new")}
    traced = {ver: sum(r.get("traced_steps", 0) for r in n[ver]) for ver in n}
    out.append(f"### One FULL_TRACE step, µs: median over runs of each run's median "
               f"({len(n['ref'])} + {len(n['new'])} runs, {traced['ref']} + {traced['new']} traced steps)\n")
    out.append(f"| | {label.get('ref', 'ref')} | {label.get('new', 'new')} | 2.21 − 2.15 |")
    out.append("|---|---|---|---|")
    for key, text in rows:
      m = {ver: _med([r["trace"][key] for r in n[ver]]) for ver in n}
      if key.endswith("_nodes"):
        rpc = key.replace("_nodes", "_recvtensor_n")
        c = {ver: f"{m[ver]:.0f} / {_med([r['trace'][rpc] for r in n[ver]]):.0f}" for ver in n}
        out.append(f"| {text} | {c['ref']} | {c['new']} | |")
      else:
        out.append(f"| {text} | {m['ref']:.0f} | {m['new']:.0f} | {m['new'] - m['ref']:+.0f} |")
    sps = {ver: _med([r["steps_per_s"] for r in n[ver]]) for ver in n}
    out.append(f"| untraced steps/s in the same runs | {sps['ref']:.0f} | {sps['new']:.0f} | |")
    out.append("")
  if "sweep" in data:
    for ver in ("new", "ref"):
      runs = [r for r in data["sweep"]["runs"] if r["version"] == ver]
      if not runs:
        continue
      rounds = sorted({r["round"] for r in runs})
      defaults: dict[int, list[float]] = {}
      for rnd in rounds:
        defaults[rnd] = [r["steps_per_s"] for r in runs if r["round"] == rnd and r["setting"] == "default"
                         and "steps_per_s" in r]
      noise = [d[1] / d[0] for d in defaults.values() if len(d) == 2]
      band = max((abs(math.log(x)) for x in noise), default=0.0)
      all_defaults = [v for d in defaults.values() for v in d]
      out.append(f"### Settings sweep, {label[ver]}: steps/s of each setting against the mean of the same "
                 f"round's two default runs\n")
      out.append(f"Default runs: {', '.join(f'{v:.0f}' for v in all_defaults)}; default-against-default "
                 f"ratios {', '.join(f'{x:.2f}' for x in noise)}, so the noise band is ×{math.exp(-band):.2f}–"
                 f"×{math.exp(band):.2f}. A setting moves the floor only if every round's ratio lies outside it.\n")
      out.append("| setting | steps/s per round | ratio to same-round default per round | median ratio | verdict |")
      out.append("|---|---|---|---|---|")
      for name in SETTINGS:
        mine = [r for r in runs if r["setting"] == name]
        if not mine:
          continue
        if any("unsupported" in r for r in mine):
          out.append(f"| {SETTINGS[name][2]} | not in this version (`{mine[0]['unsupported']}`) | | | |")
          continue
        errs = [r for r in mine if "steps_per_s" not in r]
        ratios, vals = [], []
        for r in mine:
          if "steps_per_s" in r and len(defaults.get(r["round"], [])) == 2:
            vals.append(r["steps_per_s"])
            ratios.append(r["steps_per_s"] / statistics.mean(defaults[r["round"]]))
        if not ratios:
          out.append(f"| {SETTINGS[name][2]} | failed: {errs[0].get('error', '')[:120]!r} | | | |")
          continue
        lo, hi = math.exp(-band), math.exp(band)
        verdict = ("faster beyond noise" if min(ratios) > hi else "slower beyond noise" if max(ratios) < lo
                   else "within noise")
        out.append(f"| {SETTINGS[name][2]} | {', '.join(f'{v:.0f}' for v in vals)} | "
                   f"{', '.join(f'{x:.2f}' for x in ratios)} | {statistics.median(ratios):.2f} | {verdict} |")
      out.append("")
  return "\n".join(out)


def main() -> None:
  if len(sys.argv) > 2 and sys.argv[1] in ("_ps", "_worker"):
    spec = json.loads(sys.argv[2])
    (_child_ps if sys.argv[1] == "_ps" else _child_worker)(spec)
    return
  p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  p.add_argument("--py-new", help="interpreter with TF 2.21 (default: the project's .venv)")
  p.add_argument("--py-ref", help="interpreter with TF 2.15 (default: the reference venv)")
  p.add_argument("--parts", default="steps,trace,sweep")
  p.add_argument("--rounds", type=int, default=5, help="steps part: rounds (one run per version and layout each)")
  p.add_argument("--trace-rounds", type=int, default=3)
  p.add_argument("--traced", type=int, default=200, help="FULL_TRACE steps per trace run")
  p.add_argument("--sweep-rounds", type=int, default=3, help="sweep rounds on TF 2.21")
  p.add_argument("--sweep-rounds-ref", type=int, default=1, help="sweep rounds on TF 2.15 (0: none)")
  p.add_argument("--settings", help="comma-separated subset of the sweep's settings")
  p.add_argument("--warmup", type=int, default=200)
  p.add_argument("--steps", type=int, default=1000, help="timed steps per run (the control runs 4x as many)")
  p.add_argument("--timeout", type=float, default=240.0, help="bound on one run's worker process, s")
  p.add_argument("--quick", action="store_true", help="smoke run: 1 round each, few steps, 3 settings")
  p.add_argument("--out", default=os.path.join(HERE, "ps_floor.json"))
  args = p.parse_args()
  if args.settings:
    args.settings = args.settings.split(",")
  if args.quick:
    args.rounds = args.trace_rounds = args.sweep_rounds = args.sweep_rounds_ref = 1
    args.traced, args.warmup, args.steps = 20, 50, 300
    args.settings = args.settings or ["rpc_channels_4", "threads_1_1", "env_poll"]
  pys = {}
  for ver, given in (("new", args.py_new), ("ref", args.py_ref)):
    python, env = harness.python_for(reference=ver == "ref")
    pys[ver] = (given or python, env)
  versions = {}
  for ver, (py, env) in pys.items():
    versions[ver] = subprocess.run([py, "-c", "import tensorflow as tf; print(tf.__version__)"], text=True,
                                   capture_output=True, timeout=120, env=dict(env, TF_CPP_MIN_LOG_LEVEL="3"),
                                   check=True).stdout.strip().splitlines()[-1]
  started = time.time()
  data: dict[str, Any] = {
    "command": "python benchmarks/ps_floor.py " + " ".join(sys.argv[1:]),
    "versions": versions, "machine": f"{os.cpu_count()} CPUs, {platform.platform()}",
    "load_before": os.getloadavg(), "args": {k: v for k, v in vars(args).items() if k not in ("py_new", "py_ref")}}
  for part, fn in (("steps", part_steps), ("trace", part_trace), ("sweep", part_sweep)):
    if part in args.parts.split(","):
      data[part] = fn(pys, args)
  data["seconds"] = round(time.time() - started)
  data["load_after"] = os.getloadavg()
  with open(args.out, "w") as f:
    json.dump(data, f, indent=1)
  print(f"Command: `{data['command']}` ({data['seconds']} s); {data['machine']}; "
        f"load {data['load_before'][0]:.2f} before, {data['load_after'][0]:.2f} after\n")
  print(summarize(data))


if __name__ == "__main__":
  main()
