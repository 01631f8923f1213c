"""Code's reading of a request meant for this once, so a model's `rule` label on one records no standing rule.

A weak model labels "Just this once, skip the tests" or "Run the build and tell me which port it uses"
`rule`; recorded, either would order every later turn of the session. Pure, called by
:mod:`~longhaul_daemon.passes.answers.verify`, :mod:`~longhaul_daemon.passes.answers.doubts` and
:mod:`~longhaul_daemon.passes.answers.call_schemas` (docs/how-it-works.md, "One-off requests called rules").
Decisions (ours):

- A sentence is bound to this once when it holds a :data:`ONE_OFF_SCOPE` phrase: "this once", "as an
  exception", a unit of work named as this one or the next ("for this release", "in the next commit", "on
  the current run"), or a time that ends ("for now", "for the time being", "today", "temporarily"). The
  phrase is the scope of the sentence, not the rule: the sentence is read again with it replaced by "this
  time" (which TAKEOVER-10 bounds), and any clause the takeover's reading still picks keeps it a rule
  ("Never push on a Friday, not even this time").
- A sentence that asks to be told something (:data:`REPORT_BACK`: "tell me", "show me", "let me know") is a
  request for an answer now, unless it reads as a standing instruction as it is ("Always run the tests
  before you tell me it works"; "Let me know whenever a test fails").
- A unit of work is something done and finished (a commit, a change, a release, a run, a ticket), never
  a place work keeps happening in (this repo, this file, this branch): "never force-push on this branch"
  stays a rule.
- A sentence that asks for a piece of work (it opens with one of :data:`WORK_VERBS`, or a wish: "I'd like",
  "let's") and holds no standing cue is a task, not a rule: a weak model labels every message of a pass
  `rule` at times, and a recorded task reads to every later turn as an order.
- A text is a request when every sentence is a question, a report-back or a piece of work, and none reads
  as a standing instruction. Two kinds of sentence go with a request and change nothing: an interjection
  (:data:`INTERJECTIONS`: "Right.", "Sounds good.", "Thanks!") and a report of a failure (:data:`FAILURES`:
  "prune.py dies with an IndexError on a name without a date."), which says what is wrong, not how to work;
  a text of these alone asks for nothing.
- Words longer than a short message (a message of 301 to 600 characters is recorded whole, QUOTE-3) are
  read sentence by sentence and are a one-off only when every sentence is one or goes with one (an
  interjection, a failure report with no standing cue), so a "for now" in one sentence does not make a rule
  stated in another a one-off.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence

from longhaul_daemon.passes.answers.events import NewRule
from longhaul_daemon.passes.answers.judged import judged_text
from longhaul_daemon.passes.answers.labels import Label
from longhaul_daemon.passes.answers.quotes import SHORT_MESSAGE
from longhaul_daemon.passes.answers.rule_reading import read_possible_rule, read_standing_rule, sentence_texts

__all__ = [
    "FAILURES",
    "INTERJECTIONS",
    "ONE_OFF_SCOPE",
    "REPORT_BACK",
    "WORK_UNITS",
    "WORK_VERBS",
    "bounded_to_once",
    "one_off_labels",
    "one_off_request",
]

WORK_UNITS: tuple[str, ...] = (
    "change",
    "changes",
    "commit",
    "fix",
    "patch",
    "pr",
    "pull request",
    "merge request",
    "release",
    "build",
    "run",
    "deploy",
    "deployment",
    "task",
    "ticket",
    "bug",
    "experiment",
    "iteration",
    "round",
    "step",
    "attempt",
    "try",
    "demo",
    "spike",
    "prototype",
    "migration",
    "hotfix",
    "one",
)
"""Things done and finished: "for this commit" bounds a request, "in this repo" does not."""

_THIS_OR_NEXT = r"(?:this|that|the\s+next|the\s+current|the\s+coming|the\s+upcoming|today['’]s|tomorrow['’]s)"
_UNIT = "(?:" + "|".join(unit.replace(" ", r"\s+") for unit in WORK_UNITS) + ")"
_SCOPE_TEXT = "|".join(
    (
        r"(?:just\s+|only\s+)?(?:this|that)\s+once|once\s+only|(?:this\s+)?one\s+time(?:\s+only)?|one[-\s]off",
        r"as\s+an\s+exception|make\s+an\s+exception|exceptionally|this\s+particular|this\s+time",
        rf"(?:for|in|on|with|during)\s+{_THIS_OR_NEXT}\s+(?:one\s+)?{_UNIT}",
        r"for\s+now|for\s+the\s+moment|for\s+the\s+time\s+being|right\s+now|just\s+now|temporarily",
        r"today|tonight|this\s+(?:morning|afternoon|evening)",
    )
)
ONE_OFF_SCOPE = re.compile(rf"(?<![\w'’-])(?:{_SCOPE_TEXT})(?![\w'’-])", re.IGNORECASE)
"""A phrase that bounds a request to this once (see the module's decisions)."""
REPORT_BACK = re.compile(
    r"(?<![\w'’-])(?:(?:tell|show)\s+me|let\s+me\s+know|report\s+back)(?![\w'’-])", re.IGNORECASE
)
"""A request to report back: the sentence asks for an answer now unless it reads as standing as it is."""


_WORK_VERBS_TEXT = """
    add write create make give implement build fix rename refactor explain look check show run rerun update
    change remove delete move split find investigate debug summarize summarise list open read try bump
    convert replace document draft prepare compare measure profile time benchmark review commit push revert
    undo restore print format lint finish continue start describe tell walk go put sort carry get do handle
    clean tidy wire hook set support extend teach allow let
"""
WORK_VERBS = frozenset(_WORK_VERBS_TEXT.split())
"""Verbs that open a request for a piece of work ("Add a --json flag", "Write a CHANGES file"); a rule is
an order about all the work ("Keep …", "Use …", "Never …"), and none of these opens one without a cue the
readings pick ("Run the tests after every change")."""
_LEAD_INS_TEXT = "please now ok okay so and then also next first right alright fine great good"
_LEAD_INS = frozenset(_LEAD_INS_TEXT.split())
_WISHES: tuple[tuple[str, ...], ...] = (("i'd", "like"), ("i", "would", "like"), ("i", "want"), ("let's",))
_WORD = re.compile(r"[\w'’-]+")
_INTERJECTIONS_TEXT = """
    right ok okay sure great good fine thanks thank you cool nice perfect alright yes yeah yep hm hmm wait
    well anyway so sounds got it excellent lovely awesome
"""
INTERJECTIONS = frozenset(_INTERJECTIONS_TEXT.split())
"""Words that make up a sentence saying nothing but assent or a pause ("Right.", "Sounds good, thanks.")."""
FAILURES = re.compile(
    r"(?<![\w'’-])(?:crash(?:es|ed|ing)?|dies|died|fail(?:s|ed|ing)?|broken|breaks|hangs|errors?|exceptions?|"
    r"traceback|bug|(?:does|do|is|are)(?:n['’]t|\s+not)\s+work(?:ing)?|\w+(?:Error|Exception))(?![\w'’-])",
    re.IGNORECASE,
)
"""A report of a failure: "dies with an IndexError", "the export crashes", "the date filter doesn't work"."""
_OPENERS = _LEAD_INS | INTERJECTIONS  # what may come before a request's verb: "Please", "Ok", "Sounds good"


def one_off_request(text: str) -> bool:
    """Whether ``text`` reads as a request for this once: bound by a :data:`ONE_OFF_SCOPE` phrase with no
    standing rule outside it, or, with no standing cue at all, a report-back (:data:`REPORT_BACK`) or
    nothing but questions and requests for a piece of work. Judged text only (quoted and pasted text
    orders nothing); sentence by sentence past a short message."""
    judged = judged_text(text)
    if len(judged) > SHORT_MESSAGE:
        sentences = sentence_texts(judged)
        verdicts = [_one_off_sentence(sentence) for sentence in sentences]
        return any(verdicts) and all(
            one_off or (_goes_with_a_request(sentence) and not read_possible_rule(sentence).picked)
            for one_off, sentence in zip(verdicts, sentences, strict=True)
        )
    return _one_off_sentence(judged)


def bounded_to_once(text: str) -> bool:
    """A one-off request (:func:`one_off_request`) that says so with a :data:`ONE_OFF_SCOPE` phrase ("for
    this commit only, skip the fixtures check"): an exception to a rule for this once, which withdraws it
    no further than that."""
    return bool(ONE_OFF_SCOPE.search(judged_text(text))) and one_off_request(text)


def _one_off_sentence(judged: str) -> bool:
    if ONE_OFF_SCOPE.search(judged):
        # read as TAKEOVER-10 reads "this time": the clause bounded to this once orders nothing standing
        # ("For this change only, …" has the rule word "only"), every other clause is read as it stands by
        # the takeover's reading; the wider one would take the bounded request itself for an instruction
        return not read_standing_rule(ONE_OFF_SCOPE.sub("this time", judged)).picked
    if read_possible_rule(judged).picked:
        return False  # "Always run the tests before you tell me it works" is a rule
    if REPORT_BACK.search(judged):
        return True
    sentences = sentence_texts(judged)
    if sentences and all(_interjection(s) for s in sentences):
        return True  # "Got it, thanks.": nothing standing in it
    asks = [s.endswith("?") or _work_request(s) for s in sentences]
    return any(asks) and all(ask or _goes_with_a_request(s) for ask, s in zip(asks, sentences, strict=True))


def _words(sentence: str) -> list[str]:
    return [w.casefold().replace("’", "'") for w in _WORD.findall(sentence)]


def _interjection(sentence: str) -> bool:
    words = _words(sentence)
    return bool(words) and all(w in INTERJECTIONS for w in words)


def _goes_with_a_request(sentence: str) -> bool:
    """An interjection or a failure report: said beside a request, it orders nothing (the caller has found
    no standing cue in the text)."""
    return _interjection(sentence) or FAILURES.search(sentence) is not None


def _work_request(sentence: str) -> bool:
    """A sentence that asks for a piece of work: it opens (after "please", "ok", "can you" and the like)
    with one of :data:`WORK_VERBS`, or with a wish ("I'd like", "let's"). The caller has found no standing
    cue in it."""
    words = _words(sentence)
    while words and words[0] in _OPENERS:
        words.pop(0)
    if words[:2] in (["can", "you"], ["could", "you"], ["would", "you"]):
        words = words[2:]
    if any(words[: len(wish)] == list(wish) for wish in _WISHES):
        return True
    return bool(words) and words[0] in WORK_VERBS


def one_off_labels(
    labels: Sequence[tuple[str, Label]], recorded: Mapping[str, NewRule], excluded: Collection[str]
) -> tuple[str, ...]:
    """The messages labeled ``rule`` whose recorded words code reads as a one-off request
    (:func:`one_off_request`): their rule is not recorded. The words, not the whole message, are judged:
    in a long message they are the sentence the model quoted (QUOTE-4), and a "for now" in the text around
    it scopes nothing in it. ``excluded``: messages the model decides alone (TAKEOVER-4)."""
    return tuple(
        msg
        for msg, label in labels
        if label.kind == "rule"
        and msg not in excluded
        and (rule := recorded.get(msg)) is not None
        and rule.message == msg
        and one_off_request(rule.words)
    )
