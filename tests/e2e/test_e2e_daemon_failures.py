"""When the daemon is absent or dies mid-pass, pi's own compaction runs and the session keeps working."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from longhaul_daemon.evaluation.harness.answers import PI_OWN_MARKER
from longhaul_daemon.evaluation.harness.daemon_process import Daemon
from longhaul_daemon.evaluation.harness.model_server import ModelServer
from longhaul_daemon.evaluation.harness.pi_rpc import PiRpc
from longhaul_daemon.evaluation.harness.sandbox import Sandbox

from .fake_git import FakeGit
from .print_mode import run_print
from .scenario import LONG_WRAP_UP, agent_bash, command_ids, commands_by_id, expect_longhaul, wrap_up
from .session_log import LINE_TYPE, Entry, compactions, customs, index_of, read_entries, wait_for_entries

pytestmark = pytest.mark.e2e


def _pi_own(entry: Entry) -> bool:
    return PI_OWN_MARKER in str(entry.get("summary")) and not entry.get("fromHook")


def _fallback_line_after(entries: list[Entry], compaction: Entry) -> list[Entry]:
    after = entries[index_of(entries, str(compaction["id"])) + 1 :]
    return [
        e for e in customs(after, LINE_TYPE) if isinstance(e.get("data"), dict) and "fallback" in e["data"]
    ]


def test_no_daemon_rpc_falls_back_to_pi(
    sandbox: Sandbox, model_server: ModelServer, start_pi: Callable[[], PiRpc]
) -> None:
    sandbox.extra_pi_env["LONGHAUL_SOCKET"] = str(sandbox.root / "nowhere" / "d.sock")
    pi = start_pi()
    agent_bash(pi, model_server, "echo no-daemon")
    wrap_up(pi, "no daemon")
    response = pi.compact()
    assert response.get("success") is True, f"compact failed without a daemon: {response}\n{pi.diagnostics()}"
    assert PI_OWN_MARKER in response["data"]["summary"], f"not pi's own summary: {response['data']}"
    assert len(model_server.requests("pi-summary")) == 1

    session_file = pi.session_file()
    comps = compactions(read_entries(session_file))
    assert len(comps) == 1 and _pi_own(comps[0]), f"compaction entry: {comps}"

    pi.prompt("another prompt after the fallback")
    assert model_server.requests("agent")[-1].texts("user")[-1] == "another prompt after the fallback"
    assert pi.proc.poll() is None, "pi exited"

    # PASS-13 / FAIL-16: the shim records the fallback in a compaction line after pi's entry.
    entries = wait_for_entries(
        session_file,
        lambda es: bool(_fallback_line_after(es, comps[0])),
        timeout=10,
        what="a compaction-state.line with a fallback reason after pi's own compaction",
    )
    assert _fallback_line_after(entries, comps[0])[0]["data"].get("v") == 1
    assert pi.close() == 0, f"pi exited with {pi.proc.returncode} on stdin EOF\n{pi.diagnostics()}"


def test_no_daemon_print_mode_falls_back_to_pi(sandbox: Sandbox, model_server: ModelServer) -> None:
    sandbox.extra_pi_env["LONGHAUL_SOCKET"] = str(sandbox.root / "nowhere" / "d.sock")
    run = run_print(sandbox, f"first: {LONG_WRAP_UP}", f"second: {LONG_WRAP_UP}", "third [[tokens=30000]]")
    assert run.returncode == 0, f"pi -p exit {run.returncode}\nstdout:\n{run.stdout}\nstderr:\n{run.stderr}"
    assert "ACK: third" in run.stdout
    assert run.session_file is not None
    comps = compactions(read_entries(run.session_file))
    assert len(comps) == 1 and _pi_own(comps[0]), f"compaction entries: {comps}\nstderr:\n{run.stderr}"


def test_print_mode_shows_the_fallback_notice_once_on_stderr(
    sandbox: Sandbox, model_server: ModelServer
) -> None:
    """``pi -p`` has no screen: a compaction's notice goes to stderr, once; stdout holds only the answer."""
    socket_path = sandbox.root / "nowhere" / "d.sock"
    sandbox.extra_pi_env["LONGHAUL_SOCKET"] = str(socket_path)
    run = run_print(sandbox, f"first: {LONG_WRAP_UP}", "second [[tokens=30000]]", "third")
    assert run.returncode == 0, f"pi -p exit {run.returncode}\nstderr:\n{run.stderr}"
    assert run.stdout.strip() == "ACK: third"
    notice = f"Longhaul: daemon not running (connect ENOENT {socket_path}); pi's own compaction runs instead"
    assert run.stderr.splitlines().count(notice) == 1, run.stderr


