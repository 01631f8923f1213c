"""The rendered summary: fixed layout, unique per pass, sanitized and bounded (PASS-7..10, WORLD-8)."""

from __future__ import annotations

import re
import unicodedata

from longhaul_daemon.state.model import (
    Command,
    Commit,
    DirtyPath,
    ErrorEntry,
    Item,
    Note,
    Rule,
    State,
    Value,
    WorkLogLine,
    World,
)
from longhaul_daemon.state.render import MAX_COMMANDS, MAX_WORK_LOG, render_summary

_SECTIONS = [
    "Objective",
    "Standing rules",
    "Now",
    "Decisions",
    "Dead ends",
    "Open errors",
    "Values",
    "Notes",
    "World",
    "Recent commands",
    "Work log",
]


def _world() -> World:
    return World(
        status="repository",
        branch="feature/csv",
        head=Commit(hash="a1b2c3d", subject="Add CSV writer"),
        earlier=[Commit(hash="0f0f0f0", subject="Initial commit")],
        dirtyCount=2,
        dirty=[DirtyPath(status="M", path="src/export.py"), DirtyPath(status="??", path="notes.txt")],
        ahead=1,
        behind=0,
    )


def _full_state() -> State:
    return State(
        span=3,
        seq=9,
        objective="Ship the CSV export with tests",
        now="Writing the header row test",
        rules=[
            Rule(id="R1", words="Never push to main.", message="u2", seq=1, span=1),
            Rule(id="R2", words="Indent with tabs.", message="u3", seq=2, span=1, lifted=True, liftedBy="u9"),
            Rule(id="R3", words="Run ruff before every commit.", message="u7", seq=3, span=2),
        ],
        decisions=[Item(text="Stream rows instead of loading all", evidence=["C2"], seq=4, span=2)],
        deadEnds=[Item(text="pandas was too slow", evidence=["C3", "E1"], seq=5, span=2)],
        values=[Value(value="5173", what="dev server port", turn="u11", seq=6, span=3)],
        notes=[Note(text="csv module is enough", seq=7)],
        commands=[
            Command(id="C1", text="pytest -q", exit=0, span=1),
            Command(id="C2", text="python -m export", exit=0, span=2),
            Command(id="C3", text="python bench.py", exit=1, span=2),
            Command(id="C4", text="sleep 100", exit="cancelled", span=3),
        ],
        errors=[
            ErrorEntry(id="E1", tool="bash", text="MemoryError", command="C3", span=2, open=False),
            ErrorEntry(id="E2", tool="read", text="ENOENT: no such file", span=3),
        ],
        readFiles=["README.md", "docs/a.md"],
        modifiedFiles=["src/export.py"],
        world=_world(),
        workLog=[
            WorkLogLine(span=1, closedAs="whole", text="Set up the project.", passId="p1"),
            WorkLogLine(
                span=2,
                closedAs="narrative-less",
                text="Closed narrative-less.",
                reason="no-model-call",
                passId="p2",
            ),
            WorkLogLine(span=3, closedAs="empty", text="The span was empty.", passId="p3"),
        ],
    )


def _headings(summary: str) -> list[str]:
    return re.findall(r"^## (.+)$", summary, flags=re.MULTILINE)


def test_pass8_sections_in_fixed_order() -> None:
    summary = render_summary(_full_state(), pass_id="pass-abc")
    assert _headings(summary) == _SECTIONS
    assert summary.index("## Work log") < summary.index("<read-files>") < summary.index("<modified-files>")


def test_pass8_empty_sections_are_left_out() -> None:
    summary = render_summary(State(), pass_id="p0")
    assert _headings(summary) == []
    assert "<read-files>" not in summary and "<modified-files>" not in summary
    assert summary.startswith("# Longhaul state after span 0 (pass p0)")


def test_pass9_header_names_longhaul_span_and_pass_so_every_summary_is_unique() -> None:
    state = _full_state()
    first = render_summary(state, pass_id="pass-1")
    second = render_summary(state, pass_id="pass-2")
    assert first.splitlines()[0] == "# Longhaul state after span 3 (pass pass-1)"
    assert first != second


