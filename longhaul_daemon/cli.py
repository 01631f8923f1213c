"""The ``longhaul-daemon`` command, one entry point for the daemon (``serve``) and every tool around it.

``status``, ``install``/``uninstall``, ``state`` and ``report`` operate and inspect it; ``replay``, ``score``,
``corpus`` and ``facts`` evaluate it.

Building the parser loads only the standard library and a few small modules; each subcommand imports what it
runs on (anyio and the server for ``serve``, the fold and pydantic for ``state``) once it is chosen, so
``status`` and ``--help`` answer without paying for the daemon's dependencies.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from longhaul_daemon import __version__
from longhaul_daemon.defaults import (
    DEFAULT_GRACE_S,
    DEFAULT_IDLE_TIMEOUT_S,
    DEFAULT_MAX_BUFFERED_BYTES,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_FRAME,
    DEFAULT_PASS_BUDGET_S,
    DEFAULT_STALL_TIMEOUT_S,
    MAX_CONCURRENCY,
)
from longhaul_daemon.errors import StartupError
from longhaul_daemon.evaluation.args import EVALUATION_COMMANDS, add_evaluation_parsers
from longhaul_daemon.inspector.state_args import add_state_parser
from longhaul_daemon.log.report_args import add_report_parser
from longhaul_daemon.ops.install_args import add_install_commands
from longhaul_daemon.server.paths import SOCKET_ENV, resolve_socket_path

if TYPE_CHECKING:
    from longhaul_daemon.server.lifecycle import ServeOptions

VIA_PI_ENV = "LONGHAUL_VIA_PI_APIS"
CONCURRENCY_ENV = "LONGHAUL_CONCURRENCY"
_MAX_PROVIDER_KEY = 512  # a provider name, or provider@baseUrl

__all__ = ["build_parser", "main"]

EXIT_STARTUP_FAILED = 1
EXIT_USAGE = 2


class _DropWhenReaderGone(io.RawIOBase):
    """Standard output's descriptor, whose writes are dropped once the reader has gone (``status | head``):
    the command finishes quietly with its own exit status instead of a ``BrokenPipeError`` traceback."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd
        self.reader_gone = False

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return os.isatty(self._fd)

    def write(self, data: bytes | bytearray | memoryview) -> int:  # type: ignore[override]
        if not self.reader_gone:
            try:
                return os.write(self._fd, data)
            except BrokenPipeError:
                self.reader_gone = True
        return len(data)


def _quiet_on_closed_stdout() -> None:
    """Route ``sys.stdout`` through :class:`_DropWhenReaderGone` (only the process's own stdout: a test's
    captured stream is left as it is)."""
    stdout = sys.stdout
    if stdout is None or stdout is not sys.__stdout__ or not isinstance(stdout, io.TextIOWrapper):
        return
    try:
        fd = stdout.fileno()
        stdout.flush()
    except (OSError, ValueError):
        return
    sys.stdout = io.TextIOWrapper(
        io.BufferedWriter(_DropWhenReaderGone(fd)),
        encoding=stdout.encoding,
        errors=stdout.errors,
        line_buffering=stdout.line_buffering,
    )


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds: {text!r}")
    return value


def _non_negative_seconds(text: str) -> float:
    if text.strip() in {"0", "0.0"}:
        return 0.0
    return _positive_seconds(text)


def _positive_count(text: str, unit: str = "") -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number{unit}: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number{unit}: {text!r}")
    return value


def _positive_bytes(text: str) -> int:
    return _positive_count(text, " of bytes")


def _api_name(text: str) -> str:
    """A pi ``api`` name as pi spells them (``bedrock-converse-stream``); refuses anything else."""
    name = text.strip()
    if not name or len(name) > 64 or not all(ch.isalnum() or ch in "-_." for ch in name):
        raise argparse.ArgumentTypeError(f"not a pi api name: {text!r}")
    return name


def via_pi_apis(flags: Sequence[str] | None, env: Mapping[str, str]) -> frozenset[str]:
    """The apis sent through pi: the ``--via-pi`` flags if given, else ``$LONGHAUL_VIA_PI_APIS`` (commas)."""
    if flags:
        return frozenset(flags)
    names = [part.strip() for part in env.get(VIA_PI_ENV, "").split(",") if part.strip()]
    try:
        return frozenset(_api_name(name) for name in names)
    except argparse.ArgumentTypeError as exc:
        raise StartupError(f"${VIA_PI_ENV}: {exc}") from None


