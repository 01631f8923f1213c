"""The one question round of a chunk: what is asked, and the narrow ways a reply may change the answer.

A question exists because a lift could be lost or missed (LIFT-7, LIFT-10). The block sent to the model is
bounded and holds whole questions only (LIFT-12, LIFT-13). The reply is read strictly (LIFT-14, LIFT-15): only
for the asked messages, only in the label form the question offered, and the only change it makes is adding
the asked target to that message's lifts. The caller then verifies the changed answer again from the start,
so every store check still applies to the added lift (LIFT-16). Pure functions; nothing raises on model
output.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from longhaul_daemon.passes.answers.events import Question
from longhaul_daemon.passes.answers.extract import extract_json, label_items
from longhaul_daemon.passes.answers.labels import Label, LabelKind, id_number, parse_label
from longhaul_daemon.passes.answers.schema import LabeledMessage, ParsedAnswer
from longhaul_daemon.state.sanitize import sanitize

__all__ = [
    "QUESTION_FOOTER",
    "QUESTION_HEADER",
    "question_block",
    "question_text",
    "read_question_reply",
    "replaced_question_text",
    "with_additions",
]

QUESTION_HEADER = (
    "A few labels of your answer need one more look. A rule is lifted only when the user withdraws it in "
    "their own words; text the user quotes, pastes or relays never lifts a rule. Answer each question below."
)
QUESTION_FOOTER = (
    'Reply with one JSON object {"labels":{"u<n>":{"label":"..."}}} holding one label for each message '
    "asked about, keyed by its id, in one of the forms its question offers."
)


def question_text(msg: str, older_message: str, older_words: str) -> str:
    """LIFT-12: one rule-label question, naming the older rule by its message and showing its words."""
    return (
        f"{msg} is labeled `rule` and may replace the rule {older_message} gave ({sanitize(older_words)}): "
        f"answer `rule and lifts {older_message}` or `rule`"
    )


def replaced_question_text(msg: str, label: str, target: str, narrowing: str, words: str) -> str:
    """LIFT-7: a lift of a rule a narrowing already replaced, shown with that narrowing."""
    return (
        f"{msg} is labeled `{label} {target}`, but {target} was already replaced by the rule {narrowing} "
        f"({sanitize(words)}): if {msg} withdraws that rule too, answer `{label} {narrowing}`; "
        f"otherwise answer `{label} {target}`"
    )


def _message_order(question: Question) -> int:
    return id_number(question.msg, "u") or 0


def question_block(questions: Sequence[Question], limit_chars: int) -> tuple[str, tuple[Question, ...]]:
    """LIFT-12, LIFT-13: the text of the question call and the questions it holds.

    Questions go in message order, each whole, while header, questions and footer together stay within
    ``limit_chars`` code points; a question that would overflow is left out, and so is every later one, so
    the asked set is a prefix in message order. ``("", ())`` when no question fits.
    """
    ordered = sorted(questions, key=_message_order)
    size = len(QUESTION_HEADER) + 1 + len(QUESTION_FOOTER)
    lines: list[str] = []
    asked: list[Question] = []
    for question in ordered:
        line = f"- {question.text}"
        if size + 1 + len(line) > limit_chars:
            break
        size += 1 + len(line)
        lines.append(line)
        asked.append(question)
    if not asked:
        return "", ()
    return "\n".join([QUESTION_HEADER, *lines, QUESTION_FOOTER]), tuple(asked)


def _forms(question: Question) -> set[Label]:
    """The labels that add ``question.target`` (LIFT-15): the form the question offered, nothing else."""
    kind: LabelKind = "rule-and-lifts" if question.kind == "rule-lift" else "lifts"
    forms = {Label(kind, (question.target,))}
    if question.answer_label is not None:
        offered = parse_label(question.answer_label)
        if offered is not None:
            forms.add(offered)
    return forms


def _names_target(given: Label, question: Question) -> bool:
    """A withdrawal question (:mod:`.doubts`) is answered by a lift naming its target."""
    return (
        question.kind == "withdrawal"
        and given.kind in ("lifts", "rule-and-lifts")
        and (question.target in given.targets)
    )


def read_question_reply(reply_text: str, asked: Sequence[Question]) -> tuple[tuple[str, str], ...]:
    """LIFT-14, LIFT-15: the ``(msg, target)`` lifts a reply adds, in the order of ``asked``.

    Only the first label the reply gives for an asked message is read; labels for other messages, other
    targets or other forms, and a reply with no JSON object, add nothing.
    """
    obj = extract_json(reply_text) if isinstance(reply_text, str) else None
    items = label_items(obj.get("labels")) if obj is not None else None
    if not isinstance(items, list):
        return ()
    asked_ids = {q.msg for q in asked}
    replies: dict[str, Label | None] = {}
    for item in items:
        if not isinstance(item, dict):
            continue
        msg, label = item.get("msg"), item.get("label")
        if isinstance(msg, str) and msg in asked_ids and msg not in replies:
            replies[msg] = parse_label(label)
    added: dict[tuple[str, str], None] = {}
    for question in asked:
        given = replies.get(question.msg)
        if given is not None and (given in _forms(question) or _names_target(given, question)):
            added.setdefault((question.msg, question.target), None)
    return tuple(added)


def _target_key(target: str) -> tuple[int, int]:
    # the canonical target order of labels.parse_label: R ids first, each group by number
    return (0 if target.startswith("R") else 1, int(target[1:]) if target[1:].isdigit() else 0)


def _with_targets(label: LabeledMessage, targets: Sequence[str]) -> LabeledMessage:
    merged = sorted(dict.fromkeys([*label.label.targets, *targets]), key=_target_key)
    kind: LabelKind = label.label.kind
    if kind == "rule":
        kind = "rule-and-lifts"
    elif kind == "not-a-rule":
        kind = "lifts"
    return replace(label, label=Label(kind, tuple(merged)))


def with_additions(parsed: ParsedAnswer, additions: Sequence[tuple[str, str]]) -> ParsedAnswer:
    """LIFT-14: ``parsed`` with each added target joined to its message's label; the words stay as given.

    ``rule`` becomes ``rule and lifts``; a message the answer did not label is left alone. The caller runs
    :func:`~longhaul_daemon.passes.answers.verify.evaluate` again, so the added lifts meet every store check
    (LIFT-16).
    """
    if not additions:
        return parsed
    wanted: dict[str, list[str]] = {}
    for msg, target in additions:
        wanted.setdefault(msg, []).append(target)
    labels = tuple(
        _with_targets(label, wanted[label.msg]) if label.msg in wanted else label
        for label in parsed.answer.labels
    )
    return replace(parsed, answer=replace(parsed.answer, labels=labels))
