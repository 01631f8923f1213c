"""The model bench's corpus has the shape the fidelity issue asks for, and its report counts what it claims.

No model and no pi: the sessions are scripts, checked as data (their value and rule-like commands are run with
bash in a scratch copy of the bank's files), and the report's measures are computed from hand-made rows.
"""

from __future__ import annotations

import argparse
import itertools
import re
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from bench_bank_heldout import HELD_OUT
from bench_bank_heldout2 import HELD_OUT_2
from bench_bank_heldout3 import HELD_OUT_3
from bench_bank_tuning import TUNING
from bench_corpus import (
    CHAIN_STRETCHES,
    LONG_MESSAGE_WORDS,
    MAX_USER_MESSAGES,
    MIN_USER_MESSAGES,
    Bank,
    Session,
    half_sessions,
    project_files,
)
from bench_transcripts import write_transcript
from model_bench_report import (
    Row,
    checks,
    half_table,
    in_doubt,
    measures,
    rows_from_table,
    shown_standing,
    standing_section,
    table,
    targets,
)

from longhaul_daemon.evaluation.common import key_path
from longhaul_daemon.evaluation.key import load_key
from longhaul_daemon.evaluation.probes import probes_for
from longhaul_daemon.evaluation.script import _kept_ranges, build_script, keep_recent_tokens
from longhaul_daemon.inspector.session_file import read_transcript

TUNING_SESSIONS = half_sessions(TUNING, "tuning", 0)
HELD_OUT_SESSIONS = half_sessions(HELD_OUT, "held-out", 0)
HELD_OUT_2_SESSIONS = half_sessions(HELD_OUT_2, "held-out-2", 0)
HELD_OUT_3_SESSIONS = half_sessions(HELD_OUT_3, "held-out-3", 0)
ALL = TUNING_SESSIONS + HELD_OUT_SESSIONS + HELD_OUT_2_SESSIONS + HELD_OUT_3_SESSIONS
BANKS = (TUNING, HELD_OUT, HELD_OUT_2, HELD_OUT_3)
HALVES_SESSIONS = (TUNING_SESSIONS, HELD_OUT_SESSIONS, HELD_OUT_2_SESSIONS, HELD_OUT_3_SESSIONS)
FAILING = {c for bank in BANKS for c in bank.failing}
BENCH = Path(__file__).resolve().parents[2] / "bench"


def _sentences(bank: Bank) -> set[str]:
    texts = [*bank.tasks, *bank.chatter, *(t for pair in bank.long_context for t in pair)]
    texts += [m for wordings in bank.rules.values() for m, _ in wordings]
    texts += [t for lifts in bank.lifts.values() for t in lifts] + [m for m, _ in bank.one_offs]
    texts += [*bank.commands, *bank.failing, *(c for c, _ in bank.value_runs), *bank.rule_like_runs]
    texts += bank.promises
    return {s.strip().lower() for t in texts for s in re.split(r"(?<=[.:;?!])\s+", t) if s.strip()}


def test_twenty_four_sessions_in_four_halves_one_chain_each() -> None:
    assert len(ALL) >= 24
    for half in HALVES_SESSIONS:
        assert len(half) == 6 and half[0].chain and not any(s.chain for s in half[1:])
        chains = [s for s in half if s.chain]
        assert chains and all(len(s.stretches) == CHAIN_STRETCHES for s in chains)
        chain = chains[0]
        # between compactions: a new rule and a withdrawal after the first compaction
        later = [step for stretch in chain.stretches[1:] for step in stretch]
        assert any(step.rule for step in later) and any(step.lifts for step in later)


