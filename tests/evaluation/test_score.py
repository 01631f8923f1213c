"""``score`` refuses before any call, and its probes decide by code (SCORE-2, SCORE-3).

Without ``--model`` or ``--yes`` nothing starts: the plan (how many calls) is printed and the scored model
never hears from anyone. The probes are checked one by one on summaries written by hand.
"""

from __future__ import annotations

import sys
from pathlib import Path

from longhaul_daemon.evaluation.probes import Probe, check, derived_probes
from longhaul_daemon.evaluation.score_report import RunResult, report_text, summarize

from .branches import BranchBuilder
from .cli_run import private_env, run_cli
from .scored import RULE, SPEC, scored_model, write_scored_session


def test_without_yes_the_plan_is_printed_and_nothing_is_called(tmp_path: Path) -> None:
    session = write_scored_session(tmp_path, "private-customer")
    agent = tmp_path / "agent"
    model = scored_model(agent)
    try:
        env = private_env(tmp_path)
        # Any existing file passes for pi here: nothing may get as far as starting it.
        base = ["score", str(session), "--pi", sys.executable, "--agent-dir", str(agent)]
        done = run_cli(*base, "--model", SPEC, env=env, cwd=tmp_path, timeout=60)
        assert done.returncode == 2
        assert "2 recorded compactions" in done.stdout and "model calls: at least 4" in done.stdout
        assert "--yes" in done.stderr and "cost money" in done.stderr
        no_model = run_cli(*base, "--yes", env=env, cwd=tmp_path, timeout=60)
        assert no_model.returncode == 2 and "--model" in no_model.stderr and no_model.stdout == ""
        assert model.stats() == {}
    finally:
        model.close()
    for secret in (str(tmp_path), "private-customer"):
        assert secret not in done.stdout + done.stderr + no_model.stdout + no_model.stderr


def test_rule_probes_want_the_users_words() -> None:
    probe = Probe("rule", RULE)
    assert check(probe, f'## Standing rules\n- R1 "{RULE}" (u1)')
    assert check(probe, '- R1 "Never add a new\n  dependency without asking me first." (u1)')  # wrapped
    assert not check(probe, "- Ask before adding dependencies.")  # a paraphrase is not the rule


def test_a_lifted_rule_may_appear_only_marked_as_withdrawn() -> None:
    probe = Probe("lifted", RULE)
    assert check(probe, "## Constraints\n- Use tabs.")
    assert check(probe, f"- ~~{RULE}~~ (lifted by the user)")
    assert check(probe, f"- {RULE} This no longer applies.")
    assert not check(probe, f"## Constraints & Preferences\n- {RULE}")
    assert not check(probe, "- Never add a new dependency\n  without asking me first.")  # cannot tell: active


def test_a_command_probe_wants_the_command_and_its_exit_code_on_one_line() -> None:
    probe = Probe("command", "pytest -q tests/test_money.py", 1)
    assert check(probe, "- C3 exit 1: pytest -q tests/test_money.py")
    assert check(probe, "- `pytest -q tests/test_money.py` failed (exit code 1)")
    assert not check(probe, "- C3 exit 0: pytest -q tests/test_money.py\n- C4 exit 1: make")
    assert not check(probe, "- pytest -q tests/test_money.py failed with 11 errors")


def test_value_and_next_probes() -> None:
    assert check(Probe("value", "5173"), "dev server port: http://localhost:5173/ (turn u3)")
    assert not check(Probe("value", "5173"), "port 51730")
    assert check(Probe("next", "parse_invoice_totals"), "## Now\nImplement `Parse_Invoice_Totals`.")
    assert not check(Probe("next", "parse_invoice_totals"), "## Now\nKeep going.")


def test_without_a_key_the_probes_come_from_the_transcript() -> None:
    b = BranchBuilder()
    b.user("go")
    b.tool("bash", {"command": "make check"}, "oops\n\nCommand exited with code 2", error=True)
    b.tool("bash", {"command": "npm run dev"}, "Local: http://localhost:4321/")
    b.user_bash("false", "", 1)
    kept = b.user("wrap")
    b.compaction(kept, "s")
    b.user("open 4321")
    [probes] = derived_probes(b.entries)
    assert probes == [Probe("command", "make check", 2), Probe("command", "false", 1), Probe("value", "4321")]


def test_the_report_shows_each_compactors_score_with_its_spread() -> None:
    results = [
        RunResult("t", "longhaul", 1, passed={"rule": 2}, checked={"rule": 2}, calls=3),
        RunResult("t", "longhaul", 2, passed={"rule": 1}, checked={"rule": 2}, calls=5),
        RunResult("t", "pi", 1, passed={}, checked={"rule": 2}, calls=2),
        RunResult("t", "pi", 2, passed={"rule": 1}, checked={"rule": 2}, calls=2),
    ]
    reports = [summarize(results, c, 2) for c in ("longhaul", "pi")]
    assert reports[0].score == 0.75 and reports[1].score == 0.25 and reports[0].calls == 4
    text = report_text(reports, "score")
    assert "longhaul   75%    50%-100% (sd 35.4)" in text
    assert "pi         25%    0%-50% (sd 35.4)" in text
