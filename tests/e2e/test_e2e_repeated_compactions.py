"""Three compactions in one session: the ledger keeps its ids, merges new commands, numbers spans 1, 2, 3."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from longhaul_daemon.evaluation.harness.daemon_process import Daemon
from longhaul_daemon.evaluation.harness.model_server import ModelServer
from longhaul_daemon.evaluation.harness.pi_rpc import PiRpc

from .scenario import LonghaulCompaction, agent_bash, command_ids, commands_by_id, expect_longhaul, wrap_up
from .session_log import compactions

pytestmark = pytest.mark.e2e

ROUNDS: list[tuple[list[str], list[str]]] = [
    # (commands the model runs through the bash tool, commands the user runs with RPC bash)
    (["echo alpha", "ls /nonexistent-dir-alpha"], []),
    (["echo beta"], ["echo user-beta"]),
    (["echo gamma", "ls /nonexistent-dir-gamma"], []),
]


def test_three_compactions_keep_ledger_ids(
    daemon: Daemon, model_server: ModelServer, start_pi: Callable[[], PiRpc]
) -> None:
    pi = start_pi()
    found: list[LonghaulCompaction] = []
    for n, (agent_commands, user_commands) in enumerate(ROUNDS, start=1):
        agent_bash(pi, model_server, *agent_commands)
        for command in user_commands:
            pi.bash(command)
        wrap_up(pi, f"round {n}")
        response = pi.compact()
        assert response.get("success") is True, f"compact #{n} failed: {response}\n{pi.diagnostics()}"
        found.append(expect_longhaul(pi.session_file(), n, span=n))

    assert len(compactions(found[-1].entries)) == 3
    assert pi.extension_errors() == [], pi.diagnostics()

    seen: dict[str, str] = {}  # id -> command text, across all spans
    previous_max = 0
    for n, comp in enumerate(found, start=1):
        ids = command_ids(comp.state)
        assert len(ids) == len(set(ids)), f"span {n}: an id appears twice in details.state.commands: {ids}"
        by_id = commands_by_id(comp.state)
        texts = [str(c["text"]) for c in by_id.values()]
        assert len(texts) == len(set(texts)), f"span {n}: a command was recorded twice: {texts}"
        for cid, text in seen.items():
            assert cid in by_id, f"span {n} lost {cid} ({text!r}); ids now {ids}"
            assert by_id[cid]["text"] == text, f"span {n}: {cid} was {text!r}, now {by_id[cid]['text']!r}"
        expected_new = ROUNDS[n - 1][0] + ROUNDS[n - 1][1]
        new_ids = [cid for cid in ids if cid not in seen]
        assert sorted(str(by_id[c]["text"]) for c in new_ids) == sorted(expected_new), (
            f"span {n}: new commands {[by_id[c]['text'] for c in new_ids]}, want {expected_new}"
        )
        numbers = sorted(int(c[1:]) for c in new_ids)
        assert numbers == list(range(previous_max + 1, previous_max + 1 + len(new_ids))), (
            f"span {n}: new ids {new_ids} do not continue after C{previous_max}"
        )
        previous_max = max(numbers, default=previous_max)
        seen.update({cid: str(by_id[cid]["text"]) for cid in new_ids})
        assert comp.span_record["data"]["span"] == n
        assert comp.span_record["data"]["compactionId"] == comp.entry["id"]

    summaries = [c.summary for c in found]
    assert len(set(summaries)) == 3, "two compactions share a summary text (pi matches entries by summary)"
    compaction_ids = [c.entry["id"] for c in found]
    assert len(set(compaction_ids)) == 3
    # Errors keep their ids too: E1 from span 1 is still E1 in span 3, the new failure got E2.
    errors = {str(e["id"]): e for e in found[-1].state.get("errors", [])}
    assert set(errors) == {"E1", "E2"}, f"errors after span 3: {sorted(errors)}"