@pytest.mark.parametrize(
    ("one", "other"), list(itertools.combinations(range(len(BANKS)), 2)), ids=lambda i: BANKS[i].name
)
def test_halves_share_no_sentence_and_no_session_name(one: int, other: int) -> None:
    assert not _sentences(BANKS[one]) & _sentences(BANKS[other])
    mine = {m.lower() for s in HALVES_SESSIONS[one] for m in s.user_messages()}
    assert not mine & {m.lower() for s in HALVES_SESSIONS[other] for m in s.user_messages()}
    assert not {s.name for s in HALVES_SESSIONS[one]} & {s.name for s in HALVES_SESSIONS[other]}
    assert BANKS[one].seed != BANKS[other].seed and BANKS[one].name != BANKS[other].name
    assert BANKS[one].log_name != BANKS[other].log_name


@pytest.mark.parametrize(
    ("bank", "other"),
    [
        (HELD_OUT_2, "bench_bank_tuning.py"),
        (HELD_OUT_2, "bench_bank_heldout.py"),
        (HELD_OUT_3, "bench_bank_tuning.py"),
        (HELD_OUT_3, "bench_bank_heldout.py"),
        (HELD_OUT_3, "bench_bank_heldout2.py"),
    ],
    ids=lambda x: x.name if isinstance(x, Bank) else x,
)
def test_the_blind_banks_have_no_sentence_of_the_other_banks_sources(bank: Bank, other: str) -> None:
    """Checked against the other banks' source text, so nothing in them has to be read to write this one."""
    source = " ".join((BENCH / other).read_text(encoding="utf-8").lower().split())
    assert not [s for s in _sentences(bank) if len(s.split()) >= 3 and s in source]


_STOP = frozenset(
    re.findall(
        r"\w+",
        "the and for you are all new any not now its one ones gets every each with from that this your they"
        " exactly only ever time call keep make sure stay change here when see",
    )
)


def _distinctive(text: str) -> set[str]:
    """The words that name something, plurals folded: what a withdrawal shares with its rule."""
    words = [w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) >= 3 and w not in _STOP]
    return {re.sub(r"(es|s)$", "", w) if len(w) > 4 else w for w in words}


def test_the_blind_banks_withdrawals_name_their_rule_and_its_phrasings_vary() -> None:
    bank = HELD_OUT_2
    assert set(bank.lifts) == set(bank.rules) and len(bank.rules) >= 5
    for key, ways in bank.lifts.items():
        assert len(ways) >= 2, key
        for lift, (_, words) in itertools.product(ways, bank.rules[key]):
            assert _distinctive(lift) & _distinctive(words), (key, lift)


def test_the_third_blind_banks_withdrawals_name_their_rule_only_about_half_the_time() -> None:
    """The others name what they lift by paraphrase or by its subject: no naming word of any wording."""
    bank = HELD_OUT_3
    assert set(bank.lifts) == set(bank.rules) and len(bank.rules) >= 6
    named = 0
    for key, ways in bank.lifts.items():
        assert len(ways) >= 4, key
        naming = [
            any(_distinctive(lift) & _distinctive(words) for _, words in bank.rules[key]) for lift in ways
        ]
        assert any(naming) and not all(naming), key
        named += sum(naming)
    lifts = sum(len(ways) for ways in bank.lifts.values())
    assert lifts / 3 <= named <= 2 * lifts / 3
    assert len(bank.one_offs) >= 6 and len(bank.tasks) >= 10 and len(bank.chatter) >= 10


@pytest.mark.parametrize("bank", [HELD_OUT_2, HELD_OUT_3], ids=lambda b: b.name)
def test_the_blind_banks_phrasings_vary(bank: Bank) -> None:
    lifts = [lift for ways in bank.lifts.values() for lift in ways]
    openings = {tuple(lift.lower().split()[:2]) for lift in lifts}
    assert len(openings) >= 0.75 * len(lifts)
    messages = [m for wordings in bank.rules.values() for m, _ in wordings]
    assert not [m for m in messages if m.lower().startswith(("always", "never"))]
    assert len({m.split()[0].lower() for m in messages}) >= len(messages) // 2
    assert len({m.split()[0].lower() for m, _ in bank.one_offs}) == len(bank.one_offs)


