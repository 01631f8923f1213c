"""pi's own compaction and Longhaul's side by side through real pi on the corpus, with a model of fixed speed.

Run with ``make bench-compare`` (about ten minutes on two cores). It writes a corpus (20 sessions, chains of
1 to 10 compactions, each with its answer key), starts the scripted summarizer of
:mod:`longhaul_daemon.evaluation.scripted` on loopback at a fixed speed (2,000 input and 60 output tokens a
second, so writing costs what it costs with a real model), and runs ``longhaul-daemon score`` on the corpus:
every session is replayed through real pi twice, once per compactor, each compaction calling that model. The
table holds the end-to-end compaction time, tokens per compaction, summary size after 1, 5 and 10
compactions, and the probe scores. It is printed and, with ``--write``, put into docs/performance.md under its
own heading (replacing an earlier run's table). No test asserts these numbers.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from scripted_summarizer import scripted_diff_answer, scripted_pi_summary

from longhaul_daemon.evaluation.common import key_path
from longhaul_daemon.evaluation.corpus import write_corpus
from longhaul_daemon.evaluation.harness.model_server import ModelServer, Speed
from longhaul_daemon.evaluation.key import AnswerKey, load_key

REPO = Path(__file__).resolve().parents[1]
PERFORMANCE = REPO / "docs" / "performance.md"
START = "<!-- bench-compare:start -->"
END = "<!-- bench-compare:end -->"
KINDS = ("rule", "lifted", "command", "value", "next")


def _agent_dir(root: Path, base_url: str) -> Path:
    """A scratch agent dir whose models.json names the scripted model as ``bench/scripted``."""
    agent = root / "agent"
    agent.mkdir()
    model = {
        "id": "scripted",
        "name": "Bench scripted summarizer",
        "reasoning": False,
        "input": ["text"],
        "contextWindow": 200_000,
        "maxTokens": 8192,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
    }
    compat = {"supportsDeveloperRole": False, "supportsReasoningEffort": False}
    provider = {"baseUrl": base_url, "api": "openai-completions", "apiKey": "bench", "compat": compat}
    (agent / "models.json").write_text(json.dumps({"providers": {"bench": {**provider, "models": [model]}}}))
    return agent


def _score(files: Sequence[Path], agent: Path, jobs: int, cwd: Path) -> dict[str, Any]:
    argv = [sys.executable, "-m", "longhaul_daemon", "score", *map(str, files), "--model", "bench/scripted"]
    argv += ["--yes", "--agent-dir", str(agent), "--json", "--jobs", str(jobs)]
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"score exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    document: dict[str, Any] = json.loads(done.stdout[done.stdout.index("\n{") + 1 :])
    return document


def _key(path: Path) -> AnswerKey:
    key = load_key(key_path(path))
    assert key is not None, "the corpus writes a key beside every session"
    return key


def _chars(report: dict[str, Any], n: int) -> str:
    value = report["summaryChars"].get(str(n))
    return "-" if value is None else f"{value:,.0f}"


def _kind(report: dict[str, Any], kind: str) -> str:
    value = report["kinds"].get(kind)
    return "-" if value is None else f"{100 * value:.0f}%"


def table(document: dict[str, Any], speed: Speed, chains: Sequence[int]) -> str:
    """The markdown table; ``chains`` are the corpus sessions' compaction counts."""
    pi, lh = document["compactors"]["pi"], document["compactors"]["longhaul"]

    def per(report: dict[str, Any], key: str) -> str:
        return f"{report[key] / report['compactions']:,.0f}" if report["compactions"] else "-"

    rows = [
        ("compactions replayed", f"{pi['compactions']:.0f}", f"{lh['compactions']:.0f}"),
        (
            "compactions written by Longhaul",
            f"{100 * pi['longhaulShare']:.0f}%",
            f"{100 * lh['longhaulShare']:.0f}%",
        ),
        (
            "end-to-end compaction time, mean",
            f"{pi['compactionSeconds']:.2f} s",
            f"{lh['compactionSeconds']:.2f} s",
        ),
        ("model calls per compaction", per(pi, "calls"), per(lh, "calls")),
        ("input tokens per compaction", per(pi, "inputTokens"), per(lh, "inputTokens")),
        ("output tokens per compaction", per(pi, "outputTokens"), per(lh, "outputTokens")),
        *[
            (
                f"summary size after {n} compaction{'s' if n > 1 else ''}, characters "
                f"({sum(1 for c in chains if c >= n)} sessions)",
                _chars(pi, n),
                _chars(lh, n),
            )
            for n in (1, 5, 10)
        ],
        ("probe score, all probes", f"{100 * pi['score']:.0f}%", f"{100 * lh['score']:.0f}%"),
        *[(f"probe score, {k} ({pi['checked'][k]} probes)", _kind(pi, k), _kind(lh, k)) for k in KINDS],
    ]
    lines = [
        f"Corpus: {len(chains)} sessions ({sum(chains)} compactions, "
        f"chains of {min(chains)} to {max(chains)}), "
        f"{document['transcripts']} scored; scripted summarizer at {speed.input_tps:,.0f} input and "
        f"{speed.output_tps:,.0f} output tokens per second; real pi 0.73.1 with the shim and a real daemon. "
        "Means per compaction; summary sizes are means over the sessions that reach that many compactions.",
        "",
        "| | pi's own compaction | Longhaul |",
        "|---|---:|---:|",
        *[f"| {name} | {a} | {b} |" for name, a, b in rows],
    ]
    return "\n".join(lines) + "\n"


def write_section(text: str) -> None:
    section = (
        f"{START}\n## Side by side: pi's own compaction and Longhaul (`make bench-compare`)\n\n{text}{END}\n"
    )
    current = PERFORMANCE.read_text(encoding="utf-8") if PERFORMANCE.exists() else "# Performance\n"
    if START in current and END in current:
        current = re.sub(
            re.escape(START) + r".*?" + re.escape(END) + r"\n?", lambda _: section, current, flags=re.S
        )
    else:
        current = current.rstrip("\n") + "\n\n" + section
    PERFORMANCE.write_text(current, encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="pi's own compaction and Longhaul side by side on the corpus."
    )
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--input-tps", type=float, default=2000.0)
    parser.add_argument("--output-tps", type=float, default=60.0)
    parser.add_argument("--jobs", type=int, default=4, help="replays at once (the model's waits are sleeps)")
    parser.add_argument("--write", action="store_true", help="put the table into docs/performance.md")
    args = parser.parse_args(argv)
    speed = Speed(args.input_tps, args.output_tps)
    root = Path(tempfile.mkdtemp(prefix="lh-bench-"))
    try:
        write_corpus(root / "corpus", sessions=args.sessions, seed=args.seed, max_compactions=10)
        files = sorted((root / "corpus").glob("*.jsonl"))
        chains = [len(_key(f).compactions) for f in files]
        scripted = ModelServer(
            model_id="scripted", pi_summary=scripted_pi_summary, longhaul=scripted_diff_answer, speed=speed
        )
        with scripted as model:
            document = _score(files, _agent_dir(root, model.base_url), args.jobs, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    text = table(document, speed, chains)
    sys.stdout.write(text)
    if args.write:
        write_section(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
