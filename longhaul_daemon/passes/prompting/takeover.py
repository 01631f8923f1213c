"""Taking over from another compactor: what the Diff is shown when the newest compaction is not Longhaul's.

When pi's own compaction (a fallback, or Longhaul not yet installed) or another extension wrote the newest
compaction, the user's rules from before the span live only in that compactor's prose. The pass then offers
(TAKEOVER-1..TAKEOVER-4, TAKEOVER-16..TAKEOVER-26, our choices the proposals):

- the foreign summary, whole up to 4,000 characters, else its first and last 2,000 (TAKEOVER-3);
- the user messages that summary covered: those after the newest Longhaul compaction's kept boundary (all of
  them when there is none) and before the span, minus messages already carried (TAKEOVER-23, TAKEOVER-24);
- each one the standing-rule reading picks, whole, recorded by code unless the model calls it a one-off;
  every other one as its opening, needing a label; all picked ones plus the newest 200 others, the rest
  counted (TAKEOVER-26);
- the turns of those messages, so a value the model credits to an earlier turn is checked there (VALUE-6).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from longhaul_daemon.passes.answers.rule_reading import read_standing_rule
from longhaul_daemon.passes.answers.values import Turn
from longhaul_daemon.passes.fold import FoldResult
from longhaul_daemon.passes.prompting.prompt import EarlierMessage
from longhaul_daemon.passes.prompting.span_turns import span_turns
from longhaul_daemon.transcript.entries import parse_entry
from longhaul_daemon.transcript.messages import SpanMessage

__all__ = [
    "FOREIGN_EDGE",
    "FOREIGN_WHOLE",
    "MAX_OTHERS",
    "Takeover",
    "foreign_summary_excerpt",
    "plan_takeover",
]

FOREIGN_WHOLE = 4000  # TAKEOVER-3: a foreign summary up to this many characters is shown whole
FOREIGN_EDGE = 2000  # ... else its first and last this many
MAX_OTHERS = 200  # TAKEOVER-26: earlier messages the reading did not pick, the newest ones


@dataclass(frozen=True)
class Takeover:
    """What a takeover adds to the first chunk's prompt and checks."""

    summary: str | None
    earlier: tuple[EarlierMessage, ...] = ()
    picked: dict[str, tuple[int, int]] = field(default_factory=dict)
    turns: tuple[Turn, ...] = ()
    left_out: int = 0


def foreign_summary_excerpt(summary: str) -> str:
    """TAKEOVER-3: the summary whole, or its head and tail with "…" between."""
    if len(summary) <= FOREIGN_WHOLE:
        return summary
    return f"{summary[:FOREIGN_EDGE]}\n…\n{summary[-FOREIGN_EDGE:]}"


def _newest_compaction_summary(branch: Sequence[dict[str, Any]]) -> str | None:
    for raw in reversed(branch):
        entry = parse_entry(raw)
        if entry is not None and entry.type == "compaction":
            summary = raw.get("summary")
            return summary if isinstance(summary, str) else None
    return None


def plan_takeover(
    branch: list[dict[str, Any]],
    folded: FoldResult,
    span: Sequence[SpanMessage],
    before: Sequence[SpanMessage],
    carried: Collection[str] = (),
) -> Takeover | None:
    """The takeover for this pass, or None when the newest compaction is Longhaul's (or there is none).

    ``before`` is what :func:`~longhaul_daemon.transcript.messages.messages_before_span` found: the messages
    no Longhaul pass judged.
    """
    if not folded.newest_compaction_foreign:
        return None
    in_span = {m.user_id for m in span if m.user_id is not None}
    users = [
        m
        for m in before
        if m.role == "user"
        and m.user_id is not None
        and m.user_id not in in_span
        and m.user_id not in carried
    ]
    picked: dict[str, tuple[int, int]] = {}
    others: list[str] = []
    texts: dict[str, str] = {}
    for message in users:
        assert message.user_id is not None
        text = message.text
        texts[message.user_id] = text
        reading = read_standing_rule(text)
        if reading.picked:
            picked[message.user_id] = (reading.start, reading.end)
        else:
            others.append(message.user_id)
    kept_others = set(others[-MAX_OTHERS:])
    earlier = tuple(
        EarlierMessage(user_id=uid, text=texts[uid], picked=uid in picked)
        for uid in texts
        if uid in picked or uid in kept_others
    )
    summary = _newest_compaction_summary(branch)
    return Takeover(
        summary=foreign_summary_excerpt(summary) if summary else None,
        earlier=earlier,
        picked=picked,
        turns=span_turns(before),
        left_out=len(others) - len(kept_others),
    )