@pytest.mark.parametrize("session", ALL, ids=lambda s: s.name)
def test_each_session_has_every_trap(session: Session) -> None:
    last = len(session.stretches) - 1
    assert MIN_USER_MESSAGES <= len(session.user_messages()) <= MAX_USER_MESSAGES
    long_rules = [
        s
        for s in session.steps(last)
        if s.rule and len(s.text.split()) >= LONG_MESSAGE_WORDS and s.rule.message in s.text
    ]
    assert long_rules  # a rule inside a long message, not a message of its own
    assert all(len(r.message.split()) < LONG_MESSAGE_WORDS // 2 for r in session.rules())
    assert all(r.words in r.message for r in session.rules())
    assert session.withdrawn(last) and session.one_offs(last) and session.values(last)
    assert len(session.in_force(last)) == len({r.key for r in session.rules()}) - len(session.withdrawn(last))
    assert all(
        stretch[-1].kind == "run" and stretch[-1].text.startswith("cat ") for stretch in session.stretches
    )
    for stretch in session.stretches:  # tool-heavy, some of it failing
        runs = [s.text for s in stretch if s.kind == "run"]
        assert len(runs) >= 5 and set(runs) & FAILING


@pytest.mark.parametrize("bank", BANKS, ids=lambda b: b.name)
def test_values_show_in_tool_output_and_failing_commands_fail(bank: Bank, tmp_path: Path) -> None:
    for name, text in project_files(bank, 1).items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)

    def bash(command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True, check=False
        )

    git = "-c user.name=Bench -c user.email=bench@example.invalid"
    assert bash(f"git init -q -b main && git add -A && git {git} commit -qm Start").returncode == 0
    for command, value in bank.value_runs:
        assert value in bash(command).stdout, command
    for command in bank.rule_like_runs:
        assert re.search(r"\b(always|never|must|do not|every)\b", bash(command).stdout, re.I), command
    for command in bank.failing:
        assert bash(command).returncode != 0, command
    for command in bank.commands:
        assert bash(command).returncode == 0, command


STATE_SUMMARY = """Longhaul summary
## Objective
Ship the flag.

## Standing rules
- R1 "Never add new dependencies"

## Now
The user said: you may edit vendor/table.py directly. The vendor rule no longer applies.

## Values
- bucket s3://acme-exports-eu
"""


def test_checks_read_the_standing_section_of_a_rendered_state() -> None:
    assert (standing_section(STATE_SUMMARY) or "").strip() == '- R1 "Never add new dependencies"'
    rules, withdrawn, one_offs, values = checks(
        STATE_SUMMARY,
        in_force=[("deps", "never  ADD new dependencies")],
        withdrawn=[("vendor", "The vendor rule")],
        one_offs=["you may edit vendor/table.py directly"],
        values=["s3://acme-exports-eu", "8431"],
    )
    assert rules == [("deps", True)]
    assert withdrawn == [("vendor", False)]  # in the summary, but not under Standing rules
    assert one_offs == [("you may edit vendor/table.py directly", False)]
    assert values == [("s3://acme-exports-eu", True), ("8431", False)]


def test_checks_a_flagged_withdrawn_rule_is_not_plainly_standing_a_doubted_one_off_is() -> None:
    summary = (
        "# Longhaul state after span 2 (pass p)\n\n## Standing rules\n"
        '- R1 "Do not add any third-party packages" (u3)\n'
        '  possibly withdrawn by u12: "The no-dependencies rule is withdrawn."\n'
        '- R2 "Never touch vendor/" (u4)\n'
        '- R3 "you may edit vendor/table.py directly" (u9)\n'
        "  in doubt: reads as a one-off request, with no standing marker\n\n## World\nNo git repository.\n"
    )
    _, withdrawn, one_offs, _ = checks(
        summary,
        in_force=[],
        withdrawn=[("deps", "third-party packages"), ("vendor", "never touch vendor/")],
        one_offs=["you may edit vendor/table.py directly"],
        values=[],
    )
    assert withdrawn == [("deps", False), ("vendor", True)]
    assert one_offs == [("you may edit vendor/table.py directly", True)]
    assert in_doubt(summary, ["you may edit vendor/table.py directly", "never touch vendor/"]) == (
        "you may edit vendor/table.py directly",
    )


