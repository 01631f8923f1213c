"""Long chains of compactions through a real pi: rules stay verbatim, lifted rules stay gone, the summary
stays bounded.

One pi session is compacted twelve times over RPC. The scripted model behaves like a careful one: it labels
the user's rules (short ones whole, a long one with its exact words), withdraws rules only where the user
says they no longer apply, misses one replacement that the daemon's question round then catches, tries to
treat a permission as a lift once and takes it back in the retry, and reports values and decisions. After
every compaction the test reads the compaction entry pi stored and checks the rules in force against the
user's own words, the ids against earlier compactions, and the size of the summary.

Requirements: LABEL-4, LABEL-14, LABEL-15, QUOTE-1, QUOTE-2, QUOTE-4, LIFT-1, LIFT-6, LIFT-9, LIFT-10,
LIFT-12, LIFT-14, FAIL-18, VALUE-5, VALUE-8, PASS-8, and issue 4's "the rendered summary stays bounded".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from longhaul_daemon.evaluation.harness.daemon_process import Daemon
from longhaul_daemon.evaluation.harness.model_server import ModelServer
from longhaul_daemon.evaluation.harness.pi_rpc import PiRpc
from longhaul_daemon.evaluation.harness.replies import Reply, text, tool_call
from longhaul_daemon.evaluation.harness.sandbox import Sandbox

from .diff_script import (
    DiffCall,
    DiffScript,
    Lab,
    Responder,
    Val,
    answer,
    answer_questions,
    cut_at_limit,
    lifts,
    raw,
    rule_line,
    rules_by_id,
    section,
    standing_rules,
    status,
)
from .scenario import LonghaulCompaction, expect_longhaul, wrap_up

pytestmark = pytest.mark.e2e

# ---- the user's words --------------------------------------------------------------------------------------

DEPS = "Never add new dependencies without asking me first."
TABS = "Always indent with tabs."
DRY_WORDS = "Every dry-run line must start with DRY:"
DRY_MESSAGE = (
    "Here is how the dry-run mode should work. The flag is --dry-run and it prints what the exporter would "
    "write without touching any file. It reads the same configuration as a real run and it checks the "
    "target directory. "
    + DRY_WORDS
    + " so I can grep for it later. The summary at the end lists how many rows would be written per table, "
    "and the exit code is zero when the run would succeed. Errors are printed the same way as in a real run. "
    "Please keep the output stable so that the golden files in the tests do not change between runs, and "
    "make sure the help text mentions the flag next to the other output options."
)
COMMITS_72 = "Keep commit messages under 72 characters."
TABS_LIFT = "The tabs rule no longer applies to this project."
STAGING = "Use the staging database for every test run."
STAGING_LIFT = "The staging database rule no longer applies."
COMMITS_50 = "Keep commit messages under 50 characters instead of 72 characters."
PERMISSION = "you may add the csv-writer dependency this time"
PORT_A = "Please start the dev server."
PORT_B = "Please move the dev server to the next port."
DECISION = "Build with make and keep the output in dist/."

NARRATIVE = "Scripted narrative line for this span."


@dataclass
class Round:
    """One stretch of work before a compaction: user prompts (with optional agent replies) and what the
    model answers for it."""

    prompts: Sequence[tuple[str, Sequence[Reply]]]
    labels: Sequence[Lab] = ()
    retry_labels: Sequence[Lab] | None = None  # when set, the first answer is flawed and this fixes it
    values: Sequence[Val] = ()
    decisions: Sequence[dict[str, Any]] = ()
    expect_kinds: Sequence[str] = ("first",)


def bash(command: str) -> Sequence[Reply]:
    return (tool_call("bash", command=command), text(f"Ran {command}."))


# Labels the model gives whenever these messages are offered (again), so a re-offer is labeled the same way.
ALWAYS: list[Lab] = [
    Lab(DEPS, "rule"),
    Lab(TABS, "rule"),
    Lab("Every dry-run line", "rule", words=DRY_WORDS),
    Lab(COMMITS_72, "rule"),
    Lab(TABS_LIFT, lifts(TABS)),
    Lab(STAGING, "rule"),
    Lab(STAGING_LIFT, lifts(STAGING)),
    Lab(COMMITS_50, "rule"),  # the model misses that it supersedes R4; the question round asks
]

ROUNDS: list[Round] = [
    Round(  # 1
        prompts=[(DEPS, ()), ("Please build the exporter.", bash("echo build-1"))],
        decisions=[{"text": DECISION, "why": "one command", "evidence": ["C1"]}],
    ),
    Round(  # 2
        prompts=[(TABS, ()), (PORT_A, bash("echo 'Local:   http://localhost:5173/'"))],
        values=[Val("dev server port", "5173", PORT_A)],
    ),
    Round(
        prompts=[(DRY_MESSAGE, ()), (COMMITS_72, ()), ("Please run the tests.", bash("echo tests-3"))]
    ),  # 3
    Round(prompts=[(TABS_LIFT, ()), (STAGING, ()), (STAGING_LIFT, ())]),  # 4
    Round(  # 5
        prompts=[(COMMITS_50, ()), (PORT_B, bash("echo 'Local:   http://localhost:5174/'"))],
        values=[Val("dev server port", "5174", PORT_B)],
        expect_kinds=("first", "question"),
    ),
    Round(  # 6
        prompts=[(PERMISSION, ()), ("Please build again.", bash("echo build-6"))],
        labels=[Lab(PERMISSION, lifts(DEPS))],
        retry_labels=[Lab(PERMISSION, "not a rule")],
        expect_kinds=("first", "retry"),
    ),
] + [
    Round(prompts=[("Please run the build again.", bash(f"echo build-{n}"))])  # 7..12: the same work again
    for n in range(7, 13)
]


@dataclass
class Expected:
    """Rules by id as the user gave them: (words, the fragment naming their message); lifted ids."""

    rules: dict[str, tuple[str, str]] = field(default_factory=dict)
    lifted: dict[str, str] = field(default_factory=dict)  # R id -> fragment of the lifting message


def expected_after(n: int) -> Expected:
    exp = Expected()
    if n >= 1:
        exp.rules["R1"] = (DEPS, DEPS)
    if n >= 2:
        exp.rules["R2"] = (TABS, TABS)
    if n >= 3:
        exp.rules["R3"] = (DRY_WORDS, "Every dry-run line")
        exp.rules["R4"] = (COMMITS_72, COMMITS_72)
    if n >= 4:
        exp.rules["R5"] = (STAGING, STAGING)  # LABEL-15: given and lifted in one span
        exp.lifted.update(R2=TABS_LIFT, R5=STAGING_LIFT)
    if n >= 5:
        exp.rules["R6"] = (COMMITS_50, COMMITS_50)
        exp.lifted["R4"] = COMMITS_50  # LIFT-10, LIFT-14: the question round added the lift
    return exp


def responder(plan: Round) -> Responder:
    """The model for one round: a question call gets its questions accepted, a retry the fixed labels."""
    first = answer([*plan.labels, *ALWAYS], values=plan.values, decisions=plan.decisions)
    fixed = plan.retry_labels if plan.retry_labels is not None else plan.labels
    retry = answer([*fixed, *ALWAYS], values=plan.values, decisions=plan.decisions)
    questions = answer_questions(accept=True)

    def respond(call: DiffCall) -> Reply:
        if call.kind == "question":
            return questions(call)
        return retry(call) if call.kind == "retry" else first(call)

    return respond


def without(summary: str, *titles: str) -> str:
    """The summary with the given sections and the header line (pass id) removed."""
    body = summary.split("\n", 1)[1]
    for title in titles:
        body = body.replace(f"## {title}\n{section(summary, title)}", "")
    return re.sub(r"\n{3,}", "\n\n", body).strip()


def user_ids(found: LonghaulCompaction) -> dict[str, str]:
    """Text of each user message on the branch -> its u<n> (the daemon numbers them from the root)."""
    ids: dict[str, str] = {}
    n = 0
    for entry in found.entries:
        message = entry.get("message") if entry.get("type") == "message" else None
        if isinstance(message, dict) and message.get("role") == "user":
            n += 1
            content = message.get("content")
            body = (
                content
                if isinstance(content, str)
                else "".join(
                    str(p.get("text", ""))
                    for p in content or []
                    if isinstance(p, dict) and p.get("type") == "text"
                )
            )
            ids.setdefault(body, f"u{n}")
    return ids


def message_id(ids: dict[str, str], fragment: str) -> str:
    found = [uid for body, uid in ids.items() if fragment in body]
    assert len(found) == 1, f"{fragment!r} is in {len(found)} user messages"
    return found[0]


def check_rules(
    n: int, found: LonghaulCompaction, first_seen: dict[str, dict[str, Any]], exp: Expected | None = None
) -> None:
    """Rules in force are the user's words byte for byte, with stable ids; lifted rules are gone for good."""
    exp = expected_after(n) if exp is None else exp
    ids = user_ids(found)
    rules = rules_by_id(found.state)
    assert set(rules) == set(exp.rules), f"compaction {n}: rule ids {sorted(rules)}, want {sorted(exp.rules)}"
    standing = section(found.summary, "Standing rules")
    for rid, (words, fragment) in exp.rules.items():
        rule = rules[rid]
        assert rule["words"] == words, f"compaction {n}: {rid} words {rule['words']!r}, want {words!r}"
        assert rule["message"] == message_id(ids, fragment), f"compaction {n}: {rid} names {rule['message']}"
        if rid in exp.lifted:
            assert rule["lifted"] is True, f"compaction {n}: {rid} should be lifted: {rule}"
            assert rule["liftedBy"] == message_id(ids, exp.lifted[rid]), f"compaction {n}: {rule}"
            assert words not in found.summary, f"compaction {n}: lifted {rid} reappears in the summary"
            assert f"- {rid} " not in standing
        else:
            assert not rule.get("lifted"), f"compaction {n}: {rid} lifted unexpectedly: {rule}"
            line = rule_line(rid, words, str(rule["message"]), flagged=bool(rule.get("possiblyWithdrawnBy")))
            assert line in standing, f"compaction {n}:\n{standing}"
        before = first_seen.setdefault(rid, rule)
        for key in ("words", "message", "span", "seq"):
            assert rule[key] == before[key], f"compaction {n}: {rid}.{key} changed from {before[key]!r}"
    in_force = set(standing_rules(found.state))
    assert in_force == set(exp.rules) - set(exp.lifted)
    lines = standing.splitlines()
    heads = [line for line in lines if line.startswith("- ")]
    assert len(heads) == len(in_force), f"compaction {n}: extra lines under Standing rules"
    # under a rule only code's own flags (diff/doubts.py): a withdrawal no label lifted, a disputed label
    flags = [line for line in lines if not line.startswith("- ")]
    assert all(f.startswith(("  in doubt: ", "  possibly withdrawn by ")) for f in flags), standing


