"""The daemon's exceptions, so a client, the shell and the retry loop decide by class, never by message text.

Every exception class the package defines, with its JSON-RPC code or exit status; this module holds the
``LonghaulError`` root, ``DomainError`` and ``StartupError`` branches, models/call_errors.py draws the
``ModelCallError`` branch (ten classes, ``ShimConnectionLost`` of models/via_pi.py among them)::

    LonghaulError                  base of what the daemon raises on purpose
    ├── DomainError                -32000 answered to the client; message sent verbatim: no transcript text
    │   ├── DeadlineExceeded       -32001 the request ran past its deadline
    │   ├── Busy                   -32002 a pass for this session already runs (PASS-21)
    │   └── SessionFileRefused     -32004 the session file will not be read (data: reason)
    ├── StartupError               exit 1, ``serve`` cannot start
    │   └── UnsafeSocketDir, SocketPathInvalid, AlreadyRunning
    ├── ModelCallError             one model call failed (models/call_errors.py)
    └── ShimErrorReply             the shim's model.complete error (models/via_pi.py) -> ModelCallError
    Exception, each caught in or next to the module that raises it:
      FrameTooLarge, ByteBudgetExceeded   server/framing.py; answered -32600 / -32005, connection closed
      InvalidEnvelope (ValueError)        rpc/jsonrpcserver_adapter.py; the library answers -32600
      SinkRefused                         log/sink.py; the record is dropped and counted
      TurnsUnavailable, ContextFull       turns/conversation.py; the pass runs the Diff / turn not sent
      DaemonNotRunning, StatusQueryFailed status_client.py; ``status`` exits 3 / 1
      TranscriptError, BadKey (ValueError) inspector/session_file.py, evaluation/key.py; one printed line
      PiError, DaemonError (RuntimeError) evaluation/harness/; a problem code in replay and score

Wire codes with no class (JSON-RPC 2.0): -32700 parse error, -32600 invalid request (also "Frame too
large", "Batch too large"), -32601 method not found, -32602 invalid params (data: ``{type, loc, msg}`` items,
never the input), -32603 internal error (data: ``{"errorId": …}``, never the text), -32005 server busy
(data: ``{"limit": "connections"|"buffered-bytes"}``, no id, sent just before the connection closes).
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
