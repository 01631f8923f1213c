"""A rule is withdrawn only by the user's own withdrawing words about it: the store's lift check (LIFT-1..8).

A lift of X passes when the judged text (QUOTE-15, :mod:`longhaul_daemon.passes.answers.judged`) holds a
withdrawal expression (LIFT-2, LIFT-3) and shares a significant word with X's recorded text (LIFT-4), one
the rules X replaced lack (LIFT-8). A permission holds none, so it lifts nothing (LIFT-6). Pure; nothing
raises. Decisions (the proposals unless said otherwise):

- LIFT-2: :data:`WITHDRAWAL_EXPRESSIONS` as whole words, any case, any whitespace between words, ' and ’
  alike; "forget it", "lifts", "you may" do not count. Ours besides: a released obligation, one of
  :data:`NEGATED_OBLIGATIONS` followed later in its sentence by one of :data:`FROM_NOW_ON` ("no need to
  ask me about deletions any longer"). A negated order with the same words ("don't use print anymore")
  orders something, so it withdraws nothing. Also ours, as a weak model's users phrase it
  (:func:`rule_withdrawals_in`, each within one sentence): a :data:`RULE_NOUNS` noun, up to four naming
  words, is/are/was/were/'s/has been/have been, "now" or not, and one of :data:`ENDED_STATES` ("the logging
  rule is dropped"); one of :data:`DROPPING_VERBS`, the/that/this/my/our/your, up to four words and a rule
  noun ("scrap the logging-only rule"), not right after a negation ("don't drop the rule" keeps it); "never
  mind" with a rule noun or :data:`FROM_NOW_ON` later in its sentence; :data:`FORGET_WHAT_I_SAID` (with
  "ignore/disregard what I said about" and "changed my mind about"). An ended state needs the rule noun: "the
  build is gone" reports on the work, it ends no rule, and "the logging policy is void" ends one; "off" and
  "over" are no endings ("the limit is off by one", "the limit is over 100"). The rule nouns take in what
  users call a rule besides ("instruction", "policy", "guideline", "convention").
- LIFT-3: "instead of" counts when a significant word of X follows it in the same sentence.
- LIFT-4: QUOTE-6 words, casefolded, no stemming; words under 3 characters and :data:`STOP_WORDS` are
  ignored. Ours: the stop words add conjunctions, "not", the withdrawal expressions' own words, "now"
  ("we may add packages now" against "from now on, run the tests") and the rule nouns ("rule", "limit" …),
  which any withdrawal shares with any rule ("the lint rule doesn't apply" does not lift
  "always apply the formatter", "drop the line-length limit" does not lift "respect the rate limit"). The
  "never" of "never mind" is no shared word either; any other "never" is one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from longhaul_daemon.passes.answers.judged import judged_text
from longhaul_daemon.passes.answers.quotes import cut_at, is_word_char_at

__all__ = [
    "DROPPING_VERBS",
    "ENDED_STATES",
    "FORGET_WHAT_I_SAID",
    "FROM_NOW_ON",
    "INSTEAD_OF",
    "NEGATED_OBLIGATIONS",
    "NEVER_MIND",
    "RULE_NOUNS",
    "STOP_WORDS",
    "WITHDRAWAL_EXPRESSIONS",
    "LiftVerdict",
    "check_lift",
    "may_withdraw",
    "passes_lift_check",
    "passes_question_check",
    "released_obligations_in",
    "rule_withdrawals_in",
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
# LIFT-2, ours: the user ends a rule by calling it one and saying it is over, or by ordering it dropped
RULE_NOUNS: tuple[str, ...] = (
    "rule",
    "rules",
    "requirement",
    "requirements",
    "restriction",
    "restrictions",
    "limit",
    "limits",
    "ban",
    "bans",
    "constraint",
    "constraints",
    "instruction",
    "instructions",
    "policy",
    "policies",
    "guideline",
    "guidelines",
    "convention",
    "conventions",
)
ENDING_AUXILIARIES: tuple[str, ...] = ("is", "are", "was", "were", "has been", "have been")  # and "'s"
ENDED_STATES: tuple[str, ...] = (
    "cancelled",
    "canceled",
    "dropped",
    "gone",
    "obsolete",
    "removed",
    "rescinded",
    "retired",
    "revoked",
    "scrapped",
    "suspended",
    "void",
    "waived",
)
DROPPING_VERBS: tuple[str, ...] = (  # and their -s, -ed and -ing forms ("I'm dropping the requirement")
    "drop",
    "drops",
    "dropping",
    "scrap",
    "scraps",
    "scrapping",
    "cancel",
    "cancels",
    "cancelling",
    "canceling",
    "ditch",
    "ditches",
    "ditching",
    "remove",
    "removes",
    "removing",
    "retire",
    "retires",
    "retiring",
    "revoke",
    "revokes",
    "revoking",
    "forget",
    "forgetting",
    "ignore",
    "ignoring",
    "abandon",
    "abandoning",
)
RULE_DETERMINERS: tuple[str, ...] = ("the", "that", "this", "my", "our", "your")
NEVER_MIND = "never mind"
FORGET_WHAT_I_SAID: tuple[str, ...] = (
    "forget what I said about",
    "forget what I told you about",
    "forget everything I said about",
    "ignore what I said about",
    "ignore what I told you about",
    "disregard what I said about",
    "disregard what I told you about",
    "changed my mind about",
)
MAX_NAMING_WORDS = 4  # LIFT-2, ours: words between a rule noun and what ends or names it ("the X Y rule")
MIN_WORD = 3  # LIFT-4: shorter words are never shared words

# LIFT-4: articles; pronouns; auxiliaries and modals with their contractions; prepositions; and (extension,
# see the module docstring) conjunctions, "not", the words of the withdrawal expressions, the rule nouns.
_STOP_TEXT = """
a an the every each all some both either neither another other such
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
requirement requirements restriction restrictions limit limits ban bans constraint constraints
instruction instructions policy policies guideline guidelines convention conventions
cancelled canceled dropped gone removed rescinded retired revoked scrapped obsolete void suspended waived
drop scrap cancel ditch remove retire revoke forget ignore abandon mind said told disregard changed
drops dropping scraps scrapping cancels cancelling canceling ditches ditching removes removing retires
retiring revokes revoking forgetting ignoring abandoning
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
    """LIFT-4: the case-folded words of ``text`` that can be shared: 3 characters or more, not stop words,
    and not the "never" of "never mind" (ours: a withdrawal's own word, unlike the "never" of a rule)."""
    out: set[str] = set()
    ranges = words_of(text)
    for at, (start, end) in enumerate(ranges):
        if end - start < MIN_WORD:
            continue
        word = _fold(text[start:end])
        if word in STOP_WORDS or (word == "never" and _mind_follows(text, ranges, at)):
            continue
        out.add(word)
    return frozenset(out)


