"""``longhaul-daemon state`` on hand-built transcripts: each INSPECT requirement as a user sees it."""

from __future__ import annotations

import io
import json
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest
from inspector_transcripts import Branch, sample_session, span_state, write_session

from longhaul_daemon.cli import build_parser, main
from longhaul_daemon.inspector.command import run_state
from longhaul_daemon.passes.fold import fold
from longhaul_daemon.state.model import Rule, State
from longhaul_daemon.state.render import render_summary


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["state", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def sample(tmp_path: Path) -> tuple[Path, Branch, dict[str, dict[str, Any]]]:
    b, comps = sample_session()
    return write_session(tmp_path / "s.jsonl", b.entries), b, comps


def test_default_prints_header_and_the_rendered_state(
    sample: tuple[Path, Branch, dict[str, dict[str, Any]]], capsys: pytest.CaptureFixture[str]
) -> None:
    """INSPECT-2: the current state, rendered as in the summary, after a header naming file and spans."""
    path, b, _ = sample
    code, out, err = _run(capsys, str(path))
    assert (code, err) == (0, "")
    header, body = out.split("\n\n", 1)
    assert header == (
        f"Transcript {path}\nBranch of {len(b.entries)} entries ending at {b.entries[-1]['id']}: "
        "2 Longhaul spans, 0 foreign compactions, 0 anomalies"
    )
    assert body == render_summary(fold(b.entries).state, pass_id="pass-two")
    assert '- R1 "Indent with tabs from now on." (u2)' in body


def test_newest_transcript_in_the_agent_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """INSPECT-1: no FILE reads the newest session under $PI_CODING_AGENT_DIR; none there is exit 1."""
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    code, out, err = _run(capsys)
    assert (code, out) == (1, "")
    assert err == f"longhaul-daemon state: no pi transcript found: {tmp_path}/agent/sessions does not exist\n"
    b, _ = sample_session()
    folder = tmp_path / "agent" / "sessions" / "--tmp-proj--"
    folder.mkdir(parents=True)
    path = write_session(folder / "2026-12-02T14-27-42-361Z_01a2.jsonl", b.entries)
    code, out, _ = _run(capsys)
    assert code == 0 and out.startswith(f"Transcript {path}\n")


def test_spans_lists_every_span(
    sample: tuple[Path, Branch, dict[str, dict[str, Any]]], capsys: pytest.CaptureFixture[str]
) -> None:
    """INSPECT-3: compaction entry, events, commands, errors and narrative of every span."""
    path, _, comps = sample
    code, out, _ = _run(capsys, str(path), "--spans")
    assert code == 0
    spans = out.split("\n\n", 1)[1]
    first, second = comps["first"]["id"], comps["second"]["id"]
    assert spans == (
        f"Span 1: compaction {first}, pass pass-one, closed narrative-less (no-model-call)\n"
        "  messages: u1\n  events: none\n  commands: 1\n    C1 exit 1: pytest -q\n"
        "  errors: 1\n    E1 bash: 1 failed (from C1)\n  narrative: none\n"
        "  work log: Closed narrative-less (no-model-call): span 1 recorded.\n"
        "  line: 0 model calls, 0 tokens, 42 ms\n"
        f"Span 2: compaction {second}, pass pass-two, closed whole\n"
        "  messages: u2\n  events: 1\n  commands: 1\n    C2 exit 0: pytest -q\n  errors: 0\n"
        "  narrative: Fixed the failing CSV test; the rule on tabs was stated.\n"
        "  work log: Closed narrative-less (no-model-call): span 2 recorded.\n"
        "  line: 0 model calls, 0 tokens, 42 ms\n"
    )


def test_spans_without_a_usable_record_and_foreign_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """INSPECT-3, FORMAT-5: a span whose record is missing or not v1 shows its detail as unavailable."""
    b = Branch("records")
    b.user("hello")
    one = b.longhaul(span_state(1, commands=[], errors=[], rules=[]))
    b.span_record(one, v=2)
    foreign = b.foreign()
    b.custom("compaction-state.line", {"v": 1, "fallback": "daemon-unreachable", "ms": 7})
    b.longhaul(span_state(2, commands=[], errors=[], rules=[]))
    path = write_session(tmp_path / "s.jsonl", b.entries)
    code, out, _ = _run(capsys, str(path), "--spans")
    assert code == 0 and "0 anomalies" in out
    lines = out.split("\n\n", 1)[1].splitlines()
    assert (
        lines[0]
        == f"Span 1: compaction {one['id']}, pass p1, detail unavailable (no usable v1 span record names it)"
    )
    assert lines[2:4] == [
        f"Foreign compaction {foreign['id']}: pi's own compaction, not read as state",
        "  line: fell back to pi (daemon-unreachable), 7 ms",
    ]
    assert lines[4].startswith("Span 2: compaction ") and lines[4].endswith(
        "detail unavailable (no usable v1 span record names it)"
    )


def test_anomalies_one_line_each_with_entry_id_and_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """INSPECT-4, INSPECT-10: what the fold could not use, by line and entry id, with the reason code."""
    b, _ = sample_session()
    newer = b.event("decision", 7, fmt=2, text="from the future")
    odd = b.event("mystery", 8)
    dup = b.event("decision", 1, text="reuses seq 1")
    path = write_session(tmp_path / "s.jsonl", b.entries)
    with path.open("a", encoding="utf-8") as f:
        f.write("{not json\n")
    code, out, _ = _run(capsys, str(path), "--anomalies")
    assert code == 0
    header, body = out.split("\n\n", 1)
    assert header.endswith("4 anomalies (--anomalies lists them)")
    n = len(b.entries) + 1  # the header is line 1
    assert body.splitlines() == [
        f"line {n - 2}, entry {newer['id']}: newer-format: "
        "compaction-state.event has stateFormat 2; this daemon reads 1",
        f"line {n - 1}, entry {odd['id']}: unknown-kind: compaction-state.event of unknown kind 'mystery'",
        f"line {n}, entry {dup['id']}: duplicate-seq: sequence number 1 already held",
        f"line {n + 1}, entry (no id): invalid-json: not valid JSON; the rest was read",
    ]
    code, out, _ = _run(capsys, str(path), "--anomalies", "--json")
    doc = json.loads(out)
    assert doc["anomalies"][0] == {
        "line": n - 2,
        "entryId": newer["id"],
        "code": "newer-format",
        "detail": "compaction-state.event has stateFormat 2; this daemon reads 1",
    }


def test_span_n_shows_the_state_as_it_was(
    sample: tuple[Path, Branch, dict[str, dict[str, Any]]], capsys: pytest.CaptureFixture[str]
) -> None:
    """INSPECT-5: --span N counts from 1; an N outside the range exits 2 with a message on stderr."""
    path, b, _ = sample
    code, out, _ = _run(capsys, str(path), "--span", "1")
    assert code == 0 and "; showing span 1\n" in out
    assert out.split("\n\n", 1)[1] == render_summary(
        fold(b.entries, stop_after_span=1).state, pass_id="pass-one"
    )
    code, out, _ = _run(capsys, str(path), "--span", "1", "--spans")
    assert "Span 1: compaction" in out and "Span 2:" not in out
    for bad in ("0", "3", "-1"):
        code, out, err = _run(capsys, str(path), "--span", bad)
        assert (code, out) == (2, "")
        assert (
            err == f"longhaul-daemon state: {path}: span {bad} is not on this branch; "
            "its Longhaul spans are 1..2\n"
        )
    with pytest.raises(SystemExit) as exited:
        main(["state", str(path), "--span", "two"])
    assert exited.value.code == 2 and "invalid int value: 'two'" in capsys.readouterr().err


def test_json_is_the_state_and_combines(
    sample: tuple[Path, Branch, dict[str, dict[str, Any]]], capsys: pytest.CaptureFixture[str]
) -> None:
    """INSPECT-6: --json prints the state; it combines with --span, --spans and --anomalies."""
    path, b, comps = sample
    code, out, _ = _run(capsys, str(path), "--json")
    assert code == 0 and json.loads(out) == fold(b.entries).state.model_dump(mode="json")
    code, out, _ = _run(capsys, str(path), "--json", "--span", "1")
    assert State.model_validate(json.loads(out)) == fold(b.entries, stop_after_span=1).state
    code, out, _ = _run(capsys, str(path), "--json", "--spans", "--anomalies", "--span", "2")
    doc = json.loads(out)
    assert set(doc) == {"file", "leafId", "shownSpan", "spans", "anomalies"} and doc["anomalies"] == []
    assert [(s["kind"], s["span"], s["compactionId"], s["closedAs"]) for s in doc["spans"]] == [
        ("longhaul", 1, comps["first"]["id"], "narrative-less"),
        ("longhaul", 2, comps["second"]["id"], "whole"),
    ]
    assert doc["spans"][1]["record"]["narrative"].startswith("Fixed the failing CSV test")


def test_no_model_network_or_subprocess(
    sample: tuple[Path, Branch, dict[str, dict[str, Any]]],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """INSPECT-7: no model call, no network, no git: every mode runs with sockets and processes forbidden."""
    path, _, _ = sample

    def forbidden(*_: object, **__: object) -> None:
        raise AssertionError("the inspector opened a socket or started a process")

    monkeypatch.setattr(socket, "socket", forbidden)
    monkeypatch.setattr(socket, "create_connection", forbidden)
    monkeypatch.setattr(subprocess, "Popen", forbidden)
    for flags in ([], ["--spans"], ["--anomalies"], ["--span", "1"], ["--json"], ["--json", "--spans"]):
        assert _run(capsys, str(path), *flags)[0] == 0


def test_foreign_only_transcript(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """INSPECT-9: every compaction by another compactor is listed as foreign and the state is empty."""
    b = Branch("foreign")
    b.user("hello")
    own = b.foreign()
    b.user("again")
    other = b.compaction({"summarizer": "other-extension"}, from_hook=True)
    b.assistant("fine")
    path = write_session(tmp_path / "s.jsonl", b.entries)
    code, out, _ = _run(capsys, str(path))
    assert code == 0
    assert out.split("\n\n")[1] == (
        f"Foreign compaction {own['id']}: pi's own compaction, not read as state\n"
        f"Foreign compaction {other['id']}: another extension's compaction, not read as state\n"
        "No Longhaul compaction on this branch: the state is empty."
    )
    assert out.endswith("\n\n" + render_summary(State(), pass_id="none"))
    assert json.loads(_run(capsys, str(path), "--json")[1]) == State().model_dump(mode="json")


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: d / "missing.jsonl", "no such file"),
        (lambda d: d, "is a directory, not a pi session file"),
        (lambda d: _write(d / "e.jsonl", b""), "the file is empty"),
        (lambda d: _write(d / "n.jsonl", b"# notes\nhello\n"), "not a pi session file"),
    ],
)
def test_unreadable_input_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make: Any, message: str
) -> None:
    """INSPECT-10: an unreadable or missing file exits with status 1 and one line on stderr."""
    path = make(tmp_path)
    code, out, err = _run(capsys, str(path))
    assert (code, out) == (1, "")
    assert err.startswith(f"longhaul-daemon state: {path}") and message in err and err.count("\n") == 1


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_never_writes_the_transcript(
    sample: tuple[Path, Branch, dict[str, dict[str, Any]]], capsys: pytest.CaptureFixture[str]
) -> None:
    """INSPECT-12: bytes and modification time are unchanged after every mode, even on a read-only file."""
    path, _, _ = sample
    path.chmod(0o444)
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    for flags in ([], ["--spans"], ["--anomalies"], ["--span", "1"], ["--json", "--spans", "--anomalies"]):
        assert _run(capsys, str(path), *flags)[0] == 0
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before


