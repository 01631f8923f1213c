"""pi's own compaction and Longhaul's side by side through real pi, scored by ``longhaul-daemon score``.

Two runs. ``--real-model`` (``make bench-compare-real``, hours on two cores) scores both compactors with the
real small model (SmolLM2-135M behind ``realmodel/server.py``) on the model bench's corpus, written as
recorded sessions with answer keys (:mod:`bench_transcripts`), each half (tuning, held-out, held-out-2) apart
(``--half``): each compactor reads the transcript with that model's understanding, so the columns compare
what the two compactors make of the same model. Its table opens docs/performance.md.

Without it (``make bench-compare``, about ten minutes) the run is a plumbing check. It writes a corpus (20
sessions, chains of 1 to 10 compactions, each with its answer key), starts the scripted summarizer of
:mod:`scripted_summarizer` (``bench/scripted_summarizer.py``) on loopback at a fixed speed (2,000 input and 60
output tokens a second, so writing costs what it costs with a real model), and runs ``longhaul-daemon score``
on the corpus: every session is replayed through real pi twice, once per compactor, each compaction calling
that model. The table holds the end-to-end compaction time, tokens per compaction, summary size after 1, 5 and
10 compactions, and the probe scores. It is printed and, with ``--write``, put into docs/performance.md under
its own heading (replacing an earlier run's table). Both compactors get the same scripted understanding of the
transcript, so it shows the plumbing (calls, tokens, time, Longhaul writing every compaction), not which
compactor understands a session better. No test asserts these numbers."""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench_corpus import GROUPS, HALVES, Half
from bench_transcripts import write_transcript
from scripted_summarizer import scripted_diff_answer, scripted_pi_summary

from longhaul_daemon.evaluation.common import key_path
from longhaul_daemon.evaluation.corpus import write_corpus
from longhaul_daemon.evaluation.harness.model_server import ModelServer, Speed
from longhaul_daemon.evaluation.key import AnswerKey, load_key
from longhaul_daemon.plural import counted

REPO = Path(__file__).resolve().parents[1]
PERFORMANCE = REPO / "docs" / "performance.md"
START = "<!-- bench-compare:start -->"
END = "<!-- bench-compare:end -->"
REAL_START = "<!-- bench-compare-real:start -->"
REAL_END = "<!-- bench-compare-real:end -->"
SCRIPTED_HEADING = (
    "## Plumbing check: the same side by side with a scripted summarizer (`make bench-compare`)\n\n"
    "Both compactors get the same scripted understanding of each transcript here, so this table checks the\n"
    "plumbing (calls, tokens, time, who wrote each compaction), not which compactor summarizes better; the\n"
    "real-model table above is the comparison.\n\n"
)
REAL_ABOUT = (
    "`bench/compare.py --real-model` runs `longhaul-daemon score` for both compactors with the "
    'real small model (SmolLM2-135M-Instruct behind `realmodel/server.py`, see "Against a real '
    "small model\" below) on the model bench's corpus, written as recorded pi sessions with "
    "answer keys (`bench/bench_transcripts.py`: every command run for real in a scratch git "
    "project), each half of it (tuning, held-out, held-out-2) in its own table. Each compactor reads "
    "the same transcript with the same model, so the columns compare what the two make of one "
    "model's understanding. The probes are `score`'s: a standing rule's words in the summary, a"
    " withdrawn rule not shown as active, a failing command with its exit code, a value from "
    "tool output."
)
REAL_HEADING = (
    "## Side by side with a real small model: pi's own compaction and Longhaul"
    " (`make bench-compare-real`)\n\n"
    + textwrap.fill(REAL_ABOUT, 110, break_on_hyphens=False, break_long_words=False)
    + "\n\n"
)
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


def _score(
    files: Sequence[Path], agent: Path, jobs: int, cwd: Path, model: str, keep: Path | None = None
) -> dict[str, Any]:
    argv = [sys.executable, "-m", "longhaul_daemon", "score", *map(str, files), "--model", model]
    argv += ["--yes", "--agent-dir", str(agent), "--json", "--jobs", str(jobs)]
    argv += ["--keep", str(keep)] if keep is not None else []
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


def table(document: dict[str, Any], setup: str, chains: Sequence[int]) -> str:
    """The markdown table; ``setup`` says which model and corpus, ``chains`` are the sessions' compaction
    counts."""
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
                f"({counted(sum(1 for c in chains if c >= n), 'session')})",
                _chars(pi, n),
                _chars(lh, n),
            )
            for n in (1, 5, 10)
        ],
        ("probe score, all probes", f"{100 * pi['score']:.0f}%", f"{100 * lh['score']:.0f}%"),
        *[
            (f"probe score, {k} ({counted(pi['checked'][k], 'probe')})", _kind(pi, k), _kind(lh, k))
            for k in KINDS
        ],
    ]
    lines = [
        f"Corpus: {counted(len(chains), 'session')} ({sum(chains)} compactions, "
        f"chains of {min(chains)} to {max(chains)}), "
        f"{document['transcripts']} scored; {setup}; real pi 0.73.1 with the shim and a real daemon. "
        "Means per compaction; summary sizes are means over the sessions that reach that many compactions.",
        "",
        "| | pi's own compaction | Longhaul |",
        "|---|---:|---:|",
        *[f"| {name} | {a} | {b} |" for name, a, b in rows],
    ]
    return "\n".join(lines) + "\n"


