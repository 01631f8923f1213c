"""Stand-ins that answer a replay's tool calls and user commands with what was recorded, running nothing.

REPLAY-2: a replayed tool call must never touch the machine. Two stand-ins make sure of it, both written into
the replay's private directory:

* a pi extension that registers a tool under every name the recording used (pi lets an extension replace a
  built-in tool of the same name), whose ``execute`` returns the recorded result for that tool-call id (or,
  if pi renamed the id, the next unused result of that tool), and whose ``tool_result`` hook restores the
  recorded ``isError``; Longhaul's own tools are left to the shim, since they are part of what is replayed;
* a "shell" set as pi's ``shellPath``, which RPC ``bash`` (a user's ``!command``) runs as ``shell -c CMD``:
  it prints the recorded output of that command and exits with the recorded code.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from longhaul_daemon.evaluation.script import ReplayScript

__all__ = ["OWN_TOOLS", "StandIns", "install_standins"]

OWN_TOOLS = frozenset({"longhaul_remember", "longhaul_recall"})  # the shim registers these itself
RESULTS_ENV = "LONGHAUL_REPLAY_RESULTS"
NAMES_ENV = "LONGHAUL_REPLAY_TOOLS"
BASH_ENV = "LONGHAUL_REPLAY_BASH"
BASH_STATE_ENV = "LONGHAUL_REPLAY_BASH_STATE"

_EXTENSION = """\
// Written by longhaul-daemon replay: answers every tool call with its recorded result (REPLAY-2).
import { Type } from "typebox";
import { readFileSync } from "node:fs";

function load(name: string): any {
  try {
    return JSON.parse(readFileSync(process.env[name] ?? "", "utf8"));
  } catch {
    return undefined;
  }
}

export default function (pi: any) {
  const results: Record<string, any> = load("%(results)s") ?? {};
  const names: string[] = load("%(names)s") ?? [];
  const order = new Map<string, string[]>();
  for (const [id, r] of Object.entries(results)) {
    const list = order.get(r.toolName) ?? [];
    list.push(id);
    order.set(r.toolName, list);
  }
  const used = new Set<string>();
  const answered = new Map<string, any>();
  const pick = (id: string, name: string): any => {
    if (results[id] && !used.has(id)) {
      used.add(id);
      return results[id];
    }
    for (const other of order.get(name) ?? []) {
      if (!used.has(other)) {
        used.add(other);
        return results[other];
      }
    }
    return undefined;
  };
  for (const name of names) {
    pi.registerTool({
      name,
      label: name,
      description: "Replay stand-in: returns the recorded result of this call.",
      parameters: Type.Object({}, { additionalProperties: true }),
      async execute(toolCallId: string) {
        const r = pick(toolCallId, name);
        answered.set(toolCallId, r);
        if (!r) return { content: [{ type: "text", text: "(replay: no recorded result)" }], details: {} };
        return { content: Array.isArray(r.content) ? r.content : [], details: r.details ?? {} };
      },
    });
  }
  pi.on("tool_result", (event: any) => {
    const r = answered.get(event.toolCallId);
    return r ? { isError: r.isError === true } : undefined;
  });
}
"""

_SHELL = """\
#!%(python)s -I
# Written by longhaul-daemon replay: pi's shell for RPC bash; prints the recorded output (REPLAY-2).
import json, os, sys

command = sys.argv[-1] if len(sys.argv) > 2 else ""
try:
    with open(os.environ["%(bash)s"], encoding="utf-8") as f:
        recorded = json.load(f)
    state_path = os.environ["%(state)s"]
    try:
        with open(state_path, encoding="utf-8") as f:
            served = json.load(f)
    except (OSError, ValueError):
        served = {}
    outputs = recorded.get(command) or []
    n = served.get(command, 0)
    result = outputs[min(n, len(outputs) - 1)] if outputs else None
    served[command] = n + 1
    with open(state_path, "w", encoding="utf-8") as f:
        json.dump(served, f)
except (OSError, KeyError, ValueError):
    result = None
if result is None:
    sys.stdout.write("(replay: no recorded output)\\n")
    sys.exit(127)
sys.stdout.write(result["output"])
sys.stdout.flush()
sys.exit(int(result["exitCode"]) & 255)
"""


@dataclass(frozen=True)
class StandIns:
    """The stand-in tool extension and shell for a replay, and the environment that enables them."""

    extension: Path
    shell: Path
    env: dict[str, str]


def _write(path: Path, text: str, mode: int = 0o600) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)


def install_standins(directory: Path, script: ReplayScript) -> StandIns:
    """Write the extension, the shell and their data into ``directory`` (fresh, the replay's own)."""
    results = directory / "tool-results.json"
    names_path = directory / "tool-names.json"
    bash = directory / "bash-results.json"
    state = directory / "bash-served.json"
    called = {c.name for s in script.steps for r in s.replies for c in r.calls}
    names = sorted((called | set(script.tool_names)) - OWN_TOOLS)
    _write(results, json.dumps(script.tool_results))
    _write(names_path, json.dumps(names))
    served = {
        cmd: [{"output": r.output, "exitCode": r.exit_code} for r in rs]
        for cmd, rs in script.bash_results.items()
    }
    _write(bash, json.dumps(served))
    extension = directory / "replay-tools.ts"
    _write(extension, _EXTENSION % {"results": RESULTS_ENV, "names": NAMES_ENV})
    shell = directory / "replay-shell"
    _write(shell, _SHELL % {"python": sys.executable, "bash": BASH_ENV, "state": BASH_STATE_ENV}, 0o700)
    env = {
        RESULTS_ENV: str(results),
        NAMES_ENV: str(names_path),
        BASH_ENV: str(bash),
        BASH_STATE_ENV: str(state),
    }
    return StandIns(extension=extension, shell=shell, env=env)
