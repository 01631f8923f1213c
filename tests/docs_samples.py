"""The ``status`` samples in docs/operations.md, printed by the code itself from one fixed status.

docs/operations.md once showed protocol 1 (the daemon said 2) and a key list four keys short. Its samples are
now whatever :func:`format_status` and ``status --json`` print for :data:`SAMPLE`: each sits in a fenced block
right after a ``<!-- generated: NAME -->`` line, ``tests/test_docs.py`` fails when one is stale, and

    .venv/bin/python tests/docs_samples.py --write

rewrites them in place.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from longhaul_daemon import __version__
from longhaul_daemon.ops.status_command import not_running_document
from longhaul_daemon.ops.status_view import format_status
from longhaul_daemon.ops.user_manager import manual_start_lines
from longhaul_daemon.protocol import (
    PROTOCOL_VERSION,
    ConfigStatus,
    LogFileStatus,
    NarrativeChoiceStatus,
    PassCounts,
    RouteHealth,
    StatusResult,
)

__all__ = ["OPERATIONS", "SAMPLE", "expected_blocks", "generated_blocks"]

OPERATIONS = Path(__file__).resolve().parents[1] / "docs" / "operations.md"
_MARKER = re.compile(r"<!-- generated: ([a-z-]+) -->\n```[a-z]*\n(.*?)```\n", re.S)
_AGENT = "/home/me/.pi/agent"

SAMPLE = StatusResult(
    version=__version__,
    protocolVersion=PROTOCOL_VERSION,
    pid=15691,
    uptimeS=754.2,
    socket="/run/user/1000/longhaul/daemon.sock",
    socketActivated=True,
    passes=PassCounts(whole=6, narrativeLess=1, fallback=1),
    inFlight=0,
    sessionsSeen=2,
    sessionFiles=2,
    sessionFilesWarmed=1,
    routes=[
        RouteHealth(
            route="anthropic/claude-haiku-4-5",
            lastSuccess="2026-12-03T09:41:07+00:00",
            p50Ms=4210,
            p90Ms=7950,
            calls=9,
        )
    ],
    logFiles=[LogFileStatus(path=f"{_AGENT}/logs/compaction-state.jsonl", bytes=18233)],
    config=ConfigStatus(
        summarizer="anthropic/claude-haiku-4-5",
        summarizerFile=f"{_AGENT}/longhaul.json",
        used="anthropic/claude-haiku-4-5",
        at="2026-12-03T09:41:09+00:00",
        problems=[
            '"narativeMode" in /home/me/csv-export/.pi/longhaul.json is not a Longhaul setting '
            '(did you mean "narrativeMode"?); it is ignored'
        ],
    ),
    narrative=[
        NarrativeChoiceStatus(
            route="anthropic/claude-haiku-4-5",
            stage="diff",
            diffFailuresInRow=1,
            lastDiffFailure="unlabeled-messages",
        )
    ],
)
"""A daemon under systemd after a few passes, one of them with a misspelt key in the project's file and
``"narrativeMode": "auto"`` in the agent's, whose one narrative-less pass was the Diff's answer failing."""


def _not_running() -> dict[str, object]:
    socket = "/run/user/1000/longhaul/daemon.sock"
    hint = [
        "Nothing will start the daemon for you here: systemctl is not on PATH.",
        *manual_start_lines({"PATH": str(Path(sys.executable).parent)}),  # where longhaul-daemon is
    ]
    return not_running_document(Path(socket), "not-running", f"no daemon is running on {socket}", hint)


def expected_blocks() -> dict[str, str]:
    """Each generated block's text, by its marker's name."""
    return {
        "status-table": format_status(SAMPLE) + "\n",
        "status-json": json.dumps(
            {"running": True, **SAMPLE.model_dump(mode="json")}, indent=2, sort_keys=True
        )
        + "\n",
        "status-not-running-json": json.dumps(_not_running(), indent=2, sort_keys=True) + "\n",
    }


def generated_blocks(text: str) -> dict[str, str]:
    """The generated blocks a doc holds now, by name."""
    return {match.group(1): match.group(2) for match in _MARKER.finditer(text)}


def _rewrite(text: str) -> str:
    wanted = expected_blocks()

    def fill(match: re.Match[str]) -> str:
        fence = match.group(0).split("\n", 2)[1]
        return f"<!-- generated: {match.group(1)} -->\n{fence}\n{wanted[match.group(1)]}```\n"

    return _MARKER.sub(fill, text)


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit(f"usage: {sys.argv[0]} --write   (rewrites the generated blocks of {OPERATIONS})")
    OPERATIONS.write_text(_rewrite(OPERATIONS.read_text(encoding="utf-8")), encoding="utf-8")
