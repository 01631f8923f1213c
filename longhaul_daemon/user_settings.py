"""What the user chose for Longhaul: ``PI_COMPACTOR`` in pi's environment, and ``longhaul.json``.

The compactor is chosen from the *shim's* environment as it arrives with each request; the daemon never
consults its own ``PI_COMPACTOR`` (:func:`choose_compactor`, CONFIG-10). ``longhaul.json`` is read again at
every pass: the agent directory's file, then ``<cwd>/.pi/longhaul.json`` over it key by key, as pi does for
its ``settings.json`` (CONFIG-5). A missing file is absent; a file or value that cannot be used never stops a
pass: the defaults apply and each problem becomes a short code (CONFIG-9). An unknown key is not used but
is reported with the known key it most resembles, being far more often a typo (:func:`unknown_key_problems`).
``//`` comments and trailing commas are allowed (:mod:`longhaul_daemon.pi_json`). Nothing here reads the
daemon's environment: the paths come from the session facts the shim sent.

These settings are the pass's own and reach no other session. A limit every session shares (calls at once to
one provider) is the daemon's setting (``serve --concurrency``); a ``concurrency`` key here applies to nothing
and is reported (``daemon-wide-concurrency``).
"""

from __future__ import annotations

import difflib
import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from longhaul_daemon.pi_json import loads_pi_json

__all__ = [
    "DEFAULT_NARRATIVE_MODE",
    "DEFAULT_RETRY_NOTE_CHARS",
    "KNOWN_KEYS",
    "SETTINGS_FILE",
    "Compactor",
    "NarrativeMode",
    "Settings",
    "SettingsProblem",
    "choose_compactor",
    "load_settings",
    "names_a_compactor",
    "unknown_key_problems",
]

SETTINGS_FILE: Final = "longhaul.json"
DEFAULT_NARRATIVE_MODE: Final = "diff"
DEFAULT_RETRY_NOTE_CHARS: Final = 2000
_MAX_FILE_BYTES: Final = 1024 * 1024  # a settings file is tiny; a huge one is a mistake, not a config
_SPEC = re.compile(r"^[^/\s]+/\S+$")  # provider/modelId; the model id may itself hold slashes

NarrativeMode = Literal[
    "diff", "turns", "auto"
]  # auto: the Diff until it failed the route (passes/narrative_choice.py)
KNOWN_KEYS: Final = ("summarizer", "narrativeMode", "retryNoteChars", "concurrency")
"""Every top-level key :func:`load_settings` reads; any other one is reported as unknown."""
_SHOWN_KEY_CHARS: Final = 64

Compactor = Literal["longhaul", "pi"]
_LONGHAUL_VALUES: Final = frozenset({"", "state"})


def choose_compactor(value: str | None) -> Compactor:
    """Which compactor a session asked for through ``PI_COMPACTOR``.

    Unset, empty or ``state`` selects Longhaul (CONFIG-1); ``pi`` and any other value make Longhaul stand down
    (CONFIG-2, CONFIG-3). Surrounding whitespace and letter case are ignored (CONFIG-4).
    """
    if value is None:
        return "longhaul"
    return "longhaul" if value.strip().lower() in _LONGHAUL_VALUES else "pi"


def names_a_compactor(value: str) -> bool:
    """Whether ``value`` is a spelling CONFIG-1/CONFIG-2 define, not one of CONFIG-3's other values."""
    return value.strip().lower() in (*_LONGHAUL_VALUES, "pi")


@dataclass(frozen=True)
class SettingsProblem:
    """One thing that could not be used, as a code safe for the log: the file's role, never its path."""

    source: Literal["agent", "project"]
    # unreadable, not-json, not-object, too-large, not-regular, bad-<key>, daemon-wide-<key>, unknown-key
    code: str
    path: str = field(default="", compare=False)  # for the user's notice and status; never logged
    key: str = field(default="", compare=False)  # unknown-key: the key as shown to the user; never logged
    guess: str | None = field(default=None, compare=False)  # unknown-key: the known key it resembles


@dataclass(frozen=True)
class Settings:
    """The settings a pass runs with, after both files and the defaults."""

    summarizer: str | None = None  # CONFIG-8: "provider/modelId"; None means the session's own model
    narrativeMode: NarrativeMode = DEFAULT_NARRATIVE_MODE  # CONFIG-6
    retryNoteChars: int = DEFAULT_RETRY_NOTE_CHARS  # CONFIG-7
    problems: tuple[SettingsProblem, ...] = field(default=())
    summarizer_file: str | None = field(default=None, compare=False)  # the file that set ``summarizer``


