"""What the scripted model answers when nothing was scripted: fixed, valid answers, one per kind of caller.

* The daemon's Diff (and its question round) gets REPLAY-4's fixed answer: every message the prompt asks
  about (its ``Label exactly these messages`` line) labelled ``not a rule``, no decisions or dead ends, a
  fixed narrative and Now; so a replay measures the plumbing, not a model.
* A turn of turns mode gets its section's passing answer, read from the turn's schema (or, where the route
  carries none, from the ask): every listed message ``not a rule``, every listed open error kept open, a
  narrative naming every modified file the ask lists.
* pi's summarizer gets a numbered summary in pi's headings holding :data:`PI_OWN_MARKER`.
* pi's agent loop gets ``TOOL-SEEN: …`` after a tool result, else ``ACK: …``, quoting the last message.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from longhaul_daemon.evaluation.harness.callers import chat_messages, content_text, is_turn

__all__ = [
    "FIXED_NARRATIVE",
    "FIXED_NOW",
    "PI_OWN_MARKER",
    "agent_answer",
    "daemon_answer",
    "diff_answer",
    "pi_summary",
    "section_answer",
    "section_of",
]

FIXED_NARRATIVE = "Scripted span."
FIXED_NOW = "Carry on with the scripted session."
PI_OWN_MARKER = "PI-OWN-SUMMARY"
_ASKED = re.compile(r"^Label exactly these messages: (.*)\.$", re.M)
_USER_ID = re.compile(r"\bu\d+\b")
_TURN = re.compile(r"Turn \d of 5, (narrative|objective|labels|decisions|now):")
_REPAIR = re.compile(r"Your (narrative|objective|labels|decisions|now) answer fails these checks")
_QUESTION = "A few labels of your answer need one more look"
_QUESTIONED = re.compile(r"^- (u\d+) is labeled", re.M)
_LISTED = re.compile(r"one label for each of these messages: ([u\d, ]+)")
_OPEN = re.compile(r"These errors of the span are still open: ([E\d, ]+)")
_FILES = re.compile(r"Name every file this span modified \((.*?)\) by its path")
_NARRATIVE_CHARS = 240


def diff_answer(prompt: str) -> str:
    """REPLAY-4: the fixed answer to a Diff call whose user text is ``prompt``."""
    asked = _ASKED.findall(prompt)
    ids = _USER_ID.findall(asked[-1]) if asked else []
    answer = {
        "labels": {uid: {"label": "not a rule"} for uid in ids},  # keyed, as the call's schema asks
        "decisions": [],
        "deadEnds": [],
        "narrative": FIXED_NARRATIVE,
        "now": FIXED_NOW,
    }
    return json.dumps(answer)


def _schema(body: Mapping[str, Any]) -> dict[str, Any]:
    form = body.get("response_format")
    spec = form.get("json_schema") if isinstance(form, dict) else None
    return spec if isinstance(spec, dict) else {}


def _user_texts(body: Mapping[str, Any]) -> list[str]:
    return [content_text(m.get("content")) for m in chat_messages(body) if m.get("role") == "user"]


def section_of(body: Mapping[str, Any]) -> str | None:
    """The section a turn of turns mode asks for: its schema's name, else the newest ask, repair note or
    label question in its user texts (None when it names none)."""
    name = _schema(body).get("name")
    if isinstance(name, str) and name.endswith("_section"):
        return name.removesuffix("_section")
    for text in reversed(_user_texts(body)):
        marks = [(m.start(), m.group(1)) for m in (*_TURN.finditer(text), *_REPAIR.finditer(text))]
        if _QUESTION in text:
            marks.append((text.index(_QUESTION), "labels"))
        if marks:
            return max(marks)[1]
    return None


def _enum(schema: Mapping[str, Any], *path: str) -> list[str] | None:
    node: Any = schema
    for key in path:
        node = node.get(key) if isinstance(node, dict) else None
    return [v for v in node if isinstance(v, str)] if isinstance(node, list) else None


def _listed(pattern: re.Pattern[str], text: str, item: str) -> list[str]:
    found = pattern.findall(text)
    return re.findall(item, found[-1]) if found else []


def section_answer(body: Mapping[str, Any], section: str) -> str:
    """A passing answer to one turn of turns mode."""
    schema = _schema(body).get("schema")
    schema = schema if isinstance(schema, dict) else {}
    asked = "\n".join(_user_texts(body))
    answer: dict[str, Any]
    if section == "narrative":
        files = _FILES.findall(asked)
        named = f" Touched {files[-1]}." if files else ""
        answer = {"narrative": f"{FIXED_NARRATIVE}{named}"[:_NARRATIVE_CHARS], "excuses": []}
    elif section == "objective":
        answer = {"objective": None}
    elif section == "labels":
        ids = _enum(schema, "properties", "labels", "items", "properties", "msg", "enum")
        if ids is None:
            users = _user_texts(body)
            question = users[-1] if users and _QUESTION in users[-1] else ""
            ids = _QUESTIONED.findall(question) if question else _listed(_LISTED, asked, r"u\d+")
        answer = {"labels": [{"msg": uid, "label": "not a rule", "words": None} for uid in ids]}
    elif section == "decisions":
        errors = _enum(schema, "properties", "openErrors", "items", "enum")
        errors = errors if errors is not None else _listed(_OPEN, asked, r"E\d+")
        answer = {"decisions": [], "deadEnds": [], "openErrors": errors, "fixed": [], "excuses": []}
    else:
        answer = {"now": FIXED_NOW, "excuses": []}
    return json.dumps(answer)


def daemon_answer(body: Mapping[str, Any]) -> str:
    """The daemon's call with nothing scripted: a turn's section, else the Diff's fixed answer."""
    if is_turn(body):
        return section_answer(body, section_of(body) or "narrative")
    return diff_answer("\n".join(_user_texts(body)))


def pi_summary(n: int) -> str:
    """pi's summarizer's ``n``-th answer: unique, so pi finds each compaction entry by its summary."""
    return (
        f"## Goal\n{PI_OWN_MARKER} #{n}: canned summary from the scripted model.\n\n"
        "## Progress\n### Done\n- [x] scripted\n"
    )


def agent_answer(body: Mapping[str, Any]) -> str:
    """pi's agent loop with nothing scripted: a short echo of the last message."""
    messages = chat_messages(body)
    last = messages[-1] if messages else {}
    said = content_text(last.get("content")).replace("\n", " ")
    return "TOOL-SEEN: " + said[:80] if last.get("role") == "tool" else "ACK: " + said[:60]
