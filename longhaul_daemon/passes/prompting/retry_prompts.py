"""The prompts of the calls that may follow a chunk's first: the retry note and the label, words and question
calls.

Each short call shows only the messages it asks about, whole, in a data block whose tag is a hash of them
(DIFF-9), never the chunk's state and conversation again: that made a retry cost as much as the first call.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence

from longhaul_daemon.passes.answers.extract import Defect
from longhaul_daemon.passes.prompting.message_text import TAG_CHARS, clean, message_header
from longhaul_daemon.passes.prompting.prompt import data_block
from longhaul_daemon.state.sanitize import sanitize

__all__ = [
    "LABEL_CALL_FOOTER",
    "LABEL_CALL_HEADER",
    "RETRY_HEADER",
    "WORDS_CALL_FOOTER",
    "WORDS_CALL_HEADER",
    "label_prompt",
    "question_prompt",
    "retry_note",
    "words_prompt",
]


def _tag(shown: Iterable[tuple[str, str]]) -> str:
    """A data block tag no shown text can forge: a hash of every text the call shows."""
    digest = hashlib.sha256()
    for _, text in shown:
        digest.update(clean(text).encode("utf-8", "replace"))
    return digest.hexdigest()[:TAG_CHARS]


def _shown_whole(tag: str, asked: Sequence[tuple[str, str]]) -> str:
    return "\n".join(f"{message_header(tag, uid, len(text))}\n{clean(text)}" for uid, text in asked)


def question_prompt(asked: Sequence[tuple[str, str]], block: str) -> str:
    """The user text of a chunk's question call: each asked message (``u<n>``, text) whole in a data block,
    then the questions.

    The questions show the older rule's words (LIFT-12), so the asked messages are all the model needs; the
    chunk's state and conversation are not sent again, which made the round cost as much as the first call.
    """
    tag = _tag(asked)
    body = _shown_whole(tag, asked)
    return "\n\n".join(
        ["The user messages asked about, shown whole:", data_block("messages", tag, body), block]
    )


LABEL_CALL_HEADER = (
    "Your answer gave no label to the user messages below. Label each of them once: `rule` when the user "
    "asks for something to hold for later work, `not a rule` for a request about this moment, a question or "
    "anything else, `lifts T` when the user withdraws a rule in force."
)
LABEL_CALL_FOOTER = (
    'Reply with one JSON object {"labels":{"u<n>":{"label":"..."}}} holding one label for each message '
    "above, keyed by its id; `words` beside the label only for a rule in a message marked as needing exact "
    "words."
)


def label_prompt(asked: Sequence[tuple[str, str]], rules: Sequence[tuple[str, str]]) -> str:
    """The user text of the label call: the rules in force a label may lift (id, words) and each unlabeled
    message (``u<n>``, text) whole, each list in a data block, then what to send.

    Only these messages are sent, not the chunk's conversation again: that is what made the full retry cost
    as much as the first call, and a weak model labels a short list it can see whole more reliably.
    """
    tag = _tag((*rules, *asked))
    ruled = "\n".join(f"{rid}: {sanitize(words)}" for rid, words in rules) or _NO_RULES
    body = _shown_whole(tag, asked)
    return "\n\n".join(
        [
            LABEL_CALL_HEADER,
            "Rules in force:",
            data_block("rules", tag, ruled),
            "The user messages to label, shown whole:",
            data_block("messages", tag, body),
            LABEL_CALL_FOOTER,
        ]
    )


_NO_RULES = "(none)"


WORDS_CALL_HEADER = (
    "Your answer labeled each user message below `rule`, but its `words` could not be found in it, for the "
    "reason noted. Copy the rule from each message exactly as the user wrote it: the same characters, case "
    "and punctuation, starting and ending at word boundaries."
)
WORDS_CALL_FOOTER = (
    'Reply with one JSON object {"words":{"u<n>":"..."}} holding the words for each message above, or null '
    "for a message that gives no rule after all."
)


def words_prompt(asked: Sequence[tuple[str, str]], note: str) -> str:
    """The user text of the words call: each asked message (``u<n>``, text) whole in a data block, then
    ``note``, what was wrong with the words the answer gave (FAIL-1), then what to send."""
    tag = _tag(asked)
    body = _shown_whole(tag, asked)
    return "\n\n".join([WORDS_CALL_HEADER, data_block("messages", tag, body), note, WORDS_CALL_FOOTER])


RETRY_HEADER = "Your previous answer had these problems. Send the whole JSON answer again with them fixed:"


def retry_note(defects: Sequence[Defect], limit_chars: int, header: str = RETRY_HEADER) -> str:
    """FAIL-1, FAIL-3: the defects, one whole line each, at most ``limit_chars`` code points in all."""
    if limit_chars <= 0:
        return ""
    if len(header) > limit_chars:
        return header[: max(0, limit_chars - 1)] + "…" if limit_chars > 1 else header[:limit_chars]
    lines = [header]
    size = len(header)
    for at, defect in enumerate(defects):
        line = "- " + sanitize(defect.text)
        left = len(defects) - at - 1
        reserve = len(f"\n({left} more problems not shown)") if left else 0
        if size + 1 + len(line) + reserve > limit_chars:
            more = f"({len(defects) - at} more problems not shown)"
            if size + 1 + len(more) <= limit_chars:
                lines.append(more)
            break
        lines.append(line)
        size += 1 + len(line)
    return "\n".join(lines)
