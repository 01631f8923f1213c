"""The socket fuzzer: a real daemon process, mutated frames, a burst of connections, slow-loris clients, RSS.

Run by ``tests/reliability/test_fuzz_socket.py`` (bounded: a few hundred frames) and by ``make fuzz`` (this
file as a script; ``--frames``, ``--seed``, ``--burst``, ``--loris``). Each fuzz frame is followed on the same
connection by a ``status`` request with an id of its own, so every reply before that one belongs to the fuzz
frame. What must hold (issue 12, item 6), and is counted in the :class:`FuzzReport`:

* every reply is one well-formed JSON-RPC 2.0 response; a frame that is one request with an id gets exactly
  one reply with that id; ``-32603`` never appears; a -32601 carries no ``data``;
* the connection is closed only after a documented reply (``Frame too large``, ``Server busy``);
* the daemon keeps serving (``status`` after every frame) and never exits;
* the burst (many connections at once, large frames) is answered or refused with -32005, never left hanging;
* slow-loris connections (a frame begun, then nothing; or nothing at all) are closed by the daemon;
* RSS after the run comes back near the baseline taken after warm-up.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import socket
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from daemon_under_test import DaemonUnderTest, rss_mb, status
from fuzz_frames import FUZZ_KEY, Case, FrameFactory, hostile_value
from fuzz_load import burst, slow_loris
from model_stub import model_stub

from longhaul_daemon.defaults import MAX_BATCH
from longhaul_daemon.jsoncodec import loads
from longhaul_daemon.rpc.jsonrpcserver_adapter import InvalidEnvelope, check_envelope

__all__ = ["ALLOWED_CODES", "FuzzConfig", "FuzzReport", "run_fuzz"]

ALLOWED_CODES = frozenset({-32700, -32600, -32601, -32602, -32001, -32002, -32004, -32005})
_BIDI = tuple(chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A)))
REPLY_WAIT_S = 60.0  # a compact pass is bounded by the daemon's --pass-budget, far below this


@dataclass(frozen=True)
class FuzzConfig:
    frames: int = 400
    seed: int = 12
    max_seconds: float = 120.0
    burst: int = 200  # connections opened at once
    burst_bytes: int = 1_000_000  # the frame each of them sends
    loris: int = 50  # slow-loris connections (half begin a frame, half send nothing)
    max_frame: int = 8 * 1024 * 1024
    max_buffered: int = 64 * 1024 * 1024
    timeout_s: float = 2.0  # the daemon's idle and stall timeouts for the run
    dump_dir: Path | None = None  # where the frames behind violations are written, to replay them


@dataclass
class FuzzReport:
    seed: int
    frames: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    peer_requests: int = 0  # model.complete requests the daemon sent the fuzzer, answered at random
    replies: Counter[str] = field(default_factory=Counter)  # "result" or the error code
    closes: int = 0
    violations: list[str] = field(default_factory=list)
    crashed: bool = False
    burst: Counter[str] = field(default_factory=Counter)
    loris_open_at_end: int = -1
    rss_before_mb: float = 0.0
    rss_peak_mb: float = 0.0
    rss_after_mb: float = 0.0
    seconds: float = 0.0
    dump_dir: Path | None = None

    def violation(self, text: str, frame: bytes = b"") -> None:
        self.violations.append(text)
        if self.dump_dir is not None and frame:
            (self.dump_dir / f"violation-{len(self.violations):03d}.frame").write_bytes(frame)

    def as_json(self) -> str:
        # asdict() would rebuild each Counter from its (key, count) pairs, counting the pairs: copy by hand
        fields = {k: dict(v) if isinstance(v, Counter) else v for k, v in vars(self).items()}
        return json.dumps({**fields, "dump_dir": str(self.dump_dir)}, sort_keys=True)


class _Conn:
    """A blocking client connection with line reading, reopened after the daemon closes it."""

    def __init__(self, path: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(REPLY_WAIT_S)
        self.sock.connect(str(path))
        self.buffer = b""

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def line(self) -> bytes | None:
        while b"\n" not in self.buffer:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                return None
            self.buffer += chunk
        out, self.buffer = self.buffer.split(b"\n", 1)
        return out

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


def _code(reply: Any) -> str:
    if isinstance(reply, dict) and "error" in reply and isinstance(reply["error"], dict):
        return str(reply["error"].get("code"))
    return "result" if isinstance(reply, dict) and "result" in reply else "batch"


def key_pieces(text: bytes | str) -> list[str]:
    """Runs of 8 characters of the fuzz credentials found in ``text``."""
    data = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    return [
        k[i : i + 8] for k in (FUZZ_KEY, FUZZ_KEY[::-1]) for i in range(len(k) - 7) if k[i : i + 8] in data
    ]


def _check(reply_line: bytes, report: FuzzReport, case: Case, *, sentinel: str) -> Any:
    """Parse and judge one reply; returns it (or None when it was not JSON)."""
    if key_pieces(reply_line):
        report.violation(f"{case.kind}: the reply holds pieces of the credentials: {key_pieces(reply_line)}")
    try:
        reply = json.loads(reply_line)
    except ValueError:
        report.violation(f"{case.kind}: reply is not JSON: {reply_line[:200]!r}", case.frame)
        return None
    for member in reply if isinstance(reply, list) else [reply]:
        if not isinstance(member, dict) or member.get("jsonrpc") != "2.0":
            report.violation(f"{case.kind}: not a JSON-RPC response: {reply_line[:200]!r}", case.frame)
            continue
        error = member.get("error")
        if isinstance(error, dict):
            if error.get("code") not in ALLOWED_CODES:
                report.violation(
                    f"{case.kind}: code {error.get('code')} for {case.frame[:300]!r}", case.frame
                )
            if error.get("code") == -32601 and "data" in error:
                report.violation(f"{case.kind}: -32601 with data {str(error['data'])[:100]!r}", case.frame)
            if len(json.dumps(error)) > 16_384:
                report.violation(f"{case.kind}: an error of {len(json.dumps(error))} bytes", case.frame)
        elif isinstance(member.get("result"), dict) and member["result"].get("fallback") == "pass-error":
            report.violation(f"{case.kind}: the pass raised (fallback pass-error)", case.frame)
        elif "result" not in member:
            report.violation(f"{case.kind}: neither result nor error: {reply_line[:200]!r}", case.frame)
        if member.get("id") == sentinel:
            report.violation(f"{case.kind}: the sentinel's reply came in place of the frame's", case.frame)
    return reply


def expected_replies(frame: bytes) -> int:
    """How many reply lines the daemon owes ``frame`` under JSON-RPC 2.0 (replies to one connection may come
    in any order, so the fuzzer must know how many to wait for): a parse error or an invalid request gets one;
    a request with an id (or a batch holding one) gets one; notifications, a batch of them and a blank line
    get none. The envelope rule is the library's, as ``check_envelope`` states it."""
    if not frame.strip():
        return 0
    try:
        value = loads(frame)
    except (ValueError, RecursionError):
        return 1
    try:
        check_envelope(value)
    except InvalidEnvelope:
        return 1
    members = value if isinstance(value, list) else [value]
    if len(members) > MAX_BATCH:
        return 1
    return 1 if any("id" in member for member in members) else 0


