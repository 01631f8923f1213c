"""A planted API key goes through the daemon and never comes back out (PASS-22, issue 3 item 6).

A real daemon on a real socket gets ``compact`` requests carrying the key in every credentials slot, valid and
invalid; the model server it may call answers with errors that echo the key. Then every output the daemon
made is searched: the operational log, stdlib log records, each reply, the record log and ``status`` (table
and ``--json``). The key may only have travelled to the model server.
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
from pydantic import ValidationError
from server.in_process_daemon import connect, running_daemon

from longhaul_daemon.ops.status_command import run_status
from longhaul_daemon.ops.status_view import format_status
from longhaul_daemon.protocol import CompactParams, StatusResult
from longhaul_daemon.rpc.registry import describe_validation_error

KEY = "sk-planted-9d1e47c2b8a05f36"
HEADER_SECRET = "hdr-planted-4c7b19e2"
_ECHO = {"error": {"message": f"Incorrect API key provided: {KEY}", "type": "invalid_request_error"}}


@pytest.fixture
def operational_log_level() -> int:
    return logging.DEBUG  # the key must not show even in debug lines


def compact_request(agent: Path, base_url: str, **changes: Any) -> dict[str, Any]:
    model = {
        "provider": "fake",
        "id": "m",
        "api": "openai-completions",
        "baseUrl": base_url,
        "maxTokens": 256,
    }
    summarizer_model = {**model, "provider": "cheap", "id": "s"}
    message = {"role": "user", "content": [{"type": "text", "text": "fix the parser"}], "timestamp": 1}
    params: dict[str, Any] = {
        "session": {
            "cwd": str(agent.parent),
            "sessionId": "s-keys",
            "agentDir": str(agent),
            "piVersion": "0.73.1",
            "model": model,
        },
        "preparation": {"firstKeptEntryId": "e1", "tokensBefore": 900, "messagesToSummarize": [message]},
        "branchEntries": [{"type": "message", "id": "e1", "parentId": None, "message": message}],
        "credentials": {"apiKey": KEY, "headers": {"x-team-token": HEADER_SECRET}},
        "summarizer": {
            "spec": "cheap/s",
            "model": summarizer_model,
            "credentials": {"apiKey": KEY, "headers": {"x-team-token": HEADER_SECRET}},
        },
    }
    params.update(changes)
    return params


def invalid_variants(agent: Path, base_url: str) -> list[dict[str, Any]]:
    """Requests the daemon must refuse while the key sits in, or next to, the offending field."""
    good = compact_request(agent, base_url)
    return [
        {**good, "preparation": {"tokensBefore": -1}},  # invalid elsewhere; the key is valid
        {**good, "credentials": {"apiKey": [KEY], "headers": {"x-team-token": HEADER_SECRET}}},
        {**good, "credentials": {"apiKey": KEY, "headers": {"x-team-token": [HEADER_SECRET]}}},
        {**good, "summarizer": {"spec": "cheap/s", "problem": KEY, "credentials": {"apiKey": KEY}}},
        {**good, "summarizer": {"spec": "cheap/s", KEY[:8]: KEY}},
        {**good, "reason": KEY},
        {**good, "unexpected": KEY},
    ]


def assert_no_secret(where: str, text: str) -> None:
    assert KEY not in text, f"the API key leaked into {where}"
    assert HEADER_SECRET not in text, f"a credential header leaked into {where}"


@pytest.mark.anyio
async def test_pass22_a_planted_key_reaches_no_log_reply_record_or_status(
    short_tmp: Path, operational_log: io.StringIO, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    agent = short_tmp / "agent"
    agent.mkdir()
    (agent / "longhaul.json").write_text(json.dumps({"summarizer": "cheap/s"}))
    replies: list[str] = []
    with scripted_server([json_reply(_ECHO, status=401)] * 4) as model_server:
        async with running_daemon(short_tmp / "d.sock") as daemon, connect(daemon.socket_path) as conn:
            for params in invalid_variants(agent, model_server.url):
                reply = await conn.call("compact", params)
                assert reply["error"]["code"] == -32602
                replies.append(json.dumps(reply))
            with anyio.fail_after(60):
                reply = await conn.call("compact", compact_request(agent, model_server.url))
            assert "result" in reply
            replies.append(json.dumps(reply))
            status = await conn.call("status", {})
            replies.append(json.dumps(status))
            table = format_status(StatusResult.model_validate(status["result"]))
            out, err = io.StringIO(), io.StringIO()
            await anyio.to_thread.run_sync(
                lambda: run_status(daemon.socket_path, as_json=True, out=out, err=err)
            )
        sent = [request.headers.get("authorization") for request in model_server.requests]
    # The key did travel, to the one place it belongs: the summarizer, then the session model after its 401.
    assert sent == [f"Bearer {KEY}", f"Bearer {KEY}"], sent
    assert "route" in table and "cheap/s" in table
    for number, text in enumerate(replies):
        assert_no_secret(f"reply {number}", text)
    assert_no_secret("the status table", table)
    assert_no_secret("status --json", out.getvalue() + err.getvalue())
    assert_no_secret("the operational log", operational_log.getvalue())
    assert_no_secret("stdlib log records", "\n".join(r.getMessage() + repr(r.args) for r in caplog.records))
    records = [path.read_text(errors="replace") for path in agent.rglob("*") if path.is_file()]
    assert records, "the record log should have been written under the agent dir"
    for path_text in records:
        assert_no_secret("the record log", path_text)


def test_pass22_validation_errors_on_compact_params_never_echo_credentials(tmp_path: Path) -> None:
    """Pydantic's own error text (``str``, ``repr``) and the errors we reply with hide every credential."""
    for params in invalid_variants(tmp_path, "http://127.0.0.1:9"):
        with pytest.raises(ValidationError) as caught:
            CompactParams.model_validate(params)
        error = caught.value
        assert_no_secret("the validation error text", str(error) + repr(error))
        assert_no_secret("the described error", json.dumps(describe_validation_error(error)))
    valid = CompactParams.model_validate(compact_request(tmp_path, "http://127.0.0.1:9"))
    assert_no_secret("the params repr", repr(valid) + str(valid))
    assert_no_secret("the params dump", json.dumps(valid.model_dump(mode="json")))


def test_field_paths_of_a_compact_error_hold_only_the_protocols_own_words(tmp_path: Path) -> None:
    """A client-chosen key (an extra field, a header name) shows as ``*``, so a key-like name never echoes."""
    good = compact_request(tmp_path, "http://127.0.0.1:9")
    bad = {
        **good,
        "credentials": {"apiKey": KEY, "headers": {KEY: [HEADER_SECRET]}},
        "summarizer": {"spec": "cheap/s", KEY[:8]: KEY},
    }
    with pytest.raises(ValidationError) as caught:
        CompactParams.model_validate(bad)
    described = describe_validation_error(caught.value, model=CompactParams)
    assert sorted(tuple(e["loc"]) for e in described) == [
        ("credentials", "headers", "*"),
        ("summarizer", "*"),
    ]
    assert KEY[:8] not in json.dumps(described)
