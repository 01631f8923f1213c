"""The failure-line picker's rules (LEDGER-7): ranks, ties, passing lines naming errors, escapes, bounds.

The short outputs here are written for the rule they test, in the forms the tools print; the real outputs of
failing runs are in ``fixtures/`` and tested in ``test_ledger_lines.py``.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from longhaul_daemon.passes.failure_line import SCAN_LINE_CHARS, failure_line

# Lines that mention an error, a failure or a count while stating none: none of them may be picked.
PASSING = [
    "0 errors",
    "error_handler.py passed",
    "tests/test_error_handler.py::test_error_message PASSED                [ 50%]",
    "tests/test_error_handler.py ..                                         [ 50%]",
    "Found 0 errors. Watching for file changes.",
    "For more information about this error, try `rustc --explain E0425`.",
    "  error: |-",
    "INFO:root:error_handler loaded, 0 errors so far",
    "Error handling middleware registered",
    "no errors found",
    "errors: 0, warnings: 2",
    "warning: unused variable: `error`",
    "ok  \tgithub.com/acme/shop/internal/errors\t0.003s",
    "test errors::tests::maps_io_error ... ok",
    "ok 3 - reports an error: bad input",
    "# fail 0",
    "0 failed, 12 passed in 0.40s",
    "    report_test.go:8: checking the error path",
    "..F.                                                                     [100%]",
    "npm error A complete log of this run can be found in: /tmp/home/.npm/_logs/debug-0.log",
    "Command exited with code 1",
]

# Lines of each rank the picker knows, in the forms the tools print them.
SPECIFIC = [
    "FAILED tests/test_report.py::test_total - assert 3 == 5",
    "internal/orders/report.go:14:9: undefined: qByCustomer",
    "error[E0425]: cannot find function `totl` in this scope",
    "main.c:7:35: error: 'count' undeclared (first use in this function)",
    "src/cart.ts(8,17): error TS2339: Property 'cost' does not exist on type 'Item'.",
    "--- FAIL: TestTotalsByCustomer (0.00s)",
    "not ok 2 - total sums prices",
    "test tests::total_sums ... FAILED",
    "panic: runtime error: index out of range [5] with length 3",
    "error: pathspec 'mian' did not match any file(s) known to git",
    "main.c:(.text.startup+0x1b): undefined reference to `totl'",
    "thread 'main' panicked at src/main.rs:2:5:",
]
GENERAL = [
    "TypeError: Cannot read properties of undefined (reading 'price')",
    'npm ERR! Missing script: "lint"',
    "fatal: not a git repository (or any of the parent directories): .git",
    "make: *** No rule to make target 'deploy'.  Stop.",
    "collect2: error: ld returned 1 exit status",
]
SUMMARY = [
    "make: *** [Makefile:9: check] Error 1",
    "1 failed, 3 passed in 0.53s",
    "FAIL\tgithub.com/acme/shop/internal/orders [build failed]",
    "error: could not compile `shop` (lib) due to 1 previous error",
    "test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s",
    "npm ERR! code ELIFECYCLE",
    "FAILED (failures=1, errors=1)",
    "FAILED",
]
FAILURES = [*SPECIFIC, *GENERAL, *SUMMARY]
STRONGER_WEAKER = [
    (strong, weak)
    for i, stronger in enumerate((SPECIFIC, GENERAL))
    for weaker in (GENERAL, SUMMARY)[i:]
    for strong in stronger
    for weak in weaker
]
SAME_RANK = [(a, b) for rank in (SPECIFIC, GENERAL, SUMMARY) for a in rank for b in rank if a != b]


@pytest.mark.parametrize("line", PASSING)
def test_ledger_7_a_passing_line_alone_is_not_picked(line: str) -> None:
    """LEDGER-7: a line that merely mentions "error" is not a failure: the first line is kept, as before."""
    assert failure_line(f"starting\n{line}\n") == "starting"


@settings(max_examples=200, deadline=None)
@given(
    before=st.lists(st.sampled_from(PASSING), max_size=12),
    after=st.lists(st.sampled_from(PASSING), max_size=12),
    failure=st.sampled_from(FAILURES),
    crlf=st.booleans(),
)
def test_ledger_7_passing_lines_never_beat_a_failure_line(
    before: list[str], after: list[str], failure: str, crlf: bool
) -> None:
    """LEDGER-7: however many passing lines mention errors, before or after it, even a summary count wins."""
    end = "\r\n" if crlf else "\n"
    assert failure_line(end.join([*before, failure, *after]) + end) == failure


@pytest.mark.parametrize(("stronger", "weaker"), STRONGER_WEAKER)
def test_ledger_7_a_stronger_kind_wins_wherever_it_stands(stronger: str, weaker: str) -> None:
    """LEDGER-7: a specific failure beats a general one, which beats a summary, before or after it."""
    assert failure_line(f"{weaker}\n{stronger}\n") == stronger
    assert failure_line(f"{stronger}\n{weaker}\n") == stronger


@pytest.mark.parametrize(("first", "second"), SAME_RANK)
def test_ledger_7_within_a_rank_the_earlier_line_wins(first: str, second: str) -> None:
    """LEDGER-7: compilers and test runners list the root cause first, the errors it caused after it."""
    assert failure_line(f"{first}\n{second}\n") == first


def test_ledger_7_the_first_of_several_compiler_errors() -> None:
    """LEDGER-7: of tsc's two errors the first; rustc's own error before cargo's "could not compile"."""
    tsc = (
        "src/cart.ts(8,17): error TS2339: Property 'cost' does not exist on type 'Item'.\n"
        "src/cart.ts(13,14): error TS2322: Type 'number' is not assignable to type 'string'.\n"
    )
    assert failure_line(tsc).startswith("src/cart.ts(8,17)")
    rustc = "error: expected one of `;` or `}`, found `let`\n --> src/main.rs:3:5\n\n"
    rustc += "error: could not compile `x`\n"
    assert failure_line(rustc) == "error: expected one of `;` or `}`, found `let`"


