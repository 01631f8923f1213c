"""One home for the answer's shape and DIFF-6 bounds, so parsing, cutting, the prompt and the wire agree.

:class:`AnswerShape` is the whole answer as a reply may hold it. It is the one definition the structured
output schema sent to the model is derived from (:data:`ANSWER_SCHEMA`), and the one the reply's
shape check reads its keys from (:data:`ANSWER_KEYS`, :mod:`.extract`).

Two layers. The ``*Item`` shapes are what a reply may hold: types checked strictly, no bounds, because an
over-bound list or string is a format defect for the retry rather than a silent loss (DIFF-16 proposal). The
bounded models (:class:`Answer` and its items) are what the verifiers downstream receive:
:func:`cut_to_bounds` builds them after the retry, cutting lists to their bound and prose with "…", and
dropping over-long quoted ``words`` and ``value`` strings outright, since a cut quote or value could never
match the transcript verbatim. Every cut is counted as dropped.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from longhaul_daemon.models.structured import OutputSchema, strict_schema
from longhaul_daemon.passes.answers.labels import Label

__all__ = [
    "ANSWER_KEYS",
    "ANSWER_SCHEMA",
    "BOUNDS",
    "Answer",
    "AnswerShape",
    "DeadEnd",
    "DeadEndItem",
    "Decision",
    "DecisionItem",
    "Defect",
    "DefectCode",
    "DraftAnswer",
    "FixedAnswer",
    "FixedItem",
    "LabelAnswer",
    "LabelItem",
    "LabeledMessage",
    "ParsedAnswer",
    "ReplyForm",
    "ValueAnswer",
    "ValueItem",
    "cut_to_bounds",
    "says_something",
]

# DIFF-6 proposal, in code points.
BOUNDS: Final[Mapping[str, int]] = MappingProxyType(
    {
        "decisions": 8,
        "deadEnds": 8,
        "values": 12,
        "evidence": 6,
        "text": 300,
        "why": 300,
        "narrative": 240,
        "now": 600,
        "objective": 300,
        "words": 600,
        "name": 80,
        "value": 200,
        "fixed": 8,  # open errors the answer says a later command fixed
    }
)

ReplyForm = Literal["answer", "begun", "foreign", "none"]  # what a reply held (diff/answer.py)

DefectCode = Literal[
    "no-json",
    "not-json",
    "not-the-answer",
    "not-an-object",
    "wrong-type",
    "missing-field",
    "over-bound",
    "bad-label",
    "conflicting-labels",
    "missing-label",
    "unknown-target",
    "later-target",
]


@dataclass(frozen=True)
class Defect:
    """One format defect: a code, the ``u<n>`` it concerns (if any) and one line for the retry note."""

    code: str
    msg: str | None
    text: str


class _Shape(BaseModel):
    """An item as the model sent it: types checked strictly, no bounds; over-bound is a defect, not a loss."""

    model_config = ConfigDict(strict=True, frozen=True, extra="ignore")


class LabelItem(_Shape):
    """A message's label as the reply holds it, with the rule's words if it sets one."""

    msg: str
    label: str
    words: str | None = None


class DecisionItem(_Shape):
    """A decision as the reply holds it: what, why, and the ids it rests on."""

    text: str
    why: str | None = None
    evidence: list[str] = Field(default_factory=list)


class DeadEndItem(_Shape):
    """A dead end as the reply holds it, with the ids it rests on."""

    text: str
    evidence: list[str] = Field(default_factory=list)


class ValueItem(_Shape):
    """A named value as the reply holds it, with the turn that states it."""

    name: str
    value: str
    turn: str


class FixedItem(_Shape):
    """An open error ``error`` (``E<n>``) the later command ``by`` (``C<n>``) fixed, as the model says."""

    error: str
    by: str


class AnswerShape(_Shape):
    """The answer as a reply holds it (DIFF-5, plus ``fixed``): lists may be left out, prose is required.

    The field order is the order a constrained model writes them in: labels first, the part code needs most,
    then the prose, then the lists, so a reply cut where a looping model repeats a list item keeps the prose.
    """

    labels: list[LabelItem] = Field(default_factory=list)
    narrative: str
    now: str
    objective: str | None = None
    decisions: list[DecisionItem] = Field(default_factory=list)
    deadEnds: list[DeadEndItem] = Field(default_factory=list)
    values: list[ValueItem] = Field(default_factory=list)
    fixed: list[FixedItem] = Field(default_factory=list)


ANSWER_KEYS: Final[frozenset[str]] = frozenset(AnswerShape.model_fields)
_LIST_BOUNDS = ("decisions", "deadEnds", "values", "fixed")


def _bounded_schema() -> dict[str, Any]:
    """The answer's wire schema with every list but ``labels`` held to its DIFF-6 bound."""
    schema = strict_schema(AnswerShape.model_json_schema())
    properties = schema["properties"]
    for key in _LIST_BOUNDS:
        properties[key]["maxItems"] = BOUNDS[key]
    for key in ("decisions", "deadEnds"):
        properties[key]["items"]["properties"]["evidence"]["maxItems"] = BOUNDS["evidence"]
    return schema