def write_section(text: str, *, real: bool) -> None:
    """Put ``text`` under its heading between its markers; a new real-model section goes first."""
    start, end, heading = (REAL_START, REAL_END, REAL_HEADING) if real else (START, END, SCRIPTED_HEADING)
    section = f"{start}\n{heading}{text}{end}\n"
    current = PERFORMANCE.read_text(encoding="utf-8") if PERFORMANCE.exists() else "# Performance\n"
    if start in current and end in current:
        current = re.sub(
            re.escape(start) + r".*?" + re.escape(end) + r"\n?", lambda _: section, current, flags=re.S
        )
    elif real and "\n" in current:
        title, rest = current.split("\n", 1)
        current = f"{title}\n\n{section}\n{rest.lstrip(chr(10))}"
    else:
        current = current.rstrip("\n") + "\n\n" + section
    PERFORMANCE.write_text(current, encoding="utf-8")


def _real_model(args: argparse.Namespace, root: Path) -> str:
    """Score both compactors with the real small model on each chosen half of the model bench's corpus."""
    sys.path[:0] = [str(REPO), str(REPO / "tests")]  # realmodel/ and the real-model server (tests/e2e/)
    from e2e.real_model import RealModelServer, installed
    from model_bench import corpus

    from realmodel.pi_agent import MODEL_ID, PROVIDER, write_agent_config

    halves: list[Half] = list(GROUPS[args.half]) if args.half in GROUPS else [args.half]
    parts: list[str] = []
    with RealModelServer(installed(), root, threads=args.threads) as server:
        agent = root / "agent"
        write_agent_config(agent, server.base_url)
        for half in halves:
            chosen = [s for s in corpus(half, args.seed) if not args.only or s.name in args.only]
            if not chosen:
                continue
            files = [root / half / f"{s.name}.jsonl" for s in chosen]
            files[0].parent.mkdir(parents=True)
            chains = [
                len(write_transcript(s, f, root / "scratch" / s.name).compactions)
                for s, f in zip(chosen, files, strict=True)
            ]
            document = _score(files, agent, args.jobs, root, f"{PROVIDER}/{MODEL_ID}", args.keep)
            setup = f"SmolLM2-135M-Instruct (realmodel/server.py, {args.threads} thread, temperature 0)"
            parts.append(f"**{half}** half of the model bench's corpus:\n\n" + table(document, setup, chains))
    if not parts:
        raise SystemExit(f"no session of --half {args.half} is named {', '.join(args.only or [])}")
    return "\n".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="pi's own compaction and Longhaul side by side on the corpus."
    )
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--input-tps", type=float, default=2000.0)
    parser.add_argument("--output-tps", type=float, default=60.0)
    parser.add_argument("--jobs", type=int, help="replays at once (default 4 scripted, 1 with --real-model)")
    parser.add_argument("--write", action="store_true", help="put the table into docs/performance.md")
    parser.add_argument("--real-model", action="store_true", help="score with the real small model instead")
    parser.add_argument("--half", choices=(*HALVES, *GROUPS), default="both", help="--real-model")
    parser.add_argument("--only", action="append", help="--real-model: only this session (repeatable)")
    parser.add_argument("--threads", type=int, default=1, help="--real-model: model server threads")
    parser.add_argument("--keep", type=Path, help="--real-model: keep each replayed session file here")
    args = parser.parse_args(argv)
    speed = Speed(args.input_tps, args.output_tps)
    root = Path(tempfile.mkdtemp(prefix="lh-bench-"))
    if args.real_model:
        args.jobs = args.jobs or 1
        try:
            text = _real_model(args, root)
        finally:
            shutil.rmtree(root, ignore_errors=True)
        sys.stdout.write(text)
        if args.write:
            write_section(text, real=True)
        return 0
    args.jobs = args.jobs or 4
    try:
        write_corpus(root / "corpus", sessions=args.sessions, seed=args.seed, max_compactions=10)
        files = sorted((root / "corpus").glob("*.jsonl"))
        chains = [len(_key(f).compactions) for f in files]
        scripted = ModelServer(
            model_id="scripted", pi_summary=scripted_pi_summary, longhaul=scripted_diff_answer, speed=speed
        )
        with scripted as model:
            document = _score(files, _agent_dir(root, model.base_url), args.jobs, root, "bench/scripted")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    setup = (
        f"scripted summarizer at {speed.input_tps:,.0f} input and {speed.output_tps:,.0f} output tokens per"
        " second"
    )
    text = table(document, setup, chains)
    sys.stdout.write(text)
    if args.write:
        write_section(text, real=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
