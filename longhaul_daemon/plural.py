"""Counts in the sentences the commands print, so none says "1 entries": "1 entry", "3 entries"."""

from __future__ import annotations

__all__ = ["counted"]


def counted(count: int, word: str, plural: str | None = None) -> str:
    """``count`` and ``word``, the word in its plural form (``plural``, else ``word + "s"``) unless one."""
    return f"{count} {word}" if count == 1 else f"{count} {plural or word + 's'}"
