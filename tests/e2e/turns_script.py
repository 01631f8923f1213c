"""Scripted answers to a turns-mode conversation, read from the requests the daemon really sent.

The daemon talks to the session model (the e2e model server) one section per turn. A :class:`TurnsScript`
installed on the server reads each request as a model would: which section the last user turn asks for
(``Turn k of 5, <section>:``, a repair note for it, or the labels question block), the ids the labels turn
lists, the user messages the Digest shows whole, the errors the decisions turn names, the files the
narrative must name. It answers with that section's JSON: a label per listed message (``rule`` for a message
holding one of ``rules``, else ``not a rule``), a narrative naming every modified file, every listed error in
``openErrors``. ``shows`` lists refs the model first reads with ``show`` in the narrative turn (one call each,
as pi's own tool-call format streams them); ``hold`` delays the answer of a section (a slow turn).
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from typing import Any

from longhaul_daemon.evaluation.harness.callers import content_text, is_turn
from longhaul_daemon.evaluation.harness.model_server import ModelServer
from longhaul_daemon.evaluation.harness.replies import Reply, delayed, text, tool_call

__all__ = ["TurnCall", "TurnsScript"]

_ASK = re.compile(r"Turn (\d) of 5, (narrative|objective|labels|decisions|now):")
_REPAIR = re.compile(r"Your (narrative|objective|labels|decisions|now) answer fails these checks")
_LISTED = re.compile(r"one label for each of these messages: ([u\d, ]+)\.")
_ERRORS = re.compile(r"These errors of the span are still open: ([E\d, ]+)\.")
_FILES = re.compile(r"Name every file this span modified \((.*?)\) by its path")
_MESSAGE = re.compile(
    r"^--- (u\d+) \((\d+) characters[^\n]*---\n(.*?)(?=\n--- u\d+ |\n=== END DATA)", re.M | re.S
)
QUESTION = "A few labels of your answer need one more look"


@dataclass(frozen=True)
class TurnCall:
    """One request of the conversation: its section, what kind of turn it is, and its body."""

    section: str
    kind: str  # "ask", "repair", "question", "after-show"
    body: dict[str, Any]


@dataclass
class TurnsScript:
    """Answers each turn by its section; ``calls`` records what was asked, in order."""

    rules: tuple[str, ...] = ()
    shows: tuple[str, ...] = ()
    hold: dict[str, float] = field(default_factory=dict)
    calls: list[TurnCall] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _messages: dict[str, str] = field(default_factory=dict)
    _section: str = "narrative"

    def install(self, server: ModelServer) -> TurnsScript:
        server.on_daemon_call(self)
        return self

    def sections(self) -> list[str]:
        return [c.section for c in self.calls if c.kind == "ask"]

    def __call__(self, body: dict[str, Any]) -> Reply | None:
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        if not is_turn(body):
            return None  # the Diff's call: the server's default (a Diff answer) applies
        with self._lock:
            return self._answer(body, messages)

    def _answer(self, body: dict[str, Any], messages: list[dict[str, Any]]) -> Reply:
        users = [content_text(m.get("content")) for m in messages if m.get("role") == "user"]
        for found in _MESSAGE.finditer(users[0] if users else ""):
            self._messages.setdefault(found.group(1), found.group(3))
        last = messages[-1] if messages else {}
        last_text = content_text(last.get("content")) if last.get("role") == "user" else ""
        if last.get("role") == "tool":
            kind = "after-show"
        elif QUESTION in last_text:
            kind, self._section = "question", "labels"
        else:  # the newest ask or repair note: an unanswered turn's may precede this turn's
            marks = [(m.start(), "ask", m.group(2)) for m in _ASK.finditer(last_text)]
            marks += [(m.start(), "repair", m.group(1)) for m in _REPAIR.finditer(last_text)]
            _, kind, self._section = max(marks, default=(0, "ask", self._section))
        self.calls.append(TurnCall(self._section, kind, body))
        if kind == "ask" and self._section == "narrative" and self.shows:
            ref, self.shows = self.shows[0], self.shows[1:]
            return tool_call("show", ref=ref)
        answer = text(json.dumps(self._section_answer(self._section, last_text, users)))
        hold = self.hold.get(self._section)
        return delayed(hold, answer) if hold else answer

    def _section_answer(self, section: str, last_text: str, users: list[str]) -> dict[str, Any]:
        everything = "\n".join(users)
        if section == "narrative":
            files = _FILES.search(everything)
            named = f" Touched {files.group(1)}." if files else ""
            return {"narrative": f"E2E turns narrative.{named}"[:240], "excuses": []}
        if section == "objective":
            return {"objective": "Ship the exporter."}
        if section == "labels":
            listed = _LISTED.findall(everything)
            ids = re.findall(r"u\d+", listed[-1]) if listed else []
            if QUESTION in last_text:
                ids = re.findall(r"^- (u\d+) is labeled", last_text, re.M)
            return {"labels": [{"msg": uid, "label": self._label(uid), "words": None} for uid in ids]}
        if section == "decisions":
            errors = _ERRORS.findall(everything)
            open_errors = re.findall(r"E\d+", errors[-1]) if errors else []
            return {"decisions": [], "deadEnds": [], "openErrors": open_errors, "fixed": [], "excuses": []}
        return {"now": "E2E turns now: carry on with the exporter.", "excuses": []}

    def _label(self, uid: str) -> str:
        message = self._messages.get(uid, "")
        return "rule" if any(fragment in message for fragment in self.rules) else "not a rule"