def _one_case(conn: _Conn, case: Case, report: FuzzReport, number: int) -> bool:
    """Send the case, take the replies it is owed, then a status round trip to show nothing more came.
    False when the daemon closed the connection."""
    sentinel = f"sentinel-{number}"
    conn.send(case.frame)
    owed = expected_replies(case.frame[:-1])
    got: list[Any] = []
    while len(got) < owed:
        raw = _next_reply(conn, report)
        if raw is None:
            return _closed(report, case, got)
        reply = _check(raw, report, case, sentinel=sentinel)
        report.replies[_code(reply)] += 1
        got.append(reply)
        if _code(reply) in ("-32600", "-32005") and isinstance(reply, dict) and reply["error"].get("data"):
            break  # "Frame too large" / "Server busy": the daemon closes next
    if case.request_id is not None:
        ids = [r.get("id") for r in got if isinstance(r, dict)]
        if ids != [case.request_id] and not _is_close_notice(got):
            report.violation(
                f"{case.kind}: replies with ids {ids[:5]} for id {case.request_id!r}", case.frame
            )
    conn.send(json.dumps({"jsonrpc": "2.0", "id": sentinel, "method": "status"}).encode() + b"\n")
    raw = _next_reply(conn, report)
    if raw is None:
        return _closed(report, case, got)
    if not (raw.endswith(f'"id":"{sentinel}"}}'.encode()) and b'"result"' in raw[:40]):
        report.violation(
            f"{case.kind}: a reply more than owed: {raw[:200]!r} for {case.frame[:200]!r}", case.frame
        )
    return True


