"""Many concurrent small passes on a real daemon, so the cost of serving them shows as wall time and latency.

``python bench/daemon_load.py`` starts ``python -m longhaul_daemon serve`` in a scratch directory (its own
HOME, agent dir, state dir and socket; nothing of the user's is read or written), with a ``longhaul.json``
that sets the per-provider concurrency limit, and a scripted OpenAI-compatible model on 127.0.0.1 that
streams a Diff answer labelling every message it was asked about after a fixed delay, so every pass closes
whole. After one warm-up pass it sends ``--passes`` concurrent ``compact`` requests (a connection each, the
branch inline, as the shim does today) while a poller times ``status``, and prints wall time, passes/s,
``status`` p50/p99, how the passes closed and the most model calls in flight. ``--profile FILE`` records
the daemon with py-spy (``pip install py-spy``). Numbers to compare between changes; no test asserts a time.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_ASKED = re.compile(r"^Label exactly these messages: (.*)\.$", re.M)
_USER_ID = re.compile(r"u\d+")
_API_KEY = "sk-bench-not-a-real-key-0000"
_START_TIMEOUT_S = 30.0


def _branch(turns: int, output_lines: int) -> list[dict[str, Any]]:
    """A pi branch: per turn a user prompt, a bash call, its result and a short assistant reply."""
    entries: list[dict[str, Any]] = []

    def add(message: dict[str, Any]) -> None:
        n = len(entries)
        entries.append(
            {
                "type": "message",
                "id": hashlib.sha256(f"e{n}".encode()).hexdigest()[:8],
                "parentId": entries[-1]["id"] if entries else None,
                "timestamp": f"2026-12-02T14:{n // 60 % 60:02d}:{n % 60:02d}.000Z",
                "message": {**message, "timestamp": 1_780_000_000_000 + n},
            }
        )

    usage = {"input": 900, "output": 60, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 960}
    for n in range(turns):
        prompt = f"Step {n}: fix the failing export test, then run pytest -q and tell me what changed."
        add({"role": "user", "content": [{"type": "text", "text": prompt}]})
        call = {"type": "toolCall", "id": f"call_{n}", "name": "bash", "arguments": {"command": "pytest -q"}}
        add({"role": "assistant", "content": [call], "stopReason": "toolUse", "usage": usage})
        output = "".join(f"tests/test_export.py::test_case_{i} PASSED\n" for i in range(output_lines))
        result = {"role": "toolResult", "toolCallId": f"call_{n}", "toolName": "bash", "isError": False}
        add(result | {"content": [{"type": "text", "text": output + f"{output_lines} passed"}]})
        reply = f"All {output_lines} tests pass after step {n}; the export writes the header row once."
        add({"role": "assistant", "content": [{"type": "text", "text": reply}], "stopReason": "stop"})
    return entries


def _compact_params(
    branch: list[dict[str, Any]], session_id: str, cwd: Path, agent: Path, base_url: str
) -> dict[str, Any]:
    """``compact`` params as the shim sends them: everything but the last turn is summarized."""
    keep_from = len(branch) - 4
    model: dict[str, Any] = {
        "provider": "bench",
        "id": "bench-model",
        "api": "openai-completions",
        "baseUrl": base_url,
    }
    model |= {"reasoning": False, "contextWindow": 128_000, "maxTokens": 16_384}
    session: dict[str, Any] = {
        "cwd": str(cwd),
        "sessionId": session_id,
        "sessionFile": None,
        "agentDir": str(agent),
    }
    session |= {"piVersion": "0.73.1", "model": model, "thinkingLevel": "off", "env": {}}
    preparation = {
        "firstKeptEntryId": branch[keep_from]["id"],
        "messagesToSummarize": [e["message"] for e in branch[:keep_from]],
        "turnPrefixMessages": [],
        "isSplitTurn": False,
        "tokensBefore": 60_000,
        "previousSummary": None,
        "fileOps": {"read": [], "written": [], "edited": []},
    }
    credentials = {"apiKey": _API_KEY, "headers": {}}
    return {"session": session, "reason": None, "customInstructions": None, "preparation": preparation} | {
        "branchEntries": branch,
        "credentials": credentials,
        "summarizer": None,
    }


def _frame(method: str, params: object, request_id: int) -> bytes:
    request = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    return json.dumps(request, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


@dataclass
class ModelStub:
    """An OpenAI-compatible chat-completions server with keep-alive; every answer waits ``delay_s``."""

    delay_s: float
    calls: int = 0
    in_flight: int = 0
    most_in_flight: int = 0
    server: asyncio.Server | None = field(default=None, repr=False)
    handlers: dict[asyncio.StreamWriter, asyncio.Task[None]] = field(default_factory=dict, repr=False)

    @property
    def base_url(self) -> str:
        assert self.server is not None
        port = self.server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/v1"

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._connection, "127.0.0.1", 0, backlog=512)

    async def close(self) -> None:
        """Stop listening and end the kept-alive connections, so no handler is left waiting for a request."""
        if self.server is None:
            return
        self.server.close()
        handlers = list(self.handlers.values())
        for writer in list(self.handlers):
            writer.close()
        await asyncio.gather(*handlers, return_exceptions=True)
        await self.server.wait_closed()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.handlers[writer] = task
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for header in head.decode("latin-1").split("\r\n")[1:]:
                    name, _, value = header.partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value)
                body = await reader.readexactly(length)
                writer.write(await self._answer(body))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            self.handlers.pop(writer, None)
            writer.close()

    async def _answer(self, raw: bytes) -> bytes:
        self.calls += 1
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.delay_s)
        finally:
            self.in_flight -= 1
        request = json.loads(raw)
        prompt = "\n".join(str(m.get("content")) for m in request.get("messages", []))
        asked = _ASKED.findall(prompt)
        ids = _USER_ID.findall(asked[-1]) if asked else []
        labels = [{"msg": uid, "label": "not a rule"} for uid in ids]
        answer = {"labels": labels, "decisions": [], "deadEnds": [], "narrative": "Fixed the export test."}
        answer["now"] = "Write the header row once."
        base = {"id": f"chatcmpl-{self.calls}", "object": "chat.completion.chunk", "model": "bench-model"}
        delta = {"role": "assistant", "content": json.dumps(answer)}
        chunks = [
            {**base, "choices": [{"index": 0, "delta": delta}]},
            {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            {**base, "choices": [], "usage": {"prompt_tokens": len(raw) // 4, "completion_tokens": 80}},
        ]
        events = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
        head = (
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            f"x-request-id: req_{self.calls}\r\ncontent-length: {len(events)}\r\n\r\n"
        )
        return head.encode() + events


async def _call(socket_path: Path, frame: bytes) -> dict[str, Any]:
    """One request on a connection of its own, as the shim makes a ``compact`` call."""
    reader, writer = await asyncio.open_unix_connection(str(socket_path), limit=64 * 1024 * 1024)
    try:
        writer.write(frame)
        await writer.drain()
        reply: dict[str, Any] = json.loads(await reader.readuntil(b"\n"))
        return reply
    finally:
        writer.close()


async def _wait_serving(socket_path: Path, daemon: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + _START_TIMEOUT_S
    while True:
        if daemon.poll() is not None:
            raise SystemExit(f"the daemon exited with {daemon.returncode}; see its log")
        with contextlib.suppress(OSError):
            await _call(socket_path, _frame("status", {}, 0))
            return
        if time.monotonic() > deadline:
            raise SystemExit("the daemon did not answer status in time")
        await asyncio.sleep(0.05)


async def _poll_status(socket_path: Path, done: asyncio.Event, latencies: list[float]) -> None:
    """``status`` on one connection, again and again, until the burst is over."""
    reader, writer = await asyncio.open_unix_connection(str(socket_path))
    try:
        request_id = 0
        while not done.is_set():
            request_id += 1
            started = time.perf_counter()
            writer.write(_frame("status", {}, request_id))
            await writer.drain()
            await reader.readuntil(b"\n")
            latencies.append(time.perf_counter() - started)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(done.wait(), 0.02)  # a status call every 20 ms
    finally:
        writer.close()


def _outcome(reply: dict[str, Any]) -> str:
    result = reply.get("result")
    if not isinstance(result, dict):
        return f"error {reply.get('error', {}).get('code')}"
    fallback = result.get("fallback")
    return f"fallback {fallback}" if fallback else str(result["after"]["spanRecord"]["closedAs"])


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


@dataclass(frozen=True)
class _Scratch:
    """The daemon's private world: HOME, agent dir, project cwd and socket, all under one temp dir."""

    root: Path
    agent: Path
    cwd: Path
    socket: Path

    @classmethod
    def at(cls, root: Path) -> _Scratch:
        return cls(root, root / "home" / ".pi" / "agent", root / "project", root / "run" / "daemon.sock")

    def prepare(self, limit: int) -> None:
        for directory in (self.agent, self.cwd, self.socket.parent):
            directory.mkdir(parents=True, exist_ok=True)
        self.socket.parent.chmod(0o700)  # the daemon refuses a socket directory others can enter
        (self.agent / "longhaul.json").write_text(json.dumps({"concurrency": {"default": limit}}))

    def start_daemon(self) -> subprocess.Popen[bytes]:
        home = self.root / "home"
        env = os.environ | {"HOME": str(home), "XDG_RUNTIME_DIR": str(self.socket.parent)}
        env |= {"XDG_STATE_HOME": str(home / ".local/state"), "XDG_CONFIG_HOME": str(home / ".config")}
        env["PI_CODING_AGENT_DIR"] = str(self.agent)
        env.pop("LONGHAUL_SOCKET", None)
        with (self.root / "daemon.log").open("wb") as log:
            return subprocess.Popen(
                [sys.executable, "-m", "longhaul_daemon", "serve", "--socket", str(self.socket)],
                env=env,
                cwd=self.root,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )


