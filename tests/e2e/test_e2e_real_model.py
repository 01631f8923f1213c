"""Real pi, a real daemon and a real (small, weak) model: a short coding session compacted twice by hand.

Every other e2e test scripts the model. Here pi's agent loop and the daemon's Diff both talk to
SmolLM2-135M-Instruct served by ``realmodel/server.py`` (installed by ``make realmodel``), so the answers are
a real model's: mostly wrong, sometimes not JSON, never a tool call. The model never calls tools, so the
session's commands go through pi's RPC ``bash`` (a user's ``!cmd``, recorded as a bashExecution message).

What must hold whatever the model says:

- nothing crashes: pi, the daemon and the model server are still up, and pi reports no extension error;
- each compaction is Longhaul's (a pi fallback fails the test, with the record log's reason and the daemon's
  log: the daemon is up, so a fallback is a fault, and pi's own summary by this model does not keep the
  rule's words anyway);
- no rule is invented: every rule in ``details.state.rules`` is a verbatim substring of a user message;
- the user's standing rule stays visible, word for word, after every compaction: under "Standing rules" when
  the pass closed whole, under the carried-messages heading when it closed narrative-less;
- when the daemon's Diff calls carry ``response_format`` (structured output; the server's request log shows
  it), at least one pass closes whole. Without it, this model rarely produces an answer that verifies, and
  a narrative-less close must keep the user's words instead.

The server decodes at temperature 0 from an empty KV cache per request, so a run is reproducible on one
build. Waits are bounded but generous: on two shared cores a pi turn takes up to a minute here.
"""

from __future__ import annotations

import http.client
import json
import re
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from home_guard import GUARD

from longhaul_daemon.evaluation.harness.daemon_process import Daemon
from longhaul_daemon.evaluation.harness.pi_rpc import Event, PiRpc
from longhaul_daemon.evaluation.harness.sandbox import Sandbox
from longhaul_daemon.state.render import CARRIED_TITLE
from realmodel.pi_agent import MODEL_ID as REAL_MODEL_ID
from realmodel.pi_agent import PROVIDER as REAL_PROVIDER
from realmodel.pi_agent import models_json, write_agent_config

from .diff_script import write_longhaul_settings
from .e2e_sandbox import build_sandbox
from .real_model import Call, Installed, RealModelError, RealModelServer, installed
from .scenario import LONG_WRAP_UP, expect_longhaul, wrap_up
from .session_log import compactions, is_longhaul, read_entries

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]

PROMPT_TIMEOUT_S = 300.0
BASH_TIMEOUT_S = 60.0
COMPACT_TIMEOUT_S = 400.0  # the daemon's pass budget (300 s) plus the shim's 15 s, and room
# A call the daemon hung up on (a turn over its budget, a stream cut at its first object) is logged once the
# server notices, which is only after it has read the whole prompt: a minute or more on a busy machine.
LOG_WAIT_S = 240.0
KEEP_RECENT_TOKENS = 300  # the `cat ci-N.log` at the end of a stretch (~500 tokens) is what pi keeps

REPORT_PY = '''"""Prints a short report of the files in a directory."""
import argparse
import os

parser = argparse.ArgumentParser()
parser.add_argument("directory")
args = parser.parse_args()
for name in sorted(os.listdir(args.directory)):
    print(name, os.path.getsize(os.path.join(args.directory, name)))
'''

TASK = "I want report.py in this repository to get a --verbose flag that prints each step as it runs."
RULE = "Never add new dependencies to this project: only the Python standard library is allowed."
FOLLOW_UP = "Keep the output format of report.py unchanged when --verbose is not given."
SECOND = "Now also add a --total flag that prints the sum of all sizes at the end."
USER_MESSAGES = (TASK, RULE, FOLLOW_UP, SECOND)


def ci_log(run: int) -> str:
    """A CI log of about 500 tokens. ``cat`` of it ends each stretch: it is longer than KEEP_RECENT_TOKENS, so
    pi keeps that command and compacts everything before it, without a model turn to pay for."""
    steps = (
        f"[ci {run}] step {n}: checkout, install, lint and test passed; report.py unchanged"
        for n in range(30)
    )
    return "\n".join(steps) + "\n"


