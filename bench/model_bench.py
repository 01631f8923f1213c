"""Longhaul and pi's own compaction side by side, through real pi and a real small model.

``python bench/model_bench.py`` (``make bench-model`` runs it) generates the corpus of :mod:`bench_corpus`
(6 sessions per half: a tuning half, a held-out half and a second held-out half written blind to the
compactor's heuristics, from separate template banks and seeds; ``--half`` picks, ``both`` is the first two,
``all`` the three; ``held-out-3``, a third blind half, runs only when named),
plays each session through real pi 0.73.1 (``pi --mode rpc`` with the shim loaded) once per compactor:
Longhaul with the Diff (``longhaul``), the Diff with every model call made through pi (``longhaul-via-pi``:
``serve --via-pi openai-completions``, the shim's ``model.complete``), Longhaul in turns mode (``turns``,
``"narrativeMode": "turns"`` in ``longhaul.json``) and pi's own compaction (``pi``, ``PI_COMPACTOR=pi``);
``--compactors`` picks. Per half it prints the table of measures of :mod:`model_bench_report` (passes
closed whole, standing rules kept, withdrawn rules and one-off requests shown as standing, values kept, wall
time and output tokens against pi's), then one Markdown table row per compaction:

- wall time of the RPC ``compact`` call;
- the model calls made meanwhile and their input and output tokens, from the model server's request log;
- how the pass closed: the daemon's ``compaction`` record (``narrative.kind`` and ``reason``; in turns
  mode ``closedAs`` and how each section ended), or pi's summary;
- which of the user's standing rules in force still show their words in the summary, which withdrawn rules
  and one-off requests it shows as standing, which values from tool output it kept, and, for Longhaul,
  how many rules in ``details.state.rules`` are not a verbatim part of a user message (invented).

Then it checks the issue's targets: no more wall time and no more output tokens than pi's own compaction,
no rule invented, and every standing rule's words visible after every compaction.

The model is SmolLM2-135M-Instruct behind ``realmodel/server.py`` (``make realmodel`` installs it), decoding
at temperature 0. Every compaction call, pi's or Longhaul's, starts from an empty KV cache and may answer up
to 512 tokens; the agent's own turns answer in at most ``AGENT_MAX_TOKENS`` and reuse the previous turn's
cache (the server's ``--agent-max-tokens``, ``--agent-prefix-reuse``), since the agent's words are not what is
measured. It never calls a tool, so the sessions' commands run through pi's RPC ``bash`` (a user's ``!cmd``):
real commands in a scratch git project, some of them failing. Each stretch of work ends with ``cat`` of a log
longer than pi's ``keepRecentTokens``, so pi keeps that and compacts everything before it. Nothing outside a
scratch directory is read or written: pi, the daemon and git get their own HOME and agent dir
(``longhaul_daemon/evaluation/harness/sandbox.py``).

Numbers to compare between changes; they depend on the machine and on the model's words. No test asserts
them. ``--doc docs/performance.md`` also writes the tables into that file, between its model-bench markers.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# realmodel/, the e2e helpers (tests/e2e/) and the corpus beside this file
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "bench")]

from bench_bank_heldout import HELD_OUT  # noqa: E402
from bench_bank_heldout2 import HELD_OUT_2  # noqa: E402
from bench_bank_heldout3 import HELD_OUT_3  # noqa: E402
from bench_bank_tuning import TUNING  # noqa: E402
from bench_corpus import GROUPS, HALVES, Bank, Half, Session, half_sessions  # noqa: E402
from e2e.diff_script import write_longhaul_settings  # noqa: E402
from e2e.e2e_sandbox import build_sandbox  # noqa: E402
from e2e.real_model import Call, RealModelServer, installed  # noqa: E402
from e2e.session_log import compactions, is_longhaul, read_entries  # noqa: E402
from model_bench_report import (  # noqa: E402
    COMPACTORS,
    MODE_NAMES,
    Compactor,
    Row,
    checks,
    half_table,
    in_doubt,
    rows_from_table,
    shown_standing,
    table,
    targets,
    write_doc,
)

from longhaul_daemon.evaluation.harness.daemon_process import Daemon  # noqa: E402
from longhaul_daemon.evaluation.harness.pi_rpc import PiRpc  # noqa: E402
from longhaul_daemon.evaluation.harness.sandbox import Sandbox  # noqa: E402
from longhaul_daemon.plural import counted  # noqa: E402
from realmodel.pi_agent import write_agent_config  # noqa: E402

DAEMON_ARGS: dict[Compactor, tuple[str, ...]] = {"longhaul-via-pi": ("--via-pi", "openai-completions")}
KEEP_RECENT_TOKENS = 300  # the long log ending each stretch (about 600 tokens) is what pi keeps
PROMPT_TIMEOUT_S = 600.0
BASH_TIMEOUT_S = 60.0
COMPACT_TIMEOUT_S = 420.0
# The agent's own turns (requests carrying tools) answer in at most this many tokens and reuse the previous
# turn's KV cache; the compaction calls of both compactors keep the full cap and an empty cache.
AGENT_MAX_TOKENS = 128
# The third blind half: not one of bench_corpus's halves, so no group (both, all) holds it; --half names it.
DOC_START = "<!-- model-bench:start -->"
DOC_END = "<!-- model-bench:end -->"


def corpus(half: str, seed: int) -> list[Session]:
    """The sessions of ``half`` (tuning, held-out, held-out-2, held-out-3, both: the first two, or all: the
    first three), each half from its own bank and seed."""
    banks: list[tuple[Bank, Half]] = [
        (TUNING, "tuning"),
        (HELD_OUT, "held-out"),
        (HELD_OUT_2, "held-out-2"),
        (HELD_OUT_3, "held-out-3"),
    ]
    picked = GROUPS.get(half, (half,))
    return [s for bank, name in banks if name in picked for s in half_sessions(bank, name, seed)]


# ---- one run -----------------------------------------------------------------------------------------------


def _records(sandbox: Sandbox) -> list[dict[str, Any]]:
    path = sandbox.agent_dir / "logs" / "compaction-state.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _closed(sandbox: Sandbox, entry: dict[str, Any], compactor: Compactor, nth: int) -> str:
    if compactor == "pi":
        return "pi's summary"
    if not is_longhaul(entry):
        falls = [r for r in _records(sandbox) if r.get("event") == "fallback"]
        return f"fell back to pi ({falls[-1].get('reason') if falls else '?'})"
    passes = [r for r in _records(sandbox) if r.get("event") == "compaction"]
    narrative = (passes[nth - 1].get("narrative") or {}) if len(passes) >= nth else {}
    kind, reason = narrative.get("kind", "?"), narrative.get("reason")
    if kind == "turns":  # TURNS-3: how the span closed, and each section's end
        sections = narrative.get("sections") or {}
        ended = ", ".join(f"{name} {status}" for name, status in sections.items())
        kind = f"{narrative.get('closedAs', '?')} [{ended}]"
    return f"{kind} ({reason})" if reason else str(kind)


def _counted_calls(sandbox: Sandbox, nth: int) -> int:
    """The model calls the ``nth`` ``compaction`` record counts (0 when there is no such record); pi may
    also have compacted on its own, so ``nth`` counts records, not the session's stretches."""
    passes = [r for r in _records(sandbox) if r.get("event") == "compaction"]
    return int((passes[nth - 1].get("narrative") or {}).get("calls", 0)) if len(passes) >= nth else 0