def check_values(n: int, found: LonghaulCompaction) -> None:
    """VALUE-5, VALUE-8: one value per name, the newest, shown with its turn."""
    ids = user_ids(found)
    values = [(v["what"], v["value"], v["turn"]) for v in found.state["values"]]
    shown = section(found.summary, "Values")
    if n >= 5:
        turn = message_id(ids, PORT_B)
        assert values == [("dev server port", "5174", turn)], values
        assert shown == f"- dev server port: 5174 (turn {turn})"
    elif n >= 2:
        turn = message_id(ids, PORT_A)
        assert values == [("dev server port", "5173", turn)], values
        assert shown == f"- dev server port: 5173 (turn {turn})"


def test_twelve_compactions_keep_rules_verbatim_and_the_summary_bounded(
    daemon: Daemon,
    model_server: ModelServer,
    start_pi: Callable[[], PiRpc],
    record_property: Callable[[str, object], None],
) -> None:
    pi = start_pi()
    script = DiffScript().install(model_server)
    first_seen: dict[str, dict[str, Any]] = {}
    sizes: list[int] = []
    found: list[LonghaulCompaction] = []
    for n, plan in enumerate(ROUNDS, start=1):
        for prompt, replies in plan.prompts:
            model_server.enqueue(*replies)
            pi.prompt(prompt)
            assert model_server.pending() == 0
        wrap_up(pi, f"round {n}")
        start = len(script.calls)
        script.then = responder(plan)
        response = pi.compact()
        assert response.get("success") is True, f"compact #{n} failed: {response}\n{pi.diagnostics()}"
        comp = expect_longhaul(pi.session_file(), n, span=n)
        kinds = [c.kind for c in script.since(start)]
        assert kinds == list(plan.expect_kinds), f"compaction {n}: model calls {kinds}"
        data = comp.span_record["data"]
        assert (data["closedAs"], data["reason"]) == ("whole", None), f"compaction {n}: {data}"
        check_rules(n, comp, first_seen)
        check_values(n, comp)
        assert [d["text"] for d in comp.state["decisions"]] == [DECISION]
        found.append(comp)
        sizes.append(len(comp.summary))

    assert pi.extension_errors() == [], pi.diagnostics()
    record_property("summary_chars", sizes)
    print(f"\nsummary characters after compactions 1..{len(sizes)}: {sizes}")
    print(f"after 1: {sizes[0]}, after 5: {sizes[4]}, after 10: {sizes[9]}")

    # Bounded: from compaction 6 on the same work repeats, so beyond the per-span work log and the newest
    # commands (both capped by the renderer) the summary does not change at all.
    stable = [without(c.summary, "Work log", "Recent commands") for c in found[5:]]
    assert all(s == stable[0] for s in stable), "the summary changes while nothing new is learned"
    per_span = max(len(line) + 1 for line in section(found[-1].summary, "Work log").splitlines())
    command_line = max(len(line) + 1 for line in section(found[-1].summary, "Recent commands").splitlines())
    for k in range(6, len(sizes)):
        grown = sizes[k] - sizes[5]
        assert grown <= (k - 5) * (per_span + command_line), f"compaction {k + 1} grew by {grown} characters"
    assert sizes[-1] < 2 * sizes[4], f"sizes {sizes}"


