"""A transcript with a known answer key, and a scripted model to score it with, for the score tests.

The session gives a rule, runs a failing command, shows a port once, names a task and compacts; then the
user withdraws the rule, names the next task and compacts again. The scripted model (an OpenAI-compatible
server on loopback, registered in a scratch agent dir as provider ``scripted``) answers pi's summarizer and
Longhaul's Diff; variants of its pi summary drop the rule or keep the withdrawn rule as active.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scripted_summarizer import scripted_diff_answer, scripted_pi_summary

from longhaul_daemon.evaluation.corpus_text import WRAP_UP, WRAP_UP_REPLY
from longhaul_daemon.evaluation.harness.model_server import ModelServer
from longhaul_daemon.evaluation.key import AnswerKey, KeyCommand, KeyCompaction, KeyRule, dump_key

from .branches import BranchBuilder, write_transcript

__all__ = ["RULE", "SPEC", "drops_the_rule", "keeps_the_lifted_rule", "scored_model", "write_scored_session"]

RULE = "Never add a new dependency without asking me first."
WITHDRAWAL = "Use port 5173 from before. The dependency rule no longer applies, add what you need."
SPEC = "scripted/summarizer"


def write_scored_session(directory: Path, name: str) -> Path:
    b = BranchBuilder()
    b.user(RULE)
    b.assistant("Understood.")
    b.user("Run the tests and start the dev server.")
    b.tool("bash", {"command": "pytest -q"}, "1 failed, 3 passed\n\nCommand exited with code 1", error=True)
    b.tool("bash", {"command": "npm run dev"}, "  Local:   http://localhost:5173/")
    b.assistant("The tests fail; the server is up.")
    b.user("Next, implement `parse_invoice_totals` in src/invoices.py.")
    b.assistant("On it.")
    kept = b.user(WRAP_UP)
    b.assistant(WRAP_UP_REPLY)
    b.compaction(kept, "recorded one")
    b.user(WITHDRAWAL)
    b.assistant("Noted.")
    b.user("Next, write `normalize_currency` in src/money.py.")
    b.assistant("Sure.")
    kept = b.user(WRAP_UP)
    b.assistant(WRAP_UP_REPLY)
    b.compaction(kept, "recorded two")
    b.user("Carry on.")
    b.assistant("Carrying on.")
    path = write_transcript(directory / f"{name}.jsonl", b)
    rule = KeyRule("r1", RULE)
    key = AnswerKey(
        compactions=(
            KeyCompaction(1, (rule,), (), (KeyCommand("pytest -q", 1),), ("5173",), "parse_invoice_totals"),
            KeyCompaction(2, (), (rule,), (), (), "normalize_currency"),
        )
    )
    (directory / f"{name}.key.json").write_text(json.dumps(dump_key(key)))
    return path


def drops_the_rule(body: dict[str, Any]) -> str:
    """pi's summary without the user's rule (a paraphrasing model that lost it)."""
    return "\n".join(line for line in scripted_pi_summary(body).splitlines() if RULE not in line)


def keeps_the_lifted_rule(body: dict[str, Any]) -> str:
    """pi's summary that missed the withdrawal: the rule stays under Constraints as if it still held."""
    blind = json.loads(json.dumps(body).replace("no longer applies", "still applies"))
    return scripted_pi_summary(blind)


Answer = Callable[[dict[str, Any]], str]


def scored_model(agent_dir: Path, pi_summary: Answer = scripted_pi_summary) -> ModelServer:
    """The scored model, started, and registered in ``agent_dir``'s models.json as ``scripted/summarizer``."""
    model = ModelServer(model_id="summarizer", pi_summary=pi_summary, longhaul=scripted_diff_answer).start()
    agent_dir.mkdir(parents=True, exist_ok=True)
    provider = {
        "baseUrl": model.base_url,
        "api": "openai-completions",
        "apiKey": "scripted-key",
        "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
        "models": [
            {
                "id": "summarizer",
                "name": "Scripted summarizer",
                "reasoning": False,
                "input": ["text"],
                "contextWindow": 200_000,
                "maxTokens": 8192,
                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
            }
        ],
    }
    # JSONC, as pi 0.73.1 accepts it: score must read comments and trailing commas too.
    document = json.dumps({"providers": {"scripted": provider}}, indent=2)
    text = "// scripted model for the score tests\n" + document
    (agent_dir / "models.json").write_text(re.sub(r"\n}$", ",\n}", text))
    return model
