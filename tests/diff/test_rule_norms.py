"""Code's second look keeps a standing norm written with no rule word (norm_reading.py), and nothing else.

Issue 23 item 2, ours: a rule stated as a plain fact or a bare order ("No magic numbers.", "Tests go under
tests/.") had no cue the wider reading knew, so a `not a rule` label lost it. These examples are not the
development sets' sentences; ``bench/rule_readings.py`` counts those.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from longhaul_daemon.passes.answers.doubts import second_look_rule
from longhaul_daemon.passes.answers.events import ChunkContext
from longhaul_daemon.passes.answers.extract import parse_answer
from longhaul_daemon.passes.answers.quotes import OfferedMessage
from longhaul_daemon.passes.answers.rule_reading import read_possible_rule, read_standing_rule
from longhaul_daemon.passes.answers.verify import evaluate


@pytest.mark.parametrize(
    "text",
    [
        "No bare excepts in the service layer.",
        "No sleeps in integration tests, ever.",
        "No secrets in shared config files.",
        "In the CLI: no colour codes in piped output.",
        "Migrations live under db/migrations/.",
        "Helper scripts go in tools/, not in the package root.",
        "Branch names are kebab-case.",
        "Changelog entries are in the past tense.",
        "Python dependencies are pinned to exact versions.",
        "Nothing under vendor/ may be edited by hand.",
        "Public functions should carry a docstring.",
        "Keep log messages lowercase.",
        "Use UTC timestamps in logs.",
        "We use spaces for indentation, not tabs.",
        "I'd like you to keep commit subjects under 50 characters.",
        "In future, run the formatter before committing.",
    ],
)
def test_ours_a_norm_with_no_rule_word_the_model_called_no_rule_is_kept_in_doubt(text: str) -> None:
    """Issue 23 item 2: a prohibition "No <noun phrase>", a norm over a kind of thing (where it goes, what
    convention it follows, what it may or should do), a lasting manner ("Keep …", "Use …" with a general
    object) and a house habit ("We use …") are kept, in the user's words, marked ``may-be-standing``."""
    assert not read_standing_rule(text).picked and read_possible_rule(text).picked
    found = second_look_rule(text)
    assert found is not None and (found.words, found.doubt) == (text, "may-be-standing")


@pytest.mark.parametrize(
    "text",
    [
        "The exporter writes one CSV per account.",
        "The --dry-run flag prints each step.",
        "The importer should skip blank rows; it crashes on them now. Fix it.",
        "No problem, thanks.",
        "No, the other branch.",
        "No worries.",
        "No luck with the new build flags.",
        "No tests ran in CI last night.",
        "No deprecation notice needed for this removal.",
        "The docs built fine last night, no warnings.",
        "Keep going with the refactor.",
        "Keep the old endpoint alive while you migrate the clients.",
        "Use the staging key until the demo on Friday.",
        "Reminder: no new packages.",
        "Again, fixtures go in conftest.py.",
        "Every endpoint still needs auth.",
        "Make sure the new parser handles empty files.",
        "Should fixtures go under tests/?",
    ],
)
def test_label_12_a_description_a_report_a_task_or_an_echo_is_no_rule_in_doubt(text: str) -> None:
    """LABEL-12: the product's behaviour ("The exporter writes …", a subject with an article) is no rule;
    nor is an interjection or report opening with "No", a "Keep"/"Use" of the work in hand, a reminder of a
    rule already in force, a thing just made ("the new parser"), or a question (TAKEOVER-7)."""
    assert second_look_rule(text) is None


def test_ours_a_norm_labeled_no_rule_is_recorded_in_doubt_by_the_pass() -> None:
    """The same decision through :func:`evaluate`: the label stands, the rule is recorded in doubt."""
    text = "Generated files go under build/, never in src/ itself, and no generated code in reviews."
    offered = [OfferedMessage("u9", "Shell scripts go in bin/.")]
    context = ChunkContext(offered=tuple(offered), rules=(), ledger_ids=frozenset())
    body = json.dumps({"labels": [{"msg": "u9", "label": "not a rule"}], "narrative": "n"})
    parsed = parse_answer(body, ["u9"], context.ledger_ids, rules=context.rules)
    [label] = evaluate(parsed, context, final=True).events.labels
    assert label.rule is not None and (label.rule.words, label.rule.doubt) == (
        "Shell scripts go in bin/.",
        "may-be-standing",
    )
    assert read_standing_rule(text).picked  # "never": the takeover's reading, not the new norms


@given(st.text(alphabet="no tests go in are pinned keep use we, .:;", max_size=400))
def test_ours_the_norm_reading_never_raises_and_always_decides(text: str) -> None:
    """Hostile text: the readings are pure and total."""
    assert read_possible_rule(text) == read_possible_rule(text)
    second_look_rule(text)