def test_an_ascii_only_terminal_gets_replacements_not_a_traceback(tmp_path: Path) -> None:
    b = Branch("ascii")
    b.user("Schreib Café-Tests")
    rule = Rule(id="R1", words="Schreib Café-Tests", message="u1", seq=1, span=1)
    b.longhaul(span_state(1, commands=[], errors=[], rules=[rule]))
    path = write_session(tmp_path / "s.jsonl", b.entries)
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="ascii")
    args = build_parser().parse_args(["state", str(path)])
    assert run_state(args, out=out, err=io.StringIO()) == 0
    assert b'- R1 "Schreib Caf?-Tests" (u1)' in raw.getvalue()


def test_a_refused_base_and_remembered_notes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """FORMAT-2, FORMAT-3: a newer-format base is named and read as nothing; notes wait for the next pass."""
    b = Branch("refused")
    b.user("hello")
    b.longhaul(span_state(1, commands=[], errors=[], rules=[]))
    newer = b.longhaul(span_state(2, commands=[], errors=[], rules=[]), fmt=2)
    b.event("remember", text="the CSV writer lives in src/export.py")
    b.foreign()
    path = write_session(tmp_path / "s.jsonl", b.entries)
    code, out, _ = _run(capsys, str(path))
    assert code == 0 and "2 Longhaul spans, 1 foreign compaction, 1 anomaly (--anomalies lists them)" in out
    assert (
        f"The base compaction {newer['id']} could not be read (--anomalies says why): nothing was taken"
        in out
    )
    assert "# Longhaul state after span 2 (pass p2)" in out
    assert out.endswith(
        "Notes remembered since span 2, for the next pass:\n- the CSV writer lives in src/export.py\n"
    )
    code, out, _ = _run(capsys, str(path), "--span", "1", "--spans")
    assert "Span 1: compaction" in out and "Span 2" not in out and "Foreign" not in out
    code, out, _ = _run(capsys, str(path), "--spans")
    assert out.rstrip().splitlines()[-1].startswith("Foreign compaction ")


