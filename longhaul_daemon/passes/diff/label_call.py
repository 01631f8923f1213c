"""The retry of an answer whose only flaw is messages left unlabeled: a short call for those labels alone.

FAIL-1 sends a flawed answer back whole: the chunk's prompt, the reply and a note, so the retry costs more
than the first call. When every defect is a missing label (``missing-label``), that buys nothing the labels
need: a small model that skipped two messages in a list of twenty skips them again. Ours instead: one call
showing only those messages, whole, and the rules in force a label may lift, asking for a label each
(:func:`~longhaul_daemon.passes.prompting.prompt.label_prompt`). Its labels are read as the answer's are
(:func:`~longhaul_daemon.passes.answers.extract.verify_labels`, the offered ids held to the asked ones) and
joined to the first answer, which the caller verifies again from the start, so every store check applies.
It is the chunk's one retry (FAIL-1). Pure functions; nothing raises on model output.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from longhaul_daemon.passes.answers.events import ChunkContext
from longhaul_daemon.passes.answers.extract import extract_json, verify_labels
from longhaul_daemon.passes.answers.schema import Defect, ParsedAnswer
from longhaul_daemon.passes.prompting.retry_prompts import label_prompt

__all__ = ["LABEL_DEFECT", "label_call_prompt", "missing_labels_only", "with_labels"]

LABEL_DEFECT = "missing-label"  # the one defect the label call can fix


def missing_labels_only(defects: Sequence[Defect]) -> tuple[str, ...]:
    """The messages to ask about when every defect is a missing label, in order; empty otherwise."""
    if not defects or any(d.code != LABEL_DEFECT or d.msg is None for d in defects):
        return ()
    return tuple(dict.fromkeys(d.msg for d in defects if d.msg is not None))


def label_call_prompt(asked: Sequence[str], ctx: ChunkContext) -> str:
    """The label call's user text: the asked messages whole, and the rules in force by the id a label uses
    (``R<n>``, or the ``u<n>`` of a rule an earlier chunk of this pass accepted)."""
    wanted = set(asked)
    messages = [(m.id, m.text) for m in ctx.offered if m.id in wanted]
    rules = [(r.id, r.words) for r in ctx.rules if not r.lifted]
    return label_prompt(messages, rules)


def with_labels(
    first: ParsedAnswer, reply_text: str, asked: Sequence[str], ctx: ChunkContext
) -> ParsedAnswer:
    """``first`` with the label call's labels for ``asked`` joined to its own, in offered order.

    A label for a message ``first`` already labeled, or not asked about, is not taken (the reader holds the
    offered ids to ``asked``); a defective one is left out and counted, as the answer's reader does. A reply
    with no JSON object changes nothing.
    """
    obj = extract_json(reply_text)
    if obj is None:
        return first
    have = {label.msg for label in first.answer.labels}
    ids = [msg for msg in asked if msg not in have]
    read = verify_labels(obj, ids, rules=ctx.rules, label_optional=ctx.label_optional)
    added = [label for label in read.answer.labels if label.msg in ids]
    if not added:
        return first
    order = {m.id: n for n, m in enumerate(ctx.offered)}
    labels = sorted((*first.answer.labels, *added), key=lambda label: order.get(label.msg, len(order)))
    dropped = Counter(first.dropped)
    dropped.update(read.dropped)
    return replace(
        first,
        answer=replace(first.answer, labels=tuple(labels)),
        dropped=dict(dropped),
        replaced=(*first.replaced, *read.replaced),
    )
