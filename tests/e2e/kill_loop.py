"""The kill -9 loop through a real pi: SIGKILL the daemon mid-pass, fall back, restart, carry the state on.

One iteration: the agent runs a command; a compaction starts and the daemon is caught in its World step (a
fake ``git`` that sleeps when armed) and SIGKILLed; pi's own compaction must run in its place, promptly (not
by waiting out the shim's deadline), and say so in a fallback line. The daemon is started again over the
socket file the dead one left; the agent runs another command; the next compaction must be Longhaul's, with
every command id of every earlier Longhaul compaction carried unchanged, none doubled, and the new commands
numbered after them. :func:`kill_loop` runs N iterations on one pi session and returns the figures
docs/reliability.md quotes (outcomes, restart times); the e2e test runs a few, ``make soak`` runs 100.
"""

from __future__ import annotations

import functools
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

from longhaul_daemon.evaluation.harness.answers import PI_OWN_MARKER
from longhaul_daemon.evaluation.harness.daemon_process import Daemon
from longhaul_daemon.evaluation.harness.model_server import ModelServer
from longhaul_daemon.evaluation.harness.pi_rpc import PiRpc
from longhaul_daemon.evaluation.harness.sandbox import Sandbox

from .fake_git import FakeGit
from .scenario import agent_bash, command_ids, commands_by_id, expect_longhaul, wrap_up
from .session_log import LINE_TYPE, Entry, compactions, customs, index_of, read_entries, wait_for_entries

__all__ = ["KillLoopReport", "kill_loop"]

FALLBACK_WAIT_S = 60.0


@dataclass
class KillLoopReport:
    """What each iteration did, for the assertions and for the doc."""

    iterations: int = 0
    killed_mid_pass: int = 0
    fallbacks: int = 0  # pi's own compaction ran in place of the killed pass
    fallback_reasons: dict[str, int] = field(default_factory=dict)
    longhaul_after_restart: int = 0  # the next compaction was Longhaul's and carried every id
    restart_s: list[float] = field(default_factory=list)
    fallback_s: list[float] = field(default_factory=list)  # from the kill to pi's compact response
    commands_carried: int = 0  # ids checked in the last Longhaul state

    def summary(self) -> str:
        def spread(values: list[float]) -> str:
            if not values:
                return "none"
            return (
                f"min {min(values):.2f} s, median {statistics.median(values):.2f} s, max {max(values):.2f} s"
            )

        reasons = ", ".join(f"{reason} {n}" for reason, n in sorted(self.fallback_reasons.items()))
        return "\n".join(
            [
                f"iterations {self.iterations}: killed mid-pass {self.killed_mid_pass}, pi's compaction ran "
                f"{self.fallbacks} ({reasons}), Longhaul compaction carrying every id after the restart "
                f"{self.longhaul_after_restart}",
                f"restart over the stale socket until status answers: {spread(self.restart_s)}",
                f"SIGKILL to pi's fallback compaction: {spread(self.fallback_s)}",
                f"command ids carried in the final state: {self.commands_carried}",
            ]
        )


def _fallback_reason(entries: list[Entry], compaction_id: str) -> str | None:
    after = entries[index_of(entries, compaction_id) + 1 :]
    for line in customs(after, LINE_TYPE):
        data = line.get("data")
        if isinstance(data, dict) and "fallback" in data:
            return str(data["fallback"])
    return None


def _is_response(event: dict[str, Any], *, rid: str) -> bool:
    return event.get("type") == "response" and event.get("id") == rid


def _has_fallback_line(entries: list[Entry], *, compaction_id: str) -> bool:
    return _fallback_reason(entries, compaction_id) is not None


def kill_loop(
    iterations: int,
    *,
    sandbox: Sandbox,
    model_server: ModelServer,
    daemon: Daemon,
    fake_git: FakeGit,
    pi: PiRpc,
) -> KillLoopReport:
    """Run the loop; raises ``AssertionError`` at the first iteration that breaks a promise."""
    report = KillLoopReport()
    env = sandbox.daemon_env(path_prefix=fake_git.bin_dir)  # unarmed, the fake git forwards at once
    daemon.start(env)
    agent_bash(pi, model_server, "echo start")
    wrap_up(pi, "start")
    assert pi.compact().get("success") is True, pi.diagnostics()
    session_file = pi.session_file()
    longhaul_seen, span = 1, 1
    expected = {
        cid: str(c["text"])
        for cid, c in commands_by_id(expect_longhaul(session_file, 1, span=1).state).items()
    }
    for n in range(1, iterations + 1):
        report.iterations = n
        agent_bash(pi, model_server, f"echo killed-{n}")
        wrap_up(pi, f"killed {n}")
        fake_git.arm()
        rid = pi.send({"type": "compact"})
        fake_git.wait_for_call(timeout=30)
        assert pi.get_state().get("isCompacting") is True, f"iteration {n}: pi is not compacting"
        assert daemon.socket_path.exists()
        daemon.kill()
        killed_at = time.monotonic()
        report.killed_mid_pass += 1
        fake_git.disarm()
        fake_git.kill_sleepers()
        _, response = pi.wait_event(
            functools.partial(_is_response, rid=rid),
            timeout=FALLBACK_WAIT_S,
            what=f"iteration {n}: the compact response after the daemon was SIGKILLed mid-pass",
        )
        report.fallback_s.append(time.monotonic() - killed_at)
        assert response.get("success") is True, f"iteration {n}: compact failed: {response}"
        assert PI_OWN_MARKER in response["data"]["summary"], f"iteration {n}: not pi's summary: {response}"
        comps = compactions(read_entries(session_file))
        fallen = comps[-1]
        entries = wait_for_entries(
            session_file,
            functools.partial(_has_fallback_line, compaction_id=str(fallen["id"])),
            timeout=10,
            what=f"iteration {n}: a fallback line after pi's compaction",
        )
        reason = _fallback_reason(entries, str(fallen["id"])) or ""
        assert reason != "timeout", f"iteration {n}: the shim waited out its deadline"
        report.fallbacks += 1
        report.fallback_reasons[reason] = report.fallback_reasons.get(reason, 0) + 1

        assert daemon.socket_path.exists(), "SIGKILL leaves the socket file behind"
        started = time.monotonic()
        daemon.start(env)  # over the stale socket
        report.restart_s.append(time.monotonic() - started)
        agent_bash(pi, model_server, f"echo after-{n}")
        wrap_up(pi, f"after {n}")
        answer = pi.compact()
        assert answer.get("success") is True, f"iteration {n}: compact after the restart: {answer}"
        nth, span = len(comps) + 1, span + 1
        state = expect_longhaul(session_file, nth, span=span).state
        by_id = commands_by_id(state)
        for cid, text in expected.items():
            assert by_id.get(cid, {}).get("text") == text, f"iteration {n}: {cid} ({text!r}) not carried"
        ids = command_ids(state)
        assert len(ids) == len(set(ids)), f"iteration {n}: an id appears twice: {ids}"
        for text in (f"echo killed-{n}", f"echo after-{n}"):
            new = [cid for cid, c in by_id.items() if c["text"] == text]
            assert len(new) == 1 and new[0] not in expected, f"iteration {n}: {text!r} got {new}"
        expected = {cid: str(c["text"]) for cid, c in by_id.items()}
        longhaul_seen += 1
        report.longhaul_after_restart += 1
    report.commands_carried = len(expected)
    assert longhaul_seen == iterations + 1
    return report