ANSWER_SCHEMA: Final = OutputSchema(
    name="diff_answer",
    schema=_bounded_schema(),
    description="The answer about this span: a label for every listed message, and the state's updates.",
)


_Text = Annotated[str, Field(max_length=BOUNDS["text"])]
_Why = Annotated[str, Field(max_length=BOUNDS["why"])]
_Narrative = Annotated[str, Field(max_length=BOUNDS["narrative"])]
_Now = Annotated[str, Field(max_length=BOUNDS["now"])]
_Objective = Annotated[str, Field(max_length=BOUNDS["objective"])]
_Words = Annotated[str, Field(max_length=BOUNDS["words"])]
_Name = Annotated[str, Field(max_length=BOUNDS["name"])]
_ValueText = Annotated[str, Field(max_length=BOUNDS["value"])]
_Evidence = Annotated[tuple[str, ...], Field(max_length=BOUNDS["evidence"])]


class _Bounded(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class LabelAnswer(_Bounded):
    """A message's label within bounds, for the verifiers."""

    msg: str
    label: Label
    words: _Words | None = None


class Decision(_Bounded):
    """A decision within bounds, for the verifiers."""

    text: _Text
    why: _Why | None = None
    evidence: _Evidence = ()


class DeadEnd(_Bounded):
    """A dead end within bounds, for the verifiers."""

    text: _Text
    evidence: _Evidence = ()


class ValueAnswer(_Bounded):
    """A named value within bounds; an over-long value is dropped, never cut."""

    name: _Name
    value: _ValueText
    turn: str


class FixedAnswer(_Bounded):
    """An open error the answer says is fixed, and the ledger id that fixed it."""

    error: str
    by: str


class Answer(_Bounded):
    """A whole answer within the DIFF-6 bounds: what :func:`cut_to_bounds` hands to the verifiers."""

    labels: tuple[LabelAnswer, ...] = ()
    decisions: Annotated[tuple[Decision, ...], Field(max_length=BOUNDS["decisions"])] = ()
    deadEnds: Annotated[tuple[DeadEnd, ...], Field(max_length=BOUNDS["deadEnds"])] = ()
    values: Annotated[tuple[ValueAnswer, ...], Field(max_length=BOUNDS["values"])] = ()
    narrative: _Narrative | None = None
    now: _Now | None = None
    objective: _Objective | None = None
    fixed: Annotated[tuple[FixedAnswer, ...], Field(max_length=BOUNDS["fixed"])] = ()


@dataclass(frozen=True)
class LabeledMessage:
    """One accepted label, before bounds: its message, the checked label and the words as given."""

    msg: str
    label: Label
    words: str | None = None


@dataclass(frozen=True)
class DraftAnswer:
    """The accepted-so-far answer (FAIL-2): defective items left out, over-bound content still in."""

    labels: tuple[LabeledMessage, ...] = ()
    decisions: tuple[DecisionItem, ...] = ()
    deadEnds: tuple[DeadEndItem, ...] = ()
    values: tuple[ValueItem, ...] = ()
    narrative: str | None = None
    now: str | None = None
    objective: str | None = None
    fixed: tuple[FixedItem, ...] = ()


@dataclass(frozen=True)
class ParsedAnswer:
    """What one reply yields: the accepted-so-far answer, its defects and what was dropped.

    ``parsed`` is False when the reply held no answer-shaped JSON object (FAIL-2 keeps a parsed answer only);
    ``form`` then says what it held instead (:func:`~longhaul_daemon.passes.answers.extract.find_answer`):
    ``begun``, ``foreign`` or ``none``. ``replaced`` lists ``(u<n>, target)`` lifts of rules a narrowing
    already replaced, for the LIFT-7 question.
    """

    parsed: bool
    answer: DraftAnswer
    defects: tuple[Defect, ...] = ()
    dropped: dict[str, int] = field(default_factory=dict)
    replaced: tuple[tuple[str, str], ...] = ()
    form: ReplyForm = "answer"


def _cut(text: str, bound: int, dropped: Counter[str], key: str) -> str:
    if len(text) <= bound:
        return text
    dropped[key] += 1
    return text[: bound - 1] + "…"


def says_something(text: str) -> bool:
    """Whether ``text`` holds a letter or a digit. A schema-constrained small model fills every string it
    must write with "..." or "-"; such a string says nothing, so it is never kept as prose or as words."""
    return any(ch.isalnum() for ch in text)


def cut_to_bounds(parsed: ParsedAnswer) -> tuple[Answer, dict[str, int]]:
    """DIFF-16 after the retry: lists cut to their bound and prose cut with "…", each cut counted as dropped.

    Over-long ``words`` and ``value`` strings are dropped rather than cut, since a cut one could never match
    the transcript verbatim. Text that says nothing (:func:`says_something`) is dropped as ``empty-text``:
    a decision or dead end goes, prose and ``why`` become absent, label ``words`` count as not given. The
    returned counts include ``parsed.dropped``.
    """
    draft = parsed.answer
    dropped: Counter[str] = Counter(parsed.dropped)

    def meaningful(text: str | None) -> str | None:
        if text is None or says_something(text):
            return text
        dropped["empty-text"] += 1
        return None

    labels: list[LabelAnswer] = []
    for item in draft.labels:
        words = meaningful(item.words)
        if words is not None and len(words) > BOUNDS["words"]:
            dropped["words"] += 1
            words = None
        labels.append(LabelAnswer(msg=item.msg, label=item.label, words=words))

    def evidence(ids: list[str]) -> tuple[str, ...]:
        dropped["evidence"] += max(0, len(ids) - BOUNDS["evidence"])
        return tuple(ids[: BOUNDS["evidence"]])

    def keep(items: Sequence[Any], key: str) -> Sequence[Any]:
        dropped[key] += max(0, len(items) - BOUNDS[key])
        return items[: BOUNDS[key]]

    def prose(text: str | None, key: str) -> str | None:
        kept = meaningful(text)
        return None if kept is None else _cut(kept, BOUNDS[key], dropped, "cut-text")

    decisions = [
        Decision(
            text=_cut(d.text, BOUNDS["text"], dropped, "cut-text"),
            why=prose(d.why, "why"),
            evidence=evidence(d.evidence),
        )
        for d in keep(draft.decisions, "decisions")
        if meaningful(d.text) is not None
    ]
    dead_ends = [
        DeadEnd(text=_cut(d.text, BOUNDS["text"], dropped, "cut-text"), evidence=evidence(d.evidence))
        for d in keep(draft.deadEnds, "deadEnds")
        if meaningful(d.text) is not None
    ]
    values: list[ValueAnswer] = []
    for v in draft.values:
        if len(v.value) > BOUNDS["value"]:
            dropped["values"] += 1
            continue
        values.append(
            ValueAnswer(name=_cut(v.name, BOUNDS["name"], dropped, "cut-text"), value=v.value, turn=v.turn)
        )
    fixed = keep(draft.fixed, "fixed")
    answer = Answer(
        fixed=tuple(FixedAnswer(error=f.error, by=f.by) for f in fixed),
        labels=tuple(labels),
        decisions=tuple(decisions),
        deadEnds=tuple(dead_ends),
        values=tuple(keep(values, "values")),
        narrative=prose(draft.narrative, "narrative"),
        now=prose(draft.now, "now"),
        objective=prose(draft.objective, "objective"),
    )
    return answer, {k: v for k, v in dropped.items() if v}
