"""The gate in code (TURNS-9, TURNS-10, TURNS-12..TURNS-14): what fails, what is dropped, what is excused.

Plain data in, verdicts out: each test hands :func:`gate` one section's answer and reads which problems it
raises, whether they can be excused, and what would be accepted once the repair turns are over.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from longhaul_daemon.passes.turns.gate import EXCUSE_CHARS, GateContext, fold_text, gate, one_sentence
from longhaul_daemon.passes.turns.sections import find_section
from longhaul_daemon.state.model import Command, ErrorEntry

COMMANDS = (
    Command(id="C1", text="pytest tests/test_x.py -q", exit=1, span=1),
    Command(id="C2", text="pytest -q", exit=0, span=1),
)
ERRORS = (ErrorEntry(id="E1", tool="bash", text="1 failed", command="C1", span=1),)
CTX = GateContext(
    ledger_ids=frozenset({"C1", "C2", "E1"}),
    commands=COMMANDS,
    errors=ERRORS,
    span_modified=("src/export.py", "docs/usage.md"),
    span_errors=("E1",),
)


def codes(verdict: Any) -> list[tuple[str, str]]:
    return [(p.kind, p.code) for p in verdict.problems]


def test_turns9_a_reply_with_no_answer_of_the_section_shape_fails_to_parse() -> None:
    for text, form in [
        ("I think it went well.", "none"),
        ('{"status": "ok"}', "foreign"),
        ('{"narrative": "x', "begun"),
    ]:
        answer, found = find_section(text, "narrative")
        assert (answer, found) == (None, form)
        verdict = gate("narrative", answer, found, CTX)
        assert not verdict.parsed and codes(verdict) == [("integrity", "not-parsed")]


def test_turns9_the_narrative_cap_is_240_characters_and_never_excused() -> None:
    named = "Edited src/export.py and docs/usage.md. "
    at_cap = gate("narrative", {"narrative": named + "x" * (240 - len(named))}, "answer", CTX)
    assert at_cap.problems == () and at_cap.accepted.narrative is not None
    over = gate(
        "narrative",
        {
            "narrative": named + "x" * (241 - len(named)),
            "excuses": [{"check": "over-cap", "reason": "It is long."}],
        },
        "answer",
        CTX,
    )
    assert ("integrity", "over-cap") in codes(over) and ("integrity", "unknown-check") in codes(over)
    assert over.accepted.narrative is None  # TURNS-10: still failing after the repairs, it is dropped


def test_turns9_every_id_an_answer_uses_must_exist_and_an_unknown_one_is_dropped_with_its_item_kept() -> None:
    answer = {
        "decisions": [{"text": "Use csv.", "why": "Quoting.", "evidence": ["C2", "C99"]}],
        "deadEnds": [{"text": "Hand-rolled quoting broke.", "evidence": ["E1"]}],
        "openErrors": ["E7"],
        "fixed": [],
    }
    verdict = gate("decisions", answer, "answer", CTX)
    assert codes(verdict) == [("integrity", "unknown-id"), ("integrity", "unknown-id")]
    assert [d.evidence for d in verdict.accepted.decisions] == [("C2",)]  # DIFF-14: the decision stays
    assert verdict.accepted.open_errors == ()
    assert verdict.unmet == ()  # E1 is a dead end's evidence: placed


def test_turns12_each_open_error_of_the_span_must_be_placed_or_fixed() -> None:
    unplaced = gate("decisions", {"decisions": [], "deadEnds": []}, "answer", CTX)
    assert codes(unplaced) == [("expectation", "errors-placed")] and unplaced.unmet == ("errors-placed",)
    listed = gate("decisions", {"openErrors": ["E1"]}, "answer", CTX)
    assert listed.problems == () and listed.accepted.open_errors == ("E1",)
    fixed = gate("decisions", {"fixed": [{"error": "E1", "by": "C2"}]}, "answer", CTX)
    assert fixed.problems == () and [(f.error, f.by) for f in fixed.accepted.fixed] == [("E1", "C2")]
    refused = gate("decisions", {"fixed": [{"error": "E1", "by": "C1"}]}, "answer", CTX)
    assert refused.accepted.fixed == () and refused.accepted.dropped == {"fixed": 1}  # never a repair note
    assert codes(refused) == [("expectation", "errors-placed")]


def test_turns12_every_file_this_span_modified_is_named_by_its_path_or_its_file_name() -> None:
    by_name = gate(
        "narrative", {"narrative": "Fixed export.py and the usage docs in docs/usage.md."}, "answer", CTX
    )
    assert by_name.problems == ()
    missing = gate("narrative", {"narrative": "Fixed export.py."}, "answer", CTX)
    assert codes(missing) == [("expectation", "modified-files-named")]
    assert "docs/usage.md" in missing.problems[0].text and missing.accepted.narrative == "Fixed export.py."


def test_turns12_now_must_be_set() -> None:
    assert codes(gate("now", {"now": "  "}, "answer", CTX)) == [("expectation", "now-set")]
    assert gate("now", {"now": "Add the header row next."}, "answer", CTX).problems == ()


def test_turns13_a_failed_expectation_excused_in_one_sentence_passes_and_keeps_check_and_reason() -> None:
    reason = "The docs change was a typo fix not worth the narrative's room."
    verdict = gate(
        "narrative",
        {"narrative": "Fixed export.py.", "excuses": [{"check": "modified-files-named", "reason": reason}]},
        "answer",
        CTX,
    )
    assert verdict.problems == () and verdict.unmet == ()
    assert verdict.excused == (("modified-files-named", reason),)


@pytest.mark.parametrize(
    "reason",
    [
        "",
        "Too long " + "x" * EXCUSE_CHARS + ".",
        "No end mark",
        "Two sentences. Here is the second.",
        "Is it? Yes it is.",
    ],
)
def test_turns13_an_excuse_that_is_not_one_sentence_is_refused_and_the_check_stays_failed(
    reason: str,
) -> None:
    verdict = gate("now", {"now": "", "excuses": [{"check": "now-set", "reason": reason}]}, "answer", CTX)
    assert verdict.excused == () and verdict.unmet == ("now-set",)
    assert ("expectation", "now-set") in codes(verdict)
    assert one_sentence(reason) is not None


def test_turns13_one_sentence_allows_a_dotted_number_and_a_final_question_mark() -> None:
    assert one_sentence("Version 1.2.3 of the tool was already pinned by the user.") is None
    assert one_sentence("Why would a clean tree need a next step?") is None


def test_turns13_an_excuse_for_a_check_that_passed_is_ignored() -> None:
    verdict = gate(
        "now",
        {"now": "Next: tests.", "excuses": [{"check": "now-set", "reason": "Nothing to do."}]},
        "answer",
        CTX,
    )
    assert verdict.problems == () and verdict.excused == ()


def test_turns14_an_unmet_unexcused_check_is_accepted_with_the_section_and_reported_unmet() -> None:
    verdict = gate("narrative", {"narrative": "Did some work."}, "answer", CTX)
    assert verdict.unmet == ("modified-files-named",)
    assert verdict.accepted.narrative == "Did some work."  # the section is still accepted after the repairs


def test_bounds_other_than_the_narrative_cut_text_and_lists_without_a_repair() -> None:
    answer = {
        "decisions": [{"text": "d" * 400, "why": None, "evidence": []} for _ in range(10)],
        "openErrors": ["E1"],
    }
    verdict = gate("decisions", answer, "answer", CTX)
    assert verdict.problems == ()
    assert len(verdict.accepted.decisions) == 8 and len(verdict.accepted.decisions[0].text) == 300
    assert verdict.accepted.dropped == {"cut-text": 10, "decisions": 2}
    assert gate("now", {"now": "n" * 700}, "answer", CTX).accepted.now == "n" * 599 + "…"


def test_wrong_types_are_integrity_problems_and_the_items_are_dropped() -> None:
    verdict = gate(
        "decisions",
        {"decisions": [{"text": 5}], "deadEnds": "none", "openErrors": ["E1"], "excuses": ["x"]},
        "answer",
        CTX,
    )
    assert [c for _, c in codes(verdict)] == ["wrong-type", "wrong-type", "wrong-type"]
    assert verdict.accepted.decisions == () and verdict.accepted.dead_ends == ()
    assert gate("objective", {"objective": None}, "answer", CTX).accepted.objective is None  # stands
    assert codes(gate("objective", {"objective": 3}, "answer", CTX)) == [("integrity", "wrong-type")]


def test_prose_that_repeats_the_conversations_own_instructions_is_an_echo_never_a_section() -> None:
    said = fold_text("Turn 2 of 5, objective: the session's overall goal in at most 300 characters, or null.")
    ctx = replace(CTX, instructions=said)
    echo = gate(
        "objective", {"objective": "The session's overall goal, in at most 300 characters"}, "answer", ctx
    )
    assert codes(echo) == [("integrity", "echo")] and echo.accepted.objective is None
    short = gate("objective", {"objective": "Overall goal"}, "answer", ctx)  # too short to judge: kept
    assert short.problems == () and short.accepted.objective == "Overall goal"
    own = gate("objective", {"objective": "Ship the CSV export with a header row."}, "answer", ctx)
    assert own.problems == ()


def test_an_item_with_no_words_is_blank_and_dropped_its_section_kept() -> None:
    verdict = gate(
        "decisions",
        {"decisions": [{"text": "...", "why": "...", "evidence": ["C1"]}], "openErrors": ["E1"]},
        "answer",
        CTX,
    )
    assert codes(verdict) == [("integrity", "blank")] and verdict.accepted.decisions == ()
    assert verdict.accepted.open_errors == ("E1",) and verdict.unmet == ()
