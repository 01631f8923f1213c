"""A group cut at its output limit is cut back to its last whole member or item and closed, so a reply a
small model wrote to the cap keeps what it finished (:func:`closed_prefix`, used by the Diff's salvage)."""

from __future__ import annotations

import json

from longhaul_daemon.models.json_scan import SALVAGE_TRIES, closed_in_string, closed_prefix


def test_a_cut_group_is_closed_after_its_last_whole_item() -> None:
    cut = '{"a": {"x": 1}, "b": [{"t": "one"}, {"t": "two"}, {"t": "thr'
    assert json.loads(closed_prefix(cut) or "") == {"a": {"x": 1}, "b": [{"t": "one"}, {"t": "two"}]}


def test_a_cut_inside_a_member_keeps_the_members_before_it() -> None:
    assert closed_prefix('{"a": "x", "b": "y\\"},{') == '{"a": "x"}'  # brackets inside a string are text
    assert closed_prefix('{"a": "1.1.1.1.1') is None  # nothing whole to keep


def test_a_cut_inside_an_item_drops_the_whole_item() -> None:
    """Half an item would read as a defect (a value with no ``turn``): the list keeps its whole items."""
    cut = '{"values": [{"name": "port", "value": "8431", "turn": "u3"}, {"name": "host", "val'
    assert json.loads(closed_prefix(cut) or "") == {
        "values": [{"name": "port", "value": "8431", "turn": "u3"}]
    }


def test_salvage_tries_are_bounded_by_the_newest_cuts() -> None:
    items = ", ".join(f'{{"t": {n}}}' for n in range(SALVAGE_TRIES * 3))
    closed = closed_prefix('{"b": [' + items + ', {"t": ')
    assert closed is not None and json.loads(closed)["b"][-1] == {"t": SALVAGE_TRIES * 3 - 1}


def test_a_cut_inside_a_member_s_string_value_closes_there() -> None:
    cut = '{"labels": {"u1": {"label": "rule"}}, "narrative": "The amount column is missing. The am'
    assert json.loads(closed_in_string(cut) or "")["narrative"] == "The amount column is missing. The am"
    assert closed_in_string('{"labels": {"u1": {"label": "ru') is None  # a string inside an item: no
    assert closed_in_string('{"narr') is None  # a key, not a value
    assert closed_in_string('{"narrative": "ends in an escape \\') is None
