"""The worked examples (EX-*) through the real Diff stage, Close and the rendered summary.

Each example's span becomes real :class:`DiffInputs`, and :func:`run_diff` runs over it with a scripted model
that gives the example's canned replies (first answer, retry, question reply) and records every call; then
:func:`close_span` applies the verified events and :func:`render_summary` renders the State, as the pass does.
What the model got wrong is seen where the stage shows it to the model: the problem lines of the retry call's
note and the questions of the question call. A call the example does not expect fails the test.

The other examples are tested where their code runs: EX-4, EX-11 and EX-5's takeover reading take over from
pi's own compaction in ``tests/passes/test_run_takeover.py`` (EX-15 too, with ``tests/state/test_fold.py``);
EX-13 in ``tests/diff/test_stage.py``, ``tests/diff/test_stage_retries.py`` and
``tests/e2e/test_e2e_diff_failures.py``; EX-14 in ``tests/diff/test_prompt.py``,
``tests/e2e/test_e2e_diff_failures.py`` and ``tests/e2e/test_e2e_diff_shapes.py``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import pytest

from longhaul_daemon.models.call_errors import RetryableError
from longhaul_daemon.passes.answers.questions import QUESTION_FOOTER, QUESTION_HEADER
from longhaul_daemon.passes.answers.quotes import GOAL_TAGS
from longhaul_daemon.passes.close import close_span, user_texts
from longhaul_daemon.passes.diff.diff_stage import DiffResult, run_diff
from longhaul_daemon.passes.ledger import LedgerResult
from longhaul_daemon.state.model import Rule, State, World
from longhaul_daemon.state.render import render_summary
from longhaul_daemon.transcript.messages import SpanMessage

from . import chunk_cases
from .scripted_model import Call, Reply, ScriptedModel, answer, inputs, user

pytestmark = pytest.mark.anyio

PASS_ID = "p"
NO_LEDGER = LedgerResult(commands=[], errors=[], new_commands=[], new_errors=[], next_command=1, next_error=1)
RETRY_HEADER = "Your previous answer had these problems. Send the whole JSON answer again with them fixed:"


@dataclass(frozen=True)
class Example:
    """One example closed: what the Diff decided, the calls it made, the State after Close and its summary."""

    result: DiffResult
    calls: list[Call]
    state: State
    summary: str

    @property
    def kinds(self) -> list[str]:
        return [c.kind for c in self.calls]

    def problems(self) -> list[str]:
        """The problem lines of the retry call's note: the first answer's defects as the model read them.
        The words call (FAIL-1, ours) shows them under its messages, after "What was wrong:"."""
        call = next(c for c in self.calls if c.kind in ("retry", "words-retry"))
        if call.kind == "words-retry":
            noted = call.last_user.split("What was wrong:\n", 1)[1].split("\n\n", 1)[0]
            return [line.removeprefix("- ") for line in noted.split("\n")]
        head, *lines = call.last_user.split("\n")
        assert head == RETRY_HEADER
        return [line.removeprefix("- ") for line in lines]

    def asked(self) -> list[str]:
        """The questions of the question call, as the model read them (LIFT-12)."""
        text = next(c for c in self.calls if c.kind == "question").last_user
        block = text[text.index(QUESTION_HEADER) + len(QUESTION_HEADER) : text.index(QUESTION_FOOTER)]
        return [line.removeprefix("- ") for line in block.strip().split("\n")]


async def close_example(state: State, span: Sequence[SpanMessage], *replies: Reply) -> Example:
    """Run the Diff over ``span`` with these replies in turn, then Close and render as the pass does."""
    model = ScriptedModel(*replies)
    result = await run_diff(inputs(list(span), state), model)
    assert model.replies == [], "the example gave a reply the stage never asked for"
    after = close_span(
        state,
        ledger=NO_LEDGER,
        world=World(status="no-repository"),
        user_ids=[m.user_id for m in span if m.role == "user" and m.user_id is not None],
        read_files=(),
        modified_files=(),
        closed_as=result.closed_as,
        reason=result.reason,
        pass_id=PASS_ID,
        narrative=result.narrative,
        events=result.chunks,
        texts=user_texts(span, ()),
        held=result.held,
    )
    return Example(result, model.calls, after, render_summary(after, pass_id=PASS_ID))


def _words(**words: str) -> str:
    """A reply to the words call: the rule's words for each message asked about."""
    return json.dumps({"words": words})


