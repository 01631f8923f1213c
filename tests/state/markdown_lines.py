"""Read a rendered summary line by line as Markdown would, to find every structural line (issue 12).

Written from CommonMark's and GFM's block starts, apart from the renderer's own rule, so tests can check that
the only structural lines of a summary are the ones the renderer writes: its header, its ``##`` headings, its
file tags and its own bullets, whose content opens nothing further.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from longhaul_daemon.state.render import SECTIONS

__all__ = ["FILE_TAGS", "Structure", "opens_block", "read_structure"]

FILE_TAGS = ("<read-files>", "</read-files>", "<modified-files>", "</modified-files>")
_DIGITS = "0123456789"
_BREAK_ROW = set("-_*=:|+")
_BULLET = re.compile(r"( *)- (.*)\Z")


def opens_block(line: str) -> bool:
    """Whether ``line`` would start a block other than a paragraph: a heading, a blockquote, a table row or
    delimiter row, an HTML block, a list item, a fence, a thematic break or a setext underline. Leading
    blanks of any kind are skipped, since a model reads "\u00a0## Now" as a heading too."""
    body = line.lstrip()
    if not body:
        return False
    first, rest = body[0], body[1:]
    if first == "#":
        hashes = len(body) - len(body.lstrip("#"))
        after = body[hashes : hashes + 1]
        return hashes <= 6 and (after == "" or after.isspace())
    if first in ">|":
        return True
    if first == "<":
        return bool(rest) and ((rest[0].isascii() and rest[0].isalpha()) or rest[0] in "/!?")
    if first in "-+*" and (rest == "" or rest[0].isspace()):
        return True
    if body.startswith(("```", "~~~")):
        return True
    digits = len(body) - len(body.lstrip(_DIGITS))
    if 1 <= digits <= 9 and body[digits : digits + 1] in (".", ")"):
        after = body[digits + 1 : digits + 2]
        if after == "" or after.isspace():
            return True
    return first in _BREAK_ROW and all(ch in _BREAK_ROW or ch.isspace() for ch in body)


@dataclass
class Structure:
    """The structural lines of one summary: where they are and what they are."""

    header: bool = False
    headings: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    bullets: dict[str, Counter[int]] = field(default_factory=dict)  # section -> indent -> count
    forged: list[str] = field(default_factory=list)  # structural lines the renderer did not write


def read_structure(summary: str) -> Structure:
    """Classify every line: the renderer's own structure is recorded, anything else structural is forged.

    A renderer bullet is ``- `` at indent 0 or 2 whose content opens no block; inside a file block every line
    must be a plain path holding no ``<`` or ``>``.
    """
    found = Structure()
    section = ""
    in_files = False
    for number, line in enumerate(summary.split("\n")):
        if number == 0:
            found.header = line.startswith("# Longhaul state after span ")
            continue
        if line.startswith("## ") and line[3:] in SECTIONS:
            found.headings.append(line[3:])
            section = line[3:]
            continue
        if line in FILE_TAGS:
            found.tags.append(line)
            in_files = not line.startswith("</")
            section = line.strip("</>")
            continue
        if in_files:
            if opens_block(line) or "<" in line or ">" in line:
                found.forged.append(line)
            continue
        if not opens_block(line):
            continue
        bullet = _BULLET.match(line)
        if bullet is None or len(bullet.group(1)) not in (0, 2) or opens_block(bullet.group(2)):
            found.forged.append(line)
            continue
        found.bullets.setdefault(section, Counter())[len(bullet.group(1))] += 1
    return found
