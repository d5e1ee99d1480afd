"""What each task of a launched cluster is doing, read from the lines it logs.

The launcher sees every line its tasks print; tf.estimator's INFO log lines
(and estimator_lite's) say the global step ("loss = ..., step = N"), the
speed ("global_step/sec: X"), the evaluations ("Saving dict for global step
N: ..."), the model_dir and the exports; estimator_lite's "Trained N steps in
this process." at the end of train() says the task's own steps, which the
shared global step does not (while it trains, its "loss = ..." lines, one
every log_step_count_steps of its own runs, bound them from below); "Skipping training since max_steps has already
saved" says the model_dir was already finished. Reading them costs the tasks
nothing: no extra fetch or file per step. A program that does not log at
INFO shows its state and pid only.

Imports nothing heavy: the launcher starts without TensorFlow.
"""
from __future__ import annotations

import re
from typing import Callable, Dict, List, Optional, Sequence, Tuple

_Rule = Tuple["re.Pattern[str]", Callable[["TaskStatus", "re.Match[str]"], None]]

_MIN_RATE_SECS = 1.0
_METRIC = re.compile(r"([\w/.-]+) = ([^,]+)")


def _short_metrics(text: str) -> str:
  """'global_step = 500, loss = 3.77645e-13, rmse = 6.1e-07' -> 'loss=3.776e-13 rmse=6.1e-07'."""
  parts = []
  for key, value in _METRIC.findall(text):
    if key == "global_step":
      continue
    try:
      value = f"{float(value):.4g}"
    except ValueError:
      value = value.strip()
    parts.append(f"{key}={value}")
  return " ".join(parts)


class TaskStatus:
  """One task's state as its log tells it.

  Attributes:
    name: "job:index".
    pid: the task's process id.
    state: a word or two: starting, training, serving, evaluating, ...
    step: the latest global step it logged, or None.
    own_steps: the steps the task trained itself, once its train() ended
      (0 if it skipped training), or None.
    own_steps_at_most: own_steps is an upper bound: the task ran loops of up
      to RunConfig.steps_per_loop steps, and counted loops.
    own_steps_at_least: while it trains, a lower bound of its own steps, from
      how many "loss = ..." lines it logged (one every
      RunConfig.log_step_count_steps of its own Session.runs, the first after
      its first), or None.
    steps_per_sec: its latest global_step/sec, or None.
    last_eval: "step N: key=value ..." of its latest evaluation, or None.
    model_dir: the model_dir it named, or None.
    exports: the export directories it wrote.
    finished_model_dir: (global step, max_steps) when the task skipped
      training because model_dir already held max_steps (either is None if
      the line did not say it), else None.
  """

  def __init__(self, name: str, pid: int) -> None:
    self.name = name
    self.pid = pid
    self.state = "starting"
    self.step: Optional[int] = None
    self.own_steps: Optional[int] = None
    self.own_steps_at_most = False
    self.steps_per_sec: Optional[float] = None
    self.last_eval: Optional[str] = None
    self.model_dir: Optional[str] = None
    self.exports: List[str] = []
    self.finished_model_dir: Optional[Tuple[Optional[int], Optional[int]]] = None
    self._now = 0.0
    self._rate_base: Optional[Tuple[int, float]] = None
    # From its "Using config: RunConfig(...)" line: its loss log's cadence in
    # Session.runs, and the steps a run trains.
    self._runs_per_loss_line: Optional[int] = None
    self._steps_per_run = 1
    self._loss_lines = 0

  def observe(self, line: str, now: float) -> None:
    """Updates the status from one line the task printed, read at time `now` (seconds)."""
    self._now = now
    for pattern, update in _RULES:
      match = pattern.search(line)
      if match:
        update(self, match)
        return

  def set_loss_log_cadence(self, runs_per_line: Optional[int], steps_per_run: int) -> None:
    """Notes how often the task logs its loss (Session.runs), and the steps a run trains."""
    self._runs_per_loss_line = runs_per_line
    self._steps_per_run = steps_per_run

  def count_loss_line(self) -> None:
    """Counts one "loss = ..." line: the task ran at least that many of its own runs."""
    self._loss_lines += 1

  @property
  def own_steps_at_least(self) -> Optional[int]:
    """While it trains, a lower bound of its own steps from its loss lines, or None."""
    # With loops, a run trains up to steps_per_loop steps: no lower bound in steps.
    if not (self._loss_lines and self._runs_per_loss_line and self._steps_per_run == 1):
      return None
    return (self._loss_lines - 1) * self._runs_per_loss_line + 1

  def record_step(self, step: int, state: Optional[str] = None) -> None:
    """Notes a global step the task logged (steps only go up), and its new state.

    Only the chief logs global_step/sec; for the others the speed is the
    global step's progress between two of their lines at least
    _MIN_RATE_SECS apart.
    """
    if self._rate_base is None:
      self._rate_base = (step, self._now)
    else:
      base_step, base_time = self._rate_base
      if self._now - base_time >= _MIN_RATE_SECS and step > base_step:
        self.steps_per_sec = (step - base_step) / (self._now - base_time)
        self._rate_base = (step, self._now)
    self.step = step if self.step is None else max(self.step, step)
    if state:
      self.state = state


