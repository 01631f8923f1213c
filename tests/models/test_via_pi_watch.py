"""Through pi, what a direct call has: the stream ended at the answer or at a loop, the forced answer tool
read as the answer, and a direct call refused for its credential finished through pi in the same call.

The peer stands for the shim (the socket side is tests/server/test_peer_stream.py, the real shim
client_shim/test/modelcall.test.mjs and the e2e suites); it streams an answer as ``model.delta`` notes the way
the shim does, and stops when the daemon sets ``stop``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from pydantic import SecretStr

from longhaul_daemon.models import Budget, CallTrace, FatalError, complete, make_client
from longhaul_daemon.models.http import HttpClient
from longhaul_daemon.models.request import Message, ModelRequest, ModelTarget
from longhaul_daemon.models.route_table import DirectRefusals
from longhaul_daemon.models.via_pi import NoteSink
from longhaul_daemon.passes.answers.extract import answer_shaped, answer_with_prose
from longhaul_daemon.passes.answers.schema import ANSWER_SCHEMA

from .scripted_http import Reply, json_reply, scripted_server
from .wires import OPENAI_COMPLETIONS, answer_stream

KEY = "sk-watch-key-4b7e1d2c9a"
ANSWER = {"labels": [], "decisions": [], "narrative": "Fixed the parser.", "now": "Tests pass."}


class StreamingShim:
    """Streams ``pieces`` as notes, one per tick; on ``stop`` replies with what it sent, ``stoppedEarly``."""

    def __init__(self, pieces: list[str], **reply: Any) -> None:
        self.pieces = pieces
        self.reply = reply
        self.params: list[dict[str, Any]] = []
        self.sent = 0
        self.stopped = False

    async def request(
        self,
        method: str,
        params: dict[str, Any],
        *,
        on_note: NoteSink | None = None,
        stop: anyio.Event | None = None,
    ) -> Any:
        self.params.append(params)
        text = ""
        for piece in self.pieces:
            if stop is not None and stop.is_set():
                self.stopped = True
                return {"text": text, "stopReason": "stop", "usage": {"input": 9}, "stoppedEarly": True}
            text += piece
            self.sent += 1
            if on_note is not None:
                on_note({"id": "d1", "text": piece})
            await anyio.lowlevel.checkpoint()
        return {"text": text, "stopReason": "stop", "usage": {"input": 9, "output": 40}, **self.reply}


def target(api: str = "bedrock-converse-stream", provider: str = "amazon-bedrock") -> ModelTarget:
    return ModelTarget(
        api=api, provider=provider, model_id="m", base_url="http://127.0.0.1:9", api_key=SecretStr(KEY)
    )


def diff_request(model: ModelTarget) -> ModelRequest:
    return ModelRequest(
        target=model,
        system="SYSTEM",
        messages=(Message("user", "PROMPT"),),
        max_output_tokens=512,
        output_schema=ANSWER_SCHEMA,
        stop_at_object=answer_shaped,
        cut_at_repeat=answer_with_prose,
    )


@pytest.fixture
async def client() -> AsyncIterator[HttpClient]:
    async with make_client() as http:
        yield http


@pytest.mark.anyio
async def test_through_pi_the_stream_ends_at_the_answer(client: HttpClient) -> None:
    answer = json.dumps(ANSWER)
    shim = StreamingShim(
        [answer[:20], answer[20:], "\n\nAnd now some prose " * 3, "more " * 40, "never sent"]
    )
    traces: list[CallTrace] = []
    result = await complete(
        diff_request(target()), budget=Budget.after(10), client=client, peer=shim, on_trace=traces.append
    )
    assert shim.stopped and shim.sent < len(shim.pieces)
    assert shim.params[0]["watch"] is True
    assert json.loads(result.text[: len(answer)]) == ANSWER
    assert result.stopped_early and traces[0].stopped_early
    assert result.usage.output >= len(result.text) // 3  # pi had not counted the output yet: estimated
    assert (traces[0].via, traces[0].via_why) == ("pi", "pi-only-api")


@pytest.mark.anyio
async def test_through_pi_a_looping_answer_is_cut_after_the_first_copy(client: HttpClient) -> None:
    head = '{"labels": [], "narrative": "N.", "now": "W.", "decisions": ['
    item = '{"text": "use the fast path", "turn": "u1"}'
    shim = StreamingShim([head, item, ", ", item, ", ", item, ", ", item] + [", " + item] * 50)
    result = await complete(diff_request(target()), budget=Budget.after(10), client=client, peer=shim)
    assert shim.stopped
    cut = json.loads(result.text)
    assert cut["decisions"] == [json.loads(item)] and cut["narrative"] == "N."


@pytest.mark.anyio
async def test_through_pi_the_forced_answer_tool_is_the_answer(client: HttpClient) -> None:
    anthropic = target("anthropic-messages", "vercel-ai-gateway")
    shim = StreamingShim(
        [],
        toolCalls=[{"id": "t1", "name": ANSWER_SCHEMA.name, "arguments": ANSWER}],
    )
    traces: list[CallTrace] = []
    result = await complete(
        diff_request(anthropic), budget=Budget.after(10), client=client, peer=shim, on_trace=traces.append
    )
    params = shim.params[0]
    assert params["answerTool"] == ANSWER_SCHEMA.name
    assert params["payload"]["tool_choice"] == {"type": "tool", "name": ANSWER_SCHEMA.name}
    assert [t["name"] for t in params["payload"]["tools"]] == [ANSWER_SCHEMA.name]
    assert json.loads(result.text) == ANSWER and result.tool_calls == ()
    assert (traces[0].structured, traces[0].via_why) == ("tool", "not-proven")


def refused(status: int, message: str) -> Reply:
    return json_reply(
        {"type": "error", "error": {"type": "authentication_error", "message": message}}, status=status
    )


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("status", "message"),
    [
        (401, "invalid x-api-key"),
        (403, "forbidden"),
        (400, "This credential is only authorized for use with Claude Code."),
    ],
)
async def test_a_direct_call_refused_for_its_credential_finishes_through_pi_and_the_route_stays_there(
    client: HttpClient, status: int, message: str
) -> None:
    answer = json.dumps(ANSWER)
    with scripted_server([refused(status, message)]) as server:
        local = replace(target(OPENAI_COMPLETIONS.api, "my-llama"), base_url=server.url + "/v1")
        shim = StreamingShim([answer])
        refusals = DirectRefusals()
        traces: list[CallTrace] = []
        result = await complete(
            diff_request(local),
            budget=Budget.after(10),
            client=client,
            peer=shim,
            on_trace=traces.append,
            refusals=refusals,
        )
        assert json.loads(result.text) == ANSWER
        assert [(t.via, t.via_why, t.error) for t in traces] == [
            ("daemon", "custom-openai-compatible", "FatalError"),
            ("pi", f"refused-{status}", None),
        ]
        assert KEY not in json.dumps(shim.params)  # pi resolves the credential itself
        assert len(server.requests) == 1  # not asked again without the schema: the credential was refused
        again = await complete(
            diff_request(local), budget=Budget.after(10), client=client, peer=shim, refusals=refusals
        )
        assert json.loads(again.text) == ANSWER
        assert len(server.requests) == 1  # the second call went straight through pi


@pytest.mark.anyio
async def test_a_400_that_does_not_refuse_the_credential_is_not_retried_through_pi(
    client: HttpClient,
) -> None:
    with scripted_server(
        [refused(400, "max_tokens is too large"), refused(400, "max_tokens is too large")]
    ) as server:
        local = replace(target(OPENAI_COMPLETIONS.api, "my-llama"), base_url=server.url + "/v1")
        shim = StreamingShim(["never"])
        with pytest.raises(FatalError):
            await complete(
                replace(diff_request(local), output_schema=None),
                budget=Budget.after(10),
                client=client,
                peer=shim,
            )
        assert shim.params == []


@pytest.mark.anyio
async def test_without_a_shim_an_oauth_credential_is_never_sent_by_the_daemon(client: HttpClient) -> None:
    with scripted_server([answer_stream(OPENAI_COMPLETIONS, ["{}"])]) as server:
        oauth = replace(
            target("anthropic-messages", "anthropic"),
            base_url=server.url,
            api_key=SecretStr("sk-ant-oat01-subscription-token"),
        )
        with pytest.raises(FatalError) as raised:
            await complete(diff_request(oauth), budget=Budget.after(10), client=client)
        assert raised.value.code == "needs-pi"
        assert server.requests == []


@pytest.mark.anyio
async def test_through_pi_a_loop_inside_a_string_ends_the_call_as_a_direct_stream_would(
    client: HttpClient,
) -> None:
    """FAIL-7, ours: pi streams a narrative written as "10:" again and again; the daemon stops the shim once
    the loop is plain, and the reply stops inside the narrative after one copy, cut off and marked looped."""
    head = '{"labels": [], "narrative": "'
    shim = StreamingShim([head, *["10:"] * 200])
    traces: list[CallTrace] = []
    result = await complete(
        diff_request(target()), budget=Budget.after(10), client=client, peer=shim, on_trace=traces.append
    )
    assert shim.stopped and shim.sent < 40  # 22 copies make the loop; pi never wrote the other 178
    assert result.text == head + "10:"
    assert result.looped and result.cut_off and result.stopped_early
    assert traces[0].as_dict()["looped"] is True
