"""The words code's readings of a standing rule go by (:mod:`~longhaul_daemon.passes.answers.rule_reading`,
:mod:`~longhaul_daemon.passes.answers.norm_reading`): cues, function words, and the vocabulary of norms
written without a rule word. Vocabulary only; the decisions are in those modules' docstrings.
"""

from __future__ import annotations

__all__ = [
    "BACK_REFERENCES",
    "CASE_STYLES",
    "CONVENTION_NOUNS",
    "ECHO_WORDS",
    "EXTENSION_ENDINGS",
    "HOUSE_VERBS",
    "LASTING_VERBS",
    "MODALS",
    "NEW_WORK",
    "NORM_PARTICIPLES",
    "NOT_NOUNS",
    "NOT_PROHIBITED",
    "ORDER_LEAD_INS",
    "PAST_FORMS",
    "PLACES",
    "PLACE_VERBS",
    "POSSIBLE_RULE_PHRASES",
    "QUANTIFIERS",
    "STATEMENT_OPENERS",
    "SUBJECT_LINKS",
    "THIS_WORK",
    "VERB_FORMS",
    "Phrase",
]

Phrase = tuple[str, ...]

# TAKEOVER-13: words that are not nouns, so a "that" after them opens a that-clause ("make sure that you
# always …", "I said that we must …") rather than a description of a thing.
_NOT_NOUNS_TEXT = """
    a an the this that these those each every any some all no both either neither such own other another
    i me my you your he him his she her it its we us our they them their one
    be am is are was were been being have has had do does did will would shall should can could may might must
    and or nor but so if then than because while as though although since unless whether
    about above after at before by for from in into of off on onto out over per through to under until up upon
    with within without not now just also even still too very really again here there
    say says said saying think thinks thought know knows knew known remember remembers note notes mean means
    meant believe believes agree agrees decide decides understand check verify confirm confirms tell tells
    told insist insists remind see sees saw realize realise assume hope expect promise require requires
    guarantee ensure ensures make makes made mind ask asks explain mention specify warn show shows prove
    proves given sure clear true aware glad important likely possible certain careful
"""
NOT_NOUNS = frozenset(_NOT_NOUNS_TEXT.split())

# Ours: cues of a standing instruction beyond TAKEOVER-9's rule words, for code's second look at a label
# (passes/answers/doubts.py), never for a takeover's own reading. A constraint on how work is done, written
# without "always" or "never": an obligation ("has to", "is not allowed to", "make sure"), a preference
# ("stick to", "avoid", "prefer"), a thing left as it is ("hands off", "as they are"), a quantifier over the
# work itself ("every commit", "each message", "whatever you write"), or a time that lasts ("in future",
# "in general", "make it a habit", "before you show me").
POSSIBLE_RULE_PHRASES: tuple[Phrase, ...] = (
    ("must",),
    ("mustn't",),
    ("shall",),
    ("shouldn't",),
    ("should", "not"),
    ("has", "to"),
    ("have", "to"),
    ("needs", "to"),
    ("allowed", "to"),
    ("required", "to"),
    ("make", "sure"),
    ("at", "all", "times"),
    ("by", "default"),
    ("as", "a", "rule"),
    ("no", "matter"),
    ("any", "time"),
    ("anytime",),
    ("stick", "to"),
    ("stick", "with"),
    ("stay", "away"),
    ("avoid",),
    ("prefer",),
    ("hands", "off"),
    ("off", "limits"),
    ("untouched",),
    ("as", "they", "are"),
    ("as", "it", "is"),
    ("whatever",),
    ("whenever",),
    ("wherever",),
    ("in", "future"),
    ("in", "the", "future"),
    ("in", "general"),
    ("habit",),
    ("before", "you", "show", "me"),
    ("before", "you", "tell", "me"),
)
QUANTIFIERS = frozenset({"every", "each", "any", "all"})
"""A quantifier right before a noun (``every commit``, ``each message``) generalises a sentence."""

_STATEMENT_OPENERS_TEXT = "i you he she it we they this that these those there the a an my your our their its"
STATEMENT_OPENERS = frozenset(_STATEMENT_OPENERS_TEXT.split())
"""A clause opening with one of these has a subject of its own: it describes ("it reads …", "the parser hands
each row …"), unless what follows orders."""

ORDER_LEAD_INS: tuple[Phrase, ...] = (
    ("please",),
    ("and",),
    ("also",),
    ("so",),
    ("then",),
    ("i", "want", "you", "to"),
    ("i'd", "like", "you", "to"),
    ("i", "would", "like", "you", "to"),
    ("i", "want"),
    ("i'd", "like"),
    ("i", "would", "like"),
)
"""What may come before the words that order ("Please keep …", "I'd like you to keep …", "I want every …"):
a wish said to the agent orders as an imperative does."""

# A prohibition "No <noun phrase>" ("No magic numbers.", "No force-pushes to shared branches") forbids; these
# words after "no" make an interjection, a release or a report instead ("No problem", "No need to …", "No
# longer …", "No luck so far", "No one replied").
_NOT_PROHIBITED_TEXT = """
    mind need needs needed idea ideas luck worries worry problem problems rush pressure seen one way thanks
    thank longer doubt clue big biggie sweat kidding offence offense harm wonder chance hurry matter
    further difference sign signs response reply answer news word joy dice go reason issue issues error
    errors success surprise surprises sorry wait actually just not yes ok okay really nope no stop don't
"""
NOT_PROHIBITED = frozenset(_NOT_PROHIBITED_TEXT.split())

