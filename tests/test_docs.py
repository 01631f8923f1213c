"""The user documentation stays true to the code it describes.

Issue #13 found the README quoting a notice the shim no longer shows, "(coming with the model step)" before
features that were built, the agent's tools in no user doc, an architecture picture listing two of six
commands and team notes among the user docs. Each of those is checked here against the code itself.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import typing
from pathlib import Path

import pytest
from docs_samples import OPERATIONS, expected_blocks, generated_blocks
from pydantic import BaseModel
from server.in_process_daemon import WAIT_S, daemon_command, spawn_daemon, stop_process, wait_until_serving

from longhaul_daemon.cli import build_parser
from longhaul_daemon.protocol import PROTOCOL_VERSION, StatusResult

REPO = Path(__file__).resolve().parents[1]
USER_DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
_PIECE_SEPARATORS = re.compile(r"…|; |: |\(|\)")
_PATH = re.compile(r"(?:~|/)[\w./-]+")


def _code_text() -> str:
    shim = REPO / "client_shim"
    files = [
        shim / "index.ts",
        *sorted((shim / "lib").glob("*.ts")),
        *sorted((REPO / "longhaul_daemon").rglob("*.py")),
    ]
    return "\n".join(path.read_text(encoding="utf-8") for path in files)


def _section(text: str, title: str) -> str:
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def _pieces(quote: str) -> list[str]:
    """The literal parts of a quoted message, without its values (…, paths) and the "Longhaul: " prefix."""
    text = _PATH.sub("…", quote.removeprefix("Longhaul: "))
    return [piece.strip(" .,") for piece in _PIECE_SEPARATORS.split(text) if len(piece.strip(" .,")) >= 8]


def test_every_message_the_troubleshooting_quotes_is_one_the_code_can_print() -> None:
    section = _section((REPO / "README.md").read_text(encoding="utf-8"), "Troubleshooting")
    quotes = re.findall(r'\*\*"(.+?)"\*\*', section) + re.findall(r'such as "(Longhaul: .+?)"', section)
    assert len(quotes) >= 6, quotes
    code = _code_text()
    for quote in quotes:
        pieces = _pieces(quote)
        assert pieces, quote
        missing = [piece for piece in pieces if piece not in code]
        assert not missing, f"README quotes {quote!r}, but the code never says {missing}"


def test_the_piece_check_would_catch_the_stale_quote_of_issue_13() -> None:
    stale = "Longhaul: daemon not running …; pi's own compaction ran"
    assert [piece for piece in _pieces(stale) if piece not in _code_text()] == ["pi's own compaction ran"]


def test_the_architecture_picture_names_every_command() -> None:
    picture = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8").split("```")[1]
    (subcommands,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    commands = set(subcommands.choices)
    assert commands == {"serve", "status", "state", "report", "install", "uninstall"} | {
        "facts",
        "replay",
        "score",
        "corpus",
    }
    for command in commands:
        assert re.search(rf"\b{command}\b", picture), f"docs/architecture.md's picture lacks {command}"


@pytest.mark.parametrize("name", ["longhaul_remember", "longhaul_recall", "kept-window strip"])
def test_the_agents_tools_and_the_strip_are_in_the_readme(name: str) -> None:
    section = _section((REPO / "README.md").read_text(encoding="utf-8"), "What pi's agent gets")
    assert name in section
    if name.startswith("longhaul_"):
        assert f'"{name}"' in (REPO / "client_shim" / "lib" / "tools.ts").read_text(encoding="utf-8")


@pytest.mark.parametrize("doc", USER_DOCS, ids=lambda p: p.name)
def test_no_user_doc_promises_what_is_built_or_holds_team_notes(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8").lower()
    for phrase in ("coming with", "working notes", "todo", "ask the lead"):
        assert phrase not in text, f"{doc.name} says {phrase!r}"


def _keys(value: object, prefix: str = "") -> set[str]:
    """Every key path of a JSON value (``passes.whole``, ``routes[].calls``)."""
    if isinstance(value, dict):
        found: set[str] = set()
        for key, inner in value.items():
            found |= {f"{prefix}{key}"} | _keys(inner, f"{prefix}{key}.")
        return found
    if isinstance(value, list):
        return set().union(*(_keys(item, prefix.rstrip(".") + "[].") for item in value)) if value else set()
    return set()


def _model_keys(model: type[BaseModel], prefix: str = "") -> set[str]:
    """Every key path a model can print, nested models and lists of them included."""
    found: set[str] = set()
    for name, field in model.model_fields.items():
        found.add(f"{prefix}{name}")
        annotation = field.annotation
        listed = typing.get_origin(annotation) is list
        for candidate in (annotation, *typing.get_args(annotation)):  # X, X | None, list[X]
            if isinstance(candidate, type) and issubclass(candidate, BaseModel):
                found |= _model_keys(candidate, f"{prefix}{name}{'[]' if listed else ''}.")
    return found


def test_the_status_samples_in_operations_md_are_what_the_code_prints() -> None:
    """Each block after a ``<!-- generated: … -->`` line is the output of the code for docs_samples.SAMPLE;
    when this fails, run ``.venv/bin/python tests/docs_samples.py --write``."""
    in_doc = generated_blocks(OPERATIONS.read_text(encoding="utf-8"))
    assert set(in_doc) == {"status-table", "status-json", "status-not-running-json"}
    for name, text in expected_blocks().items():
        assert in_doc[name] == text, f"{name} is stale: run .venv/bin/python tests/docs_samples.py --write"
    assert f"(protocol {PROTOCOL_VERSION})" in in_doc["status-table"]


def test_the_json_sample_holds_every_key_a_real_daemon_prints(short_tmp: Path) -> None:
    sample = json.loads(generated_blocks(OPERATIONS.read_text(encoding="utf-8"))["status-json"])
    assert _keys(sample) == {"running"} | _model_keys(StatusResult)  # every field, nested ones too
    socket = short_tmp / "d.sock"
    daemon = spawn_daemon(socket)
    try:
        wait_until_serving(socket, daemon)
        done = subprocess.run(
            [*daemon_command("status", "--json", "--socket", str(socket))],
            capture_output=True,
            text=True,
            timeout=WAIT_S,
            check=False,
        )
    finally:
        stop_process(daemon)
    assert done.returncode == 0, done.stderr
    real = json.loads(done.stdout)
    assert real["protocolVersion"] == sample["protocolVersion"] and real["running"] is True
    assert _keys(real) <= _keys(sample) and set(real) == set(sample)  # a fresh daemon: no routes, no config


def _numbered_steps(text: str, lead: str) -> tuple[str, int]:
    """The number a sentence starting with ``lead`` announces, and the list items that follow it."""
    match = re.search(rf"{re.escape(lead)} (\w+) things", text)
    assert match, lead
    after = text[match.end() :].split("\n\n", 2)[1]
    items = re.findall(r"^(?:\d+\.|-) ", after, re.M)
    return match.group(1), len(items)


def test_readme_and_operations_md_count_the_same_install_steps() -> None:
    words = {"three": 3, "four": 4, "five": 5, "six": 6}
    readme = _numbered_steps(
        (REPO / "README.md").read_text(encoding="utf-8"), "`longhaul-daemon install` does"
    )
    ops = _numbered_steps(OPERATIONS.read_text(encoding="utf-8"), "This does")
    assert words[readme[0]] == readme[1] == words[ops[0]] == ops[1], (readme, ops)


def test_replay_help_and_evaluation_md_name_the_same_pi_first() -> None:
    (subcommands,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    helps = {a.dest: a.help or "" for a in subcommands.choices["replay"]._actions}
    doc = (REPO / "docs" / "evaluation.md").read_text(encoding="utf-8")
    for text in (helps["pi"], doc[doc.index("pi is `--pi`") :]):
        assert text.index("pinned") < text.index("PATH"), text[:200]
    assert "the copy" in helps["shim"] and "'longhaul-daemon install'" in helps["shim"]