@dataclass
class _Burst:
    """What one measured burst saw."""

    wall_s: float
    cpu_s: float
    replies: list[dict[str, Any]]
    status_s: list[float]
    sizes: str = ""
    model: str = ""


async def _burst(args: argparse.Namespace, scratch: _Scratch, daemon: subprocess.Popen[bytes]) -> _Burst:
    model = ModelStub(delay_s=args.delay)
    await model.start()
    try:
        await _wait_serving(scratch.socket, daemon)
        branch = _branch(args.turns, args.output_lines)

        def frame(n: int) -> bytes:
            params = _compact_params(branch, f"bench-{n}", scratch.cwd, scratch.agent, model.base_url)
            return _frame("compact", params, n)

        frames = [frame(n) for n in range(1, args.passes + 1)]
        for n in range(args.warmup):
            await _call(scratch.socket, frame(-1 - n))
        model.calls = model.most_in_flight = 0
        profiler = await asyncio.to_thread(_start_profiler, args, daemon.pid) if args.profile else None
        done = asyncio.Event()
        latencies: list[float] = []
        poller = asyncio.create_task(_poll_status(scratch.socket, done, latencies))
        cpu_before = _cpu_seconds(daemon.pid)
        started = time.perf_counter()
        replies = await asyncio.gather(*(_call(scratch.socket, f) for f in frames))
        wall, cpu = time.perf_counter() - started, _cpu_seconds(daemon.pid) - cpu_before
        burst = _Burst(wall, cpu, replies, latencies)
        done.set()
        await poller
        if profiler is not None:
            await asyncio.to_thread(_stop, profiler, signal.SIGINT)
    finally:
        await model.close()
    burst.sizes = f"branch {len(json.dumps(branch)) // 1024} KB, frame {len(frames[0]) // 1024} KB"
    burst.model = f"{model.calls} calls, at most {model.most_in_flight} in flight"
    return burst


