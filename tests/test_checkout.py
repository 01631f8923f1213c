"""A clean clone of the repository is something `make` can build on.

A worktree once linked `.venv` to another checkout's venv and the link was committed: on a fresh clone
the link pointed at itself, `make` could not create the venv, and CI died before running a test. These
checks read what git tracks, so such a commit fails here first.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
_SYMLINK_MODE = "120000"
# Built or installed on each machine by `make install`; never part of a commit.
_MACHINE_LOCAL = (".venv", "client_shim/node_modules", "node_modules")


def _tracked() -> list[tuple[str, str]]:
    """(mode, path) for every file git tracks in this checkout."""
    listing = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "--stage", "-z"],
        check=True,
        capture_output=True,
    ).stdout.decode("utf-8")
    entries = []
    for record in filter(None, listing.split("\0")):
        meta, path = record.split("\t", 1)
        entries.append((meta.split()[0], path))
    return entries


def test_no_symlink_is_tracked() -> None:
    links = [path for mode, path in _tracked() if mode == _SYMLINK_MODE]
    assert links == [], f"symbolic links are tracked and break a fresh clone: {links}"


def test_nothing_machine_local_is_tracked() -> None:
    local = [
        path
        for _, path in _tracked()
        if any(path == prefix or path.startswith(prefix + "/") for prefix in _MACHINE_LOCAL)
    ]
    assert local == [], f"files `make install` builds are tracked: {local}"
