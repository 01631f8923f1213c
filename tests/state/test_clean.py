"""Cleaning text as it enters the State: nothing that never prints is stored (issue 12 item 5, PASS-10)."""

from __future__ import annotations

import unicodedata
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from longhaul_daemon.state.clean import clean_line, clean_span, clean_state, clean_text
from longhaul_daemon.state.model import (
    CarriedMessage,
    Command,
    Commit,
    DirtyPath,
    ErrorEntry,
    Item,
    Note,
    Rule,
    State,
    Value,
    WorkLogLine,
    World,
)

_UNSAFE = {"Cc", "Cf", "Cs", "Zl", "Zp"}
# What issue 12 found stored: BEL, ESC sequences, C1 CSI, NUL, DEL, zero-width, bidi isolates and overrides,
# U+2028/2029, VT, FF, NEL, CR.
EVIL = "\x07\x1b[31mred\x1b[0m\x9b2J\x00\x7f\u200b\u2066iso\u2069\u202egnp\u2028a\u2029b\x0bc\x0cd\x85e\rf"

_nasty = st.text(
    alphabet=st.one_of(
        st.characters(codec=None),
        st.sampled_from(list("\x1b\x07\x9b\x9c\x9d\x90\x00\x7f\x85\t\n\r\x1f[];0123456789mP\\\u202e\u200b")),
    ),
    max_size=120,
)


def unclean(text: str, *, allowed: str = "") -> set[str]:
    """The characters of ``text`` a State must not hold (``allowed`` lists the ones this field may)."""
    return {ch for ch in text if ch not in allowed and unicodedata.category(ch) in _UNSAFE}


def test_issue12_clean_text_keeps_words_and_line_breaks_only() -> None:
    assert clean_text(EVIL) == "redisognp\na\nb\nc\nd\ne\nf"
    assert clean_text("tab\there\r\nnext") == "tab\there\nnext"
    assert clean_line(EVIL) == "redisognp a b c d e f"
    assert clean_line("two  spaces\tkept ") == "two  spaces kept "


@given(_nasty)
def test_issue12_clean_text_holds_nothing_unprintable_and_is_idempotent(text: str) -> None:
    once = clean_text(text)
    assert not unclean(once, allowed="\n\t")
    assert clean_text(once) == once
    line = clean_line(text)
    assert not unclean(line) and clean_line(line) == line


@given(_nasty, st.integers(min_value=0, max_value=130), st.integers(min_value=0, max_value=130))
def test_quote5_issue12_a_cleaned_cut_stays_in_the_cleaned_message(text: str, a: int, b: int) -> None:
    """Rule words cut from a message and cleaned are always found verbatim in the cleaned message."""
    start, end = min(a, b), max(a, b)
    assert clean_span(text, start, end) in clean_text(text)
    assert clean_span(text, 0, len(text)) == clean_text(text)


def test_quote5_issue12_an_escape_sequence_straddling_the_cut_goes_whole() -> None:
    message = "say \x1b[31mnever force-push\x1b[0m please"
    cut = message.index("31m")  # a cut that starts inside the sequence
    assert clean_span(message, cut, message.index(" please")) == "never force-push"


def evil_state() -> State:
    """A State with control and format characters in every text field."""
    return State(
        objective=f"goal {EVIL}",
        now=f"now {EVIL}",
        rules=[Rule(id="R1", words=f"Never {EVIL}", message="u1", seq=1, span=1)],
        decisions=[Item(text=f"d {EVIL}", why=f"w {EVIL}", evidence=["C1", EVIL], seq=2, span=1)],
        deadEnds=[Item(text=f"x {EVIL}", seq=3, span=1)],
        values=[Value(value=f"5173{EVIL}", what=f"port {EVIL}", turn="u1", seq=4, span=1)],
        notes=[Note(text=f"note {EVIL}", seq=5)],
        commands=[Command(id="C1", text=f"echo {EVIL}", exit=0, span=1, entryId="e1", toolCallId="t1")],
        errors=[ErrorEntry(id="E1", tool=f"bash{EVIL}", text=f"failed {EVIL}", span=1)],
        readFiles=[f"docs/{EVIL}.md", "a.md"],
        modifiedFiles=[f"src/{EVIL}.py", "a\x07.md"],
        world=World(
            status="repository",
            branch=f"main{EVIL}",
            head=Commit(hash=f"abc{EVIL}", subject=f"fix {EVIL}"),
            earlier=[Commit(hash="def", subject=f"old {EVIL}")],
            dirtyCount=1,
            dirty=[DirtyPath(status="M\x07", path=f"p{EVIL}")],
            missing=[f"ahead{EVIL}"],
        ),
        workLog=[WorkLogLine(span=1, closedAs="whole", text=f"did {EVIL}", passId="p1")],
        carried=["u1"],
        carriedMessages=[CarriedMessage(id="u1", text=f"words {EVIL}", chars=40)],
    )


def strings_of(value: Any, path: str = "") -> list[tuple[str, str]]:
    """Every string in a JSON document with its path (list indexes left out)."""
    if isinstance(value, str):
        return [(path, value)]
    if isinstance(value, dict):
        return [pair for key, item in value.items() for pair in strings_of(item, f"{path}.{key}")]
    if isinstance(value, list):
        return [pair for item in value for pair in strings_of(item, path)]
    return []


MULTI_LINE = {".rules.words", ".commands.text", ".carriedMessages.text"}


def assert_clean_document(document: Any) -> None:
    """Issue 12: no string of a State holds an unprintable character; only the user's words and commands
    keep line breaks and tabs."""
    for path, text in strings_of(document):
        allowed = "\n\t" if path in MULTI_LINE else ""
        assert not unclean(text, allowed=allowed), (path, text)


def test_issue12_clean_state_cleans_every_text_field_and_keeps_ids() -> None:
    state = evil_state()
    clean = clean_state(state)
    assert_clean_document(clean.model_dump(mode="json"))
    assert clean.rules[0].words == "Never redisognp\na\nb\nc\nd\ne\nf"
    assert clean.values[0].value == "5173redisognp a b c d e f"  # a value keeps its exact spacing
    assert clean.decisions[0].evidence == ["C1", "redisognp a b c d e f"]
    assert clean.modifiedFiles == ["a.md", "src/redisognp a b c d e f.py"]
    assert clean.readFiles == ["docs/redisognp a b c d e f.md"]  # a.md is modified, so not read-only
    assert (clean.commands[0].entryId, clean.commands[0].toolCallId) == ("e1", "t1")
    assert clean_state(clean) == clean
    assert state == evil_state()  # the given State is left alone
