"""Long sessions through real pi: the daemon reads pi's session file, so no session is too long for Longhaul.

Sessions are generated as pi writes them (evaluation/synthetic.py) and resumed with ``pi --session``; a real
daemon with its default settings serves them. The compact request names the file and the leaf (protocol 2);
the daemon refuses a file it must not read and the shim sends the same pass inline. A relay between the shim
and the daemon keeps the shim's requests, so the very request a warm daemon (index kept since its earlier
passes) answered can be answered again by a cold one: the two states must be the same.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from longhaul_daemon.evaluation.harness.daemon_process import Daemon
from longhaul_daemon.evaluation.harness.model_server import ModelServer
from longhaul_daemon.evaluation.harness.pi_rpc import PiError, PiRpc
from longhaul_daemon.evaluation.harness.sandbox import Sandbox
from longhaul_daemon.evaluation.synthetic import write_session
from longhaul_daemon.passes.close import MAX_STATE_COMMANDS

from .scenario import agent_bash, expect_longhaul, wrap_up
from .session_log import compactions, read_entries
from .socket_tap import SocketTap, send_line

pytestmark = pytest.mark.e2e

COMPACT_TIMEOUT_S = 240.0  # a bound on a wait, never a claim about speed


def _session_path(sandbox: Sandbox, name: str) -> Path:
    directory = sandbox.sessions_dir() / "generated"
    directory.mkdir(parents=True, exist_ok=True)
    return directory / name


def _records(sandbox: Sandbox, event: str) -> list[dict[str, Any]]:
    path = sandbox.agent_dir / "logs" / "compaction-state.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return [r for r in map(json.loads, lines) if r.get("event") == event]


def _resume(sandbox: Sandbox, path: Path, *extra: str) -> PiRpc:
    return PiRpc(sandbox, extra_args=("--session", str(path), *extra))


def _wait_warmed(daemon: Daemon, at_least: int, timeout: float = 120.0) -> None:
    """Wait until the daemon has indexed ``at_least`` session files ahead of a pass (hello's warming, #10)."""
    deadline = time.monotonic() + timeout
    while int(daemon.status()["sessionFilesWarmed"]) < at_least:
        assert time.monotonic() < deadline, f"hello did not warm the session file: {daemon.status()}"
        time.sleep(0.1)


def _compact(pi: PiRpc) -> None:
    response = pi.compact(timeout=COMPACT_TIMEOUT_S)
    assert response.get("success") is True, f"RPC compact failed: {response}\n{pi.diagnostics()}"


def test_a_generated_25_mb_session_compacts_as_longhauls_with_default_settings(
    sandbox: Sandbox, daemon: Daemon
) -> None:
    """One span of ~2,000 tool calls: the request names the file, so no frame limit sends it to pi (#10).
    pi's hello on resume has the daemon index the file, so the pass reads only what came after."""
    info = write_session(
        _session_path(sandbox, "long.jsonl"), total_bytes=25_000_000, cwd=str(sandbox.project)
    )
    assert info.bytes > 24_000_000
    with _resume(sandbox, info.path) as pi:
        _wait_warmed(daemon, 1)
        _compact(pi)
        found = expect_longhaul(info.path, 1, span=1)
        assert pi.extension_errors() == [], pi.diagnostics()
    assert found.span_record["data"]["closedAs"] == "whole"
    # Every tool call of the span is in the ledger: the span record holds them all, the State the newest.
    assert len(found.span_record["data"]["commands"]) >= info.turns - 2
    assert len(found.state["commands"]) == MAX_STATE_COMMANDS
    (record,) = _records(sandbox, "compaction")
    assert record["branch"]["source"] == "file" and record["branch"]["cold"] is False  # warmed at hello
    assert _records(sandbox, "fallback") == []


@pytest.mark.parametrize("compactor", ["pi", "longhaul"])
def test_a_small_span_behind_earlier_compactions_compacts_as_longhauls(
    sandbox: Sandbox, daemon: Daemon, compactor: str
) -> None:
    """Five earlier compactions (pi's own, or Longhaul's) and a current span of ~300 KB: the pass reads the
    span whole and leaves out the heavy entries the state already judged."""
    info = write_session(
        _session_path(sandbox, f"{compactor}.jsonl"),
        total_bytes=12_000_000,
        span_bytes=300_000,
        compactions=5,
        compactor=compactor,  # type: ignore[arg-type]
        cwd=str(sandbox.project),
    )
    with _resume(sandbox, info.path) as pi:
        _compact(pi)
        found = expect_longhaul(info.path, 6, span=1 if compactor == "pi" else 6)
    assert found.span_record["data"]["closedAs"] == "whole"
    (record,) = _records(sandbox, "compaction")
    branch = record["branch"]
    assert branch["source"] == "file" and branch["leftOut"] > 0
    # Taking over from pi reads at most the newest UNSEEN_BYTES of the unjudged history; after Longhaul's own
    # compaction only the span since its kept boundary is read whole.
    assert branch["capped"] is (compactor == "pi")


def _make_not_ours(path: Path, how: str) -> None:
    if how == "symlink":
        real = path.with_name("real-" + path.name)
        path.rename(real)
        path.symlink_to(real)
    elif how == "foreign-owner":
        os.chown(path, 65534, 65534)


@pytest.mark.parametrize("how", ["symlink", "foreign-owner", "not-a-session"])
def test_a_session_file_the_daemon_must_not_read_is_refused_and_the_pass_goes_inline(
    sandbox: Sandbox, daemon: Daemon, how: str
) -> None:
    """A symlink, another user's file, a file that is not pi's session: refused with its reason, and the same
    pass sent inline is still Longhaul's; the user sees no fallback."""
    if how == "foreign-owner" and os.geteuid() != 0:
        pytest.fail("the e2e suite runs as root in CI: only root can hand a file to another user")
    info = write_session(_session_path(sandbox, "s.jsonl"), total_bytes=200_000, cwd=str(sandbox.project))
    _make_not_ours(info.path, how)
    with _resume(sandbox, info.path) as pi:
        if how == "not-a-session":
            assert pi.session_file() == info.path  # pi has read it: from here on it only appends
            # The file pi is appending to stops being a session file under it (its header is gone).
            lines = info.path.read_bytes().split(b"\n", 1)
            info.path.write_bytes(b'{"note": "not a header"}\n' + lines[1])
        pi.bash("echo after-resume")  # the user's own command: no model turn, so no auto-compaction races
        _compact(pi)
        entries = read_entries(pi.session_file())
    assert len(compactions(entries)) == 1
    found = expect_longhaul(info.path, 1, span=1)
    assert len(found.span_record["data"]["commands"]) >= info.turns - 1  # read from the inline entries
    (record,) = _records(sandbox, "compaction")
    assert record["branch"] == {"source": "inline", "refused": how}
    assert _records(sandbox, "fallback") == []


_GOTO_EXTENSION = """
export default function (pi) {
  pi.registerCommand("lh-goto", {
    description: "e2e: move the session's leaf, as /tree does",
    handler: async (args, ctx) => { await ctx.navigateTree(args.trim(), { summarize: false }); },
  });
}
"""


@pytest.fixture
def tapped(sandbox: Sandbox, daemon_process: Daemon) -> Iterator[tuple[SocketTap, Daemon]]:
    """The warm daemon behind a relay at the sandbox socket, and a second daemon kept cold for replays."""
    warm_socket = sandbox.root / "run" / "warm.sock"
    warm = Daemon(warm_socket, sandbox.root / "warm-logs")
    (sandbox.root / "warm-logs").mkdir()
    warm.start(sandbox.daemon_env())
    tap = SocketTap(sandbox.socket_path, warm_socket)
    try:
        yield tap, warm
    finally:
        tap.close()
        warm.sweep()


def _cold_replay(sandbox: Sandbox, request: dict[str, Any]) -> dict[str, Any]:
    """The same compact request answered by a daemon that never saw the session before."""
    cold = Daemon(sandbox.root / "run" / f"cold{time.monotonic_ns()}.sock", sandbox.root / "cold-logs")
    (sandbox.root / "cold-logs").mkdir(exist_ok=True)
    cold.start(sandbox.daemon_env())
    try:
        reply = send_line(cold.socket_path, request)
    finally:
        cold.stop()
    assert "result" in reply, f"the cold daemon answered {reply}"
    result: dict[str, Any] = reply["result"]
    return result


def _comparable(details: dict[str, Any]) -> Any:
    pass_id = str(details["passId"])

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k != "durationMs"}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value.replace(pass_id, "<pass>") if isinstance(value, str) else value

    return strip(details)