def _labels(labels: dict[str, str]) -> str:
    """A reply to the question call: only labels (LIFT-14)."""
    return json.dumps({"labels": [{"msg": m, "label": label} for m, label in labels.items()]})


def _sized(core: str, length: int, filler: str = "Some notes on the project layout and its tests. ") -> str:
    """``core`` at the end of a message of exactly ``length`` characters."""
    text = core
    while len(text) < length:
        text = filler + text
    return text[len(text) - length :]


def _rules(state: State) -> list[tuple[str, str, str, bool]]:
    return [(r.id, r.words, r.message, r.lifted) for r in state.rules]


def _with_rules(*rules: Rule) -> State:
    """The State of an earlier whole span holding ``rules``."""
    numbers = [int(r.id[1:]) for r in rules]
    return State(
        span=1,
        seq=max((r.seq for r in rules), default=0),
        nextRule=max(numbers, default=0) + 1,
        rules=list(rules),
    )


async def test_ex_1_misquoted_short_rule_recorded_whole_without_retry() -> None:
    """EX-1, QUOTE-1, QUOTE-2, QUOTE-8: the words are rejected without a retry; R1 is u4 whole."""
    text = "Please never add new dependencies without asking me first."
    assert len(text) == 58
    out = await close_example(State(), [user("u4", text)], answer({"u4": ("rule", "never add dependencies")}))
    assert out.kinds == ["first"]
    assert (out.result.closed_as, out.result.dropped) == ("whole", {"rejected-quotes": 1})
    assert _rules(out.state) == [("R1", text, "u4", False)]
    assert "never add dependencies" not in out.state.model_dump_json()
    assert f'- R1 "{text}" (u4)' in out.summary


SENTENCE = "From now on run ruff before every commit."


def _ex_2_span() -> list[SpanMessage]:
    span = [
        user("u3", _sized(SENTENCE, 640)),
        user("u7", _sized(SENTENCE + " Thanks.", 650)),
        user("u9", _sized("Now look at the failing import in the parser module.", 620)),
    ]
    assert [len(m.text) for m in span] == [640, 650, 620]
    return span


def _words_answer(words: str) -> str:
    return answer({"u3": "not a rule", "u7": "not a rule", "u9": ("rule", words)})


async def test_ex_2_quote_under_wrong_message_binds_to_newest_holder() -> None:
    """EX-2, QUOTE-7: the rule goes to u7; u9 is judged and keeps no rule; no retry is spent."""
    out = await close_example(State(), _ex_2_span(), _words_answer("run ruff before every commit"))
    assert out.kinds == ["first"]
    assert out.result.closed_as == "whole" and out.result.chunks[0].judged == {"u3", "u7", "u9"}
    assert _rules(out.state) == [("R1", "run ruff before every commit", "u7", False)]
    assert '- R1 "run ruff before every commit" (u7)' in out.summary


async def test_ex_2_words_no_message_holds_go_back_for_a_long_message() -> None:
    """EX-2, QUOTE-4: u9 is over 600 characters, so unverifiable words go back in the retry note; a retry that
    insists spends the one retry. Ours (QUOTE-4's open choice): the rule is not dropped but u9 is held back,
    the span closes partial and carries u9 with its words, so the next pass is asked about it again."""
    wrong = _words_answer("run ruff before each commit")
    out = await close_example(State(), _ex_2_span(), wrong, _words(u9="run ruff before each commit"))
    assert out.kinds == ["first", "words-retry"]
    assert out.problems() == [
        "u9: no user message holds the given words; copy the rule's words exactly from u9"
    ]
    # the rejected quote is counted too (QUOTE-17), as in EX-1
    assert out.result.dropped == {"rejected-quotes": 1, "rules-held-unquoted": 1}
    assert (out.result.closed_as, out.result.held) == ("partial", ("u9",))
    assert out.state.carried == ["u9"] and "The user's own words, verbatim" in out.summary
    # The user's own standing sentence is kept at once too: code's reading keeps it once (u3, the first
    # holder), marked in doubt since the model called u3 and u7 one-offs (diff/doubts.py).
    assert [(r.words, r.message, r.doubt) for r in out.state.rules] == [
        ("From now on run ruff before every commit.", "u3", "model-read-one-off")
    ]


