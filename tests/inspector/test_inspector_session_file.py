"""Reading a pi session file untrusted: header, bad lines, the branch pi resumes (INSPECT-1, -10, -11)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from inspector_transcripts import HEADER, Branch, write_session

from longhaul_daemon.inspector import session_file
from longhaul_daemon.inspector.session_file import (
    TranscriptError,
    agent_dir,
    newest_transcript,
    read_transcript,
)


def _chat(seed: str = "s", turns: int = 2) -> Branch:
    b = Branch(seed)
    for n in range(turns):
        b.user(f"question {n}")
        b.assistant(f"answer {n}")
    return b


def test_reads_header_entries_and_branch(tmp_path: Path) -> None:
    b = _chat()
    t = read_transcript(write_session(tmp_path / "s.jsonl", b.entries))
    assert t.header == HEADER
    assert t.entries == b.entries and t.branch == b.entries
    assert t.leaf_id == b.entries[-1]["id"] and t.problems == []
    assert t.entry_lines[b.entries[0]["id"]] == 2  # the header is line 1


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "the file is empty, not a pi session file"),
        (b"\n  \n\n", "the file is empty, not a pi session file"),
        (b"not json at all\n", 'not a pi session file (the first line is not a {"type": "session"} header)'),
        (b'{"type": "message", "id": "a"}\n', "not a pi session file"),
        (b"[1, 2]\n", "not a pi session file"),
        (b"\xff\xfe binary\n", "not a pi session file"),
    ],
)
def test_no_transcript_is_an_error(tmp_path: Path, content: bytes, message: str) -> None:
    """INSPECT-10: a file that holds no pi transcript raises with a sentence for the user."""
    path = tmp_path / "x.jsonl"
    path.write_bytes(content)
    with pytest.raises(TranscriptError, match=r"^/") as caught:
        read_transcript(path)
    assert message in str(caught.value) and str(path) in str(caught.value)


def test_missing_directory_fifo_and_unreadable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(TranscriptError, match="no such file"):
        read_transcript(tmp_path / "missing.jsonl")
    with pytest.raises(TranscriptError, match="is a directory, not a pi session file"):
        read_transcript(tmp_path)
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(TranscriptError, match="not a regular file"):
        read_transcript(fifo)  # never opened, so it cannot block
    path = write_session(tmp_path / "s.jsonl", _chat().entries)

    def refuse(*_: object, **__: object) -> int:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "open", refuse)
    with pytest.raises(TranscriptError, match="cannot read: Permission denied"):
        read_transcript(path)


def test_a_file_over_the_bound_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_session(tmp_path / "s.jsonl", _chat().entries)
    monkeypatch.setattr(session_file, "MAX_FILE_BYTES", 64)
    with pytest.raises(TranscriptError, match="more than the 64"):
        read_transcript(path)


def test_bad_lines_are_counted_and_the_rest_is_read(tmp_path: Path) -> None:
    """INSPECT-10: a line that is not valid JSON is an anomaly and the rest is read."""
    b = _chat(turns=3)
    lines = [json.dumps(HEADER).encode(), *(json.dumps(e).encode() for e in b.entries)]
    lines.insert(3, b'{"type": "message", "id": "trunc')
    lines.insert(5, b"\xc3\x28 not utf-8")
    lines.insert(7, b'["an", "array"]')
    (tmp_path / "s.jsonl").write_bytes(b"\n".join(lines) + b"\n" + b'{"type":"custom","id":"half')
    t = read_transcript(tmp_path / "s.jsonl")
    assert [(p.line, p.code) for p in t.problems] == [
        (4, "invalid-json"),
        (6, "invalid-json"),
        (8, "not-an-object"),
        (len(lines) + 1, "invalid-json"),  # a partly written last line
    ]
    assert "not UTF-8" in t.problems[1].detail and "the rest was read" in t.problems[0].detail
    assert t.entries == b.entries and t.branch == b.entries


def test_branch_ends_at_the_last_entry_as_pi_resumes_it(tmp_path: Path) -> None:
    """INSPECT-11: sibling entries (an abandoned branch) are not on the branch."""
    b = _chat(turns=2)
    fork_at = b.entries[1]["id"]
    b.user("abandoned question")
    b.assistant("abandoned answer")
    b.user("resumed question")["parentId"] = fork_at
    b.assistant("resumed answer")
    t = read_transcript(write_session(tmp_path / "s.jsonl", b.entries))
    assert [e["id"] for e in t.branch] == [e["id"] for e in (*b.entries[:2], *b.entries[-2:])]
    assert t.leaf_id == b.entries[-1]["id"]


def test_broken_links_cut_the_branch(tmp_path: Path) -> None:
    b = _chat(turns=2)
    b.entries[2]["parentId"] = "deadbeef"
    t = read_transcript(write_session(tmp_path / "a.jsonl", b.entries))
    assert t.branch == b.entries[2:]
    assert [(p.line, p.entry_id, p.code) for p in t.problems] == [(4, b.entries[2]["id"], "missing-parent")]

    c = _chat(turns=2)
    c.entries[0]["parentId"] = c.entries[-1]["id"]  # a loop: the walk must stop, not hang
    t = read_transcript(write_session(tmp_path / "b.jsonl", c.entries))
    assert t.branch == c.entries and [p.code for p in t.problems] == ["parent-cycle"]


def test_a_linear_v1_file_without_ids(tmp_path: Path) -> None:
    entries: list[dict[str, Any]] = [{"type": "message", "message": {"role": "user", "content": "hi"}}]
    entries.append({"type": "message"})
    t = read_transcript(write_session(tmp_path / "s.jsonl", entries, header={**HEADER, "version": 1}))
    assert t.branch == entries and t.leaf_id is None


def test_agent_dir_from_the_environment(tmp_path: Path) -> None:
    """INSPECT-1: PI_CODING_AGENT_DIR applies; unset or empty falls back to ~/.pi/agent."""
    assert agent_dir({"PI_CODING_AGENT_DIR": str(tmp_path), "HOME": "/h"}) == tmp_path
    assert agent_dir({"PI_CODING_AGENT_DIR": "", "HOME": "/h"}) == Path("/h/.pi/agent")
    assert agent_dir({"HOME": "/h"}) == Path("/h/.pi/agent")


def test_newest_transcript_by_modification_time(tmp_path: Path) -> None:
    """INSPECT-1: the most recently modified .jsonl across the sessions folder's directories."""
    with pytest.raises(TranscriptError, match="does not exist"):
        newest_transcript(tmp_path)
    (tmp_path / "sessions" / "--a--").mkdir(parents=True)
    (tmp_path / "sessions" / "--b--").mkdir()
    (tmp_path / "sessions" / "--b--" / "notes.txt").write_text("not a session")
    with pytest.raises(TranscriptError, match=r"no \.jsonl file under"):
        newest_transcript(tmp_path)
    old = write_session(tmp_path / "sessions" / "--a--" / "2026-12-01_old.jsonl", _chat().entries)
    new = write_session(tmp_path / "sessions" / "--b--" / "2026-11-01_new.jsonl", _chat().entries)
    os.utime(old, ns=(1_000_000_000_000_000_000, 1_000_000_000_000_000_000))
    os.utime(new, ns=(2_000_000_000_000_000_000, 2_000_000_000_000_000_000))
    assert newest_transcript(tmp_path) == new
    os.utime(old, ns=(3_000_000_000_000_000_000, 3_000_000_000_000_000_000))
    assert newest_transcript(tmp_path) == old
