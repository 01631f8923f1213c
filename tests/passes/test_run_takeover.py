"""Taking over from pi's own compaction: earlier messages, picked rules and one-offs (TAKEOVER-, EX-4/5/11).

The branch holds a compaction pi wrote itself (no hook answered), so the next Longhaul pass takes over. The
model is a scripted OpenAI-compatible server on loopback; the tests read the state pi would store and the
prompt the daemon sent.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from models.scripted_http import Reply, ScriptedServer, scripted_server

from longhaul_daemon.passes.prompting import takeover as takeover_module
from longhaul_daemon.passes.run import run_pass
from longhaul_daemon.protocol import CompactParams
from longhaul_daemon.state.model import State

from .model_steps import answer_reply, state_of, with_model
from .pi_branch import Session

pytestmark = pytest.mark.anyio

FOREIGN_SUMMARY = "## Goal\nShip the export.\n## Progress\nPI-OWN-SUMMARY of the earlier work."


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with scripted_server([]) as running:
        yield running


def reply(labels: dict[str, str | tuple[str, str]], **fields: Any) -> Reply:
    return answer_reply(labels, narrative="Took over the session.", now="Continue.", **fields)


def taken_over(
    tmp_path: Path, *earlier: str, summary: str = FOREIGN_SUMMARY
) -> tuple[Session, CompactParams]:
    """Earlier messages, a kept one, pi's own compaction, one more message: the hook's input for the pass."""
    s = Session(tmp_path)
    for text in earlier:
        s.user(text)
    kept = len(s.entries)
    s.user("Keep going with the export.")
    s.foreign_compaction(kept, summary)
    s.user("Now write the docs.")
    return s, s.params(len(s.entries) - 1)


def prompt_of(server: ScriptedServer, n: int = 0) -> str:
    messages = server.requests[n].body["messages"]
    return "\n".join(m["content"] for m in messages if m["role"] == "user")


def in_force(state: State) -> list[tuple[str, str, str]]:
    return [(r.id, r.message, r.words) for r in state.rules if not r.lifted]


async def test_ex4_takeover4_a_picked_message_left_unlabeled_is_recorded_by_code(
    tmp_path: Path, server: ScriptedServer
) -> None:
    _, params = taken_over(
        tmp_path, "never deploy on a Friday, not even this time", "don't deploy yet, the tests are red"
    )
    server.script.append(reply({"u2": "not a rule", "u3": "not a rule"}))
    result = await run_pass(with_model(params, server), pass_id="p1")
    assert in_force(state_of(result)) == [("R1", "u1", "never deploy on a Friday, not even this time")]
    prompt = prompt_of(server)
    assert "PI-OWN-SUMMARY of the earlier work." in prompt  # TAKEOVER-1, TAKEOVER-3
    assert "--- u1 (44 characters, picked)" in prompt
    assert (
        "Label exactly these messages: u2, u3." in prompt
        and "may also be labeled, or left out: u1." in prompt
    )
    assert result.diagnostics is not None
    assert result.diagnostics.narrative["takeover"] == {"earlier": 2, "picked": 1, "leftOut": 0}


async def test_ex4_takeover5_a_one_off_mark_removes_only_that_rule(
    tmp_path: Path, server: ScriptedServer
) -> None:
    _, params = taken_over(
        tmp_path, "never deploy on a Friday, not even this time", "don't deploy yet, the tests are red"
    )
    server.script.append(reply({"u1": "not a rule", "u2": "not a rule", "u3": "not a rule"}))
    result = await run_pass(with_model(params, server), pass_id="p1")
    assert state_of(result).rules == []
    assert len(server.requests) == 1


async def test_ex4_takeover18_an_earlier_message_without_a_label_costs_a_retry(
    tmp_path: Path, server: ScriptedServer
) -> None:
    _, params = taken_over(
        tmp_path, "never deploy on a Friday, not even this time", "don't deploy yet, the tests are red"
    )
    server.script.extend([reply({"u3": "not a rule"}), reply({"u2": "not a rule", "u3": "not a rule"})])
    result = await run_pass(with_model(params, server), pass_id="p1")
    assert len(server.requests) == 2
    asked = prompt_of(server, 1)  # FAIL-1, ours: the retry is the label call, asking for u2 alone
    assert "Your answer gave no label to the user messages below" in asked
    assert "don't deploy yet, the tests are red" in asked and "never deploy on a Friday" not in asked
    assert in_force(state_of(result)) == [("R1", "u1", "never deploy on a Friday, not even this time")]


async def test_ex11_takeover17_earlier_rules_in_message_order_and_a_lift_of_a_picked_rule(
    tmp_path: Path, server: ScriptedServer
) -> None:
    _, params = taken_over(
        tmp_path,
        "tests go under tests/",
        "every dry-run line must start with DRY:",
        "add an option that keeps only lines that match",
        "the DRY: prefix rule is lifted",
    )
    server.script.append(reply({"u1": "rule", "u3": "not a rule", "u4": "lifts u2", "u5": "not a rule"}))
    result = await run_pass(with_model(params, server), pass_id="p1")
    state = state_of(result)
    assert [(r.id, r.message, r.lifted, r.liftedBy) for r in state.rules] == [
        ("R1", "u1", False, None),
        ("R2", "u2", True, "u4"),
    ]
    assert result.compaction is not None and "DRY:" not in result.compaction.summary.split("## Now")[0]


async def test_ex5_lift5_forget_it_is_no_withdrawal_so_the_picked_rule_stays(
    tmp_path: Path, server: ScriptedServer
) -> None:
    changelog = "Add a changelog entry for every user-facing change. Don't forget it."
    _, params = taken_over(tmp_path, changelog, "Forget it, leave the changelog alone.")
    insisting = reply({"u2": "lifts u1", "u3": "not a rule"})
    server.script.extend([insisting, insisting])
    result = await run_pass(with_model(params, server), pass_id="p1")
    assert len(server.requests) == 2 and "was refused" in prompt_of(server, 1)
    assert in_force(state_of(result)) == [("R1", "u1", changelog)]


async def test_ex5_a_retry_that_calls_it_not_a_rule_is_accepted(
    tmp_path: Path, server: ScriptedServer
) -> None:
    changelog = "Add a changelog entry for every user-facing change. Don't forget it."
    _, params = taken_over(tmp_path, changelog, "Forget it, leave the changelog alone.")
    server.script.extend(
        [reply({"u2": "lifts u1", "u3": "not a rule"}), reply({"u2": "not a rule", "u3": "not a rule"})]
    )
    result = await run_pass(with_model(params, server), pass_id="p1")
    assert in_force(state_of(result)) == [("R1", "u1", changelog)]
    assert state_of(result).workLog[-1].closedAs == "whole"


async def test_takeover_is_not_offered_when_the_newest_compaction_is_longhauls(
    tmp_path: Path, server: ScriptedServer
) -> None:
    s = Session(tmp_path)
    s.user("never deploy on a Friday")
    keep = len(s.entries)
    s.user("Keep going.")
    server.script.append(reply({"u1": "rule"}))
    first = await run_pass(with_model(s.params(keep), server), pass_id="p1")
    s.store(first, keep)
    s.user("Next.")
    server.script.append(reply({"u2": "not a rule"}))
    await run_pass(with_model(s.params(len(s.entries) - 1), server), pass_id="p2")
    assert "picked" not in prompt_of(server, 1) and "Another compactor" not in prompt_of(server, 1)


async def test_ex15_format3_a_newer_format_base_is_taken_over_and_its_ids_are_never_reused(
    tmp_path: Path, server: ScriptedServer
) -> None:
    """EX-15, FORMAT-3, LEDGER-5: a base from a newer Longhaul is read as nothing, its summary goes to the
    model as a foreign summary, the user's earlier rule is recorded from their own words, and the ledger
    goes on past every id that summary showed the agent."""
    s = Session(tmp_path)
    s.user("never force-push to main")
    kept = len(s.entries)
    s.user("Keep going with the export.")
    newer = s.foreign_compaction(
        kept, "# Longhaul state after span 4\n- C41 `make` exit 2\n- E9 bash: failed"
    )
    newer["details"] = {"stateFormat": 2, "compactor": "longhaul", "passId": "f00d", "span": 4, "state": {}}
    newer["fromHook"] = True
    s.user("Now run the build.")
    s.bash("make build", "ok")
    params = s.params(len(s.entries) - 1)
    server.script.append(reply({"u2": "not a rule", "u3": "not a rule"}))
    result = await run_pass(with_model(params, server), pass_id="p1")
    state = state_of(result)
    assert in_force(state) == [("R1", "u1", "never force-push to main")]  # TAKEOVER-4: from the user's words
    assert "C41 `make` exit 2" in prompt_of(server)  # its summary, read as a foreign one
    assert [c.id for c in state.commands] == ["C42"] and state.nextError == 10
    assert state.span == 2  # PASS-16: the refused base spent number 1 along the branch


async def test_takeover26_every_picked_message_and_the_newest_others_are_offered_and_the_rest_counted(
    tmp_path: Path, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TAKEOVER-26 (our choice): every picked earlier message, the newest MAX_OTHERS others; the number left
    out is in the record. (The cap is lowered to 3 here so the test stays small.)"""
    monkeypatch.setattr(takeover_module, "MAX_OTHERS", 3)
    asked = [f"question {n} about the export?" for n in range(1, 7)]
    _, params = taken_over(tmp_path, "never commit generated files", *asked)
    labels: dict[str, str | tuple[str, str]] = {f"u{n}": "not a rule" for n in range(5, 10)}
    server.script.append(reply(labels))
    result = await run_pass(with_model(params, server), pass_id="p1")
    prompt = prompt_of(server)
    assert "--- u1 (28 characters, picked)" in prompt  # the picked one is always offered
    assert all(f"--- u{n} " not in prompt for n in (2, 3, 4))  # the oldest others are left out
    assert all(f"--- u{n} " in prompt for n in (5, 6, 7))
    assert result.diagnostics is not None
    assert result.diagnostics.narrative["takeover"] == {"earlier": 4, "picked": 1, "leftOut": 3}


