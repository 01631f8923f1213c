"""A small model looping inside one string of its answer is seen while the reply streams, at the same point
however the reply is cut into pieces, and real content that repeats a little is not taken for a loop.

The reply a user's pass gets is the text cut just after the loop's first copy (``StringLoop.cut``), so the
cases below say what that text is; ``found`` is where the stream ends.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from longhaul_daemon.models.json_scan import ObjectScanner, closed_in_string, top_level_groups
from longhaul_daemon.models.stream_watch import StreamWatch
from longhaul_daemon.models.string_loops import (
    MAX_UNIT,
    MIN_CHARS,
    ONE_CHAR_COPIES,
    LoopFinder,
    StringLoop,
    copies_needed,
)
from longhaul_daemon.passes.answers.extract import answer_shaped, answer_with_prose

HEAD = '{"labels":{"u6":{"label":"rule"}},"narrative":"'
FORTY = "a 40-character unit a model wrote again."
LONG_SENTENCE = (
    "The parser now reads every fixture and the release note lists each change; the next step is tagging. "
)


def scanned(text: str, size: int | None = None) -> tuple[StringLoop | None, list[str]]:
    """The loop a watching scanner finds in ``text`` fed in pieces of ``size`` (whole when None), and the
    groups it completed before stopping."""
    scanner = ObjectScanner(watch_strings=True)
    step = size or max(1, len(text))
    groups: list[str] = []
    for at in range(0, len(text), step):
        groups += [group for group, _ in scanner.feed(text[at : at + step])]
    return scanner.string_loop, groups


def cut_text(text: str) -> str | None:
    """The reply as it is handed on: cut just after the loop's first copy, or None without a loop."""
    loop, _ = scanned(text)
    return None if loop is None else text[: loop.cut]


def test_the_thresholds_are_six_copies_and_64_characters_and_120_of_one_character() -> None:
    """Up to 40 characters, six copies and 64 characters; a longer unit (to 160), three copies."""
    assert [copies_needed(n) for n in (1, 2, 3, 8, 10, 11, 40)] == [120, 32, 22, 8, 7, 6, 6]
    assert [copies_needed(n) for n in (41, 110, 160)] == [3, 3, 3] and MAX_UNIT == 160
    assert all(copies_needed(n) * n >= MIN_CHARS for n in range(2, MAX_UNIT + 1))
    assert copies_needed(1) == ONE_CHAR_COPIES


@pytest.mark.parametrize(
    ("before", "unit", "kept"),
    [
        ("", "10:", "10:"),  # SmolLM2-135M's narrative: 10:10:10:… to its output limit
        # the loop starts at the "." before the first "See": that copy is the one kept
        ("Fixed the parser. ", "See the build. ", "Fixed the parser. See the build"),
        ("Padding", "=", "Padding="),
        ("x", "ab", "xab"),
        ("", "u14 ", "u14 "),
        ("Step: ", FORTY, "Step: " + FORTY),
        ("Begin:", LONG_SENTENCE, "Begin:" + LONG_SENTENCE),
    ],
    ids=["10:", "sentence", "one-char", "two-chars", "id", "forty-chars", "long-sentence"],
)
def test_a_loop_is_cut_after_its_first_copy_however_the_reply_arrives(
    before: str, unit: str, kept: str
) -> None:
    """The stream ends once the unit has been written as often as its length asks; the reply kept stops
    inside the string, after one copy. Whole, in one-character pieces or in seven-character pieces: the same
    point."""
    assert len(unit) <= MAX_UNIT
    enough = copies_needed(len(unit))
    text = HEAD + before + unit * (enough + 30)
    whole, _ = scanned(text)
    assert whole is not None and (whole.unit, text[: whole.cut]) == (len(unit), HEAD + kept)
    assert whole.found == whole.cut - len(unit) + enough * len(unit)  # the copy that reached the bar
    assert scanned(text, 1)[0] == whole == scanned(text, 7)[0]
    short = HEAD + before + unit * (enough - 1)
    assert scanned(short)[0] is None and scanned(short, 1)[0] is None  # one copy fewer is not a loop yet


