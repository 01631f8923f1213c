"""Code's one-off reading on wordings beyond its first banks: tasks with context, a thing's wanted behaviour
beside a request for work on it, events and windows that end, permissions for one thing (LABEL-12,
issue 23's second item: a short one-off request does not become a standing rule), and the orders that must
stay rules however they are worded.

A weak model labels every message of a pass `rule` at times; whatever :func:`one_off_request` reads as a
request has no rule recorded (verify.py). The cases are this file's own, written for it; the counts on
the development set and the banks are in ``bench/request_readings.py``.
"""

from __future__ import annotations

import pytest

from longhaul_daemon.passes.answers.one_offs import bounded_to_once, one_off_request

TASKS = (
    "The Docker image is 1.4 GB. Can you slim it down?",
    "The import must be idempotent. Running it twice doubles the rows. Fix it.",
    "The modal should close when you press Escape? It doesn't.",
    "`search` must ignore case. Change the query.",
    "We need the exporter to skip blank rows.",
    "It'd be great if the retries backed off exponentially.",
    "Next up: the pagination bug on /orders.",
    "pls port deploy.sh to Python, same flags.",
    "can u track down the file handle leak in the thumbnail worker",
    "Hi! Would you mind adding a section on the integration tests to CONTRIBUTING.md? Thanks.",
)
ONE_OFFS = (
    "For the hotfix, skip the changelog.",
    "For the investor demo build, hide the beta badge.",
    "Until the demo on Friday, leave the feature flag on.",
    "While we debug this, print the raw payloads.",
    "This PR doesn't need a screenshot, it's backend only.",
    "Skip the linter on this PR, it's only a docs change.",
    "For the next few commits, skip the conventional prefix.",
    "No need to bump the version for this doc fix.",
    "The tests can hit the real API on this branch only.",
    "Skip the accessibility audit this sprint.",
)
RULES = (
    "The tests must pass before you commit. Fix the failing one.",
    "No magic numbers. Give constants a name.",
    "We use tabs, not spaces. Fix the indentation in app.py.",
    "Sort out the merge conflict. And in future, rebase onto main.",
    "Make it a habit to show me the diff before committing.",
    "Run the linter before you show me anything.",
    "Commit messages are in the imperative mood.",
    "Never merge until CI is green.",
    "Never push to main until the release is out.",
    "Don't touch the payments module while the freeze is on.",
    "Don't push until I've reviewed it.",
    "Don't bother with type hints in this project.",
    "Keep every function under 50 lines.",
    "Never deploy on Fridays.",
)
IDIOMS = ("Never mind the caching idea. Can you try precompiling the regex instead?",)


@pytest.mark.parametrize("text", TASKS)
def test_label_12_a_request_for_work_records_no_rule(text: str) -> None:
    assert one_off_request(text)


@pytest.mark.parametrize("text", ONE_OFFS)
def test_a_request_bounded_to_an_event_or_a_window_records_no_rule(text: str) -> None:
    assert one_off_request(text)


@pytest.mark.parametrize("text", RULES)
def test_an_order_beyond_the_request_stays_a_rule(text: str) -> None:
    """A standing cue, a habit, a bare prohibition, a house habit, a word to the agent, or a prohibition
    that lasts until an event: each keeps the message a rule the model's label records."""
    assert not one_off_request(text)


@pytest.mark.parametrize("text", IDIOMS)
def test_an_idiom_is_no_prohibition(text: str) -> None:
    assert one_off_request(text)


def test_an_exception_bounded_by_an_event_withdraws_nothing_beyond_it() -> None:
    """bounded_to_once: an exception said for an event or a window is for this once (verify.py lifts
    nothing with it); a prohibition until an event is no exception at all."""
    assert bounded_to_once("For the hotfix build, you may skip the minification step.")
    assert bounded_to_once("Until the demo on Friday, leave the feature flag on.")
    assert not bounded_to_once("Never push to main until the release is out.")
