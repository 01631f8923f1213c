"""pi's agent configuration for the real small model: ``models.json`` and ``settings.json``.

    python realmodel/pi_agent.py AGENT_DIR BASE_URL

writes both files into AGENT_DIR (pi's ``PI_CODING_AGENT_DIR``), so that ``PI_CODING_AGENT_DIR=AGENT_DIR
PI_OFFLINE=1 pi`` chats with the server ``realmodel/server.py`` runs at BASE_URL (``http://127.0.0.1:PORT/v1``).
The e2e test and ``bench/model_bench.py`` write the same files through :func:`write_agent_config`.

The numbers follow the model: an 8,192-token window and answers of at most 512 tokens (what the server
caps). pi's default compaction reserve (16,384 tokens) is larger than the whole window, which would make
every turn compact, so the reserve is 2,048 tokens: pi compacts on its own past 6,144 tokens. pi keeps the
newest ``keep_recent_tokens`` (1,000 by default) out of a compaction. pi's retries are off, so a failed
request shows at once.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

PROVIDER = "realmodel"
MODEL_ID = "smollm2"
CONTEXT_WINDOW = 8192
MAX_TOKENS = 512
RESERVE_TOKENS = 2048
KEEP_RECENT_TOKENS = 1000


def models_json(base_url: str) -> dict[str, Any]:
    """pi's ``models.json``: one OpenAI-compatible provider with the one local model."""
    model = {
        "id": MODEL_ID,
        "name": "SmolLM2 135M Instruct (Q4_1, local)",
        "reasoning": False,
        "input": ["text"],
        "contextWindow": CONTEXT_WINDOW,
        "maxTokens": MAX_TOKENS,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
    }
    provider = {
        "baseUrl": base_url,
        "api": "openai-completions",
        "apiKey": "local-no-key",  # pi wants a key; the server reads none
        "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
        "models": [model],
    }
    return {"providers": {PROVIDER: provider}}


def settings_json(*, keep_recent_tokens: int = KEEP_RECENT_TOKENS) -> dict[str, Any]:
    """pi's ``settings.json``: the local model by default, compaction sized for its window, no retries."""
    return {
        "defaultProvider": PROVIDER,
        "defaultModel": MODEL_ID,
        "quietStartup": True,
        "enableInstallTelemetry": False,
        "compaction": {
            "enabled": True,
            "reserveTokens": RESERVE_TOKENS,
            "keepRecentTokens": keep_recent_tokens,
        },
        "retry": {"enabled": False},
    }


def write_agent_config(
    agent_dir: Path, base_url: str, *, keep_recent_tokens: int = KEEP_RECENT_TOKENS
) -> None:
    agent_dir.mkdir(parents=True, exist_ok=True)
    (agent_dir / "models.json").write_text(json.dumps(models_json(base_url), indent=2) + "\n")
    settings = settings_json(keep_recent_tokens=keep_recent_tokens)
    (agent_dir / "settings.json").write_text(json.dumps(settings, indent=2) + "\n")


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        sys.stderr.write("usage: python realmodel/pi_agent.py AGENT_DIR BASE_URL\n")
        return 2
    write_agent_config(Path(argv[0]), argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
