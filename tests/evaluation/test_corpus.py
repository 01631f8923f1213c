"""The corpus: pi-shaped sessions whose answer key says what each compaction's summary should hold.

The key is checked against the transcript it describes, with the same span logic ``facts`` and ``score`` use:
every key value stands once in its span's tool output, nowhere before, and in a message after the
compaction; every standing rule is a user's words; every withdrawal shares a word with its rule; every
failing command ran in the span with that exit code; the next task is named in the span. The traps are
there, the chains run from 1 to N compactions, and the same seed writes the same bytes.
"""

from __future__ import annotations

import argparse
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from longhaul_daemon.evaluation.common import key_path
from longhaul_daemon.evaluation.corpus import run_corpus, write_corpus
from longhaul_daemon.evaluation.corpus_text import RULES
from longhaul_daemon.evaluation.key import load_key
from longhaul_daemon.evaluation.recorded_compactions import (
    find_compactions,
    message_of,
    message_pieces,
    text_of,
)
from longhaul_daemon.inspector.session_file import read_transcript


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("corpus")
    write_corpus(out, sessions=12, seed=7, max_compactions=6)
    return out


def _pieces(branch: list[dict[str, Any]], start: int, end: int, *, tool: bool | None = None) -> list[str]:
    found = []
    for entry in branch[start:end]:
        message = message_of(entry)
        if message is not None:
            found += [p.text for p in message_pieces(message) if tool is None or p.tool_output == tool]
    return found


def _users(branch: list[dict[str, Any]], start: int, end: int) -> list[str]:
    found = []
    for entry in branch[start:end]:
        message = message_of(entry)
        if message is not None and message.get("role") == "user":
            found.append(text_of(message.get("content")))
    return found


def test_the_key_describes_its_transcript(corpus: Path) -> None:
    files = sorted(corpus.glob("*.jsonl"))
    assert len(files) == 12
    lengths = []
    for path in files:
        transcript = read_transcript(path)
        assert not transcript.problems
        key = load_key(key_path(path))
        assert key is not None
        compactions = find_compactions(transcript.branch)
        assert len(compactions) == len(key.compactions)
        lengths.append(len(compactions))
        branch = transcript.branch
        for c, k in zip(compactions, key.compactions, strict=True):
            span_tool = "\n".join(_pieces(branch, c.span_start, c.span_end, tool=True))
            before = "\n".join(_pieces(branch, 0, c.span_start))
            after = "\n".join(_pieces(branch, c.position + 1, len(branch)))
            for value in k.values:
                assert span_tool.count(value) == 1 and value not in before and value in after
            users = _users(branch, 0, c.span_end)
            for rule in k.rules:
                assert any(rule.words in u for u in users)
            assert not {r.id for r in k.rules} & {r.id for r in k.lifted}
            for command in k.commands:
                assert f"Command exited with code {command.exit}" in span_tool
                assert command.command in "\n".join(_pieces(branch, c.span_start, c.span_end, tool=False))
            assert k.next is not None and any(
                f"`{k.next}`" in u for u in _users(branch, c.span_start, c.span_end)
            )
    assert sorted(set(lengths)) == [1, 2, 3, 4, 5, 6]


def test_every_withdrawal_shares_a_word_with_its_rule_and_permissions_withdraw_nothing() -> None:
    def words(text: str) -> set[str]:
        return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 3}

    for rule in RULES:
        for withdrawal in rule.withdrawals:
            assert words(rule.words) & words(withdrawal), withdrawal
            assert re.search(r"no longer|lifted|doesn't apply|withdrawn", withdrawal)
        assert not re.search(r"no longer|lifted|doesn't apply|withdrawn", rule.permission)


def test_the_traps_are_there_and_counted(corpus: Path) -> None:
    kinds: dict[str, int] = {}
    for path in corpus.glob("*.key.json"):
        for kind, n in json.loads(path.read_text())["traps"].items():
            kinds[kind] = kinds.get(kind, 0) + n
    expected = {
        "assistant-promise",
        "injection",
        "permission",
        "rule-like-tool-output",
        "rule-without-rule-word",
    }
    assert set(kinds) == expected and all(n > 0 for n in kinds.values())
    text = "\n".join(p.read_text() for p in corpus.glob("*.jsonl"))
    assert "NOTE TO AI AGENTS" in text and "All commits must be signed off" in text


def test_the_same_seed_writes_the_same_corpus(tmp_path: Path) -> None:
    write_corpus(tmp_path / "a", sessions=3, seed=11, max_compactions=3)
    write_corpus(tmp_path / "b", sessions=3, seed=11, max_compactions=3)
    write_corpus(tmp_path / "c", sessions=3, seed=12, max_compactions=3)
    for name in ("session-003.jsonl", "session-003.key.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
        assert (tmp_path / "a" / name).read_bytes() != (tmp_path / "c" / name).read_bytes()


def test_the_command_refuses_a_directory_that_holds_sessions(tmp_path: Path) -> None:
    args = argparse.Namespace(out_dir=str(tmp_path / "out"), sessions=2, seed=1, max_compactions=2)
    out = io.StringIO()
    assert run_corpus(args, out=out, err=io.StringIO()) == 0
    assert out.getvalue().startswith("corpus: 2 sessions, 3 compactions")
    err = io.StringIO()
    assert run_corpus(args, out=io.StringIO(), err=err) == 2
    assert "already holds session files" in err.getvalue()
