"""The daemon's life from socket to exit: accept loop, systemd notify and watchdog, signals, graceful drain.

Shutdown (SIGTERM/SIGINT, or :meth:`DaemonHandle.stop` for a daemon run inside a program): ``STOPPING=1``,
stop accepting and close the listener, wait up to ``grace_s`` for in-flight *requests* (not idle
connections) to finish, cancel whatever is left, close the HTTP client every pass shared, then unlink the
socket unless systemd owns it. The daemon keeps no truth of its own (the transcript does), so a cancelled
pass only costs the shim a fallback.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import importlib
import json
import logging
import os
import signal
import sys
import time
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TextIO

import anyio
import anyio.to_thread
import structlog
from anyio.abc import SocketListener, SocketStream, TaskGroup, TaskStatus

from longhaul_daemon import __version__, systemd
from longhaul_daemon.collector import MAX_PAUSE_S, PAUSE, collect_all
from longhaul_daemon.defaults import (
    DEFAULT_GRACE_S,
    DEFAULT_IDLE_TIMEOUT_S,
    DEFAULT_MAX_BUFFERED_BYTES,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_FRAME,
    DEFAULT_PASS_BUDGET_S,
    DEFAULT_STALL_TIMEOUT_S,
    MAX_IN_FLIGHT_PER_CONNECTION,
)
from longhaul_daemon.log.fields import shape_log_fields
from longhaul_daemon.models.http import make_shared_client
from longhaul_daemon.models.limits import ProviderLimits
from longhaul_daemon.rpc import Dispatcher, RunPass, Services, build_methods
from longhaul_daemon.rpc.registry import internal_error
from longhaul_daemon.rpc.services import real_pass
from longhaul_daemon.secrets.redaction import redact_log_event
from longhaul_daemon.server.connection import ConnectionLimits, RequestTracker, ServerLoad, serve_connection
from longhaul_daemon.server.listener import OpenedListener, open_listener

__all__ = [
    "COLLECT_EVERY_S",
    "GC_THRESHOLDS",
    "MMAP_THRESHOLD_BYTES",
    "SWITCH_INTERVAL_S",
    "WORKER_THREADS",
    "DaemonHandle",
    "ServeOptions",
    "configure_operational_log",
    "return_large_blocks",
    "run_daemon",
    "tune_for_serving",
]

_log = structlog.get_logger("longhaul.server")

_ACCEPT_RETRY_S = 0.1  # after EMFILE and friends: back off a little instead of spinning

WORKER_THREADS: Final = 4
"""Threads for the passes' pure steps and file reads (anyio's default is 40). Those steps hold the GIL, so
more threads add no throughput, and every busy one takes the GIL from the event loop in turn: with 64 passes
at once on 2 cores, 40 threads put ``status`` p99 near 0.4 s, 4 threads under 0.2 s, at the same wall time."""


COLLECT_EVERY_S: Final = 5.0
"""How often the daemon looks for a gap between passes to run a full garbage collection in."""


@dataclass(frozen=True)
class ServeOptions:
    """Everything ``serve`` needs; the CLI builds it from flags and environment. ``run_pass`` is the pass
    ``compact`` runs, the real one unless a program embedding the daemon (the tests) gives another;
    ``collect_every_s`` is how often a full garbage collection may run between passes."""

    socket_path: Path
    may_narrow_dir: bool = False
    pass_budget_s: float = DEFAULT_PASS_BUDGET_S
    turn_budget_s: float | None = None  # one turns-mode turn; None: two fifths of the pass budget (TURNS-15)
    grace_s: float = DEFAULT_GRACE_S
    max_frame: int = DEFAULT_MAX_FRAME
    max_in_flight_per_connection: int = MAX_IN_FLIGHT_PER_CONNECTION
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    max_buffered_bytes: int = DEFAULT_MAX_BUFFERED_BYTES
    idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S
    stall_timeout_s: float = DEFAULT_STALL_TIMEOUT_S
    handle_signals: bool = True
    via_pi_apis: frozenset[str] = frozenset()  # model apis the daemon sends through pi (PASS-22)
    concurrency: Mapping[str, int] = field(default_factory=dict)  # calls at once per provider key
    worker_threads: int = WORKER_THREADS
    run_pass: RunPass = real_pass
    collect_every_s: float = COLLECT_EVERY_S


@dataclass(frozen=True)
class DaemonHandle:
    """What a running daemon reports once it listens: where, the services its methods share, the load (open
    connections, buffered bytes) its connections share, and :meth:`stop`."""

    socket_path: Path
    services: Services
    load: ServerLoad
    _stopping: anyio.Event

    def stop(self) -> None:
        """Begin the shutdown a SIGTERM begins: stop accepting, drain within the grace period, return."""
        self._stopping.set()


async def run_daemon(
    options: ServeOptions, *, task_status: TaskStatus[DaemonHandle] = anyio.TASK_STATUS_IGNORED
) -> None:
    """Serve until a signal arrives (or the handle's :meth:`~DaemonHandle.stop` is called), then drain and
    return; StartupError if it cannot listen."""
    opened = await open_listener(options.socket_path, uid=os.getuid(), may_narrow_dir=options.may_narrow_dir)
    try:
        services = Services(
            socket_path=str(opened.path),
            socket_activated=opened.activated,
            pass_budget_s=options.pass_budget_s,
            turn_budget_s=options.turn_budget_s,
            via_pi_apis=options.via_pi_apis,
            provider_limits=ProviderLimits(per_provider=options.concurrency),
            run_pass=options.run_pass,
        )
        stop_event = anyio.Event()
        anyio.to_thread.current_default_thread_limiter().total_tokens = options.worker_threads
        # One HTTP client for every pass (pool and SSL context built once); closed once nothing runs.
        async with make_shared_client() as client, anyio.create_task_group() as root:
            services.http_client = client
            if options.handle_signals:
                await root.start(_stop_on_signal, stop_event)
            interval = systemd.watchdog_interval()
            if interval is not None:
                root.start_soon(_ping_watchdog, interval)
            root.start_soon(_load_the_pass)
            try:
                await _serve_until_stopped(opened, services, options, stop_event, task_status)
            finally:
                services.warmer.stop()  # a file being indexed finishes on its own; nothing waits for it
            root.cancel_scope.cancel()
    finally:
        opened.release()
    _log.info("daemon_stopped")


GC_THRESHOLDS: Final = (50_000, 20, 100)
SWITCH_INTERVAL_S: Final = 0.001


def tune_for_serving() -> None:
    """Keep the event loop answering while a big pass computes in a worker thread (PASS-21), and give
    memory back after a burst.

    Two pauses came from the interpreter, not the daemon: the cyclic garbage collector, whose full
    collections walk every object a big pass holds with the lock every thread needs, and the 5 ms (CPython's
    default switch interval) a thread waits for that lock after each read or write. So the objects made at
    start-up are frozen out of collection, collections run far less often (the pass makes few reference
    cycles; reference counting frees the rest at once), the collector is off while heavy work runs
    (:mod:`longhaul_daemon.collector`), and threads take turns every :data:`SWITCH_INTERVAL_S`. Process-wide,
    so ``serve`` calls it, not the library.
    """
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    PAUSE.enabled = True
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    return_large_blocks()


MMAP_THRESHOLD_BYTES: Final = 128 * 1024
_M_MMAP_THRESHOLD: Final = -3  # glibc's mallopt parameter number


def return_large_blocks() -> bool:
    """Make glibc give every block of :data:`MMAP_THRESHOLD_BYTES` or more back to the system once freed.

    glibc starts at that threshold but raises it each time it frees a mapped block, up to 32 MiB; after that,
    frames, buffers and parsed sessions of a few MiB come from the heap and stay there when freed, and the
    daemon's memory stays at its high-water mark after a burst (docs/reliability.md). False where there is no
    glibc ``mallopt`` to call.
    """
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES))


async def _load_the_pass() -> None:
    """Import the pass in a worker thread once the daemon serves, so the first compaction does not pay for it.
    The RPC layer imports it lazily so that it serves even when the pass cannot load; here a failure is only
    logged, and the first pass will report it."""
    started = time.monotonic()
    try:
        await anyio.to_thread.run_sync(importlib.import_module, "longhaul_daemon.passes.run")
    except Exception as exc:
        _log.error("pass_import_failed", error_class=type(exc).__name__)
    else:
        _log.info("pass_loaded", ms=round((time.monotonic() - started) * 1000))


async def _serve_until_stopped(
    opened: OpenedListener,
    services: Services,
    options: ServeOptions,
    stop: anyio.Event,
    task_status: TaskStatus[DaemonHandle],
) -> None:
    dispatcher = Dispatcher(build_methods(services))
    tracker = RequestTracker()
    limits = ConnectionLimits(
        max_frame=options.max_frame,
        max_in_flight=options.max_in_flight_per_connection,
        idle_timeout_s=options.idle_timeout_s,
        stall_timeout_s=options.stall_timeout_s,
    )
    load = ServerLoad(options.max_connections, options.max_buffered_bytes)
    async with anyio.create_task_group() as connections:
        connections.start_soon(_accept_loop, opened.listener, connections, dispatcher, tracker, limits, load)
        connections.start_soon(_collect_between_passes, services, tracker, options.collect_every_s)
        systemd.notify("READY=1", f"STATUS=Listening on {opened.path}")
        _log.info(
            "daemon_ready",
            version=__version__,
            pid=os.getpid(),
            socket=str(opened.path),
            socket_activated=opened.activated,
            pass_budget_s=options.pass_budget_s,
        )
        task_status.started(DaemonHandle(opened.path, services, load, stop))
        await stop.wait()
        systemd.notify("STOPPING=1", f"STATUS=Draining {tracker.in_flight} request(s)")
        _log.info("daemon_stopping", in_flight=tracker.in_flight, grace_s=options.grace_s)
        # Closing (not cancelling) is the wake-up anyio's accept() is built for: ClosedResourceError.
        await opened.listener.aclose()
        with anyio.move_on_after(options.grace_s) as grace:
            await tracker.wait_idle()
        if grace.cancelled_caught:
            _log.warning("drain_grace_expired", cancelled=tracker.in_flight)
        connections.cancel_scope.cancel()


async def _collect_between_passes(services: Services, tracker: RequestTracker, every_s: float) -> None:
    """A full garbage collection every few seconds while requests come in, whenever no pass is running.

    :data:`GC_THRESHOLDS` makes full collections rare so a big pass does not stall ``status``; but each failed
    request leaves a cycle (an exception and its traceback) that only a full collection frees, and by then
    the memory is scattered and RSS stays well above its baseline after a fuzz run. With no pass in flight the
    heap is small and a collection takes milliseconds, so the garbage goes before it piles up.

    While a pass runs the collector is off (:mod:`longhaul_daemon.collector`); when passes follow each other
    without a gap for :data:`~longhaul_daemon.collector.MAX_PAUSE_S`, one collection runs anyway, so a daemon
    that is never idle still frees its cycles.
    """
    handled = tracker.handled
    while True:
        await anyio.sleep(every_s)
        if tracker.handled != handled and services.passes_in_flight == 0:
            handled = tracker.handled
            collect_all()
        elif PAUSE.paused_for() > MAX_PAUSE_S:
            collect_all()
            PAUSE.collected()


async def _accept_loop(
    listener: SocketListener,
    connections: TaskGroup,
    dispatcher: Dispatcher,
    tracker: RequestTracker,
    limits: ConnectionLimits,
    load: ServerLoad,
) -> None:
    while True:
        try:
            stream = await listener.accept()
        except anyio.ClosedResourceError:
            return
        except (anyio.BrokenResourceError, OSError) as exc:
            _log.warning("accept_failed", error_class=type(exc.__cause__ or exc).__name__)
            await anyio.sleep(_ACCEPT_RETRY_S)
            continue
        connections.start_soon(_guarded_connection, stream, dispatcher, tracker, limits, load)


async def _guarded_connection(
    stream: SocketStream,
    dispatcher: Dispatcher,
    tracker: RequestTracker,
    limits: ConnectionLimits,
    load: ServerLoad,
) -> None:
    """A bug in one connection is logged and ends that connection only."""
    try:
        await serve_connection(stream, dispatcher, tracker, limits, load=load)
    except Exception as exc:
        internal_error(exc, where="connection")


async def _stop_on_signal(
    stop: anyio.Event, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        task_status.started()
        async for signum in signals:
            _log.info("signal_received", signal=signal.Signals(signum).name)
            stop.set()
            return  # leaving the receiver restores default handling: a second signal ends the process at once


async def _ping_watchdog(interval_s: float) -> None:
    """Ping from the event loop, so a blocked loop stops pinging and systemd notices."""
    while True:
        systemd.notify("WATCHDOG=1")
        await anyio.sleep(interval_s)


class _SafeStreamSink:
    """structlog's final logger: one line to a text stream, and a failed write never reaches the caller."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def msg(self, message: str) -> None:
        with contextlib.suppress(Exception):  # a failed log write must never affect the work
            self._stream.write(message + "\n")
            self._stream.flush()

    debug = info = warning = warn = error = critical = exception = fatal = log = msg


def _render_json(_logger: Any, _name: str, event_dict: MutableMapping[str, Any]) -> str:
    try:
        return json.dumps(event_dict, default=repr, ensure_ascii=False, separators=(",", ":"))
    except Exception:
        return json.dumps({"event": "log_render_failed", "original_event": str(event_dict.get("event"))})


class _StdlibBridge(logging.Handler):
    """Library records keep only logger name, level and exception class: their text may quote user content."""

    def emit(self, record: logging.LogRecord) -> None:
        error_class = record.exc_info[0].__name__ if record.exc_info and record.exc_info[0] else None
        structlog.get_logger("longhaul.stdlib").warning(
            "library_log", logger=record.name, level=record.levelname, error_class=error_class
        )


def configure_operational_log(stream: TextIO | None = None, *, level: int = logging.INFO) -> None:
    """structlog → JSON lines on stderr (the journal under systemd): codes, ids, counts, no message text."""
    sink = _SafeStreamSink(stream if stream is not None else sys.stderr)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            shape_log_fields,  # client-chosen ids, codes and model names reduced to their shapes (item 8)
            redact_log_event,  # the credentials of the pass in flight, wherever they hide in the line
            _render_json,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=lambda *_args: sink,
        cache_logger_on_first_use=True,
    )
    logging.raiseExceptions = False
    root = logging.getLogger()
    root.handlers = [_StdlibBridge(level=logging.WARNING)]
    root.setLevel(logging.WARNING)