def _check_against_cold(sandbox: Sandbox, tap: SocketTap, session_file: Path, nth: int, span: int) -> bool:
    """Compaction ``nth`` (a warm pass) equals the cold replay of its request; returns the warm pass's
    ``cold`` flag from the compact request's record."""
    found = expect_longhaul(session_file, nth, span=span)
    request = tap.requests("compact")[-1]
    assert request["params"]["branchEntries"] is None, "the shim sent the branch inline"
    cold = _cold_replay(sandbox, request)
    assert _comparable(cold["compaction"]["details"]) == _comparable(found.details)
    assert cold["diagnostics"]["branch"]["cold"] is True
    (warm,) = [r for r in _records(sandbox, "compaction") if r["passId"] == found.details["passId"]]
    return bool(warm["branch"]["cold"])


def test_the_warm_index_gives_the_state_a_cold_read_gives_after_appends_branch_switch_fork_and_rewrite(
    sandbox: Sandbox,
    model_server: ModelServer,
    tapped: tuple[SocketTap, Daemon],
) -> None:
    tap, daemon = tapped
    extension = sandbox.root / "goto.mjs"
    extension.write_text(_GOTO_EXTENSION)
    with PiRpc(sandbox, extra_args=("-e", str(extension))) as pi:
        agent_bash(pi, model_server, "echo one", "ls /nonexistent-one")
        wrap_up(pi, "one")
        _compact(pi)
        session_file = pi.session_file()
        assert _check_against_cold(sandbox, tap, session_file, 1, 1) is True  # the first read is cold

        agent_bash(pi, model_server, "echo two")
        wrap_up(pi, "two")
        _compact(pi)
        assert _check_against_cold(sandbox, tap, session_file, 2, 2) is False  # appended: read alone

        # /tree: go back to the second compaction and branch off from there.
        entries = read_entries(session_file)
        back_to = str(compactions(entries)[-1]["id"])
        agent_bash(pi, model_server, "echo abandoned-branch")
        pi.request({"type": "prompt", "message": f"/lh-goto {back_to}"})
        _wait_leaf(pi, back_to)
        agent_bash(pi, model_server, "echo new-branch")
        wrap_up(pi, "three")
        _compact(pi)
        assert _check_against_cold(sandbox, tap, session_file, 3, 3) is False
        state = expect_longhaul(session_file, 3, span=3).state
        texts = [c["text"] for c in state["commands"]]
        assert "echo new-branch" in texts and "echo abandoned-branch" not in texts

        # A fork (here a clone of the whole branch) is another file: pi's hello for it has the daemon index it
        # from the start, and the pass reads what came after from that index.
        warmed = int(daemon.status()["sessionFilesWarmed"])
        response = pi.request({"type": "clone"})
        assert response.get("success") is True, response
        forked = pi.session_file()
        assert forked != session_file
        _wait_warmed(daemon, warmed + 1)
        agent_bash(pi, model_server, "echo in-fork")
        wrap_up(pi, "fork")
        _compact(pi)
        assert _check_against_cold(sandbox, tap, forked, len(compactions(read_entries(forked))), 4) is False

    # pi rewrites a session file in place (a migration, a repair): same inode, other bytes.
    entries = read_entries(session_file)
    raw = session_file.read_text().splitlines()
    session_file.write_text("\n".join(json.dumps(json.loads(line), indent=None) for line in raw) + "\n")
    warmed = int(daemon.status()["sessionFilesWarmed"])
    with PiRpc(sandbox, extra_args=("--session", str(session_file))) as pi:
        _wait_warmed(daemon, warmed + 1)  # the resumed file is indexed again: same inode, other bytes
        agent_bash(pi, model_server, "echo after-rewrite")
        wrap_up(pi, "four")
        _compact(pi)
        nth = len(compactions(read_entries(session_file)))
        assert nth == len(compactions(entries)) + 1
        assert _check_against_cold(sandbox, tap, session_file, nth, 4) is False  # the warmed index, rebuilt


def _wait_leaf(pi: PiRpc, entry_id: str, timeout: float = 30.0) -> None:
    """Wait until pi's context no longer holds the abandoned turn (the extension command runs after the
    prompt is accepted)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        data = pi.request({"type": "get_messages"}).get("data") or {}
        if "abandoned-branch" not in json.dumps(data.get("messages", [])):
            return
        time.sleep(0.1)
    raise PiError(f"the leaf never moved to {entry_id}\n{pi.diagnostics()}")