RULES_HEADING = "Standing rules"


@pytest.fixture(scope="module")
def model() -> Installed:
    """The installed model; a missing one is an error, never a skip (``make test`` installs it)."""
    try:
        found = installed()
    except RealModelError as exc:
        pytest.fail(str(exc), pytrace=False)
    where = str(found.dir)
    if any(where == p or where.startswith(p + "/") for p in GUARD.places.prefixes):
        pytest.fail(
            f"the real model lives in {where}, inside the real HOME's guarded places, which tests may not "
            "read: set LONGHAUL_REALMODEL_DIR outside them (the default is .venv/realmodel)",
            pytrace=False,
        )
    return found


@pytest.fixture(scope="module")
def server(model: Installed, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealModelServer]:
    """One server for the module's tests (loading is quick, but each copy holds ~400 MB)."""
    work = tmp_path_factory.mktemp("real-model")
    with RealModelServer(model, work, threads=1, max_tokens=512, temperature=0.0) as running:
        yield running


@pytest.fixture
def box(server: RealModelServer) -> Iterator[Sandbox]:
    sandbox = build_sandbox(server.base_url)
    write_agent_config(sandbox.agent_dir, server.base_url, keep_recent_tokens=KEEP_RECENT_TOKENS)
    (sandbox.project / "report.py").write_text(REPORT_PY)
    for run in (1, 2):
        (sandbox.project / f"ci-{run}.log").write_text(ci_log(run))
    try:
        yield sandbox
    finally:
        sandbox.cleanup()


def reply_text(events: list[Event]) -> str:
    """The text of the run's last assistant message; the run must not have ended in an error."""
    ends = [e for e in events if e.get("type") == "message_end"]
    assistants = [e["message"] for e in ends if isinstance(e.get("message"), dict)]
    assistants = [m for m in assistants if m.get("role") == "assistant"]
    assert assistants, f"no assistant message in the run: {[e.get('type') for e in events][-12:]}"
    last = assistants[-1]
    assert last.get("stopReason") in ("stop", "length"), f"the turn ended with {last.get('stopReason')!r}"
    parts = last.get("content") if isinstance(last.get("content"), list) else []
    return "".join(str(p.get("text", "")) for p in parts if isinstance(p, dict))


def prompt(pi: PiRpc, message: str) -> None:
    events = pi.prompt(message, timeout=PROMPT_TIMEOUT_S)
    assert reply_text(events).strip(), "the model's answer reached pi empty (a broken stream looks like this)"


def section(summary: str, title: str) -> str:
    """The body of the summary's ``## title`` section ('' when the summary has none)."""
    match = re.search(
        rf"^## {re.escape(title)}\n(.*?)(?=^## |^<read-files>|^<modified-files>|\Z)", summary, re.S | re.M
    )
    return match.group(1) if match else ""


def records(sandbox: Sandbox) -> list[dict[str, Any]]:
    """The daemon's record log for this sandbox (LOG-4: one JSON object per line)."""
    path = sandbox.agent_dir / "logs" / "compaction-state.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def compact(
    pi: PiRpc, sandbox: Sandbox, daemon: Daemon, server: RealModelServer, nth: int
) -> tuple[dict[str, Any], list[Call]]:
    """RPC ``compact``; returns the pass's ``compaction`` record and the model calls made meanwhile."""
    seen = len(server.calls())
    response = pi.compact(timeout=COMPACT_TIMEOUT_S)
    assert response.get("success") is True, f"RPC compact failed: {response}\n{pi.diagnostics()}"
    entries = read_entries(pi.session_file())
    found = compactions(entries)
    assert len(found) == nth, f"want {nth} compaction entries, found {len(found)}"
    if not is_longhaul(found[-1]):
        fallbacks = [r for r in records(sandbox) if r.get("event") == "fallback"]
        pytest.fail(
            f"compaction #{nth} is pi's own, not Longhaul's: the shim fell back "
            f"({fallbacks[-1] if fallbacks else 'no fallback record'}); daemon log:\n{daemon.log_tail()}",
            pytrace=False,
        )
    passes = [r for r in records(sandbox) if r.get("event") == "compaction"]
    assert len(passes) == nth, f"want {nth} compaction records in the record log, found {len(passes)}"
    # A call the daemon hung up on is logged once the server notices, which can be well after the pass
    # answered (LOG_WAIT_S): wait for the calls the record counts, then take them.
    counted = int((passes[-1].get("narrative") or {}).get("calls", 0))
    deadline = time.monotonic() + LOG_WAIT_S
    while (
        len([c for c in server.calls()[seen:] if c.kind == "other"]) < counted and time.monotonic() < deadline
    ):
        time.sleep(0.2)
    return passes[-1], server.calls()[seen:]


