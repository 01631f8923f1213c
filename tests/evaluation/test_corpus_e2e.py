"""Corpus sessions are valid pi 0.73.1 sessions: real pi replays them with every compaction where recorded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from longhaul_daemon.evaluation.corpus import write_corpus

from .cli_run import private_env, run_cli

pytestmark = pytest.mark.e2e


def test_real_pi_replays_corpus_sessions_compaction_for_compaction(
    prerequisites: None, tmp_path: Path
) -> None:
    corpus = tmp_path / "corpus"
    write_corpus(corpus, sessions=3, seed=5, max_compactions=3)
    files = sorted(str(p) for p in corpus.glob("*.jsonl"))
    done = run_cli("replay", *files, "--json", env=private_env(tmp_path), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    outcomes = json.loads(done.stdout)["transcripts"]
    assert [(o["recordedCompactions"], o["compactions"], o["longhaul"]) for o in outcomes] == [
        (1, 1, 1),
        (2, 2, 2),
        (3, 3, 3),
    ]
    assert all(o["handlerErrors"] == 0 and o["divergences"] == 0 and o["skipped"] == 0 for o in outcomes)