def _next_reply(conn: _Conn, report: FuzzReport) -> bytes | None:
    """The next line that is not a request from the daemon; ``model.complete`` requests met on the way are
    answered. A notification's pass runs on after the fuzzer has moved on, so they may come at any time."""
    while True:
        raw = conn.line()
        if raw is None or not (
            raw.startswith(b'{"jsonrpc":"2.0","id":"d') and b'"method":"model.complete"' in raw[:60]
        ):
            return raw
        _answer_peer(conn, raw, report)


def _answer_peer(conn: _Conn, raw: bytes, report: FuzzReport) -> None:
    """Answer a ``model.complete`` as a shim would, or as a broken one would: the peer path is fuzzed too."""
    request_id = json.loads(raw)["id"]
    report.peer_requests += 1
    rng = random.Random(report.peer_requests)
    answers: list[dict[str, Any]] = [
        {"error": {"code": -32601, "message": "Method not found"}},
        {"error": {"code": -32010, "message": "request failed", "data": hostile_value(rng)}},
        {"result": hostile_value(rng)},
        {"result": {"text": '{"labels": []}', "stopReason": "stop", "usage": {"input": 1, "output": 1}}},
    ]
    answer = {"jsonrpc": "2.0", "id": request_id, **rng.choice(answers)}
    conn.send(json.dumps(answer).encode() + b"\n")


def _is_close_notice(got: list[Any]) -> bool:
    last = got[-1] if got else None
    return isinstance(last, dict) and last.get("id") is None and _code(last) in ("-32600", "-32005")


def _closed(report: FuzzReport, case: Case, got: list[Any]) -> bool:
    report.closes += 1
    if not _is_close_notice(got):
        report.violation(f"{case.kind}: closed without a documented reply: {case.frame[:200]!r}", case.frame)
    return False


def fuzz_frames(
    daemon: DaemonUnderTest, factory: FrameFactory, config: FuzzConfig, report: FuzzReport
) -> None:
    deadline = time.monotonic() + config.max_seconds
    conn = _Conn(daemon.socket_path)
    try:
        for number in range(config.frames):
            if time.monotonic() > deadline or not daemon.running():
                break
            case = factory.case()
            report.frames += 1
            report.kinds[case.kind] += 1
            try:
                alive = _one_case(conn, case, report, number)
            except (TimeoutError, OSError) as exc:
                report.violation(f"{case.kind}: {type(exc).__name__} waiting for a reply", case.frame)
                alive = False
            if not alive:
                conn.close()
                conn = _Conn(daemon.socket_path)
    finally:
        conn.close()