def test_checks_count_anything_in_a_summary_without_sections_as_standing() -> None:
    summary = "## Goal\nFlag work.\n\n## Progress\nThe vendor rule was dropped; you may edit vendor/table.py."
    assert standing_section(summary) is None
    _, withdrawn, one_offs, _ = checks(
        summary,
        in_force=[],
        withdrawn=[("vendor", "the vendor rule")],
        one_offs=["edit vendor/table.py"],
        values=[],
    )
    assert withdrawn == [("vendor", True)] and one_offs == [("edit vendor/table.py", True)]


def _row(
    compactor: str, session: str, nth: int, *, chain: bool, wall: float, out: int, **seen: object
) -> Row:
    return Row(
        session=session,
        half="held-out",
        chain=chain,
        nth=nth,
        compactor=compactor,  # type: ignore[arg-type]
        wall_s=wall,
        calls=1,
        input_tokens=1000,
        output_tokens=out,
        closed=str(seen.get("closed", "pi's summary" if compactor == "pi" else "whole")),
        rules=list(seen.get("rules", [])),  # type: ignore[call-overload]
        withdrawn=list(seen.get("withdrawn", [])),  # type: ignore[call-overload]
        one_offs=list(seen.get("one_offs", [])),  # type: ignore[call-overload]
        values=list(seen.get("values", [])),  # type: ignore[call-overload]
        invented=None if compactor == "pi" else 0,
        summary_chars=100,
        one_offs_in_doubt=tuple(seen.get("one_offs_in_doubt", ())),  # type: ignore[arg-type]
        tasks=list(seen.get("tasks", [])),  # type: ignore[call-overload]
    )


ROWS = [
    _row("pi", "a", 1, chain=False, wall=20.0, out=500, rules=[("x", False)], withdrawn=[("w", True)]),
    _row(
        "pi", "b", 1, chain=True, wall=40.0, out=400, rules=[("x", True), ("y", False)], values=[("v", True)]
    ),
    _row("longhaul", "a", 1, chain=False, wall=10.0, out=100, rules=[("x", True)], withdrawn=[("w", False)]),
    _row(
        "longhaul",
        "b",
        1,
        chain=True,
        wall=60.0,
        out=100,
        closed="partial (unlabeled-messages)",
        rules=[("x", True), ("y", True)],
        one_offs=[("o", True), ("p", True)],
        values=[("v", False)],
        one_offs_in_doubt=("o",),
    ),
]


def test_measures_count_per_compactor_and_compare_with_pi_at_the_median() -> None:
    pi, diff = measures(ROWS, "pi"), measures(ROWS, "longhaul")
    assert pi["passes closed whole"] == "–" and diff["passes closed whole"] == "1 of 2"
    partial = "passes closed partial (answer kept, unlabeled messages carried)"
    assert pi[partial] == "–" and diff[partial] == "1 of 2"  # FAIL-4, ours
    assert pi["standing rules' words in the summary, single"] == "0 of 1"
    assert pi["standing rules' words in the summary, 5-compaction chain"] == "1 of 2"
    assert diff["standing rules' words in the summary, 5-compaction chain"] == "2 of 2"
    assert pi["withdrawn rules still shown as standing"] == "1 of 1"
    assert diff["withdrawn rules still shown as standing"] == "0 of 1"
    assert diff["one-off requests shown as standing rules"] == "2 of 2 (1 marked in doubt)"
    assert pi["one-off requests shown as standing rules"] == "–"
    assert diff["values from tool output in the summary"] == "0 of 1"
    assert pi["wall time per compaction, median (range)"] == "30.0 (20.0–40.0) s"
    # ratios 10/20 = 0.5 and 60/40 = 1.5: median 1.0
    assert diff["wall time per compaction, median (range)"] == "35.0 (10.0–60.0) s; 1.00 (0.50–1.50)× pi's"
    assert diff["output tokens per compaction, median (range)"] == "100 (100–100); 0.23 (0.20–0.25)× pi's"
    assert measures(ROWS, "turns") == {}


