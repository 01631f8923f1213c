"""Which model stage an ``"narrativeMode": "auto"`` pass runs: the Diff, until the Diff failed its route.

Turns mode costs five calls or more where the Diff costs one, and on a model that writes a good single answer
it buys nothing. So ``auto`` starts every route (the configured ``provider/modelId``) on the Diff and moves it
to turns mode only after the model's own answers failed the Diff on that route in
:data:`DIFF_FAILURES_BEFORE_TURNS` passes in a row. Only answer failures count (no readable answer, messages
left unlabeled, nothing verified): a provider error, a rate limit or a pass out of time says nothing about
how the model writes, and turns mode would fare no better there. A pass that closes whole on the Diff starts
the count again. Once moved, the route stays on turns mode for the daemon's life; a restart tries the Diff
again, since a route's model can change under the same name. ``status`` shows each route's choice and why.

The book is daemon-wide (it lives in :class:`~longhaul_daemon.models.access.ModelAccess`), bounded like
route health, and holds only route names, counts, reason codes the daemon wrote and times.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from longhaul_daemon.log.fields import model_spec_field
from longhaul_daemon.protocol import NarrativeChoiceStatus

__all__ = [
    "ANSWER_FAILURES",
    "DIFF_FAILURES_BEFORE_TURNS",
    "NarrativeChoices",
    "StageName",
    "is_answer_failure",
    "stage_of_pass",
]

StageName = Literal["diff", "turns"]

DIFF_FAILURES_BEFORE_TURNS = 2
"""Passes in a row whose Diff answer failed on a route before ``auto`` gives the route turns mode."""

ANSWER_FAILURES = frozenset({"unparsable-answer", "unlabeled-messages", "unverified"})
"""Reason codes that say the model's answer was at fault, not the provider or the clock."""

MAX_CHOICES = 32
"""Routes remembered; the least recently used is forgotten first (it starts on the Diff again)."""


def is_answer_failure(closed_as: str, reason: str | None) -> bool:
    """Whether a Diff close says the model's answer failed: a narrative-less close, or a chunk missing, for
    one of :data:`ANSWER_FAILURES` (a chunk's reason carries a ``chunk-`` prefix)."""
    if closed_as not in ("narrative-less", "chunk-missing") or reason is None:
        return False
    return reason.removeprefix("chunk-") in ANSWER_FAILURES


def stage_of_pass(mode: str, route: str | None, choices: NarrativeChoices | None) -> StageName:
    """The stage a pass runs for its ``narrativeMode``: ``auto`` asks ``choices`` about ``route`` (the
    Diff when there is no book, as for a pass run outside a daemon)."""
    if mode == "auto":
        return choices.stage_for(route) if choices is not None else "diff"
    return "turns" if mode == "turns" else "diff"


@dataclass
class _Choice:
    stage: StageName = "diff"
    failures_in_row: int = 0
    last_failure: str | None = None
    since: datetime | None = None  # when the route moved to turns mode


class NarrativeChoices:
    """Per route: the stage ``auto`` runs next, and the Diff failures in a row that decided it."""

    def __init__(self, max_routes: int = MAX_CHOICES) -> None:
        self._routes: OrderedDict[str, _Choice] = OrderedDict()
        self._max_routes = max_routes

    @staticmethod
    def _name(route: str | None) -> str:
        return model_spec_field(route or "") or "(no model)"

    def stage_for(self, route: str | None) -> StageName:
        """The stage an ``auto`` pass on ``route`` runs: the Diff unless the Diff failed it enough."""
        choice = self._routes.get(self._name(route))
        return choice.stage if choice is not None else "diff"

    def record(
        self,
        route: str | None,
        *,
        stage: StageName,
        closed_as: str,
        reason: str | None,
        now: datetime | None = None,
    ) -> None:
        """How an ``auto`` pass on ``route`` closed with ``stage``. Only Diff closes move the count: a whole
        one clears it, an answer failure adds one, and anything else (an empty span, a provider error)
        leaves it as it was. A turns close changes nothing: the route stays on turns mode."""
        if stage != "diff" or closed_as == "empty":
            return
        name = self._name(route)
        choice = self._routes.get(name)
        if choice is None:
            choice = self._routes[name] = _Choice()
            while len(self._routes) > self._max_routes:
                self._routes.popitem(last=False)
        self._routes.move_to_end(name)
        if closed_as in ("whole", "partial"):  # the Diff's answer verified (partial: FAIL-4, ours)
            choice.failures_in_row = 0
            return
        if not is_answer_failure(closed_as, reason):
            return
        choice.failures_in_row += 1
        choice.last_failure = reason
        if choice.failures_in_row >= DIFF_FAILURES_BEFORE_TURNS and choice.stage == "diff":
            choice.stage = "turns"
            choice.since = now or datetime.now(UTC)

    def snapshot(self) -> list[NarrativeChoiceStatus]:
        """Every remembered route, the most recently used last, as ``status`` shows it."""
        return [
            NarrativeChoiceStatus(
                route=name,
                stage=choice.stage,
                diffFailuresInRow=choice.failures_in_row,
                lastDiffFailure=choice.last_failure,
                turnsSince=choice.since.isoformat(timespec="seconds") if choice.since else None,
            )
            for name, choice in self._routes.items()
        ]