def run_fuzz(workdir: Path, config: FuzzConfig) -> FuzzReport:
    """The whole run against a daemon started in ``workdir``: warm-up, frames, burst, slow-loris, RSS."""
    started = time.monotonic()
    report = FuzzReport(seed=config.seed, dump_dir=config.dump_dir)
    if config.dump_dir is not None:
        config.dump_dir.mkdir(parents=True, exist_ok=True)
    timeout = f"{config.timeout_s:g}"
    daemon = DaemonUnderTest(
        workdir,
        *("--pass-budget", "10", "--grace", "2", "--max-frame", str(config.max_frame)),
        *("--max-buffered", str(config.max_buffered), "--idle-timeout", timeout, "--stall-timeout", timeout),
    )
    daemon.start()
    stub = model_stub(config.seed)
    try:
        factory = FrameFactory(random.Random(config.seed), workdir, config.max_frame, stub.__enter__())
        warm = _Conn(daemon.socket_path)
        for number, method in enumerate(("hello", "compact", "recall", "strip", "status") * 4):
            _one_case(
                warm, Case("warm-up", json.dumps(factory.request(method)).encode() + b"\n"), report, -number
            )
        warm.close()
        report.rss_before_mb = rss_mb(daemon.pid)
        fuzz_frames(daemon, factory, config, report)
        if config.burst:
            report.burst = burst(daemon.socket_path, config.burst, config.burst_bytes)
            report.violations += [
                f"burst: {n} x {what}"
                for what, n in report.burst.items()
                if what.startswith(("closed", "no-reply", "os-error", "not-json", "-32603"))
            ]
        if config.loris:
            report.loris_open_at_end = slow_loris(daemon.socket_path, config.loris, 4 * config.timeout_s + 10)
        time.sleep(config.timeout_s + 1)  # the burst's and the loris' connections are gone by now
        final = json.dumps(status(daemon.socket_path))  # still serving
        log = daemon.log_tail(10**9)
        if key_pieces(final) or key_pieces(log):
            report.violation("status or the operational log holds pieces of the credentials")
        if any(ch in log or ch in final for ch in _BIDI):  # client text reached the log or status raw
            report.violation("bidi control characters in the operational log or status")
        routes = json.loads(final).get("routes", [])
        if len(routes) > 33:
            report.violation(f"status lists {len(routes)} routes")
        report.rss_after_mb = rss_mb(daemon.pid)
        report.rss_peak_mb = rss_mb(daemon.pid, "VmHWM")
    finally:
        stub.__exit__(None, None, None)
        report.crashed = not daemon.running()
        code = daemon.stop()
        if code not in (0, None) and not report.crashed:
            report.violations.append(f"the daemon exited with {code} on SIGTERM")
        if report.crashed:
            report.violations.append(f"the daemon died:\n{daemon.log_tail()}")
        report.seconds = round(time.monotonic() - started, 1)
    return report


def summary(report: FuzzReport) -> str:
    """The figures of a run, as docs/reliability.md quotes them."""
    replies = ", ".join(f"{code} {n}" for code, n in sorted(report.replies.items()))
    kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(report.kinds.items()))
    burst_line = ", ".join(f"{what} {n}" for what, n in sorted(report.burst.items()))
    return "\n".join(
        [
            f"seed {report.seed}: {report.frames} frames in {report.seconds} s ({kinds})",
            f"replies by code: {replies}; connections closed by the daemon: {report.closes}; "
            f"model.complete requests answered: {report.peer_requests}",
            f"burst: {burst_line or 'not run'}",
            f"slow-loris connections still open at the end: {report.loris_open_at_end}",
            f"RSS before {report.rss_before_mb:.0f} MB, peak {report.rss_peak_mb:.0f} MB, "
            f"after {report.rss_after_mb:.0f} MB",
            f"crashed: {report.crashed}; violations: {len(report.violations)}",
            *(f"  - {v[:400]}" for v in report.violations[:20]),
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Fuzz a real longhaul daemon over its socket.")
    parser.add_argument("--frames", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=int(time.time()) % 100_000)
    parser.add_argument("--max-seconds", type=float, default=1800.0)
    parser.add_argument("--burst", type=int, default=200)
    parser.add_argument("--burst-bytes", type=int, default=4_000_000)
    parser.add_argument("--loris", type=int, default=50)
    parser.add_argument("--json", metavar="FILE", help="also write the report as JSON")
    parser.add_argument("--dump", metavar="DIR", type=Path, help="write the frames behind violations here")
    args = parser.parse_args(argv)
    config = FuzzConfig(
        frames=args.frames,
        seed=args.seed,
        max_seconds=args.max_seconds,
        burst=args.burst,
        burst_bytes=args.burst_bytes,
        loris=args.loris,
        dump_dir=args.dump,
    )
    with tempfile.TemporaryDirectory(prefix="lh-fuzz-", dir="/tmp") as workdir:
        report = run_fuzz(Path(workdir), config)
    print(summary(report))
    if args.json:
        Path(args.json).write_text(report.as_json() + "\n")
    return 1 if report.violations or report.crashed else 0


if __name__ == "__main__":
    sys.exit(main())
