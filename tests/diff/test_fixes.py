"""Issue 11, LEDGER-8: an open error closed by a later successful command the answer names, checked by code.

``pytest tests/test_x.py -q`` failed and ``pytest -q`` then passed: LEDGER-8's identical-text rule leaves the
error open for ever, so the answer may claim ``fixed: [{"error": "E1", "by": "C2"}]``. The claim is accepted
only when the command is later, exited 0 and runs the same thing or more; a refused claim is dropped and
counted, never retried; an accepted one closes the error at Close.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from longhaul_daemon.passes.answers.events import ChunkContext
from longhaul_daemon.passes.answers.extract import parse_answer
from longhaul_daemon.passes.answers.fixes import Fix, check_fixes, covers
from longhaul_daemon.passes.answers.quotes import OfferedMessage
from longhaul_daemon.passes.answers.verify import evaluate
from longhaul_daemon.passes.close_events import apply_events
from longhaul_daemon.state.model import Command, ErrorEntry, ExitCode, State


def command(cid: str, text: str, exit_code: ExitCode) -> Command:
    return Command(id=cid, text=text, exit=exit_code, span=1)


def error(eid: str, cid: str | None, *, open_: bool = True) -> ErrorEntry:
    return ErrorEntry(id=eid, tool="bash", text="1 failed", command=cid, span=1, open=open_)


COMMANDS = (
    command("C1", "pytest tests/test_x.py -q", 1),
    command("C2", "pytest -q", 0),
    command("C3", "pytest tests/test_y.py", 0),
    command("C4", "pytest -q", 1),
    command("C5", "ruff check .", 1),
    command("C6", "ruff check . --fix", 0),
)
ERRORS = (error("E1", "C1"), error("E2", "C4"), error("E3", "C5"), error("E4", None))


@pytest.mark.parametrize(
    ("failing", "fixing", "expected"),
    [
        ("pytest tests/test_x.py -q", "pytest -q", True),  # the case: the whole suite passed
        ("pytest tests/test_x.py::test_a", "pytest tests/", True),  # a directory holding the failing test
        ("pytest -k slow tests", "pytest tests", True),  # a selecting option dropped widens the run
        (".venv/bin/pytest -q", "python -m pytest -q -p no:cacheprovider -n 2", True),  # launcher, output
        ("FOO=1 pytest tests/x.py", "uv run pytest", True),
        ("npm test -- tests/x.test.js", "npm run test", True),
        ("go test ./pkg/x -run TestA", "go test ./pkg/x", True),
        ("npm run build", "npm  run   build", True),  # another program: the same words
        ("pytest -q", "pytest tests/test_x.py -q", False),  # names fewer tests
        ("pytest tests/a/b.py tests/c.py", "pytest tests/a", False),  # tests/c.py not run
        ("pytest -k slow", "pytest -k fast", False),  # a selecting option changed
        ("pytest --runslow", "pytest", False),  # an option dropped that may have run more
        ("go test -race ./...", "go test ./...", False),
        ("pytest -q", "pytest -q | tail -5", False),  # the exit code is tail's
        ("pytest -q", "pytest -q && echo ok", False),
        ("pytest -q", "pytest -q > out.txt", False),
        ("pytest -q", "pytest $(cat args)", False),
        ("npm run build", "npm run lint", False),
        ("cargo build", "cargo test", False),
        ("make test", "make", False),
        ("git commit -am 'x'", "git commit -am 'y'", False),
        ("pytest 'unterminated", "pytest", False),
    ],
)
def test_covers(failing: str, fixing: str, expected: bool) -> None:
    assert covers(failing, fixing) is expected


def test_check_fixes_accepts_a_later_successful_covering_command() -> None:
    fixes, refused = check_fixes([("E1", "C2")], COMMANDS, ERRORS)
    assert (fixes, refused) == ((Fix("E1", "C2"),), 0)


@pytest.mark.parametrize(
    "claim",
    [
        ("E1", "C3"),  # later and exit 0, but runs other tests
        ("E2", "C2"),  # C2 ran before the failing C4
        ("E3", "C6"),  # `--fix` is not a test runner's output option: other words
        ("E1", "C4"),  # C4 failed
        ("E4", "C2"),  # the error came from no command
        ("E9", "C2"),  # no such error
        ("E1", "C9"),  # no such command
    ],
)
def test_check_fixes_refuses_and_counts(claim: tuple[str, str]) -> None:
    assert check_fixes([claim], COMMANDS, ERRORS) == ((), 1)


def test_check_fixes_one_per_error_and_a_closed_error_is_no_refusal() -> None:
    closed = (error("E1", "C1", open_=False),)
    assert check_fixes([("E1", "C2")], COMMANDS, closed) == ((), 0)
    assert check_fixes([("E1", "C2"), ("E1", "C2")], COMMANDS, ERRORS) == ((Fix("E1", "C2"),), 0)


def _evaluate(fixed: list[dict[str, Any]], *, final: bool = True) -> Any:
    ctx = ChunkContext(
        offered=(OfferedMessage("u1", "Fix the tests."),),
        rules=(),
        ledger_ids=frozenset(c.id for c in COMMANDS) | {e.id for e in ERRORS},
        commands=COMMANDS,
        errors=ERRORS,
    )
    reply = {"labels": [{"msg": "u1", "label": "not a rule"}], "narrative": "n", "now": "w", "fixed": fixed}
    parsed = parse_answer(json.dumps(reply), ["u1"], ctx.ledger_ids)
    return evaluate(parsed, ctx, final=final)


def test_evaluate_keeps_accepted_fixes_drops_and_counts_refused_ones_and_never_asks_a_retry() -> None:
    evaluation = _evaluate([{"error": "E1", "by": "C2"}, {"error": "E2", "by": "C2"}], final=False)
    assert evaluation.events.fixed == (Fix("E1", "C2"),)
    assert evaluation.events.dropped == {"fixed": 1}
    assert evaluation.defects == ()  # a refused claim is no format defect: nothing goes back


def test_a_final_answer_past_the_bound_is_cut_before_the_check() -> None:
    claims = [{"error": "E1", "by": "C2"}] + [{"error": "E9", "by": "C2"}] * 9
    evaluation = _evaluate(claims)
    assert evaluation.events.fixed == (Fix("E1", "C2"),)
    assert evaluation.events.dropped == {"fixed": 2 + 7}  # two over the bound of 8, seven refused


def test_apply_closes_a_fixed_error_and_leaves_the_others() -> None:
    state = State(commands=list(COMMANDS), errors=list(ERRORS))
    events = _evaluate([{"error": "E1", "by": "C2"}]).events
    after = apply_events(state, [events], span=2)
    assert [(e.id, e.open) for e in after.errors] == [("E1", False), ("E2", True), ("E3", True), ("E4", True)]
    assert all(e.open for e in state.errors), "the folded state is never changed in place"
    assert after.seq == state.seq  # closing an error takes no sequence number
