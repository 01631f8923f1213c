"""The gate every turns-mode answer passes, written in code (TURNS-9, TURNS-12, TURNS-13): what fails, why.

:func:`gate` returns a :class:`Verdict`: the problems worth a repair turn and what this answer would give as
the section's last, failing items left out (TURNS-10); :mod:`.label_gate` gates labels.

**Integrity checks**, never excused: the answer parses into the section's shape, fields have their types,
every id exists in the ledger, and the narrative is within 240 characters and not blank. Ours: prose with no
letter or digit is blank, and prose that only repeats the instructions or its own field's name is an echo.
After the repairs a failing item is dropped (an unknown id only, its decision or dead end staying, as
DIFF-14); other bounds are cut as DIFF-16 cuts; ``fixed`` claims are checked as in the Diff.

**Expectation checks** (TURNS-12): the narrative names every modified file, each open error of the span is a
dead end's evidence or in ``openErrors``, and Now is set. One sentence of at most 200 characters excuses a
failed one (TURNS-13); one neither met nor excused goes to the repair turns, then is stored as unmet
(TURNS-14). Pure; nothing raises.
"""

from __future__ import annotations

import posixpath
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Literal, TypeVar

from pydantic import ValidationError

from longhaul_daemon.passes.answers.fixes import Fix, check_fixes
from longhaul_daemon.passes.answers.schema import (
    BOUNDS,
    DeadEnd,
    DeadEndItem,
    Decision,
    DecisionItem,
    FixedItem,
    ReplyForm,
)
from longhaul_daemon.passes.turns.sections import EXPECTATIONS, Section
from longhaul_daemon.state.clean import prose
from longhaul_daemon.state.model import Command, ErrorEntry
from longhaul_daemon.state.sanitize import sanitize

__all__ = [
    "EXCUSE_CHARS",
    "Accepted",
    "GateContext",
    "Problem",
    "Verdict",
    "gate",
    "one_sentence",
    "parse_problem",
]

EXCUSE_CHARS = 200  # TURNS-13: one sentence is at most this many characters
_SENTENCE_END = re.compile(r"[.!?]+(?=\s)")
_LISTED = 8  # files or errors a problem line names before counting the rest


@dataclass(frozen=True)
class Problem:
    """One failing check: ``kind`` says whether it can be excused; ``text`` is its repair-note line."""

    kind: Literal["integrity", "expectation"]
    code: str
    text: str


@dataclass(frozen=True)
class Accepted:
    """What a section would contribute, failing items left out; ``objective`` None means it stands."""

    narrative: str | None = None
    objective: str | None = None
    decisions: tuple[Decision, ...] = ()
    dead_ends: tuple[DeadEnd, ...] = ()
    open_errors: tuple[str, ...] = ()
    fixed: tuple[Fix, ...] = ()
    now: str | None = None
    dropped: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def holds_nothing(self) -> bool:
        """Whether nothing of the answer would be kept: no prose, no item, no list entry."""
        lists = (self.decisions, self.dead_ends, self.open_errors, self.fixed)
        return not (self.narrative or self.objective or self.now or any(lists))


@dataclass(frozen=True)
class Verdict:
    """One answer through the gate: problems for a repair turn, the content, the excuses, the unmet checks."""

    parsed: bool
    problems: tuple[Problem, ...] = ()
    accepted: Accepted = field(default_factory=Accepted)
    excused: tuple[tuple[str, str], ...] = ()
    unmet: tuple[str, ...] = ()

    @property
    def integrity(self) -> int:
        """How many problems are integrity problems (not format defects)."""
        return sum(1 for p in self.problems if p.kind == "integrity")


@dataclass(frozen=True)
class GateContext:
    """What the checks compare with: the ledger after this span, and what this span modified and raised."""

    ledger_ids: frozenset[str]
    commands: tuple[Command, ...] = ()
    errors: tuple[ErrorEntry, ...] = ()
    span_modified: tuple[str, ...] = ()
    span_errors: tuple[str, ...] = ()  # E<n> this span raised that the Ledger step left open
    instructions: str = ""  # the conversation's own wording (system prompt, asks), folded for echo checks


_NOT_PARSED: Mapping[ReplyForm, str] = {
    "none": "the reply holds no JSON object; answer with the one JSON object asked for",
    "begun": "the reply's JSON object is cut off or is not valid JSON; send one complete object",
    "foreign": "the reply's JSON object is not this section's answer; send the object asked for",
    "answer": "the reply's answer could not be read",
}


def parse_problem(form: ReplyForm) -> Problem:
    """The integrity problem of a reply with no answer of the section's shape."""
    return Problem("integrity", "not-parsed", _NOT_PARSED[form])


_ECHO_MIN = 24  # folded characters: shorter prose ("Done.") may match an instruction by chance
_NON_WORD = re.compile(r"[^\w]+")


def fold_text(text: str) -> str:
    """Text as the echo check compares it: lower case, every run of non-word characters one space."""
    return _NON_WORD.sub(" ", text.casefold()).strip()


