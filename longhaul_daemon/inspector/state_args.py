"""The ``state`` arguments, apart from the fold so building the CLI's parser loads neither it nor pydantic.

Every ``longhaul-daemon`` invocation registers ``state``; :mod:`longhaul_daemon.inspector.command` (the fold,
the views, the state model) is imported only when it runs.
"""

from __future__ import annotations

import argparse
from typing import Any

from longhaul_daemon.inspector.session_file import AGENT_DIR_ENV

__all__ = ["add_state_parser"]

_EPILOG = f"""\
Reads the transcript only: no daemon, no model, no network, no git, and the file is never written.
Without FILE it reads the most recently modified sessions/*/*.jsonl in pi's agent directory
(${AGENT_DIR_ENV}, else ~/.pi/agent). The branch shown ends at the file's last entry, as pi resumes it.
Everything printed from the transcript is sanitized (text) or JSON-escaped with ensure_ascii (--json).

exit status:
  0  the state (or the spans, or the anomalies) was printed
  1  no transcript could be read: a missing, unreadable or empty file, a directory, a file that is not a
     pi session (no session header line), or no transcript in the agent directory
  2  usage error: bad arguments, or --span N where the branch has no Longhaul span N
"""


def add_state_parser(commands: Any) -> None:
    """Register ``state`` on the CLI's subparsers object (``argparse._SubParsersAction``)."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "state",
        help="print the Longhaul state carried in a pi transcript (no daemon, no model)",
        description="Print the Longhaul state a pi session file carries, as the next pass would fold it.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "file", nargs="?", metavar="FILE.jsonl", help="a pi session file (default: the newest one)"
    )
    parser.add_argument(
        "--spans",
        action="store_true",
        help="every span: compaction entry, events, commands, errors, narrative, how it closed",
    )
    parser.add_argument(
        "--anomalies", action="store_true", help="what the fold could not use, and why (entry id and code)"
    )
    parser.add_argument("--span", type=int, metavar="N", help="the state as it was at span N (from 1)")
    parser.add_argument(
        "--json", action="store_true", help="print JSON (combines with --span, --spans and --anomalies)"
    )