def _state(state: str) -> Callable[[TaskStatus, "re.Match[str]"], None]:
  def update(task: TaskStatus, match: "re.Match[str]") -> None:
    del match
    task.state = state
  return update


def _on_loss_line(task: TaskStatus, match: "re.Match[str]") -> None:
  task.record_step(int(match.group(1)), "training")
  task.count_loss_line()


def _on_config(task: TaskStatus, match: "re.Match[str]") -> None:
  every, steps_per_loop = match.group(1, 2)
  task.set_loss_log_cadence(None if every == "None" else int(every),
                            int(steps_per_loop) if steps_per_loop else 1)


def _on_speed(task: TaskStatus, match: "re.Match[str]") -> None:
  task.steps_per_sec = float(match.group(1))


def _on_checkpoint(task: TaskStatus, match: "re.Match[str]") -> None:
  task.record_step(int(match.group(1)))
  task.model_dir = match.group(2)


def _on_eval_result(task: TaskStatus, match: "re.Match[str]") -> None:
  task.last_eval = f"step {match.group(1)}: {_short_metrics(match.group(2))}"
  task.state = "evaluated"


def _on_evaluator_start(task: TaskStatus, match: "re.Match[str]") -> None:
  task.model_dir = match.group(1)
  task.state = "waiting for checkpoints"


def _on_export(task: TaskStatus, match: "re.Match[str]") -> None:
  task.exports.append(match.group(1))


def _on_own_steps(task: TaskStatus, match: "re.Match[str]") -> None:
  runs, steps_per_loop = match.group(1, 2)
  task.own_steps = int(runs) * (int(steps_per_loop) if steps_per_loop else 1)
  task.own_steps_at_most = steps_per_loop is not None


def _on_skipped_training(task: TaskStatus, match: "re.Match[str]") -> None:
  step, max_steps = match.group(1, 2)
  task.finished_model_dir = (None if step is None else int(step),
                             None if max_steps is None else int(max_steps))
  if step is not None:
    task.record_step(int(step))
  task.own_steps = 0
  task.state = "nothing left to train"


