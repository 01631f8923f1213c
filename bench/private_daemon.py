"""What the daemon benchmarks share: a private daemon, a scripted model, requests as the shim makes them.

Every benchmark runs the real ``python -m longhaul_daemon serve`` on a real socket in a scratch directory of
its own (its own HOME, agent dir, state dir and socket: nothing of the user's is read or written) against a
scripted OpenAI-compatible model on 127.0.0.1 that streams a Diff answer labelling every message it was asked
about, so every pass closes whole. Requests are built the way the shim builds them now: the session file and
its leaf named, each span message sent as a reference to its entry.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from longhaul_daemon.evaluation.synthetic import SyntheticSession

__all__ = [
    "API_KEY",
    "ModelProcess",
    "ModelStub",
    "Scratch",
    "StatusPoller",
    "call",
    "compact_params",
    "cpu_seconds",
    "frame",
    "peak_rss_mb",
    "percentile",
    "poll_status",
    "reset_peak_rss",
    "stop",
    "wait_serving",
]

_ASKED = re.compile(r"^Label exactly these messages: (.*)\.$", re.M)
_USER_ID = re.compile(r"u\d+")
API_KEY = "sk-bench-not-a-real-key-0000"
_START_TIMEOUT_S = 30.0


def compact_params(
    session: SyntheticSession, *, cwd: Path, agent: Path, base_url: str, inline: bool = False
) -> dict[str, Any]:
    """``compact`` params as the shim sends them for ``session``: the file and leaf named (with ``inline``,
    the branch as the shim sends it without a session file), the span as entry references."""
    model: dict[str, Any] = {"provider": "bench", "id": "bench-model", "api": "openai-completions"}
    model |= {"baseUrl": base_url, "reasoning": False, "contextWindow": 128_000, "maxTokens": 16_384}
    facts: dict[str, Any] = {"cwd": str(cwd), "sessionId": session.session_id, "agentDir": str(agent)}
    facts |= {"sessionFile": None if inline else str(session.path), "piVersion": "0.73.1", "model": model}
    facts |= {"thinkingLevel": "off", "env": {}}
    preparation = {
        "firstKeptEntryId": session.first_kept_id,
        "messagesToSummarize": [{"entryRef": entry_id} for entry_id in session.span_ids],
        "turnPrefixMessages": [],
        "isSplitTurn": False,
        "tokensBefore": session.bytes // 4,
        "previousSummary": None,
        "fileOps": {"read": [], "written": [], "edited": []},
    }
    params: dict[str, Any] = {"session": facts, "reason": None, "customInstructions": None}
    params |= {"preparation": preparation, "leafId": session.leaf_id, "branchEntries": None}
    params |= {"credentials": {"apiKey": API_KEY, "headers": {}}, "summarizer": None}
    if inline:
        with session.path.open("rb") as lines:
            next(lines)  # the header is not an entry
            params["branchEntries"] = [json.loads(line) for line in lines]
    return params


def frame(method: str, params: object, request_id: int) -> bytes:
    request = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    return json.dumps(request, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


@dataclass
class ModelStub:
    """An OpenAI-compatible chat-completions server with keep-alive; every answer waits ``delay_s``.

    A turns-mode request (its schema named ``<section>_section``) gets that section's answer; the first
    ``shows`` of them that may call a tool (four at a time, never for Now) get ``show`` calls of
    ``show_ref`` instead, as a model reading one item again and again."""

    delay_s: float
    shows: int = 0
    show_ref: str = "call_1"
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
        self.server = await asyncio.start_server(
            self._connection, "127.0.0.1", 0, backlog=512, limit=256 * 1024 * 1024
        )

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
        section = _section(request)
        base = {"id": f"chatcmpl-{self.calls}", "object": "chat.completion.chunk", "model": "bench-model"}
        finish = "stop"
        if section is None:
            delta: dict[str, Any] = {"role": "assistant", "content": json.dumps(_diff_answer(request))}
        elif self._show_now(request, section):
            self.shows -= 4
            calls = [_show_call(f"s{self.calls}_{n}", n, self.show_ref) for n in range(4)]
            delta, finish = {"role": "assistant", "content": "", "tool_calls": calls}, "tool_calls"
        else:
            delta = {"role": "assistant", "content": json.dumps(_section_answer(request, section))}
        chunks = [
            {**base, "choices": [{"index": 0, "delta": delta}]},
            {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
            {**base, "choices": [], "usage": {"prompt_tokens": len(raw) // 4, "completion_tokens": 80}},
        ]
        events = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
        head = (
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            f"x-request-id: req_{self.calls}\r\ncontent-length: {len(events)}\r\n\r\n"
        )
        return head.encode() + events

    def _show_now(self, request: dict[str, Any], section: str) -> bool:
        messages = request.get("messages") or [{}]
        opens_turn = messages[-1].get("role") != "tool" and request.get("tool_choice") != "none"
        return self.shows > 0 and opens_turn and section != "now"


def _diff_answer(request: dict[str, Any]) -> dict[str, Any]:
    """The Diff's answer: every message it asks about labelled ``not a rule``."""
    prompt = "\n".join(str(m.get("content")) for m in request.get("messages", []))
    asked = _ASKED.findall(prompt)
    ids = _USER_ID.findall(asked[-1]) if asked else []
    labels = [{"msg": uid, "label": "not a rule"} for uid in ids]
    answer = {"labels": labels, "decisions": [], "deadEnds": [], "narrative": "Ran the tests."}
    return answer | {"now": "Keep the tests green."}


