"""Model output is untrusted, so the Diff answer is extracted, normalized and checked here before any counts.

The answer is one JSON object of :class:`~longhaul_daemon.passes.answers.schema.AnswerShape` (DIFF-4, DIFF-5).
:func:`find_answer` sorts a reply into ``answer`` (it holds an answer-shaped object; the first is used,
DIFF-17), ``begun`` (an answer object that never closes or parses: the retry note may fix it), ``foreign``
(only objects of another shape: an echo of the prompt, whose tool results hold JSON) or ``none``. The shape
check is ours, so an echo is never taken for the answer: at most :data:`UNKNOWN_KEYS_TOLERATED` unknown keys,
and ``labels`` as a list (empty, or with an item naming ``msg``) or as an object keyed by message id (empty,
or with a ``u<n>`` key: the form each call's schema asks for, :mod:`.call_schemas`), or else both
``narrative`` and ``now``. The keyed form is read as the list it stands for (:func:`label_items`). Objects
are found by :mod:`longhaul_daemon.models.json_scan`, the scanner that ends a streamed reply, so the stream
is cut exactly where this reads.

:func:`parse_answer` never raises on model output: what is wrong becomes a :class:`Defect` for the retry
note (FAIL-1) or a dropped count. ``narrative`` and ``now`` are required (DIFF-4); a ``null`` list is
omitted (DIFF-15); an item of the wrong shape is a defect left out (FAIL-2); over-bound content stays a
defect until :func:`cut_to_bounds` (DIFF-16).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Collection, Sequence
from typing import Any, TypeVar

from pydantic import ValidationError

from longhaul_daemon.models.json_scan import closed_in_string, closed_prefix, top_level_groups
from longhaul_daemon.passes.answers.labels import Label, check_targets, format_label, parse_label
from longhaul_daemon.passes.answers.schema import (
    ANSWER_KEYS,
    BOUNDS,
    Answer,
    DeadEnd,
    DeadEndItem,
    Decision,
    DecisionItem,
    Defect,
    DefectCode,
    DraftAnswer,
    FixedItem,
    LabelAnswer,
    LabeledMessage,
    LabelItem,
    ParsedAnswer,
    ReplyForm,
    ValueAnswer,
    ValueItem,
    cut_to_bounds,
)
from longhaul_daemon.state.model import Rule

__all__ = [
    "BOUNDS",
    "UNKNOWN_KEYS_TOLERATED",
    "Answer",
    "DeadEnd",
    "Decision",
    "Defect",
    "DraftAnswer",
    "LabelAnswer",
    "LabeledMessage",
    "ParsedAnswer",
    "ReplyForm",
    "ValueAnswer",
    "answer_shaped",
    "answer_with_prose",
    "cut_to_bounds",
    "extract_json",
    "find_answer",
    "label_items",
    "normalize",
    "parse_answer",
    "salvage",
    "verify_answer",
    "verify_labels",
]

UNKNOWN_KEYS_TOLERATED = 2
_MESSAGE_ID = re.compile(r"u[1-9][0-9]*")
# an object opening with an answer key; single quotes too, for a model writing a Python dict
_BEGUN = re.compile(r"""\{\s*["'](?:""" + "|".join(sorted(map(re.escape, ANSWER_KEYS))) + r""")["']""")


def answer_shaped(obj: dict[str, Any]) -> bool:
    """Whether a decoded object has the answer's shape (the module docstring gives the rule)."""
    unknown = sum(1 for key in obj if key not in ANSWER_KEYS)
    if unknown > UNKNOWN_KEYS_TOLERATED:
        return False
    labels = obj.get("labels")
    if isinstance(labels, list):
        return not labels or any(isinstance(item, dict) and "msg" in item for item in labels)
    if isinstance(labels, dict):
        return not labels or any(_MESSAGE_ID.fullmatch(key) for key in labels)
    return "narrative" in obj and "now" in obj


def label_items(labels: object) -> object:
    """``labels`` in the list form the reader checks: the keyed form the schema asks for (``{"u3": "rule"}``,
    ``{"u3": {"label": …, "words": …}}``, ``null`` for none) becomes ``[{"msg": "u3", …}]`` in key order;
    a list, or anything else, is returned as it is."""
    if not isinstance(labels, dict):
        return labels
    items: list[Any] = []
    for msg, value in labels.items():
        if isinstance(value, str):
            items.append({"msg": msg, "label": value})
        elif isinstance(value, dict):
            items.append({**value, "msg": msg})
        elif value is not None:
            items.append({"msg": msg, "label": value})  # the wrong type, reported as a list item would be
    return items


def answer_with_prose(obj: dict[str, Any]) -> bool:
    """An answer cut short may stand for the whole reply only when it has the answer's shape and its prose
    already came (the schema puts narrative and now before the lists a looping model repeats)."""
    return answer_shaped(obj) and isinstance(obj.get("narrative"), str) and isinstance(obj.get("now"), str)


def salvage(reply_text: str) -> str | None:
    """Ours: the answer a reply cut at its output limit began, closed, when its labels and prose came; else
    None. Two cuts, in order (:mod:`longhaul_daemon.models.json_scan`): back to its last whole member or item
    when that still holds the labels, the narrative and Now (:func:`answer_with_prose`): a small model that
    fills its lists after the prose; or, when it was cut inside its prose, right there, the string closed,
    when the labels and the narrative came: a model writing its narrative on and on. A Now it never reached
    is empty, which says nothing, as the "..." such a model copies from the prompt's example."""
    groups, pending = top_level_groups(reply_text)
    if groups or pending is None or not _BEGUN.match(pending):
        return None
    closed = closed_prefix(pending)
    value = _decode(closed) if closed is not None else None
    if isinstance(value, dict) and "labels" in value and answer_with_prose(value):
        return closed
    ended = closed_in_string(pending)
    value = _decode(ended) if ended is not None else None
    if not (isinstance(value, dict) and "labels" in value and isinstance(value.get("narrative"), str)):
        return None
    value.setdefault("now", "")
    return json.dumps(value) if answer_with_prose(value) else None


def _decode(group: str) -> Any:
    try:
        return json.loads(group, strict=False)  # a raw line break in a string: a weak server lets it through
    except (ValueError, RecursionError):
        return None


def extract_json(reply_text: str) -> dict[str, Any] | None:
    """The first complete top-level JSON object in the reply, bare or in a code fence, whatever its shape.

    Each ``{`` outside an earlier brace group starts a candidate; a balanced group that is not valid JSON is
    skipped whole, so objects nested in it are never taken. A group that never closes ends the search: the
    reply was cut off, and an object nested in it is not top-level. The question round reads its reply so.
    """
    groups, _ = top_level_groups(reply_text)
    for group in groups:
        value = _decode(group)
        if isinstance(value, dict):
            return value
    return None


def find_answer(reply_text: str) -> tuple[dict[str, Any] | None, ReplyForm]:
    """The reply's answer object (the first answer-shaped one) and the reply's form."""
    groups, pending = top_level_groups(reply_text)
    begun = foreign = False
    for group in groups:
        value = _decode(group)
        if isinstance(value, dict):
            if answer_shaped(value):
                return value, "answer"
            foreign = True
        elif _BEGUN.match(group):
            begun = True
    if begun or (pending is not None and _BEGUN.match(pending)):
        return None, "begun"
    return None, "foreign" if foreign else "none"


_Item = TypeVar("_Item", DecisionItem, DeadEndItem, ValueItem, FixedItem)

_LISTS = ("labels", "decisions", "deadEnds", "values", "fixed")
_OPTIONAL_IN_ITEMS = {"labels": ("words",), "decisions": ("why",), "deadEnds": (), "values": (), "fixed": ()}
_NOT_PARSED: dict[ReplyForm, Defect] = {
    "none": Defect("no-json", None, "the reply holds no JSON object; answer with one JSON object"),
    "begun": Defect(
        "not-json", None, "the reply's JSON object is cut off or is not valid JSON; send one complete object"
    ),
    "foreign": Defect(
        "not-the-answer", None, "the reply's JSON object is not the answer object (labels, narrative, now)"
    ),
}


def normalize(obj: object) -> object:
    """DIFF-15: ``null`` for an optional field → absent, an omitted or ``null`` list → empty; nothing else."""
    return _normalized(obj) if isinstance(obj, dict) else obj


def _normalized(obj: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {k: v for k, v in obj.items() if not (k == "objective" and v is None)}
    if "labels" in out:
        out["labels"] = label_items(out["labels"])
    for key in _LISTS:
        if out.get(key) is None:
            out[key] = []
        items = out[key]
        if not isinstance(items, list):
            continue
        fixed: list[Any] = []
        for item in items:
            if isinstance(item, dict):
                item = {k: v for k, v in item.items() if not (k in _OPTIONAL_IN_ITEMS[key] and v is None)}
                if key in ("decisions", "deadEnds") and item.get("evidence") is None:
                    item["evidence"] = []
            fixed.append(item)
        out[key] = fixed
    return out


class _Reader:
    """Collects the accepted items, defects and dropped counts of one answer."""

    def __init__(self) -> None:
        self.defects: list[Defect] = []
        self.dropped: Counter[str] = Counter()

    def defect(self, code: DefectCode, msg: str | None, text: str) -> None:
        self.defects.append(Defect(code, msg, text))

    def over(self, what: str, size: int, bound: int, unit: str, msg: str | None = None) -> None:
        if size > bound:
            self.defect("over-bound", msg, f"{what} has {size} {unit}; at most {bound} allowed")

    def items(self, obj: dict[str, Any], key: str) -> list[Any]:
        value = obj.get(key)
        if isinstance(value, list):
            return value
        self.defect("wrong-type", None, f"`{key}` must be a list")
        return []


def _read_labels(
    reader: _Reader,
    raw: list[Any],
    offered_ids: Sequence[str],
    rules: Sequence[Rule],
    optional: Collection[str],
) -> tuple[list[LabeledMessage], list[tuple[str, str]]]:
    offered = set(offered_ids)
    given: dict[str, list[tuple[Label, str | None]]] = {}
    flawed: set[str] = set()
    for index, item in enumerate(raw):
        try:
            entry = LabelItem.model_validate(item)
        except ValidationError:
            msg = item.get("msg") if isinstance(item, dict) else None
            if isinstance(msg, str) and msg not in offered:
                reader.dropped["labels-not-offered"] += 1
                continue
            where = msg if isinstance(msg, str) else None
            reader.defect(
                "wrong-type", where, f"labels[{index}] must be {{msg, label, words?}} with string values"
            )
            if where is not None:
                flawed.add(where)
            continue
        if entry.msg not in offered:
            reader.dropped["labels-not-offered"] += 1  # LABEL-3
            continue
        label = parse_label(entry.label)
        if label is None:
            reader.defect(
                "bad-label", entry.msg, f"{entry.msg}: {json.dumps(entry.label[:80])} is not a label"
            )
            flawed.add(entry.msg)
            continue
        if entry.words is not None:
            reader.over(f"{entry.msg} words", len(entry.words), BOUNDS["words"], "characters", entry.msg)
        given.setdefault(entry.msg, []).append((label, entry.words))
    merged: dict[str, tuple[Label, str | None]] = {}
    for msg, entries in given.items():
        labels = {label for label, _ in entries}
        words = {w for _, w in entries if w is not None}
        if len(labels) > 1 or len(words) > 1:
            shown = " / ".join(sorted({format_label(label) for label in labels}))
            reader.defect("conflicting-labels", msg, f"{msg} got different labels or words ({shown})")
            flawed.add(msg)
            continue
        merged[msg] = (entries[0][0], next(iter(words), None))  # LABEL-2: identical duplicates merge
    new_rules = {msg for msg, (label, _) in merged.items() if label.records_rule}
    new_rules |= {msg for msg in optional if msg not in merged}  # TAKEOVER-20: an unlabeled pick is a rule
    accepted: list[LabeledMessage] = []
    replaced: list[tuple[str, str]] = []
    for msg in dict.fromkeys(offered_ids):
        if msg not in merged:
            if msg not in flawed and msg not in optional:
                reader.defect("missing-label", msg, f"{msg} has no label; every offered message needs one")
            continue
        label, given_words = merged[msg]
        check = check_targets(msg, label, rules, new_rules)
        for target, problem in check.problems:
            why = "names no rule" if problem == "unknown-target" else "is not an earlier message"
            reader.defect(problem, msg, f"{msg}: lift target {target} {why}")
        replaced.extend((msg, target) for target in check.replaced)
        accepted.append(LabeledMessage(msg, check.label, given_words))
    return accepted, replaced


def _read_items(
    reader: _Reader,
    obj: dict[str, Any],
    key: str,
    shape: type[_Item],
    ledger: Collection[str],
) -> list[_Item]:
    raw = reader.items(obj, key)
    reader.over(f"`{key}`", len(raw), BOUNDS[key], "items")
    kept: list[_Item] = []
    for index, item in enumerate(raw):
        try:
            parsed = shape.model_validate(item)
        except ValidationError:
            reader.defect("wrong-type", None, f"{key}[{index}] does not have the schema's fields and types")
            reader.dropped[key] += 1
            continue
        for name in ("text", "why", "name", "value"):
            value = getattr(parsed, name, None)
            if isinstance(value, str):
                reader.over(f"{key}[{index}].{name}", len(value), BOUNDS[name], "characters")
        evidence = getattr(parsed, "evidence", None)
        if evidence is not None:
            known = list(dict.fromkeys(e for e in evidence if e in ledger))  # DIFF-14
            reader.dropped["evidence"] += sum(1 for e in evidence if e not in ledger)
            reader.over(f"{key}[{index}].evidence", len(known), BOUNDS["evidence"], "ids")
            parsed = parsed.model_copy(update={"evidence": known})
        kept.append(parsed)
    return kept


def _read_text(reader: _Reader, obj: dict[str, Any], key: str, required: bool) -> str | None:
    if key not in obj:
        if required:
            reader.defect("missing-field", None, f"`{key}` is missing")
        return None
    value = obj[key]
    if not isinstance(value, str):
        reader.defect("wrong-type", None, f"`{key}` must be a string")
        return None
    reader.over(f"`{key}`", len(value), BOUNDS[key], "characters")
    return value


def verify_answer(
    obj: object,
    offered_ids: Sequence[str],
    ledger_ids: Collection[str],
    *,
    rules: Sequence[Rule] = (),
    label_optional: Collection[str] = (),
) -> ParsedAnswer:
    """Check a decoded JSON value against the schema (DIFF-5, DIFF-6, DIFF-14..16, LABEL-1..3, LABEL-8).

    ``offered_ids`` in offered order; ``ledger_ids`` the C/E ids evidence may cite; ``rules`` the state's
    rules for target checks; ``label_optional`` offered messages that may go unlabeled (picked takeover
    messages).
    """
    if not isinstance(obj, dict):
        return ParsedAnswer(
            False,
            DraftAnswer(),
            (Defect("not-an-object", None, "the answer is not a JSON object"),),
            form="none",
        )
    if not answer_shaped(obj):
        return ParsedAnswer(False, DraftAnswer(), (_NOT_PARSED["foreign"],), form="foreign")
    data = _normalized(obj)
    reader = _Reader()
    labels, replaced = _read_labels(reader, reader.items(data, "labels"), offered_ids, rules, label_optional)
    ledger = set(ledger_ids)
    draft = DraftAnswer(
        labels=tuple(labels),
        decisions=tuple(_read_items(reader, data, "decisions", DecisionItem, ledger)),
        deadEnds=tuple(_read_items(reader, data, "deadEnds", DeadEndItem, ledger)),
        values=tuple(_read_items(reader, data, "values", ValueItem, ledger)),
        narrative=_read_text(reader, data, "narrative", True),
        now=_read_text(reader, data, "now", True),
        objective=_read_text(reader, data, "objective", False),
        fixed=tuple(_read_items(reader, data, "fixed", FixedItem, ledger)),
    )
    dropped = {k: v for k, v in reader.dropped.items() if v}
    return ParsedAnswer(True, draft, tuple(reader.defects), dropped, tuple(replaced))


def verify_labels(
    obj: dict[str, Any],
    offered_ids: Sequence[str],
    *,
    rules: Sequence[Rule] = (),
    label_optional: Collection[str] = (),
) -> ParsedAnswer:
    """Only the ``labels`` of an object, checked as :func:`verify_answer` checks them (turns mode asks for
    the labels in a turn of their own, so no other field is required)."""
    reader = _Reader()
    data = _normalized(obj)
    labels, replaced = _read_labels(reader, reader.items(data, "labels"), offered_ids, rules, label_optional)
    dropped = {k: v for k, v in reader.dropped.items() if v}
    return ParsedAnswer(
        True, DraftAnswer(labels=tuple(labels)), tuple(reader.defects), dropped, tuple(replaced)
    )


def parse_answer(
    reply_text: str,
    offered_ids: Sequence[str],
    ledger_ids: Collection[str],
    *,
    rules: Sequence[Rule] = (),
    label_optional: Collection[str] = (),
) -> ParsedAnswer:
    """Extract (DIFF-17), normalize (DIFF-15) and check one reply; a reply without the answer is a defect."""
    obj, form = find_answer(reply_text) if isinstance(reply_text, str) else (None, "none")
    if obj is None:
        return ParsedAnswer(False, DraftAnswer(), (_NOT_PARSED[form],), form=form)
    return verify_answer(obj, offered_ids, ledger_ids, rules=rules, label_optional=label_optional)
