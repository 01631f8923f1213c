"""The ledger's error line on real outputs of failing runs, through the ledger into the summary and the state.

Every file under ``fixtures/`` is the untouched output (stdout and stderr together, not on a terminal, as pi's
bash tool captures them) of a failing run made for these tests on the project's machine, in small projects
set up to fail: Python 3.11.7 with pytest 9.2.0; go 1.19.8 (Debian's golang-go); cargo and rustc 1.95.0
(``cargo test`` without RUST_BACKTRACE); node 20.20.2 with npm 11.19.1, which writes ``npm error``, and npm
9.9.4 through ``npx npm@9``, which writes ``npm ERR!``; tsc 5.9.3 from the shim's node_modules (``--pretty``
forces its colours); GNU Make 4.3 with gcc 12.2.0 and GNU ld. None was trimmed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from longhaul_daemon.passes.failure_line import SCAN_LINE_CHARS, TAIL_CHARS, failure_line
from longhaul_daemon.passes.fold import fold
from longhaul_daemon.passes.ledger import ERROR_CHARS, apply_ledger
from longhaul_daemon.passes.run import run_pass
from longhaul_daemon.state.model import State

from .pi_branch import Session
from .test_ledger import assistant, bash_call, bash_failed, bash_ok, span_of, user_bash

FIXTURES = Path(__file__).parent / "fixtures"


@dataclass(frozen=True)
class Run:
    """One failing run: its output file, the command that printed it, its exit code, and the line to keep."""

    file: str
    command: str
    code: int
    line: str


RUNS = [
    Run(
        "pytest_default.txt",
        "python -m pytest",
        1,
        "FAILED tests/test_report.py::test_total_sums_amounts - AssertionError: assert...",
    ),
    Run(
        "pytest_q.txt",
        "python -m pytest -q",
        1,
        "FAILED tests/test_report.py::test_total_sums_amounts - AssertionError: assert...",
    ),
    Run("pytest_collection.txt", "python -m pytest -q", 2, "ERROR tests/test_report.py"),
    Run("python_traceback.txt", "python export_csv.py rows.json", 1, "KeyError: 'amount'"),
    Run("go_build.txt", "go build ./...", 2, "internal/orders/report.go:14:9: undefined: qByCustomer"),
    Run(
        "go_test_build_failed.txt",
        "go test ./...",
        2,
        "internal/orders/report.go:14:9: undefined: qByCustomer",
    ),
    Run("go_test_fail.txt", "go test ./...", 1, "--- FAIL: TestTotalsByCustomer (0.00s)"),
    Run("cargo_build.txt", "cargo build", 101, "error[E0425]: cannot find function `totl` in this scope"),
    Run("cargo_test.txt", "cargo test", 101, "test tests::total_sums ... FAILED"),
    Run("npm_test.txt", "npm test", 1, "not ok 2 - total sums prices"),
    Run(
        "npm_build_tsc.txt",
        "npm run build",
        2,
        "src/cart.ts(8,17): error TS2339: Property 'cost' does not exist on type 'Item'.",
    ),
    Run("npm_missing_script.txt", "npm run lint", 1, 'npm error Missing script: "lint"'),
    Run("npm9_missing_script.txt", "npx npm@9 run lint", 1, 'npm ERR! Missing script: "lint"'),
    Run(
        "tsc.txt",
        "tsc -p .",
        2,
        "src/cart.ts(8,17): error TS2339: Property 'cost' does not exist on type 'Item'.",
    ),
    Run(
        "tsc_pretty.txt",  # coloured: the escapes are gone from the line kept
        "tsc -p . --pretty",
        2,
        "src/cart.ts:8:17 - error TS2339: Property 'cost' does not exist on type 'Item'.",
    ),
    Run(
        "make_gcc.txt",
        "make",
        2,
        "main.c:7:35: error: ‘count’ undeclared (first use in this function); did you mean ‘amounts’?",
    ),
    Run("make_link.txt", "make", 2, "main.c:(.text.startup+0x1b): undefined reference to `totl'"),
    Run("make_check.txt", "make check", 2, "make: *** [Makefile:9: check] Error 1"),
]


def output_of(run: Run) -> str:
    return (FIXTURES / run.file).read_text(encoding="utf-8")


def test_every_fixture_is_used() -> None:
    assert sorted(r.file for r in RUNS) == sorted(p.name for p in FIXTURES.glob("*.txt"))


@pytest.mark.parametrize("run", RUNS, ids=[r.file for r in RUNS])
def test_ledger_4_ledger_7_a_failing_bash_call_keeps_the_line_that_states_the_failure(run: Run) -> None:
    """LEDGER-4, LEDGER-7: the error of a failing bash tool call is the failure line of its real output."""
    span = span_of(
        assistant(bash_call("call_1", run.command)), bash_failed("call_1", output_of(run), run.code)
    )
    result = apply_ledger(State(), span, 1)
    assert [(c.id, c.text, c.exit) for c in result.commands] == [("C1", run.command, run.code)]
    assert [(e.id, e.tool, e.text, e.command) for e in result.errors] == [("E1", "bash", run.line, "C1")]


@pytest.mark.parametrize("run", RUNS, ids=[r.file for r in RUNS])
def test_ledger_4_ledger_7_a_failing_user_command_keeps_the_same_line(run: Run) -> None:
    """LEDGER-4, LEDGER-7: a user's ``!cmd`` (bashExecution, no pi status line) gives the same line."""
    result = apply_ledger(State(), span_of(user_bash(run.command, run.code, output_of(run))), 1)
    assert [(e.text, e.command) for e in result.errors] == [(run.line, "C1")]