@pytest.mark.parametrize("mode", ["diff", "turns"])
def test_real_model_session_keeps_the_rule(
    server: RealModelServer, box: Sandbox, record_property: Any, mode: str
) -> None:
    """The Diff and turns mode (TURNS-1, TURNS-3, TURNS-14, TURNS-15, FAIL-12) on the same session: each pass
    is Longhaul's, closes by the rules whatever the model says, invents no rule and keeps the rule's words.
    In turns mode every call of the conversation offers the ``show`` tool (TURNS-7), which this model never
    calls, and the record names each section's end. The Diff runs both ways: its first pass is made by the
    daemon's own client (the route table's ``custom-openai-compatible`` route), then the daemon is
    restarted with ``serve --via-pi openai-completions`` and the second pass's calls are made by pi, so the
    schema reaches the server through pi-ai's ``onPayload`` and pi's stream is ended at the answer.
    ``make bench-model`` runs both modes over more sessions."""
    if mode == "turns":
        write_longhaul_settings(box, narrativeMode="turns")
    first_call = len(server.calls())
    daemon = Daemon(box.socket_path, box.root)
    daemon.start(box.daemon_env())
    pi = PiRpc(box)
    closes: list[str] = []
    try:
        prompt(pi, TASK)
        pi.bash("cat report.py", timeout=BASH_TIMEOUT_S)
        prompt(pi, RULE)
        failing = pi.bash("python3 report.py --verbose .", timeout=BASH_TIMEOUT_S)
        assert failing["data"]["exitCode"] == 2, f"argparse should refuse --verbose: {failing}"
        prompt(pi, FOLLOW_UP)
        pi.bash("cat ci-1.log", timeout=BASH_TIMEOUT_S)

        # Turns mode compacts once: its five-plus turns take about five minutes a pass on this model and two
        # cores, and the second pass would add no check the Diff's second pass does not make.
        for nth in (1, 2) if mode == "diff" else (1,):
            if nth == 2:  # the same session on, with every model call made by pi (the shim connects per call)
                daemon.stop()
                daemon.start(box.daemon_env(), extra_args=("--via-pi", "openai-completions"))
                prompt(pi, SECOND)
                pi.bash("python3 report.py --total .", timeout=BASH_TIMEOUT_S)
                pi.bash("cat ci-2.log", timeout=BASH_TIMEOUT_S)
            record, made = compact(pi, box, daemon, server, nth)
            found = expect_longhaul(pi.session_file(), nth, span=nth)
            narrative = record.get("narrative") or {}
            kind, reason = narrative.get("kind"), narrative.get("reason")
            if mode == "turns":
                assert kind == "turns", f"pass {nth} did not run turns mode: {narrative}"  # TURNS-3
                kind = narrative.get("closedAs")
                sections = narrative.get("sections") or {}
                record_property(f"compaction_{nth}_sections", sections)
                turn_calls = [c for c in made if c.kind == "other"]
                offered = [[t["function"]["name"] for t in c.request.get("tools") or []] for c in turn_calls]
                assert all(names == ["show"] for names in offered), offered  # TURNS-7: show on every turn
            closes.append(f"{kind}" + (f" ({reason})" if reason else ""))
            record_property(f"compaction_{nth}", f"Longhaul's, closed {closes[-1]}")

            # The Diff asked this model; which calls carried a response_format is what the server saw.
            diff_calls = [c for c in made if c.kind == "other"]
            assert diff_calls, f"the daemon made no model call in pass {nth}: {record}"
            assert not [c for c in made if c.kind == "pi-summary"], "pi's own summariser ran next to Longhaul"
            assert all(c.status == 200 for c in made), [(c.status, c.finish) for c in made]
            # Every call the record counts reached the server (a retried attempt may add requests).
            assert 1 <= narrative.get("calls", 0) <= len(diff_calls), (narrative, len(diff_calls))
            ways = set(narrative.get("viaWhy") or {})
            if nth == 2:
                assert ways == {"pi:forced"}, narrative  # every call made by pi's own provider code
                assert all(c.response_format for c in diff_calls), "the schema did not reach the server"
            else:
                assert ways == {"daemon:custom-openai-compatible"}, narrative
            record_property(f"compaction_{nth}_via", sorted(ways))
            timings, usage = narrative.get("timings") or {}, narrative.get("usage") or {}
            cost = (
                narrative.get("calls"),
                timings.get("callsMs"),
                usage.get("output"),
                narrative.get("stoppedEarly"),
            )
            record_property(f"compaction_{nth}_calls_ms_output_stopped", cost)

            state = found.state
            rules = [r for r in state.get("rules", []) if isinstance(r, dict)]
            for rule in rules:
                assert any(str(rule.get("words")) in message for message in USER_MESSAGES), (
                    f"rule {rule.get('id')} is not the user's words: {rule.get('words')!r}"
                )

            summary = found.summary
            standing, carried = section(summary, RULES_HEADING), section(summary, CARRIED_TITLE)
            if kind == "whole":
                assert RULE in standing, (
                    f"pass {nth} closed whole but the rule is not a standing rule:\n{summary}"
                )
            else:
                assert kind in ("narrative-less", "chunk-missing"), f"pass {nth} closed {kind!r}"
                assert RULE in carried, (
                    f"pass {nth} closed {kind} without the rule's words carried:\n{summary}"
                )
                texts = [m.get("text") for m in state.get("carriedMessages", []) if isinstance(m, dict)]
                assert RULE in texts, f"carriedMessages lacks the rule: {texts}"
            if any(c.response_format for c in diff_calls):
                record_property(
                    f"compaction_{nth}_response_format", sorted({str(c.response_format) for c in diff_calls})
                )

        structured = [c for c in server.calls()[first_call:] if c.kind == "other" and c.response_format]
        if structured and mode == "diff":
            assert "whole" in [c.split(" ")[0] for c in closes], (
                f"the daemon sent response_format ({structured[0].response_format}) yet no pass closed "
                f"whole: {closes}"
            )

        assert pi.proc.poll() is None, "pi exited"
        assert daemon.running(), f"the daemon exited:\n{daemon.log_tail()}"
        assert server.running(), f"the model server exited:\n{server.stderr_tail()}"
        assert pi.extension_errors() == [], pi.diagnostics()
    finally:
        pi.close()
        daemon.sweep()