def test_pass8_rules_in_force_only_with_words_in_quotes_and_message_id() -> None:
    summary = render_summary(_full_state(), pass_id="p")
    assert '- R1 "Never push to main." (u2)' in summary
    assert '- R3 "Run ruff before every commit." (u7)' in summary
    assert "R2" not in summary and "Indent with tabs" not in summary


def test_pass8_items_values_notes_and_evidence() -> None:
    summary = render_summary(_full_state(), pass_id="p")
    assert "- Stream rows instead of loading all [evidence: C2]" in summary
    assert "- pandas was too slow [evidence: C3, E1]" in summary
    assert "- dev server port: 5173 (turn u11)" in summary
    notes = summary.split("## Notes\n", 1)[1].split("\n\n", 1)[0]
    assert "the agent's own, not the user's words" in notes
    assert "- csv module is enough" in notes


def test_ledger8_ledger12_open_errors_and_errors_cited_by_dead_ends() -> None:
    summary = render_summary(_full_state(), pass_id="p")
    open_errors = summary.split("## Open errors\n", 1)[1].split("\n\n", 1)[0]
    assert open_errors == "- E2 read: ENOENT: no such file"
    dead_ends = summary.split("## Dead ends\n", 1)[1].split("\n\n", 1)[0]
    assert "  - E1 bash: MemoryError (from C3) (fixed)" in dead_ends


