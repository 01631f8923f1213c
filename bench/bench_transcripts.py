"""The model bench's corpus as recorded pi sessions with answer keys, for ``longhaul-daemon score`` to replay.

``bench/compare.py --real-model`` scores both compactors on the same sessions the model bench plays live, but
with every turn but the compactions recorded: each ``run`` step is run for real with bash in a scratch git
project holding the bank's files (so failures and values are real output), written as the agent's ``bash``
tool call and its result; each ``say`` step is the user's message and a short recorded reply, now and then
with a rule-like promise of the agent's own. Each stretch ends with the user asking for the long log, its
``cat`` and a reply, the kept window of a compaction entry. The key (FILE.key.json) holds, per compaction,
the rules standing and withdrawn so far, the stretch's failing commands and the values shown so far.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
from pathlib import Path
from typing import Any

from bench_corpus import Session

from longhaul_daemon.evaluation.common import key_path
from longhaul_daemon.evaluation.key import AnswerKey, KeyCommand, KeyCompaction, KeyRule, dump_key
from longhaul_daemon.evaluation.synthetic import SessionWriter

_MODEL = {"api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5"}
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "Bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "Bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    "GIT_AUTHOR_DATE": "2026-11-01T09:00:00Z",
    "GIT_COMMITTER_DATE": "2026-11-01T09:00:00Z",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}
_REPLIES = ("Understood.", "On it.", "Looked into it; the output is above.", "Done.", "Noted.")
_LOG_REQUEST = "Show me the newest log before we pause here."
_LOG_REPLY = "That is the whole log; every job passed."
_COMMAND_TIMEOUT_S = 30


def _project(session: Session, where: Path) -> dict[str, str]:
    """A scratch git project with the session's files, committed once at a fixed date; the env to run in."""
    for name, text in session.files.items():
        path = where / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(where), "LC_ALL": "C", **_GIT_ENV}
    for argv in (
        ["git", "init", "-q", "-b", "main"],
        ["git", "add", "-A"],
        ["git", "commit", "-qm", "Start"],
    ):
        subprocess.run(argv, cwd=where, env=env, check=True, capture_output=True)
    return env


def _run(command: str, cwd: Path, env: dict[str, str]) -> tuple[str, int]:
    done = subprocess.run(
        ["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=_COMMAND_TIMEOUT_S
    )
    return (done.stdout + done.stderr).rstrip("\n") or "(no output)", done.returncode


class _Writer:
    def __init__(self, w: SessionWriter, rng: random.Random) -> None:
        self.w, self.rng, self.calls = w, rng, 0

    @staticmethod
    def _usage() -> dict[str, Any]:
        cost = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
        return {
            "input": 3000,
            "output": 40,
            "cacheRead": 0,
            "cacheWrite": 0,
            "totalTokens": 3040,
            "cost": cost,
        }

    def user(self, text: str) -> str:
        return self.w.message({"role": "user", "content": [{"type": "text", "text": text}]})

    def say(self, text: str) -> None:
        reply = {"role": "assistant", "content": [{"type": "text", "text": text}], **_MODEL}
        self.w.message({**reply, "usage": self._usage(), "stopReason": "stop"})

    def bash(self, command: str, output: str, exit_code: int) -> None:
        self.calls += 1
        call_id = f"toolu_{self.rng.getrandbits(48):012x}{self.calls:03d}"
        block = {"type": "toolCall", "id": call_id, "name": "bash", "arguments": {"command": command}}
        call = {
            "role": "assistant",
            "content": [block],
            **_MODEL,
            "usage": self._usage(),
            "stopReason": "toolUse",
        }
        self.w.message(call)
        text = output if exit_code == 0 else f"{output}\n\nCommand exited with code {exit_code}"
        result = {"role": "toolResult", "toolCallId": call_id, "toolName": "bash", "isError": exit_code != 0}
        self.w.message({**result, "content": [{"type": "text", "text": text}]})


def write_transcript(session: Session, path: Path, scratch: Path) -> AnswerKey:
    """Write ``session`` as a pi session file at ``path``, its commands run in ``scratch``; return the key."""
    rng = random.Random(session.name)
    scratch.mkdir(parents=True, exist_ok=True)
    env = _project(session, scratch)
    keys: list[KeyCompaction] = []
    with path.open("w", encoding="utf-8") as out:
        w = SessionWriter(out, rng, start_ms=1_790_000_000_000)
        session_id = f"0198{rng.getrandbits(16):04x}-{rng.getrandbits(16):04x}-7{rng.getrandbits(12):03x}-8"
        session_id += f"{rng.getrandbits(12):03x}-{rng.getrandbits(48):012x}"
        header = {"type": "session", "version": 3, "id": session_id, "timestamp": w.stamp()[0]}
        w.line({**header, "cwd": str(scratch)})
        w.entry("model_change", provider=_MODEL["provider"], modelId=_MODEL["model"])
        w.entry("thinking_level_change", thinkingLevel="off")
        writer = _Writer(w, rng)
        for n, stretch in enumerate(session.stretches):
            failing: list[KeyCommand] = []
            *body, log = stretch
            # A command runs inside the turn of the user message before it, its reply written after it: an
            # assistant message that ended its turn ("stop") is never followed by a tool call, so a replay
            # (which plays turn by turn) keeps every command.
            reply: str | None = None
            for step in body:
                if step.kind == "say":
                    if reply is not None:
                        writer.say(reply)
                    writer.user(step.text)
                    reply = rng.choice(_REPLIES)
                    if session.promises and rng.random() < 0.15:  # a rule-like sentence nobody gave
                        reply += " " + rng.choice(session.promises)
                    continue
                output, code = _run(step.text, scratch, env)
                writer.bash(step.text, output, code)
                if code != 0:
                    failing.append(KeyCommand(step.text, code))
            if reply is not None:
                writer.say(reply)
            kept = writer.user(_LOG_REQUEST)
            writer.bash(log.text, *_run(log.text, scratch, env))
            writer.say(_LOG_REPLY)
            summary = f"## Goal\nWork on {session.name}, stretch {n + 1}.\n\n## Next Steps\n1. Continue."
            w.entry(
                "compaction",
                summary=summary,
                firstKeptEntryId=kept,
                tokensBefore=6000 * (n + 1),
                fromHook=False,
            )
            keys.append(
                KeyCompaction(
                    n + 1,
                    tuple(KeyRule(r.key, r.words) for r in session.in_force(n)),
                    tuple(KeyRule(r.key, r.words) for r in session.withdrawn(n)),
                    tuple(failing),
                    tuple(session.values(n)),
                )
            )
        writer.user("I am back. Let's carry on where we stopped.")
        writer.say("Picking it up from the notes.")
    key = AnswerKey(compactions=tuple(keys))
    key_path(path).write_text(json.dumps(dump_key(key), indent=2) + "\n", encoding="utf-8")
    return key