# ---- a rule withdrawn and a rule added between compactions (code's second look, diff/doubts.py) ----------

DRY_RULE = "From now on start every commit message with the DRY: prefix."
DRY_WITHDRAWN = "The DRY: prefix rule no longer applies."
PRINT_RULE = "Never use print statements for logging in this project."
PRINT_REVERSED = "Print statements for logging are fine now."  # no LIFT-2 expression: reversals.py's reading
CHANGELOG_RULE = "Add a changelog entry for every user-facing change."
# work no longer done, no LIFT-2 expression: reversal_cues.py
CHANGELOG_DROPPED = "We don't write changelog entries anymore, the release tool does that."
NEW_RULE = "Never force-push to a shared branch."
NEW_PLAIN_RULE = "Keep every commit message under fifty characters."  # no rule word: the wider reading's


def _rule_blocks(standing: str) -> list[str]:
    """Each rule of a "Standing rules" section with the indented lines under it (its quote, its flags)."""
    blocks: list[str] = []
    for line in standing.splitlines():
        if line.startswith("- ") or not blocks:
            blocks.append(line)
        else:
            blocks[-1] += "\n" + line
    return blocks


def test_real_model_a_withdrawn_rule_is_never_shown_plainly_standing(
    server: RealModelServer,
    sandbox: Sandbox,
    daemon: Daemon,
    start_pi: Callable[[], PiRpc],
    record_property: Any,
) -> None:
    """Issue "Fidelity on sessions it was not tuned on" (LIFT-1, LIFT-16, TAKEOVER-6, FAIL-11): the user gives
    the DRY: rule, a print rule and a changelog rule, compacts, withdraws the first, reverses the others in
    words no withdrawal expression covers (a permission; work no longer done: reversal_cues.py) and adds two
    new rules, one with no rule word ("Keep every commit message …"), compacts again. Only the daemon's Diff
    talks to the real model (the ``summarizer`` route); pi's agent is the scripted server, so the session
    costs no real-model turn. Whatever the model answers, each withdrawn rule is lifted, flagged under the
    rule, or only the user's carried words, never a plain standing rule; the new rules' words are in the
    summary, whatever the model labeled them (issue 23 item 2)."""
    models_path = sandbox.agent_dir / "models.json"
    config = json.loads(models_path.read_text())
    config["providers"].update(models_json(server.base_url)["providers"])
    models_path.write_text(json.dumps(config, indent=2))
    write_longhaul_settings(sandbox, summarizer=f"{REAL_PROVIDER}/{REAL_MODEL_ID}")
    seen = len(server.calls())
    pi = start_pi()
    summaries: list[str] = []
    sent: list[str] = []  # every user message, the wrap-ups included: a rule must be words of one of them
    for nth, messages in (
        (1, (DRY_RULE, PRINT_RULE, CHANGELOG_RULE)),
        (2, (DRY_WITHDRAWN, PRINT_REVERSED, CHANGELOG_DROPPED, NEW_RULE, NEW_PLAIN_RULE)),
    ):
        for message in messages:
            pi.prompt(message)
        wrap_up(pi, f"span {nth}")
        sent += [*messages, f"[span {nth}] {LONG_WRAP_UP}"]
        response = pi.compact(timeout=COMPACT_TIMEOUT_S)
        assert response.get("success") is True, f"compact #{nth} failed: {response}\n{pi.diagnostics()}"
        found = expect_longhaul(pi.session_file(), nth, span=nth)
        record_property(f"compaction_{nth}", found.span_record["data"].get("closedAs"))
        summaries.append(found.summary)
        for rule in found.state.get("rules", []):
            assert any(str(rule["words"]) in message for message in sent), rule
    assert [c for c in server.calls()[seen:] if c.kind == "other"], "the Diff never reached the real model"

    summary = summaries[-1]
    standing = section(summary, RULES_HEADING)
    for block in _rule_blocks(standing):
        if any(rule in block.splitlines()[0] for rule in (DRY_RULE, PRINT_RULE, CHANGELOG_RULE)):
            assert "possibly withdrawn by" in block, f"a withdrawn rule shown as standing:\n{summary}"
    kept = standing + section(summary, CARRIED_TITLE)
    for new_rule in (NEW_RULE, NEW_PLAIN_RULE):
        assert new_rule in kept, f"a new rule's words are gone:\n{summary}"
    assert daemon.running(), daemon.log_tail()


