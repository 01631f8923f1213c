"""Each Diff call's own schema: labels keyed by the messages it offers, each held to the forms it may take.

A list of ``{msg, label}`` items bounded by ``minItems`` and ``maxItems`` does not stop a small model
skipping one message and naming another twice, or looping on the prompt's example id until its output limit
(seen with SmolLM2-135M on the model bench). So ``labels`` is an object with one required property per
offered id, in offered order (DIFF-5, ours): a constrained model writes every id exactly once, in order.

Each value is ``{label}``, the label one of :func:`label_forms` (LABEL-1): ``rule``, ``not a rule``, and the
lifts of the targets code's own withdrawal reading finds for that message before the call
(:func:`lift_targets`): a rule in force, or an earlier offered message, whose lift the store's check passes
on this message's words. No other lift could pass that check (LIFT-1, LIFT-16), so none is offered; a small
model offered every target chained ``rule and lifts`` the message before down the whole list. The exception
(ours): a message stating a withdrawal that code ties to no rule is offered the rules in force before it,
and the rule the model names is flagged, not lifted (verify.py). The model
confirms or ignores code's reading in the call it makes anyway, and a rule that replaces one without
withdrawal words still gets its LIFT-10 question. A message whose rule needs exact words (QUOTE-4) takes
``{label, words}``; a message that may go unlabeled (a picked takeover message, TAKEOVER-20) may be
``null``. The value is an object, not the bare label, because a small model anchors on the ``label`` key:
asked for bare strings it filled them with the first words of the conversation.

Two limits, both ours. A label names one target: pairs would multiply the forms, and the question round
asks about a narrowing a lift missed (LIFT-7). And OpenAI takes at most 1,000 enum values in a schema: past
:data:`LABEL_FORMS_CAP` a call's labels are plain strings, still keyed. A route without the schema may send
any LABEL-1 label, keyed or as the list (:func:`~.extract.label_items`); the reader takes either, and the
store checks every lift as before.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, Final

from longhaul_daemon.models.structured import OutputSchema
from longhaul_daemon.passes.answers.judged import judged_text
from longhaul_daemon.passes.answers.one_offs import bounded_to_once
from longhaul_daemon.passes.answers.quotes import LONG_MESSAGE, OfferedMessage, quotable_text
from longhaul_daemon.passes.answers.schema import ANSWER_SCHEMA
from longhaul_daemon.passes.answers.withdrawal_reading import (
    StandingRule,
    forgets,
    lift_checked,
    message_number,
    standing_rules,
    untied_withdrawal,
    withdrawal_candidates,
)
from longhaul_daemon.state.model import Rule

__all__ = [
    "LABEL_FORMS_CAP",
    "LEDGER_ENUM_CAP",
    "answer_schema",
    "keyed_labels",
    "label_call_schema",
    "label_forms",
    "ledger_bound",
    "lift_targets",
    "needs_words",
    "offers_lifts",
    "question_schema",
    "untied_messages",
]

LABEL_FORMS_CAP: Final = 800  # enum values in one call's labels; OpenAI refuses a schema past 1,000 in all
# ledger ids a call's evidence may be held to; a bigger chunk cites freely. Each shown id is an enum value
# three times (two evidence lists, and `fixed`), so with the labels' cap a schema holds at most 980 of the
# 1,000 OpenAI takes.
LEDGER_ENUM_CAP: Final = 60
_NULL: Final = {"type": "null"}


def label_forms(targets: Sequence[str]) -> list[str]:
    """LABEL-1's forms with one target each, as the canonical spelling :func:`~.labels.parse_label` reads."""
    return [
        "rule",
        "not a rule",
        *(f"lifts {t}" for t in targets),
        *(f"rule and lifts {t}" for t in targets),
    ]


def needs_words(message: OfferedMessage) -> bool:
    """Whether a ``rule`` label on ``message`` needs exact words (QUOTE-4): longer than a long message, or
    shown as an excerpt only (QUOTE-16). Shorter ones are recorded whole (QUOTE-2, QUOTE-3)."""
    return message.excerpt_only or len(quotable_text(message.text)) > LONG_MESSAGE


UNTIED_TARGETS = 8
"""Rules offered to a withdrawal code ties to none (the newest ones): a lift of one is flagged, not made."""


