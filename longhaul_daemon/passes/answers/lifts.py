"""A rule is withdrawn only by the user's own withdrawing words about it: the store's lift check (LIFT-1..8).

A lift of X passes when the judged text (QUOTE-15, :mod:`longhaul_daemon.passes.answers.judged`) holds a
withdrawal expression (LIFT-2, LIFT-3) and shares a significant word with X's recorded text (LIFT-4), one
the rules X replaced lack (LIFT-8). A permission holds none, so it lifts nothing (LIFT-6). Pure; nothing
raises. Decisions (the proposals unless said otherwise):

- LIFT-2: :data:`WITHDRAWAL_EXPRESSIONS` as whole words, any case, any whitespace between words, ' and ’
  alike; "forget it", "lifts", "you may" do not count. Ours besides: a released obligation, one of
  :data:`NEGATED_OBLIGATIONS` followed later in its sentence by one of :data:`FROM_NOW_ON` ("no need to
  ask me about deletions any longer"). A negated order with the same words ("don't use print anymore")
  orders something, so it withdraws nothing.
- LIFT-3: "instead of" counts when a significant word of X follows it in the same sentence.
- LIFT-4: QUOTE-6 words, casefolded, no stemming; words under 3 characters and :data:`STOP_WORDS` are
  ignored. Ours: the stop words add conjunctions, "not", the withdrawal expressions' own words, "now"
  ("we may add packages now" against "from now on, run the tests") and "rule"/"rules", which any
  withdrawal shares with any rule ("the lint rule doesn't apply" does not lift
  "always apply the formatter").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from longhaul_daemon.passes.answers.judged import judged_text
from longhaul_daemon.passes.answers.quotes import cut_at, is_word_char_at

__all__ = [
    "FROM_NOW_ON",
    "INSTEAD_OF",
    "NEGATED_OBLIGATIONS",
    "STOP_WORDS",
    "WITHDRAWAL_EXPRESSIONS",
    "LiftVerdict",
    "check_lift",
    "may_withdraw",
    "passes_lift_check",
    "passes_question_check",
    "released_obligations_in",
    "significant_words",
    "withdrawal_expressions_in",
    "words_of",
]

WITHDRAWAL_EXPRESSIONS: tuple[str, ...] = (
    "lifted",
    "no longer",
    "doesn't apply",
    "lift",
    "does not apply",
    "don't apply",
    "is withdrawn",
    "not anymore",
)
INSTEAD_OF = "instead of"
# LIFT-2, ours: the user releases an obligation from now on; both parts in one sentence, in this order
NEGATED_OBLIGATIONS: tuple[str, ...] = (
    "no need",
    "don't need",
    "doesn't need",
    "do not need",
    "does not need",
    "needn't",
    "need not",
    "don't have to",
    "doesn't have to",
    "do not have to",
    "does not have to",
    "not necessary",
    "not needed",
    "not required",
)
FROM_NOW_ON: tuple[str, ...] = ("any longer", "anymore", "any more")
MIN_WORD = 3  # LIFT-4: shorter words are never shared words

# LIFT-4: articles; pronouns; auxiliaries and modals with their contractions; prepositions; and (extension,
# see the module docstring) conjunctions, "not", the words of the withdrawal expressions, and "rule".
_STOP_TEXT = """
a an the
i me my mine myself you your yours yourself yourselves he him his himself she her hers herself it its itself
we us our ours ourselves they them their theirs themselves this that these those who whom whose which what
whatever whoever something anything nothing everything someone anyone everyone one
be am is are was were been being have has had having do does did doing will would shall should can could may
might must ought isn't aren't wasn't weren't haven't hasn't hadn't don't doesn't didn't won't wouldn't shan't
shouldn't can't cannot couldn't mustn't i'm you're we're they're it's i've you've we've they've i'll you'll
we'll they'll i'd you'd we'd they'd
about above across after against along amid among around at before behind below beneath beside besides
between beyond by despite down during except for from in inside into like near of off on onto out outside
over past per since than through throughout till to toward towards under underneath until unto up upon via
with within without
and but or nor not yet so if then because while
lift lifted longer apply applies withdrawn anymore instead rule rules
need needed necessary required any more now
"""
STOP_WORDS: frozenset[str] = frozenset(_STOP_TEXT.split())

LiftReason = Literal["ok", "no-withdrawal", "no-shared-word", "replacement-not-named"]

_SENTENCE_END = re.compile(r"[.!?…](?=\s|\Z)|\n")


def _fold(text: str) -> str:
    """Case-insensitive comparison form; the apostrophes are made one (length preserved before casefold)."""
    return text.replace("\u2019", "'").casefold()


def words_of(text: str) -> list[tuple[int, int]]:
    """The ranges of the words in ``text``: maximal runs of QUOTE-6 word characters."""
    out: list[tuple[int, int]] = []
    i = 0
    while i < len(text):
        if is_word_char_at(text, i):
            j = i + 1
            while j < len(text) and is_word_char_at(text, j):
                j += 1
            out.append((i, j))
            i = j
        else:
            i += 1
    return out


def significant_words(text: str) -> frozenset[str]:
    """LIFT-4: the case-folded words of ``text`` that can be shared: 3 characters or more, not stop words."""
    out: set[str] = set()
    for start, end in words_of(text):
        if end - start < MIN_WORD:
            continue
        word = _fold(text[start:end])
        if word not in STOP_WORDS:
            out.add(word)
    return frozenset(out)


def _expression_pattern(expression: str) -> re.Pattern[str]:
    parts = [re.escape(part) for part in expression.split()]
    return re.compile(r"\s+".join(parts), re.IGNORECASE)


_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (expression, _expression_pattern(expression)) for expression in WITHDRAWAL_EXPRESSIONS
)
_INSTEAD_OF = _expression_pattern(INSTEAD_OF)
_OBLIGATIONS = tuple(_expression_pattern(expression) for expression in NEGATED_OBLIGATIONS)
_FROM_NOW_ON = tuple(_expression_pattern(expression) for expression in FROM_NOW_ON)


def _whole_word_matches(pattern: re.Pattern[str], text: str) -> Iterable[re.Match[str]]:
    for match in pattern.finditer(text):
        if not cut_at(text, match.start()) and not cut_at(text, match.end()):
            yield match


def _sentence_rest(text: str, at: int) -> str:
    end = _SENTENCE_END.search(text, at)
    return text[at : end.start() if end else len(text)]


def released_obligations_in(text: str) -> tuple[str, ...]:
    """LIFT-2, ours: each obligation ``text`` releases from now on, as "<obligation> … <from now on>"."""
    found: list[str] = []
    for expression, pattern in zip(NEGATED_OBLIGATIONS, _OBLIGATIONS, strict=True):
        for match in _whole_word_matches(pattern, text):
            rest = _sentence_rest(text, match.end())
            later = next(
                (
                    w
                    for w, p in zip(FROM_NOW_ON, _FROM_NOW_ON, strict=True)
                    if any(_whole_word_matches(p, rest))
                ),
                None,
            )
            if later is not None:
                found.append(f"{expression} … {later}")
                break
    return tuple(found)


def may_withdraw(judged: str) -> bool:
    """Whether ``judged`` holds any withdrawal expression, "instead of" included, whatever the rule: when it
    holds none, :func:`withdrawal_expressions_in` finds none against any rule, so no rule need be tried."""
    text = judged.replace("\u2019", "'")
    if any(any(_whole_word_matches(pattern, text)) for _, pattern in (*_PATTERNS, (INSTEAD_OF, _INSTEAD_OF))):
        return True
    return bool(released_obligations_in(text))


def withdrawal_expressions_in(judged: str, rule_words: str) -> tuple[str, ...]:
    """LIFT-2, LIFT-3: the withdrawal expressions ``judged`` holds against the rule ``rule_words``."""
    text = judged.replace("\u2019", "'")
    found = [expr for expr, pattern in _PATTERNS if any(_whole_word_matches(pattern, text))]
    found += released_obligations_in(text)
    own: frozenset[str] | None = None  # the rule's words, read only when an "instead of" needs them
    for match in _whole_word_matches(_INSTEAD_OF, text):
        own = significant_words(rule_words) if own is None else own
        if own & significant_words(_sentence_rest(text, match.end())):
            found.append(INSTEAD_OF)
            break
    return tuple(found)


@dataclass(frozen=True, slots=True)
class LiftVerdict:
    """The lift check's answer: ``passed``, a reason code, what withdrew and the words tying it to X."""

    passed: bool
    reason: LiftReason
    expressions: tuple[str, ...] = ()
    shared: tuple[str, ...] = ()