# ---- the server itself, as pi and the daemon use it -------------------------------------------------------

SERVER_TIMEOUT_S = 300.0


def _post(server: RealModelServer, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """One non-streaming chat request: the status and the JSON body."""
    url = urlsplit(server.base_url)
    conn = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=SERVER_TIMEOUT_S)
    try:
        conn.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def _get(server: RealModelServer, path: str) -> tuple[int, dict[str, Any]]:
    url = urlsplit(server.base_url)
    conn = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=SERVER_TIMEOUT_S)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def _events(server: RealModelServer, body: dict[str, Any], *, stop_after: int | None = None) -> list[str]:
    """The ``data:`` payloads of a streamed answer; with ``stop_after``, hang up after that many."""
    url = urlsplit(server.base_url)
    conn = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=SERVER_TIMEOUT_S)
    payloads: list[str] = []
    try:
        conn.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
        response = conn.getresponse()
        assert response.status == 200, response.read()
        assert response.getheader("Content-Type") == "text/event-stream"
        for raw in response:
            line = raw.decode().strip()
            if line.startswith("data: "):
                payloads.append(line.removeprefix("data: "))
                if stop_after is not None and len(payloads) >= stop_after:
                    break
    finally:
        conn.close()  # with stop_after: the client goes away mid-answer
    return payloads