# ---- a model that restates what the state already holds ----------------------------------------------------


def test_restated_decisions_and_dead_ends_do_not_grow_the_state(
    daemon: Daemon, model_server: ModelServer, start_pi: Callable[[], PiRpc]
) -> None:
    """Issue 4 ("state growth by distinct content, not by number of compactions"), FAIL-18: a model that
    repeats the decision and dead end it already reported, span after span, adds nothing new; over ten
    compactions the state keeps each once and the summary grows only by the work log and new commands."""
    pi = start_pi()
    decision = {"text": DECISION, "why": "one command", "evidence": ["C1"]}
    dead_end = {"text": "Building with the old shell script fails.", "evidence": ["E1"]}
    script = DiffScript(then=answer([Lab(DEPS, "rule")], decisions=[decision], dead_ends=[dead_end]))
    script.install(model_server)
    model_server.enqueue(
        tool_call("bash", command="echo build-1"), tool_call("bash", command="ls /nonexistent-old-script")
    )
    model_server.enqueue(text("Built; the old script is gone."))
    pi.prompt(DEPS)
    pi.prompt("Please build, then try the old script.")
    sizes: list[int] = []
    found: list[LonghaulCompaction] = []
    for n in range(1, 11):
        if n > 1:
            model_server.enqueue(*bash(f"echo again-{n}"))
            pi.prompt("Please run the build again.")
        wrap_up(pi, f"again {n}")
        response = pi.compact()
        assert response.get("success") is True, f"compact #{n} failed: {response}\n{pi.diagnostics()}"
        comp = expect_longhaul(pi.session_file(), n, span=n)
        assert comp.span_record["data"]["closedAs"] == "whole", comp.span_record["data"]
        assert list(standing_rules(comp.state)) == ["R1"], comp.state["rules"]  # FAIL-18: no second R
        found.append(comp)
        sizes.append(len(comp.summary))
    print(f"\nsummary characters with restated decisions, compactions 1..10: {sizes}")

    last = found[-1].state
    assert [d["text"] for d in last["decisions"]] == [DECISION], f"{len(last['decisions'])} decisions"
    assert [d["text"] for d in last["deadEnds"]] == [dead_end["text"]], f"{len(last['deadEnds'])} dead ends"
    stable = [without(c.summary, "Work log", "Recent commands") for c in found[1:]]
    assert all(s == stable[0] for s in stable), "restating the same decision grows the summary"


