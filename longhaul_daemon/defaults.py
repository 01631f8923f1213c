"""The daemon's own defaults and bounds, shared by the RPC layer, the pass and the CLI.

Standard library only, since ``--help`` and ``status`` read them. What the *user* chose (``PI_COMPACTOR`` and
``longhaul.json``) is in :mod:`longhaul_daemon.user_settings`.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "DEFAULT_GRACE_S",
    "DEFAULT_IDLE_TIMEOUT_S",
    "DEFAULT_MAX_BUFFERED_BYTES",
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_MAX_FRAME",
    "DEFAULT_PASS_BUDGET_S",
    "DEFAULT_STALL_TIMEOUT_S",
    "MAX_BATCH",
    "MAX_CLOSED_ERRORS",
    "MAX_CONCURRENCY",
    "MAX_IN_FLIGHT_PER_CONNECTION",
    "MAX_STATE_COMMANDS",
]

DEFAULT_PASS_BUDGET_S: Final = 300.0
"""Time budget of one pass, in seconds; a pass that overruns it answers with fallback ``timeout``."""

MAX_CONCURRENCY: Final = 256
"""Calls at once to one provider, at most (``serve --concurrency``); more is a typo, not a plan."""

DEFAULT_GRACE_S: Final = 10.0
"""How long SIGTERM waits for in-flight requests before cancelling them, in seconds."""

DEFAULT_MAX_FRAME: Final = 256 * 1024 * 1024
"""Largest accepted NDJSON frame in bytes. A ``compact`` that names the session file is a few KB; one that
carries the branch inline (``pi --no-session``, or a refused file) is as large as the session, and a session
of 200 MB must still go through."""

MAX_STATE_COMMANDS: Final = 500
"""LEDGER-12: the newest commands the State carries from span to span; span records hold every one."""

MAX_CLOSED_ERRORS: Final = 200
"""LEDGER-12: closed errors the State carries beside every open one."""

DEFAULT_MAX_CONNECTIONS: Final = 256
"""Connections served at once; one more is answered -32005 ("Server busy") and closed. Each pi process opens
one per call and closes it with the reply, so 64 concurrent passes with their other calls stay far below."""

DEFAULT_MAX_BUFFERED_BYTES: Final = 512 * 1024 * 1024
"""Bytes held at once in read buffers and in frames being handled, across all connections: two frames at
the cap. A connection whose bytes would pass it is answered -32005 and closed."""

DEFAULT_IDLE_TIMEOUT_S: Final = 30.0
"""A connection with no request running and no frame begun is closed after this long."""

DEFAULT_STALL_TIMEOUT_S: Final = 30.0
"""A frame that has begun and gets no byte for this long is cut, and its connection closed."""

MAX_BATCH: Final = 16
"""Largest accepted JSON-RPC batch."""

MAX_IN_FLIGHT_PER_CONNECTION: Final = 8
"""Requests one connection may have running before the daemon stops reading from it (backpressure)."""
