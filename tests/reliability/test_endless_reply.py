"""Issue 12 item 7: a model that streams without end costs one capped call, not the daemon's memory.

A loopback server answers the Diff's call with Chat Completions deltas forever. The real daemon must stop
reading at the reply cap (32 MiB), close the connection, not retry, and close the span narrative-less with
``model-error`` well inside its budget; its peak memory grows by about the cap, not by what was streamed.
Before the cap the same stream drove a daemon from 58 MB to 393 MB and the pass ran until its budget.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from daemon_under_test import DaemonUnderTest, rss_mb

from longhaul_daemon.evaluation.synthetic import write_session

WAIT_S = 90.0  # bounds the reply wait so a regression fails instead of hanging; never an assertion of speed
GROWTH_BOUND_MB = 200  # the cap is 32 MiB; the reply's text and its parsing stay well under this


class EndlessModel:
    """Streams the same delta chunk until the client goes; counts calls and bytes sent."""

    def __init__(self) -> None:
        self.calls = 0
        self.sent = 0
        self.client_left = threading.Event()
        choice = {"index": 0, "delta": {"content": "and again, " * 20}}
        delta = {"id": "c", "object": "chat.completion.chunk", "choices": [choice]}
        self._chunk = (b"data: " + json.dumps(delta).encode() + b"\n\n") * 200

    def handler(self) -> type[BaseHTTPRequestHandler]:
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", "0")))
                model.calls += 1
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                frame = f"{len(model._chunk):x}\r\n".encode() + model._chunk + b"\r\n"
                try:
                    while True:
                        self.wfile.write(frame)
                        model.sent += len(model._chunk)
                except OSError:
                    model.client_left.set()
                    self.close_connection = True

        return Handler


@contextmanager
def endless_model() -> Iterator[tuple[EndlessModel, str]]:
    model = EndlessModel()
    server = ThreadingHTTPServer(("127.0.0.1", 0), model.handler())
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield model, f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def compact_request(daemon: DaemonUnderTest, base_url: str) -> bytes:
    """A ``compact`` as the shim sends it: a 200 KB pi session file, its span by entry reference."""
    session = write_session(
        daemon.workdir / "agent" / "s.jsonl", total_bytes=200_000, cwd=str(daemon.workdir / "project")
    )
    model = {"provider": "t", "id": "endless", "api": "openai-completions", "baseUrl": base_url}
    facts = {
        "cwd": str(daemon.workdir / "project"),
        "sessionId": session.session_id,
        "agentDir": str(daemon.workdir / "agent"),
        "sessionFile": str(session.path),
        "piVersion": "0.73.1",
        "model": model | {"reasoning": False, "contextWindow": 128_000, "maxTokens": 16_384},
    }
    preparation = {
        "firstKeptEntryId": session.first_kept_id,
        "messagesToSummarize": [{"entryRef": entry_id} for entry_id in session.span_ids],
        "tokensBefore": session.bytes // 4,
    }
    params = {
        "session": facts,
        "preparation": preparation,
        "leafId": session.leaf_id,
        "credentials": {"apiKey": "sk-endless-test-0000", "headers": {}},
    }
    request = {"jsonrpc": "2.0", "id": 1, "method": "compact", "params": params}
    return json.dumps(request).encode() + b"\n"


def call(socket_path: Path, request: bytes) -> dict[str, Any]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(WAIT_S)
        conn.connect(str(socket_path))
        conn.sendall(request)
        reply = b""
        while not reply.endswith(b"\n"):
            piece = conn.recv(1 << 20)
            if not piece:
                break
            reply += piece
    answer: dict[str, Any] = json.loads(reply)
    return answer


def test_issue12_an_endless_stream_is_cut_at_the_cap_and_the_span_closes_narrative_less(
    tmp_path: Path,
) -> None:
    daemon = DaemonUnderTest(tmp_path, "--pass-budget", "120")
    with endless_model() as (model, base_url):
        daemon.start()
        try:
            before = rss_mb(daemon.pid)
            reply = call(daemon.socket_path, compact_request(daemon, base_url))
            peak = rss_mb(daemon.pid, "VmHWM")
            assert model.client_left.wait(WAIT_S), "the daemon never closed the stream"
        finally:
            daemon.stop()
    result = reply["result"]
    record = result["after"]["spanRecord"]
    assert (record["closedAs"], record["reason"]) == ("narrative-less", "model-error"), daemon.log_tail()
    assert model.calls == 1  # ReplyTooLarge is not retried
    assert model.sent >= 32 * 1024 * 1024  # it read up to the cap
    assert peak - before < GROWTH_BOUND_MB, (before, peak)
    print(f"endless reply: streamed {model.sent / 1e6:.1f} MB; daemon RSS {before:.0f} -> peak {peak:.0f} MB")