_VERB_FORMS_TEXT = """
    is are was were be been being am 's has have had do does did doesn't don't didn't isn't aren't wasn't
    weren't can could will would shall should may might must can't won't couldn't wouldn't shouldn't
    got get gets
    """
VERB_FORMS = frozenset(_VERB_FORMS_TEXT.split())
"""Finite verbs that make a clause opening with "no" a statement ("No tests were run", "No data is
returned"), not a verbless prohibition."""

_PAST_FORMS_TEXT = """
    ran went came took made broke began left found gave saw said sent built wrote grew fell stood brought
    caught threw told showed shown known done gone seen got paid lost hit stuck
"""
PAST_FORMS = frozenset(_PAST_FORMS_TEXT.split())
"""Irregular past forms, read as an "-ed" word is: "No tests ran last night" reports what happened."""

MODALS = frozenset({"may", "should", "need", "needs", "mustn't", "shouldn't"})
"""After a generic subject, a modal states a norm ("Nothing in src/ may import from scripts/", "PR titles
should read like commit messages", "Public API changes need a deprecation period")."""

PLACE_VERBS = frozenset(
    {"go", "goes", "live", "lives", "belong", "belongs", "stay", "stays", "sit", "sits", "follow", "follows"}
)
"""After a generic subject, where things go or what they follow ("Tests go under tests/", "Shaders live in
assets/", "CSS classes follow BEM", "Interrupt handlers stay short")."""
PLACES = frozenset({"in", "under", "into", "inside", "to", "on", "next", "beside", "within", "alongside"})
"""What a place verb's place opens with; "stay(s)" and "follow(s)" need none."""

_NORM_PARTICIPLES_TEXT = """
    pinned named written kept formatted handled set sorted prefixed suffixed typed annotated spelled spelt
    capitalised capitalized indented quoted escaped versioned tagged signed squashed rebased documented
    licensed encoded declared imported ordered grouped wrapped limited capped checked validated logged
    tested reviewed
    """
NORM_PARTICIPLES = frozenset(_NORM_PARTICIPLES_TEXT.split())
"""After "is"/"are" with a generic subject, how a convention is followed ("Docker base images are pinned by
digest", "Errors … are handled with explicit return checks", "Random seeds are set through …")."""
_CASE_STYLES_TEXT = """
    snake_case camelcase pascalcase kebab screaming_snake_case lowercase uppercase titlecase
    markdown yaml json toml utf-8 utf8 ascii
    """
CASE_STYLES = frozenset(_CASE_STYLES_TEXT.split())
"""After "is"/"are", a style or format a kind of thing is written in ("JSON keys … are snake_case", "Docs
are Markdown …", "Asset filenames are lowercase …")."""
_CONVENTION_NOUNS_TEXT = """
    imperative english american british utc iso present past active passive plain alphabetical
    """
CONVENTION_NOUNS = frozenset(_CONVENTION_NOUNS_TEXT.split())
"""After "is/are in (the)", a convention written in ("… are in the imperative mood", "… are in American
English")."""
SUBJECT_LINKS = frozenset(
    ["in", "of", "and", "or", "for", "from", "the", "a", "an", "with", "under", "inside"]
)
"""Words that may join the nouns of a generic subject ("JSON keys in API responses", "Errors in the C
code", "Identifiers and code comments")."""
LASTING_VERBS = frozenset({"keep", "use"})
"""Imperatives of a lasting manner when their object is general ("Keep line length at 100", "Use
conventional commit messages"), not a thing of this work ("Keep the old route alive …", "Use the mock
provider until …")."""
HOUSE_VERBS = frozenset({"use", "follow", "prefer", "squash", "pin", "rebase"})
"""After "we", a house habit ("We use tabs, not spaces", "We squash-merge here")."""
THIS_WORK = frozenset({"the", "this", "that", "these", "those", "a", "an", "it", "them", "him", "her", "me"})
"""An object that names one thing of the work in hand: "Keep the old route alive …" is a task, "Keep your
replies short" a manner that lasts."""
BACK_REFERENCES: tuple[Phrase, ...] = (
    ("reminder",),
    ("still",),
    ("again",),
    ("as", "usual"),
    ("as", "always"),
    ("as", "before"),
    ("as", "agreed"),
    ("as", "discussed"),
    ("as", "i", "said"),
    ("like", "i", "said"),
    ("same", "as"),
    ("same", "goes"),
)
"""A clause opening with one of these points back at a rule already given ("Reminder: no new dependencies",
"Again, tests belong in tests/", "… either, same as main"): its sentence echoes that rule, which is in force
through the message that gave it."""
ECHO_WORDS = frozenset({"still", "again"})
"""Anywhere in a clause, a rule said once more ("Every migration still needs a working downgrade"); "ever
again" is no echo, it lasts."""
EXTENSION_ENDINGS: tuple[Phrase, ...] = (("too",), ("either",), ("as", "well"))
"""Closing a clause, a word that adds to what was said before ("Docstrings should include a Raises: section
too"): it stretches a rule in force, or the work in hand, and is read with it."""
NEW_WORK: tuple[Phrase, ...] = (("the", "new"), ("this", "new"))
"""A thing just made, named as one ("Make sure the new endpoint returns 404"): the clause is about the work in
hand, not all the work."""