def _wait_for_log(server: RealModelServer, seen: int, counted: int, timeout: float = 240.0) -> None:
    """Wait until the server has logged ``counted`` daemon calls after the first ``seen``: a call the daemon
    hung up on (a stream cut at its first object, a turn over its budget) is logged when the server notices,
    only after it has read the whole prompt, which may be well after the pass answered."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len([c for c in server.calls()[seen:] if c.kind == "other"]) >= counted:
            return
        time.sleep(0.2)


def _wait_until_not_compacting(pi: PiRpc) -> None:
    """A long stretch can pass pi's own threshold (6,144 tokens of the model's 8,192) and start a compaction
    after a turn; a ``compact`` sent meanwhile finds the daemon busy and falls back to pi. Wait it out, so
    each row is the stretch's own compaction."""
    deadline = time.monotonic() + COMPACT_TIMEOUT_S
    while pi.get_state(timeout=30).get("isCompacting") is True and time.monotonic() < deadline:
        time.sleep(1.0)


def _invented(entry: dict[str, Any], messages: list[str]) -> int | None:
    details = entry.get("details")
    state = details.get("state") if isinstance(details, dict) else None
    if not isinstance(state, dict):
        return None
    rules = [r for r in state.get("rules", []) if isinstance(r, dict)]
    return sum(1 for r in rules if not any(str(r.get("words")) in m for m in messages))