# ---- a chain where some passes fail ------------------------------------------------------------------------

FORCE = "From now on, never force-push any branch."
TABS_AGAIN = "Once more: the tabs rule no longer applies."
ENGLISH = "Write every log message in English."


def test_chain_with_failing_passes_records_carried_rules_and_never_revives_lifted_ones(
    daemon: Daemon, model_server: ModelServer, start_pi: Callable[[], PiRpc]
) -> None:
    """FAIL-10, FAIL-11, FAIL-18, FAIL-1, FAIL-4, FAIL-7, FAIL-19, LIFT-5, LIFT-6, LIFT-9, QUOTE-4, LABEL-8:
    ten compactions where some passes fail (server errors, unlabeled messages) and others need a retry
    (truncated JSON, a reply cut at the limit, a rate limit, a refused lift). A rule or lift stated in a
    failed span is recorded at the next whole pass under its original u<n>; a lift repeated for a rule
    already lifted changes nothing; after every compaction the rules in force are the user's words, lifted
    rules are absent from the summary, and the summary beyond its logs and rules stays the same."""
    pi = start_pi()
    good = answer(
        [
            Lab(DEPS, "rule"),
            Lab(TABS, "rule"),
            Lab(FORCE, "rule"),
            Lab(TABS_LIFT, lifts(TABS)),
            Lab(COMMITS_72, "rule"),
            Lab(STAGING, "rule"),
            Lab(STAGING_LIFT, lifts(STAGING)),
            Lab(TABS_AGAIN, "lifts R2"),  # R2 is already lifted: dropped silently (LABEL-8, FAIL-18)
            Lab("Every dry-run line", "rule", words=DRY_WORDS),
            Lab(ENGLISH, "rule"),
        ],
        values=[Val("dev server port", "5173", PORT_A)],
    )
    permission_lift = answer([Lab(PERMISSION, lifts(DEPS))])
    truncated = raw('{"labels": [{"msg": "u1", "label": "not a')
    rounds: list[tuple[list[str], list[Callable[[DiffCall], Reply]], Callable[[DiffCall], Reply], str]] = [
        # (prompts, responders for the calls in order, responder for later calls, how the span closes)
        ([DEPS, TABS], [], good, "whole"),
        ([FORCE, TABS_LIFT], [], status(500, retry_after_ms=1), "narrative-less"),
        ([COMMITS_72], [], good, "whole"),
        ([STAGING], [truncated], good, "whole"),
        ([STAGING_LIFT], [], answer(default=None), "partial"),
        ([TABS_AGAIN], [], good, "whole"),
        ([DRY_MESSAGE], [status(429, retry_after_ms=20)], good, "whole"),
        ([ENGLISH, PORT_A], [cut_at_limit("")], good, "whole"),
        ([PERMISSION], [permission_lift, permission_lift], good, "whole"),
        (["Please run the build again."], [], good, "whole"),
    ]
    expected = Expected()
    first_seen: dict[str, dict[str, Any]] = {}
    sizes: list[int] = []
    found: list[LonghaulCompaction] = []
    for n, (prompts, steps, then, closes) in enumerate(rounds, start=1):
        for prompt in prompts:
            if prompt == PORT_A:
                model_server.enqueue(*bash("echo 'Local:   http://localhost:5173/'"))
            pi.prompt(prompt)
        wrap_up(pi, f"failing chain {n}")
        script = DiffScript(steps=steps, then=then).install(model_server)
        response = pi.compact()
        assert response.get("success") is True, f"compact #{n} failed: {response}\n{pi.diagnostics()}"
        comp = expect_longhaul(pi.session_file(), n, span=n)
        data = comp.span_record["data"]
        assert data["closedAs"] == closes, f"compaction {n}: {data}"
        assert script.unstructured() == [], f"compaction {n}: a Diff call without the answer schema"
        ids = user_ids(comp)
        if n == 1:
            expected.rules.update(R1=(DEPS, DEPS), R2=(TABS, TABS))
        elif n == 2:
            carried = set(comp.state["carried"])
            assert {message_id(ids, FORCE), message_id(ids, TABS_LIFT)} <= carried, carried
        elif n == 3:
            offered = [m for m in script.calls[0].offered if m.carried]
            assert {message_id(ids, FORCE), message_id(ids, TABS_LIFT)} <= {m.id for m in offered}
            assert comp.state["carried"] == []
            expected.rules.update(R3=(FORCE, FORCE), R4=(COMMITS_72, COMMITS_72))
            expected.lifted["R2"] = TABS_LIFT
        elif n == 4:
            assert [c.kind for c in script.calls] == ["first", "retry"]
            expected.rules["R5"] = (STAGING, STAGING)
        elif n == 5:
            # FAIL-1, ours: the retry of an answer missing only labels is the label call; FAIL-4, ours: the
            # message still unlabeled is held and carried, and the span closes partial. Code reads it as
            # withdrawing R5 and asks; the reply names no lift, so nothing is lifted yet.
            assert script.kinds() == ["first", "label", "question"]
            assert message_id(ids, STAGING_LIFT) in comp.state["carried"]
        elif n == 6:
            assert [c.kind for c in script.calls] == ["first"], script.calls[-1].last_user
            expected.lifted["R5"] = STAGING_LIFT
        elif n == 7:
            assert len(script.calls) == 2 and [c.kind for c in script.calls] == ["first", "first"]
            expected.rules["R6"] = (DRY_WORDS, "Every dry-run line")
        elif n == 8:  # FAIL-7: an empty reply cut at the cap is asked again at the raised budget (issue 11)
            assert [c.kind for c in script.calls] == ["first", "first"]
            sized = script.calls[0].max_tokens
            assert sized is not None and sized < 4096 and script.calls[1].max_tokens == 4096
            expected.rules["R7"] = (ENGLISH, ENGLISH)
            turn = message_id(ids, PORT_A)
            assert section(comp.summary, "Values") == f"- dev server port: 5173 (turn {turn})"
        elif n == 9:
            assert [c.kind for c in script.calls] == ["first", "retry"], (
                "LIFT-5: the refused lift is sent back"
            )
        check_rules(n, comp, first_seen, expected)
        found.append(comp)
        sizes.append(len(comp.summary))

    assert pi.extension_errors() == [], pi.diagnostics()
    print(f"\nsummary characters in the failing chain, compactions 1..10: {sizes}")
    # A narrative-less close shows its carried messages verbatim until a pass labels them (issue 11).
    unlabeled = "User messages not yet labeled"
    rest = [
        without(c.summary, "Work log", "Recent commands", "Standing rules", "Values", unlabeled)
        for c in found
    ]
    for n, r in enumerate(rest, start=1):
        assert r == rest[0], f"compaction {n}: the summary changed beyond its logs, rules and values:\n{r}"


