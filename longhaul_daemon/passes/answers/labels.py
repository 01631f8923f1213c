"""A label decides what enters the state, so its string is read strictly and its lift targets checked here.

A label (LABEL-1) is exactly one of ``rule``, ``not a rule``, ``lifts T`` or ``rule and lifts T``, T being one
or more ``R<n>``/``u<n>`` targets separated by commas. Decisions (LABEL-1 proposal): letter case and
whitespace around the words, between them and around the commas are ignored (``"Rule And Lifts  r1 ,U4"``
reads as ``rule and lifts R1, u4``); nothing else is tolerated: no missing space (``notarule``), no trailing
comma, no quotes, no ``and`` between targets, no id with a leading zero. Targets are stored canonically (``R``
upper case, ``u`` lower case, deduplicated, ``R`` ids first, each group in number order), so two spellings of
the same label compare equal and identical duplicates merge (LABEL-2). Nothing here raises on model output.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Literal

from longhaul_daemon.state.model import Rule

__all__ = [
    "Label",
    "LabelKind",
    "TargetCheck",
    "check_targets",
    "format_label",
    "id_number",
    "parse_label",
]

LabelKind = Literal["rule", "not-a-rule", "lifts", "rule-and-lifts"]

_TARGET = r"[ru][1-9][0-9]{0,8}"
_LABEL = re.compile(
    rf"\A\s*(?:(?P<rule>rule)|(?P<not>not\s+a\s+rule)|(?:(?P<both>rule\s+and\s+)?lifts\s+"
    rf"(?P<targets>{_TARGET}(?:\s*,\s*{_TARGET})*)))\s*\Z",
    re.IGNORECASE,
)
_ID = re.compile(r"\A([RCEu])([1-9][0-9]{0,8})\Z")


@dataclass(frozen=True)
class Label:
    """One parsed label; ``targets`` is empty for ``rule`` and ``not-a-rule`` and never empty otherwise."""

    kind: LabelKind
    targets: tuple[str, ...] = ()

    @property
    def records_rule(self) -> bool:
        """Whether this label records a rule (``rule`` or ``rule-and-lifts``)."""
        return self.kind in ("rule", "rule-and-lifts")


def id_number(value: str, prefix: str) -> int | None:
    """The n of an id ``<prefix><n>`` (``u14`` → 14), or None when ``value`` is not such an id."""
    match = _ID.match(value)
    if match is None or match.group(1) != prefix:
        return None
    return int(match.group(2))


def _target_key(target: str) -> tuple[int, int]:
    return (0 if target[0] == "R" else 1, int(target[1:]))


def parse_label(text: object) -> Label | None:
    """The label ``text`` spells (LABEL-1), or None when it is not exactly one of the four forms."""
    if not isinstance(text, str) or len(text) > 2000:
        return None
    match = _LABEL.match(text)
    if match is None:
        return None
    if match.group("rule"):
        return Label("rule")
    if match.group("not"):
        return Label("not-a-rule")
    raw = (part.strip() for part in match.group("targets").split(","))
    targets = {("R" if part[0] in "rR" else "u") + part[1:] for part in raw}
    kind: LabelKind = "rule-and-lifts" if match.group("both") else "lifts"
    return Label(kind, tuple(sorted(targets, key=_target_key)))


def format_label(label: Label) -> str:
    """The canonical spelling of ``label``, as the prompt and retry notes write it."""
    if label.kind == "rule":
        return "rule"
    if label.kind == "not-a-rule":
        return "not a rule"
    prefix = "rule and lifts " if label.kind == "rule-and-lifts" else "lifts "
    return prefix + ", ".join(label.targets)


TargetProblem = Literal["unknown-target", "later-target"]


@dataclass(frozen=True)
class TargetCheck:
    """A label after LABEL-8: defective and silently dropped targets removed, the rest kept.

    ``problems`` lists each defective target with its reason (a format defect, FAIL-1); ``replaced`` lists
    kept targets naming a rule a narrowing already replaced (LIFT-7: a question for the lift step, not a
    defect); ``silently_dropped`` lists targets already lifted plainly (LABEL-8, FAIL-18). A ``lifts`` label
    left with no target reads ``not a rule`` and a ``rule and lifts`` one reads ``rule``: the message still
    counts as judged.
    """

    label: Label
    problems: tuple[tuple[str, TargetProblem], ...] = ()
    replaced: tuple[str, ...] = ()
    silently_dropped: tuple[str, ...] = field(default=())


def _replaced(rule: Rule, rules: Sequence[Rule]) -> bool:
    """Whether a lifted rule was lifted by a replacement: its lifting message gave a rule of its own."""
    return rule.liftedBy is not None and any(other.message == rule.liftedBy for other in rules)


def check_targets(
    message: str, label: Label, rules: Sequence[Rule], new_rule_messages: Collection[str] = ()
) -> TargetCheck:
    """Check the targets of ``message``'s label (LABEL-8, LABEL-9, LABEL-16).

    ``rules`` are the state's rules (in force and lifted); ``new_rule_messages`` the offered ``u<n>`` ids this
    answer labels ``rule`` or ``rule and lifts`` (new rules, named by their message until Close). An ``R<n>``
    target must name a rule in the state; a ``u<n>`` target must name a message before ``message`` that gave a
    rule, in the state or in this answer. Each target is judged on its own (LABEL-9).
    """
    if not label.targets:
        return TargetCheck(label)
    here = id_number(message, "u")
    by_id = {rule.id: rule for rule in rules}
    by_message: dict[str, Rule] = {}
    for rule in rules:
        by_message.setdefault(rule.message, rule)
    kept: list[str] = []
    seen_rules: set[str] = set()
    problems: list[tuple[str, TargetProblem]] = []
    replaced: list[str] = []
    dropped: list[str] = []
    for target in label.targets:
        if target[0] == "u":
            number = id_number(target, "u")
            if here is not None and number is not None and number >= here:
                problems.append((target, "later-target"))
                continue
            found = by_message.get(target)
            if found is None and target in new_rule_messages:
                kept.append(target)  # LABEL-16: a rule new in this answer, named by its message
                continue
        else:
            found = by_id.get(target)
        if found is None:
            problems.append((target, "unknown-target"))
            continue
        rule = found
        if rule.id in seen_rules:
            continue  # R3 and the u<n> that gave R3 name one rule: merged
        seen_rules.add(rule.id)
        if rule.lifted and not _replaced(rule, rules):
            dropped.append(target)
            continue
        if rule.lifted:
            replaced.append(target)
        kept.append(target)
    kind: LabelKind = label.kind
    if not kept:
        kind = "rule" if label.kind == "rule-and-lifts" else "not-a-rule"
    return TargetCheck(Label(kind, tuple(kept)), tuple(problems), tuple(replaced), tuple(dropped))
