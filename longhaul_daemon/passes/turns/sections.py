"""The five sections of a turns-mode conversation: their order, their answer shapes and how a reply holds one.

TURNS-2 fixes the order: narrative, objective, labels, decisions and dead ends, Now. Each section is one small
JSON object, sent as the structured-output schema of its turn where the route takes one,
and found in a reply the way the Diff finds its answer (:mod:`longhaul_daemon.passes.answers.extract`): the
first top-level object that has the section's shape, bare or fenced, with at most two keys the shape does not
name. The shape of a section is its key (``narrative``, ``objective``, ``labels``, ``now``) or, for decisions
and dead ends, any of that section's list keys. A reply without one is ``none``, ``foreign`` (objects of
another shape: an echo) or ``begun`` (cut off or not valid JSON), as in the Diff.

Three sections carry expectation checks (TURNS-12) and so an ``excuses`` list: the narrative
(``modified-files-named``), decisions and dead ends (``errors-placed``) and Now (``now-set``). Decisions and
dead ends also carry ``openErrors`` (the errors of the span the model says are still open, so each unfixed
error is placed somewhere) and ``fixed`` (errors a later command fixed, checked by code as in the Diff).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from longhaul_daemon.models.json_scan import top_level_groups
from longhaul_daemon.models.structured import OutputSchema, strict_schema
from longhaul_daemon.passes.answers.schema import (
    BOUNDS,
    DeadEndItem,
    DecisionItem,
    FixedItem,
    LabelItem,
    ReplyForm,
)

__all__ = [
    "CHECKS",
    "EXPECTATIONS",
    "SECTIONS",
    "SECTION_KEYS",
    "Check",
    "Section",
    "find_section",
    "section_schema",
    "wants",
]

Section = Literal["narrative", "objective", "labels", "decisions", "now"]
SECTIONS: Final[tuple[Section, ...]] = ("narrative", "objective", "labels", "decisions", "now")  # TURNS-2

Check = Literal["modified-files-named", "errors-placed", "now-set"]
EXPECTATIONS: Final[Mapping[Section, tuple[Check, ...]]] = {
    "narrative": ("modified-files-named",),
    "objective": (),
    "labels": (),
    "decisions": ("errors-placed",),
    "now": ("now-set",),
}
CHECKS: Final[tuple[Check, ...]] = ("modified-files-named", "errors-placed", "now-set")
_UNKNOWN_KEYS_TOLERATED = 2  # as the Diff's answer: a model that adds a key or two still answers


class _Shape(BaseModel):
    model_config = ConfigDict(strict=True, frozen=True, extra="ignore")


class Excuse(_Shape):
    """A failed expectation check the model excuses, with its one-sentence reason (TURNS-13)."""

    check: str
    reason: str


class NarrativeAnswer(_Shape):
    """The narrative section's answer, with excuses for checks it could not meet."""

    narrative: str
    excuses: list[Excuse] = Field(default_factory=list)


class ObjectiveAnswer(_Shape):
    """The objective section's answer; null keeps the objective as it was."""

    objective: str | None = None  # null: the objective stands as it was


class LabelsAnswer(_Shape):
    """The labels section's answer."""

    labels: list[LabelItem] = Field(default_factory=list)


class DecisionsAnswer(_Shape):
    """The decisions section's answer: decisions, dead ends, open and fixed errors."""

    decisions: list[DecisionItem] = Field(default_factory=list)
    deadEnds: list[DeadEndItem] = Field(default_factory=list)
    openErrors: list[str] = Field(default_factory=list)
    fixed: list[FixedItem] = Field(default_factory=list)
    excuses: list[Excuse] = Field(default_factory=list)


class NowAnswer(_Shape):
    """The "now" section's answer, with excuses for checks it could not meet."""

    now: str
    excuses: list[Excuse] = Field(default_factory=list)