def test_daemon_killed_mid_pass_then_restarted(
    sandbox: Sandbox,
    model_server: ModelServer,
    daemon_process: Daemon,
    fake_git: FakeGit,
    start_pi: Callable[[], PiRpc],
) -> None:
    daemon_process.start(sandbox.daemon_env(path_prefix=fake_git.bin_dir))
    pi = start_pi()

    # Span 1 goes through normally (the fake git forwards at once while unarmed).
    agent_bash(pi, model_server, "echo one", "ls /nonexistent-dir-one")
    wrap_up(pi, "one")
    assert pi.compact().get("success") is True, pi.diagnostics()
    first = expect_longhaul(pi.session_file(), 1, span=1)
    ids_before = {cid: str(c["text"]) for cid, c in commands_by_id(first.state).items()}
    assert set(ids_before) == {"C1", "C2"}, f"ledger after span 1: {ids_before}"

    # The next pass hangs in the World step; the daemon is SIGKILLed while it waits.
    agent_bash(pi, model_server, "echo two")
    wrap_up(pi, "two")
    fake_git.arm()
    rid = pi.send({"type": "compact"})
    calls = fake_git.wait_for_call(timeout=30)
    assert pi.get_state().get("isCompacting") is True, "pi is not compacting while the daemon runs git"
    daemon_process.kill()
    fake_git.disarm()
    fake_git.kill_sleepers()  # the orphaned git the dead daemon was waiting on
    _, response = pi.wait_event(
        lambda e: e.get("type") == "response" and e.get("id") == rid,
        timeout=60,
        what="the compact response after the daemon was SIGKILLed mid-pass (the shim should fall back)",
    )
    assert response.get("success") is True, f"compact failed after the daemon died: {response}"
    assert PI_OWN_MARKER in response["data"]["summary"], (
        f"not pi's own summary after the daemon died (git calls seen: {calls}): {response['data']}"
    )
    session_file = pi.session_file()
    comps = compactions(read_entries(session_file))
    assert len(comps) == 2 and _pi_own(comps[1]), f"second compaction: {comps[1:]}"
    entries = wait_for_entries(
        session_file,
        lambda es: bool(_fallback_line_after(es, comps[1])),
        timeout=10,
        what="a compaction-state.line with a fallback reason after pi's own compaction",
    )
    reason = _fallback_line_after(entries, comps[1])[0]["data"]["fallback"]
    assert reason != "timeout", (
        f"the shim waited out its deadline instead of noticing the dead daemon: {reason}"
    )

    # A fresh daemon (normal PATH) picks the state up from the transcript: nothing lost, numbering continues.
    daemon_process.start(sandbox.daemon_env())
    agent_bash(pi, model_server, "echo three")
    wrap_up(pi, "three")
    response = pi.compact()
    assert response.get("success") is True, f"compact after restart failed: {response}\n{pi.diagnostics()}"
    third = expect_longhaul(session_file, 3, span=2)
    by_id = commands_by_id(third.state)
    for cid, text in ids_before.items():
        assert cid in by_id and by_id[cid]["text"] == text, (
            f"{cid} ({text!r}) lost after the restart: {by_id}"
        )
    ids = command_ids(third.state)
    assert len(ids) == len(set(ids)), f"an id appears twice: {ids}"
    for text in ("echo two", "echo three"):  # "echo two" ran in the span pi compacted after the kill
        new_ids = [cid for cid, c in by_id.items() if c["text"] == text]
        assert len(new_ids) == 1, f"{text!r} is missing or doubled: {by_id}"
        assert new_ids[0] not in ids_before, f"{text!r} reused an old id: {new_ids[0]}"