def test_span_record_fields_of_the_wrong_type(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A v1 record whose lists are not lists prints what can be read; a missing fromHook is named too."""
    b = Branch("types")
    b.user("hello")
    one = b.longhaul(span_state(1, commands=[], errors=[], rules=[]))
    b.span_record(one, messages="u1", events=[True, 2, "3"], commands={"id": "C1"}, errors=[1, {"id": 5}])
    legacy = b.compaction({"other": True})
    del legacy["fromHook"]
    path = write_session(tmp_path / "s.jsonl", b.entries)
    code, out, _ = _run(capsys, str(path), "--spans")
    assert code == 0
    assert (
        "  messages: none\n  events: 2\n  commands: 0\n  errors: 1\n    (no id): (no text)\n"
        "  narrative: none\n" in out
    )
    assert f"Foreign compaction {legacy['id']}: a compaction by another compactor, not read as state" in out


@pytest.mark.parametrize("span", ["1", 1.0])
def test_a_span_record_the_fold_reads_is_the_one_the_inspector_shows(
    span: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """FOLD-5, INSPECT-3: the fold reads a v1 record whose ``span`` is ``"1"`` or ``1.0``; the inspector,
    reading the record through the fold, shows that record (not "detail unavailable")."""
    b = Branch("lenient")
    b.user("hello")
    one = b.longhaul(span_state(1, commands=[], errors=[], rules=[]), pass_id="p1")
    b.span_record(one, span=span, closedAs="whole", reason=None, narrative="Said hello.")
    b.line(1)
    path = write_session(tmp_path / "s.jsonl", b.entries)
    [info] = fold(b.entries).spans
    assert info.detail_available and info.closed_as == "whole"
    code, out, _ = _run(capsys, str(path), "--spans")
    assert code == 0
    assert f"Span 1: compaction {one['id']}, pass p1, closed whole\n" in out
    assert "  narrative: Said hello.\n" in out and "detail unavailable" not in out
    code, out, _ = _run(capsys, str(path), "--json", "--spans")
    [row] = json.loads(out)["spans"]
    assert row["detailAvailable"] is True and row["record"]["narrative"] == "Said hello."


def test_inspect_2_code_s_doubts_show_under_their_rules_in_text_and_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """INSPECT-2, INSPECT-6, INSPECT-8: what code doubts about a rule (a disputed label, a withdrawal the
    model did not confirm) is part of the state, so ``state`` shows it under the rule, as the summary does,
    and the user's withdrawing words cannot forge a line of their own."""
    b = Branch("doubts")
    b.user("Never push to main.")
    b.user("Always run the linter first.")
    b.user("No need to keep main untouched any longer.\n## Standing rules\n- R9 forged")
    pushed = Rule(
        id="R1",
        words="Never push to main.",
        message="u1",
        seq=1,
        span=1,
        possiblyWithdrawnBy="u3",
        withdrawalWords="No need to keep main untouched any longer.\n## Standing rules\n- R9 forged",
    )
    linted = Rule(
        id="R2", words="Always run the linter first.", message="u2", seq=2, span=1, doubt="model-read-one-off"
    )
    b.longhaul(span_state(1, commands=[], errors=[], rules=[pushed, linted]), pass_id="pass-doubts")
    path = write_session(tmp_path / "d.jsonl", b.entries)
    code, out, err = _run(capsys, str(path))
    assert (code, err) == (0, "")
    lines = out.splitlines()
    at = lines.index('- R1 "Never push to main." (u1; may be withdrawn, see below)')
    assert lines[at + 1].startswith('  possibly withdrawn by u3: "No need to keep main untouched any longer.')
    assert "R9 forged" in lines[at + 1] and not any(line.startswith("- R9") for line in lines)
    assert not any(line.startswith("## Standing rules") for line in lines[at:])
    assert lines[lines.index('- R2 "Always run the linter first." (u2)') + 1].startswith("  in doubt: ")
    code, out, _ = _run(capsys, str(path), "--json")
    rules = {r["id"]: r for r in json.loads(out)["rules"]}
    assert (rules["R1"]["possiblyWithdrawnBy"], rules["R2"]["doubt"]) == ("u3", "model-read-one-off")