def test_ledger_7_the_exception_line_that_ends_a_python_traceback() -> None:
    """LEDGER-7: the first unindented line after a traceback's frames, whatever the exception's name."""
    interrupted = (
        "Traceback (most recent call last):\n"
        '  File "/srv/app/run.py", line 9, in <module>\n'
        "    time.sleep(60)\n"
        "KeyboardInterrupt\n"
    )
    assert failure_line("ERROR:root:retrying\n" + interrupted) == "KeyboardInterrupt"
    chained = (
        "Traceback (most recent call last):\n"
        '  File "cfg.py", line 3, in load\n'
        "ValueError: invalid literal for int() with base 10: 'x'\n"
        "\n"
        "During handling of the above exception, another exception occurred:\n"
        "\n"
        "Traceback (most recent call last):\n"
        '  File "cfg.py", line 5, in load\n'
        "RuntimeError: config broken\n"
    )
    assert failure_line(chained) == "ValueError: invalid literal for int() with base 10: 'x'"


def test_ledger_7_rust_and_go_panics() -> None:
    rust = "thread 'main' panicked at src/main.rs:2:5:\nboom\nnote: run with `RUST_BACKTRACE=1`\n"
    assert failure_line(rust) == "thread 'main' panicked at src/main.rs:2:5:"
    go = "panic: assignment to entry in nil map\n\ngoroutine 1 [running]:\nmain.main()\n"
    go += "\t/app/main.go:5 +0x2d\nexit status 2\n"
    assert failure_line(go) == "panic: assignment to entry in nil map"


def test_ledger_7_unittest_verdicts_beat_its_summary() -> None:
    output = "F.\n" + "=" * 70 + "\nFAIL: test_total (test_report.TestTotal.test_total)\n" + "-" * 70 + "\n"
    output += "AssertionError: 3 != 5\n\nRan 2 tests in 0.001s\n\nFAILED (failures=1)\n"
    assert failure_line(output) == "FAIL: test_total (test_report.TestTotal.test_total)"
    assert failure_line("Ran 2 tests in 0.001s\n\nFAILED (failures=1)\n") == "FAILED (failures=1)"


def test_ledger_7_escapes_and_carriage_returns_are_read_as_a_terminal_shows_them() -> None:
    """LEDGER-7: colour is removed from the line kept; a progress line keeps what its last \\r left."""
    coloured = "\x1b[32m..\x1b[0m\x1b[31mF\x1b[0m\n\x1b[31mFAILED\x1b[0m tests/test_csv.py::test_header\x07\n"
    assert failure_line(coloured) == "FAILED tests/test_csv.py::test_header\x07"
    progress = "Fetching  10%\rFetching 100%\rerror: could not resolve host: example.invalid\r\n"
    assert failure_line(progress) == "error: could not resolve host: example.invalid"
    assert failure_line("\x1b]0;title\x07\x1b[2J\n  \n") == ""


def test_ledger_7_pi_status_of_a_stopped_command_is_the_failure() -> None:
    """LEDGER-7: a command pi timed out or aborted failed for that reason, whatever it printed before."""
    assert failure_line("FAILED tests/a.py::t\n\nCommand timed out after 30 seconds") == (
        "Command timed out after 30 seconds"
    )
    assert failure_line("partial output\n\nCommand aborted") == "Command aborted"
    assert failure_line("Command aborted") == "Command aborted"
    assert failure_line("error: x\n\nCommand exited with code 1") == "error: x"


def test_ledger_7_nothing_recognised_keeps_the_first_non_blank_line() -> None:
    assert failure_line("\n   \nfirst line\nsecond line\n\nCommand exited with code 3") == "first line"
    assert failure_line("") == "" and failure_line(" \n\t\n") == ""


OUTPUT = st.lists(
    st.sampled_from([*PASSING, *FAILURES, "Traceback (most recent call last):", "  File x", "\x1b[31m", "\r"])
    | st.text(max_size=60),
    max_size=20,
).map("\n".join)


@settings(max_examples=300, deadline=None)
@given(output=OUTPUT)
def test_ledger_9_the_picker_is_pure_and_bounded_on_any_text(output: str) -> None:
    """LEDGER-9: never raises, same answer twice, one line without escapes, at most SCAN_LINE_CHARS."""
    line = failure_line(output)
    assert line == failure_line(output)
    assert "\n" not in line and "\x1b" not in line and len(line) <= SCAN_LINE_CHARS
    assert line == line.strip()
