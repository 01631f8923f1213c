"""The daemon's exceptions: each class with its JSON-RPC code or exit status, and where the others stay.

:class:`LonghaulError` is the root of what a client, the shell or the retry loop decides on; this module holds
the root and the classes that leave the process, :mod:`longhaul_daemon.models.call_errors` the failures of
one model call. The whole tree::

    LonghaulError                       base of everything the daemon raises on purpose
    ├── DomainError                     -32000  answered to the client as a JSON-RPC error
    │   ├── DeadlineExceeded            -32001  a request ran past its deadline
    │   ├── Busy                        -32002  a pass for this session is already running (PASS-21)
    │   └── SessionFileRefused          -32004  the named session file will not be read (data: reason)
    ├── StartupError                    (exit 1) ``serve`` cannot start; never sent over the wire
    │   ├── UnsafeSocketDir             the socket's directory is a symlink, not ours, or shared
    │   ├── SocketPathInvalid           the socket path is too long, or something else sits there
    │   └── AlreadyRunning              another daemon holds the lock or answers on the socket
    ├── ModelCallError                  a model call failed (models/call_errors.py draws its branch)
    └── ShimErrorReply                  the shim answered ``model.complete`` with an error (models/via_pi.py);
                                        turned into a ModelCallError by its ``data.kind``

The other exceptions stay inside the module that raises them and never reach a client, a log line with
text, or an exit status of their own: ``FrameTooLarge`` and ``ByteBudgetExceeded`` (server/framing.py:
the connection is answered -32600 or -32005 and closed), ``InvalidEnvelope`` (rpc/jsonrpcserver_adapter.py:
the library answers -32600), ``SinkRefused`` (log/sink.py: the record is dropped and counted),
``TurnsUnavailable`` and ``ContextFull`` (turns/conversation.py: the pass runs the Diff, or the turn is not
sent), ``DaemonNotRunning`` and ``StatusQueryFailed`` (status_client.py: exit 3 or 1), and the evaluation
commands' ``TranscriptError`` (inspector/session_file.py) and ``BadKey`` (evaluation/key.py), each printed as
one line by its command, and the harness's ``PiError`` (evaluation/harness/pi_rpc.py) and ``DaemonError``
(evaluation/harness/daemon_process.py), which ``replay`` and ``score`` report as a transcript's problem code.

Wire codes the RPC layer produces without an exception class (JSON-RPC 2.0 reserved range):
-32700 parse error, -32600 invalid request (also "Frame too large" and "Batch too large"), -32601 method not
found, -32602 invalid params (data: a list of ``{type, loc, msg}``, never the input), -32603 internal error
(data: ``{"errorId": …}``, never the exception's text); and -32005 server busy (data: ``{"limit":
"connections"|"buffered-bytes"}``), sent with no id just before the daemon closes a connection it cannot take.

Messages of ``DomainError`` go to the client verbatim, so they must never contain transcript text; ``data``
must be JSON-serialisable.
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "SERVER_BUSY",
    "AlreadyRunning",
    "Busy",
    "DeadlineExceeded",
    "DomainError",
    "LonghaulError",
    "SessionFileRefused",
    "SocketPathInvalid",
    "StartupError",
    "UnsafeSocketDir",
]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SERVER_BUSY = -32005


class LonghaulError(Exception):
    """Base class of every error the daemon raises on purpose."""


class DomainError(LonghaulError):
    """An error the client is told about: ``code``, a fixed ``message`` and optional JSON ``data``."""

    code: ClassVar[int] = -32000
    default_message: ClassVar[str] = "Server error"

    def __init__(self, message: str | None = None, *, data: Any = None) -> None:
        self.message = message if message is not None else self.default_message
        self.data = data
        super().__init__(self.message)


class DeadlineExceeded(DomainError):
    """The request did not finish within its deadline."""

    code: ClassVar[int] = -32001
    default_message: ClassVar[str] = "Deadline exceeded"


class Busy(DomainError):
    """A pass for the same session is still running; the shim falls back with reason ``busy`` (PASS-21)."""

    code: ClassVar[int] = -32002
    default_message: ClassVar[str] = "Busy"


class SessionFileRefused(DomainError):
    """The session file named in a request cannot be used; ``data.reason`` says why, and the shim sends the
    branch inline instead. The reasons are listed in docs/protocol.md."""

    code: ClassVar[int] = -32004
    default_message: ClassVar[str] = "Session file refused"

    def __init__(self, reason: str) -> None:
        super().__init__(f"Session file refused: {reason}", data={"reason": reason})
        self.reason = reason


class StartupError(LonghaulError):
    """``serve`` cannot start; the CLI prints the message on stderr and exits 1."""


class UnsafeSocketDir(StartupError):
    """The socket's directory is a symlink, owned by another user, or shared with other users."""


class SocketPathInvalid(StartupError):
    """The socket path cannot be used: too long for AF_UNIX, or a non-socket file sits there."""


class AlreadyRunning(StartupError):
    """Another daemon holds the instance lock, or something already answers on the socket."""
