"""Turns mode against a hostile model, through a real daemon on a real socket: what the model writes never
crosses to the other route, one bad reply never ends the pass, and each close says what happened.

The model server speaks the real Chat Completions wire (SSE, ``delta.tool_calls``); every request the daemon
sends it is kept and searched. The pass runs with both routes' credentials, as the shim sends them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from models.scripted_http import Reply, ScriptedServer, json_reply, scripted_server
from models.tool_wires import Call, tool_reply
from models.wires import OPENAI_COMPLETIONS
from passes.pi_branch import Session
from passes.turns_steps import GOOD, labels_answer, section_reply
from server.in_process_daemon import connect, running_daemon

from longhaul_daemon.protocol import FileOps

pytestmark = pytest.mark.anyio
WIRE = OPENAI_COMPLETIONS
SESSION_KEY = "sk-Q7w2Er9Ty4Ui8Op3As6DkV1"
SUMMARIZER_KEY = "sk-Hh3Jj8Gg2Ff6Dd1SaX0zC5"
LABELS: dict[str, str | tuple[str, str]] = {"u1": "rule", "u2": "not a rule"}


def leaked(text: str) -> list[str]:
    """Every run of 8 characters of either key found in ``text``."""
    return [
        k[i : i + 8] for k in (SESSION_KEY, SUMMARIZER_KEY) for i in range(len(k) - 7) if k[i : i + 8] in text
    ]


def good_replies() -> list[Reply]:
    answers: dict[str, Any] = {**GOOD, "labels": labels_answer(LABELS)}
    return [
        section_reply(WIRE, name, answers[name])
        for name in ("narrative", "objective", "labels", "decisions", "now")
    ]


def request(tmp: Path, server: ScriptedServer, *, summarizer: bool = False) -> dict[str, Any]:
    """A turns-mode ``compact`` of a small span, the model(s) on ``server``, with the keys as the shim sends
    them; with ``summarizer``, a routed summarizer on the same server ahead of the session model."""
    s = Session(tmp)
    s.user("Never add new dependencies without asking me first.")
    s.bash("pytest -q", "1 failed", code=1)
    s.user("Keep going.")
    agent = tmp / "agent"
    agent.mkdir(exist_ok=True)
    settings: dict[str, Any] = {"narrativeMode": "turns"}
    if summarizer:
        settings["summarizer"] = "cheap/s"
    (agent / "longhaul.json").write_text(json.dumps(settings))
    params = s.params(len(s.entries) - 1, ops=FileOps(edited=["export.py"])).model_dump(mode="json")
    model = {"provider": "fake", "id": "m", "api": "openai-completions", "baseUrl": server.url + "/v1"}
    params["session"] |= {"agentDir": str(agent), "model": {**model, "maxTokens": 16_384}}
    params["credentials"] = {"apiKey": SESSION_KEY, "headers": {}}
    if summarizer:
        params["summarizer"] = {
            "spec": "cheap/s",
            "model": {**model, "provider": "cheap", "id": "s", "maxTokens": 16_384},
            "credentials": {"apiKey": SUMMARIZER_KEY, "headers": {}},
        }
    return params


async def run(tmp: Path, server: ScriptedServer, params: dict[str, Any], **serve: Any) -> tuple[Any, Any]:
    async with running_daemon(tmp / "d.sock", **serve) as daemon, connect(daemon.socket_path) as conn:
        with anyio.fail_after(60):
            reply = await conn.call("compact", params)
        status = await conn.call("status", {})
    return reply["result"], status["result"]


def records(tmp: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for line in (tmp / "agent" / "logs" / "compaction-state.jsonl").read_text().splitlines()
    ]


async def test_a_key_echoed_into_tool_call_ids_and_names_never_reaches_either_route(short_tmp: Path) -> None:
    """The summarizer echoes its own key into a call's id, name and arguments, then refuses with a 401: the
    pass moves to the session model, which also echoes its key. No later request, on either route, carries a
    piece of either key: calls go back under the daemon's ids, an unknown tool's name is never repeated."""
    echo = [
        Call(SUMMARIZER_KEY, "show", {"ref": SUMMARIZER_KEY}),
        Call(f"id-{SUMMARIZER_KEY}", SUMMARIZER_KEY, {"ref": "u1"}),
    ]
    refused = json_reply({"error": {"message": f"Incorrect API key provided: {SUMMARIZER_KEY}"}}, status=401)
    own_echo = tool_reply(WIRE, [Call(SESSION_KEY, SESSION_KEY, {"ref": SESSION_KEY})])
    script = [tool_reply(WIRE, echo), refused, own_echo, *good_replies()]
    with scripted_server(script) as server:
        result, status = await run(short_tmp, server, request(short_tmp, server, summarizer=True))
        sent = [(r.headers.get("authorization"), r.body) for r in server.requests]
    assert [auth for auth, _ in sent[:3]] == [f"Bearer {SUMMARIZER_KEY}"] * 2 + [f"Bearer {SESSION_KEY}"]
    for number, (_, body) in enumerate(sent[1:], start=2):
        assert not leaked(json.dumps(body)), f"request {number} carries a piece of a key"
    calls = [c for _, body in sent for m in body["messages"] for c in m.get("tool_calls", [])]
    assert {c["id"] for c in calls} <= {f"show_{n}" for n in range(1, 10)}
    assert {c["function"]["name"] for c in calls} == {"show", "unknown_tool"}
    assert result["diagnostics"]["route"]["why"] == "failed:FatalError"
    assert result["after"]["spanRecord"]["closedAs"] == "whole"
    assert not leaked(json.dumps(result)) and not leaked(json.dumps(status))
    assert not leaked((short_tmp / "agent" / "logs" / "compaction-state.jsonl").read_text())


async def test_a_5_mb_argument_and_300_calls_in_one_reply_cost_the_conversation_little(
    short_tmp: Path,
) -> None:
    """One hostile reply used to fill the room (arguments kept whole, measured as Python repr) and end every
    later section context-full. Its calls are now kept bounded, and the pass closes whole."""
    flood = [Call("big", "show", {"ref": "u1", "pad": "\u202e" * 1_000_000 + "x" * 4_000_000})]
    flood += [Call(f"c{n}", "show", {"ref": f"u{n}"}) for n in range(300)]
    with scripted_server([tool_reply(WIRE, flood), *good_replies()]) as server:
        result, _ = await run(short_tmp, server, request(short_tmp, server))
        after = server.requests[1].body
    narrative = result["diagnostics"]["narrative"]
    assert result["after"]["spanRecord"]["closedAs"] == "whole", narrative["sections"]
    assert set(narrative["sections"].values()) <= {"accepted", "repaired"}
    kept = [c for m in after["messages"] for c in m.get("tool_calls", [])]
    assert len(kept) == 6 and all(len(c["function"]["arguments"]) <= 60 for c in kept)
    assert len(json.dumps(after)) < 64_000  # the whole next request, the Digest included
    assert "295 more calls in your reply were not run" in json.dumps(after)


async def test_a_429_asking_for_an_hour_closes_rate_limited_in_the_record_status_and_notice(
    short_tmp: Path,
) -> None:
    limited = json_reply({"error": {"type": "rate_limit_error"}}, status=429, headers={"retry-after": "3600"})
    with scripted_server([limited] * 5) as server:
        result, status = await run(short_tmp, server, request(short_tmp, server))
        assert len(server.requests) == 5  # one per section: no wait, no retry past the budget
    assert result["after"]["spanRecord"]["reason"] == "rate-limited"
    assert "(rate-limited)" in result["notice"]
    assert set(result["diagnostics"]["narrative"]["sections"].values()) == {"unfinished:rate-limited"}
    assert status["passes"]["reasons"] == {"rate-limited": 1}
    [compaction] = [r for r in records(short_tmp) if r["event"] == "compaction"]
    assert compaction["narrative"]["reason"] == "rate-limited"
    assert set(compaction["narrative"]["errors"]) == {"RateLimited"}


async def test_a_model_that_only_ever_calls_show_closes_as_a_tool_loop(short_tmp: Path) -> None:
    looping = [tool_reply(WIRE, [Call(f"c{n}", "show", {"ref": "u1"})]) for n in range(200)]
    with scripted_server(looping) as server:
        result, status = await run(short_tmp, server, request(short_tmp, server))
    assert result["after"]["spanRecord"]["reason"] == "tool-loop"
    assert set(result["diagnostics"]["narrative"]["sections"].values()) == {"unfinished:tool-loop"}
    assert "(tool-loop)" in result["notice"] and status["passes"]["reasons"] == {"tool-loop": 1}