def lift_targets(offered: Sequence[OfferedMessage], rules: Sequence[Rule]) -> dict[str, list[str]]:
    """For each offered message, the targets whose lift the store's check would pass on its words (LIFT-1,
    LIFT-2, LIFT-4): the rules in force (``rules``, by the id a label uses) and the earlier offered messages
    short enough to be a rule whole, read as the rule they would give. Code's own withdrawal reading
    (:func:`~.withdrawal_reading.withdrawal_candidates`), run before the call instead of after it.

    Ours besides: a message that states a withdrawal code ties to no rule (:func:`untied_messages`) is
    offered the newest :data:`UNTIED_TARGETS` rules in force given before it (never an earlier message of
    the chunk, which no label has made a rule yet). The store refuses such a lift (LIFT-4); the model's
    choice flags that rule as possibly withdrawn, with the user's sentence under it."""
    standing = _lift_standing(offered, rules)
    candidates = withdrawal_candidates(offered, standing)
    found: dict[str, list[str]] = {}
    for candidate in candidates:
        if candidate.passes and candidate.rule.name not in found.get(candidate.msg, ()):
            found.setdefault(candidate.msg, []).append(candidate.rule.name)
    in_force = standing_rules(rules)  # an earlier message of the chunk is no rule before it is labeled
    lifted = lift_checked(candidates)
    for message in offered:
        if untied_withdrawal(message, lifted):
            here = message_number(message.id)
            older = [r.name for r in in_force if message_number(r.message) < here]
            if older:
                found[message.id] = older[-UNTIED_TARGETS:]
    for message in offered:  # an exception for this once lifts nothing (verify.py), so none is offered
        if message.id in found and bounded_to_once(message.text):
            del found[message.id]
    return found


def untied_messages(offered: Sequence[OfferedMessage], rules: Sequence[Rule]) -> frozenset[str]:
    """The offered messages that state a withdrawal code ties to no rule
    (:func:`~.withdrawal_reading.untied_withdrawal`), read as :func:`lift_targets` reads them."""
    candidates = withdrawal_candidates(offered, _lift_standing(offered, rules))
    lifted = lift_checked(candidates)
    return frozenset(m.id for m in offered if untied_withdrawal(m, lifted))


def offers_lifts(offered: Sequence[OfferedMessage]) -> bool:
    """Whether a call over ``offered`` may offer some message a lift, read message by message and never rule
    by rule, so a pass pays for it once per message: a lift passes only for a message that holds a LIFT-2
    expression or forgets a rule, and a withdrawal tied to no rule must state one (:func:`lift_targets`). A
    little wider than the targets themselves (such a message may tie no rule there is), never narrower: with
    none, no label can lift, and the prompt leaves the lifting rules out."""
    return any(forgets(judged_text(m.text)) or untied_withdrawal(m, frozenset()) for m in offered)


def _lift_standing(offered: Sequence[OfferedMessage], rules: Sequence[Rule]) -> list[StandingRule]:
    standing = standing_rules(rules)
    for message in offered:
        words = quotable_text(message.text)
        if words and not needs_words(message):
            standing.append(StandingRule(message.id, message.id, words))
    return standing


def keyed_labels(
    offered: Sequence[str],
    *,
    lifts: Mapping[str, Sequence[str]] | None = None,
    with_words: Collection[str] = (),
    optional: Collection[str] = (),
) -> dict[str, Any]:
    """The ``labels`` object: one required property per id of ``offered`` (repeats collapse), in order, each
    ``{label}``.

    ``lifts``: the targets each message's label may name (none: ``rule`` and ``not a rule`` only; ``None``
    for the whole map: plain strings); ``with_words``: ids whose value is ``{label, words}``; ``optional``:
    ids whose value may be ``null``.
    """
    ids = list(dict.fromkeys(offered))
    forms = [label_forms((lifts or {}).get(msg, ())) for msg in ids]
    plain = lifts is None or sum(map(len, forms)) > LABEL_FORMS_CAP
    properties: dict[str, Any] = {}
    for msg, allowed in zip(ids, forms, strict=True):
        label: dict[str, Any] = {"type": "string"} if plain else {"type": "string", "enum": allowed}
        fields = (
            {"label": label, "words": {"anyOf": [{"type": "string"}, _NULL]}}
            if msg in with_words
            else {"label": label}
        )
        value = {
            "type": "object",
            "properties": fields,
            "required": list(fields),
            "additionalProperties": False,
        }
        properties[msg] = {"anyOf": [value, _NULL]} if msg in optional else value
    return {"type": "object", "properties": properties, "required": ids, "additionalProperties": False}