def _schema(request: dict[str, Any]) -> dict[str, Any]:
    found = (request.get("response_format") or {}).get("json_schema") or {}
    return found if isinstance(found, dict) else {}


def _section(request: dict[str, Any]) -> str | None:
    """The turns-mode section a request asks for, from its structured-output schema's name."""
    name = str(_schema(request).get("name") or "")
    return name.removesuffix("_section") if name.endswith("_section") else None


def _section_answer(request: dict[str, Any], section: str) -> dict[str, Any]:
    """A passing answer of ``section``: every offered message labelled ``not a rule``, open errors listed."""
    properties = (_schema(request).get("schema") or {}).get("properties") or {}
    offered = (((properties.get("labels") or {}).get("items") or {}).get("properties") or {}).get("msg") or {}
    open_errors = ((properties.get("openErrors") or {}).get("items") or {}).get("enum") or []
    answers: dict[str, dict[str, Any]] = {
        "narrative": {"narrative": "Read the access log and ran the tests.", "excuses": []},
        "objective": {"objective": None},
        "labels": {
            "labels": [{"msg": m, "label": "not a rule", "words": None} for m in offered.get("enum", [])]
        },
        "decisions": {"decisions": [], "deadEnds": [], "openErrors": open_errors, "fixed": [], "excuses": []},
        "now": {"now": "Keep the tests green.", "excuses": []},
    }
    return answers.get(section, {})


def _show_call(call_id: str, index: int, ref: str) -> dict[str, Any]:
    arguments = json.dumps({"ref": ref})
    return {
        "index": index,
        "id": call_id,
        "type": "function",
        "function": {"name": "show", "arguments": arguments},
    }


class ModelProcess:
    """A :class:`ModelStub` in a process of its own, so its work (reading a 3 MB prompt, writing a 1 MB
    answer) never holds up the process that times the daemon. Use as a context manager."""

    def __init__(self, delay_s: float, shows: int = 0) -> None:
        self.delay_s = delay_s
        self.shows = shows
        self.calls = 0
        self.most_in_flight = 0
        self._process: subprocess.Popen[str] | None = None
        self.base_url = ""

    def __enter__(self) -> ModelProcess:
        command = [sys.executable, str(Path(__file__)), "model-stub", str(self.delay_s), str(self.shows)]
        self._process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        assert self._process.stdout is not None
        self.base_url = self._process.stdout.readline().strip()
        if not self.base_url.startswith("http://"):
            raise SystemExit("the scripted model did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._process is None:
            return
        self._process.send_signal(signal.SIGTERM)
        out, _ = self._process.communicate(timeout=30)
        counts = json.loads(out.strip().splitlines()[-1]) if out.strip() else {}
        self.calls, self.most_in_flight = counts.get("calls", 0), counts.get("mostInFlight", 0)


async def _serve_stub(delay_s: float, shows: int) -> None:
    """The child side of :class:`ModelProcess`: print the base URL, serve until SIGTERM, print the counts."""
    stub = ModelStub(delay_s=delay_s, shows=shows)
    await stub.start()
    print(stub.base_url, flush=True)  # noqa: T201
    stopped = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stopped.set)
    await stopped.wait()
    await stub.close()
    print(json.dumps({"calls": stub.calls, "mostInFlight": stub.most_in_flight}), flush=True)  # noqa: T201


class StatusPoller:
    """``status`` timed from a process of its own, so nothing this process does (parsing a large reply)
    shows up as the daemon's latency. Use as a context manager; :attr:`latencies` holds seconds."""

    def __init__(self, socket_path: Path, every_s: float = 0.005) -> None:
        self.socket_path = socket_path
        self.every_s = every_s
        self.latencies: list[float] = []
        self._process: subprocess.Popen[str] | None = None

    def __enter__(self) -> StatusPoller:
        command = [
            sys.executable,
            str(Path(__file__)),
            "status-poller",
            str(self.socket_path),
            str(self.every_s),
        ]
        self._process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        assert self._process.stdout is not None
        self._process.stdout.readline()  # "polling": the first status has been answered
        return self

    def __exit__(self, *exc: object) -> None:
        if self._process is None:
            return
        self._process.send_signal(signal.SIGTERM)
        out, _ = self._process.communicate(timeout=30)
        self.latencies = json.loads(out.strip().splitlines()[-1]) if out.strip() else []