def _concurrency_entry(text: str) -> tuple[str, int]:
    """One ``KEY=N`` limit: a provider name, ``provider@baseUrl`` or ``default``, and 1 to 256 calls."""
    key, equals, count = text.strip().rpartition("=")
    if not equals or not key or len(key) > _MAX_PROVIDER_KEY or key != key.strip() or " " in key:
        raise argparse.ArgumentTypeError(f"not KEY=N: {text!r}")
    try:
        limit = int(count)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number of calls: {text!r}") from None
    if not 1 <= limit <= MAX_CONCURRENCY:
        raise argparse.ArgumentTypeError(f"calls at once must be 1 to {MAX_CONCURRENCY}: {text!r}")
    return key, limit


def concurrency_limits(flags: Sequence[tuple[str, int]] | None, env: Mapping[str, str]) -> dict[str, int]:
    """The daemon-wide provider limits: the ``--concurrency`` flags if given, else ``$LONGHAUL_CONCURRENCY``
    (``KEY=N`` entries, commas between); a later entry for a key wins."""
    if flags:
        return dict(flags)
    entries = [part for part in env.get(CONCURRENCY_ENV, "").split(",") if part.strip()]
    try:
        return dict(_concurrency_entry(entry) for entry in entries)
    except argparse.ArgumentTypeError as exc:
        raise StartupError(f"${CONCURRENCY_ENV}: {exc}") from None


def _add_socket_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--socket",
        metavar="PATH",
        help=f"socket path (default: ${SOCKET_ENV}, else $XDG_RUNTIME_DIR/longhaul/daemon.sock, "
        "else /tmp/longhaul-<uid>/daemon.sock)",
    )


def _add_limit_flags(serve: argparse.ArgumentParser) -> None:
    """The bounds that keep a flood of clients from exhausting the daemon (docs/reliability.md)."""
    serve.add_argument(
        "--max-connections",
        type=_positive_count,
        default=DEFAULT_MAX_CONNECTIONS,
        metavar="N",
        help=f"connections served at once; more are told busy and closed (default {DEFAULT_MAX_CONNECTIONS})",
    )
    serve.add_argument(
        "--max-buffered",
        type=_positive_bytes,
        default=DEFAULT_MAX_BUFFERED_BYTES,
        metavar="BYTES",
        help=f"bytes held in requests across connections (default {DEFAULT_MAX_BUFFERED_BYTES})",
    )
    serve.add_argument(
        "--idle-timeout",
        type=_positive_seconds,
        default=DEFAULT_IDLE_TIMEOUT_S,
        metavar="SECONDS",
        help=f"close a connection with nothing running and no frame for this long (default "
        f"{DEFAULT_IDLE_TIMEOUT_S:g})",
    )
    serve.add_argument(
        "--stall-timeout",
        type=_positive_seconds,
        default=DEFAULT_STALL_TIMEOUT_S,
        metavar="SECONDS",
        help=f"cut a frame that gets no byte for this long (default {DEFAULT_STALL_TIMEOUT_S:g})",
    )


