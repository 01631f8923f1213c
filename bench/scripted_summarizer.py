"""A scripted summarizer that reads both compactors' prompts the same way, for the bench and the score tests.

The bench compares the two compactors without a real model, so something must answer pi's summarization
prompt and Longhaul's Diff prompt. This model is deliberately plain and deliberately the same on both sides:
it takes a user message as a rule when it holds a rule word or phrase (never, always, don't, must, from now
on, keep that in mind), as a withdrawal when it says "no longer", "lifted", "doesn't apply" or "withdrawn"
(of the rule sharing most words), never reads a rule out of assistant or tool text, keeps ``name: value``
facts and bare hex ids shown in tool output, reports failing commands with their exit codes, and names the
last user message that asks for a backticked task as the next step. For pi it writes a summary in pi's own
headings, carrying its previous summary forward; for Longhaul it writes the Diff's JSON answer. Rules are
copied word for word on both sides, so differences in the bench come from what each compactor does with the
same understanding.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from longhaul_daemon.evaluation.harness.callers import content_text
from longhaul_daemon.passes.prompting.message_text import LISTED_WHOLE

__all__ = ["Reading", "read_conversation", "scripted_diff_answer", "scripted_pi_summary"]

_RULE = re.compile(
    r"\b(never|always|don't|do not|must|from now on|going forward|keep that in mind|for the rest of)\b",
    re.IGNORECASE,
)
_WITHDRAWAL = re.compile(r"\b(no longer|lifted|doesn't apply|does not apply|withdrawn)\b", re.IGNORECASE)
_FACT = re.compile(r"([A-Za-z][A-Za-z0-9 ]{0,30}?)\"?\s*[:=]\s*\"?([^\s\",}]*\d[^\s\",}]*)")
_HEX_ID = re.compile(r"(?<![\w.])(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}(?![\w.])")
_EXITED = re.compile(r"Command exited with code (\d+)")
_TASK = re.compile(r"`([A-Za-z_][A-Za-z0-9_]*)`")
_STOP = frozenset({"the", "and", "you", "your", "that", "this", "with", "for", "are", "any", "all", "now"})
_LABEL_LIST = re.compile(r"^Label exactly these messages: (.*)\.$", re.M)
_STATE_RULE = re.compile(r"^- ([Ru]\d+) \(given by (u\d+)\): (.*)$", re.M)
_LISTED = re.compile(
    r"^--- (u\d+) \(\d+ characters[^)\n]*\) [0-9a-f]+ ---\n(.*?)(?=\n--- u\d+ \(|\Z)", re.M | re.S
)
_QUESTION = re.compile(r"^- (u\d+) is labeled `.*?answer (?:`[^`]+` or )*`([^`]+)`", re.M)


@dataclass
class Reading:
    """What the model takes from a conversation: user messages, facts, failing commands."""

    users: list[tuple[str, str]] = field(default_factory=list)  # (u<n> or "", text)
    facts: list[tuple[str, str, str]] = field(default_factory=list)  # (name, value, u<n> of its turn)
    failures: list[tuple[str, int]] = field(default_factory=list)  # (command, exit code)
    steps: list[str] = field(default_factory=list)  # what was done, in order, for a prose summary


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 3 and w not in _STOP}


def _facts_in(output: str) -> Iterable[tuple[str, str]]:
    for line in output.splitlines():
        if "PASSED" in line or "FAILED" in line or "error TS" in line:
            continue  # test logs and compiler errors are not facts to keep
        for match in _FACT.finditer(line):
            yield match.group(1).strip(), match.group(2)
        for match in _HEX_ID.finditer(line):
            yield "id", match.group(0)


def read_conversation(blocks: Iterable[tuple[str, str]]) -> Reading:
    """``blocks`` are (label, text) in order: ``user`` (with ``u<n>`` after a space when known), ``call``
    (a command), ``result``; the rest is ignored."""
    reading = Reading()
    turn = ""
    command = ""
    seen: set[str] = set()
    for label, text in blocks:
        if label.startswith("user"):
            turn = label.partition(" ")[2]
            if not text.startswith("Ran `"):  # pi shows a user's !command as a user message
                reading.users.append((turn, text))
                # Progress names the task, never the user's words: only a rule is meant to be quoted.
                reading.steps += [f"Worked on `{task}`" for task in _TASK.findall(text)]
        elif label == "read":
            reading.steps.append(f"Read `{text}`")
        elif label == "call":
            command = text
            reading.steps.append(f"Ran `{text}`")
        elif label == "result":
            exited = _EXITED.search(text)
            if exited and command:
                reading.failures.append((command, int(exited.group(1))))
            for name, value in _facts_in(text):
                if value not in seen:
                    seen.add(value)
                    reading.facts.append((name, value, turn))
    return reading


def _rules_and_lifts(users: list[tuple[str, str]], standing: list[str]) -> tuple[list[str], set[str]]:
    """The rules the users gave (in order) and the standing rules they withdrew."""
    rules = list(standing)
    lifted: set[str] = set()
    for _, text in users:
        if _WITHDRAWAL.search(text):
            scored = sorted(
                ((len(_words(r) & _words(text)), r) for r in rules if r not in lifted), reverse=True
            )
            if scored and scored[0][0] > 0:
                lifted.add(scored[0][1])
        elif _RULE.search(text):
            rules.append(text)
    return [r for r in rules if r not in lifted], lifted


def _next_step(users: list[tuple[str, str]]) -> str:
    for _, text in reversed(users):
        if _TASK.search(text):
            return " ".join(text.split())
    return "Continue the current task."


# ---- pi's summarization prompt -------------------------------------------------------------------------

_PI_BLOCK = re.compile(r"^\[(User|Assistant|Assistant thinking|Assistant tool calls|Tool result)\]: ", re.M)


def _pi_blocks(conversation: str) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    starts = list(_PI_BLOCK.finditer(conversation))
    for at, match in enumerate(starts):
        end = starts[at + 1].start() if at + 1 < len(starts) else len(conversation)
        text = conversation[match.end() : end].strip()
        kind = match.group(1)
        if kind == "User":
            found.append(("user", text))
        elif kind == "Assistant tool calls":
            command = re.search(r'bash\(command=("(?:[^"\\]|\\.)*")', text)
            found.append(("call", json.loads(command.group(1)) if command else ""))
            found += [
                ("read", json.loads(p.group(1))) for p in re.finditer(r'read\(path=("(?:[^"\\]|\\.)*")', text)
            ]
        elif kind == "Tool result":
            found.append(("result", text))
    return found


def _section(summary: str, title: str) -> list[str]:
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", summary, re.S | re.M)
    lines = (match.group(1) if match else "").splitlines()
    return [line[2:] for line in lines if line.startswith("- ") and line != "- (none)"]


def scripted_pi_summary(body: dict[str, Any]) -> str:
    """An answer to pi's summarization request, in pi's headings, carrying its previous summary forward."""
    prompt = "\n".join(
        content_text(m.get("content")) for m in body.get("messages") or [] if m.get("role") == "user"
    )
    conversation = re.search(r"<conversation>\n(.*?)\n</conversation>", prompt, re.S)
    previous = re.search(r"<previous-summary>\n(.*?)\n</previous-summary>", prompt, re.S)
    earlier = previous.group(1) if previous else ""
    reading = read_conversation(_pi_blocks(conversation.group(1) if conversation else ""))
    rules, _ = _rules_and_lifts(reading.users, _section(earlier, "Constraints & Preferences"))
    done = _section(earlier, "Progress") + [f"[x] {step}" for step in reading.steps]
    done += [f"`{c}` failed (exit {code})" for c, code in reading.failures]
    facts = _section(earlier, "Critical Context") + [f"{name}: {value}" for name, value, _ in reading.facts]
    goal = re.search(r"^## Goal\n(.+)$", earlier, re.M)
    asks = [t for _, t in reading.users if not _RULE.search(t) and not _WITHDRAWAL.search(t)]
    first = goal.group(1) if goal else (asks[0] if asks else "Continue the work.")
    lines = ["## Goal", " ".join(first.split())[:300], "", "## Constraints & Preferences"]
    lines += [f"- {r}" for r in rules] or ["- (none)"]
    lines += ["", "## Progress", "### Done", *[f"- {d}" for d in done], "", "## Key Decisions", "- (none)"]
    lines += ["", "## Next Steps", f"1. {_next_step(reading.users)}", "", "## Critical Context"]
    lines += [f"- {f}" for f in facts] or ["- (none)"]
    return "\n".join(lines)


# ---- Longhaul's Diff prompt ----------------------------------------------------------------------------


def _data(prompt: str, name: str) -> str:
    match = re.search(
        rf"^=== BEGIN DATA {name} (\w+) ===\n(.*?)\n=== END DATA {name} \1 ===$", prompt, re.S | re.M
    )
    return match.group(2) if match else ""


def _diff_blocks(conversation: str) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    starts = list(re.finditer(r"^\[([^\]\n]*)\]: ", conversation, re.M))
    for at, match in enumerate(starts):
        end = starts[at + 1].start() if at + 1 < len(starts) else len(conversation)
        head, text = match.group(1), conversation[match.end() : end].rstrip("\n")
        if head.startswith("User u"):
            found.append((f"user {head[5:]}", text))
        elif head.startswith("Tool call"):
            command = re.match(r'bash\(command=("(?:[^"\\]|\\.)*")', text)
            found.append(("call", json.loads(command.group(1)) if command else ""))
        elif head.startswith("Tool result"):
            found.append(("result", text))
    return found


def _question_reply(prompt: str) -> str | None:
    asked = list(_LABEL_LIST.finditer(prompt))
    tail = prompt[asked[-1].end() :] if asked else ""
    if not tail.strip():
        return None
    # A question asks whether a rule also lifts an older one; this model keeps the label it gave.
    return json.dumps(
        {"labels": [{"msg": m.group(1), "label": m.group(2)} for m in _QUESTION.finditer(tail)]}
    )


def scripted_diff_answer(body: dict[str, Any]) -> str:
    """An answer to one of Longhaul's Diff calls (first call, retry or question round)."""
    users = [content_text(m.get("content")) for m in body.get("messages") or [] if m.get("role") == "user"]
    prompt = users[0] if users else ""
    question = _question_reply(prompt)
    if question is not None:
        return question
    listed = dict(_LISTED.findall(_data(prompt, "messages")))
    blocks = [
        (label, listed.get(label[5:], text) if label.startswith("user u") and text == LISTED_WHOLE else text)
        for label, text in _diff_blocks(_data(prompt, "conversation"))
    ]  # a short message is named in the conversation and shown whole in the label listing
    reading = read_conversation(blocks)
    asked = re.findall(r"u\d+", _LABEL_LIST.findall(prompt)[-1]) if _LABEL_LIST.search(prompt) else []
    texts = dict(reading.users)
    state_rules = {m.group(3): m.group(1) for m in _STATE_RULE.finditer(_data(prompt, "state"))}
    labels: list[dict[str, str]] = []
    given: dict[str, str] = dict(state_rules)  # rule words -> how to name the rule
    for uid in asked:
        text = texts.get(uid, "")
        if _WITHDRAWAL.search(text):
            scored = sorted(((len(_words(w) & _words(text)), ref) for w, ref in given.items()), reverse=True)
            label = f"lifts {scored[0][1]}" if scored and scored[0][0] > 0 else "not a rule"
        elif _RULE.search(text):
            label, given[text] = "rule", uid
        else:
            label = "not a rule"
        labels.append({"msg": uid, "label": label})
    values = [{"name": n[:80], "value": v[:200], "turn": t} for n, v, t in reading.facts if t][-12:]
    tasks = [m for m in _TASK.findall(" ".join(texts.values()))]
    answer = {
        "labels": labels,
        "decisions": [],
        "deadEnds": [],
        "values": values,
        "narrative": f"Worked on {', '.join(dict.fromkeys(tasks)) or 'the current task'}."[:240],
        "now": _next_step(reading.users)[:600],
    }
    return json.dumps(answer)