def test_half_table_has_a_column_per_compactor_that_ran_in_the_issues_order() -> None:
    lines = half_table(ROWS)
    assert lines[0] == "| | pi's own | the Diff |"
    assert lines[2].startswith("| passes closed whole | – | 1 of 2 |")
    assert len(lines) == 2 + len(measures(ROWS, "pi"))
    assert targets(ROWS, "longhaul")[0].endswith("NOT met")  # 70 s in total against pi's 60 s
    assert targets(ROWS, "longhaul")[3].endswith("met")


@pytest.mark.parametrize(
    "session",
    [TUNING_SESSIONS[0], HELD_OUT_SESSIONS[1], HELD_OUT_2_SESSIONS[0], HELD_OUT_3_SESSIONS[0]],
    ids=lambda s: s.name,
)
def test_transcripts_replay_their_cuts_and_key_what_the_script_holds(
    session: Session, tmp_path: Path
) -> None:
    """``compare.py --real-model`` scores these files: each recorded cut must be one pi reproduces with one
    keepRecentTokens, and the key must hold the session's rules, withdrawals, values and real failures."""
    path = tmp_path / f"{session.name}.jsonl"
    key = write_transcript(session, path, tmp_path / "scratch")
    branch = read_transcript(path).branch
    ranges = _kept_ranges(branch)
    assert len(ranges) == len(key.compactions) == len(session.stretches)
    assert max(lo for lo, _ in ranges) < keep_recent_tokens(branch) <= min(hi for _, hi in ranges)
    last = key.compactions[-1]
    assert [r.words for r in last.rules] == [r.words for r in session.in_force(len(session.stretches) - 1)]
    assert {r.id for r in last.lifted} == {r.key for r in session.withdrawn(len(session.stretches) - 1)}
    assert last.values == tuple(session.values(len(session.stretches) - 1))
    failing = {c.command for k in key.compactions for c in k.commands}
    assert failing and failing <= FAILING
    assert all(c.exit != 0 for k in key.compactions for c in k.commands)
    # every command the agent ran is replayed: none follows an assistant message that ended its turn
    recorded = sum(
        1
        for e in branch
        if e.get("type") == "message"
        for b in e["message"].get("content", [])
        if isinstance(b, dict) and b.get("type") == "toolCall"
    )
    steps = build_script(branch).steps
    assert recorded == sum(1 for stretch in session.stretches for step in stretch if step.kind == "run")
    assert sum(len(r.calls) for step in steps for r in step.replies) == recorded
    # pi asks the model again only after a tool call: a reply that ended its turn must be the turn's last
    assert all(r.stop == "toolUse" for step in steps for r in step.replies[:-1]), "a call after a stop"
    probes = probes_for(branch, load_key(key_path(path)))
    assert [len(p) for p in probes] == [
        len(k.rules) + len(k.lifted) + len(k.commands) + len(k.values) for k in key.compactions
    ]


def test_rows_logged_while_running_read_back_as_the_rows_that_wrote_them() -> None:
    """``--from-rows``: a run cut short is tabulated from the per-compaction rows it logged."""
    rows = [r for r in ROWS if r.half == "held-out"]
    logged = ["model server http://127.0.0.1:1/v1", *table(rows)[2:], "  kept /tmp/sandbox"]
    assert rows_from_table(logged, "held-out") == [
        replace(r, chain=r.session.endswith("-chain")) for r in rows
    ]
    odd = _row("pi", "c", 2, chain=False, wall=1.25, out=1234, values=[("a, b", True), ("1,2", False)])
    [back] = rows_from_table(table([odd]), "held-out")
    assert (back.values, back.output_tokens, back.wall_s) == (odd.values, 1234, 1.2)