def build_parser() -> argparse.ArgumentParser:
    """The ``longhaul-daemon`` argument parser: every subcommand with its flags and one-line help."""
    parser = argparse.ArgumentParser(
        prog="longhaul-daemon", description="Longhaul: a context compactor daemon for the pi coding agent."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = commands.add_parser("serve", help="run the daemon in the foreground")
    _add_socket_flag(serve)
    serve.add_argument(
        "--pass-budget",
        type=_positive_seconds,
        default=DEFAULT_PASS_BUDGET_S,
        metavar="SECONDS",
        help=f"time budget of one pass; past it the shim falls back (default {DEFAULT_PASS_BUDGET_S:g})",
    )
    serve.add_argument(
        "--turn-budget",
        type=_positive_seconds,
        default=None,
        metavar="SECONDS",
        help="time budget of one turns-mode turn (default two fifths of the pass budget)",
    )
    serve.add_argument(
        "--grace",
        type=_non_negative_seconds,
        default=DEFAULT_GRACE_S,
        metavar="SECONDS",
        help=f"on SIGTERM, how long in-flight requests may finish (default {DEFAULT_GRACE_S:g})",
    )
    serve.add_argument(
        "--max-frame",
        type=_positive_bytes,
        default=DEFAULT_MAX_FRAME,
        metavar="BYTES",
        help=f"largest accepted request line (default {DEFAULT_MAX_FRAME})",
    )
    _add_limit_flags(serve)
    serve.add_argument(
        "--via-pi",
        action="append",
        type=_api_name,
        metavar="API",
        help=f"send model calls on this pi api (e.g. bedrock-converse-stream) through pi's own provider code "
        f"instead of calling the provider directly; repeatable (default: ${VIA_PI_ENV}, a comma list). "
        "Apis the daemon does not speak always go through pi",
    )

    serve.add_argument(
        "--concurrency",
        action="append",
        type=_concurrency_entry,
        metavar="KEY=N",
        help="at most N model calls at once to a provider, across every session: KEY is a provider name, "
        f"provider@baseUrl or default (the others); repeatable (default: ${CONCURRENCY_ENV}, a comma list; "
        "else 4 per provider)",
    )

    status = commands.add_parser("status", help="show the running daemon's status (exit 3 when none runs)")
    _add_socket_flag(status)
    status.add_argument("--json", action="store_true", help="print the status as JSON")
    add_state_parser(commands)
    add_install_commands(commands)
    add_report_parser(commands)
    add_evaluation_parsers(commands)
    return parser


def _serve(args: argparse.Namespace) -> int:
    import faulthandler

    import anyio

    from longhaul_daemon.server.lifecycle import ServeOptions, configure_operational_log, tune_for_serving

    faulthandler.enable()
    configure_operational_log()
    explicit = bool(args.socket) or bool(os.environ.get(SOCKET_ENV))
    try:
        through_pi = via_pi_apis(args.via_pi, os.environ)
        limits = concurrency_limits(args.concurrency, os.environ)
    except StartupError as exc:
        sys.stderr.write(f"longhaul-daemon: {exc}\n")
        return EXIT_STARTUP_FAILED
    options = ServeOptions(
        socket_path=resolve_socket_path(args.socket, os.environ, os.getuid()),
        may_narrow_dir=not explicit,
        pass_budget_s=args.pass_budget,
        turn_budget_s=args.turn_budget,
        grace_s=args.grace,
        max_frame=args.max_frame,
        max_connections=args.max_connections,
        max_buffered_bytes=args.max_buffered,
        idle_timeout_s=args.idle_timeout,
        stall_timeout_s=args.stall_timeout,
        via_pi_apis=through_pi,
        concurrency=limits,
    )
    tune_for_serving()
    try:
        anyio.run(_run, options, sys.stdout.isatty(), backend="asyncio")
    except StartupError as exc:
        sys.stderr.write(f"longhaul-daemon: {exc}\n")
        return EXIT_STARTUP_FAILED
    return 0


def listening_line(socket_path: str, pass_budget_s: float) -> str:
    """The one line a person at a terminal gets; everything else is the JSON operational log on stderr."""
    return (
        f"longhaul-daemon {__version__} listening on {socket_path}, pass budget {pass_budget_s:g} s "
        "(Ctrl-C stops it; the JSON lines on stderr are its log)"
    )


async def _run(options: ServeOptions, tty: bool) -> None:
    import anyio

    from longhaul_daemon.server.lifecycle import run_daemon

    try:
        async with anyio.create_task_group() as group:
            handle = await group.start(run_daemon, options)
            if tty:  # a person started it by hand; under systemd stdout is the journal, not a terminal
                sys.stdout.write(listening_line(str(handle.socket_path), options.pass_budget_s) + "\n")
                sys.stdout.flush()
    except* StartupError as group_error:
        raise group_error.exceptions[0] from None


def _evaluation(args: argparse.Namespace) -> int:
    # Each evaluation command imports only its own module, like every other subcommand.
    if args.command == "facts":
        from longhaul_daemon.evaluation.facts import run_facts

        return run_facts(args, out=sys.stdout, err=sys.stderr)
    if args.command == "replay":
        from longhaul_daemon.evaluation.replay_command import run_replay

        return run_replay(args, out=sys.stdout, err=sys.stderr)
    if args.command == "score":
        from longhaul_daemon.evaluation.score import run_score

        return run_score(args, out=sys.stdout, err=sys.stderr)
    from longhaul_daemon.evaluation.corpus import run_corpus

    return run_corpus(args, out=sys.stdout, err=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command ``argv`` names (default: ``sys.argv``) and return its exit status."""
    _quiet_on_closed_stdout()
    parser = build_parser()
    if not (sys.argv[1:] if argv is None else argv):
        # Bare ``longhaul-daemon``: the commands with one line each, not only "COMMAND is required".
        parser.print_help(sys.stderr)
        parser.exit(EXIT_USAGE, "\nlonghaul-daemon: name a command (see the list above)\n")
    args = parser.parse_args(argv)
    # Each branch imports its own command, so one subcommand never loads another's dependencies.
    if args.command == "serve":
        return _serve(args)
    if args.command in {"install", "uninstall"}:
        from longhaul_daemon.ops.install import run_install_command

        return run_install_command(args, out=sys.stdout)
    if args.command == "state":
        from longhaul_daemon.inspector.command import run_state

        return run_state(args, out=sys.stdout, err=sys.stderr)
    if args.command == "report":
        from longhaul_daemon.log.report import run_report

        return run_report(args, out=sys.stdout)
    if args.command in EVALUATION_COMMANDS:
        return _evaluation(args)
    from longhaul_daemon.ops.status_command import run_status

    socket_path = resolve_socket_path(args.socket, os.environ, os.getuid())
    return run_status(
        socket_path, as_json=args.json, out=sys.stdout, err=sys.stderr, socket_named=bool(args.socket)
    )
