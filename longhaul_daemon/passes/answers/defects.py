"""The defects verification finds in an answer, worded as the one retry note tells the model (FAIL-1)."""

from __future__ import annotations

from longhaul_daemon.passes.answers.extract import Defect
from longhaul_daemon.passes.answers.quotes import LONG_MESSAGE, QuoteVerdict, quotable_text
from longhaul_daemon.passes.answers.quotes import OfferedMessage as ChunkMessage
from longhaul_daemon.state.sanitize import sanitize

__all__ = ["lift_defect", "quote_defect"]


def quote_defect(verdict: QuoteVerdict, message: ChunkMessage | None) -> Defect:
    """The retry-note line for rule words that must be fixed (QUOTE-4, QUOTE-6, QUOTE-16)."""
    msg = verdict.cited
    size = len(quotable_text(message.text)) if message is not None else 0
    if verdict.reason == "words-missing" and message is not None and message.excerpt_only:
        need = f"{msg} was shown only in part; give the rule's exact words from it in `words`"
    elif verdict.reason == "words-missing":
        need = f"{msg} has {size} characters (over {LONG_MESSAGE}); give the rule's exact words in `words`"
    elif verdict.reason in ("starts-inside-word", "ends-inside-word"):
        where = "start" if verdict.reason == "starts-inside-word" else "end"
        need = f"{msg}: the words {where} inside a word; copy whole words exactly as the user wrote them"
    else:
        need = f"{msg}: no user message holds the given words; copy the rule's words exactly from {msg}"
    return Defect("rule-words", msg, need)


def lift_defect(msg: str, name: str, words: str) -> Defect:
    """LIFT-5: the refused lift goes back once, with the target's words shown."""
    return Defect(
        "lift-refused",
        msg,
        f"{msg}: the lift of {name} ({sanitize(words)}) was refused: the message's own words "
        f"neither withdraw that rule nor name it. Keep `lifts {name}` only if the user withdrew it",
    )
