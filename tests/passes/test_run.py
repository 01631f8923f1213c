"""The pass without a model, end to end over pi-shaped branches and real git (PASS-2..17, FAIL-10, FAIL-11).

Each test plays pi's part: it builds the branch entries and the preparation as pi would hand them to the shim,
runs the pass, then appends the compaction entry (with the returned details), the span record and the
compaction line the way pi and the shim write them, so the next pass folds what the previous one stored.
"""

from __future__ import annotations

import json
import subprocess
import unicodedata
from pathlib import Path

import pytest

from longhaul_daemon.passes.fold import fold
from longhaul_daemon.passes.run import NO_MODEL, run_pass
from longhaul_daemon.protocol import CompactResult, FileOps
from longhaul_daemon.state.model import State

from .pi_branch import Session

_EVIL_COMMAND = "echo \x1b[31mred\x1b[0m\x07done"
_EVIL_FILE = "docs/\x1b]0;pwned\x07evil\u202etxt.md"
_UNSAFE = {"Cc", "Cf", "Cs", "Zl", "Zp"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=Test", "-c", "user.email=test@example.invalid", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    (root / "README.md").write_text("hello\n")
    _git(root, "add", "README.md")
    _git(root, "commit", "-q", "-m", "Initial commit")
    (root / "src.py").write_text("print(1)\n")
    _git(root, "add", "src.py")
    _git(root, "commit", "-q", "-m", "Add src")
    (root / "src.py").write_text("print(2)\n")
    (root / "evil\x1b[2Jname.txt").write_text("x\n")
    return root


def _state(result: CompactResult) -> State:
    assert result.compaction is not None
    return State.model_validate(result.compaction.details["state"])


def _assert_printable(summary: str) -> None:
    for ch in summary:
        assert ch == "\n" or unicodedata.category(ch) not in _UNSAFE, repr(ch)


@pytest.mark.anyio
async def test_pass3_pass16_fail11_three_passes_keep_ids_stable_and_merged(repo: Path) -> None:
    s = Session(repo)
    s.user("Build the CSV export; never push to main.")
    s.bash("git status")
    s.bash("pytest -q", "1 failed", code=1)
    s.user_bash("ls src")
    s.user("Keep going.")
    keep1 = len(s.entries)
    s.user("Add a header row.")
    s.bash("python -m export")
    ops1 = FileOps(read=["README.md", "src.py"], edited=["src.py"])
    params1 = s.params(keep1, ops=ops1)
    first = await run_pass(params1, pass_id="pass-1")
    s.store(first, keep1)

    s.remember("the csv module is enough, no pandas")
    s.bash("pytest -q")
    s.user("Now the footer.")
    keep2 = len(s.entries)
    s.user("And tests.")
    # A re-offer of messages the previous span held (extra=3) must not duplicate ledger ids (LEDGER-6).
    second = await run_pass(s.params(keep2, ops=FileOps(read=["docs/spec.md"]), extra=3), pass_id="pass-2")
    s.store(second, keep2)

    s.bash(_EVIL_COMMAND)
    s.user("Ship it.")
    keep3 = len(s.entries)
    s.user("Thanks.")
    ops3 = FileOps(read=[_EVIL_FILE, "src.py"], written=["CHANGELOG.md"])
    third = await run_pass(s.params(keep3, ops=ops3), pass_id="pass-3")
    s.store(third, keep3)

    # PASS-16: one number per Longhaul compaction along the branch.
    assert [r.span for r in (first, second, third)] == [1, 2, 3]
    assert all(r.passId == f"pass-{n}" for n, r in enumerate((first, second, third), start=1))
    # PASS-3: firstKeptEntryId and tokensBefore are pi's own values.
    assert first.compaction is not None
    assert first.compaction.firstKeptEntryId == s.entries[keep1]["id"]
    assert (
        first.compaction.tokensBefore
        == params1.preparation.tokensBefore
        == 4000 + len(params1.branchEntries or [])
    )
    assert (
        first.compaction.details["stateFormat"] == 1 and first.compaction.details["compactor"] == "longhaul"
    )

    # LEDGER-5, LEDGER-6: ids continue from the folded counters, never repeat, whatever pi re-summarises.
    s1, s2, s3 = _state(first), _state(second), _state(third)
    assert [c.id for c in s1.commands] == ["C1", "C2", "C3"]
    assert [c.text for c in s1.commands] == ["git status", "pytest -q", "ls src"]
    assert [c.id for c in s2.commands] == ["C1", "C2", "C3", "C4", "C5"]
    assert [c.text for c in s2.commands[3:]] == ["python -m export", "pytest -q"]
    assert [c.id for c in s3.commands] == ["C1", "C2", "C3", "C4", "C5", "C6"]
    assert [e.id for e in s3.errors] == ["E1"]
    assert s3.errors[0].open is False  # LEDGER-8: "pytest -q" later exited 0

    # FAIL-10, FAIL-11: every span closed narrative-less and its user messages are carried, in message order.
    assert s1.carried == ["u1", "u2"]
    assert s2.carried == ["u1", "u2", "u3", "u4"]
    assert s3.carried == ["u1", "u2", "u3", "u4", "u5", "u6"]
    assert [line.closedAs for line in s3.workLog] == ["narrative-less"] * 3
    assert all(line.reason == NO_MODEL for line in s3.workLog)
    assert third.notice == (
        "Longhaul closed span 3 without a narrative (no-model): ledger and World updated, "
        "6 user messages carried to the next pass."
    )

    # Ours: the user's own short `!ls src` is a value code found, so even a narrative-less close keeps it
    # (passes/answers/lookups.py), numbered first (seq 1).
    assert [(v.what, v.turn, v.seq) for v in s1.values] == [("ls src", "u1", 1)]
    # PASS-5, FOLD-4: the note remembered during span 2 is numbered at span 2's Close, and only there.
    assert [(n.text, n.seq) for n in s2.notes] == [("the csv module is enough, no pandas", 2)]
    assert s3.notes == s2.notes and s3.seq == 2
    assert second.after is not None and second.after.spanRecord["events"] == [2]
    assert first.after is not None and first.after.spanRecord["events"] == [1]  # the lookup
    assert third.after is not None and third.after.spanRecord["events"] == []

    # PASS-9: unique summaries; LEDGER-11: pi-style file blocks, read minus modified, sorted.
    summaries = [r.compaction.summary for r in (first, second, third) if r.compaction is not None]
    assert len(set(summaries)) == 3
    assert summaries[2].startswith("# Longhaul state after span 3 (pass pass-3)\n")
    assert s3.modifiedFiles == ["CHANGELOG.md", "src.py"]
    assert s3.readFiles == ["README.md", "docs/eviltxt.md", "docs/spec.md"]  # cleaned in the state (issue 12)
    assert "<modified-files>\nCHANGELOG.md\nsrc.py\n</modified-files>\n" in summaries[2]
    assert "<read-files>\nREADME.md\ndocs/evil" in summaries[2]

    # PASS-10, WORLD-8: no control character from a command, a file name or git output reaches the summary.
    for summary in summaries:
        _assert_printable(summary)
    assert "- C6 exit 0: echo reddone" in summaries[2]
    assert "evilname.txt" in summaries[2]
    assert "## World\n- Branch: main\n- HEAD: " in summaries[2]
    assert "Add src" in summaries[2] and "Initial commit" in summaries[2]

    # FOLD-1, FOLD-8: folding the transcript the passes wrote rebuilds exactly the state the last one stored.
    folded = fold(s.entries)
    assert folded.anomalies == []
    assert folded.state.model_dump_json() == s3.model_dump_json()
    assert [(i.span, i.closed_as, i.pass_id) for i in folded.spans] == [
        (1, "narrative-less", "pass-1"),
        (2, "narrative-less", "pass-2"),
        (3, "narrative-less", "pass-3"),
    ]


@pytest.mark.anyio
async def test_format6_span_record_and_line_shapes(repo: Path) -> None:
    s = Session(repo)
    s.user("Fix the build.")
    s.bash("make", "boom", code=2)
    keep = len(s.entries)
    s.user("next")
    result = await run_pass(s.params(keep), pass_id="p-shape")
    assert result.after is not None and result.compaction is not None
    record = result.after.spanRecord
    assert set(record) == {
        "v",
        "span",
        "passId",
        "closedAs",
        "reason",
        "messages",
        "held",  # FAIL-4, ours: a partial close's unlabeled messages
        "events",
        "commands",
        "errors",
        "narrative",
        "now",
        "world",
        "excused",
        "unmet",  # TURNS-14: expectation checks a turns-mode pass left unmet
        "unusableReplies",  # issue 11: which models gave no usable answer, read back by later passes
    }
    assert (record["v"], record["span"], record["passId"]) == (1, 1, "p-shape")
    assert record["unusableReplies"] == {}
    assert (record["closedAs"], record["reason"], record["narrative"]) == (
        "narrative-less",
        NO_MODEL,
        None,
    )
    assert record["messages"] == ["u1"]
    assert [(c["id"], c["text"], c["exit"]) for c in record["commands"]] == [("C1", "make", 2)]
    assert [(e["id"], e["command"]) for e in record["errors"]] == [("E1", "C1")]
    assert record["world"]["status"] == "repository" and record["world"]["branch"] == "main"
    assert record["excused"] == [] and record["unmet"] == [] and "compactionId" not in record
    assert result.after.line == {"v": 1, "span": 1, "calls": 0, "tokens": 0}
    assert result.compaction.details["passId"] == "p-shape" and result.compaction.details["span"] == 1
    json.dumps(result.model_dump(mode="json"))  # the whole result is plain JSON


@pytest.mark.anyio
async def test_pass17_world4_empty_span_outside_a_repository(tmp_path: Path) -> None:
    s = Session(tmp_path)
    s.user("hi")
    result = await run_pass(s.params(0), pass_id="p-empty")
    assert result.compaction is not None
    state = _state(result)
    assert state.span == 1
    assert [(line.closedAs, line.reason) for line in state.workLog] == [("empty", None)]
    assert "empty" in state.workLog[0].text
    assert state.carried == []
    assert state.world is not None and state.world.status == "no-repository"
    assert "No git repository at the session's working directory." in result.compaction.summary
    assert result.notice == "Longhaul closed span 1, which held no messages: ledger and World updated."


@pytest.mark.anyio
async def test_fold2_pass16_ledger6_a_foreign_compaction_uses_no_span_number_and_loses_no_command(
    repo: Path,
) -> None:
    s = Session(repo)
    s.user("one")
    s.bash("make a")
    keep1 = len(s.entries)
    s.user("two")
    s.store(await run_pass(s.params(keep1), pass_id="pa"), keep1)
    s.bash("make b")
    s._add(
        {
            "type": "compaction",
            "summary": "pi's own summary",
            "firstKeptEntryId": s.entries[-1]["id"],
            "tokensBefore": 10,
            "details": {"readFiles": [], "modifiedFiles": []},
            "fromHook": False,
        }
    )
    s.first_kept = len(s.entries) - 1
    s.bash("make c")
    keep2 = len(s.entries)
    s.user("three")
    result = await run_pass(s.params(keep2), pass_id="pb")
    assert result.span == 2
    # The fallback span's command was never offered to a Longhaul pass; the ledger recovers it.
    assert [(c.id, c.text) for c in _state(result).commands] == [
        ("C1", "make a"),
        ("C2", "make b"),
        ("C3", "make c"),
    ]
