"""``score`` end to end: real pi, the shim, a private daemon and a scripted model on a real wire format.

Each run replays the session twice (Longhaul, then pi's own compaction); for every compaction pi switches to
the scored model, an OpenAI-compatible streaming server reached through score's recording proxy. The probes
come from the answer key: the rule while it stands, the withdrawn rule afterwards, the failing command with
its exit code, the port used again, the next task. A pi summary that drops the rule scores lower on rules,
one that keeps the withdrawn rule as active scores lower on lifted rules; Longhaul, given the same model
answers, keeps the rule verbatim and lifts it. Calls and tokens are counted alike for both compactors.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from longhaul_daemon.evaluation.common import key_path
from longhaul_daemon.evaluation.corpus import write_corpus
from longhaul_daemon.evaluation.key import load_key

from .cli_run import private_env, run_cli
from .scored import SPEC, drops_the_rule, keeps_the_lifted_rule, scored_model, write_scored_session

pytestmark = pytest.mark.e2e


def _score(tmp_path: Path, session: Path, agent: Path, *extra: str) -> tuple[dict[str, Any], str]:
    args = ["score", str(session), "--model", SPEC, "--yes", "--agent-dir", str(agent), "--json", *extra]
    done = run_cli(*args, env=private_env(tmp_path), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr == ""  # not a terminal: no progress bar
    plan, _, document = done.stdout.partition("\n{")
    return json.loads("{" + document), plan + done.stderr


def test_both_compactors_are_scored_against_the_key(prerequisites: None, tmp_path: Path) -> None:
    session = write_scored_session(tmp_path, "customer-acme-private")
    agent = tmp_path / "scored-agent"
    model = scored_model(agent)
    try:
        document, printed = _score(tmp_path, session, agent)
        stats = model.stats()
    finally:
        model.close()
    assert "model calls: at least 4" in printed
    for secret in (str(tmp_path), "customer-acme", "5173", "dependency"):
        assert secret not in printed + json.dumps(document)
    longhaul, pi = document["compactors"]["longhaul"], document["compactors"]["pi"]
    checked = {"rule": 1, "lifted": 1, "command": 1, "value": 1, "next": 2}
    assert longhaul["checked"] == checked and pi["checked"] == checked
    assert longhaul["kinds"] == {"rule": 1.0, "lifted": 1.0, "command": 1.0, "value": 1.0, "next": 1.0}
    assert pi["kinds"] == longhaul["kinds"] and pi["score"] == longhaul["score"] == 1.0
    assert (longhaul["compactions"], longhaul["longhaulShare"], pi["longhaulShare"]) == (2, 1.0, 0.0)
    # Every call went through the proxy, and the proxy saw what the model served.
    assert longhaul["calls"] == stats["other"].calls >= 2 and pi["calls"] == stats["pi-summary"].calls == 2
    assert pi["inputTokens"] == stats["pi-summary"].input_tokens > 0
    assert longhaul["outputTokens"] == stats["other"].output_tokens > 0
    assert set(longhaul["summaryChars"]) == {"1", "2"}


def test_a_lost_rule_and_a_withdrawn_rule_kept_active_score_lower(
    prerequisites: None, tmp_path: Path
) -> None:
    session = write_scored_session(tmp_path, "s")
    results = {}
    for name, variant in (("drops", drops_the_rule), ("keeps-lifted", keeps_the_lifted_rule)):
        agent = tmp_path / f"agent-{name}"
        model = scored_model(agent, variant)
        try:
            results[name] = _score(tmp_path, session, agent, "--runs", "2")[0]["compactors"]
        finally:
            model.close()
    drops, keeps = results["drops"], results["keeps-lifted"]
    assert drops["pi"]["kinds"]["rule"] == 0.0 and drops["pi"]["kinds"]["lifted"] == 1.0
    assert keeps["pi"]["kinds"]["lifted"] == 0.0 and keeps["pi"]["kinds"]["rule"] == 1.0
    for result in (drops, keeps):
        assert result["pi"]["score"] < result["longhaul"]["score"] == 1.0
        assert len(result["pi"]["runScores"]) == 2  # two replicates, scored one by one


def test_corpus_sessions_are_scored_on_every_probe_of_their_key(prerequisites: None, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    write_corpus(corpus, sessions=3, seed=3, max_compactions=3)
    files = sorted(corpus.glob("*.jsonl"))
    expected = {kind: 0 for kind in ("rule", "lifted", "command", "value", "next")}
    for path in files:
        key = load_key(key_path(path))
        assert key is not None
        for c in key.compactions:
            expected["rule"] += len(c.rules)
            expected["lifted"] += len(c.lifted)
            expected["command"] += len(c.commands)
            expected["value"] += len(c.values)
            expected["next"] += 1
    agent = tmp_path / "agent"
    model = scored_model(agent)
    try:
        args = ["score", *map(str, files), "--model", SPEC, "--yes", "--agent-dir", str(agent), "--json"]
        done = run_cli(*args, "--jobs", "2", env=private_env(tmp_path), cwd=tmp_path)
    finally:
        model.close()
    assert done.returncode == 0, done.stdout + done.stderr
    document = json.loads(done.stdout[done.stdout.index("\n{") + 1 :])
    for compactor in ("longhaul", "pi"):
        report = document["compactors"][compactor]
        assert report["checked"] == expected and report["compactions"] == 6
        # The scripted model reads what a user wrote the same way on both sides; what it finds, both keep.
        assert report["kinds"]["command"] == report["kinds"]["value"] == report["kinds"]["next"] == 1.0
