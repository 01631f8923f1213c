"""What the pass tests that talk to a scripted model server share: model facts, answers, settings, state."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from models.scripted_http import Reply, ScriptedServer
from models.wires import KEY, OPENAI_COMPLETIONS
from pydantic import SecretStr

from longhaul_daemon.protocol import CompactParams, CompactResult, ModelCredentials, ModelFacts
from longhaul_daemon.state.model import State

__all__ = ["SPEC", "answer_reply", "state_of", "with_model", "with_settings"]

SPEC = "test/session-model"


def answer_reply(
    labels: dict[str, str | tuple[str, str]],
    *,
    narrative: str = "Set up the export.",
    now: str = "Write the header row next.",
    **fields: Any,
) -> Reply:
    """A Diff answer streamed in the OpenAI wire format; a ``(label, words)`` pair gives the label words."""
    items = [
        {"msg": msg, "label": label[0], "words": label[1]}
        if isinstance(label, tuple)
        else {"msg": msg, "label": label}
        for msg, label in labels.items()
    ]
    body = {"labels": items, "narrative": narrative, "now": now, **fields}
    return OPENAI_COMPLETIONS.stream_reply([json.dumps(body)])


def with_model(params: CompactParams, server: ScriptedServer, **extra: Any) -> CompactParams:
    """``params`` with the session model on ``server`` and its key, as the shim resolves them."""
    facts = ModelFacts(
        provider="test",
        id="session-model",
        api="openai-completions",
        baseUrl=server.url + "/v1",
        maxTokens=16_384,
        contextWindow=128_000,
    )
    session = params.session.model_copy(update={"model": facts})
    update: dict[str, Any] = {"session": session, "credentials": ModelCredentials(apiKey=SecretStr(KEY))}
    return params.model_copy(update={**update, **extra})


def with_settings(params: CompactParams, settings: dict[str, Any]) -> CompactParams:
    """``params`` whose agent dir holds ``longhaul.json`` with ``settings`` (CONFIG-5)."""
    agent = Path(params.session.cwd) / "agent"
    agent.mkdir(exist_ok=True)
    (agent / "longhaul.json").write_text(json.dumps(settings))
    return params.model_copy(update={"session": params.session.model_copy(update={"agentDir": str(agent)})})


def state_of(result: CompactResult) -> State:
    assert result.compaction is not None
    return State.model_validate(result.compaction.details["state"])