R2_PUSH = Rule(id="R2", words="Never push to main.", message="u3", seq=2, span=1)
U15 = "you may push to main now"
EX_3_PROBLEM = (
    "u15: the lift of R2 (Never push to main.) was refused: the message's own words neither withdraw that "
    "rule nor name it. Keep `lifts R2` only if the user withdrew it"
)


async def test_ex_3_permission_lift_is_refused_then_dropped_and_r2_stays() -> None:
    """EX-3, LIFT-1, LIFT-5, LIFT-6, LABEL-13: the retry note shows R2's words; a lift insisted on is
    dropped and counted."""
    lift = answer({"u15": "lifts R2"})
    out = await close_example(_with_rules(R2_PUSH), [user("u15", U15)], lift, lift)
    assert out.kinds == ["first", "retry"]
    assert out.problems() == [EX_3_PROBLEM]
    assert (out.result.closed_as, out.result.dropped) == ("whole", {"lifts": 1})
    assert _rules(out.state) == [("R2", "Never push to main.", "u3", False)]
    assert '- R2 "Never push to main." (u3; may be withdrawn, see below)' in out.summary  # the permission


async def test_ex_3_retry_saying_not_a_rule_is_accepted() -> None:
    """EX-3: `not a rule` in the retry stands; nothing is dropped and R2 stays under Standing rules."""
    first, retry = answer({"u15": "lifts R2"}), answer({"u15": "not a rule"})
    out = await close_example(_with_rules(R2_PUSH), [user("u15", U15)], first, retry)
    assert out.kinds == ["first", "retry"]
    assert (out.result.closed_as, out.result.dropped) == ("whole", {})
    assert _rules(out.state) == [("R2", "Never push to main.", "u3", False)]
    assert '- R2 "Never push to main." (u3; may be withdrawn, see below)' in out.summary  # the permission


U6 = "Add a changelog entry for every user-facing change. Don't forget it."
U8 = "Forget it, leave the changelog alone."


async def test_ex_5_rule_parts_forget_it_lifts_nothing() -> None:
    """EX-5, LIFT-2, LIFT-5, with u6 labeled in the span (the takeover reading is in test_run_takeover.py):
    u6 is recorded whole; u8's lift is refused, asked again, and dropped when the retry insists."""
    assert len(U6) == 68
    lift = answer({"u6": "rule", "u8": "lifts u6"})
    out = await close_example(State(), [user("u6", U6), user("u8", U8)], lift, lift)
    assert out.kinds == ["first", "retry"]
    assert out.problems() == [
        f"u8: the lift of u6 ({U6}) was refused: the message's own words neither withdraw that rule nor name "
        "it. Keep `lifts u6` only if the user withdrew it"
    ]
    assert (out.result.closed_as, out.result.dropped) == ("whole", {"lifts": 1})
    assert _rules(out.state) == [("R1", U6, "u6", False)]


async def test_ex_5_retry_saying_not_a_rule_is_accepted() -> None:
    """EX-5: `not a rule` for u8 in the retry is accepted; R1 stays."""
    first, retry = answer({"u6": "rule", "u8": "lifts u6"}), answer({"u6": "rule", "u8": "not a rule"})
    out = await close_example(State(), [user("u6", U6), user("u8", U8)], first, retry)
    assert out.kinds == ["first", "retry"]
    assert (out.result.closed_as, out.result.dropped) == ("whole", {})
    assert _rules(out.state) == [("R1", U6, "u6", False)]


DRY = "Every dry-run line must start with DRY: so I can grep for it later."


def _u12() -> SpanMessage:
    text = _sized(DRY + " The flag is --dry-run and it prints the plan only.", 700)
    assert len(text) == 700 and DRY in text
    return user("u12", text)


async def test_ex_6_long_message_without_words_goes_back_and_exact_words_record() -> None:
    """EX-6, QUOTE-4, FAIL-1: the retry note asks for u12's exact words; the retry's exact words are R1."""
    retry = _words(u12="Every dry-run line must start with DRY:")
    out = await close_example(State(), [_u12()], answer({"u12": "rule"}), retry)
    assert out.kinds == ["first", "words-retry"]
    assert out.problems() == ["u12 has 700 characters (over 600); give the rule's exact words in `words`"]
    assert _rules(out.state) == [("R1", "Every dry-run line must start with DRY:", "u12", False)]
    assert '- R1 "Every dry-run line must start with DRY:" (u12)' in out.summary


