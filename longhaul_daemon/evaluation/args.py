"""The arguments of ``facts``, ``replay``, ``score`` and ``corpus``, kept apart from the code that runs them.

Every ``longhaul-daemon`` invocation builds the whole parser, so this module loads the standard library only;
each command's own module (and pydantic, the fold, the replay machinery) is imported once it is chosen.
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["EVALUATION_COMMANDS", "add_evaluation_parsers"]

EVALUATION_COMMANDS = frozenset({"facts", "replay", "score", "corpus"})

_FACTS_EPILOG = """\
For every recorded compaction: the values (tokens of 3 or more characters holding a digit) first seen in
that span's tool output, how many of them a later message used again, and how many the compaction's summary
kept; totals per compactor (longhaul, pi, other). No model, no network. Transcripts are named by a hash of
their path. A corpus answer key beside a file (FILE.key.json) adds the key's own values.

A file that cannot be read is named on stderr with the reason; the report lists it by hash.

exit status: 0 every transcript read; 1 none found, or one could not be read; 2 usage error
"""

_REPLAY_EPILOG = """\
Each transcript runs again through a real pi with the Longhaul shim and a private daemon. Only the model is
fake: it answers with the recorded assistant messages, tool calls get their recorded results (nothing is
executed), and pi compacts where the recording did. Everything runs in a fresh temporary agent dir on
loopback, pi offline. Prints counts only; transcripts are named by a hash of their path.

exit status: 0 replayed with no handler error; 1 pi or the shim not found, a file named is no pi
transcript (each is named on stderr, before anything runs), or a transcript could not be replayed;
2 usage error; 3 an extension handler raised during a replay
"""

_SCORE_EPILOG = """\
At every recorded compaction both compactors summarize the same span with the same model: the transcript
is replayed twice (Longhaul, then PI_COMPACTOR=pi) and pi switches to MODEL for each compaction. The model
is found in pi's own configuration (models.json and auth.json of --agent-dir). Probes are checked by code:
standing rules verbatim, lifted rules not shown as active, failing commands with their exit codes, values
used again later, the task in progress. THIS CALLS THE MODEL AND COSTS MONEY: it prints how many calls it
will make and refuses to start without --yes.

exit status: 0 scored; 1 a file named is no pi transcript (checked before anything else), pi, the shim or
the model not found, or a replay failed; 2 usage error or no --yes
"""


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text!r}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds: {text!r}")
    return value


def _model_spec(text: str) -> str:
    provider, sep, model_id = text.partition("/")
    if not sep or not provider.strip() or not model_id.strip():
        raise argparse.ArgumentTypeError(f"not a provider/modelId spec: {text!r}")
    return text


def _pi_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--pi",
        metavar="PATH",
        help="the pi executable (default: this checkout's pinned pi, client_shim/node_modules/.bin/pi, "
        "else pi on PATH)",
    )
    parser.add_argument(
        "--shim",
        metavar="DIR",
        help="the Longhaul pi extension (default: the one this install carries, else the copy "
        "'longhaul-daemon install' made in ~/.local/share/longhaul/pi-extension)",
    )
    parser.add_argument(
        "--keep", metavar="DIR", help="copy each replayed session file (and its key) into DIR"
    )
    parser.add_argument(
        "--step-timeout",
        type=_seconds,
        default=600.0,
        metavar="SECONDS",
        help="longest wait for one prompt or one compaction (default 600)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON")


_RAW = argparse.RawDescriptionHelpFormatter


def add_evaluation_parsers(commands: Any) -> None:
    """Register the evaluation commands on the CLI's subparsers object."""
    _add_facts(commands)
    _add_replay(commands)
    _add_score(commands)
    _add_corpus(commands)


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


def _add_replay(commands: Any) -> None:
    replay = commands.add_parser(
        "replay",
        help="replay recorded transcripts through real pi with Longhaul (fake model, offline)",
        description="Replay pi transcripts through real pi with Longhaul loaded; only the model is fake.",
        epilog=_REPLAY_EPILOG,
        formatter_class=_RAW,
    )
    replay.add_argument("files", nargs="+", metavar="FILE.jsonl")
    replay.add_argument(
        "--compactor",
        choices=("longhaul", "pi"),
        default="longhaul",
        help="who compacts in the replay (pi: PI_COMPACTOR=pi; default longhaul)",
    )
    replay.add_argument(
        "--keep-recent-tokens",
        type=_positive_int,
        metavar="N",
        help="pi's keepRecentTokens (default: the median kept window of the recording)",
    )
    _pi_options(replay)


def _add_score(commands: Any) -> None:
    score = commands.add_parser(
        "score",
        help="score Longhaul against pi's own compaction with a real model (costs money)",
        description="Score Longhaul and pi's own compaction on the same spans with the same model.",
        epilog=_SCORE_EPILOG,
        formatter_class=_RAW,
    )
    score.add_argument("files", nargs="+", metavar="FILE.jsonl")
    score.add_argument(
        "--model", type=_model_spec, metavar="PROVIDER/ID", help="the model both compactors use"
    )
    score.add_argument("--yes", action="store_true", help="confirm the model calls")
    score.add_argument("--runs", type=_positive_int, default=1, metavar="N", help="replicates (default 1)")
    score.add_argument(
        "--jobs", type=_positive_int, default=1, metavar="N", help="replays at once (default 1)"
    )
    score.add_argument(
        "--agent-dir",
        metavar="DIR",
        help="the pi agent dir whose models.json and auth.json name MODEL (default: pi's own)",
    )
    _pi_options(score)


def _add_corpus(commands: Any) -> None:
    corpus = commands.add_parser(
        "corpus",
        help="write synthetic pi sessions with an answer key (for score, facts and the bench)",
        description="Write realistic pi 0.73.1 session files, each with its answer key in FILE.key.json.",
        epilog="exit status: 0 written; 1 OUT_DIR or a file in it could not be written; 2 usage error, or "
        "OUT_DIR is a file or already holds session files",
    )
    corpus.add_argument("out_dir", metavar="OUT_DIR")
    corpus.add_argument("--sessions", type=_positive_int, default=20, metavar="N", help="default 20")
    corpus.add_argument("--seed", type=int, default=1, metavar="S", help="default 1")
    corpus.add_argument(
        "--max-compactions",
        type=_positive_int,
        default=10,
        metavar="N",
        help="chains run from 1 to N compactions (default 10)",
    )