def play(
    session: Session, compactor: Compactor, server: RealModelServer, *, keep: bool, root: Path
) -> list[Row]:
    """The session through real pi with one compactor; one row per compaction.

    Every compactor plays the session at the same ``root``, so the model writes the same agent turns up to
    the first compaction (the agent's system prompt shows the sandbox's paths) and the compactors face the
    same span there; after it, each compactor's summary shapes what the agent says next.
    """
    sandbox = build_sandbox(server.base_url, root)
    write_agent_config(sandbox.agent_dir, server.base_url, keep_recent_tokens=KEEP_RECENT_TOKENS)
    for name, text in session.files.items():
        path = sandbox.project / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    if compactor == "pi":
        sandbox.extra_pi_env["PI_COMPACTOR"] = "pi"
    elif compactor == "turns":
        write_longhaul_settings(sandbox, narrativeMode="turns")
    daemon = Daemon(sandbox.socket_path, sandbox.root)
    daemon.start(sandbox.daemon_env(), extra_args=DAEMON_ARGS.get(compactor, ()))
    pi = PiRpc(sandbox)
    rows: list[Row] = []
    try:
        for nth, stretch in enumerate(session.stretches, start=1):
            for step in stretch:
                if step.kind == "say":
                    pi.prompt(step.text, timeout=PROMPT_TIMEOUT_S)
                else:
                    pi.bash(step.text, timeout=BASH_TIMEOUT_S)
            _wait_until_not_compacting(pi)
            seen = len(server.calls())
            record = 1 + sum(1 for r in _records(sandbox) if r.get("event") == "compaction")
            started = time.monotonic()
            response = pi.compact(timeout=COMPACT_TIMEOUT_S)
            wall = time.monotonic() - started
            if compactor != "pi":
                _wait_for_log(server, seen, _counted_calls(sandbox, record))
            made: list[Call] = server.calls()[seen:]
            if response.get("success") is not True:
                raise RuntimeError(f"{session.name} #{nth} ({compactor}): compact failed: {response}")
            entry = compactions(read_entries(pi.session_file()))[-1]
            summary = str(entry.get("summary", ""))
            through = nth - 1
            rules, withdrawn, one_offs, values = checks(
                summary,
                in_force=[(r.key, r.words) for r in session.in_force(through)],
                withdrawn=[(r.key, r.words) for r in session.withdrawn(through)],
                one_offs=session.one_offs(through),
                values=session.values(through),
            )
            rows.append(
                Row(
                    session=session.name,
                    half=session.half,
                    chain=session.chain,
                    nth=nth,
                    compactor=compactor,
                    wall_s=wall,
                    calls=len(made),
                    input_tokens=sum(c.prompt_tokens for c in made),
                    output_tokens=sum(c.completion_tokens for c in made),
                    closed=_closed(sandbox, entry, compactor, record),
                    rules=rules,
                    withdrawn=withdrawn,
                    one_offs=one_offs,
                    values=values,
                    invented=_invented(entry, session.user_messages()) if compactor != "pi" else None,
                    summary_chars=len(summary),
                    one_offs_in_doubt=in_doubt(summary, [w for w, shown in one_offs if shown]),
                    tasks=shown_standing(summary, session.tasks(through)),
                )
            )
            sys.stderr.write(table(rows[-1:])[-1] + "\n")  # as it goes: a cut-short run keeps its rows
    finally:
        pi.close()
        daemon.sweep()
        if not keep:
            sandbox.cleanup()
        if sandbox.root.exists():  # kept (--keep or LONGHAUL_E2E_KEEP=1): moved aside for the next compactor
            kept = sandbox.root.with_name(f"{sandbox.root.name}-{compactor}")
            sandbox.root.rename(kept)
            sys.stderr.write(f"  kept {kept}\n")
    return rows