def long_foreign_summary(chars: int) -> str:
    """A foreign summary of exactly ``chars`` characters: numbered lines, so any slice of it is unique, and a
    marker in its very middle that a head-and-tail cut must drop."""
    marker = "\nMIDDLE-OF-THE-FOREIGN-SUMMARY\n"
    lines = "\n".join(f"- step {n:04d}: moved the export forward" for n in range(chars // 20))
    half = (chars - len(marker)) // 2
    head = ("## Goal\n" + lines)[:half]
    tail = lines[len(lines) - (chars - len(marker) - half) :]
    return head + marker + tail


@pytest.mark.parametrize(("chars", "cut"), [(4000, False), (4001, True), (9000, True)])
async def test_takeover3_a_long_foreign_summary_enters_the_prompt_as_its_head_and_tail(
    tmp_path: Path, server: ScriptedServer, chars: int, cut: bool
) -> None:
    """TAKEOVER-3 (the proposal): whole up to 4,000 characters, else the first and last 2,000 with "…"
    between; the middle never reaches the model."""
    summary = long_foreign_summary(chars)
    assert len(summary) == chars
    _, params = taken_over(tmp_path, "what does the export write?", summary=summary)
    server.script.append(reply({"u1": "not a rule", "u2": "not a rule"}))
    result = await run_pass(with_model(params, server), pass_id="p1")
    prompt = prompt_of(server)
    if cut:
        assert f"{summary[:2000]}\n…\n{summary[-2000:]}" in prompt
        assert "MIDDLE-OF-THE-FOREIGN-SUMMARY" not in prompt
        assert summary[2000:2040] not in prompt
        assert summary[-2040:-2000] not in prompt
    else:
        assert summary in prompt and "MIDDLE-OF-THE-FOREIGN-SUMMARY" in prompt
    assert state_of(result).workLog[-1].closedAs == "whole"
