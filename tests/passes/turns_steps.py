"""What the turns-mode pass tests share: a session model on any of the four wires, section replies, shows.

Every reply is in the wire's own format: a section's answer is the reply's text on the OpenAI formats and
the answer tool's input on Anthropic and Gemini (their structured-output form beside an offered tool); a
``show`` call is that wire's tool call.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from models.scripted_http import Recorded, Reply, ScriptedServer
from models.tool_wires import Call, tool_reply
from models.wires import KEY, Wire
from pydantic import SecretStr

from longhaul_daemon.protocol import CompactParams, ModelCredentials, ModelFacts

from .model_steps import with_settings
from .pi_branch import Session

__all__ = [
    "GOOD",
    "asked_text",
    "good_script",
    "on_wire",
    "section_reply",
    "show_reply",
    "turns_mode",
]

# a whole, passing answer for every section but labels
GOOD: dict[str, dict[str, Any]] = {
    "narrative": {"narrative": "Wrote the CSV export in export.py; its test still fails.", "excuses": []},
    "objective": {"objective": "Ship the CSV export."},
    "decisions": {
        "decisions": [
            {"text": "Write rows with the csv module.", "why": "It quotes fields.", "evidence": ["C1"]}
        ],
        "deadEnds": [],
        "openErrors": ["E1"],
        "fixed": [],
        "excuses": [],
    },
    "now": {"now": "Export works; next add the header row.", "excuses": []},
}


def rule_then_failing_test(root: Path) -> Session:
    """The span the turns-mode pass tests share: a rule, a command that works, a failing test, a nudge."""
    s = Session(root)
    s.user("Never add new dependencies without asking me first.")
    s.bash("python -m export", "wrote out.csv")
    s.user("Fix the failing test.")
    s.bash("pytest -q", "1 failed", code=1)
    s.user("Keep going.")
    return s


def on_wire(params: CompactParams, server: ScriptedServer, wire: Wire, **facts: Any) -> CompactParams:
    """``params`` whose session model speaks ``wire`` on ``server``, with its key as the shim resolves it."""
    model = ModelFacts(
        provider="test",
        id="test-model",
        api=wire.api,
        baseUrl=server.url + wire.base_path,
        maxTokens=facts.pop("maxTokens", 16_384),
        contextWindow=facts.pop("contextWindow", 128_000),
    )
    session = params.session.model_copy(update={"model": model})
    return params.model_copy(
        update={"session": session, "credentials": ModelCredentials(apiKey=SecretStr(KEY))}
    )


def turns_mode(params: CompactParams, **settings: Any) -> CompactParams:
    """``params`` whose ``longhaul.json`` sets ``"narrativeMode": "turns"`` (TURNS-1)."""
    return with_settings(params, {"narrativeMode": "turns", **settings})


def section_reply(wire: Wire, section: str, answer: dict[str, Any] | str, *, stream: bool = True) -> Reply:
    """``answer`` (an object, or raw text) as ``wire`` carries a section's answer."""
    text = answer if isinstance(answer, str) else json.dumps(answer)
    if wire.api in ("anthropic-messages", "google-generative-ai") and not isinstance(answer, str):
        return tool_reply(wire, [], answer=text, answer_tool=f"{section}_section", stream=stream)
    return tool_reply(wire, [], text=text, stream=stream)


def show_reply(wire: Wire, *refs: str, first: int = 1) -> Reply:
    """One reply calling ``show`` once per ref."""
    calls = [Call(f"call_s{first + n}", "show", {"ref": ref}) for n, ref in enumerate(refs)]
    return tool_reply(wire, calls)


def labels_answer(labels: dict[str, str | tuple[str, str]]) -> dict[str, Any]:
    items = [
        {"msg": msg, "label": label[0], "words": label[1]}
        if isinstance(label, tuple)
        else {"msg": msg, "label": label, "words": None}
        for msg, label in labels.items()
    ]
    return {"labels": items}


def good_script(wire: Wire, labels: dict[str, str | tuple[str, str]], **override: Any) -> list[Reply]:
    """Five passing answers, one per section in order; ``override`` replaces a section's answer."""
    answers: dict[str, Any] = {**GOOD, "labels": labels_answer(labels), **override}
    order = ("narrative", "objective", "labels", "decisions", "now")
    return [section_reply(wire, name, answers[name]) for name in order]


def _content_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part.get("text") or part.get("content") or "") for part in content if isinstance(part, dict)
        )
    return ""


def asked_text(recorded: Recorded) -> str:
    """All user-side text of one recorded request, whatever the wire."""
    body = recorded.body
    if "messages" in body:  # Chat Completions and Anthropic
        return "\n".join(
            _content_text(m.get("content")) for m in body["messages"] if m.get("role") in ("user", "tool")
        )
    if "input" in body:  # Responses
        return "\n".join(
            str(item.get("content") or item.get("output") or "")
            for item in body["input"]
            if item.get("role") == "user" or item.get("type") == "function_call_output"
        )
    parts = [p for c in body.get("contents", []) if c.get("role") == "user" for p in c.get("parts", [])]
    return "\n".join(
        str(p.get("text") or p.get("functionResponse", {}).get("response", {}).get("output", ""))
        for p in parts
    )
