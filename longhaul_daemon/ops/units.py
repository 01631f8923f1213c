"""The systemd user units ``install`` writes: where they go, what ExecStart runs, whether the sandbox fits.

The unit files themselves are package data (``longhaul_daemon/units/``), byte for byte the ones in the
repository's ``systemd/`` directory; the only line ``install`` changes is the service's ``ExecStart=``, which
it points at the executable it was run as, so the service runs the same install the user just ran.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

__all__ = [
    "DROPIN_DIR",
    "DROPIN_NAME",
    "SERVICE",
    "SOCKET",
    "USERNS_RESTRICTION",
    "SandboxChoice",
    "UnitFile",
    "choose_sandbox",
    "daemon_argv",
    "exec_start_line",
    "render_units",
    "unit_dir",
    "unit_template",
]

SOCKET = "longhaul-daemon.socket"
SERVICE = "longhaul-daemon.service"
DROPIN_DIR = f"{SERVICE}.d"
DROPIN_NAME = "50-sandbox.conf"
USERNS_RESTRICTION = Path("/proc/sys/kernel/apparmor_restrict_unprivileged_userns")
_EXECUTABLE = "longhaul-daemon"


@dataclass(frozen=True)
class UnitFile:
    """One file to write, relative to the user unit directory."""

    relative: str
    content: str


@dataclass(frozen=True)
class SandboxChoice:
    """Whether the namespaced drop-in is installed, and why (one line for the user)."""

    install: bool
    reason: str


def unit_template(relative: str) -> str:
    """A unit file as shipped, by path relative to the unit directory (``longhaul-daemon.socket`` …)."""
    node = resources.files("longhaul_daemon").joinpath("units")
    for part in relative.split("/"):
        node = node.joinpath(part)
    return node.read_text(encoding="utf-8")


def unit_dir(env: Mapping[str, str]) -> Path:
    """``$XDG_CONFIG_HOME/systemd/user`` (if absolute, per XDG), else ``~/.config/systemd/user``."""
    config = env.get("XDG_CONFIG_HOME", "")
    if not os.path.isabs(config):
        home = env.get("HOME") or os.path.expanduser("~")
        config = os.path.join(home, ".config")
    return Path(config) / "systemd" / "user"


def daemon_argv(
    argv0: str | None = None, executable: str | None = None, *, cwd: str | None = None
) -> list[str]:
    """How to start *this* install: the ``longhaul-daemon`` script that is running, else the one beside this
    interpreter, else ``python -m longhaul_daemon``. Symlinks are kept (not resolved), so an upgrade that
    repoints ``~/.local/bin/longhaul-daemon`` carries the service along."""
    argv0 = sys.argv[0] if argv0 is None else argv0
    executable = sys.executable if executable is None else executable
    base = os.getcwd() if cwd is None else cwd
    if os.path.basename(argv0) == _EXECUTABLE:
        candidate = os.path.normpath(os.path.join(base, argv0))
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return [candidate]
    if executable:
        python = os.path.normpath(os.path.join(base, executable))
        beside = os.path.join(os.path.dirname(python), _EXECUTABLE)
        if os.path.isfile(beside) and os.access(beside, os.X_OK):
            return [beside]
        return [python, "-m", "longhaul_daemon"]
    raise RuntimeError("cannot tell which executable runs longhaul-daemon (no argv[0], no sys.executable)")


def _quote_word(word: str, *, command: bool) -> str:
    """One ExecStart word: ``%`` escaped, and ``$`` in arguments (systemd expands variables there, not in
    the command path); quoted when it holds blanks, quotes, backslashes or ``;``."""
    escaped = word.replace("%", "%%")
    if not command:
        escaped = escaped.replace("$", "$$")
    if escaped and not any(ch.isspace() or ch in "\"'\\;" for ch in escaped):
        return escaped
    inner = escaped.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{inner}"'


def exec_start_line(argv: Sequence[str]) -> str:
    """``ExecStart=<argv…> serve`` with systemd's quoting and specifier escaping."""
    words = [*argv, "serve"]
    return "ExecStart=" + " ".join(_quote_word(word, command=i == 0) for i, word in enumerate(words))


def render_units(argv: Sequence[str], *, sandbox: bool) -> list[UnitFile]:
    """The socket, the service with ``ExecStart`` pointing at ``argv``, and (if asked) the sandbox drop-in."""
    service_lines = unit_template(SERVICE).splitlines(keepends=True)
    replaced = 0
    for index, line in enumerate(service_lines):
        if line.startswith("ExecStart="):
            service_lines[index] = exec_start_line(argv) + "\n"
            replaced += 1
    if replaced != 1:
        raise RuntimeError(f"the shipped {SERVICE} has {replaced} ExecStart= lines, expected exactly one")
    files = [UnitFile(SOCKET, unit_template(SOCKET)), UnitFile(SERVICE, "".join(service_lines))]
    if sandbox:
        dropin = f"{DROPIN_DIR}/{DROPIN_NAME}"
        files.append(UnitFile(dropin, unit_template(dropin)))
    return files


def choose_sandbox(requested: bool | None, *, restriction: Path = USERNS_RESTRICTION) -> SandboxChoice:
    """``--sandbox``/``--no-sandbox`` win; else install the drop-in unless user namespaces are blocked."""
    if requested is True:
        return SandboxChoice(True, "sandbox drop-in requested with --sandbox")
    if requested is False:
        return SandboxChoice(False, "sandbox drop-in left out (--no-sandbox)")
    try:
        value = restriction.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        value = ""
    if value == "1":
        return SandboxChoice(
            False,
            f"sandbox drop-in left out: {restriction} reads 1 (unprivileged user namespaces are blocked, "
            "so the sandbox would stop the service from starting)",
        )
    return SandboxChoice(True, "sandbox drop-in included (unprivileged user namespaces are not blocked)")
