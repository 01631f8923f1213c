"""What passes share through a serving daemon: one HTTP client, and per-provider limits set in longhaul.json.

Real daemons on real sockets run real passes against loopback model servers; only the model is scripted.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import pytest
from models.scripted_http import scripted_server
from models.wires import KEY
from passes.model_steps import answer_reply, with_model, with_settings
from passes.pi_branch import Session
from pydantic import SecretStr

from longhaul_daemon.models.client import complete
from longhaul_daemon.protocol import CompactParams, ModelCredentials, ModelFacts

from .in_process_daemon import WAIT_S, connect, eventually, running_daemon

pytestmark = pytest.mark.anyio


class GateServer:
    """A model that holds every request until ``release`` is set, counting how many it holds at once."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.seen = 0
        self.holding = 0
        self.most = 0
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05})

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        gate = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", "0")))
                with gate._lock:
                    gate.seen += 1
                    gate.holding += 1
                    gate.most = max(gate.most, gate.holding)
                gate.release.wait(WAIT_S)
                with gate._lock:
                    gate.holding -= 1
                # fatal: no retry (a 400 would be asked once more without the answer schema, issue 11)
                body = json.dumps({"error": {"type": "permission_error"}}).encode()
                self.send_response(403)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        return Handler

    def __enter__(self) -> GateServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=WAIT_S)


@pytest.fixture
def session(short_tmp: Path) -> Session:
    (short_tmp / "project").mkdir()
    s = Session(short_tmp / "project")
    s.user("Build the CSV export.")
    s.bash("python -m export", "wrote out.csv")
    s.user("Keep going.")
    return s


def on_gate(params: CompactParams, gate: GateServer) -> CompactParams:
    """``params`` whose session model is ``gate``: ``with_model`` for a server of another kind."""
    facts = ModelFacts(
        provider="test", id="session-model", api="openai-completions", baseUrl=gate.url + "/v1"
    )
    session = params.session.model_copy(update={"model": facts})
    return params.model_copy(
        update={"session": session, "credentials": ModelCredentials(apiKey=SecretStr(KEY))}
    )


def wire(params: CompactParams, session_id: str) -> dict[str, Any]:
    """``params`` as the shim sends them, for session ``session_id``, with the model's key in clear."""
    sent = params.model_dump(mode="json")
    sent["session"]["sessionId"] = session_id
    sent["credentials"] = {"apiKey": KEY}
    return sent


async def compact(socket_path: Path, params: dict[str, Any]) -> dict[str, Any]:
    async with connect(socket_path) as connection:
        reply: dict[str, Any] = await connection.call("compact", params)
    assert "result" in reply, reply
    return reply


async def test_one_http_client_serves_every_pass_and_is_closed_when_the_daemon_stops(
    session: Session, short_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clients: list[object] = []

    async def recording(*args: Any, **kwargs: Any) -> Any:
        clients.append(kwargs["client"])
        return await complete(*args, **kwargs)

    monkeypatch.setattr("longhaul_daemon.passes.model_calls.complete", recording)
    answers = [answer_reply({"u1": "not a rule", "u2": "not a rule"}) for _ in range(2)]
    with scripted_server(answers) as server:
        params = with_settings(with_model(session.params(len(session.entries) - 1), server), {})
        async with running_daemon(short_tmp / "d.sock") as handle:
            shared = handle.services.http_client
            assert shared is not None and not shared.is_closed
            for session_id in ("s1", "s2"):
                reply = await compact(handle.socket_path, wire(params, session_id))
                assert reply["result"]["after"]["spanRecord"]["closedAs"] == "whole"
            assert not shared.is_closed  # a finished pass leaves the daemon's client open
    assert len(clients) == 2 and all(client is shared for client in clients)
    assert shared.is_closed


@pytest.mark.parametrize(
    ("concurrency", "limit"),
    [({"default": 2}, 2), ({"default": 1, "test": 3}, 3)],
    ids=["default", "per-provider"],
)
async def test_a_daemon_limit_of_n_lets_n_calls_run_at_once(
    session: Session, short_tmp: Path, concurrency: dict[str, int], limit: int
) -> None:
    """``serve --concurrency``: the daemon's own limit, shared by every session's passes."""
    with GateServer() as gate:
        params = on_gate(session.params(len(session.entries) - 1), gate)
        assert params.session.model is not None
        key = f"{params.session.model.provider}@{params.session.model.baseUrl}"
        replies: list[dict[str, Any]] = []
        async with running_daemon(short_tmp / "d.sock", concurrency=concurrency) as handle:

            async def one(session_id: str) -> None:
                replies.append(await compact(handle.socket_path, wire(params, session_id)))

            with anyio.fail_after(WAIT_S):
                async with anyio.create_task_group() as group:
                    for n in range(limit + 1):
                        group.start_soon(one, f"s{n}")
                    await eventually(lambda: gate.holding == limit)
                    limiter = handle.services.provider_limits.limiter(key)
                    await eventually(lambda: limiter.statistics().tasks_waiting == 1)
                    assert gate.seen == limit  # the one past the limit waits in the daemon, not at the model
                    gate.release.set()
        assert gate.seen == limit + 1 and gate.most == limit
        assert len(replies) == limit + 1


async def test_a_projects_longhaul_json_never_changes_the_daemon_wide_limit(
    session: Session, short_tmp: Path
) -> None:
    """Each pass used to resize the shared limiter from its own project's file, so the last pass set the
    limit for every session. Now a file's ``concurrency`` changes nothing and is reported to its user."""
    with scripted_server([answer_reply({"u1": "rule", "u2": "not a rule"})]) as server:
        base = with_model(session.params(len(session.entries) - 1), server)
        params = with_settings(base, {"concurrency": {"default": 1, "test": 1}})
        assert params.session.model is not None
        key = f"{params.session.model.provider}@{params.session.model.baseUrl}"
        async with running_daemon(short_tmp / "d.sock", concurrency={"test": 3}) as handle:
            reply = await compact(handle.socket_path, wire(params, "s1"))
            limiter = handle.services.provider_limits.limiter(key, provider="test")
            assert limiter.total_tokens == 3
            assert '"concurrency" in' in reply["result"]["notice"]  # the user learns it applies to nothing
            config = handle.services.status().config
            assert config is not None and any("serve --concurrency" in p for p in config.problems)
