"""Runs every shell command README.md gives, as written, from the checkout's root.

    python3 .ci/readme_commands.py [--readme README.md] [--dry-run]

README's ```bash blocks are run in order, in one bash session
(`set -euo pipefail`), as a user pasting them one after the other would:
what an earlier command sets or writes, a later one may use, and nothing else
is set. Three kinds of command are not run exactly as written, and each says
so when it runs:

- a server that runs until Ctrl-C (`mkdocs serve`, `tensorboard`) runs as
  written in the background until it answers HTTP on its port, then is
  stopped;
- the test commands (`... -m pytest ...`) run with `--collect-only -qq` added:
  the options and tiers are checked here, and .ci/run's pytest stages run the
  same command in full;
- the commands in SMALLER run with the smaller arguments given there, which
  train for fewer steps.

Exits non-zero at the first command that fails, naming its README line.
"""
import argparse
import dataclasses
import os
import re
import shlex
import subprocess
import sys
from typing import List, Tuple

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (pattern, replacement, why): applied to a README command before it runs.
SMALLER: List[Tuple[str, str, str]] = []

# A command that serves until stopped, the port it serves on, and a text its
# first page holds (so that another server on that port does not pass).
_SERVERS = ((re.compile(r"\bmkdocs serve\b"), 8000, "estimator_lite"),
            (re.compile(r"\btensorboard\b.*--logdir"), 6006, "TensorBoard"))
# Prints the page at a URL (argv[1]); fails if it cannot (curl may be missing).
_FETCH = ("python3 -c 'import sys, urllib.request; "
          "sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())'")
_PYTEST = re.compile(r"(-m pytest\b[^&|;]*)")
_SERVER_WAIT_SECS = 120


@dataclasses.dataclass(frozen=True)
class Command:
  """One shell command of README (continuation lines joined) and its first line number."""
  line: int
  text: str


def readme_commands(path: str) -> List[Command]:
  """The commands of every ```bash block of the markdown file at `path`, in order."""
  commands = []
  in_bash = False
  pending, start = "", 0
  with open(path, encoding="utf-8") as f:
    for number, raw in enumerate(f, 1):
      line = raw.rstrip("\n")
      if line.startswith("```"):
        in_bash = (not in_bash) and line.strip() in ("```bash", "```sh", "```shell")
        continue
      if not in_bash:
        continue
      stripped = line.strip()
      if not pending and (not stripped or stripped.startswith("#")):
        continue
      if not pending:
        start = number
      if stripped.endswith("\\"):
        pending += stripped[:-1] + " "
        continue
      commands.append(Command(start, pending + stripped))
      pending = ""
  return commands


def _server(text: str):
  """(port, expected text) if `text` starts a server, else None."""
  for pattern, port, expected in _SERVERS:
    if pattern.search(text):
      return port, expected
  return None


def as_run(command: Command) -> Tuple[str, str]:
  """(bash text to run, a note on how it differs from README's, or '')."""
  text = command.text
  for pattern, replacement, why in SMALLER:
    if re.search(pattern, text):
      return re.sub(pattern, replacement, text), f"smaller: {why}"
  server = _server(text)
  if server is not None:
    port, expected = server
    wait = (f"ok=; for _ in $(seq {_SERVER_WAIT_SECS}); do "
            f"if {_FETCH} http://127.0.0.1:{port}/ 2>/dev/null | grep -q {shlex.quote(expected)}; "
            f"then ok=1; break; fi; "
            f"kill -0 $server 2>/dev/null || break; sleep 1; done")
    bash = (f"( {text} ) & server=$!; {wait}; "
            f"pkill -P $server 2>/dev/null || true; kill $server 2>/dev/null || true; "
            f"wait $server 2>/dev/null || true; "
            f"[ -n \"$ok\" ] || {{ echo 'it did not answer on port {port}' >&2; false; }}")
    return bash, f"a server: run until it answers on port {port}, then stopped"
  if _PYTEST.search(text):
    return (_PYTEST.sub(lambda m: m.group(1).rstrip() + " --collect-only -qq ", text),
            "tests: collected only (.ci/run's pytest stages run them)")
  return text, ""


def script(commands: List[Command]) -> str:
  parts = ["set -euo pipefail"]
  for command in commands:
    bash, note = as_run(command)
    banner = f"== README.md:{command.line}: {command.text}" + (f"\n   ({note})" if note else "")
    parts.append(f"echo {shlex.quote(banner)}")
    parts.append(f"README_LINE={command.line}")
    parts.append(bash)
  parts.append("echo '== every README command ran'")
  return "\n".join(parts) + "\n"


def main() -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--readme", default=os.path.join(_ROOT, "README.md"))
  parser.add_argument("--dry-run", action="store_true", help="print the bash script, run nothing")
  args = parser.parse_args()
  commands = readme_commands(args.readme)
  if not commands:
    print(f"{args.readme} has no ```bash commands", file=sys.stderr)
    return 1
  text = script(commands)
  if args.dry_run:
    print(text)
    return 0
  # On failure, bash's ERR trap names the README line whose command failed.
  trap = "trap 'echo \"FAILED: README.md line $README_LINE\" >&2' ERR\n"
  return subprocess.run(["bash", "-c", trap + text], cwd=_ROOT, check=False).returncode


if __name__ == "__main__":
  sys.exit(main())