PI_LIKE_MESSAGES: list[dict[str, Any]] = [
    {"role": "developer", "content": "You are a terse assistant."},
    {"role": "user", "content": [{"type": "text", "text": "Name one colour."}]},
]
PI_LIKE = {
    "messages": PI_LIKE_MESSAGES,
    "tools": [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}],
    "max_completion_tokens": 24,
}


def test_server_lists_its_model_and_answers_whole_and_streamed_alike(server: RealModelServer) -> None:
    assert _get(server, "/health") == (200, {"status": "ok", "model": "smollm2"})
    status, models = _get(server, "/v1/models")
    assert status == 200 and [m["id"] for m in models["data"]] == ["smollm2"]

    status, whole = _post(server, PI_LIKE)
    assert status == 200, whole
    choice = whole["choices"][0]
    assert choice["message"]["role"] == "assistant" and choice["message"]["content"].strip()
    assert choice["finish_reason"] in ("stop", "length")
    usage = whole["usage"]
    assert 0 < usage["completion_tokens"] <= 24
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]

    streamed = _events(server, {**PI_LIKE, "stream": True, "stream_options": {"include_usage": True}})
    assert streamed[-1] == "[DONE]"
    chunks = [json.loads(p) for p in streamed[:-1]]
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
    finish = [
        c["choices"][0]["finish_reason"] for c in chunks if c["choices"] and c["choices"][0]["finish_reason"]
    ]
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"] == usage, chunks[-1]
    # An empty KV cache per request: the same request gives the same answer, streamed or not, even after
    # another request filled the cache with something else.
    assert text == choice["message"]["content"]
    assert finish == [choice["finish_reason"]]
    other = {**PI_LIKE, "messages": [{"role": "user", "content": "Write a haiku about rain."}]}
    assert _post(server, other)[0] == 200
    assert _post(server, PI_LIKE)[1]["choices"][0]["message"]["content"] == text


def test_server_agent_switches_touch_agent_turns_only(
    server: RealModelServer, model: Installed, tmp_path: Path
) -> None:
    """The model bench's switches (``--agent-max-tokens``, ``--agent-prefix-reuse``): a request carrying
    ``tools`` (an agent's turn) answers within the agent cap, and the same turns in the same order answer
    the same way on every run; a request without ``tools`` (a summarizer's call) keeps the full cap and an
    empty cache, so it answers word for word as the plain server does, agent turns or not before it."""
    summary = {
        "messages": [{"role": "user", "content": "Summarize: we fixed the parser and added two tests."}],
        "max_tokens": 200,
    }
    first = {**PI_LIKE, "max_completion_tokens": 200}
    status, plain = _post(server, summary)
    assert status == 200

    def agent_then_summary(work: Path) -> list[str]:
        work.mkdir()
        answers: list[str] = []
        with RealModelServer(
            model, work, threads=1, max_tokens=512, agent_max_tokens=200, agent_prefix_reuse=True
        ) as fast:
            said = _post(fast, first)[1]["choices"][0]["message"]["content"]
            went_on = [
                *PI_LIKE_MESSAGES,
                {"role": "assistant", "content": said},
                {"role": "user", "content": "Another one."},
            ]
            on = _post(fast, {**first, "messages": went_on})[1]["choices"][0]["message"]["content"]
            answers += [said, on, _post(fast, summary)[1]["choices"][0]["message"]["content"]]
        return answers

    once, again = agent_then_summary(tmp_path / "once"), agent_then_summary(tmp_path / "again")
    assert once == again and all(a.strip() for a in once)
    assert once[-1] == plain["choices"][0]["message"]["content"]
    (tmp_path / "capped").mkdir()
    with RealModelServer(model, tmp_path / "capped", threads=1, max_tokens=512, agent_max_tokens=8) as capped:
        assert _post(capped, first)[1]["usage"]["completion_tokens"] <= 8
        assert _post(capped, summary)[1]["usage"] == plain["usage"]


