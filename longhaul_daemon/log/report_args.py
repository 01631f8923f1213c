"""The ``report`` arguments, apart from the digest so building the CLI's parser loads none of the log code.

Every ``longhaul-daemon`` invocation registers ``report``; :mod:`longhaul_daemon.log.report` is imported only
when it runs.
"""

from __future__ import annotations

import argparse

__all__ = ["add_report_parser"]


def add_report_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``longhaul-daemon report [--agent-dir DIR]`` on the CLI's subcommand table."""
    report = commands.add_parser("report", help="print a digest of the newest log records, safe to share")
    report.add_argument(
        "--agent-dir",
        metavar="DIR",
        help="pi's agent directory (default: $PI_CODING_AGENT_DIR, else ~/.pi/agent)",
    )
