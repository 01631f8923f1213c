"""The redactor: whole credentials and every long piece of one leave any text, nothing else changes.

Issue 12 item 4: a provider echoing part of the key, a model repeating a header value, must leave no run of
8 characters of a credential of 12 or more, and no whole credential of 8 or more, in what the daemon writes.
"""

from __future__ import annotations

import string
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from longhaul_daemon.protocol import CompactParams
from longhaul_daemon.secrets.redaction import (
    EMPTY,
    MARK,
    PIECE_CHARS,
    Redactor,
    log_binding,
    redact_log_event,
    redactor_for_pass,
)

KEY = "sk-proj-Zq81vR6tXmB3nLw0pA7sK2dYfH9cJ4uE"
HEADER = "hdr-tok-5Yh2Lq9WxB7vN3"
SHORT = "ab12cd34"  # 8 characters: redacted whole, never by piece

_SECRET_CHARS = string.ascii_letters + string.digits + "-_."


def pieces(secret: str, length: int = PIECE_CHARS) -> list[str]:
    return [secret[i : i + length] for i in range(len(secret) - length + 1)]


def holds_piece(text: str, secret: str) -> bool:
    return any(piece in text for piece in pieces(secret))


def test_whole_credentials_and_long_pieces_are_replaced() -> None:
    redactor = Redactor([KEY, HEADER, SHORT])
    text = f"401: Incorrect API key provided: {KEY}. hdr={HEADER}; tail …{KEY[-9:]} head {KEY[:8]}… {SHORT}"
    out = redactor.text(text)
    assert not holds_piece(out, KEY) and not holds_piece(out, HEADER) and SHORT not in out
    assert out.startswith("401: Incorrect API key provided: ") and out.count(MARK) == 5


def test_a_piece_shorter_than_eight_and_a_part_of_a_short_credential_stay() -> None:
    redactor = Redactor([KEY, SHORT])
    text = f"seven {KEY[5:12]} and part of the short one {SHORT[:7]}"
    assert redactor.text(text) == text


def test_values_too_short_to_be_secrets_are_not_redacted() -> None:
    redactor = Redactor(["1", "true", "abc1234"])  # flags in header values, never redacted
    assert not redactor
    assert redactor.text("true 1 abc1234") == "true 1 abc1234"


def test_pieces_side_by_side_leave_one_mark_and_neighbours_stay() -> None:
    redactor = Redactor([KEY])
    out = redactor.text(f"x{KEY[0:20]}{KEY[20:]}y")
    assert out == f"x{MARK}y"


def test_non_ascii_credentials_are_cut_out_whole_characters() -> None:
    secret = "ключ-секрет-очень-длинный"
    out = Redactor([secret]).text(f"a {secret[3:14]} b {secret[:5]} c")
    assert out == f"a {MARK} b {secret[:5]} c"
    out.encode()  # no piece of a multi-byte character left behind


def test_value_walks_keys_and_members_and_keeps_clean_parts_as_they_are() -> None:
    redactor = Redactor([KEY])
    clean = {"n": 1, "list": ["a", {"b": None}], "t": ("x",)}
    doc: dict[str, Any] = {"summary": f"now: {KEY}", KEY[2:14]: "v", "clean": clean, "n": 3.5}
    out = redactor.value(doc)
    assert out == {"summary": f"now: {MARK}", MARK: "v", "clean": clean, "n": 3.5}
    assert out["clean"] is clean
    assert redactor.value(clean) is clean
    assert redactor.value("short") == "short"


def test_value_finds_a_credential_json_would_escape() -> None:
    quoted = 'pa"ss\\word-0123456789'
    redactor = Redactor([quoted])
    assert redactor.value({"k": [f"x{quoted}y"]}) == {"k": [f"x{MARK}y"]}


def test_the_redactor_never_shows_its_values() -> None:
    redactor = Redactor([KEY, HEADER])
    assert KEY not in repr(redactor) and HEADER not in str(redactor)
    assert repr(redactor) == "Redactor(2 values)"


def test_union_redacts_the_values_of_both() -> None:
    both = Redactor([KEY]).union(Redactor([HEADER]))
    assert both.text(f"{KEY} {HEADER}") == f"{MARK} {MARK}"
    assert EMPTY.union(both) is both and both.union(EMPTY) is both


@settings(max_examples=200, deadline=None)
@given(
    secret=st.text(alphabet=_SECRET_CHARS, min_size=12, max_size=80),
    before=st.text(alphabet=" !@#é\u202e", max_size=40),  # nothing of the secret's own alphabet
    after=st.text(alphabet=" !@#é\u202e", min_size=1, max_size=40),  # two runs touching are one
    cut=st.data(),
)
def test_no_run_of_eight_survives_wherever_it_sits(
    secret: str, before: str, after: str, cut: st.DataObject
) -> None:
    start = cut.draw(st.integers(0, len(secret) - PIECE_CHARS))
    end = cut.draw(st.integers(start + PIECE_CHARS, len(secret)))
    text = before + secret[start:end] + after + secret
    out = Redactor([secret]).text(text)
    assert not holds_piece(out, secret)
    assert out == f"{before}{MARK}{after}{MARK}"  # the text around the secret stays as it was


@settings(max_examples=100, deadline=None)
@given(text=st.text(alphabet=string.ascii_lowercase + " ", max_size=300))
def test_text_without_a_credential_comes_back_unchanged(text: str) -> None:
    assert Redactor([KEY, HEADER]).text(text) == text


def test_a_pass_redactor_holds_both_models_key_and_header_values() -> None:
    params = CompactParams.model_validate(
        {
            "session": {"cwd": "/w", "sessionId": "s", "agentDir": "/a", "piVersion": "0.73.1"},
            "preparation": {"firstKeptEntryId": "e1", "tokensBefore": 1},
            "branchEntries": [],
            "credentials": {"apiKey": KEY, "headers": {"x-a": HEADER}},
            "summarizer": {"spec": "p/m", "credentials": {"apiKey": "sum-key-0123456789", "headers": {}}},
        }
    )
    redactor = redactor_for_pass(params)
    assert redactor.text(f"{KEY} {HEADER} sum-key-0123456789") == f"{MARK} {MARK} {MARK}"


def test_the_log_processor_redacts_every_value_of_a_line_whose_logger_holds_a_pass_redactor() -> None:
    event = {"event": "model_call", "code": KEY[4:20], "nested": {"k": [HEADER]}, "n": 3}
    assert redact_log_event(None, "info", dict(event)) == event  # no pass: nothing to redact
    out = redact_log_event(None, "info", {**event, **log_binding(Redactor([KEY, HEADER]))})
    assert out == {"event": "model_call", "code": MARK, "nested": {"k": [MARK]}, "n": 3}  # the field left


def test_a_pass_without_credentials_binds_nothing_to_its_logger() -> None:
    assert log_binding(EMPTY) == {} and log_binding(Redactor(["short"])) == {}