def _mind_follows(text: str, ranges: Sequence[tuple[int, int]], at: int) -> bool:
    if at + 1 >= len(ranges):
        return False
    end, (start, after) = ranges[at][1], ranges[at + 1]
    return text[end:start].isspace() and _fold(text[start:after]) == "mind"


def _expression_pattern(expression: str) -> re.Pattern[str]:
    parts = [re.escape(part) for part in expression.split()]
    return re.compile(r"\s+".join(parts), re.IGNORECASE)


_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (expression, _expression_pattern(expression)) for expression in WITHDRAWAL_EXPRESSIONS
)
_INSTEAD_OF = _expression_pattern(INSTEAD_OF)
_OBLIGATIONS = tuple(_expression_pattern(expression) for expression in NEGATED_OBLIGATIONS)
_FROM_NOW_ON = tuple(_expression_pattern(expression) for expression in FROM_NOW_ON)


def _one_of(words: Iterable[str]) -> str:
    return "(?:" + "|".join(r"[^\S\n]+".join(map(re.escape, w.split())) for w in words) + ")"


# Within one sentence (LIFT-3: a line break ends one): the gaps are whitespace but a line break, and a naming
# word is any run of characters but whitespace, a comma, a semicolon, a dash or a sentence-ending mark.
_GAP = r"[^\S\n]+"
_NAMING_WORD = r"(?:[^\s,;.!?…\u2014\u2013]|[.!?…](?=\S))+"
_NAMING = rf"(?:{_NAMING_WORD}{_GAP}){{0,{MAX_NAMING_WORDS}}}"
_WORD_START = r"(?<![\w'-])"
_WORD_END = r"(?![\w-]|'\w)"
_NOUN = rf"(?P<noun>{_one_of(RULE_NOUNS)})"
_ENDED_RULE = re.compile(
    rf"{_WORD_START}{_NOUN}(?:(?P<s>'s)|{_GAP}{_NAMING}(?P<aux>{_one_of(ENDING_AUXILIARIES)}))"
    rf"{_GAP}(?:now{_GAP})?(?P<state>{_one_of(ENDED_STATES)}){_WORD_END}",
    re.IGNORECASE,
)
_DROPPED_RULE = re.compile(
    rf"{_WORD_START}(?P<verb>{_one_of(DROPPING_VERBS)}){_GAP}{_one_of(RULE_DETERMINERS)}{_GAP}{_NAMING}"
    rf"{_NOUN}{_WORD_END}",
    re.IGNORECASE,
)
_NEVER_MIND = _expression_pattern(NEVER_MIND)
_RULE_NOUN = re.compile(rf"{_WORD_START}{_NOUN}{_WORD_END}", re.IGNORECASE)
_LATER = tuple(zip(FROM_NOW_ON, _FROM_NOW_ON, strict=True))
_FORGET_WHAT_I_SAID = tuple(_expression_pattern(expression) for expression in FORGET_WHAT_I_SAID)
# An order not to drop a rule keeps it ("don't drop the indentation rule", "never ignore that limit"), and a
# rule that "never was removed" stands.
_ORDER_NOT_TO = re.compile(r"(?:\b\w+n't|\bnot|\bcannot|\bnever)(?:\s+ever)?\s+\Z", re.IGNORECASE)


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