def one_sentence(reason: str) -> str | None:
    """Why ``reason`` is not one sentence (TURNS-13), or None when it is."""
    text = reason.strip()
    if not text:
        return "the reason is empty"
    if len(text) > EXCUSE_CHARS:
        return f"the reason has {len(text)} characters; at most {EXCUSE_CHARS}"
    if text[-1] not in ".!?":
        return "the reason must be one sentence ending in . ! or ?"
    if _SENTENCE_END.search(text):
        return "the reason must be a single sentence"
    return None


def _cut(text: str, bound: int, dropped: Counter[str]) -> str:
    if len(text) <= bound:
        return text
    dropped["cut-text"] += 1
    return text[: bound - 1] + "…"


class _Run:
    """The tallies of one gate run."""

    def __init__(self, section: Section, obj: dict[str, Any], ctx: GateContext) -> None:
        self.section = section
        self.obj = obj
        self.ctx = ctx
        self.problems: list[Problem] = []
        self.dropped: Counter[str] = Counter()

    def integrity(self, code: str, text: str) -> None:
        self.problems.append(Problem("integrity", code, text))

    def text_field(self, key: str, *, nullable: bool = False) -> str | None:
        value = self.obj.get(key)
        if value is None and nullable:
            return None
        if not isinstance(value, str):
            self.integrity("wrong-type", f"`{key}` must be a string")
            return None
        return value

    def says_something(self, text: str, where: str) -> bool:
        """Whether prose holds a word and is not a copy of the conversation's own instructions."""
        folded = fold_text(text)
        if not folded:
            self.integrity("blank", f"{where} is empty or holds no words")
            return False
        own_name = folded in (fold_text(self.section), fold_text(where.rsplit(".", 1)[-1]))
        if own_name or (len(folded) >= _ECHO_MIN and folded in self.ctx.instructions):
            self.integrity("echo", f"{where} repeats the instructions instead of describing this span")
            return False
        return True

    def known(self, ids: Sequence[str], where: str) -> tuple[str, ...]:
        kept = []
        for ledger_id in dict.fromkeys(ids):
            if ledger_id in self.ctx.ledger_ids:
                kept.append(ledger_id)
            else:
                shown = sanitize(ledger_id)[:20]
                self.integrity("unknown-id", f"{where} names {shown!r}, which the ledger does not hold")
                self.dropped["evidence"] += 1
        return tuple(kept)

    def items(self, key: str) -> list[Any]:
        value = self.obj.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            self.integrity("wrong-type", f"`{key}` must be a list")
            return []
        return value

    def excuses(self, failing: Sequence[Problem]) -> tuple[tuple[str, str], ...]:
        """The excuses that pass TURNS-13 for a failing check; a bad one says why in the repair note."""
        failing_checks = {p.code for p in failing}
        accepted: dict[str, str] = {}
        for item in self.items("excuses"):
            check = item.get("check") if isinstance(item, dict) else None
            reason = item.get("reason") if isinstance(item, dict) else None
            if not isinstance(check, str) or not isinstance(reason, str):
                self.integrity("wrong-type", "each excuse must be {check, reason} with string values")
                continue
            if check not in EXPECTATIONS[self.section]:
                self.integrity("unknown-check", f"{sanitize(check)[:40]!r} is not a check of this section")
                continue
            if check not in failing_checks or check in accepted:
                continue  # the check passed: nothing to excuse
            why = one_sentence(reason)
            if why is not None:
                self.problems.append(
                    Problem("expectation", check, f"the excuse for {check} was refused: {why}")
                )
                continue
            accepted[check] = prose(reason) or ""
        return tuple(accepted.items())


def _named(path: str, narrative: str) -> bool:
    return path in narrative or posixpath.basename(path.rstrip("/")) in narrative


def _expectations(
    section: Section, accepted: Accepted, given: Mapping[str, Any], ctx: GateContext
) -> list[Problem]:
    """TURNS-12: the checks of ``section`` that the answer does not meet."""
    if section == "narrative":
        text = given.get("narrative") if isinstance(given.get("narrative"), str) else ""
        missing = [f for f in ctx.span_modified if not _named(f, str(text))]
        if missing:
            listed = ", ".join(sanitize(f) for f in missing[:_LISTED])
            more = f" and {len(missing) - _LISTED} more" if len(missing) > _LISTED else ""
            note = f"the narrative names none of these files this span modified: {listed}{more}"
            return [Problem("expectation", "modified-files-named", note)]
    if section == "decisions":
        fixed = {f.error for f in accepted.fixed}
        placed = set(accepted.open_errors) | {e for d in accepted.dead_ends for e in d.evidence}
        missing = [e for e in ctx.span_errors if e not in fixed and e not in placed]
        if missing:
            listed = ", ".join(missing[:_LISTED])
            more = f" and {len(missing) - _LISTED} more" if len(missing) > _LISTED else ""
            note = (
                "these errors of the span are still open, yet neither a dead end's evidence nor in "
                f"openErrors: {listed}{more}"
            )
            return [Problem("expectation", "errors-placed", note)]
    if section == "now" and not (accepted.now or "").strip():
        return [
            Problem("expectation", "now-set", "Now is empty: say where the work stands and what comes next")
        ]
    return []


