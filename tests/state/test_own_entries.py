"""The one reader of each of Longhaul's records: what it reads, what it refuses (FOLD-5, FORMAT-2..5)."""

from __future__ import annotations

from typing import Any

import pytest

from longhaul_daemon.state.model import State
from longhaul_daemon.state.own_entries import (
    Refusal,
    SpanRecord,
    compaction_lines,
    read_details_state,
    read_span_record,
)


def _compaction(details: object) -> dict[str, Any]:
    return {"type": "compaction", "id": "c1", "details": details}


def _span(data: object) -> dict[str, Any]:
    return {"type": "custom", "customType": "compaction-state.span", "id": "s1", "data": data}


def _line(data: object) -> dict[str, Any]:
    return {"type": "custom", "customType": "compaction-state.line", "data": data}


def test_details_are_read_only_as_format_1_written_as_an_integer() -> None:
    state = {"span": 2, "stateFormat": 1}
    assert read_details_state(_compaction({"stateFormat": 1, "state": state})) == State(span=2)
    for fmt, code in ((1.0, "bad-format"), (True, "bad-format"), ("1", "bad-format"), (2, "newer-format")):
        refused = read_details_state(_compaction({"stateFormat": fmt, "state": state}))
        assert isinstance(refused, Refusal) and refused.code == code, fmt
    inner = read_details_state(_compaction({"stateFormat": 1, "state": {"stateFormat": 2}}))
    assert isinstance(inner, Refusal) and inner.code == "newer-format"
    broken = read_details_state(_compaction({"stateFormat": 1, "state": {"span": "two"}}), span=4)
    assert broken == Refusal("malformed", "compaction details of span 4: state does not match format 1")
    assert read_details_state(_compaction([1])) == Refusal(
        "malformed", "compaction details are not an object"
    )


@pytest.mark.parametrize("span", [3, "3", 3.0])
def test_a_span_record_reads_its_span_number_leniently(span: object) -> None:
    record = read_span_record(_span({"v": 1, "span": span, "compactionId": "c1", "closedAs": "whole"}))
    assert record == SpanRecord(v=1, span=3, compactionId="c1", closedAs="whole")


def test_a_span_record_of_another_version_is_skipped_and_a_bad_v1_refused() -> None:
    for v in (2, "1", 1.0, True, None):
        assert read_span_record(_span({"v": v, "compactionId": "c1"})) is None, v
    assert read_span_record(_span("not an object")) is None
    for bad in ({"closedAs": "bogus"}, {"compactionId": ""}, {"passId": 7}, {"span": "three"}):
        refused = read_span_record(_span({"v": 1, "compactionId": "c1"} | bad))
        assert isinstance(refused, Refusal) and refused.code == "malformed", bad


def test_each_compaction_gets_the_first_line_after_it() -> None:
    first, second = {"span": 1, "calls": 2}, {"fallback": "daemon-down"}
    branch = [
        {"type": "compaction", "id": "a"},
        _line("not an object"),
        _line(first),
        _line({"span": 1, "calls": 9}),
        {"type": "compaction", "id": "b"},
        {"type": "compaction", "id": "c"},
        _line(second),
    ]
    assert compaction_lines(branch) == [first, None, second]
    assert compaction_lines([_line(first)]) == []
