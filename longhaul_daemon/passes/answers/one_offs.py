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
- A scope may also be an event that ends ("for the hotfix", "for the investor demo build", "until the
  demo on Friday", "until the migration is finished"), a window of time ("this sprint", "for the next few
  commits"), a situation while it lasts ("while we debug this", "while the staging cluster is down"), or one
  branch said to be the exception ("on this branch only"). A reason given for the exception ("it's only a
  docs change") is left out before the rest is read, so its "only" is no rule word.
- A permission to do without, pointed at one thing ("This PR doesn't need a screenshot", "No need to bump
  the version for this doc fix"), is a one-off, unless a sentence of it orders beyond it; "this repo",
  "this project" and the like are places, not one thing.
- A sentence that asks for a piece of work (it opens with one of :data:`WORK_VERBS`, or a wish: "I'd like",
  "let's", "we need", "next up", "could we") and holds no standing cue is a task, not a rule: a weak model
  labels every message of a pass `rule` at times, and a recorded task reads to every later turn as an
  order. Context said to no one may come with it ("The Docker image is 1.4 GB."); a sentence that
  addresses the agent or what it will write ("whatever you add has to …") may not.
- The wanted behaviour of a thing, said beside a request for work on it, describes what is being built
  (LABEL-12): "The import must be idempotent. Running it twice doubles the rows. Fix it." is a task, though
  the readings pick its "must". The sentence opens with the thing ("The …", "`search` …") and names neither
  the agent nor the team; "The tests must pass before you commit" names the agent and stays a rule.
- Whatever the rest says, a sentence that orders beyond its request keeps a text from being a request: a
  lasting time or habit ("in future", "make it a habit", "before you show me"), a bare prohibition or
  absolute ("No magic numbers.", not "No need to …" or "Never mind …"), a house habit ("We use …").
- These readings were tuned on ``bench/request_dev.py``, a development set written by a writer that never
  read this code; ``bench/request_readings.py`` counts them on it and on every bank.
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
from longhaul_daemon.passes.answers.one_off_words import (
    ADDRESSED,
    CLAUSE_BREAK,
    EXEMPTION,
    FAILURES,
    HOUSE_HABITS,
    INTERJECTIONS,
    LASTING,
    NOT_STANDING_AFTER,
    ONE_OFF_SCOPE,
    ONE_THING,
    OPENERS,
    PROHIBITION,
    REASON,
    REPORT_BACK,
    STANDING_OPENERS,
    STATES,
    THING_OPENERS,
    TO_THE_AGENT,
    WHILE_IT_LASTS,
    WISHES,
    WORD,
    WORK_UNITS,
    WORK_VERBS,
)
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
    judged = judged_text(text)
    return bool(_scope(judged).search(judged)) and one_off_request(text)


def _scope(judged: str) -> re.Pattern[str]:
    """The scopes that may bound ``judged``: a time a request lasts for never bounds a prohibition."""
    return ONE_OFF_SCOPE if PROHIBITION.search(judged) else WHILE_IT_LASTS


def _one_off_sentence(judged: str) -> bool:
    scope = _scope(judged)
    if scope.search(judged):
        # read as TAKEOVER-10 reads "this time": the clause bounded to this once orders nothing standing
        # ("For this change only, …" has the rule word "only"), every other clause is read as it stands by
        # the takeover's reading; the wider one would take the bounded request itself for an instruction
        return not read_standing_rule(REASON.sub("", scope.sub("this time", judged))).picked
    sentences = sentence_texts(judged)
    if EXEMPTION.search(judged) and ONE_THING.search(judged):
        return not any(_standing_said(s) for s in sentences)  # "This PR doesn't need a screenshot"
    asks = any(s.endswith("?") for s in sentences) or any(
        _work_request(clause) for s in sentences for clause in CLAUSE_BREAK.split(s)
    )
    if any(_standing_said(s) for s in sentences):
        return False
    if read_possible_rule(judged).picked:
        # "The import must be idempotent. Fix it.": a thing's wanted behaviour, said beside a request for
        # work on it, describes what is being built (LABEL-12); a cue said to the agent stays a rule
        return asks and all(_describes_a_thing(s) for s in sentences if read_possible_rule(s).picked)
    if REPORT_BACK.search(judged):
        return True
    if sentences and all(_interjection(s) for s in sentences):
        return True  # "Got it, thanks.": nothing standing in it
    # a question or a piece of work, and around it only what goes with a request: the context it comes
    # with ("The Docker image is 1.4 GB.", a failure it reports), never a word to the agent
    return asks and all(_goes_with_a_request(s) or s.endswith("?") or _work_request(s) for s in sentences)


def _standing_said(sentence: str) -> bool:
    """A sentence that orders beyond the request it comes with, whether or not the readings pick it: a
    lasting time or habit (:data:`LASTING`), a bare prohibition or absolute ("No magic numbers.", but not
    "No need to …" or "Never mind …"), or a house habit ("We use conventional commits")."""
    if LASTING.search(sentence):
        return True
    words = _words(sentence)
    while words and words[0] in ("and", "but", "so", "also", "please"):
        words.pop(0)
    if len(words) >= 2 and words[0] in STANDING_OPENERS and words[1] not in NOT_STANDING_AFTER:
        return True
    return len(words) >= 2 and words[0] == "we" and words[1] in HOUSE_HABITS


def _describes_a_thing(sentence: str) -> bool:
    """A sentence about a thing being built, not said to the agent: it opens with a thing ("The cart
    total …", "Our CORS config …", "`search` …"; not "Every PR …", which is all the work) and names neither
    the agent nor the team doing the work ("The tests must pass before you commit" is said to the agent)."""
    words = _words(sentence)
    while words and words[0] in ("and", "but", "so", "also"):
        words.pop(0)
    if not words or any(w in TO_THE_AGENT for w in words):
        return False
    first = sentence.lstrip(" \t\"'“‘(").split(maxsplit=1)[0] if sentence.strip() else ""
    code_like = first.startswith("`") or any(ch in first for ch in "_./()")
    return words[0] in THING_OPENERS or code_like


def _words(sentence: str) -> list[str]:
    return [w.casefold().replace("’", "'") for w in WORD.findall(sentence)]


def _interjection(sentence: str) -> bool:
    words = _words(sentence)
    return bool(words) and all(w in INTERJECTIONS for w in words)


def _goes_with_a_request(sentence: str) -> bool:
    """An interjection, a failure report or context said to no one: beside a request, it orders nothing
    (the caller has found no standing cue in the text). Context names neither the agent nor what it will
    write ("The Docker image is 1.4 GB.", but not "whatever you add has to run on a stock python3")."""
    if _interjection(sentence) or FAILURES.search(sentence) is not None:
        return True
    words = _words(sentence)
    return bool(words) and not ADDRESSED & set(words) and not _standing_said(sentence)


def _work_request(sentence: str) -> bool:
    """A sentence that asks for a piece of work: it opens (after "please", "ok", "can you" and the like)
    with one of :data:`WORK_VERBS`, or with a wish ("I'd like", "let's"). The caller has found no standing
    cue in it."""
    words = _words(sentence)
    if any(words[: len(wish)] == list(wish) for wish in WISHES):
        return True  # "Next up: …" before "next" is read as a lead-in
    while words and words[0] in OPENERS:
        words.pop(0)
    if words[:2] in (["can", "you"], ["could", "you"], ["would", "you"], ["can", "u"], ["could", "u"]):
        words = words[2:]
    if any(words[: len(wish)] == list(wish) for wish in WISHES):
        return True
    # "Commit messages are in the imperative mood": a noun that looks like a verb, then what it is
    return bool(words) and words[0] in WORK_VERBS and not STATES & set(words[1:3])


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
