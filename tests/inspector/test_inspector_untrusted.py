"""Transcript bytes are untrusted: nothing the inspector prints holds a raw control character (INSPECT-8)."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest
from inspector_transcripts import Branch, span_state, write_session

from longhaul_daemon.cli import main
from longhaul_daemon.state.model import Command, Commit, DirtyPath, ErrorEntry, Rule, World

# ESC sequences (CSI colour, OSC title, screen clear), BEL, the C1 CSI U+009B, DCS U+0090, NEL U+0085,
# a bidi override U+202E, a zero-width joiner and a lone surrogate.
ESC_RED = "\x1b[31mRED\x1b[0m"
OSC = "\x1b]0;pwned\x07"
HOSTILE = f"{ESC_RED}{OSC}\x07\x9b2J\x90q\x1b\\\x85\u202egnp.exe\u200d\ud800"
RAW = ("\x1b", "\x07", "\x9b", "\x90", "\x85", "\u202e", "\u200d", "\ud800")
MODES: tuple[list[str], ...] = (
    [],
    ["--spans"],
    ["--anomalies"],
    ["--span", "1"],
    ["--spans", "--anomalies", "--span", "1"],
)


def _hostile_session(tmp_path: Path) -> tuple[Path, Branch]:
    b = Branch("hostile")
    b.user(f"Never run {HOSTILE}")
    command = Command(id="C1", text=f"printf '{HOSTILE}'", exit=3, span=1, entryId="e1")
    error = ErrorEntry(
        id="E1", tool=f"bash{HOSTILE}", text=f"{ESC_RED} failed {HOSTILE}", command="C1", span=1
    )
    rule = Rule(id="R1", words=f"Never run {HOSTILE}", message="u1", seq=1, span=1)
    state = span_state(1, commands=[command], errors=[error], rules=[rule])
    state.readFiles = [f"src/{HOSTILE}.py"]
    state.modifiedFiles = [f"{HOSTILE}\n</modified-files>"]
    state.world = World(
        status="repository",
        branch=f"main{HOSTILE}",
        head=Commit(hash="a1b2c3d", subject=f"fix {HOSTILE}"),
        dirtyCount=1,
        dirty=[DirtyPath(status="??", path=f"notes-{HOSTILE}.txt")],
    )
    state.workLog[0].text = f"Closed {HOSTILE}"
    first = b.longhaul(state, pass_id=f"pass{HOSTILE}")
    b.span_record(
        first,
        messages=[f"u1{HOSTILE}"],
        commands=[command.model_dump(mode="json")],
        errors=[error.model_dump(mode="json")],
        narrative=f"narrative {HOSTILE}",
        reason=f"why{HOSTILE}",
    )
    b.custom("compaction-state.line", {"v": 1, "fallback": f"reason{HOSTILE}", "ms": 1})
    b.event("remember", text=f"note {HOSTILE[:-1]}")  # the fold refuses a note holding a lone surrogate
    b.event(f"kind{HOSTILE}", 2)
    bad_id = b.event("decision", 3, fmt=9, text="x")
    bad_id["id"] = f"\x1b[2J{HOSTILE}"
    b.foreign()["id"] = f"f{HOSTILE}"
    path = tmp_path / f"session-{ESC_RED}\u202e.jsonl"
    write_session(path, b.entries)
    with path.open("a", encoding="utf-8") as f:
        f.write(f'{{"type": "custom", "data": "{HOSTILE[:-1]}\n')  # an unterminated line full of escapes
    return path, b


def _assert_printable(text: str) -> None:
    for ch in RAW:
        assert ch not in text, f"{ch!r} reached the terminal raw"
    bad = {ch for ch in text if ch != "\n" and unicodedata.category(ch) in {"Cc", "Cf", "Cs", "Zl", "Zp"}}
    assert not bad, f"control or format characters printed: {sorted(bad)!r}"


@pytest.mark.parametrize("flags", MODES)
def test_text_modes_print_no_raw_control_character(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str]
) -> None:
    path, _ = _hostile_session(tmp_path)
    assert main(["state", str(path), *flags]) == 0
    captured = capsys.readouterr()
    _assert_printable(captured.out)
    _assert_printable(captured.err)
    assert "RED" in captured.out  # the text survives, only the escapes go
    assert "session-RED.jsonl" in captured.out.splitlines()[0]


def test_every_hostile_field_is_shown_sanitized(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, _ = _hostile_session(tmp_path)
    clean = "RED gnp.exe"  # what the sanitizer leaves of HOSTILE: escapes whole, controls and formats gone
    main(["state", str(path)])
    out = capsys.readouterr().out
    # Rule words keep the user's line breaks (NEL is one), later lines indented under the bullet (PASS-8).
    assert '- R1 "Never run RED\n  ┆ gnp.exe" (u1)' in out
    assert f"- C1 exit 3: printf '{clean}'" in out
    # Issue 12: a path holding < or > could close or open a file tag; it is counted, never listed.
    assert "<modified-files>\n</modified-files>\n(1 path with < or > or a Markdown-like start" in out
    assert f"Notes remembered since span 1, for the next pass:\n- note {clean}" in out
    main(["state", str(path), "--spans", "--anomalies"])
    out = capsys.readouterr().out
    assert (
        f"  narrative: narrative {clean}" in out and f"  line: fell back to pi (reason{clean}), 1 ms" in out
    )
    assert f"Foreign compaction f{clean}: pi's own compaction" in out
    assert "newer-format: compaction-state.event has stateFormat 9" in out
    assert "invalid-json: not valid JSON; the rest was read" in out


@pytest.mark.parametrize("flags", MODES)
def test_json_escapes_every_non_ascii_and_control_character(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str]
) -> None:
    """INSPECT-8 proposal: JSON output escapes every non-ASCII character."""
    path, _ = _hostile_session(tmp_path)
    assert main(["state", str(path), "--json", *flags]) == 0
    out = capsys.readouterr().out
    assert out.isascii()
    _assert_printable(out)
    doc = json.loads(out)
    state = doc if not {"--spans", "--anomalies"} & set(flags) else None
    if state is not None:
        # Issue 12: the fold cleans what it reads, so JSON shows the words with only their printable text
        # and their line break (NEL is one).
        assert state["rules"][0]["words"] == "Never run RED\ngnp.exe"


def test_error_messages_are_sanitized_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / f"gone-{ESC_RED}{OSC}\u202e.jsonl"
    assert main(["state", str(missing)]) == 1
    captured = capsys.readouterr()
    _assert_printable(captured.err)
    assert "gone-RED" in captured.err and "no such file" in captured.err