def _read_object(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """The file's JSON object, or None and a problem code; a missing file is (None, None)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError):  # ValueError: a NUL or a lone surrogate in the path the client sent
        return None, "unreadable"
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):  # a FIFO or device must never block a pass
            return None, "not-regular"
        if info.st_size > _MAX_FILE_BYTES:
            return None, "too-large"
        with os.fdopen(os.dup(fd), "rb") as handle:
            raw = handle.read(_MAX_FILE_BYTES + 1)
    except OSError:
        return None, "unreadable"
    finally:
        os.close(fd)
    try:
        value = loads_pi_json(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None, "not-json"
    if not isinstance(value, dict):
        return None, "not-object"
    return value, None


def _apply(
    values: dict[str, Any], source: Literal["agent", "project"], into: dict[str, Any], path: Path
) -> list[SettingsProblem]:
    """Copy the valid known keys of one file into ``into``; each invalid one becomes a problem."""
    problems: list[SettingsProblem] = []
    if "summarizer" in values:
        spec = values["summarizer"]
        if spec is None or (isinstance(spec, str) and spec.strip() == ""):
            into["summarizer"] = None
            into["summarizer_file"] = None
        elif isinstance(spec, str) and _SPEC.match(spec.strip()) and len(spec) <= 512:
            into["summarizer"] = spec.strip()
            into["summarizer_file"] = str(path)
        else:
            problems.append(SettingsProblem(source, "bad-summarizer", str(path)))
    if "narrativeMode" in values:
        mode = values["narrativeMode"]
        if mode in ("diff", "turns", "auto"):
            into["narrativeMode"] = mode
        else:
            into["narrativeMode"] = DEFAULT_NARRATIVE_MODE  # CONFIG-6: any other value means the default
            problems.append(SettingsProblem(source, "bad-narrativeMode", str(path)))
    if "retryNoteChars" in values:
        chars = values["retryNoteChars"]
        if isinstance(chars, int) and not isinstance(chars, bool) and chars > 0:
            into["retryNoteChars"] = chars
        else:
            into["retryNoteChars"] = DEFAULT_RETRY_NOTE_CHARS  # CONFIG-7: an invalid value means the default
            problems.append(SettingsProblem(source, "bad-retryNoteChars", str(path)))
    if "concurrency" in values:  # the daemon's own setting now: this file cannot narrow other sessions
        problems.append(SettingsProblem(source, "daemon-wide-concurrency", str(path)))
    return problems


def unknown_key_problems(
    values: dict[str, Any], source: Literal["agent", "project"], path: Path
) -> list[SettingsProblem]:
    """One problem per top-level key that is not in :data:`KNOWN_KEYS`, naming the known key it most
    resembles (``"sumarizer"`` -> ``"summarizer"``). The key is the user's own text: it is shown quoted when
    it is short printable ASCII, else only by its length, and it never reaches the log (the code does)."""
    problems: list[SettingsProblem] = []
    for key in values:
        if key in KNOWN_KEYS:
            continue
        if len(key) <= _SHOWN_KEY_CHARS and key.isascii() and key.isprintable():
            shown = json.dumps(key)
            lowered = {known.lower(): known for known in KNOWN_KEYS}
            guesses = difflib.get_close_matches(key.lower(), list(lowered), n=1, cutoff=0.6)
            guess = lowered[guesses[0]] if guesses else None
        else:
            shown, guess = f"a key of {len(key)} characters", None
        problems.append(SettingsProblem(source, "unknown-key", str(path), key=shown, guess=guess))
    return problems


def load_settings(agent_dir: str, cwd: str) -> Settings:
    """Read ``<agent_dir>/longhaul.json``, then ``<cwd>/.pi/longhaul.json`` over it; never raises."""
    merged: dict[str, Any] = {}
    problems: list[SettingsProblem] = []
    sources: tuple[tuple[Literal["agent", "project"], Path], ...] = (
        ("agent", Path(agent_dir) / SETTINGS_FILE),
        ("project", Path(cwd) / ".pi" / SETTINGS_FILE),
    )
    for source, path in sources:
        values, problem = _read_object(path)
        if problem is not None:
            problems.append(SettingsProblem(source, problem, str(path)))
        if values is not None:
            problems.extend(_apply(values, source, merged, path))
            problems.extend(unknown_key_problems(values, source, path))
    return Settings(**merged, problems=tuple(problems))