def _labels_only(name: str, labels: dict[str, Any], description: str) -> OutputSchema:
    schema = {
        "type": "object",
        "properties": {"labels": labels},
        "required": ["labels"],
        "additionalProperties": False,
    }
    return OutputSchema(name, schema, description)


def answer_schema(
    offered: Sequence[OfferedMessage],
    *,
    lifts: Mapping[str, Sequence[str]] | None = None,
    optional: Collection[str] = (),
    ledger_shown: Sequence[str] | None = None,
) -> OutputSchema:
    """:data:`~.schema.ANSWER_SCHEMA` for one call, its ``labels`` keyed by the offered messages.

    ``ledger_shown``: the ledger ids the call's prompt shows (DIFF-14 asks evidence of them), held to them
    by :func:`ledger_bound` when given. Only the parts changed are copied; the rest is shared with the
    template, which no reader mutates (the providers copy before they add to a schema), so no pass pays for
    a deep copy."""
    template = ANSWER_SCHEMA.schema
    labels = keyed_labels(
        [m.id for m in offered],
        lifts=lifts,
        with_words={m.id for m in offered if needs_words(m)},
        optional=optional,
    )
    properties = {**template["properties"], "labels": labels}
    if ledger_shown is not None:
        properties.update(ledger_bound(template["properties"], ledger_shown))
    schema = {**template, "properties": properties}
    return OutputSchema(ANSWER_SCHEMA.name, schema, ANSWER_SCHEMA.description)


def ledger_bound(properties: Mapping[str, Any], shown: Sequence[str]) -> dict[str, Any]:
    """The answer's lists that cite ledger ids, each id held to ``shown`` (DIFF-14, ours): evidence to any
    shown id, a ``fixed`` claim's ``error`` to an ``E<n>`` and ``by`` to a ``C<n>``; a list with no id to
    cite may hold no item. Free strings let a small model fill evidence with dates and paths until its
    output limit, and verification dropped every one. Left as they are (an empty dict) past
    :data:`LEDGER_ENUM_CAP` ids."""
    ids = list(dict.fromkeys(shown))
    errors = [i for i in ids if i.startswith("E")]
    commands = [i for i in ids if i.startswith("C")]
    if len(ids) > LEDGER_ENUM_CAP:
        return {}
    out: dict[str, Any] = {}
    for key in ("decisions", "deadEnds"):
        item = properties[key]["items"]
        evidence = _held_list(item["properties"]["evidence"], ids)
        out[key] = {
            **properties[key],
            "items": {**item, "properties": {**item["properties"], "evidence": evidence}},
        }
    fixed = properties["fixed"]
    if errors and commands:
        item = fixed["items"]
        held = {"error": _one_of(errors), "by": _one_of(commands)}
        out["fixed"] = {**fixed, "items": {**item, "properties": {**item["properties"], **held}}}
    else:
        out["fixed"] = {**fixed, "maxItems": 0}
    return out


def _one_of(ids: Sequence[str]) -> dict[str, Any]:
    return {"type": "string", "enum": list(ids)}


def _held_list(array: Mapping[str, Any], ids: Sequence[str]) -> dict[str, Any]:
    return {**array, "items": _one_of(ids)} if ids else {**array, "maxItems": 0}


def label_call_schema(
    asked: Sequence[OfferedMessage], *, lifts: Mapping[str, Sequence[str]] | None = None
) -> OutputSchema:
    """The label call's reply (FAIL-1, ours): a label for each asked message, keyed and held as the answer's
    are, and nothing else."""
    labels = keyed_labels(
        [m.id for m in asked], lifts=lifts, with_words={m.id for m in asked if needs_words(m)}
    )
    return _labels_only("diff_label_reply", labels, "A label for each message that had none.")


def question_schema(asked: Sequence[str]) -> OutputSchema:
    """The question call's reply (LIFT-14): one label for each asked message and nothing else, so a
    constrained model spends no output on the answer's other lists, which the reply's reader ignores.

    The labels stay free strings: a question offers a change and a way to decline, and only a reply in the
    offered form changes anything (LIFT-15), so a weak model forced to pick one could confirm a lift it never
    read; keyed, it still cannot skip or repeat a message."""
    return _labels_only("diff_question_reply", keyed_labels(asked), "A label for each message asked about.")
