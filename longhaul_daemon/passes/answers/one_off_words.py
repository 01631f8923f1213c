"""The words code's one-off reading goes by (:mod:`~longhaul_daemon.passes.answers.one_offs`): scopes that
bound a request to this once, the verbs and wishes that open a piece of work, and the signs that a sentence
orders beyond the request it sits in. Vocabulary only; the decisions are in one_offs.py's docstring.
"""

from __future__ import annotations

import re

__all__ = [
    "ADDRESSED",
    "CLAUSE_BREAK",
    "EXEMPTION",
    "FAILURES",
    "HOUSE_HABITS",
    "INTERJECTIONS",
    "LASTING",
    "LEAD_INS",
    "NOT_STANDING_AFTER",
    "ONE_OFF_SCOPE",
    "ONE_THING",
    "OPENERS",
    "PROHIBITION",
    "REASON",
    "REPORT_BACK",
    "STANDING_OPENERS",
    "STATES",
    "THING_OPENERS",
    "TO_THE_AGENT",
    "WHILE_IT_LASTS",
    "WISHES",
    "WORD",
    "WORK_UNITS",
    "WORK_VERBS",
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
    "edit",
    "edits",
    "benchmark",
    "screenshot",
    "workshop",
    "delivery",
    "audit",
    "backfill",
    "batch",
    "hackathon",
    "sprint",
    "removal",
    "refactor",
    "revert",
    "test",
    "test run",
    "script",
)
"""Things done and finished: "for this commit" bounds a request, "in this repo" does not."""

_THIS_OR_NEXT = (
    r"(?:this|that|the\s+next|the\s+current|the\s+coming|the\s+upcoming|today['’]s|tomorrow['’]s|"
    r"tonight['’]s|this\s+week['’]s)"
)
_UNIT = "(?:" + "|".join(unit.replace(" ", r"\s+") for unit in WORK_UNITS) + ")"
# "the" names an event that ends only with these: "for the hotfix", "for the investor demo build"; "for the
# build" and "for the tests" may well be standing
_EVENTS = r"(?:demo|hotfix|hackathon|spike|prototype|benchmark|screenshot|workshop|audit|backfill|delivery)"
_MODIFIERS = (
    r"(?:[\w-]+\s+){0,2}"  # "this emergency fix", "the hackathon prototype", "this internal test build"
)
_WHEN = (
    r"(?:tomorrow|today|tonight|monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekend|next\s+\w+|"
    r"the\s+end\s+of|the\s+\d+(?:st|nd|rd|th)|january|february|march|april|may|june|july|august|september|"
    r"october|november|december|launch|release|demo|beta|redesign|migration|ships|lands|is\s+out|is\s+fixed|"
    r"is\s+provisioned|is\s+retired|finishes|wraps\s+up|is\s+finished|confirms|approves|goes\s+live)"
)
_SCOPE_TEXT = "|".join(
    (
        r"(?:just\s+|only\s+)?(?:this|that)\s+once|once\s+only|(?:this\s+)?one\s+time(?:\s+only)?|one[-\s]off",
        r"as\s+an\s+exception|make\s+an\s+exception|exceptionally|this\s+particular|this\s+time",
        rf"(?:for|in|on|with|during)\s+(?:just\s+)?{_THIS_OR_NEXT}\s+{_MODIFIERS}(?:one\s+)?{_UNIT}",
        rf"(?:for|in|on|with|during)\s+the\s+{_MODIFIERS}{_EVENTS}(?:\s+{_UNIT})?",
        r"(?:just\s+|only\s+)(?:on|for|in)\s+this\s+branch|this\s+branch\s+only",
        r"for\s+the\s+next\s+(?:(?:few|couple\s+of|\w+)\s+)?(?:hours?|minutes?|days?|commits|edits|changes|runs)"
        r"(?:\s+or\s+so)?",
        r"for\s+now|for\s+the\s+moment|for\s+the\s+time\s+being|right\s+now|just\s+now|temporarily",
        r"today|tonight|this\s+(?:morning|afternoon|evening|week|sprint|round|weekend)",
    )
)
ONE_OFF_SCOPE = re.compile(rf"(?<![\w'’-])(?:{_SCOPE_TEXT})(?![\w'’-])", re.IGNORECASE)
"""A phrase that bounds a request to this once (see the module's decisions)."""

_LASTS_TEXT = "|".join(
    (
        rf"until\s+(?:[\w'’-]+\s+){{0,5}}?{_WHEN}",
        r"while\s+(?:i['’]m|we['’]re|i\s+am|we\s+are|we\s+\w+|i\s+\w+|the\s+[\w-]+(?:\s+[\w-]+)?\s+(?:is|are|sits))",
    )
)
WHILE_IT_LASTS = re.compile(rf"(?<![\w'’-])(?:{_SCOPE_TEXT}|{_LASTS_TEXT})(?![\w'’-])", re.IGNORECASE)
""":data:`ONE_OFF_SCOPE`, or a time a request lasts for: "until the demo on Friday", "while we debug
this". Not for a prohibition (:data:`PROHIBITION`): "Never push to main until the release is out" is a
rule in force until then, withdrawn by the user's own later words."""
PROHIBITION = re.compile(r"(?<![\w'’-])(?:never|don['’]t|do\s+not|no|not)(?![\w'’-])", re.IGNORECASE)
"""A word that forbids: a prohibition bounded by a time that lasts stays a rule."""
REPORT_BACK = re.compile(
    r"(?<![\w'’-])(?:(?:tell|show)\s+me|let\s+me\s+know|report\s+back)(?![\w'’-])", re.IGNORECASE
)
"""A request to report back: the sentence asks for an answer now unless it reads as standing as it is."""


