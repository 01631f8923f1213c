"""The fold: the state rebuilt from branch entries alone (FOLD-*, FORMAT-*, PASS-15, PASS-16)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lh_branch import Branch

from longhaul_daemon.passes.fold import fold
from longhaul_daemon.passes.prompting.prompt import build_prompt
from longhaul_daemon.state.model import Command, Rule, State


def _state(span: int, *, seq: int = 0, rules: int = 0, commands: int = 0) -> State:
    return State(
        span=span,
        seq=seq,
        nextRule=rules + 1,
        nextCommand=commands + 1,
        rules=[
            Rule(id=f"R{n}", words=f"rule {n}", message=f"u{n}", seq=n, span=span)
            for n in range(1, rules + 1)
        ],
        commands=[Command(id=f"C{n}", text=f"make {n}", exit=0, span=span) for n in range(1, commands + 1)],
    )


def _codes(result: Any) -> list[str]:
    return [a.code for a in result.anomalies]


def test_fold2_empty_branch_folds_to_an_empty_state() -> None:
    result = fold([])
    assert result.state == State()
    assert result.anomalies == []
    assert result.base_compaction_id is None
    assert result.spans == []
    assert result.remembered == []
    assert not result.newest_compaction_foreign


def test_fold2_base_is_newest_longhaul_compaction_even_under_a_newer_foreign_one() -> None:
    b = Branch()
    b.user("set up the project")
    b.longhaul(_state(1, seq=1, rules=1, commands=2))
    b.user("keep going")
    l2 = b.longhaul(_state(2, seq=3, rules=2, commands=5))
    b.user("more work")
    f = b.foreign()
    result = fold(b.entries)
    assert result.base_compaction_id == l2["id"]
    assert result.state == _state(2, seq=3, rules=2, commands=5)
    assert result.newest_compaction_foreign
    assert result.foreign_compactions == [f["id"]]
    assert [s.span for s in result.spans] == [1, 2]
    assert result.anomalies == []


def test_fold2_only_foreign_compactions_give_an_empty_state() -> None:
    b = Branch()
    b.user("hello")
    b.foreign()
    b.compaction(None, from_hook=False)
    result = fold(b.entries)
    assert result.state == State()
    assert result.base_compaction_id is None
    assert result.newest_compaction_foreign
    assert len(result.foreign_compactions) == 2


def test_format2_format3_newer_base_is_refused_by_name_and_state_is_clean() -> None:
    b = Branch()
    b.longhaul(_state(1, seq=2, rules=2, commands=3))
    l2 = b.longhaul(_state(2, seq=4, rules=3, commands=9), fmt=2)
    result = fold(b.entries)
    assert _codes(result) == ["newer-format"]
    anomaly = result.anomalies[0]
    assert anomaly.entry_id == l2["id"]
    assert "compaction details" in anomaly.detail and "stateFormat 2" in anomaly.detail
    assert result.base_refused
    assert result.state.rules == [] and result.state.commands == [] and result.state.seq == 0
    assert result.state.span == 2  # its number is spent: the next pass closes span 3 (PASS-16)


def test_ex15_newer_events_and_span_record_from_a_newer_longhaul() -> None:
    b = Branch()
    l1 = b.longhaul(_state(1, seq=1, rules=1), fmt=2)
    b.span_record(l1, v=2)
    e1 = b.event("rule", 2, fmt=2, words="never push", message="u3")
    e2 = b.event("decision", 3, fmt=2, text="use sqlite")
    result = fold(b.entries)
    assert _codes(result) == ["newer-format", "newer-format", "newer-format"]
    assert [a.entry_id for a in result.anomalies] == [l1["id"], e1["id"], e2["id"]]
    assert "compaction-state.event" in result.anomalies[1].detail
    assert all("stateFormat 2" in a.detail for a in result.anomalies)
    assert result.state.rules == [] and result.state.decisions == []
    assert result.spans[0].detail_available is False


def test_format2_a_newer_format_inside_the_state_is_refused_too() -> None:
    b = Branch()
    entry = b.longhaul(_state(1, rules=1))
    entry["details"]["state"]["stateFormat"] = 3
    result = fold(b.entries)
    assert _codes(result) == ["newer-format"]
    assert "stateFormat 3" in result.anomalies[0].detail
    assert result.state.rules == [] and result.base_refused


@pytest.mark.parametrize("fmt", [None, "1", 0, -1, 1.0, True, [1]])
def test_format4_missing_or_invalid_format_is_bad_format(fmt: Any) -> None:
    b = Branch()
    b.longhaul(_state(1, rules=1), fmt=fmt)
    b.event("rule", 5, fmt=fmt, words="always lint", message="u9")
    result = fold(b.entries)
    assert _codes(result) == ["bad-format", "bad-format"]
    assert result.state.rules == []


def test_fold6_malformed_base_state_is_an_anomaly_and_a_clean_state() -> None:
    b = Branch()
    entry = b.longhaul(_state(1, rules=1))
    entry["details"]["state"]["rules"] = "not a list"
    b.longhaul(_state(2))["details"]["state"] = ["nope"]
    result = fold(b.entries)
    assert _codes(result) == ["malformed"]
    assert result.state.rules == [] and result.state.span == 2


def test_format5_span_record_of_another_version_is_skipped_without_an_anomaly() -> None:
    b = Branch()
    l1 = b.longhaul(_state(1), pass_id="pa")
    b.span_record(l1, closedAs="whole")
    l2 = b.longhaul(_state(2), pass_id="pb")
    b.span_record(l2, v=2, closedAs="whole")
    l3 = b.longhaul(_state(3), pass_id="pc")
    b.span_record(l3, v=None)
    result = fold(b.entries)
    assert result.anomalies == []
    assert [(s.span, s.closed_as, s.detail_available, s.pass_id) for s in result.spans] == [
        (1, "whole", True, "pa"),
        (2, None, False, "pb"),
        (3, None, False, "pc"),
    ]
    assert result.spans[1].compaction_id == l2["id"]
    assert result.state.span == 3


def test_fold6_span_record_naming_a_compaction_not_on_the_branch() -> None:
    b = Branch()
    l1 = b.longhaul(_state(1))
    f = b.foreign()
    bad = b.span_record({"id": "deadbeef"})
    foreign_record = b.span_record(f)
    b.span_record(l1, closedAs="empty")
    twice = b.span_record(l1, closedAs="whole")
    broken = b.span_record(l1, closedAs="bogus")
    result = fold(b.entries)
    assert [(a.entry_id, a.code) for a in result.anomalies] == [
        (bad["id"], "unknown-compaction"),
        (foreign_record["id"], "unknown-compaction"),
        (twice["id"], "duplicate-span-record"),
        (broken["id"], "malformed"),
    ]
    assert result.spans[0].closed_as == "empty"


def _busy_branch() -> Branch:
    b = Branch()
    b.user("build the CSV export")
    b.event("remember", text="tried pandas, too slow")
    l1 = b.longhaul(_state(1, seq=2, rules=1, commands=2))
    b.span_record(l1, closedAs="whole")
    b.line(1)
    b.custom("other-extension", {"kind": "rule", "seq": 9, "stateFormat": 1, "words": "x", "message": "u1"})
    b.event("rule", 3, words="never touch the public API", message="u4")
    b.user("continue")
    l2 = b.longhaul(_state(2, seq=3, rules=2, commands=4))
    b.span_record(l2)
    b.line(2)
    b.event("decision", 4, text="stream rows", evidence=["C3"])
    b.event("remember", text="csv module is enough")
    b.line(3)
    return b


def test_pass15_deleting_every_line_entry_leaves_the_fold_byte_identical() -> None:
    b = _busy_branch()
    without = [e for e in b.entries if e.get("customType") != "compaction-state.line"]
    assert len(without) < len(b.entries)
    assert fold(without).state.model_dump_json() == fold(b.entries).state.model_dump_json()
    assert fold(without).spans == fold(b.entries).spans


def test_fold8_folding_twice_is_byte_identical_and_leaves_the_entries_alone() -> None:
    b = _busy_branch()
    before = copy.deepcopy(b.entries)
    first = fold(b.entries)
    second = fold(b.entries)
    assert first.state.model_dump_json() == second.state.model_dump_json()
    assert first == second
    assert b.entries == before


def test_fold1_other_extensions_and_messages_are_ignored() -> None:
    b = _busy_branch()
    result = fold(b.entries)
    assert [d.text for d in result.state.decisions] == ["stream rows"]
    assert len(result.state.rules) == 2  # the other extension's "rule" entry was not read
    assert result.anomalies == []


def test_fold1_a_sibling_branch_does_not_change_the_fold() -> None:
    trunk = Branch("t")
    trunk.user("start")
    trunk.longhaul(_state(1, seq=1, rules=1))
    fork_point = len(trunk.entries)
    trunk.event("rule", 2, words="use tabs", message="u2")
    # The sibling shares the prefix and holds an extra rule; pi's getBranch() never returns it with the trunk.
    sibling = Branch("t")
    sibling.entries = copy.deepcopy(trunk.entries[:fork_point])
    sibling.event("rule", 2, words="use spaces", message="u3")
    tree = {e["id"]: e for e in trunk.entries + sibling.entries}
    path: list[dict[str, Any]] = []
    node: dict[str, Any] | None = trunk.entries[-1]
    while node is not None:
        path.insert(0, node)
        node = tree.get(node["parentId"]) if node["parentId"] else None
    assert fold(path).state.model_dump_json() == fold(trunk.entries).state.model_dump_json()
    assert [r.words for r in fold(path).state.rules] == ["rule 1", "use tabs"]


def test_fold9_stop_after_span_returns_the_state_as_it_stood() -> None:
    b = _busy_branch()
    at_one = fold(b.entries, stop_after_span=1)
    assert at_one.state.span == 1
    assert [r.words for r in at_one.state.rules] == ["rule 1", "never touch the public API"]
    assert at_one.state.seq == 3
    assert [n.text for n in at_one.remembered] == []
    at_two = fold(b.entries, stop_after_span=2)
    assert at_two.state.model_dump_json() == fold(b.entries).state.model_dump_json()
    assert len(at_two.spans) == 2
    for bad in (0, 3, -1):
        with pytest.raises(ValueError):
            fold(b.entries, stop_after_span=bad)


def test_fold4_remembered_notes_since_the_base_are_handed_over_unnumbered() -> None:
    b = _busy_branch()
    result = fold(b.entries)
    assert [(n.text, n.seq) for n in result.remembered] == [("csv module is enough", 0)]
    assert result.remembered[0].entryId == b.entries[-2]["id"]
    assert result.state.notes == []


def test_fold3_fold7_events_apply_in_seq_order_and_duplicates_are_anomalies() -> None:
    b = Branch()
    b.longhaul(_state(1, seq=5, rules=1))
    stale = b.event("rule", 4, words="stale", message="u2")
    b.event("rule", 7, words="seventh", message="u7")
    b.event("rule", 6, words="sixth", message="u6")
    dup = b.event("rule", 7, words="second seventh", message="u8")
    result = fold(b.entries)
    assert [(a.entry_id, a.code) for a in result.anomalies] == [
        (stale["id"], "duplicate-seq"),
        (dup["id"], "duplicate-seq"),
    ]
    assert [(r.id, r.words, r.seq) for r in result.state.rules] == [
        ("R1", "rule 1", 1),
        ("R2", "sixth", 6),
        ("R3", "seventh", 7),
    ]
    assert result.state.seq == 7 and result.state.nextRule == 4


def test_format10_every_event_kind_applies_and_unknown_kinds_are_anomalies() -> None:
    b = Branch()
    b.longhaul(_state(1, seq=1, rules=1))
    b.event("rule", 2, words="never force-push", message="u5")
    b.event("lift", 3, target="R1", by="u6")
    b.event("lift", 4, target="R1", by="u7")  # already lifted: dropped silently
    missing = b.event("lift", 5, target="R9", by="u7")
    b.event("decision", 6, text="use argparse", evidence=["C1"])
    b.event("deadEnd", 7, text="click was too heavy", evidence=["E1"])
    b.event("value", 8, value="5173", what="dev server port", turn="u11")
    b.event("objective", 9, text="ship the CLI")
    b.event("now", 10, text="writing tests")
    odd = b.event("teleport", 11)
    no_seq = b.event("decision", None, text="x")
    no_text = b.event("decision", 12)
    no_data = b.custom("compaction-state.event", "just a string")
    empty_note = b.event("remember", text="")
    result = fold(b.entries)
    s = result.state
    assert [(a.entry_id, a.code) for a in result.anomalies] == [
        (odd["id"], "unknown-kind"),
        (no_seq["id"], "malformed"),
        (no_text["id"], "malformed"),
        (no_data["id"], "malformed"),
        (empty_note["id"], "malformed"),
        (missing["id"], "unknown-rule"),
    ]
    assert [(r.id, r.lifted, r.liftedBy) for r in s.rules] == [("R1", True, "u6"), ("R2", False, None)]
    assert s.rules[1].span == 2
    assert [(d.text, d.evidence) for d in s.decisions] == [("use argparse", ["C1"])]
    assert [d.text for d in s.deadEnds] == ["click was too heavy"]
    assert [(v.value, v.what, v.turn) for v in s.values] == [("5173", "dev server port", "u11")]
    assert (s.objective, s.now, s.seq) == ("ship the CLI", "writing tests", 10)


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)
_entry = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["message", "compaction", "custom", "label", "bogus"]),
        "id": st.one_of(st.text(max_size=8), st.none(), st.integers()),
        "customType": st.sampled_from(
            ["compaction-state.event", "compaction-state.span", "compaction-state.line", "x"]
        ),
        "data": _json,
        "details": st.one_of(
            _json,
            st.fixed_dictionaries(
                {"compactor": st.just("longhaul"), "stateFormat": _json, "state": _json, "passId": _json}
            ),
        ),
    }
)


@settings(max_examples=200)
@given(st.lists(st.one_of(_entry, _json), max_size=12))
def test_fold6_fold_never_raises_on_transcript_content(branch: list[Any]) -> None:
    result = fold(branch)
    assert result.state.model_dump_json() == fold(branch).state.model_dump_json()


def test_tools3_a_remembered_note_keeps_the_agents_kind_hint_and_the_prompt_shows_it() -> None:
    """TOOLS-1, TOOLS-3: the agent's kind travels with the note to the Diff; an unknown kind is dropped."""
    b = Branch()
    b.user("build the CSV export")
    b.event("remember", text="chose the csv module", noteKind="decision")
    b.event("remember", text="odd hint", noteKind="rule")
    remembered = fold(b.entries).remembered
    assert [(n.text, n.kind) for n in remembered] == [
        ("chose the csv module", "decision"),
        ("odd hint", None),
    ]
    prompt = build_prompt(State(), [], remembered=remembered)
    assert "- (decision) chose the csv module" in prompt.user and "- odd hint" in prompt.user


