"""What passes share through a serving daemon: one HTTP client.

Real daemons on real sockets run real passes against loopback model servers; only the model is scripted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from models.scripted import scripted_server
from models.wires import KEY
from passes.model_steps import answer_reply, with_model, with_settings
from passes.pi_branch import Session

from longhaul_daemon.models.client import complete
from longhaul_daemon.protocol import CompactParams

from .harness import connect, running_daemon

pytestmark = pytest.mark.anyio


@pytest.fixture
def session(short_tmp: Path) -> Session:
    (short_tmp / "project").mkdir()
    s = Session(short_tmp / "project")
    s.user("Build the CSV export.")
    s.bash("python -m export", "wrote out.csv")
    s.user("Keep going.")
    return s


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
