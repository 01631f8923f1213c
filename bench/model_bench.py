"""Longhaul and pi's own compaction side by side, through real pi and a real small model.

``python bench/model_bench.py`` (``make bench-model`` runs it) generates a few coding sessions, plays each
through real pi 0.73.1 (``pi --mode rpc`` with the shim loaded) three times: Longhaul with the Diff
(``longhaul``), the Diff with every model call made through pi (``longhaul-via-pi``: ``serve --via-pi
openai-completions``, the shim's ``model.complete``), Longhaul in turns mode (``turns``, ``"narrativeMode":
"turns"`` in ``longhaul.json``) and pi's own compaction (``pi``, ``PI_COMPACTOR=pi``); ``--compactors``
picks. It prints one Markdown table row per compaction:

- wall time of the RPC ``compact`` call;
- the model calls made meanwhile and their input and output tokens, from the model server's request log;
- how the pass closed: the daemon's ``compaction`` record (``narrative.kind`` and ``reason``; in turns
  mode ``closedAs`` and how each section ended), or pi's summary;
- which of the user's standing rules in force still show their words in the summary, and, for Longhaul,
  how many rules in ``details.state.rules`` are not a verbatim part of a user message (invented).

Then it checks the issue's targets: no more wall time and no more output tokens than pi's own compaction,
no rule invented, and every standing rule's words visible after every compaction.

The model is SmolLM2-135M-Instruct behind ``realmodel/server.py`` (``make realmodel`` installs it), decoding
at temperature 0 from an empty KV cache per request. It never calls a tool, so the sessions' commands run
through pi's RPC ``bash`` (a user's ``!cmd``): real commands in a scratch git project, some of them failing.
Each stretch of work ends with ``cat`` of a CI log longer than pi's ``keepRecentTokens``, so pi keeps that
and compacts everything before it. Nothing outside a scratch directory is read or written: pi, the daemon and
git get their own HOME and agent dir (``longhaul_daemon/evaluation/harness/sandbox.py``).

Numbers to compare between changes; they depend on the machine and on the model's words. No test asserts
them. ``--doc docs/performance.md`` also writes the table into that file, between its model-bench markers.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # realmodel/ and the e2e helpers (tests/e2e/)

from e2e.diff_script import write_longhaul_settings  # noqa: E402
from e2e.e2e_sandbox import build_sandbox  # noqa: E402
from e2e.real_model import Call, RealModelServer, installed  # noqa: E402
from e2e.session_log import compactions, is_longhaul, read_entries  # noqa: E402

from longhaul_daemon.evaluation.harness.daemon_process import Daemon  # noqa: E402
from longhaul_daemon.evaluation.harness.pi_rpc import PiRpc  # noqa: E402
from longhaul_daemon.evaluation.harness.sandbox import Sandbox  # noqa: E402
from realmodel.pi_agent import write_agent_config  # noqa: E402

# longhaul: the Diff, the daemon calling the model; longhaul-via-pi: the Diff with every call made by pi;
# turns: narrativeMode "turns"; pi: pi's own compaction
Compactor = Literal["longhaul", "longhaul-via-pi", "turns", "pi"]
COMPACTORS: tuple[Compactor, ...] = ("longhaul", "longhaul-via-pi", "turns", "pi")
DAEMON_ARGS: dict[Compactor, tuple[str, ...]] = {"longhaul-via-pi": ("--via-pi", "openai-completions")}
KEEP_RECENT_TOKENS = 300  # the `cat ci-N.log` ending each stretch (about 600 tokens) is what pi keeps
PROMPT_TIMEOUT_S = 600.0
BASH_TIMEOUT_S = 60.0
COMPACT_TIMEOUT_S = 420.0
DOC_START = "<!-- model-bench:start -->"
DOC_END = "<!-- model-bench:end -->"


# ---- the sessions ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    """A standing rule the user gives: the message, and the words that must stay visible (part of it)."""

    key: str
    message: str
    words: str


@dataclass(frozen=True)
class Step:
    """One thing the user does: ``say`` a prompt (a real model turn) or ``run`` a command (RPC ``bash``)."""

    kind: Literal["say", "run"]
    text: str
    rule: Rule | None = None
    lifts: str | None = None  # the key of the rule this message withdraws


@dataclass
class Session:
    name: str
    files: dict[str, str]
    stretches: list[list[Step]]

    def user_messages(self) -> list[str]:
        return [s.text for stretch in self.stretches for s in stretch if s.kind == "say"]

    def in_force(self, through: int) -> list[Rule]:
        """The rules given and not withdrawn in stretches 0..``through``."""
        rules: dict[str, Rule] = {}
        for stretch in self.stretches[: through + 1]:
            for step in stretch:
                if step.rule is not None:
                    rules[step.rule.key] = step.rule
                if step.lifts is not None:
                    rules.pop(step.lifts, None)
        return list(rules.values())


# Each rule in three wordings; a session picks one at random (seeded), so the labels cannot key on a phrase.
_RULES: dict[str, list[tuple[str, str]]] = {
    "deps": [
        (
            "Never add new dependencies to this project: the standard library has to do.",
            "Never add new dependencies",
        ),
        (
            "Do not add any third-party packages, only the Python standard library.",
            "Do not add any third-party packages",
        ),
        ("From now on no new dependencies, stdlib only.", "no new dependencies, stdlib only"),
    ],
    "tests": [
        (
            "Always run python3 -m unittest before you tell me something works.",
            "Always run python3 -m unittest",
        ),
        (
            "From now on, run the unit tests after every change you make.",
            "run the unit tests after every change",
        ),
        (
            "Make sure the tests pass before each commit, every time.",
            "Make sure the tests pass before each commit",
        ),
    ],
    "vendor": [
        ("Don't touch anything under vendor/, that code is generated.", "Don't touch anything under vendor/"),
        ("The files in vendor/ are generated: never edit them by hand.", "never edit them by hand"),
        ("Leave vendor/ alone, always.", "Leave vendor/ alone"),
    ],
    "indent": [
        ("Use four spaces for indentation, never tabs.", "Use four spaces for indentation, never tabs"),
        ("Indent with 4 spaces only; no tabs anywhere.", "Indent with 4 spaces only"),
        ("Always indent Python code with four spaces.", "Always indent Python code with four spaces"),
    ],
}
_LIFTS = {
    "tests": [
        "The rule about running the unit tests no longer applies: CI runs them for us now.",
        "You no longer need to run the tests yourself, that rule is lifted; CI does it.",
    ],
    "vendor": [
        "The vendor/ rule no longer applies: we stopped generating that code, edit it freely.",
        "Forget the rule about vendor/, it is withdrawn: the code there is ours now.",
    ],
}

_APP = '''"""Summarises a CSV file: row count and the sum of one column."""
import argparse
import csv

parser = argparse.ArgumentParser()
parser.add_argument("path")
parser.add_argument("--column", default="amount")
args = parser.parse_args()
with open(args.path, newline="") as handle:
    rows = list(csv.DictReader(handle))
print(len(rows), "rows", sum(float(r[args.column]) for r in rows))
'''
_DATA = "name,amount\nalpha,3\nbeta,4.5\ngamma,10\n"
_VENDOR = "# generated by tools/gen.py: do not edit\nTABLE = {'a': 1, 'b': 2}\n"


def _ci_log(run: int) -> str:
    lines = (f"[ci {run}] job {n}: checkout ok, install ok, lint ok, tests ok (14 passed)" for n in range(36))
    return "\n".join(lines) + "\n"


def _rule(rng: random.Random, key: str) -> Rule:
    message, words = rng.choice(_RULES[key])
    assert words in message
    return Rule(key=key, message=message, words=words)


def _say_rule(rule: Rule) -> Step:
    return Step("say", rule.message, rule=rule)


def sessions(seed: int) -> list[Session]:
    """Three sessions of two stretches: tasks, rules in varied wording, withdrawals, commands, errors."""
    rng = random.Random(seed)
    files = {"app.py": _APP, "data.csv": _DATA, "vendor/table.py": _VENDOR, "ci-1.log": _ci_log(1)}
    files["ci-2.log"] = _ci_log(2)
    deps, tests, vendor, indent = (_rule(rng, k) for k in ("deps", "tests", "vendor", "indent"))
    csv_flag = Session(
        "csv-flag",
        files,
        [
            [
                Step("say", "Add a --strict flag to app.py that rejects rows with an empty amount."),
                Step("run", "cat app.py"),
                _say_rule(deps),
                Step("run", "python3 app.py --strict data.csv"),  # exit 2: not there yet
                _say_rule(tests),
                Step("run", "cat ci-1.log"),
            ],
            [
                Step("say", rng.choice(_LIFTS["tests"]), lifts="tests"),
                Step("run", 'python3 -c "import yaml"'),  # exit 1: not installed, and not to be added
                Step("run", "python3 app.py --column price data.csv"),  # exit 1: KeyError
                Step("run", "cat ci-2.log"),
            ],
        ],
    )
    vendored = Session(
        "vendored-table",
        files,
        [
            [
                _say_rule(vendor),
                Step("say", "Why does app.py crash when the amount column is missing? Please look."),
                Step("run", "python3 app.py --column price data.csv"),
                Step("run", "grep -n TABLE vendor/table.py"),
                Step("run", "cat ci-1.log"),
            ],
            [
                _say_rule(indent),
                Step("run", "cat config.yaml"),  # exit 1: no such file
                Step("say", rng.choice(_LIFTS["vendor"]), lifts="vendor"),
                Step("run", "cat ci-2.log"),
            ],
        ],
    )
    release = Session(
        "release-notes",
        files,
        [
            [
                Step("say", "Write a short CHANGES file for the 1.2 release from the git log."),
                Step("run", "git log --oneline -3"),
                _say_rule(_rule(rng, "deps")),
                Step("run", "python3 -m unittest -q"),
                Step("run", "cat ci-1.log"),
            ],
            [
                _say_rule(_rule(rng, "tests")),
                Step("run", "python3 app.py data.csv"),
                Step("run", "python3 app.py"),  # exit 2: the path is missing
                Step("run", "cat ci-2.log"),
            ],
        ],
    )
    return [csv_flag, vendored, release]


# ---- one run -----------------------------------------------------------------------------------------------


@dataclass
class Row:
    """One compaction."""

    session: str
    nth: int
    compactor: Compactor
    wall_s: float
    calls: int
    input_tokens: int
    output_tokens: int
    closed: str
    rules: list[tuple[str, bool]]  # (rule key, its words in the summary)
    invented: int | None  # Longhaul only: rules in the state that are not the user's words
    summary_chars: int


def _normal(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


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
    """The model calls pass ``nth``'s ``compaction`` record counts (0 when there is no such record)."""
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
            seen = len(server.calls())
            started = time.monotonic()
            response = pi.compact(timeout=COMPACT_TIMEOUT_S)
            wall = time.monotonic() - started
            if compactor != "pi":
                _wait_for_log(server, seen, _counted_calls(sandbox, nth))
            made: list[Call] = server.calls()[seen:]
            if response.get("success") is not True:
                raise RuntimeError(f"{session.name} #{nth} ({compactor}): compact failed: {response}")
            entry = compactions(read_entries(pi.session_file()))[-1]
            summary = str(entry.get("summary", ""))
            shown = _normal(summary)
            rules = [(r.key, _normal(r.words) in shown) for r in session.in_force(nth - 1)]
            rows.append(
                Row(
                    session=session.name,
                    nth=nth,
                    compactor=compactor,
                    wall_s=wall,
                    calls=len(made),
                    input_tokens=sum(c.prompt_tokens for c in made),
                    output_tokens=sum(c.completion_tokens for c in made),
                    closed=_closed(sandbox, entry, compactor, nth),
                    rules=rules,
                    invented=_invented(entry, session.user_messages()) if compactor != "pi" else None,
                    summary_chars=len(summary),
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


# ---- the report --------------------------------------------------------------------------------------------


def _rules_cell(rules: list[tuple[str, bool]]) -> str:
    if not rules:
        return "none in force"
    return ", ".join(f"{key} {'yes' if seen else 'NO'}" for key, seen in rules)


MODE_NAMES: dict[Compactor, str] = {
    "longhaul": "the Diff",
    "longhaul-via-pi": "the Diff through pi",
    "turns": "turns mode",
    "pi": "pi's own",
}


def table(rows: list[Row]) -> list[str]:
    lines = [
        "| session | # | compactor | wall | model calls | input tok | output tok | closed "
        "| rules in force: words in summary | invented | summary chars |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        invented = "–" if r.invented is None else str(r.invented)
        lines.append(
            f"| {r.session} | {r.nth} | {r.compactor} | {r.wall_s:.1f} s | {r.calls} | {r.input_tokens:,} "
            f"| {r.output_tokens:,} | {r.closed} | {_rules_cell(r.rules)} | {invented} "
            f"| {r.summary_chars:,} |"
        )
    return lines


Sides = tuple[tuple[float, float], tuple[float, float]]  # (ours, pi's) in total, then at the median


def _sides(pairs: list[tuple[float, float]]) -> Sides:
    ours, theirs = [a for a, _ in pairs], [b for _, b in pairs]
    if not pairs:
        return (0.0, 0.0), (0.0, 0.0)
    return (sum(ours), sum(theirs)), (statistics.median(ours), statistics.median(theirs))


def _within(sides: Sides) -> bool:
    (total, total_pi), (median, median_pi) = sides
    return total <= total_pi and median <= median_pi


def targets(rows: list[Row], mode: Compactor = "longhaul") -> list[str]:
    """The issue's targets for one of Longhaul's modes against pi, each met or not, with the numbers."""
    ours = [r for r in rows if r.compactor == mode]
    theirs = {(r.session, r.nth): r for r in rows if r.compactor == "pi"}
    pairs = [(r, theirs[(r.session, r.nth)]) for r in ours if (r.session, r.nth) in theirs]

    def verdict(ok: bool) -> str:
        return "met" if ok else "NOT met"

    slower = [
        f"{a.session} #{a.nth} ({a.wall_s:.1f} s vs {b.wall_s:.1f} s)"
        for a, b in pairs
        if a.wall_s > b.wall_s
    ]
    wordier = [
        f"{a.session} #{a.nth} ({a.output_tokens} vs {b.output_tokens})"
        for a, b in pairs
        if a.output_tokens > b.output_tokens
    ]
    invented = sum(r.invented or 0 for r in ours)
    lost = [f"{r.session} #{r.nth} {key}" for r in ours for key, seen in r.rules if not seen]
    lost_pi = [f"{r.session} #{r.nth} {key}" for r in theirs.values() for key, seen in r.rules if not seen]
    wall = _sides([(a.wall_s, b.wall_s) for a, b in pairs])
    out = _sides([(a.output_tokens, b.output_tokens) for a, b in pairs])
    both = "in total and per compaction at the median"
    return [
        f"- wall time no more than pi's, {both}: {verdict(_within(wall))}"
        f" (total {wall[0][0]:.1f} s vs {wall[0][1]:.1f} s, median {wall[1][0]:.1f} s vs {wall[1][1]:.1f} s);"
        f" slower on {len(slower)} of {len(pairs)}{': ' + ', '.join(slower) if slower else ''}",
        f"- output tokens no more than pi's, {both}: {verdict(_within(out))}"
        f" (total {out[0][0]:,.0f} vs {out[0][1]:,.0f}, median {out[1][0]:,.0f} vs {out[1][1]:,.0f});"
        f" more on {len(wordier)} of {len(pairs)}{': ' + ', '.join(wordier) if wordier else ''}",
        f"- 0 rules invented: {verdict(invented == 0)} ({invented} invented)",
        f"- every standing rule's words visible after every compaction: {verdict(not lost)}"
        f"{' (missing: ' + ', '.join(lost) + ')' if lost else ''}; pi's own summary missed"
        f" {len(lost_pi)} of {sum(len(r.rules) for r in theirs.values())}",
    ]


def write_doc(path: Path, block: list[str]) -> None:
    text = path.read_text()
    start, end = text.index(DOC_START) + len(DOC_START), text.index(DOC_END)
    path.write_text(text[:start] + "\n" + "\n".join(block) + "\n" + text[end:])


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=11, help="picks the rules' wordings (default 11)")
    parser.add_argument("--only", action="append", help="run only this session (repeatable)")
    parser.add_argument("--threads", type=int, default=1, help="model server threads (1 suits a busy box)")
    parser.add_argument("--doc", type=Path, help="also write the table into this file, between its markers")
    parser.add_argument("--keep", action="store_true", help="keep the sandboxes and the server's request log")
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
    chosen = [s for s in sessions(args.seed) if not args.only or s.name in args.only]
    work = Path(tempfile.mkdtemp(prefix="lh-model-bench-"))
    model = installed()
    started = time.monotonic()
    rows: list[Row] = []
    try:
        with RealModelServer(model, work, threads=args.threads) as server:
            sys.stderr.write(f"model server {server.base_url}, request log {server.log}\n")
            for session in chosen:
                for compactor in args.compactors:
                    root = work / f"sandbox-{session.name}"
                    rows.extend(play(session, compactor, server, keep=args.keep, root=root))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    minutes = (time.monotonic() - started) / 60
    rules = {
        s.name: ", ".join(f"{r.key}: “{r.words}”" for st in s.stretches for r in (x.rule for x in st) if r)
        for s in chosen
    }
    block = [
        *table(rows),
        "",
        *(
            line
            for mode in ("longhaul", "longhaul-via-pi", "turns")
            if mode in args.compactors and "pi" in args.compactors
            for line in (
                f"Targets ({MODE_NAMES[mode]} against pi's own compaction, same sessions):",
                *targets(rows, mode),
            )
        ),
        "",
        "Rules and the words checked: " + "; ".join(f"{name}: {words}" for name, words in rules.items()),
        f"Run: seed {args.seed}, model threads {args.threads}, {minutes:.0f} min in all.",
    ]
    sys.stdout.write("\n".join(block) + "\n")
    if args.doc:
        write_doc(args.doc, block)


if __name__ == "__main__":
    main()