def test_issue12_the_fold_cleans_what_an_older_transcript_stored() -> None:
    """A state stored before acceptance cleaning, and events and notes written raw, reach no reader raw."""
    b = Branch()
    old = _state(1, seq=1, rules=1)
    old.now = "\n## Standing rules\x1b[31m\x07"
    old.rules[0].words = "Never\u202e push\r\nto main.\x00"
    old.readFiles = ["docs/\x1b]0;t\x07a.md"]
    b.longhaul(old)
    b.event("decision", 2, text="Use csv\u200b.\x07", evidence=["C1"])
    b.event("objective", 3, text="\x85Ship\u2066 it")
    b.event("remember", text="note\x1b[1m one")
    b.event("remember", text="\x07\u202e")
    result = fold(b.entries)
    state = result.state
    assert state.now == "## Standing rules" and state.objective == "Ship it"
    assert state.rules[0].words == "Never push\nto main."
    assert state.readFiles == ["docs/a.md"] and [d.text for d in state.decisions] == ["Use csv."]
    assert [n.text for n in result.remembered] == ["note one"]
    assert _codes(result) == ["malformed"]  # the note with nothing printable left


def test_format3_fold11_a_refused_base_is_taken_over_and_ids_count_past_the_ids_it_shows() -> None:
    """FORMAT-3 (our choice: its summary is a foreign summary) and LEDGER-5 (ids never reused): the state
    starts clean, the takeover path opens from the root, and the numbering goes on past every C<n>/E<n> the
    refused summary shows."""
    b = Branch()
    b.user("never push to main")
    refused = b.longhaul(_state(4, seq=9, rules=2, commands=30), fmt=2)
    refused["summary"] = (
        "# state\n- C29 `make` exit 2\n- C30 `make test` exit 0\n- E7 bash: failed (from C29)"
    )
    result = fold(b.entries)
    assert result.base_refused and result.newest_compaction_foreign
    assert result.base_compaction_id == refused["id"] and result.judged_up_to is None
    assert result.state.commands == [] and result.state.rules == []
    assert (result.state.nextCommand, result.state.nextError) == (31, 8)


def test_format3_a_foreign_compaction_after_a_readable_base_still_counts_from_the_base() -> None:
    b = Branch()
    b.longhaul(_state(1, commands=3))
    b.foreign()
    result = fold(b.entries)
    assert not result.base_refused and result.newest_compaction_foreign
    assert result.judged_up_to == result.base_compaction_id
