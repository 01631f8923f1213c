"""Who sent a model request: pi's agent loop, pi's own summarizer or the daemon, by one rule for every fake.

The rule reads what each really sends. The daemon's calls (the Diff, its question round, each turn of turns
mode; made by the daemon itself or by pi for it through ``model.complete``) carry one of the daemon's own
system prompts, word for word. pi's summarizer (a compaction, a split turn's prefix, a branch summary)
carries pi's summarization prompt. Every other request is pi's agent loop, whatever its system prompt (pi's
own, a ``SYSTEM.md`` in its place, an extension's addition) and whatever tools it offers (pi's built-ins,
none, an extension's, the replay's stand-ins): tools decide nothing, since turns mode offers a tool too.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Any, Literal

__all__ = [
    "PI_SUMMARY_OPENING",
    "RequestKind",
    "chat_messages",
    "chat_system_parts",
    "classify",
    "content_text",
    "daemon_system_prompts",
    "is_turn",
    "kind_of",
]

# "other": the daemon's own calls, named apart from the two kinds of pi's.
RequestKind = Literal["agent", "pi-summary", "other"]

PI_SUMMARY_OPENING = "You are a context summarization assistant."  # pi's SUMMARIZATION_SYSTEM_PROMPT


@functools.cache
def daemon_system_prompts() -> tuple[frozenset[str], str]:
    """The daemon's system prompts (the Diff's, its label, words and question calls', turns mode's) and
    turns mode's alone.

    Imported on the first request, not with the harness: the Diff's and turns mode's modules bring the
    daemon's libraries, which ``replay`` and ``score`` need not load to refuse bad arguments.
    """
    from longhaul_daemon.passes.prompting.instructions import (
        LABEL_SYSTEM_PROMPT,
        QUESTION_SYSTEM_PROMPT,
        WORDS_SYSTEM_PROMPT,
    )
    from longhaul_daemon.passes.prompting.instructions import SYSTEM_PROMPT as DIFF_SYSTEM_PROMPT
    from longhaul_daemon.passes.turns.asks import SYSTEM_PROMPT as TURNS_SYSTEM_PROMPT

    daemons = {
        DIFF_SYSTEM_PROMPT,
        LABEL_SYSTEM_PROMPT,
        QUESTION_SYSTEM_PROMPT,
        WORDS_SYSTEM_PROMPT,
        TURNS_SYSTEM_PROMPT,
    }
    return frozenset(daemons), TURNS_SYSTEM_PROMPT


def content_text(content: object) -> str:
    """The text of a message ``content``: a string, or the text parts of a list joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text"
        )
    return ""


def chat_messages(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The message objects of an OpenAI chat-completions request (anything else left out)."""
    raw = body.get("messages")
    return [m for m in raw if isinstance(m, dict)] if isinstance(raw, list) else []


def chat_system_parts(body: Mapping[str, Any]) -> list[str]:
    """The text of each system (or developer) message of a chat-completions request."""
    return [
        content_text(m.get("content"))
        for m in chat_messages(body)
        if m.get("role") in ("system", "developer")
    ]


def kind_of(system_parts: Iterable[str]) -> RequestKind:
    """The caller, from the request's system prompt parts (a provider may send more than one block)."""
    parts = [part.strip() for part in system_parts]
    if any(part in daemon_system_prompts()[0] for part in parts):
        return "other"
    if any(part.startswith(PI_SUMMARY_OPENING) for part in parts):
        return "pi-summary"
    return "agent"


def classify(body: Mapping[str, Any]) -> RequestKind:
    """The caller of an OpenAI chat-completions request."""
    return kind_of(chat_system_parts(body))


def is_turn(body: Mapping[str, Any]) -> bool:
    """Whether a chat-completions request of the daemon's is a turn of turns mode (not the Diff's)."""
    return daemon_system_prompts()[1] in (part.strip() for part in chat_system_parts(body))