async def _poll_until_term(socket_path: Path, every_s: float) -> None:
    """The child side of :class:`StatusPoller`."""
    done = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, done.set)
    await call(socket_path, frame("status", {}, 0))
    print("polling", flush=True)  # noqa: T201
    latencies: list[float] = []
    await poll_status(socket_path, done, latencies, every_s)
    print(json.dumps(latencies), flush=True)  # noqa: T201


async def call(socket_path: Path, request: bytes) -> dict[str, Any]:
    """One request on a connection of its own, as the shim makes a ``compact`` call."""
    reader, writer = await asyncio.open_unix_connection(str(socket_path), limit=256 * 1024 * 1024)
    try:
        writer.write(request)
        await writer.drain()
        reply: dict[str, Any] = json.loads(await reader.readuntil(b"\n"))
        return reply
    finally:
        writer.close()


async def wait_serving(socket_path: Path, daemon: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + _START_TIMEOUT_S
    while True:
        if daemon.poll() is not None:
            raise SystemExit(f"the daemon exited with {daemon.returncode}; see its log")
        with contextlib.suppress(OSError):
            await call(socket_path, frame("status", {}, 0))
            return
        if time.monotonic() > deadline:
            raise SystemExit("the daemon did not answer status in time")
        await asyncio.sleep(0.05)


async def wait_pass_loaded(scratch: Scratch, daemons: int = 1, timeout_s: float = 60.0) -> None:
    """Wait until the ``daemons``-th daemon started in ``scratch`` has loaded the pass (its ``pass_loaded``
    log line): a daemon runs for a while before a session's first compaction, so a pass timed right at
    start-up would time the import instead."""
    deadline = time.monotonic() + timeout_s
    log = scratch.root / "daemon.log"
    while log.read_bytes().count(b'"event":"pass_loaded"') < daemons:
        if time.monotonic() > deadline:
            raise RuntimeError(f"no pass_loaded line in {log}")
        await asyncio.sleep(0.05)


async def poll_status(
    socket_path: Path, done: asyncio.Event, latencies: list[float], every_s: float = 0.02
) -> None:
    """``status`` on one connection, again and again, until ``done``; each answer's latency is kept."""
    reader, writer = await asyncio.open_unix_connection(str(socket_path))
    try:
        request_id = 0
        while not done.is_set():
            request_id += 1
            started = time.perf_counter()
            writer.write(frame("status", {}, request_id))
            await writer.drain()
            await reader.readuntil(b"\n")
            latencies.append(time.perf_counter() - started)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(done.wait(), every_s)
    finally:
        writer.close()


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


@dataclass(frozen=True)
class Scratch:
    """The daemon's private world: HOME, agent dir, project cwd, sessions and socket, under one temp dir."""

    root: Path
    agent: Path
    cwd: Path
    sessions: Path
    socket: Path

    @classmethod
    def at(cls, root: Path) -> Scratch:
        root = root.resolve()  # the daemon resolves paths from its own working directory
        agent = root / "home" / ".pi" / "agent"
        return cls(root, agent, root / "project", agent / "sessions" / "bench", root / "run" / "daemon.sock")

    def prepare(self, settings: dict[str, Any]) -> None:
        for directory in (self.agent, self.cwd, self.sessions, self.socket.parent):
            directory.mkdir(parents=True, exist_ok=True)
        self.socket.parent.chmod(0o700)  # the daemon refuses a socket directory others can enter
        (self.agent / "longhaul.json").write_text(json.dumps(settings))

    def start_daemon(self, *serve: str) -> subprocess.Popen[bytes]:
        """``longhaul-daemon serve`` in this world, with ``serve``'s extra flags."""
        home = self.root / "home"
        env = os.environ | {"HOME": str(home), "XDG_RUNTIME_DIR": str(self.socket.parent)}
        env |= {"XDG_STATE_HOME": str(home / ".local/state"), "XDG_CONFIG_HOME": str(home / ".config")}
        env["PI_CODING_AGENT_DIR"] = str(self.agent)
        env.pop("LONGHAUL_SOCKET", None)
        with (self.root / "daemon.log").open("ab") as log:
            return subprocess.Popen(
                [sys.executable, "-m", "longhaul_daemon", "serve", "--socket", str(self.socket), *serve],
                env=env,
                cwd=self.root,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )


def stop(process: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
    if process.poll() is None:
        process.send_signal(sig)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process, from /proc (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_mb(pid: int) -> float:
    """The process's peak resident set (VmHWM) since it started or since :func:`reset_peak_rss`, in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def reset_peak_rss(pid: int) -> None:
    """Start a new peak-RSS measurement (Linux: writing 5 to clear_refs resets VmHWM)."""
    with contextlib.suppress(OSError):
        Path(f"/proc/{pid}/clear_refs").write_text("5")


if __name__ == "__main__" and sys.argv[1:2] == ["model-stub"]:
    asyncio.run(_serve_stub(float(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 0))
if __name__ == "__main__" and sys.argv[1:2] == ["status-poller"]:
    asyncio.run(_poll_until_term(Path(sys.argv[2]), float(sys.argv[3])))
