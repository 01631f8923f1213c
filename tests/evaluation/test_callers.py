"""The harness tells the daemon's calls from pi's by the system prompt, for every call the daemon makes.

The label call (FAIL-1, ours) came with a system prompt of its own that the harness did not know: scripted
servers answered it as an agent turn, and the model bench waited four minutes for a daemon call it never
counted. Each of the daemon's system prompts is checked here, so a new kind of call cannot slip by again.
"""

from __future__ import annotations

import pytest

from longhaul_daemon.evaluation.harness.callers import PI_SUMMARY_OPENING, classify, is_turn
from longhaul_daemon.passes.prompting.instructions import (
    LABEL_SYSTEM_PROMPT,
    QUESTION_SYSTEM_PROMPT,
    SYSTEM_PROMPT,
)
from longhaul_daemon.passes.turns.asks import SYSTEM_PROMPT as TURNS_SYSTEM_PROMPT


def _body(system: str) -> dict[str, object]:
    return {"messages": [{"role": "system", "content": system}, {"role": "user", "content": "hi"}]}


@pytest.mark.parametrize(
    "system",
    [SYSTEM_PROMPT, LABEL_SYSTEM_PROMPT, QUESTION_SYSTEM_PROMPT, TURNS_SYSTEM_PROMPT],
    ids=["diff", "label-call", "question", "turns"],
)
def test_every_system_prompt_of_the_daemon_is_a_daemon_call(system: str) -> None:
    assert classify(_body(system)) == "other"
    assert is_turn(_body(system)) is (system == TURNS_SYSTEM_PROMPT)


def test_pi_and_the_agent_are_told_apart_from_the_daemon() -> None:
    assert classify(_body(PI_SUMMARY_OPENING + " Summarize.")) == "pi-summary"
    assert classify(_body("You are an expert coding assistant.")) == "agent"
