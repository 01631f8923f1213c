"""Credential canaries through a real pi: no piece of a key or secret header in what Longhaul writes.

pi's models.json gives the session model and the summarizer each a distinct API key and a distinct secret
header, so the shim resolves four credentials and sends them with the pass. The summarizer's server refuses
with a 401 whose message, code and request id quote its key and header; the session model's server fails
once with a 500 that quotes its own, then answers with a Diff whose narrative, Now and decisions repeat all
four, whole and in pieces (rule words cannot be invented, so the canaries ride in free text). Every artifact
is then searched for any run of 8 characters of any canary: the session file pi wrote, the record log, the
daemon's operational log, every byte the daemon sent the shim (through a relay), and ``status`` as JSON and
as the table the CLI prints.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from longhaul_daemon.evaluation.harness.answers import diff_answer
from longhaul_daemon.evaluation.harness.callers import content_text
from longhaul_daemon.evaluation.harness.daemon_process import Daemon
from longhaul_daemon.evaluation.harness.model_server import ModelServer
from longhaul_daemon.evaluation.harness.pi_rpc import PiRpc
from longhaul_daemon.evaluation.harness.replies import Reply, http_error, text
from longhaul_daemon.evaluation.harness.sandbox import Sandbox
from longhaul_daemon.secrets.redaction import MARK

from .scenario import agent_bash, expect_longhaul, wrap_up
from .session_log import SPAN_TYPE, customs, read_entries
from .socket_tap import SocketTap

pytestmark = pytest.mark.e2e

# Distinct, and holding no word an artifact holds anyway, so any 8-character hit is a leak.
SESSION_KEY = "sk-cnry-Q7w2Er9Ty4Ui8Op3As6D"
SESSION_HEADER = "hv-cnry-Zx5Cv1Bn7Mm2Kk9LqW4e"
SUMMARIZER_KEY = "sk-cnry-Hh3Jj8Gg2Ff6Dd1SaX0z"
SUMMARIZER_HEADER = "hv-cnry-Pp4Oo9Ii3Uu7Yy2TtR6e"
CANARIES = (SESSION_KEY, SESSION_HEADER, SUMMARIZER_KEY, SUMMARIZER_HEADER)
SUMMARIZER = ("cheap", "small-model")


def pieces_in(text: str) -> list[str]:
    """Every run of 8 characters of a canary that ``text`` holds."""
    return sorted({c[i : i + 8] for c in CANARIES for i in range(len(c) - 7) if c[i : i + 8] in text})


def _echoing_error(status: int, key: str, header: str) -> Reply:
    return http_error(
        status,
        code=f"invalid_api_key_{key[3:21]}",
        message=f"Incorrect API key provided: {key}; header {header}",
        headers={"x-request-id": f"req_{header[-14:]}"},
    )


def _canary_answer(body: dict[str, Any]) -> Reply:
    prompt = "\n".join(
        content_text(m.get("content")) for m in body.get("messages") or [] if isinstance(m, dict)
    )
    answer = json.loads(diff_answer(prompt))
    answer["narrative"] = f"Tried {SESSION_KEY} and {SUMMARIZER_HEADER[3:19]} against the proxy."
    answer["now"] = f"Retry with {SUMMARIZER_KEY[:11]}…{SUMMARIZER_KEY[11:]} and header {SESSION_HEADER}."
    answer["decisions"] = [{"text": f"Keep {SESSION_HEADER[5:17]} and {SUMMARIZER_KEY} out of the repo."}]
    return text(json.dumps(answer))


def _configure(sandbox: Sandbox, summarizer_url: str) -> None:
    path = sandbox.agent_dir / "models.json"
    models = json.loads(path.read_text())
    session = models["providers"]["fake"]
    session.update(apiKey=SESSION_KEY, headers={"x-canary-session": SESSION_HEADER})
    summarizer = json.loads(json.dumps(session))
    summarizer.update(
        baseUrl=summarizer_url, apiKey=SUMMARIZER_KEY, headers={"x-canary-cheap": SUMMARIZER_HEADER}
    )
    summarizer["models"][0].update(id=SUMMARIZER[1], name="E2E Canary Summarizer")
    models["providers"][SUMMARIZER[0]] = summarizer
    path.write_text(json.dumps(models, indent=2))
    (sandbox.agent_dir / "longhaul.json").write_text(json.dumps({"summarizer": "/".join(SUMMARIZER)}))


@pytest.fixture
def summarizer_server() -> Iterator[ModelServer]:
    with ModelServer(model_id=SUMMARIZER[1]) as server:
        yield server


@pytest.fixture
def tapped_daemon(sandbox: Sandbox) -> Iterator[tuple[SocketTap, Daemon]]:
    """The daemon behind a relay at the sandbox socket, so every byte it sends the shim can be searched."""
    logs = sandbox.root / "daemon-logs"
    logs.mkdir()
    daemon = Daemon(sandbox.root / "run" / "behind.sock", logs)
    daemon.start(sandbox.daemon_env())
    tap = SocketTap(sandbox.socket_path, daemon.socket_path, keep_replies=True)
    try:
        yield tap, daemon
    finally:
        tap.close()
        daemon.sweep()


def test_no_piece_of_any_credential_reaches_any_artifact(
    sandbox: Sandbox,
    model_server: ModelServer,
    summarizer_server: ModelServer,
    tapped_daemon: tuple[SocketTap, Daemon],
    start_pi: Callable[[], PiRpc],
) -> None:
    tap, daemon = tapped_daemon
    _configure(sandbox, summarizer_server.base_url)
    summarizer_server.on_daemon_call(lambda _body: _echoing_error(401, SUMMARIZER_KEY, SUMMARIZER_HEADER))
    session_calls: list[int] = []

    def session_model(body: dict[str, Any]) -> Reply:
        session_calls.append(1)
        return (
            _echoing_error(500, SESSION_KEY, SESSION_HEADER)
            if len(session_calls) == 1
            else _canary_answer(body)
        )

    model_server.on_daemon_call(session_model)
    pi = start_pi()
    agent_bash(pi, model_server, "echo canary")
    wrap_up(pi, "canary")
    assert pi.compact().get("success") is True, pi.diagnostics()
    session_file = pi.session_file()
    compaction = expect_longhaul(session_file, 1, span=1)
    assert pi.close() == 0, pi.diagnostics()

    # The credentials did travel, to the one place each belongs: its own model server, key and header. The
    # summarizer's 401 to the daemon's call is made again at once through pi, which sends the same key.
    refused, again = summarizer_server.requests("other")
    assert refused.authorization == again.authorization == f"Bearer {SUMMARIZER_KEY}"
    assert str(again.user_agent).startswith("OpenAI/JS"), again.user_agent  # pi's own client
    daemon_calls = model_server.requests("other")
    assert [r.authorization for r in daemon_calls] == [f"Bearer {SESSION_KEY}"] * 2
    # The answer was accepted, with every credential and piece of one cut out of it.
    assert compaction.state["now"] == f"Retry with {MARK}…{MARK} and header {MARK}.", compaction.state["now"]
    assert MARK in compaction.summary
    (record,) = [s for s in customs(read_entries(session_file), SPAN_TYPE)]
    assert str(record["data"]["narrative"]).startswith(f"Tried {MARK} and {MARK}")

    status_json = json.dumps(daemon.status())
    cli = [sys.executable, "-m", "longhaul_daemon", "status", "--socket", str(daemon.socket_path)]
    table = subprocess.run(
        cli, env=sandbox.daemon_env(), capture_output=True, text=True, timeout=30, check=True
    )
    assert "cheap/small-model" in table.stdout and '"routes"' in status_json
    artifacts = {
        "the session file": session_file.read_text(),
        "the record log": "\n".join(p.read_text() for p in (sandbox.agent_dir / "logs").glob("*.jsonl*")),
        "the operational log": "\n".join(p.read_text() for p in daemon.log_dir.glob("daemon-*.log")),
        "the daemon's replies to the shim": tap.replies().decode("utf-8", "replace"),
        "status --json": status_json,
        "the status table": table.stdout + table.stderr,
    }
    assert '"event":"compaction"' in artifacts["the record log"]
    assert "model_call" in artifacts["the operational log"]
    for where, found in ((where, pieces_in(body)) for where, body in artifacts.items()):
        assert not found, f"{where} holds pieces of a credential: {found}"
