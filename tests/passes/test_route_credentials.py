"""Each model's credential goes only where pi would send it, whichever way a pass's calls go.

A pass with a summarizer route and the session model holds two credentials. Whether a call goes direct,
through pi, or is refused and retried through pi, the summarizer's key and header reach only the summarizer's
server, the session's key only the session's, each in the one header pi puts it in, and ``model.complete``
carries no credential at all (pi resolves its own). Real passes, a scripted provider on loopback for each
model, and a stand-in shim bound to the pass as a connection binds the real one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from models.scripted_http import Recorded, ScriptedServer, json_reply, scripted_server
from models.wires import KEY
from pydantic import SecretStr

from longhaul_daemon.models.access import ModelAccess
from longhaul_daemon.models.via_pi import NoteSink, ShimErrorReply
from longhaul_daemon.passes.run import run_pass
from longhaul_daemon.protocol import (
    CompactParams,
    CompactResult,
    ModelCredentials,
    ModelFacts,
    SummarizerRoute,
)

from .model_steps import SPEC, answer_reply, state_of, with_model, with_settings
from .pi_branch import Session

pytestmark = pytest.mark.anyio

SUMMARIZER_KEY = "sk-summarizer-route-77c1e9"
SUMMARIZER_HEADER = "hdr-summarizer-secret-2f8a"
OAUTH_TOKEN = "sk-ant-oat01-subscription-4d2b"
ANSWER = {"labels": [{"msg": "u1", "label": "not a rule"}], "narrative": "N.", "now": "W."}


class RecordingShim:
    """Answers ``model.complete`` with ``outcome`` (a reply, or an error to raise) and keeps the params."""

    def __init__(self, outcome: object) -> None:
        self.outcome = outcome
        self.params: list[dict[str, Any]] = []

    async def request(
        self,
        method: str,
        params: dict[str, Any],
        *,
        on_note: NoteSink | None = None,
        stop: anyio.Event | None = None,
    ) -> Any:
        self.params.append(params)
        if isinstance(self.outcome, BaseException):
            raise self.outcome
        return self.outcome


@pytest.fixture
def session(tmp_path: Any) -> Session:
    s = Session(tmp_path)
    s.user("Please keep the header row as it is.")
    s.bash("pytest -q", "1 failed", code=1)
    s.user("Keep going.")
    return s


@pytest.fixture
def session_server() -> Iterator[ScriptedServer]:
    with scripted_server([]) as running:
        yield running


def summarizer(server_url: str, *, provider: str, api: str, key: str) -> SummarizerRoute:
    facts = ModelFacts(provider=provider, id="cheap", api=api, baseUrl=server_url, maxTokens=4096)
    credentials = ModelCredentials(apiKey=SecretStr(key), headers={"x-team": SecretStr(SUMMARIZER_HEADER)})
    return SummarizerRoute(spec=f"{provider}/cheap", model=facts, credentials=credentials)


async def run_with_shim(params: CompactParams, shim: RecordingShim, access: ModelAccess) -> CompactResult:
    # as a connection hands the pass its own shim
    return await run_pass(params, pass_id="p1", access=access, peer=shim)


def carried(requests: list[Recorded]) -> str:
    return json.dumps([{"headers": r.headers, "body": r.body} for r in requests])


async def test_a_refused_summarizer_goes_through_pi_then_the_session_model_each_with_its_own_key(
    session: Session, session_server: ScriptedServer
) -> None:
    session_server.script.append(answer_reply({"u1": "not a rule", "u2": "not a rule"}))
    refusal = json_reply(
        {"error": {"message": "Incorrect API key provided", "type": "invalid_api_key"}}, status=401
    )
    shim = RecordingShim(ShimErrorReply(-32010, {"kind": "fatal", "status": 401}))
    access = ModelAccess()
    with scripted_server([refusal]) as routed:
        route = summarizer(routed.url + "/v1", provider="cheap", api="openai-completions", key=SUMMARIZER_KEY)
        params = with_model(session.params(len(session.entries) - 1), session_server, summarizer=route)
        params = with_settings(params, {"summarizer": route.spec})
        result = await run_with_shim(params, shim, access)
        [direct] = routed.requests
    assert state_of(result).workLog[-1].closedAs == "whole"
    assert result.diagnostics is not None and result.diagnostics.route.used == SPEC
    assert {k.lower(): v for k, v in direct.headers.items()}["authorization"] == f"Bearer {SUMMARIZER_KEY}"
    assert direct.headers.get("x-team") == SUMMARIZER_HEADER
    assert KEY not in carried(routed.requests)
    session_calls = carried(session_server.requests)
    assert SUMMARIZER_KEY not in session_calls and SUMMARIZER_HEADER not in session_calls
    assert all(r.headers.get("authorization") == f"Bearer {KEY}" for r in session_server.requests)
    through_pi = json.dumps(shim.params)
    assert len(shim.params) == 1 and shim.params[0]["model"] == {"provider": "cheap", "id": "cheap"}
    assert all(secret not in through_pi for secret in (KEY, SUMMARIZER_KEY, SUMMARIZER_HEADER))
    narrative = result.diagnostics.narrative
    assert narrative["via"] == {"daemon": 2, "pi": 1}
    assert narrative["viaWhy"] == {"daemon:custom-openai-compatible": 2, "pi:refused-401": 1}
    [health] = [h for h in access.health.snapshot() if h.route == "cheap/cheap"]
    assert (health.via, health.viaWhy) == ("pi", "refused-401")


async def test_an_oauth_summarizer_is_only_ever_called_by_pi(
    session: Session, session_server: ScriptedServer
) -> None:
    shim = RecordingShim(
        {"text": json.dumps(ANSWER), "stopReason": "stop", "usage": {"input": 5, "output": 9}}
    )
    with scripted_server([]) as anthropic:
        route = summarizer(anthropic.url, provider="anthropic", api="anthropic-messages", key=OAUTH_TOKEN)
        params = with_model(session.params(len(session.entries) - 1), session_server, summarizer=route)
        params = with_settings(params, {"summarizer": route.spec})
        result = await run_with_shim(params, shim, ModelAccess())
        assert anthropic.requests == []  # the daemon never sent the token, in any header
    assert session_server.requests == []
    assert result.diagnostics is not None and result.diagnostics.route.used == route.spec
    assert result.diagnostics.narrative["viaWhy"] == {"pi:oauth": len(shim.params)}
    through_pi = json.dumps(shim.params)
    assert OAUTH_TOKEN not in through_pi and SUMMARIZER_HEADER not in through_pi and KEY not in through_pi
