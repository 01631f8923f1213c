"""Credentials echoed by a provider and repeated by the model reach no output of a pass (issue 12, item 4).

A real daemon on a real socket runs a real pass whose two models (summarizer and session model) each carry a
distinct API key and a distinct header secret. The scripted provider quotes pieces of them in its 401 and 500
error bodies, error codes and request-id headers, then answers with a Diff whose narrative, Now and decisions
hold whole credentials and pieces of them. Every output is then searched for any run of 8 characters of any
of the four: the reply, the operational log, the record log, ``status`` (JSON and table).
"""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path
from typing import Any

import anyio
import pytest
from models.scripted_http import json_reply, scripted_server
from models.wires import OPENAI_COMPLETIONS
from server.in_process_daemon import connect, running_daemon

from longhaul_daemon.ops.status_view import format_status
from longhaul_daemon.protocol import StatusResult
from longhaul_daemon.secrets.redaction import MARK

# Distinct, and free of words an output holds anyway ("summarizer"), so any hit is a leak.
SESSION_KEY = "sk-Q7w2Er9Ty4Ui8Op3As6DkV1"
SESSION_HEADER = "hv-Zx5Cv1Bn7Mm2Kk9LqW4eR8"
SUMMARIZER_KEY = "sk-Hh3Jj8Gg2Ff6Dd1SaX0zC5"
SUMMARIZER_HEADER = "hv-Pp4Oo9Ii3Uu7Yy2TtR6eW1"
CANARIES = (SESSION_KEY, SESSION_HEADER, SUMMARIZER_KEY, SUMMARIZER_HEADER)


@pytest.fixture
def operational_log_level() -> int:
    return logging.DEBUG


def leaked(text: str) -> list[str]:
    """Every run of 8 characters of a canary found in ``text``."""
    return [c[i : i + 8] for c in CANARIES for i in range(len(c) - 7) if c[i : i + 8] in text]


def _echo(status: int, secret: str) -> Any:
    body = {"error": {"message": f"Incorrect API key provided: {secret}", "code": f"bad_key_{secret[3:17]}"}}
    return json_reply(body, status=status, headers={"x-request-id": f"req-{secret[-12:]}"})


def _answer() -> Any:
    answer = {
        "labels": [{"msg": "u1", "label": "not a rule"}],
        "narrative": f"Tried the key {SESSION_KEY} and the header {SUMMARIZER_HEADER[2:20]}.",
        "now": f"Retry with {SUMMARIZER_KEY[:12]}…{SUMMARIZER_KEY[12:]} and {SESSION_HEADER}.",
        "decisions": [{"text": f"Keep token {SESSION_HEADER[4:16]} out of the repo.", "evidence": ["u1"]}],
    }
    return OPENAI_COMPLETIONS.stream_reply([json.dumps(answer)])


def _request(agent: Path, base_url: str) -> dict[str, Any]:
    model = {"provider": "fake", "id": "m", "api": "openai-completions", "baseUrl": base_url + "/v1"}
    message = {"role": "user", "content": [{"type": "text", "text": "fix the parser"}], "timestamp": 1}
    return {
        "session": {
            "cwd": str(agent.parent),
            "sessionId": "s-canary",
            "agentDir": str(agent),
            "piVersion": "0.73.1",
            "model": {**model, "maxTokens": 4096},
        },
        "preparation": {"firstKeptEntryId": "e1", "tokensBefore": 900, "messagesToSummarize": [message]},
        "branchEntries": [{"type": "message", "id": "e1", "parentId": None, "message": message}],
        "credentials": {"apiKey": SESSION_KEY, "headers": {"x-team-token": SESSION_HEADER}},
        "summarizer": {
            "spec": "cheap/s",
            "model": {**model, "provider": "cheap", "id": "s"},
            "credentials": {"apiKey": SUMMARIZER_KEY, "headers": {"x-team-token": SUMMARIZER_HEADER}},
        },
    }


@pytest.mark.anyio
async def test_echoed_and_repeated_credentials_reach_no_reply_log_record_or_status(
    short_tmp: Path, operational_log: io.StringIO
) -> None:
    agent = short_tmp / "agent"
    agent.mkdir()
    (agent / "longhaul.json").write_text(json.dumps({"summarizer": "cheap/s"}))
    # The summarizer refuses its key (moving the pass to the session model), which fails once, then answers.
    script = [_echo(401, SUMMARIZER_KEY), _echo(500, SESSION_KEY), _answer()]
    with scripted_server(script) as model_server:
        async with running_daemon(short_tmp / "d.sock") as daemon, connect(daemon.socket_path) as conn:
            with anyio.fail_after(60):
                reply = await conn.call("compact", _request(agent, model_server.url))
            status = await conn.call("status", {})
        sent = [request.headers.get("authorization") for request in model_server.requests]
    assert sent == [f"Bearer {SUMMARIZER_KEY}", f"Bearer {SESSION_KEY}", f"Bearer {SESSION_KEY}"]
    result = reply["result"]
    assert result["compaction"] is not None, result
    state = result["compaction"]["details"]["state"]
    # The answer was accepted: its text is there, with every credential and piece of one cut out.
    assert state["now"] == f"Retry with {MARK}…{MARK} and {MARK}.", state["now"]
    assert MARK in result["compaction"]["summary"]
    assert result["after"]["spanRecord"]["narrative"].startswith(f"Tried the key {MARK}")
    table = format_status(StatusResult.model_validate(status["result"]))
    records = "\n".join(path.read_text() for path in agent.rglob("*.jsonl"))
    assert "model_call" in operational_log.getvalue() and '"event":"compaction"' in records
    for where, text in (
        ("the reply", json.dumps(reply, ensure_ascii=False)),
        ("status --json", json.dumps(status)),
        ("the status table", table),
        ("the operational log", operational_log.getvalue()),
        ("the record log", records),
    ):
        assert not leaked(text), f"{where} holds pieces of a credential: {leaked(text)}"