def test_summary_size_plateaus_once_the_logs_reach_their_caps(
    daemon: Daemon, model_server: ModelServer, start_pi: Callable[[], PiRpc]
) -> None:
    """PASS-8, issue 4 (bounded summary): 34 compactions of the same work. The work log (30 lines) and the
    recent commands (20) are the only sections that grow with the number of spans, and both are capped, so
    from the 31st compaction on the summary size changes only by the digits of growing span and C ids."""
    pi = start_pi()
    script = DiffScript(then=answer([Lab(DEPS, "rule")])).install(model_server)
    pi.prompt(DEPS)
    sizes: list[int] = []
    last: LonghaulCompaction | None = None
    for n in range(1, 35):
        model_server.enqueue(*bash(f"echo round-{n}"))
        pi.prompt("Please run the build again.")
        wrap_up(pi, f"plateau {n}")
        response = pi.compact()
        assert response.get("success") is True, f"compact #{n} failed: {response}\n{pi.diagnostics()}"
        last = expect_longhaul(pi.session_file(), n, span=n)
        assert last.span_record["data"]["closedAs"] == "whole"
        sizes.append(len(last.summary))
    assert last is not None and script.calls
    print(f"\nsummary characters over 34 compactions: {sizes}")
    assert list(standing_rules(last.state)) == ["R1"]
    assert len(section(last.summary, "Work log").splitlines()) == 31  # 30 lines and the "left out" note
    assert len(section(last.summary, "Recent commands").splitlines()) == 21
    plateau = sizes[30:]
    assert max(plateau) - min(plateau) <= 8, f"sizes after compaction 31: {plateau}"
    assert max(sizes) == max(plateau), sizes