def _ordered_not_to(text: str, match: re.Match[str]) -> bool:
    return _ORDER_NOT_TO.search(text, 0, match.start()) is not None


def rule_withdrawals_in(text: str) -> tuple[str, ...]:
    """LIFT-2, ours: each way ``text`` ends a rule whatever the rule, named once in order of kind: a rule noun
    then an ended state ("rule … is cancelled"), a dropping verb aimed at a rule ("drop … rule"), "never mind"
    then a rule noun or "from now on" later in its sentence ("never mind … any more"), "forget what I said
    about". A negation right before the verb or the auxiliary ("don't drop the rule", "the rule never was
    removed") withdraws nothing."""
    text = text.replace("\u2019", "'")
    found: list[str] = []
    for match in _whole_word_matches(_ENDED_RULE, text):
        if match["aux"] and _ORDER_NOT_TO.search(text, 0, match.start("aux")):
            continue  # "the rule never was removed"
        noun, state = match["noun"].casefold(), match["state"].casefold()
        aux = " ".join(match["aux"].casefold().split()) if match["aux"] else ""
        found.append(f"{noun} … {aux} {state}" if aux else f"{noun}'s {state}")
    found.extend(
        f"{match['verb'].casefold()} … {match['noun'].casefold()}"
        for match in _whole_word_matches(_DROPPED_RULE, text)
        if not _ordered_not_to(text, match)
    )
    for match in _whole_word_matches(_NEVER_MIND, text):
        rest = _sentence_rest(text, match.end())
        named = [m["noun"].casefold() for m in _whole_word_matches(_RULE_NOUN, rest)]
        named += [w for w, p in _LATER if any(_whole_word_matches(p, rest))]
        if named:
            found.append(f"{NEVER_MIND} … {named[0]}")
    for expression, pattern in zip(FORGET_WHAT_I_SAID, _FORGET_WHAT_I_SAID, strict=True):
        if any(not _ordered_not_to(text, match) for match in _whole_word_matches(pattern, text)):
            found.append(expression)
    return tuple(dict.fromkeys(found))


# Every withdrawal expression starts with, or holds, one of these words: a text with none of them (most
# messages) is read once. Not after a letter, where no expression may start (QUOTE-6); anything else may.
_FIRST_WORDS = (*WITHDRAWAL_EXPRESSIONS, INSTEAD_OF, *NEGATED_OBLIGATIONS)
_ANCHOR_WORDS = {e.split()[0].casefold() for e in _FIRST_WORDS} | {n.casefold() for n in RULE_NOUNS}
_ANCHOR_WORDS |= {"never", "forget", "ignore", "disregard", "changed"}  # never mind; forget what I said …
_ANCHOR = re.compile(
    r"(?<![^\W\d_])(?:" + "|".join(map(re.escape, sorted(_ANCHOR_WORDS))) + ")", re.IGNORECASE
)


def may_withdraw(judged: str) -> bool:
    """Whether ``judged`` holds any withdrawal expression, "instead of" included, whatever the rule: when it
    holds none, :func:`withdrawal_expressions_in` finds none against any rule, so no rule need be tried."""
    text = judged.replace("\u2019", "'")
    return _ANCHOR.search(text) is not None and _holds_expression(text)


def _holds_expression(text: str) -> bool:
    """:func:`may_withdraw` without its first look for an anchor word."""
    if any(any(_whole_word_matches(pattern, text)) for _, pattern in (*_PATTERNS, (INSTEAD_OF, _INSTEAD_OF))):
        return True
    return bool(released_obligations_in(text) or rule_withdrawals_in(text))


def withdrawal_expressions_in(judged: str, rule_words: str) -> tuple[str, ...]:
    """LIFT-2, LIFT-3: the withdrawal expressions ``judged`` holds against the rule ``rule_words``."""
    text = judged.replace("\u2019", "'")
    found = [expr for expr, pattern in _PATTERNS if any(_whole_word_matches(pattern, text))]
    found += released_obligations_in(text)
    found += rule_withdrawals_in(text)
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
