"""The progress bar draws on a terminal only, and shows counts and hashed names, never a path."""

from __future__ import annotations

import io
from pathlib import Path

from longhaul_daemon.evaluation.common import Progress, path_hash


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_a_bar_that_ends_on_a_clean_line() -> None:
    stream = _Terminal()
    with Progress("replay", 4, stream) as bar:
        bar.advance("abc123def456")
        bar.advance("abc123def456 step 3/9")
    drawn = stream.getvalue()
    assert "replay [######..................] 1/4" in drawn
    assert "replay [############............] 2/4" in drawn and "step 3/9" in drawn
    assert drawn.endswith("\r")  # the last line was blanked, so what follows starts at column 0
    last = drawn.rsplit("\r", 2)[-2]
    assert last.strip() == ""


def test_a_pipe_gets_nothing() -> None:
    stream = io.StringIO()
    with Progress("score", 3, stream) as bar:
        bar.advance("x")
        bar.update(3, "done", force=True)
    assert stream.getvalue() == ""


def test_the_same_path_always_hashes_the_same_and_to_twelve_hex_digits() -> None:
    name = path_hash(Path("/home/someone/client/x.jsonl"))
    assert len(name) == 12 and int(name, 16) >= 0
    assert name == path_hash(Path("/home/someone/client/x.jsonl"))
    assert name != path_hash(Path("/home/someone/client/y.jsonl"))