def _start_profiler(args: argparse.Namespace, pid: int) -> subprocess.Popen[bytes]:
    """py-spy on the daemon, sampling without pausing it."""
    command = ["py-spy", "record", "--pid", str(pid), "--rate", "250", "--nonblocking"]
    profiler = subprocess.Popen(
        [*command, "--format", args.profile_format, "--output", args.profile],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(1.0)  # py-spy attaches before the burst starts
    return profiler


def _report(args: argparse.Namespace, burst: _Burst) -> None:
    wall, outcomes = burst.wall_s, Counter(_outcome(r) for r in burst.replies)
    lines = [f"session: {args.turns} turns, {burst.sizes}", f"model: {burst.model}"]
    lines.append(f"passes: {args.passes} concurrent, limit {args.limit}, model delay {args.delay:g} s")
    lines.append(f"wall: {wall:.2f} s   passes/s: {args.passes / wall:.1f}   daemon CPU: {burst.cpu_s:.2f} s")
    if burst.status_s:
        p50, p99 = (_percentile(burst.status_s, share) * 1000 for share in (0.5, 0.99))
        lines.append(f"status: p50 {p50:.1f} ms   p99 {p99:.1f} ms   ({len(burst.status_s)} calls)")
    lines.append(f"closed: {dict(outcomes)}")
    print("\n".join(lines))  # noqa: T201


def _stop(process: subprocess.Popen[bytes], sig: int) -> None:
    if process.poll() is None:
        process.send_signal(sig)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process, from /proc (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--passes", type=int, default=64, help="concurrent compact requests (default 64)")
    parser.add_argument("--limit", type=int, default=64, help="per-provider concurrency in longhaul.json")
    parser.add_argument("--delay", type=float, default=1.0, help="seconds the model waits before answering")
    parser.add_argument("--turns", type=int, default=36, help="turns in the session (default: ~170 KB)")
    parser.add_argument("--output-lines", type=int, default=90, help="lines of each tool result")
    parser.add_argument("--warmup", type=int, default=1, help="passes run before the measured burst")
    parser.add_argument("--profile", metavar="FILE", help="record the daemon with py-spy into FILE")
    parser.add_argument("--profile-format", default="raw", help="py-spy's --format (raw, flamegraph, …)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory (daemon.log)")
    args = parser.parse_args()
    scratch = _Scratch.at(Path(tempfile.mkdtemp(prefix="lh-bench-")))
    try:
        scratch.prepare(args.limit)
        daemon = scratch.start_daemon()
        try:
            burst = asyncio.run(_burst(args, scratch, daemon))
        finally:
            _stop(daemon, signal.SIGTERM)
        _report(args, burst)
    finally:
        if args.keep:
            print(f"scratch: {scratch.root}")  # noqa: T201
        else:
            shutil.rmtree(scratch.root, ignore_errors=True)


if __name__ == "__main__":
    main()
