"""The sanitizer: no control, format or escape character from the transcript survives (PASS-10, INSPECT-8)."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from longhaul_daemon.state.sanitize import ELLIPSIS, is_safe_char, sanitize, sanitize_block, sanitize_line

_UNSAFE = {"Cc", "Cf", "Cs", "Zl", "Zp"}

# Text biased towards the characters that matter: escapes, C0/C1 controls, bidi and zero-width characters.
_nasty = st.text(
    alphabet=st.one_of(
        st.characters(codec=None),
        st.sampled_from(
            list("\x1b\x07\x9b\x9c\x9d\x90\x00\x7f\x85\t\n\r[];0123456789mP\\\u202e\u2066\u200b\ufeff\u2028")
        ),
    ),
    max_size=200,
)


def _assert_printable(text: str) -> None:
    for ch in text:
        assert unicodedata.category(ch) not in _UNSAFE, repr(ch)
        assert ch not in "\t\n\r\x1b"


@given(_nasty)
def test_pass10_no_control_or_format_character_survives(text: str) -> None:
    _assert_printable(sanitize(text))


@given(_nasty)
def test_pass10_sanitize_is_idempotent(text: str) -> None:
    once = sanitize(text)
    assert sanitize(once) == once


@given(st.text(alphabet=st.characters(categories=["L", "N", "P", "S"]), max_size=100))
def test_pass10_plain_text_is_kept(text: str) -> None:
    assert sanitize(text) == text


@given(_nasty, st.integers(min_value=1, max_value=80))
def test_pass10_sanitize_line_is_bounded(text: str, limit: int) -> None:
    line = sanitize_line(text, limit)
    assert len(line) <= limit
    _assert_printable(line)
    if len(sanitize(text)) > limit:
        assert line.endswith(ELLIPSIS)
    else:
        assert line == sanitize(text)


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("\x1b[31mred\x1b[0m", "red"),
        ("\x1b[1;32;40mbold\x1b[m text", "bold text"),
        ("\x9b31mc1 csi", "c1 csi"),
        ("\x1b]0;pwned title\x07after", "after"),
        ("\x1b]8;;https://evil.example\x1b\\link\x1b]8;;\x1b\\", "link"),
        ("\x1bPdevice control\x1b\\ok", "ok"),
        ("\x1b(Bcharset", "charset"),
        ("bell\x07 and nul\x00", "bell and nul"),
        ("del\x7f", "del"),
        ("line one\nline two\r\n\tthree", "line one line two three"),
        ("admin\u202egnp.exe", "admingnp.exe"),
        ("iso\u2066late\u2069", "isolate"),
        ("zero\u200bwidth\ufeff", "zerowidth"),
        ("sep\u2028arated\u2029", "sep arated"),
        ("  padded   out  ", "padded out"),
        ("\ud800lone surrogate", "lone surrogate"),
        ("", ""),
    ],
)
def test_pass10_known_sequences(raw: str, clean: str) -> None:
    assert sanitize(raw) == clean


def test_inspect8_unterminated_escape_leaves_only_harmless_text() -> None:
    out = sanitize("\x1b]0;no terminator")
    assert "\x1b" not in out
    _assert_printable(out)


def test_pass10_sanitize_line_cuts_with_ellipsis() -> None:
    assert sanitize_line("abcdefghij", 5) == "abcd…"
    assert sanitize_line("abc", 5) == "abc"
    assert sanitize_line("a\nb", 3) == "a b"
    with pytest.raises(ValueError):
        sanitize_line("x", 0)


def test_pass10_is_safe_char() -> None:
    assert is_safe_char("a")
    assert is_safe_char("é")
    assert not is_safe_char("\x1b")
    assert not is_safe_char("\u202e")
    assert not is_safe_char("\n")


@given(_nasty, st.integers(min_value=1, max_value=6), st.integers(min_value=1, max_value=40))
def test_tools7_inspect8_sanitize_block_keeps_only_its_own_line_breaks(
    text: str, lines: int, chars: int
) -> None:
    block = sanitize_block(text, max_lines=lines, max_chars=chars)
    rows = block.split("\n") if block else []
    assert len(rows) <= lines
    for row in rows:
        assert len(row) <= chars
        _assert_printable(row)


def test_tools7_sanitize_block_shape() -> None:
    text = "\x1b[1mtitle\x1b[0m\r\n\n\n\tindented\u2028next\x85last\n\n"
    assert sanitize_block(text, max_lines=10, max_chars=80) == "title\n\nindented\nnext\nlast"
    assert sanitize_block("a\nb\nc\nd", max_lines=3, max_chars=80) == "a\nb\n… (2 more lines)"
    assert sanitize_block("", max_lines=1, max_chars=5) == ""
    with pytest.raises(ValueError):
        sanitize_block("x", max_lines=0, max_chars=5)