def passes_lift_check(
    judged_message_text: str, rule_words: str, replaced_rule_words: Sequence[str] = ()
) -> LiftVerdict:
    """LIFT-1..LIFT-4, LIFT-6, LIFT-8: may this judged text withdraw the rule recorded as ``rule_words``?

    ``replaced_rule_words`` holds the recorded texts of the rules the target replaced, if it replaced any.
    """
    expressions = withdrawal_expressions_in(judged_message_text, rule_words)
    if not expressions:
        return LiftVerdict(passed=False, reason="no-withdrawal")
    shared = significant_words(judged_message_text) & significant_words(rule_words)
    if not shared:
        return LiftVerdict(passed=False, reason="no-shared-word", expressions=expressions)
    if replaced_rule_words:
        older: set[str] = set()
        for words in replaced_rule_words:
            older |= significant_words(words)
        if not shared - older:
            return LiftVerdict(
                passed=False,
                reason="replacement-not-named",
                expressions=expressions,
                shared=tuple(sorted(shared)),
            )
    return LiftVerdict(passed=True, reason="ok", expressions=expressions, shared=tuple(sorted(shared)))


def check_lift(
    message_text: str,
    rule_words: str,
    *,
    start: int | None = None,
    end: int | None = None,
    replaced_rule_words: Sequence[str] = (),
) -> LiftVerdict:
    """The store's lift check on a message as written: its judged text for the recorded range, then LIFT-1."""
    return passes_lift_check(judged_text(message_text, start, end), rule_words, replaced_rule_words)


def passes_question_check(
    message_text: str,
    rule_words: str,
    *,
    start: int | None = None,
    end: int | None = None,
    replaced_rule_words: Sequence[str] = (),
) -> LiftVerdict:
    """LIFT-10, LIFT-11: a rule label may raise a question about an older rule only when both the recorded
    judged text and the whole message (read as the store reads it) pass the lift check.

    The first refusal is returned.
    """
    recorded = check_lift(
        message_text, rule_words, start=start, end=end, replaced_rule_words=replaced_rule_words
    )
    if not recorded.passed:
        return recorded
    whole = check_lift(message_text, rule_words, replaced_rule_words=replaced_rule_words)
    return whole if not whole.passed else recorded