_RULES: Sequence[_Rule] = (
    (re.compile(r"loss = [^,]+, step = (\d+)"), _on_loss_line),
    (re.compile(r"Using config: RunConfig\(.*\blog_step_count_steps=(\d+|None)"
                r"(?:.*\bsteps_per_loop=(\d+))?"), _on_config),
    (re.compile(r"global_step/sec: ([-+.\deE]+)"), _on_speed),
    (re.compile(r"Saving checkpoints for (\d+) into (.+)/model\.ckpt"), _on_checkpoint),
    (re.compile(r"Saving dict for global step (\d+): (.*)"), _on_eval_result),
    (re.compile(r"Starting evaluation at "), _state("evaluating")),
    (re.compile(r"Evaluating new checkpoints in (.+?) (every|at|when)"), _on_evaluator_start),
    (re.compile(r"Exported SavedModel \(.*\) from checkpoint \S+ to (\S+) in "), _on_export),
    (re.compile(r"Waiting \S+ secs before starting training"), _state("start delay")),
    (re.compile(r"waiting for .* to join before the first step"), _state("waiting for workers")),
    (re.compile(r"joined the launched cluster; training starts"), _state("training")),
    (re.compile(r"ps task serving variables"), _state("serving")),
    # tf.estimator's text, with estimator_lite's "(global step N >= max_steps M)".
    (re.compile(r"Skipping training since max_steps has already saved"
                r"(?:.*global step (\d+) >= max_steps (\d+))?"), _on_skipped_training),
    (re.compile(r"Trained (\d+) (?:steps|loops of up to (\d+) steps) in this process\."),
     _on_own_steps),
    (re.compile(r"Loss for final step: "), _state("trained")),
    (re.compile(r"Exiting evaluation"), _state("done evaluating")),
)


class ClusterStatus:
  """The status of every task of a launched cluster."""

  def __init__(self) -> None:
    self.tasks: Dict[str, TaskStatus] = {}

  def add(self, name: str, pid: int) -> None:
    self.tasks[name] = TaskStatus(name, pid)

  def observe(self, name: str, line: str, now: float) -> None:
    """Feeds one line that task `name` printed, read at time `now` (seconds)."""
    task = self.tasks.get(name)
    if task is not None:
      task.observe(line, now)

  def model_dir(self) -> Optional[str]:
    """The model_dir the tasks named (the chief's first), or None."""
    named = [t.model_dir for t in self.tasks.values() if t.model_dir]
    return named[0] if named else None

  def exports(self) -> List[str]:
    return [path for t in self.tasks.values() for path in t.exports]

  def last_eval(self) -> Optional[str]:
    evals = [t.last_eval for t in self.tasks.values() if t.last_eval]
    return evals[-1] if evals else None

  def finished_model_dir(self) -> Optional[Tuple[Optional[int], Optional[int]]]:
    """(global step, max_steps) if a task trained nothing because model_dir was finished."""
    for task in self.tasks.values():
      if task.finished_model_dir is not None:
        return task.finished_model_dir
    return None

  def table(self, exit_states: Dict[str, str]) -> List[str]:
    """The status table's lines; `exit_states` overrides the state of tasks that ended."""
    rows = [("task", "pid", "state", "own steps", "global step", "steps/s", "last evaluation")]
    for task in self.tasks.values():
      rows.append((task.name, str(task.pid), exit_states.get(task.name, task.state),
                   _own_steps_cell(task),
                   "-" if task.step is None else str(task.step),
                   "-" if task.steps_per_sec is None else f"{task.steps_per_sec:.1f}",
                   task.last_eval or "-"))
    widths = [max(len(row[i]) for row in rows) for i in range(6)]
    lines = []
    for row in rows:
      cells = [row[0].ljust(widths[0]), row[1].rjust(widths[1]), row[2].ljust(widths[2]),
               *(cell.rjust(width) for cell, width in zip(row[3:6], widths[3:6])), row[6]]
      lines.append("  ".join(cells).rstrip())
    return lines


def _own_steps_cell(task: TaskStatus) -> str:
  """The task's own steps: exact once its train() ended ("<=N" for loops), ">=N" while it trains."""
  if task.own_steps is None:
    return "-" if task.own_steps_at_least is None else f">={task.own_steps_at_least}"
  return f"<={task.own_steps}" if task.own_steps_at_most else str(task.own_steps)