def test_ledger_7_the_issue_11_cases_no_longer_keep_the_first_line() -> None:
    """LEDGER-7 (issue #11): pytest's progress line, a passing go package were kept instead of the failure."""
    pytest_q = output_of(RUNS[1])
    go_test = output_of(RUNS[5])
    assert pytest_q.split("\n")[0].startswith("..F.") and go_test.startswith("ok  \tgithub.com/acme/shop")
    assert failure_line(pytest_q).startswith("FAILED tests/test_report.py::test_total_sums_amounts")
    assert failure_line(go_test).endswith("undefined: qByCustomer")


def test_ledger_4_a_passing_command_records_no_error_whatever_it_printed() -> None:
    """LEDGER-4: exit 0 means no error, even when the output holds failure-looking lines."""
    printed = output_of(RUNS[0]) + output_of(RUNS[7])
    span = span_of(
        assistant(bash_call("c1", "cat old-run.log")),
        bash_ok("c1", printed),
        user_bash("cat old-run.log", 0, printed),
    )
    result = apply_ledger(State(), span, 1)
    assert [c.exit for c in result.commands] == [0, 0]
    assert result.errors == []


def test_ledger_7_a_failing_run_with_no_output_keeps_todays_texts() -> None:
    """LEDGER-7: nothing to pick: pi's status line for a bash call, "exit code N" for a ``!cmd``."""
    span = span_of(
        assistant(bash_call("c1", "false")), bash_failed("c1", "", 1), user_bash("grep x y", 2, "")
    )
    assert [e.text for e in apply_ledger(State(), span, 1).errors] == [
        "Command exited with code 1",
        "exit code 2",
    ]


def _noise(size: int, line: str = "collecting ... 1234 items, all fine so far") -> str:
    return (line + "\n") * (size // (len(line) + 1))


def test_ledger_7_a_5_mb_output_is_read_only_at_its_tail() -> None:
    """LEDGER-7: in a 5 MB output the failure line at the end is found, and one further back is never read."""
    five_mb = 5 * 1024 * 1024
    end = "FAILED tests/test_big.py::test_all - AssertionError\n1 failed, 9999 passed in 812.00s\n"
    output = _noise(five_mb) + end
    assert (
        len(output) > five_mb
        and failure_line(output) == "FAILED tests/test_big.py::test_all - AssertionError"
    )

    # The same head and tail around two different middles give the same line: the middle is never scanned,
    # though a rank-0 line there would beat the count the tail holds.
    head, tail = "starting the run\n", _noise(TAIL_CHARS) + "1 failed, 9999 passed in 812.00s\n"
    hidden = _noise(five_mb // 2) + "error[E0001]: hidden in the middle\n" + _noise(five_mb // 2)
    plain = _noise(five_mb)
    assert (
        failure_line(head + hidden + tail)
        == failure_line(head + plain + tail)
        == "1 failed, 9999 passed in 812.00s"
    )
    # With nothing recognisable in the tail the first line is kept, as before.
    assert failure_line(head + hidden + _noise(TAIL_CHARS)) == "starting the run"


def test_ledger_7_one_huge_line_is_kept_bounded() -> None:
    """LEDGER-7: a 5 MB line without a break is cut: the picker returns at most SCAN_LINE_CHARS."""
    huge = "error: " + "x" * (5 * 1024 * 1024)
    assert len(failure_line(huge)) == SCAN_LINE_CHARS
    span = span_of(
        user_bash("./gen", 1, huge), assistant(bash_call("c1", "./gen")), bash_failed("c1", huge, 1)
    )
    errors = apply_ledger(State(), span, 1).errors
    assert [len(e.text) for e in errors] == [ERROR_CHARS, ERROR_CHARS]
    assert all(e.text.startswith("error: xxx") and e.text.endswith("…") for e in errors)


@pytest.mark.anyio
async def test_ledger_7_ledger_12_the_picked_line_reaches_the_summary_the_state_and_the_span_record(
    tmp_path: Path,
) -> None:
    """LEDGER-7, LEDGER-12: the pass stores the picked line in details.state and renders it in Open errors."""
    s = Session(tmp_path)
    s.user("Run the tests.")
    s.bash("python -m pytest -q", output_of(RUNS[1]).rstrip("\n"), code=1)
    s.bash("go test ./...", output_of(RUNS[5]).rstrip("\n"), code=2)
    s.user("Fix them.")
    keep = len(s.entries)
    s.user("Go on.")
    result = await run_pass(s.params(keep), pass_id="lines-1")
    assert result.compaction is not None and result.after is not None
    expected = [
        ("E1", "C1", "FAILED tests/test_report.py::test_total_sums_amounts - AssertionError: assert..."),
        ("E2", "C2", "internal/orders/report.go:14:9: undefined: qByCustomer"),
    ]
    state_errors = result.compaction.details["state"]["errors"]
    assert [(e["id"], e["command"], e["text"]) for e in state_errors] == expected
    record_errors = result.after.spanRecord["errors"]
    assert [(e["id"], e["command"], e["text"]) for e in record_errors] == expected
    open_errors = result.compaction.summary.split("## Open errors\n", 1)[1].split("\n\n", 1)[0]
    assert open_errors.splitlines() == [f"- {eid} bash: {text} (from {cid})" for eid, cid, text in expected]

    s.store(result, keep)
    folded = fold(s.entries)
    assert [(e.id, e.command, e.text) for e in folded.state.errors] == expected