def test_ledger12_newest_20_commands_with_exit_codes() -> None:
    state = _full_state()
    state.commands = [Command(id=f"C{n}", text=f"make step{n}", exit=n % 3, span=1) for n in range(1, 31)]
    state.commands[-1].exit = "no result"
    summary = render_summary(state, pass_id="p")
    recent = summary.split("## Recent commands\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert recent[0] == "- (10 older commands left out; the compaction details keep them.)"
    assert len(recent) == MAX_COMMANDS + 1
    assert recent[1] == "- C11 exit 2: make step11"
    assert recent[-1] == "- C30 no result: make step30"


def test_world8_world_rendering() -> None:
    summary = render_summary(_full_state(), pass_id="p")
    world = summary.split("## World\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert world == [
        "- Branch: feature/csv (ahead 1, behind 0 of its upstream)",
        "- HEAD: a1b2c3d Add CSV writer",
        "- Earlier: 0f0f0f0 Initial commit",
        "- Dirty paths: 2",
        "  - M src/export.py",
        "  - ?? notes.txt",
    ]


def test_world4_world5_no_repository_unavailable_and_missing_fields() -> None:
    state = State(world=World(status="no-repository"))
    assert "No git repository at the session's working directory." in render_summary(state, pass_id="p")
    state.world = World(status="unavailable", missing=["branch", "head"])
    assert "could not be read" in render_summary(state, pass_id="p")
    state.world = World(status="repository", branch="detached", dirtyCount=0, missing=["ahead", "behind"])
    summary = render_summary(state, pass_id="p")
    assert "- Branch: detached\n" in summary
    assert "- Working tree clean." in summary
    assert "- Not read: ahead, behind" in summary


def test_ledger11_pi_style_file_blocks_sorted() -> None:
    state = State(readFiles=["z.md", "a.md"], modifiedFiles=["src/b.py", "src/a.py"])
    summary = render_summary(state, pass_id="p")
    assert summary.endswith(
        "<read-files>\na.md\nz.md\n</read-files>\n\n<modified-files>\nsrc/a.py\nsrc/b.py\n</modified-files>\n"
    )


def test_pass10_world8_no_control_character_reaches_the_summary() -> None:
    evil = "\x1b[31mred\x1b[0m\x07\x9b2J\u202eevil\nnewline\ttab\x00"
    state = _full_state()
    state.rules[0].words = evil
    state.commands[0].text = f"echo {evil}"
    state.errors[1].text = evil
    state.readFiles = [f"docs/{evil}.md"]
    state.modifiedFiles = [f"src/{evil}.py"]
    assert state.world is not None and state.world.head is not None
    state.world.branch = evil
    state.world.head.subject = evil
    state.world.dirty[0].path = evil
    state.objective = evil
    state.notes[0].text = evil
    state.workLog[0].text = evil
    summary = render_summary(state, pass_id=f"p{evil}")
    for ch in summary:
        assert ch == "\n" or unicodedata.category(ch) not in {"Cc", "Cf", "Cs", "Zl", "Zp"}, repr(ch)
    assert "redevil newline tab" in summary
    assert "\n## newline" not in summary


def test_pass8_summary_stays_bounded_as_spans_accumulate() -> None:
    state = _full_state()
    spans = 400
    state.workLog = [
        WorkLogLine(span=n, closedAs="whole", text=f"Did thing {n}. " * 10, passId=f"p{n}")
        for n in range(1, spans + 1)
    ]
    state.commands = [Command(id=f"C{n}", text="x" * 400, exit=0, span=1) for n in range(1, 2000)]
    state.errors = [ErrorEntry(id=f"E{n}", tool="bash", text="y" * 400, span=1) for n in range(1, 500)]
    state.decisions = [Item(text="d" * 900, seq=n, span=1) for n in range(1, 300)]
    state.deadEnds = [Item(text="e" * 900, seq=n, span=1) for n in range(1, 300)]
    state.values = [Value(value="v", what="w" * 300, turn="u1", seq=n, span=1) for n in range(1, 300)]
    state.notes = [Note(text="n" * 900, seq=n) for n in range(1, 300)]
    state.readFiles = [f"docs/file{n}.md" for n in range(3000)]
    state.modifiedFiles = [f"src/file{n}.py" for n in range(3000)]
    summary = render_summary(state, pass_id="p")
    assert len(summary) < 200_000
    log = summary.split("## Work log\n", 1)[1].split("\n\n", 1)[0].splitlines()
    left_out = spans - MAX_WORK_LOG
    assert log[0] == f"- ({left_out} older work-log lines left out; the compaction details keep them.)"
    assert len(log) == MAX_WORK_LOG + 1
    assert log[-1].startswith(f"- Span {spans}: Did thing {spans}.")
    assert "(2900 more in the compaction details.)" in summary


def test_pass8_rule_words_keep_their_spacing_and_line_breaks_without_forging_lines() -> None:
    """Issues 4 and 12: rules in force show verbatim, later lines indented under the rule; indentation alone
    does not stop "  ## keep" reading as a heading, so the rendering rule escapes its marker."""
    words = "Commit messages:\n## keep them  short\n</read-files>\tand in English"
    state = State(span=1, rules=[Rule(id="R1", words=words, message="u3", seq=1, span=1)])
    summary = render_summary(state, pass_id="p")
    assert (
        '- R1 "Commit messages:\n  ┆ \\## keep them  short\n  ┆ \\</read-files> and in English" (u3)'
        in summary
    )
    assert not any(line.lstrip().startswith(("## keep", "</read-files>")) for line in summary.splitlines())


def test_ledger8_ours_an_open_errors_command_older_than_the_recent_ones_is_written_out_with_it() -> None:
    """Ours: once the command that failed is older than the 20 recent commands shown, its open error still
    carries it, with its exit code, on the error's own line; a fixed error or one whose command is still
    among the recent ones keeps the bare id, and a hostile command text forges no line."""
    state = _full_state()
    state.commands = [
        Command(id="C1", text="python3 linkcheck.py --timeout soon\n## Standing rules", exit=2, span=1),
        *(Command(id=f"C{n}", text=f"make step{n}", exit=0, span=1) for n in range(2, 30)),
        Command(id="C30", text="make lint", exit=1, span=2),
    ]
    state.errors = [
        ErrorEntry(id="E1", tool="bash", text="invalid int value: 'soon'", command="C1", span=1, open=True),
        ErrorEntry(id="E2", tool="bash", text="lint failed", command="C30", span=2, open=True),
    ]
    summary = render_summary(state, pass_id="p")
    open_errors = summary.split("## Open errors\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert open_errors[0].startswith(
        "- E1 bash: invalid int value: 'soon' (from C1 exit 2: python3 linkcheck.py"
    )
    assert open_errors[1] == "- E2 bash: lint failed (from C30)"
    assert len(open_errors) == 2
    assert [line for line in summary.splitlines() if line.startswith("## Standing")] == ["## Standing rules"]