@pytest.mark.parametrize(
    "words", ["very dry-run line must start with DRY:", "every dry-run line must start with DRY:"]
)
async def test_ex_6_cut_or_miscased_words_in_the_retry_are_refused_and_code_reads_the_rule(
    words: str,
) -> None:
    """EX-6, QUOTE-5, QUOTE-6: the one retry is spent and the words that do not verify are refused. Ours
    (QUOTE-4's open choice): the rule is not dropped; code's own standing-rule reading picks its words in
    u12 (the user's own, verbatim, at most 600 characters), so the span closes whole. A weak model seldom
    copies a sentence exactly, and holding such a message back left every pass of a span partial."""
    out = await close_example(State(), [_u12()], answer({"u12": "rule"}), _words(u12=words))
    assert out.kinds == ["first", "words-retry"]
    assert (out.result.closed_as, out.result.dropped) == ("whole", {"rejected-quotes": 1})
    read = DRY + " The flag is --dry-run and it prints the plan only."
    assert _rules(out.state) == [("R1", read, "u12", False)] and out.state.carried == []
    assert f'- R1 "{read}" (u12)' in out.summary


async def test_ex_6_a_long_message_code_reads_no_rule_in_is_held_back() -> None:
    """Ours (QUOTE-4's open choice): when code's readings pick nothing either, u12 is not judged but held
    back, so the span closes partial and u12 is carried, with its words, to be labeled again."""
    text = _sized("The exporter writes one CSV file per account, sorted by date.", 700)
    out = await close_example(
        State(), [user("u12", text)], answer({"u12": "rule"}), _words(u12="the exporter")
    )
    assert (out.result.closed_as, out.result.dropped) == (
        "partial",
        {"rejected-quotes": 1, "rules-held-unquoted": 1},
    )
    assert out.result.chunks[0].judged == frozenset() and out.state.rules == []
    assert out.state.carried == ["u12"] and "sorted by date" in out.summary


def _tool_turn(uid: str, ask: str, command: str, output: str) -> list[SpanMessage]:
    """A turn: the user's ask, a bash call, its output and a closing reply."""
    call = f"call-{uid}"
    return [
        user(uid, ask),
        chunk_cases.assistant(f"e-a-{uid}", "On it.", (call, {"command": command})),
        chunk_cases.result(f"e-r-{uid}", call, output),
        chunk_cases.assistant(f"e-b-{uid}", "Done."),
    ]


async def test_ex_7_values_kept_only_where_their_turn_shows_them() -> None:
    """EX-7, VALUE-2, VALUE-4, VALUE-5: "41.2s" is not in u9 and "212" not in u11; no retry; two dropped."""
    span = [
        *_tool_turn("u9", "run the tests", "python -m unittest", "Ran 212 tests in 41.20s\n\nOK"),
        *_tool_turn("u11", "start the dev server", "npm run dev", "Local:   http://localhost:5173/"),
    ]
    values = [
        {"name": "test time", "value": "41.2s", "turn": "u9"},
        {"name": "dev server port", "value": "5173", "turn": "u11"},
        {"name": "test count", "value": "212", "turn": "u11"},
    ]
    out = await close_example(State(), span, answer({"u9": "not a rule", "u11": "not a rule"}, values=values))
    assert out.kinds == ["first"]
    assert (out.result.closed_as, out.result.dropped) == ("whole", {"values": 2})
    assert [(v.what, v.value, v.turn) for v in out.state.values] == [("dev server port", "5173", "u11")]
    assert "- dev server port: 5173 (turn u11)" in out.summary


R1_PUSH = Rule(id="R1", words="Never push to main.", message="u2", seq=1, span=1)
U20 = "Instead of never pushing to main, you may push hotfix branches to main from now on."
EX_8_ANSWER = answer({"u20": "rule and lifts R1", "u23": "lifts R1"})


async def test_ex_8_lift_of_a_replaced_rule_becomes_a_question_and_lifts_the_narrowing() -> None:
    """EX-8, LIFT-3, LIFT-7, LIFT-8, FAIL-5, LABEL-15, LABEL-16: the question shows the narrowing as u20; the
    reply `lifts u20` passes; after Close R1 is replaced by R2 (u20), R2 is lifted by u23 and no push rule
    stands."""
    u23 = "The hotfix push rule no longer applies."
    span = [user("u20", U20), user("u23", u23)]
    out = await close_example(_with_rules(R1_PUSH), span, EX_8_ANSWER, _labels({"u23": "lifts u20"}))
    assert out.kinds == ["first", "question"]
    assert out.asked() == [
        f"u23 is labeled `lifts R1`, but R1 was already replaced by the rule u20 ({U20}): "
        "if u23 withdraws that rule too, answer `lifts u20`; otherwise answer `lifts R1`"
    ]
    r1, r2 = out.state.rules
    assert (r1.lifted, r1.liftedBy, r1.replacedBy) == (True, "u20", "R2")
    assert (r2.id, r2.message, r2.words, r2.lifted, r2.liftedBy) == ("R2", "u20", U20, True, "u23")
    assert "## Standing rules" not in out.summary


