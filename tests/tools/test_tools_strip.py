"""The kept-window strip decision: which reasoning leaves the context, and its counts (TOOLS-9, -10)."""

from __future__ import annotations

import copy
from typing import Any

from tools_branch import Branch

from longhaul_daemon.state.model import State
from longhaul_daemon.tools.strip import WindowMemory, has_thinking, plan_strip


def summary_message() -> dict[str, Any]:
    return {"role": "compactionSummary", "summary": "s", "tokensBefore": 1, "timestamp": 1}


def window_branch() -> tuple[Branch, dict[str, Any], str]:
    """Old turn (summarized), kept turn with reasoning, then the Longhaul compaction."""
    b = Branch()
    b.user("old question")
    b.assistant("old answer", thinking=("OLD-SUMMARIZED-THOUGHT",))
    kept = b.user("kept question")
    b.assistant("kept answer", thinking=("KEPT-THOUGHT-ONE", "KEPT-2"))
    b.assistant("kept follow-up", thinking=("KEPT-THOUGHT-THREE",))
    comp = b.longhaul(State(span=1), first_kept=kept["id"])
    return b, comp, kept["id"]


def context(b: Branch, first_kept: str, *after: dict[str, Any]) -> list[dict[str, Any]]:
    """What pi's context event carries: the summary, the kept window, then newer messages."""
    return [summary_message(), *copy.deepcopy(b.messages_from(first_kept)), *after]


def test_reasoning_of_the_kept_window_is_planned_out_with_counts() -> None:
    """TOOLS-9: thinking blocks before the compaction entry go; cutoff names that entry; counts per LOG-21."""
    b, comp, first_kept = window_branch()
    b.user("new question after the compaction")
    msgs = context(b, first_kept, b.entries[-1]["message"])
    plan = plan_strip(msgs, b.entries)
    assert plan.cutoff == comp["id"]
    assert plan.indexes == (2, 3)  # the two kept assistant messages (0 = summary, 1 = kept user)
    assert plan.stripped_blocks == 3
    assert plan.stripped_chars == len("KEPT-THOUGHT-ONE") + len("KEPT-2") + len("KEPT-THOUGHT-THREE")
    assert plan.context_messages == len(msgs) == 5


def test_turn_in_progress_keeps_its_reasoning() -> None:
    """TOOLS-9: no user message after the kept window yet, so the kept turn is still in progress."""
    b, _, first_kept = window_branch()
    plan = plan_strip(context(b, first_kept), b.entries)
    assert plan.indexes == () and plan.stripped_blocks == 0
    # Only the messages after the last user message are in progress: an earlier kept turn still goes.
    b2 = Branch()
    first = b2.user("first kept question")
    b2.assistant("a1", thinking=("T-EARLIER",))
    b2.user("second kept question")
    b2.assistant("a2", thinking=("T-IN-PROGRESS",))
    b2.longhaul(State(span=1), first_kept=first["id"])
    plan2 = plan_strip(context(b2, first["id"]), b2.entries)
    assert plan2.indexes == (2,) and plan2.stripped_chars == len("T-EARLIER")


def test_messages_after_the_compaction_keep_their_reasoning() -> None:
    """TOOLS-9: only assistant messages that come before the compaction entry lose reasoning."""
    b, _, first_kept = window_branch()
    b.user("q2")
    new = b.assistant("a2", thinking=("NEW-THOUGHT",))["message"]
    b.user("q3")
    msgs = context(b, first_kept, b.entries[-3]["message"], new, b.entries[-1]["message"])
    plan = plan_strip(msgs, b.entries)
    assert plan.indexes == (2, 3)
    assert all(msgs[i]["timestamp"] != new["timestamp"] for i in plan.indexes)


def test_no_strip_without_a_newest_longhaul_compaction() -> None:
    """TOOLS-9 applies after a Longhaul compaction only: none, or pi's own newer one, leaves context alone."""
    b = Branch()
    b.user("q")
    b.assistant("a", thinking=("T",))
    b.user("q2")
    msgs = b.messages_from(b.entries[0]["id"])
    assert plan_strip(msgs, b.entries).cutoff is None
    lb, _, first_kept = window_branch()
    lb.compaction({"readFiles": []}, first_kept=first_kept)  # pi's own, newer
    lb.user("q")
    plan = plan_strip(context(lb, first_kept, lb.entries[-1]["message"]), lb.entries)
    assert plan.cutoff is None and plan.indexes == () and plan.context_messages == 5


def test_unrecognised_context_and_odd_content_are_left_alone() -> None:
    """Messages the kept window does not hold (other timestamps, malformed) are never guessed at."""
    b, _, first_kept = window_branch()
    b.user("q")
    foreign = {"role": "assistant", "content": [{"type": "thinking", "thinking": "x"}], "timestamp": 7}
    odd = {"role": "assistant", "content": "not a list", "timestamp": b.entries[3]["message"]["timestamp"]}
    plan = plan_strip([summary_message(), foreign, odd, b.entries[-1]["message"]], b.entries)
    assert plan.indexes == ()
    missing = copy.deepcopy(b.entries)
    missing[5]["firstKeptEntryId"] = "not-on-path"  # pi then keeps nothing before the compaction
    assert plan_strip(context(b, first_kept, b.entries[-1]["message"]), missing).indexes == ()
    assert plan_strip([], ["junk", 3]).cutoff is None  # type: ignore[list-item]


def test_has_thinking() -> None:
    assert has_thinking({"role": "assistant", "content": [{"type": "thinking", "thinking": ""}]})
    assert not has_thinking({"role": "user", "content": [{"type": "thinking", "thinking": "x"}]})
    assert not has_thinking({"role": "assistant", "content": [{"type": "text", "text": "x"}]})


def test_window_memory_answers_first_time_once_per_window() -> None:
    """TOOLS-10: building the context again for the same window logs nothing more."""
    memory = WindowMemory(limit=2)
    assert memory.first_time("s1", "c1")
    assert not memory.first_time("s1", "c1")
    assert memory.first_time("s2", "c1")  # another session's window
    assert memory.first_time("s1", "c2")  # a new kept window
    assert memory.first_time("s1", "c1")  # evicted by the bound: logged once more, never lost work
