"""The retry of an answer whose only flaw is a rule's words: a short call showing those messages alone.

QUOTE-4 returns a long message's missing or unverified words in the retry note (FAIL-1), and the full retry
sends the chunk's whole prompt again with the reply and the note: on a CPU-bound small model that doubled
the pass for a handful of words, and the same model seldom copied them exactly the second time either.
Ours: when every defect is a rule's words (``rule-words``), the one retry shows only those messages, whole,
with the note's lines, and asks for the words alone, keyed by message
(:func:`~longhaul_daemon.passes.prompting.prompt.words_prompt`). The reply's words replace the ones the
first answer gave for those messages, its labels kept; the caller verifies the joined answer from the start,
so every quote check applies (QUOTE-5..QUOTE-7), and a message whose words still do not verify goes the way
QUOTE-4 says (verify.py: code's own reading, else held back). Pure functions; nothing raises on model output.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from longhaul_daemon.models.structured import OutputSchema
from longhaul_daemon.passes.answers.events import ChunkContext
from longhaul_daemon.passes.answers.extract import extract_json
from longhaul_daemon.passes.answers.labels import Label, LabelKind
from longhaul_daemon.passes.answers.schema import Defect, LabeledMessage, ParsedAnswer
from longhaul_daemon.passes.prompting.retry_prompts import retry_note, words_prompt

__all__ = ["WORDS_DEFECT", "rule_words_only", "with_words", "words_call_prompt", "words_call_schema"]

WORDS_DEFECT = "rule-words"  # the one defect the words call can fix (answers/defects.py: quote_defect)
WORDS_NOTE_HEADER = "What was wrong:"


def rule_words_only(defects: Sequence[Defect]) -> tuple[str, ...]:
    """The messages to ask about when every defect is a rule's words, in order; empty otherwise."""
    if not defects or any(d.code != WORDS_DEFECT or d.msg is None for d in defects):
        return ()
    return tuple(dict.fromkeys(d.msg for d in defects if d.msg is not None))


def words_call_prompt(asked: Sequence[str], ctx: ChunkContext, defects: Sequence[Defect]) -> str:
    """The words call's user text: the asked messages whole, and what was wrong with each one's words, held
    to ``retry_note_chars`` as the retry note is (FAIL-3)."""
    wanted = set(asked)
    messages = [(m.id, m.text) for m in ctx.offered if m.id in wanted]
    note = retry_note([d for d in defects if d.msg in wanted], ctx.retry_note_chars, header=WORDS_NOTE_HEADER)
    return words_prompt(messages, note)


def words_call_schema(asked: Sequence[str]) -> OutputSchema:
    """``{"words": {"u<n>": "..."}}``, one string per asked message, keyed as the answer's labels are, or
    ``null`` when the model finds no rule in it after all."""
    ids = list(dict.fromkeys(asked))
    words = {
        "type": "object",
        "properties": {msg: {"anyOf": [{"type": "string"}, {"type": "null"}]} for msg in ids},
        "required": ids,
        "additionalProperties": False,
    }
    schema = {
        "type": "object",
        "properties": {"words": words},
        "required": ["words"],
        "additionalProperties": False,
    }
    return OutputSchema("diff_words_reply", schema, "The rule's exact words from each message asked about.")


def with_words(first: ParsedAnswer, reply_text: str, asked: Sequence[str]) -> ParsedAnswer:
    """``first`` with the words the call gave for ``asked`` in place of its own. A ``null`` takes the rule
    back, as a full retry's `not a rule` would (``rule and lifts T`` keeps its lifts); anything else but a
    non-empty string for an asked message is left out, and a reply with no such object changes nothing."""
    obj = extract_json(reply_text)
    given: Any = obj.get("words") if obj is not None else None
    if not isinstance(given, dict):
        return first
    wanted = set(asked)
    found: dict[str, str | None] = {
        msg: words
        for msg, words in given.items()
        if msg in wanted and (words is None or (isinstance(words, str) and words.strip()))
    }
    if not found:
        return first
    labels = tuple(
        _rewritten(label, found[label.msg]) if label.msg in found else label for label in first.answer.labels
    )
    return replace(first, answer=replace(first.answer, labels=labels))


def _rewritten(label: LabeledMessage, words: str | None) -> LabeledMessage:
    if words is not None:
        return replace(label, words=words)
    kind: LabelKind = "lifts" if label.label.targets else "not-a-rule"
    return replace(label, label=Label(kind=kind, targets=label.label.targets), words=None)
