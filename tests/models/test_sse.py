"""The SSE parser: field rules, ``\\n``-only line splitting, and any chunking gives the same events."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from longhaul_daemon.models.http import SseEvent, SseParser


def parse_all(chunks: list[str]) -> list[SseEvent]:
    parser = SseParser()
    events: list[SseEvent] = []
    for chunk in chunks:
        events.extend(parser.feed(chunk))
    return events + parser.finish()


def test_fields_comments_and_multiline_data() -> None:
    stream = ': keep-alive\nevent: message_start\ndata: {"a":1}\n\ndata: one\ndata:two\nid: 7\nretry: 10\n\n'
    assert parse_all([stream]) == [SseEvent("message_start", '{"a":1}'), SseEvent(None, "one\ntwo")]


def test_crlf_lines_and_unicode_separators_inside_data() -> None:
    stream = 'event: x\r\ndata: {"t":"a\u2028b\u0085c\x1cd"}\r\n\r\n'
    assert parse_all([stream]) == [SseEvent("x", '{"t":"a\u2028b\u0085c\x1cd"}')]


def test_blank_lines_alone_dispatch_nothing() -> None:
    assert parse_all(["\n\n\r\n"]) == []


def test_unterminated_last_event_is_dispatched_at_end() -> None:
    assert parse_all(["data: [DONE]"]) == [SseEvent(None, "[DONE]")]


def test_event_with_empty_data_is_kept() -> None:
    assert parse_all(["event: ping\n\n"]) == [SseEvent("ping", "")]


_text = st.text(st.characters(blacklist_characters="\n\r", blacklist_categories=["Cs"]), max_size=30)
_events = st.lists(
    st.tuples(st.one_of(st.none(), _text.filter(lambda s: s != "")), st.lists(_text, min_size=1, max_size=3)),
    max_size=6,
)


def _encode(events: list[tuple[str | None, list[str]]], newline: str) -> str:
    out = []
    for name, lines in events:
        if name is not None:
            out.append(f"event: {name}{newline}")
        out.extend(f"data: {line}{newline}" for line in lines)
        out.append(newline)
    return "".join(out)


@given(
    events=_events,
    newline=st.sampled_from(["\n", "\r\n"]),
    cuts=st.lists(st.integers(min_value=0), max_size=12),
)
def test_any_chunking_yields_the_same_events(
    events: list[tuple[str | None, list[str]]], newline: str, cuts: list[int]
) -> None:
    stream = _encode(events, newline)
    points = sorted({c % (len(stream) + 1) for c in cuts})
    chunks = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)], strict=True)]
    expected = [SseEvent(name, "\n".join(lines)) for name, lines in events]
    assert parse_all([stream]) == expected
    assert parse_all(chunks) == expected