_SHAPES: Final[Mapping[Section, type[_Shape]]] = {
    "narrative": NarrativeAnswer,
    "objective": ObjectiveAnswer,
    "labels": LabelsAnswer,
    "decisions": DecisionsAnswer,
    "now": NowAnswer,
}
SECTION_KEYS: Final[Mapping[Section, frozenset[str]]] = {
    name: frozenset(shape.model_fields) for name, shape in _SHAPES.items()
}
# the keys that make an object this section's answer
_MARKS: Final[Mapping[Section, frozenset[str]]] = {
    "narrative": frozenset({"narrative"}),
    "objective": frozenset({"objective"}),
    "labels": frozenset({"labels"}),
    "decisions": frozenset({"decisions", "deadEnds", "openErrors", "fixed"}),
    "now": frozenset({"now"}),
}


def _bounded(section: Section) -> dict[str, Any]:
    schema = strict_schema(_SHAPES[section].model_json_schema())
    properties = schema["properties"]
    if "excuses" in properties:
        properties["excuses"]["maxItems"] = len(EXPECTATIONS[section])
        check = properties["excuses"]["items"]["properties"]["check"]
        check["enum"] = list(EXPECTATIONS[section])
    if section == "decisions":
        for key in ("decisions", "deadEnds", "fixed"):
            properties[key]["maxItems"] = BOUNDS[key]
        for key in ("decisions", "deadEnds"):
            properties[key]["items"]["properties"]["evidence"]["maxItems"] = BOUNDS["evidence"]
    return schema


_SCHEMAS: Final[Mapping[Section, dict[str, Any]]] = {name: _bounded(name) for name in SECTIONS}


def section_schema(
    section: Section, *, label_ids: Sequence[str] = (), required: int = 0, open_errors: Sequence[str] = ()
) -> OutputSchema:
    """The structured-output schema of one turn: the section's shape, its lists held to their bounds.

    For labels, ``labels`` holds from ``required`` to ``len(label_ids)`` items, each naming one of
    ``label_ids`` (as the Diff's schema does); for decisions, ``openErrors`` may name only
    ``open_errors``.
    """
    schema = copy.deepcopy(_SCHEMAS[section])
    if section == "labels":
        labels = schema["properties"]["labels"]
        ids = list(dict.fromkeys(label_ids))
        labels["minItems"], labels["maxItems"] = min(max(required, 0), len(ids)), len(ids)
        if ids:
            labels["items"]["properties"]["msg"] = {"type": "string", "enum": ids}
    if section == "decisions":
        listed = schema["properties"]["openErrors"]
        listed["maxItems"] = len(open_errors)
        if open_errors:
            listed["items"] = {"type": "string", "enum": list(open_errors)}
    return OutputSchema(f"{section}_section", schema, f"Send the {section} section.")


def wants(section: Section) -> Callable[[dict[str, Any]], bool]:
    """Whether a decoded object is this section's answer: the stream of a turn ends at the first such."""
    marks, known = _MARKS[section], SECTION_KEYS[section]

    def shaped(obj: dict[str, Any]) -> bool:
        unknown = sum(1 for key in obj if key not in known)
        return unknown <= _UNKNOWN_KEYS_TOLERATED and any(key in obj for key in marks)

    return shaped


def _decode(group: str) -> Any:
    try:
        return json.loads(group)
    except (ValueError, RecursionError):
        return None


def find_section(reply_text: str, section: Section) -> tuple[dict[str, Any] | None, ReplyForm]:
    """The reply's answer for ``section`` (the first object of its shape) and the reply's form."""
    shaped = wants(section)
    groups, pending = top_level_groups(reply_text)
    begun = foreign = False
    marks = tuple(f'"{key}"' for key in _MARKS[section])
    for group in groups:
        value = _decode(group)
        if isinstance(value, dict):
            if shaped(value):
                return value, "answer"
            foreign = True
        elif any(mark in group[:200] for mark in marks):
            begun = True
    if begun or (pending is not None and any(mark in pending[:200] for mark in marks)):
        return None, "begun"
    return None, "foreign" if foreign else "none"
