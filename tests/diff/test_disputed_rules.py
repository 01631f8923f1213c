"""QUOTE-4, ours: a long message labeled `rule` whose words never verify is held as an unconfirmed rule; a
later answer that labels it otherwise disputes it. At Close the disputed message is kept verbatim in the
summary through whole closes until a rule is recorded from it, and a later withdrawal shows under it."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from longhaul_daemon.passes.answers.events import ChunkContext, ChunkEvents, Evaluation, LabelEvents, NewRule
from longhaul_daemon.passes.answers.extract import parse_answer
from longhaul_daemon.passes.answers.quotes import OfferedMessage
from longhaul_daemon.passes.answers.verify import evaluate
from longhaul_daemon.passes.close import close_span
from longhaul_daemon.passes.ledger import LedgerResult
from longhaul_daemon.state.model import ClosedAs, State, World
from longhaul_daemon.state.render import KEPT_TITLE, render_summary

# Over 600 characters, and a rule code's own readings do not pick (so only exact words would record it).
TICKET = (
    "Some background on the billing ticket before you start. The invoices page has been slow since the "
    "March migration, and support keeps forwarding complaints from the larger accounts. The query behind it "
    "joins four tables and the ORM builds it lazily, which is why the page issues hundreds of statements. "
    "Finance spotted the mismatch in the PDF exports last month. Amounts: integer cents, database to "
    "template. The dashboards team reads from the same view as well. I have attached the slow query log from "
    "yesterday afternoon and a sample export for one of the affected accounts; both are in the ticket, along "
    "with the list of accounts that complained first and the times they wrote in."
)
RULE_WORDS = "Amounts: integer cents, database to template."
OFFERED = (OfferedMessage("u3", TICKET), OfferedMessage("u4", "Run the tests."))


def _evaluate(ticket_label: dict[str, str], *, unconfirmed: bool, final: bool = True) -> Evaluation:
    ctx = ChunkContext(
        offered=OFFERED,
        rules=(),
        ledger_ids=frozenset({"C1"}),
        unconfirmed_rules=frozenset({"u3"}) if unconfirmed else frozenset(),
    )
    labels = [{"msg": "u3", **ticket_label}, {"msg": "u4", "label": "not a rule"}]
    reply = json.dumps({"labels": labels, "narrative": "n", "now": "w"})
    return evaluate(parse_answer(reply, ["u3", "u4"], ctx.ledger_ids, rules=()), ctx, final=final)


def test_quote4_ours_a_long_rule_with_words_that_never_verify_is_held_as_unconfirmed() -> None:
    out = _evaluate({"label": "rule", "words": "amounts are always kept in cents"}, unconfirmed=False)
    assert out.events.unconfirmed == {"u3"} and out.events.disputed == frozenset()
    assert out.unlabeled == ("u3",) and "u3" not in out.events.judged
    assert all(label.rule is None for label in out.events.labels)


def test_quote4_ours_an_unconfirmed_rule_labeled_otherwise_later_is_disputed_and_judged() -> None:
    """The earlier pass's `rule` and this answer's `not a rule` disagree: the message is judged (the span
    may close whole, it is not offered again) and reported disputed, so Close keeps its words."""
    out = _evaluate({"label": "not a rule"}, unconfirmed=True)
    assert out.events.disputed == {"u3"} and out.events.unconfirmed == frozenset()
    assert "u3" in out.events.judged and out.unlabeled == ()


def test_quote4_ours_a_message_never_held_as_a_rule_is_not_disputed() -> None:
    out = _evaluate({"label": "not a rule"}, unconfirmed=False)
    assert out.events.disputed == frozenset() and "u3" in out.events.judged


def test_quote4_ours_an_unconfirmed_rule_labeled_rule_again_stays_unconfirmed_or_is_recorded() -> None:
    """Labeled `rule` again with words that still fail, it stays held; with its exact words, the rule is
    recorded and nothing is disputed."""
    again = _evaluate({"label": "rule", "words": "cents please"}, unconfirmed=True)
    assert again.events.unconfirmed == {"u3"} and again.events.disputed == frozenset()
    exact = _evaluate({"label": "rule", "words": RULE_WORDS}, unconfirmed=True)
    assert [label.rule.words for label in exact.events.labels if label.rule] == [RULE_WORDS]
    assert exact.events.disputed == frozenset() and exact.events.unconfirmed == frozenset()


_WORLD = World(status="repository", branch="main", dirtyCount=0)


def _close(
    state: State,
    user_ids: Sequence[str],
    texts: Mapping[str, str],
    *,
    events: Sequence[ChunkEvents],
    closed_as: ClosedAs = "whole",
    held: Sequence[str] = (),
) -> State:
    ledger = LedgerResult(
        commands=list(state.commands),
        errors=list(state.errors),
        new_commands=[],
        new_errors=[],
        next_command=state.nextCommand,
        next_error=state.nextError,
    )
    return close_span(
        state,
        ledger=ledger,
        world=_WORLD,
        user_ids=user_ids,
        read_files=[],
        modified_files=[],
        closed_as=closed_as,
        reason="unlabeled-messages" if closed_as == "partial" else None,
        pass_id=f"p{state.span + 1}",
        narrative="Worked on the billing page.",
        events=events,
        texts=texts,
        held=held,
    )


def _held() -> State:
    """Pass 1: u3 (the ticket) labeled `rule`, its words never verified; held back, the close partial."""
    return _close(
        State(),
        ["u3", "u4"],
        {"u3": TICKET, "u4": "Run the tests."},
        events=[ChunkEvents(judged=frozenset({"u4"}), unconfirmed=frozenset({"u3"}))],
        closed_as="partial",
        held=["u3"],
    )


def _disputed() -> State:
    """Pass 2: u3 offered again (carried) and labeled `not a rule`: disputed, the close whole."""
    return _close(
        _held(),
        ["u5"],
        {"u3": TICKET, "u5": "Now make the export stream."},
        events=[ChunkEvents(judged=frozenset({"u3", "u5"}), disputed=frozenset({"u3"}))],
    )


def test_quote4_ours_a_held_rule_is_carried_marked_unconfirmed() -> None:
    state = _held()
    assert state.carried == ["u3"]
    assert [(m.id, m.readAsRule, m.text) for m in state.carriedMessages] == [("u3", "unconfirmed", TICKET)]


def test_quote4_ours_a_disputed_rule_is_kept_verbatim_and_not_offered_again() -> None:
    state = _disputed()
    assert state.workLog[-1].closedAs == "whole" and state.carried == []  # not offered to the next pass
    assert [(m.id, m.readAsRule, m.labeled) for m in state.carriedMessages] == [("u3", "disputed", False)]
    summary = render_summary(state, pass_id="p2")
    assert f"## {KEPT_TITLE}\n" in summary and RULE_WORDS in summary
    assert "no verified answer has labeled yet" not in summary  # nothing else is waiting for a label


def test_quote4_ours_a_kept_message_stays_through_later_whole_closes_and_leaves_with_its_rule() -> None:
    later = _close(_disputed(), ["u6"], {"u6": "Add a test."}, events=[ChunkEvents(judged=frozenset({"u6"}))])
    assert [m.id for m in later.carriedMessages] == ["u3"] and RULE_WORDS in render_summary(
        later, pass_id="p"
    )
    start = TICKET.index(RULE_WORDS)
    ruled = ChunkEvents(
        labels=(LabelEvents("u3", NewRule("u3", RULE_WORDS, start, start + len(RULE_WORDS))),),
        judged=frozenset({"u7"}),
    )
    recorded = _close(later, ["u7"], {"u7": "Note the cents rule."}, events=[ruled])
    assert recorded.carriedMessages == [] and [r.words for r in recorded.rules] == [RULE_WORDS]


def test_quote4_ours_a_later_withdrawal_shows_under_the_kept_message_in_a_whole_close() -> None:
    withdrawing = "Forget the integer cents thing for amounts, floats are fine now."
    later = _close(_disputed(), ["u6"], {"u6": withdrawing}, events=[ChunkEvents(judged=frozenset({"u6"}))])
    kept = later.carriedMessages[0]
    assert (kept.id, kept.possiblyWithdrawnBy) == ("u3", "u6")
    assert "possibly withdrawn by u6" in render_summary(later, pass_id="p")
