"""Pi's half of Longhaul on a user's machine: the shim's files copied to a stable place, then ``pi install``.

Why a copy: the package may live in a checkout, a pipx or uv tool venv or a user site, and upgrades move or
delete those (``make clean``, a new Python version), while pi keeps whatever path it was given. The copy at
``$XDG_DATA_HOME/longhaul/pi-extension`` (``~/.local/share/longhaul/pi-extension``) never moves, so pi's entry
stays valid and every later ``longhaul-daemon install`` refreshes the files in place. The copy is the shim's
``package.json`` (whose ``"pi"`` key names ``index.ts``), ``index.ts`` and ``lib/*.ts``: pi loads TypeScript
directly and gives the shim its own ``@mariozechner/pi-coding-agent``, ``pi-ai`` and ``typebox``, so no
``node_modules`` is needed. A wheel carries these files as ``longhaul_daemon/pi_shim/`` (``setup.py``); a
checkout or an editable install has them in ``client_shim/``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from longhaul_daemon.ops.steps import PI_TIMEOUT_S, Steps

__all__ = [
    "LONGHAUL_PACKAGE_NAMES",
    "checkout_root",
    "install_shim",
    "other_longhaul_packages",
    "shim_files",
    "shim_source",
    "shim_target",
    "uninstall_shim",
]

LONGHAUL_PACKAGE_NAMES = frozenset({"longhaul-client-shim", "longhaul"})
"""``package.json`` names of the shim and of the repository root, both loadable by ``pi install``."""
_REMOTE_PREFIXES = ("npm:", "git:", "git+", "http://", "https://", "ssh://", "github:")


def checkout_root() -> Path | None:
    """The source checkout this package runs from (a clone, ``make install``'s editable install), if any."""
    root = Path(__file__).resolve().parents[2]
    if (root / "pyproject.toml").is_file() and (root / "client_shim" / "package.json").is_file():
        return root
    return None


def shim_source() -> Path | None:
    """The shim's files as this install has them: in the wheel, else in the checkout."""
    packaged = Path(__file__).resolve().parents[1] / "pi_shim"
    if (packaged / "package.json").is_file():
        return packaged
    root = checkout_root()
    return None if root is None else root / "client_shim"


def shim_files(directory: Path) -> list[str]:
    """The files that make up the shim, relative to ``directory``: what is copied and what is removed."""
    names = [name for name in ("package.json", "index.ts") if (directory / name).is_file()]
    lib = directory / "lib"
    if lib.is_dir():
        names += sorted(f"lib/{p.name}" for p in lib.iterdir() if p.suffix == ".ts" and p.is_file())
    return names


def shim_target(env: Mapping[str, str]) -> Path:
    """``$XDG_DATA_HOME/longhaul/pi-extension`` (if absolute, per XDG), else ``~/.local/share/…``."""
    data = env.get("XDG_DATA_HOME", "")
    if not os.path.isabs(data):
        home = env.get("HOME") or os.path.expanduser("~")
        data = os.path.join(home, ".local", "share")
    return Path(data) / "longhaul" / "pi-extension"


def _agent_dir(env: Mapping[str, str]) -> Path:
    configured = env.get("PI_CODING_AGENT_DIR")
    if configured:
        return Path(configured).expanduser()
    return Path(env.get("HOME") or os.path.expanduser("~")) / ".pi" / "agent"


def other_longhaul_packages(env: Mapping[str, str], target: Path) -> list[str]:
    """Entries of pi's ``packages`` (user settings) that load a Longhaul shim from somewhere but ``target``,
    as written there (``pi remove`` takes them so). Two loaded shims would run every compaction twice."""
    agent = _agent_dir(env)
    try:
        settings = json.loads((agent / "settings.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    packages = settings.get("packages") if isinstance(settings, dict) else None
    found: list[str] = []
    for entry in packages if isinstance(packages, list) else []:
        source = entry.get("source") if isinstance(entry, dict) else entry
        if not isinstance(source, str) or source.startswith(_REMOTE_PREFIXES):
            continue
        directory = (agent / Path(source).expanduser()).resolve()
        if directory == target.resolve():
            continue
        try:
            name = json.loads((directory / "package.json").read_text(encoding="utf-8")).get("name")
        except (OSError, ValueError, AttributeError):
            continue
        if name in LONGHAUL_PACKAGE_NAMES:
            found.append(source)
    return found


def install_shim(steps: Steps) -> None:
    """Copy the shim to its stable place and make pi load it from there (and from nowhere else)."""
    source = shim_source()
    if source is None:
        steps.skipped("pi", "this install carries no copy of the shim (client_shim/); reinstall the package")
        return
    target = shim_target(steps.env)
    wanted = shim_files(source)
    for relative in wanted:
        if not steps.write_file(
            target / relative, (source / relative).read_text(encoding="utf-8"), show=False
        ):
            return
    for relative in shim_files(target):
        if relative not in wanted:  # a file the new version no longer has
            steps.remove(target / relative)
    pi = steps.which("pi")
    if pi is None:
        steps.skipped(f"pi install {target}", "pi is not on PATH")
        steps.later.append(["pi", "install", str(target)])
        return
    for earlier in other_longhaul_packages(steps.env, target):
        steps.say(f"note       pi also loads a Longhaul shim from {earlier}; removing that entry")
        steps.run([pi, "remove", earlier], timeout_s=PI_TIMEOUT_S)
    steps.run([pi, "install", str(target)], timeout_s=PI_TIMEOUT_S)


def uninstall_shim(steps: Steps) -> None:
    """``pi remove`` the copy, then delete it (the directories too, when nothing else is in them)."""
    target = shim_target(steps.env)
    pi = steps.which("pi")
    if pi is None:
        steps.skipped(f"pi remove {target}", "pi is not on PATH")
        steps.later.append(["pi", "remove", str(target)])
    else:
        # pi says "No matching package found" when it was never installed: a note, not a failure.
        steps.run([pi, "remove", str(target)], timeout_s=PI_TIMEOUT_S, may_fail=True)
    for relative in shim_files(target):
        steps.remove(target / relative)
    steps.remove_empty_dirs(target / "lib", target, target.parent)