def _block(rows: list[Row], args: argparse.Namespace, chosen: list[Session], took: str) -> list[str]:
    lines: list[str] = []
    for half in HALVES:
        mine = [r for r in rows if r.half == half]
        if not mine:
            continue
        sessions = [s for s in chosen if s.half == half]
        compactions = sum(len(s.stretches) for s in sessions)
        lines += [
            f"**{half}** ({counted(len(sessions), 'session')}, {counted(compactions, 'compaction')} per"
            " compactor):",
            "",
            *half_table(mine),
            "",
        ]
        for mode in ("longhaul", "longhaul-via-pi", "turns"):
            found = targets(mine, mode)
            if found:
                lines += [f"Targets on {half} ({MODE_NAMES[mode]} against pi's own):", *found, ""]
    lines += ["Per compaction:", "", *table(rows), ""]
    words = "; ".join(f"{s.name}: " + ", ".join(f"{r.key} “{r.words}”" for r in s.rules()) for s in chosen)
    lines.append(f"Rules and the words checked: {words}")
    lines.append(
        f"Run: halves {args.half}, seed {args.seed}, compactors {','.join(args.compactors)}, model threads "
        f"{args.threads}, {took}."
    )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0, help="added to each bank's own seed (default 0)")
    parser.add_argument("--half", choices=(*HALVES, *GROUPS), default="all")
    parser.add_argument("--only", action="append", help="run only this session (repeatable)")
    parser.add_argument("--list", action="store_true", help="list the sessions and their checks, run nothing")
    parser.add_argument("--threads", type=int, default=1, help="model server threads (1 suits a busy box)")
    parser.add_argument("--doc", type=Path, help="also write the tables into this file, between its markers")
    parser.add_argument("--keep", action="store_true", help="keep the sandboxes and the server's request log")
    parser.add_argument(
        "--from-rows",
        type=Path,
        help="run nothing: tabulate the per-compaction rows a run logged (its stderr), e.g. one cut short",
    )
    parser.add_argument(
        "--compactors",
        default="longhaul,turns,pi",
        type=lambda text: [c for c in text.split(",") if c],
        help="which to run, in order (default longhaul,turns,pi: the Diff, turns mode, pi's own;"
        " longhaul-via-pi: the Diff with every model call made through pi)",
    )
    args = parser.parse_args()
    unknown = [c for c in args.compactors if c not in COMPACTORS]
    if unknown or not args.compactors:
        parser.error(f"--compactors takes {', '.join(COMPACTORS)}, comma-separated (got {unknown or 'none'})")
    chosen = [s for s in corpus(args.half, args.seed) if not args.only or s.name in args.only]
    if args.list:
        for s in chosen:
            last = len(s.stretches) - 1
            sys.stdout.write(
                f"{s.name} ({s.half}): {len(s.user_messages())} user messages,"
                f" {len(s.stretches)} compactions;"
                f" rules {[r.words for r in s.rules()]}; withdrawn {[r.key for r in s.withdrawn(last)]};"
                f" one-offs {s.one_offs(last)}; values {s.values(last)}\n"
            )
        return
    if not chosen:
        parser.error(f"no session of --half {args.half} is named {args.only}")
    if args.from_rows is not None:
        if args.half in GROUPS:
            parser.error("--from-rows reads one half's rows: give --half " + " or ".join(HALVES))
        logged = rows_from_table(args.from_rows.read_text(encoding="utf-8").splitlines(), args.half)
        played = {r.session for r in logged}
        block = _block(
            logged, args, [s for s in chosen if s.name in played], f"rows read from {args.from_rows}"
        )
        sys.stdout.write("\n".join(block) + "\n")
        return
    work = Path(tempfile.mkdtemp(prefix="lh-model-bench-"))
    model = installed()
    started = time.monotonic()
    rows: list[Row] = []
    try:
        with RealModelServer(
            model, work, threads=args.threads, agent_max_tokens=AGENT_MAX_TOKENS, agent_prefix_reuse=True
        ) as server:
            sys.stderr.write(f"model server {server.base_url}, request log {server.log}\n")
            for session in chosen:
                for compactor in args.compactors:
                    root = work / f"sandbox-{session.name}"
                    rows.extend(play(session, compactor, server, keep=args.keep, root=root))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    block = _block(rows, args, chosen, f"{(time.monotonic() - started) / 60:.0f} min in all")
    sys.stdout.write("\n".join(block) + "\n")
    if args.doc:
        write_doc(args.doc, block, DOC_START, DOC_END)


if __name__ == "__main__":
    main()