LABEL_SCHEMA = {
    "type": "object",
    "properties": {
        "msg": {"type": "string", "enum": ["u1", "u2"]},
        "label": {"type": "string", "enum": ["rule", "not a rule"]},
    },
    "required": ["msg", "label"],
    "additionalProperties": False,
}
LABEL_ASK = {
    "messages": [
        {"role": "system", "content": "Label the user's message u1: is it a standing rule? Answer in JSON."},
        {"role": "user", "content": "u1: Never push to main without a review."},
    ],
    "max_tokens": 60,
}


@pytest.mark.parametrize(
    "response_format",
    [
        {"type": "json_schema", "json_schema": {"name": "label", "schema": LABEL_SCHEMA, "strict": True}},
        {"type": "json_object", "schema": LABEL_SCHEMA},
    ],
    ids=["json_schema", "json_object+schema"],
)
def test_server_keeps_a_response_format_schema(
    server: RealModelServer, response_format: dict[str, Any]
) -> None:
    status, body = _post(server, {**LABEL_ASK, "response_format": response_format})
    assert status == 200, body
    answer = json.loads(body["choices"][0]["message"]["content"])
    assert set(answer) == {"msg", "label"}, answer
    assert answer["msg"] in ("u1", "u2") and answer["label"] in ("rule", "not a rule"), answer
    # Unconstrained, this model does not answer in that shape: the grammar is what made the difference.
    free = _post(server, LABEL_ASK)[1]["choices"][0]["message"]["content"]
    try:
        shaped = set(json.loads(free)) == {"msg", "label"}
    except (ValueError, TypeError):
        shaped = False
    assert not shaped, (
        f"the unconstrained answer already had the shape, so this test proves nothing: {free!r}"
    )


def test_server_ends_an_answer_at_every_end_of_generation_token(model: Installed) -> None:
    """SmolLM2 marks three end-of-generation tokens (<|endoftext|>, <|im_end|>, <reponame>). Once a grammar
    is complete it allows only those, and the server took only <|im_end|> for an end: a Diff answer done
    after 244 tokens went on printing nothing to the 512-token cap (as llama.cpp's own server would not)."""
    probe = (
        "import sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]);"
        "import llama_cpp; from realmodel.server import Engine;"
        "e = Engine(Path(sys.argv[2]), ctx=256, threads=1, alias=None);"
        "v = llama_cpp.llama_model_get_vocab(e.llm.model);"
        "eog = {t for t in range(e.llm.n_vocab()) if llama_cpp.llama_vocab_is_eog(v, t)};"
        "print(len(eog), eog <= e.end_tokens)"
    )
    done = subprocess.run(
        [str(model.python), "-c", probe, str(REPO), str(model.model)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["3", "True"], done.stdout


def test_server_refuses_an_overflow_the_way_openai_does(server: RealModelServer) -> None:
    long = "the quick brown fox jumps over the lazy dog " * 2000
    status, body = _post(server, {"messages": [{"role": "user", "content": long}]})
    assert status == 400, body
    error = body["error"]
    assert error["code"] == "context_length_exceeded" and error["type"] == "invalid_request_error"
    assert re.match(
        r"This model's maximum context length is 8192 tokens\. However, your messages resulted",
        error["message"],
    )


def test_server_stops_generating_when_the_client_hangs_up(server: RealModelServer) -> None:
    seen = len(server.calls())
    ask = {
        "messages": [{"role": "user", "content": "Count from 1 to 400, one number per line."}],
        "max_tokens": 512,
        "stream": True,
    }
    assert len(_events(server, ask, stop_after=4)) == 4
    status, body = _post(server, PI_LIKE)  # served as usual once the abandoned answer stopped
    assert status == 200 and body["choices"][0]["message"]["content"].strip(), body
    made = server.calls()[seen:]
    gone = [c for c in made if c.client_gone]
    assert len(gone) == 1, [(c.status, c.client_gone, c.completion_tokens) for c in made]
    assert gone[0].completion_tokens < 100, f"kept generating after the hang-up: {gone[0].completion_tokens}"