_Item = TypeVar("_Item", DecisionItem, DeadEndItem)


def _worded_items(run: _Run, key: str, shape: type[_Item], fields: str) -> Iterator[tuple[int, _Item]]:
    """The items under ``key`` of ``shape`` whose text says something, with their index; the others are
    integrity problems (wrong type, blank or echoed text) and count as dropped."""
    for index, raw in enumerate(run.items(key)):
        try:
            item = shape.model_validate(raw)
        except ValidationError:
            run.integrity("wrong-type", f"{key}[{index}] must be {fields}")
            run.dropped[key] += 1
            continue
        if not run.says_something(item.text, f"{key}[{index}].text"):
            run.dropped[key] += 1
            continue
        yield index, item


def _decisions(run: _Run) -> Accepted:
    decisions: list[Decision] = []
    for index, item in _worded_items(run, "decisions", DecisionItem, "{text, why, evidence}"):
        evidence = run.known(item.evidence, f"decisions[{index}]")[: BOUNDS["evidence"]]
        why = None if item.why is None else _cut(item.why, BOUNDS["why"], run.dropped)
        decisions.append(
            Decision(text=_cut(item.text, BOUNDS["text"], run.dropped), why=why, evidence=evidence)
        )
    dead_ends: list[DeadEnd] = []
    for index, dead in _worded_items(run, "deadEnds", DeadEndItem, "{text, evidence}"):
        evidence = run.known(dead.evidence, f"deadEnds[{index}]")[: BOUNDS["evidence"]]
        dead_ends.append(DeadEnd(text=_cut(dead.text, BOUNDS["text"], run.dropped), evidence=evidence))
    listed = [e for e in run.items("openErrors") if isinstance(e, str)]
    if len(listed) != len(run.items("openErrors")):
        run.integrity("wrong-type", "`openErrors` must list E<n> ids as strings")
    open_errors = tuple(e for e in run.known(listed, "openErrors") if e.startswith("E"))
    claims: list[tuple[str, str]] = []
    for raw in run.items("fixed"):
        try:
            claim = FixedItem.model_validate(raw)
        except ValidationError:
            run.dropped["fixed"] += 1
            continue
        claims.append((claim.error, claim.by))
    fixes, refused = check_fixes(claims[: BOUNDS["fixed"]], run.ctx.commands, run.ctx.errors)
    run.dropped["fixed"] += refused + max(0, len(claims) - BOUNDS["fixed"])
    for key, items in (("decisions", decisions), ("deadEnds", dead_ends)):
        run.dropped[key] += max(0, len(items) - BOUNDS[key])
    return Accepted(
        decisions=tuple(decisions[: BOUNDS["decisions"]]),
        dead_ends=tuple(dead_ends[: BOUNDS["deadEnds"]]),
        open_errors=open_errors,
        fixed=fixes,
    )


def _content(run: _Run) -> Accepted:
    section = run.section
    if section == "narrative":
        text = run.text_field("narrative")
        if text is not None and len(text) > BOUNDS["narrative"]:
            run.integrity(
                "over-cap", f"the narrative has {len(text)} characters; at most {BOUNDS['narrative']}"
            )
            return Accepted()
        if text is not None and not run.says_something(text, "the narrative"):
            return Accepted()
        return Accepted(narrative=text)
    if section == "objective":
        text = run.text_field("objective", nullable=True)
        if text is None or not text.strip() or not run.says_something(text, "the objective"):
            return Accepted()  # null or blank: the objective stands
        return Accepted(objective=_cut(text, BOUNDS["objective"], run.dropped))
    if section == "now":
        text = run.text_field("now")
        if text is None or (text.strip() and not run.says_something(text, "Now")):
            return Accepted()  # a blank Now is the expectation check's to report
        return Accepted(now=_cut(text, BOUNDS["now"], run.dropped))
    return _decisions(run)


def gate(section: Section, obj: dict[str, Any] | None, form: ReplyForm, ctx: GateContext) -> Verdict:
    """One answer of ``section``: ``obj`` and ``form`` as :func:`~.sections.find_section` found them."""
    if obj is None:
        return Verdict(parsed=False, problems=(parse_problem(form),))
    run = _Run(section, obj, ctx)
    accepted = _content(run)
    failing = _expectations(section, accepted, obj, ctx)
    excused = run.excuses(failing)
    unmet = tuple(p.code for p in failing if p.code not in dict(excused))
    problems = [*run.problems, *(p for p in failing if p.code in unmet)]
    dropped = MappingProxyType({k: v for k, v in sorted(run.dropped.items()) if v})
    return Verdict(
        parsed=True,
        problems=tuple(problems),
        accepted=replace(accepted, dropped=dropped),
        excused=excused,
        unmet=unmet,
    )