async def test_ex_8_lift_naming_only_the_replaced_rule_words_leaves_the_narrowing() -> None:
    """EX-8 variant, LIFT-8: "main" and "push" come from R1, so the lift of u20 is refused and R2 stays."""
    span = [user("u20", U20), user("u23", "The main push rule no longer applies.")]
    out = await close_example(_with_rules(R1_PUSH), span, EX_8_ANSWER, _labels({"u23": "lifts u20"}))
    assert out.kinds == ["first", "question"]
    assert [(r.id, r.lifted) for r in out.state.rules] == [("R1", True), ("R2", False)]
    assert f'- R2 "{U20}" (u20; may be withdrawn, see below)' in out.summary
    assert "Never push to main." not in out.summary


R3_TABS = Rule(id="R3", words="Always indent with tabs.", message="u4", seq=3, span=1)


async def test_ex_9_pasted_withdrawal_raises_no_question() -> None:
    """EX-9, QUOTE-12, QUOTE-14, LIFT-10, LIFT-11: the 11-word quote is left out of the judged text, so no
    question is asked; u18 is recorded whole and R3 stays."""
    text = (
        'My colleague wrote: "the tabs rule no longer applies to any of our repositories" so what do you '
        "think? Use tabs in the new files from now on."
    )
    assert len(text) == 141
    out = await close_example(_with_rules(R3_TABS), [user("u18", text)], answer({"u18": "rule"}))
    assert out.kinds == ["first"]
    assert _rules(out.state) == [("R3", R3_TABS.words, "u4", False), ("R4", text, "u18", False)]


async def test_ex_9_short_quote_counts_and_raises_the_lift_12_question() -> None:
    """EX-9 variant, LIFT-12: a five-word quote stays in the judged text, so the question follows once the
    answer settled; the reply `rule` changes nothing."""
    text = (
        'My colleague wrote: "tabs rule no longer applies" so what do you think? Use tabs in the new files.'
    )
    out = await close_example(
        _with_rules(R3_TABS), [user("u18", text)], answer({"u18": "rule"}), _labels({"u18": "rule"})
    )
    assert out.kinds == ["first", "question"]
    assert out.asked() == [
        "u18 is labeled `rule` and may replace the rule u4 gave (Always indent with tabs.): "
        "answer `rule and lifts u4` or `rule`"
    ]
    assert _rules(out.state) == [("R3", R3_TABS.words, "u4", False), ("R4", text, "u18", False)]


R2_TABS = Rule(id="R2", words="Indent with tabs.", message="u2", seq=2, span=1)
U17 = "Switch to two-space indentation instead of tabs from now on."
EX_10_QUESTION = (
    "u17 is labeled `rule` and may replace the rule u2 gave (Indent with tabs.): "
    "answer `rule and lifts u2` or `rule`"
)


async def test_ex_10_the_offered_reply_lifts_r2_and_records_u17() -> None:
    """EX-10, LIFT-10, LIFT-14, LIFT-16: the reply `rule and lifts u2` lifts R2 and records u17 whole."""
    reply = _labels({"u17": "rule and lifts u2"})
    out = await close_example(_with_rules(R2_TABS), [user("u17", U17)], answer({"u17": "rule"}), reply)
    assert out.kinds == ["first", "question"]
    assert out.asked() == [EX_10_QUESTION]
    r2, r3 = out.state.rules
    assert (r2.lifted, r2.liftedBy, r2.replacedBy) == (True, "u17", "R3")
    assert (r3.id, r3.words, r3.message, r3.lifted) == ("R3", U17, "u17", False)
    assert r2.liftSeq is not None and r3.seq < r2.liftSeq  # a rule before its own lifts (PASS-5)
    assert "Indent with tabs." not in out.summary and f'- R3 "{U17}" (u17)' in out.summary


