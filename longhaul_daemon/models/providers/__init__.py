"""The wire formats the daemon speaks, by pi's ``api`` name, so a model's ``api`` picks its module."""

from __future__ import annotations

from longhaul_daemon.models.providers import (
    anthropic_messages,
    google_generative_ai,
    openai_completions,
    openai_responses,
)
from longhaul_daemon.models.providers.base import Provider

__all__ = ["PROVIDERS", "Provider"]

PROVIDERS: dict[str, Provider] = {
    p.api: p
    for p in (
        openai_completions.PROVIDER,
        anthropic_messages.PROVIDER,
        openai_responses.PROVIDER,
        google_generative_ai.PROVIDER,
    )
}