_WORK_VERBS_TEXT = """
    add write create make give implement build fix rename refactor explain look check show run rerun update
    change remove delete move split find investigate debug summarize summarise list open read try bump
    convert replace document draft prepare compare measure profile time benchmark review commit push revert
    undo restore print format lint finish continue start describe tell walk go put sort carry get do handle
    clean tidy wire hook set support extend teach allow let port swap figure track dedupe dedup plot
    coalesce backfill quantise quantize wrap batch reproduce repro turn generate upgrade downgrade mask
    clamp trace filter narrow restructure migrate install configure enable disable diagnose
    rewrite simplify optimise optimize parallelise parallelize paginate sanitise sanitize validate
    resize crop compress shrink slim trim strip hide draft sketch mock stub seed sync fetch download
    upload send email grab dig sort-out chase
"""
WORK_VERBS = frozenset(_WORK_VERBS_TEXT.split())
"""Verbs that open a request for a piece of work ("Add a --json flag", "Write a CHANGES file"); a rule is
an order about all the work ("Keep …", "Use …", "Never …"), and none of these opens one without a cue the
readings pick ("Run the tests after every change")."""
_LEAD_INS_TEXT = (
    "please pls plz now ok okay so and then also next first right alright fine great good hey hi sorry"
)
LEAD_INS = frozenset(_LEAD_INS_TEXT.split())
WISHES: tuple[tuple[str, ...], ...] = (
    ("i'd", "like"),
    ("i", "would", "like"),
    ("i", "want"),
    ("let's",),
    ("i", "need"),
    ("we", "need"),
    ("it'd", "be"),
    ("it", "would", "be"),
    ("would", "be", "nice"),
    ("next", "up"),
    ("how", "about"),
    ("what", "about"),
    ("can", "we"),
    ("could", "we"),
    ("shall", "we"),
)
WORD = re.compile(r"[\w'’-]+")
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
OPENERS = LEAD_INS | INTERJECTIONS  # what may come before a request's verb: "Please", "Ok", "Sounds good"


LASTING = re.compile(
    r"(?<![\w'’-])(?:from\s+now\s+on|from\s+here\s+on|going\s+forward|in\s+(?:the\s+)?future|in\s+general|"
    r"habit|as\s+a\s+rule|every\s+time|each\s+time|whenever|any\s*time|applies|(?:before|when|until|after|once)"
    r"\s+(?:you\s+)?(?:tell|show)\s+me)(?![\w'’-])",
    re.IGNORECASE,
)
"""Words that make a sentence last beyond the request it sits in ("And in future, rebase …", "Make it a
habit to …", "Run the linter before you show me anything")."""
STANDING_OPENERS = frozenset(["no", "never", "always", "nothing", "nobody", "none"])
NOT_STANDING_AFTER = frozenset(
    ["mind", "need", "idea", "luck", "worries", "problem", "rush", "pressure", "seen", "one"]
)
HOUSE_HABITS = frozenset(
    [
        "use",
        "don't",
        "do",
        "never",
        "always",
        "prefer",
        "follow",
        "keep",
        "squash",
        "write",
        "name",
        "pin",
        "only",
        "avoid",
    ]
)


REASON = re.compile(
    r"(?:(?<=[,;])|(?<=[.!?]\s)|^)\s*(?:it['’]s|it\s+is|this\s+is|that['’]s|they['’]re|since|because|as)"
    r"(?![\w'’-])[^,;.!?]*",
    re.IGNORECASE,
)
"""A clause giving the reason for an exception ("it's only a docs change", "this is a revert"): it orders
nothing, and its "only" is no rule word."""
EXEMPTION = re.compile(
    r"(?<![\w'’-])(?:don['’]t\s+bother|no\s+need|(?:do|does)(?:n['’]t|\s+not)\s+need|not\s+needed|"
    r"needed\s+for\s+this|it['’]s\s+(?:fine|ok|okay)|(?:is|are)\s+fine|feel\s+free|without\s+a|can\s+have|"
    r"don['’]t\s+worry|(?:can|may)\s+(?:skip|leave|ignore|go))(?![\w'’-])",
    re.IGNORECASE,
)
"""A permission to leave something out or do without ("No need to …", "This PR doesn't need …")."""
ONE_THING = re.compile(
    r"(?<![\w'’-])(?:this|that)\s+(?!(?:repo|repository|project|codebase|session|team|company|org|"
    r"organisation|organization|package|directory|dir|folder|rule)\b)[\w-]+",
    re.IGNORECASE,
)
"""One thing pointed at ("this PR", "this internal flag"), not a place work keeps happening in."""
CLAUSE_BREAK = re.compile(r"[,;:]\s+|\s+[—–-]\s+")
THING_OPENERS = frozenset(["the", "this", "that", "these", "those", "our", "its", "their", "my"])
TO_THE_AGENT = frozenset(
    ["you", "your", "you're", "you'll", "we", "we're", "we'll", "us", "i", "i'm", "i'll"]
)


ADDRESSED = frozenset(
    [
        "you",
        "your",
        "you're",
        "you'll",
        "you've",
        "yourself",
        "whatever",
        "whenever",
        "anything",
        "everything",
    ]
)


STATES = frozenset(["is", "are", "should", "must", "stay", "stays", "go", "goes", "live", "lives"])
