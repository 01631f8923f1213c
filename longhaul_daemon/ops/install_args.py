"""The ``install`` and ``uninstall`` arguments, apart from the installer so the parser is cheap to build.

Every ``longhaul-daemon`` invocation registers these subcommands; :mod:`longhaul_daemon.ops.install` (with
``subprocess``, ``shutil`` and the unit templates) is imported only when one of them runs.
"""

from __future__ import annotations

import argparse

__all__ = ["add_install_commands"]


def add_install_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``install`` and ``uninstall`` on the CLI's subcommand table."""
    install = commands.add_parser(
        "install", help="install the daemon as a systemd user service, and the shim"
    )
    install.add_argument(
        "--dry-run", action="store_true", help="print every file and command; change nothing"
    )
    install.add_argument(
        "--sandbox",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="install the namespaced sandbox drop-in (default: unless user namespaces are blocked)",
    )
    uninstall = commands.add_parser("uninstall", help="remove the systemd user service and the shim")
    uninstall.add_argument("--dry-run", action="store_true", help="print every step; change nothing")