def test_the_printed_block_has_a_table_per_half_that_ran_then_every_compaction() -> None:
    import model_bench  # imports the e2e helpers it runs with; nothing starts

    tuned = _row("longhaul", TUNING_SESSIONS[1].name, 1, chain=False, wall=5.0, out=50, rules=[("x", True)])
    tuned.half = "tuning"
    rows = [*ROWS, tuned]
    args = argparse.Namespace(half="both", seed=0, compactors=["longhaul", "pi"], threads=1)
    block = model_bench._block(rows, args, ALL, "2 min in all")
    tuning_at, held_out_at = (
        block.index("**tuning** (6 sessions, 20 compactions per compactor):"),
        block.index("**held-out** (6 sessions, 20 compactions per compactor):"),
    )
    assert block[tuning_at + 2] == "| | the Diff |"  # pi's own did not run on the tuning half here
    assert block[held_out_at + 2] == "| | pi's own | the Diff |"
    assert "Targets on held-out (the Diff against pi's own):" in block
    assert "Targets on tuning (the Diff against pi's own):" not in block
    per_compaction = block[block.index("Per compaction:") + 2 :]
    assert sum(1 for line in per_compaction if line.startswith("| a |") or line.startswith("| b |")) == 4


def test_the_half_flag_picks_one_bank_the_first_two_or_all_three() -> None:
    import model_bench  # imports the e2e helpers it runs with; nothing starts

    assert [s.name for s in model_bench.corpus("held-out-2", 0)] == [s.name for s in HELD_OUT_2_SESSIONS]
    assert [s.name for s in model_bench.corpus("held-out-3", 0)] == [s.name for s in HELD_OUT_3_SESSIONS]
    assert {s.half for s in model_bench.corpus("held-out-3", 0)} == {"held-out-3"}
    assert {s.half for s in model_bench.corpus("both", 0)} == {"tuning", "held-out"}
    assert {s.half for s in model_bench.corpus("all", 0)} == {"tuning", "held-out", "held-out-2"}
    assert len(model_bench.corpus("all", 0)) == len(ALL) - len(HELD_OUT_3_SESSIONS)
    assert [s.name for s in model_bench.corpus("tuning", 0)] == [s.name for s in TUNING_SESSIONS]


def test_each_session_counts_its_work_requests_as_tasks_once() -> None:
    """Issue 23 item 2: the tasks a session asks for are measured too (a task under Standing rules reads to
    every later turn as an order); they are the bank's own work requests, each counted once."""
    for bank, sessions in (
        (TUNING, TUNING_SESSIONS),
        (HELD_OUT, HELD_OUT_SESSIONS),
        (HELD_OUT_3, HELD_OUT_3_SESSIONS),
    ):
        for session in sessions:
            tasks = session.tasks(len(session.stretches) - 1)
            assert tasks and set(tasks) <= set(bank.tasks) and len(tasks) == len(set(tasks))
            assert session.tasks(0) == [t for t in tasks if t in session.tasks(0)]


def test_a_task_counts_as_standing_under_standing_rules_only() -> None:
    summary = (
        "# Longhaul state after span 1 (pass p)\n\n## Standing rules\n"
        '- R1 "Add a --json flag to app.py." (u2)\n'
        "  in doubt: reads as a one-off request, with no standing marker\n\n"
        "## Now\nWrite the CHANGES file next.\n"
    )
    seen = shown_standing(summary, ["Add a --json flag to app.py.", "Write the CHANGES file next."])
    assert seen == [("Add a --json flag to app.py.", True), ("Write the CHANGES file next.", False)]
    assert shown_standing("## Goal\nWrite the CHANGES file next.", ["Write the CHANGES file next."]) == [
        ("Write the CHANGES file next.", True)
    ]
    rows = [_row("longhaul", "a", 1, chain=False, wall=1.0, out=1, tasks=seen)]
    assert measures(rows, "longhaul")["tasks shown as standing rules"] == "1 of 2"
    [back] = rows_from_table(table(rows), "held-out")
    assert [hit for _, hit in back.tasks] == [True, False]