# ---- restarts in the middle of a chain ---------------------------------------------------------------------


def test_rules_survive_pi_and_daemon_restarts_mid_chain(
    sandbox: Sandbox, daemon: Daemon, model_server: ModelServer
) -> None:
    """FOLD, LABEL-14, LIFT-9: the state lives in the transcript, not in the daemon or pi. Six compactions
    with pi restarted (``-c``) and the daemon restarted between them: rule ids, words and lifts carry over
    and a lifted rule never comes back."""
    labels = [
        Lab(DEPS, "rule"),
        Lab(TABS, "rule"),
        Lab(TABS_LIFT, lifts(TABS)),
        Lab(COMMITS_72, "rule"),
        Lab(FORCE, "rule"),
    ]
    DiffScript(then=answer(labels)).install(model_server)
    plan = [[DEPS, TABS], [TABS_LIFT], [COMMITS_72], ["Please run the build again."], [FORCE], ["Done."]]
    expected = Expected()
    first_seen: dict[str, dict[str, Any]] = {}
    pi = PiRpc(sandbox)
    try:
        for n, prompts in enumerate(plan, start=1):
            if n in (3, 5):  # pi restarts and continues the same session; the daemon restarts too
                pi.close()
                daemon.stop()
                daemon.start(sandbox.daemon_env())
                pi = PiRpc(sandbox, extra_args=("-c",))
            for prompt in prompts:
                pi.prompt(prompt)
            wrap_up(pi, f"restart chain {n}")
            response = pi.compact()
            assert response.get("success") is True, f"compact #{n} failed: {response}\n{pi.diagnostics()}"
            comp = expect_longhaul(pi.session_file(), n, span=n)
            assert comp.span_record["data"]["closedAs"] == "whole", comp.span_record["data"]
            if n == 1:
                expected.rules.update(R1=(DEPS, DEPS), R2=(TABS, TABS))
            elif n == 2:
                expected.lifted["R2"] = TABS_LIFT
            elif n == 3:
                expected.rules["R3"] = (COMMITS_72, COMMITS_72)
            elif n == 5:
                expected.rules["R4"] = (FORCE, FORCE)
            check_rules(n, comp, first_seen, expected)
        assert pi.extension_errors() == [], pi.diagnostics()
    finally:
        pi.close()