@pytest.mark.parametrize(
    "reply",
    [
        _labels({"u17": "lifts u2"}),  # not the offered form
        _labels({"u17": "rule and lifts u9"}),  # not an asked target
        "I think u17 should lift u2.",  # not JSON
        _labels({"u17": "rule", "u5": "lifts u2"}),  # read on the asked message only
    ],
)
async def test_ex_10_other_replies_change_nothing(reply: str) -> None:
    """EX-10, LIFT-15: another form, another target, no JSON, or a reply heard only on the asked message."""
    out = await close_example(_with_rules(R2_TABS), [user("u17", U17)], answer({"u17": "rule"}), reply)
    assert out.kinds == ["first", "question"]
    assert [(r.id, r.lifted) for r in out.state.rules] == [("R2", False), ("R3", False)]


async def test_ex_10_no_question_after_a_call_that_threw() -> None:
    """EX-10, LIFT-17: the first answer goes back for an over-long narrative and the retry call throws; the
    kept answer stands and no question is asked."""
    flawed = answer({"u17": "rule"}, narrative="n" * 300)
    out = await close_example(_with_rules(R2_TABS), [user("u17", U17)], flawed, RetryableError(status=500))
    assert out.kinds == ["first", "retry"]
    assert [(r.id, r.lifted) for r in out.state.rules] == [("R2", False), ("R3", False)]


OBJECTIVE = "Ship the CSV export with tests; never touch the public API."
TEMPLATE = (
    "You are working towards a goal. Work autonomously until the objective is met, and report progress "
    "after each step. " * 4
)


@pytest.mark.parametrize(
    "words", ["Work autonomously until the objective is met", "never touch the public API"]
)
async def test_ex_12_goal_message_records_the_objective_whole(words: str) -> None:
    """EX-12, QUOTE-10, QUOTE-2: template words are rejected without a retry, objective words verify, and
    either way the objective is recorded whole; no template text is stored."""
    text = f"{TEMPLATE}\n{GOAL_TAGS[0]}\n{OBJECTIVE}\n{GOAL_TAGS[1]}\n{TEMPLATE}"
    assert len(text) > 800 and len(OBJECTIVE) == 59
    out = await close_example(State(), [user("u1", text)], answer({"u1": ("rule", words)}))
    assert out.kinds == ["first"]
    assert _rules(out.state) == [("R1", OBJECTIVE, "u1", False)]
    assert "autonomously" not in out.state.model_dump_json()
    assert f'- R1 "{OBJECTIVE}" (u1)' in out.summary


async def test_fail_1_the_words_retry_shows_only_the_messages_whose_words_failed() -> None:
    """FAIL-1, QUOTE-4, ours: when a rule's words are the answer's only defect, the one retry is a short
    call: u12 whole and what was wrong, no state and no conversation, keyed by message; the words it gives
    verify against u12 as an answer's would, and the first answer's other parts stand."""
    other = user("u13", "Thanks, carry on with the exporter.")
    first = answer({"u12": "rule", "u13": "not a rule"}, narrative="Exporter work.", now="Adding --dry-run.")
    out = await close_example(State(), [_u12(), other], first, _words(u12=DRY))
    words_call = out.calls[1]
    assert words_call.kind == "words-retry" and "exact words" in words_call.system
    assert _u12().text in words_call.last_user and "carry on with the exporter" not in words_call.last_user
    assert "BEGIN DATA state" not in words_call.last_user and "conversation" not in words_call.last_user
    assert words_call.schema is not None and words_call.schema.schema["required"] == ["words"]
    assert words_call.schema.schema["properties"]["words"]["required"] == ["u12"]
    assert _rules(out.state) == [("R1", DRY, "u12", False)]
    assert (out.result.closed_as, out.result.narrative) == ("whole", "Exporter work.")


async def test_fail_1_a_rule_s_words_beside_another_defect_still_get_the_whole_retry() -> None:
    """Only an answer whose every defect is a rule's words gets the words call; any other defect sends the
    whole answer back with its note, as FAIL-1 says."""
    other = user("u13", "Thanks, carry on with the exporter.")
    retry = answer({"u12": ("rule", DRY), "u13": "not a rule"})
    out = await close_example(State(), [_u12(), other], answer({"u12": "rule"}), retry)  # u13 unlabeled
    assert out.kinds == ["first", "retry"]
    assert _rules(out.state) == [("R1", DRY, "u12", False)]
