"""Reads a clause as a standing norm written with no rule word, for the wider reading of code's second look.

Users state many rules as plain facts or bare orders: "No magic numbers.", "Tests go under tests/.",
"Commit messages are in the imperative mood.", "Use conventional commit messages." A weak model may call
them ``not a rule``, and only :func:`~longhaul_daemon.passes.answers.rule_reading.read_possible_rule` stands
between such a label and a lost rule. Pure functions over one clause's case-folded words (the vocabulary
is in :mod:`.rule_words`); each looks only at the clause's opening, so the cost is linear in its length.
Decisions (ours, tuned on the development sets counted by ``bench/rule_readings.py``):

- A prohibition opens with "no" and a noun phrase, and holds no finite verb ("No force-pushes to shared
  branches", "No TODO without a ticket number"): "No tests were run" reports, "No deprecation warning
  needed" releases, "No problem", "No need to …", "No longer …" say nothing standing. It counts where it
  opens the sentence, or follows a clause with no subject of its own (a heading, "In the firmware:", or
  an order, "Keep eval data out of training:"), never after a statement ("The build ran fine, no
  warnings").
- A norm over a kind of thing has a generic subject, a bare noun phrase with no article ("Commit
  messages", "JSON keys in API responses", "Nothing in src/", "no training script"), then a modal ("may",
  "should", "need(s)"; not "may be", which guesses), a place ("go/live/belong in …", "stay …", "follow
  …"), or a convention after "is/are" (a participle such as "pinned", a case style or format such as
  "snake_case", "in the imperative mood"). A subject with an article or a pronoun describes a thing being
  built ("The exporter writes one CSV per account", LABEL-12), and orders nothing.
- "Keep" or "Use" whose object is general ("Keep your replies short", "Use British spelling") orders a
  manner that lasts; with an object of the work in hand ("Keep the old route alive", "Use the mock
  provider", "Keep going") it asks for work now.
- "We" and a house habit ("We use tabs, not spaces", "We squash-merge here") states how the team works.
- A wish said to the agent ("I'd like you to …", "I want …") and "please", "and", "also" come before the
  order and change nothing of it.
"""

from __future__ import annotations

from collections.abc import Sequence

from longhaul_daemon.passes.answers.rule_words import (
    CASE_STYLES,
    CONVENTION_NOUNS,
    HOUSE_VERBS,
    LASTING_VERBS,
    MODALS,
    NORM_PARTICIPLES,
    NOT_NOUNS,
    NOT_PROHIBITED,
    ORDER_LEAD_INS,
    PAST_FORMS,
    PLACE_VERBS,
    PLACES,
    STATEMENT_OPENERS,
    SUBJECT_LINKS,
    THIS_WORK,
    VERB_FORMS,
)

__all__ = ["order_start", "reads_as_norm", "states_no_subject"]

_NEGATIVE_SUBJECTS = frozenset({"no", "nothing", "none"})
_GENERIC_OPENERS = _NEGATIVE_SUBJECTS | {"every", "each", "all", "any"}
# a question word opens no subject; "everything else" is the rest around an exception ("this one commit can
# keep git's message; everything else stays conventional"), said of the exception, not ordering anew
_NOT_SUBJECTS = frozenset({"what", "which", "who", "whom", "whose", "how", "why", "where", "when", "else"})
_BEFORE_ADJECTIVES = frozenset(
    {"to", "on", "in", "of", "with", "for", "at", "by", "from", "into", "the", "a", "an"}
)
_LONGEST_SUBJECT = 7  # "Identifiers and code comments in the app": a norm's subject is short


def order_start(words: Sequence[str]) -> int:
    """Where the clause's order begins, past its lead-ins ("please", "and", "I'd like you to" …)."""
    at = 0
    moved = True
    while moved:
        moved = False
        for lead in ORDER_LEAD_INS:
            if tuple(words[at : at + len(lead)]) == lead and at + len(lead) < len(words):
                at += len(lead)
                moved = True
                break
    return at


def states_no_subject(words: Sequence[str]) -> bool:
    """A clause after which a prohibition may stand: it has no subject of its own (a heading, an order)."""
    at = order_start(words)
    return at < len(words) and words[at] not in STATEMENT_OPENERS


def reads_as_norm(words: Sequence[str], opens: bool, may_prohibit: bool) -> bool:
    """A clause that states a standing norm with no rule word (the module's decisions); ``opens``: the
    clause opens its sentence; ``may_prohibit``: it stands where a "No …" prohibition counts."""
    rest = words[order_start(words) :]
    if len(rest) < 2:
        return False
    return (
        (may_prohibit and _prohibition(rest))
        or _generic_norm(rest, opens)
        or _lasting_manner(rest)
        or (rest[0] == "we" and rest[1] in HOUSE_VERBS)
    )


def _prohibition(words: Sequence[str]) -> bool:
    if words[0] != "no" or words[1] in NOT_PROHIBITED or words[1] in STATEMENT_OPENERS:
        return False
    # "No hardcoded credentials", "No pushes to shared branches" forbid: their "-ed" word describes a noun.
    # "No warning needed for this" releases, "No module named 'yaml'" and "No tests were run" report.
    return not any(
        word in VERB_FORMS or (at > 1 and _past(word) and words[at - 1] not in _BEFORE_ADJECTIVES)
        for at, word in enumerate(words)
    )


def _past(word: str) -> bool:
    return word.endswith("ed") or word in PAST_FORMS


def _lasting_manner(words: Sequence[str]) -> bool:
    if words[0] not in LASTING_VERBS or words[1] in THIS_WORK:
        return False
    # "Keep going", "Keep adding type hints": carry on with the work in hand ("Use logging" is a noun)
    return words[0] != "keep" or not words[1].endswith("ing") or words[1].endswith("thing")


def _generic_norm(words: Sequence[str], opens: bool) -> bool:
    first = words[0]
    if first not in _GENERIC_OPENERS and not _subject_word(first):
        return False
    for at in range(1, min(len(words), _LONGEST_SUBJECT + 1)):
        if _norm_predicate(words, at, opens):
            return True
        if words[at] not in SUBJECT_LINKS and not _subject_word(words[at]):
            return False
    return False


def _subject_word(word: str) -> bool:
    return word not in NOT_NOUNS and word not in _NOT_SUBJECTS and word not in VERB_FORMS


def _norm_predicate(words: Sequence[str], at: int, opens: bool) -> bool:
    word = words[at]
    after = words[at + 1] if at + 1 < len(words) else ""
    if word in MODALS:
        # "Tests may be flaky" guesses; "Nothing under vendor/ may be edited" forbids
        return bool(after) and not (word == "may" and after == "be" and words[0] not in _NEGATIVE_SUBJECTS)
    if word in PLACE_VERBS:
        if word.startswith("stay"):
            # "X can use SQLAlchemy since …; production code stays raw SQL": after a first clause, "stays"
            # is the rest around an exception, said of the exception
            return opens
        return word.startswith("follow") or after in PLACES
    if word not in ("is", "are") or not after:
        return False
    rest = [w for w in words[at + 1 : at + 5] if w not in ("not", "always", "all", "the")]
    if not rest:
        return False
    if rest[0] in NORM_PARTICIPLES or rest[0] in CASE_STYLES:
        return True
    return rest[0] == "in" and len(rest) > 1 and rest[1] in CONVENTION_NOUNS
