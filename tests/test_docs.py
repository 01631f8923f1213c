"""The user documentation stays true to the code it describes.

Issue #13 found the README quoting a notice the shim no longer shows, "(coming with the model step)" before
features that were built, the agent's tools in no user doc, an architecture picture listing two of six
commands and team notes among the user docs. Each of those is checked here against the code itself.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from longhaul_daemon.cli import build_parser

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
