"""The arguments of ``facts``, ``replay``, ``score`` and ``corpus``, kept apart from the code that runs them.

Every ``longhaul-daemon`` invocation builds the whole parser, so this module loads the standard library only;
each command's own module (and pydantic, the fold, the replay machinery) is imported once it is chosen.
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["EVALUATION_COMMANDS", "add_evaluation_parsers"]

EVALUATION_COMMANDS = frozenset({"facts"})

_FACTS_EPILOG = """\
For every recorded compaction: the values (tokens of 3 or more characters holding a digit) first seen in
that span's tool output, how many of them a later message used again, and how many the compaction's summary
kept; totals per compactor (longhaul, pi, other). No model, no network. Transcripts are named by a hash of
their path. A corpus answer key beside a file (FILE.key.json) adds the key's own values.

exit status: 0 every transcript read; 1 none found, or one could not be read; 2 usage error
"""

_RAW = argparse.RawDescriptionHelpFormatter


def add_evaluation_parsers(commands: Any) -> None:
    """Register the evaluation commands on the CLI's subparsers object."""
    _add_facts(commands)


def _add_facts(commands: Any) -> None:
    facts = commands.add_parser(
        "facts",
        help="count the values each recorded compaction kept (no model)",
        description="Count, per recorded compaction, the values a later message used and the summary kept.",
        epilog=_FACTS_EPILOG,
        formatter_class=_RAW,
    )
    facts.add_argument("files", nargs="*", metavar="FILE.jsonl", help="default: every transcript of pi")
    facts.add_argument("--json", action="store_true", help="print JSON")
