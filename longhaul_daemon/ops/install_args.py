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
        "install", help="install the daemon as a systemd user service, and the shim into pi"
    )
    install.add_argument(
        "--dry-run", action="store_true", help="print every file and command; change nothing"
    )
    # Two flags in an exclusive group, not BooleanOptionalAction: "--sandbox --no-sandbox" is refused, not
    # decided by whichever came last.
    sandbox = install.add_mutually_exclusive_group()
    sandbox.add_argument(
        "--sandbox",
        dest="sandbox",
        action="store_const",
        const=True,
        default=None,
        help="install the namespaced sandbox drop-in even where the check says not to "
        "(default: unless unprivileged user namespaces are blocked)",
    )
    sandbox.add_argument(
        "--no-sandbox",
        dest="sandbox",
        action="store_const",
        const=False,
        help="leave the sandbox drop-in out (and remove one installed earlier)",
    )
    uninstall = commands.add_parser("uninstall", help="remove the systemd user service and the shim")
    uninstall.add_argument("--dry-run", action="store_true", help="print every step; change nothing")