@pytest.mark.parametrize(
    "value",
    [
        "0" * 32,  # a hex value
        "-" * 60,  # a markdown rule
        "=" * 119,  # one short of a one-character loop
        "abcabc",
        "ha ha",
        "ha " * 15,
        "very very very very very very good",
        "/src/lib/src/lib/src/lib/src/lib/main.py",
        "a, b, c, a, b, c",
        "00 " * 15 + "00",  # a hexdump row of sixteen zero bytes
        "|---" * 12 + "|",  # the rule row of a twelve-column table
        "-=" * 30,  # a banner
        "0x00, " * 10 + "0x00",  # a C array of zeros
        "The amount column is missing. The tests fail on the amount column; the amount column is added.",
        "Ran `make test`: 10:10 passed, 10:11 passed, 10:12 passed. The build is green again and the "
        "parser reads every fixture; the next step is the release note.",
    ],
    ids=lambda value: value[:20],
)
def test_content_that_repeats_a_little_is_not_a_loop(value: str) -> None:
    text = json.dumps({"labels": {"u1": {"label": "rule", "words": value}}, "narrative": value, "now": value})
    assert scanned(text) == (None, [text])
    assert scanned(text, 1) == (None, [text])


def test_escaped_quotes_and_backslashes_are_read_as_string_text() -> None:
    """A quote or backslash escaped inside the string neither ends it nor hides a loop after it."""
    before = 'He said \\"stop\\" at C:\\\\tmp\\\\ at '
    text = HEAD + before + "10:" * 30
    assert cut_text(text) == HEAD + before + "10:"
    assert scanned(text, 1)[0] == scanned(text)[0]
    escaped = HEAD + 'Quoted: \\"x\\" ' * 8  # the unit holds escapes itself
    assert cut_text(escaped) == HEAD + 'Quoted: \\"x\\" '


@pytest.mark.parametrize(
    ("looped", "kept"),
    [
        ("\\n" * 40, "\\n"),  # blank lines
        ("\\\\" * 70, "\\\\"),  # a backslash, escaped: one character written 140 times in the raw text
        ("\\u00e9" * 20, "\\u00e9"),
        ("x\\u00e9" * 20, "x\\u00e9"),
    ],
    ids=["newlines", "backslashes", "unicode-escape", "unicode-escape-after"],
)
def test_a_cut_never_falls_inside_an_escape_so_the_kept_answer_decodes(looped: str, kept: str) -> None:
    text = HEAD + looped
    reply = cut_text(text)
    assert reply == HEAD + kept and scanned(text, 1)[0] == scanned(text)[0]
    _, pending = top_level_groups(reply)
    closed = closed_in_string(pending or "")
    assert closed is not None and json.loads(closed)["narrative"] == json.loads(f'"{kept}"')


def test_a_cut_the_loop_would_put_inside_an_escape_moves_past_it() -> None:
    """Here the loop's first copy, as the repeats first line up, ends just after a backslash."""
    finder = LoopFinder()
    found = finder.extend("nb\\" + "nb\\" * 40)  # raw text: the first "n" is plain, the rest are \n
    assert found is not None and found.cut == 4  # "nb\n": the escape kept whole, not "nb\"
    assert finder.extend("more") is found  # the first loop stays the answer


def test_a_loop_in_a_key_or_outside_any_string_is_not_a_string_loop() -> None:
    key = '{"labels": {"' + "u1" * 100
    outside = '{"decisions": [' + "1, " * 100
    prose = "Sure! " + "10:" * 100 + ' {"narrative": "ok"}'
    for text in (key, outside, prose):
        assert scanned(text)[0] is None and scanned(text, 1)[0] is None


def test_a_loop_in_a_nested_string_value_counts() -> None:
    """A decision's ``why`` or a label's words loop as well; the list before it stays readable."""
    text = '{"narrative": "n", "decisions": [{"text": "t", "why": "' + "because " * 20
    assert cut_text(text) == '{"narrative": "n", "decisions": [{"text": "t", "why": "because '
    listed = '{"evidence": ["C1", "' + "C2, " * 30
    assert cut_text(listed) == '{"evidence": ["C1", "C2, '


def test_the_scanner_stops_at_the_loop_and_the_unwatched_scanner_is_unchanged() -> None:
    """Nothing after the loop is read: a group closing later in the same piece is not reported, as it would
    never have arrived on a stream ended at the loop. Reading a whole reply (the Diff's extraction) does
    not look for loops."""
    answer = '{"narrative": "ok", "now": "next"}'
    text = answer + HEAD + "10:" * 30 + '"}' + answer
    loop, groups = scanned(text)
    assert loop is not None and groups == [answer]
    assert scanned(text, 3) == (loop, [answer])
    assert top_level_groups(text) == ([answer, HEAD + "10:" * 30 + '"}', answer], None)


