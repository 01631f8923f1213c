"""Values later turns may need: verbatim in the named turn, boundaries, rendering, carrying (VALUE-*)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from longhaul_daemon.passes.answers.values import (
    MAX_VALUES,
    Turn,
    ValueCandidate,
    check_value,
    check_values,
    find_value,
    learn_values,
    merge_values,
)
from longhaul_daemon.state.model import Value

TURNS = {
    "u9": Turn("u9", ("run the tests", "python -m unittest", "Ran 212 tests in 41.20s\n\nOK")),
    "u11": Turn(
        "u11", ("start the dev server", "npm run dev", "  Local:   http://localhost:5173/\r\n  ready")
    ),
}


def test_value_2_kept_only_when_verbatim_in_the_named_turn() -> None:
    kept = check_value("5173", "u11", TURNS)
    assert (kept.kept, kept.piece, kept.start) == (True, 2, TURNS["u11"].pieces[2].index("5173"))
    assert check_value("212", "u11", TURNS).reason == "not-in-turn"
    assert check_value("41.2s", "u9", TURNS).reason == "not-in-turn"
    assert check_value("5173", "u12", TURNS).reason == "unknown-turn"


@pytest.mark.parametrize("value", ["", "   ", "\n"])
def test_value_2_empty_values_are_never_kept(value: str) -> None:
    assert check_value(value, "u9", TURNS).reason == "empty-value"
    assert find_value("x", value).reason == "empty-value"


def test_value_1_value_2_answer_values_are_checked_and_drops_counted_without_retry() -> None:
    result = check_values(
        [
            ValueCandidate("test time", "41.2s", "u9"),
            ValueCandidate("dev server port", "5173", "u11"),
            ValueCandidate("test count", "212", "u11"),
            ValueCandidate("test count", "212", "u9"),
        ],
        list(TURNS.values()),
    )
    assert [c.value for c in result.kept] == ["5173", "212"] and result.dropped == 2


def test_value_3_searchable_text_covers_every_piece_but_no_value_straddles_two() -> None:
    turn = Turn("u3", ("deploy to port", "8080 is free", "git log", "abc1234 fix"))
    assert check_value("8080", "u3", {"u3": turn}).piece == 1
    assert check_value("abc1234", "u3", {"u3": turn}).piece == 3
    assert not check_value("port 8080", "u3", {"u3": turn}).kept


def test_value_3_crlf_is_normalized_like_quotes() -> None:
    assert find_value("line one\r\nline two", "one\nline").kept


@pytest.mark.parametrize(
    ("text", "value", "kept"),
    [
        ("port 8080", "80", False),
        ("took 41.20s", "41.2", False),
        ("took 41.20s", "41.20", False),
        ("took 41.20 s", "41.20", True),
        ("http://localhost:5173/", "5173", True),
        ("v1.2.3", "1.2.3", False),
        ("version 1.2.3.", "1.2.3", True),
        ("(8080)", "8080", True),
        ("8080 then 80.", "80", True),
        ("id_42_x", "42", True),
        ("Größe5", "5", False),
    ],
)
def test_value_4_not_flanked_by_letters_or_digits(text: str, value: str, kept: bool) -> None:
    assert find_value(text, value).kept is kept
    if not kept and value in text:
        assert find_value(text, value).reason == "flanked"


def test_value_6_value_only_in_an_earlier_summary_is_not_kept() -> None:
    earlier = {"u4": Turn("u4", ("what is the db port?", "It is configured in .env"))}
    # the foreign summary said "db port: 5432"; the turn it names does not show it
    assert not check_value("5432", "u4", earlier).kept
    earlier["u4"] = Turn("u4", ("what is the db port?", "DB_PORT=5432"))
    assert check_value("5432", "u4", earlier).kept


def test_value_7_code_learns_facts_3_tokens_from_tool_output() -> None:
    out = (
        "Ran 212 tests in 41.20s\nOK at 12:05 on v1.2.3 (commit a1b2c3d4); 7 files, http://localhost:5173/ ok"
    )
    assert learn_values(out) == ("212", "41.20s", "v1.2.3", "a1b2c3d4", "5173")
    assert learn_values("12 ab 1a x1y2 x1y2") == ("x1y2",)


def _v(what: str, value: str, seq: int) -> Value:
    return Value(value=value, what=what, turn=f"u{seq}", seq=seq, span=1)


def test_value_8_same_name_replaces_older_newest_first() -> None:
    existing = [_v("dev server port", "5173", 3), _v("test time", "41.20s", 4)]
    merged, cut = merge_values(existing, [_v("Dev  Server PORT", "5174", 9)])
    assert [(v.what, v.value) for v in merged] == [("Dev  Server PORT", "5174"), ("test time", "41.20s")]
    assert cut == 0


def test_value_8_an_older_value_never_replaces_a_newer_one() -> None:
    merged, _ = merge_values([_v("port", "2", 9)], [_v("port", "1", 5)])
    assert [v.value for v in merged] == ["2"]


def test_value_8_at_most_twenty_kept() -> None:
    merged, cut = merge_values([_v(f"v{n}", str(n), n) for n in range(1, 26)], [])
    assert len(merged) == MAX_VALUES and cut == 5
    assert [v.seq for v in merged] == list(range(25, 5, -1))


# --- properties ---

_EDGE = st.text(alphabet=" .,:/()-_\n=", max_size=4)


@settings(max_examples=300)
@given(_EDGE, st.text(min_size=1, max_size=12).filter(lambda v: v.strip() != "" and "\r" not in v), _EDGE)
def test_value_4_property_unflanked_value_is_found(before: str, value: str, after: str) -> None:
    assert find_value(f"noise 8080{before} {value}{after}", value).kept


@settings(max_examples=300)
@given(st.text(max_size=60), st.text(max_size=12), st.text(max_size=4))
def test_value_property_never_raises_and_kept_means_verbatim(text: str, value: str, turn: str) -> None:
    verdict = check_value(value, turn or "u1", {"u1": Turn("u1", (text,))})
    if verdict.kept:
        assert value.replace("\r\n", "\n") in text.replace("\r\n", "\n")
    for token in learn_values(text):
        assert len(token) >= 3 and any(ch.isdigit() for ch in token) and find_value(text, token).kept