def test_only_a_caller_that_takes_loop_cuts_has_its_stream_ended_at_a_string_loop() -> None:
    """The Diff's calls take loop cuts (``cut_at``); turns mode does not, and raises the budget for any reply
    cut off, so its stream still runs to the output limit."""
    text = HEAD + "10:" * 40
    diff = StreamWatch(lambda _: True, lambda _: True)
    assert diff.feed(text) and diff.looped and diff.cut == HEAD + "10:"
    turns = StreamWatch(lambda _: True)
    assert not turns.feed(text) and not turns.looped and turns.cut is None


@given(
    st.lists(
        st.one_of(
            st.sampled_from(['"', "\\", "{", "}", "[", "]", ":", ",", " ", "ab", "10:", "\\n", "u"]),
            st.text(max_size=6),
        ),
        max_size=80,
    ),
    st.integers(min_value=1, max_value=9),
)
def test_hostile_text_never_raises_and_any_chunking_finds_the_same_loop(parts: list[str], size: int) -> None:
    text = '{"narrative": "' + "".join(parts) * 4
    loop, groups = scanned(text)
    assert scanned(text, size) == (loop, groups)
    if loop is not None:
        assert 0 < loop.cut < loop.found <= len(text) and 1 <= loop.unit <= MAX_UNIT


@given(st.text(alphabet="ab \\\"'", max_size=300), st.integers(min_value=1, max_value=50))
def test_a_finder_fed_in_pieces_agrees_with_one_fed_whole(text: str, size: int) -> None:
    whole = LoopFinder().extend(text)
    pieces = LoopFinder()
    for at in range(0, len(text), size):
        pieces.extend(text[at : at + size])
    assert pieces.found == whole


def test_a_loop_before_the_prose_is_read_on_as_before() -> None:
    """A loop in a label's ``words`` comes before the narrative: a reply cut there keeps no answer the
    Diff could salvage, so ending the stream would throw the whole reply away (seen on a blind bench pass,
    which closed narrative-less). The stream reads on, as it did before loops were cut; a loop in the
    prose after it is then not looked for either, and the reply runs to its limit."""
    words_loop = '{"labels": {"u5": {"label": "rule", "words": "' + "ab " * 40
    watch = StreamWatch(answer_shaped, answer_with_prose)
    assert not watch.feed(words_loop) and not watch.looped and watch.cut is None
    assert not watch.feed('"}}, "narrative": "Fixed it", "now": "' + "go on " * 30)
    in_prose = StreamWatch(answer_shaped, answer_with_prose)
    assert in_prose.feed(HEAD + "10:" * 40) and in_prose.looped and in_prose.cut == HEAD + "10:"


COUNTING = "1.1.1." + ".".join(str(n) for n in range(2, 130))


@pytest.mark.parametrize("size", [None, 1, 3, 7])
def test_a_model_counting_up_is_cut_after_the_counts_first_number(size: int | None) -> None:
    """A narrative of "1.2.3.…124" repeats no unit, yet runs to the output limit: sixteen integers in a row,
    each one more, with one separator, end the stream; the text kept is up to the run's second number."""
    loop, _ = scanned(HEAD + COUNTING, size)
    assert loop is not None and loop.unit == 0
    assert (HEAD + COUNTING)[len(HEAD) : loop.cut] == "1.1.1."
    assert loop.found < len(HEAD) + 80  # the stream ends at the sixteenth count, not at the limit
    commas = ", ".join(str(n) for n in range(7, 60))
    loop, _ = scanned(HEAD + commas, size)
    assert loop is not None and (HEAD + commas)[len(HEAD) : loop.cut] == "7, "


@pytest.mark.parametrize(
    "value",
    [
        "steps 1, 2, 3, 4 and 5 are done",
        "v1.2.3 then 1.2.4",
        " ".join(f"line {n}" for n in range(1, 40)),  # a separator longer than three characters
        ".".join(str(n) for n in range(1, 16)),  # fifteen counts
        ", ".join(str(n) for n in range(1, 40, 2)),  # counting by two
        "1.2.3.4.5.6.7.8-9-10-11-12-13-14-15-16-17-18",  # the separator changes
    ],
)
def test_counting_a_person_writes_is_not_a_loop(value: str) -> None:
    assert scanned(HEAD + value + '"}')[0] is None
