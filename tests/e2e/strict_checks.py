"""What each provider stand-in accepts: only requests shaped as pi-ai 0.73.1 builds them, refused as the real
API refuses them.

Each check is written from pi-ai's own provider code (``@mariozechner/pi-ai/dist/providers``), not from what
the daemon happens to send: ``anthropic.js`` ``createClient`` (an API key in ``x-api-key``; an ``sk-ant-oat``
token as a Bearer with the ``claude-code-20250219,oauth-2025-04-20`` betas, a ``claude-cli`` user agent,
``x-app: cli`` and Claude Code's identity as the first system block; GitHub Copilot as a Bearer with no
``x-api-key``; the Cloudflare gateway with ``cf-aig-authorization`` and neither of the others), the Copilot
headers of ``models.generated.js`` and ``github-copilot-headers.js``, ``openai-completions.js`` (OpenRouter's
``reasoning`` object, never ``reasoning_effort``), ``openai-responses.js`` (``store: false``) and
``google.js`` (``x-goog-api-key``). A check returns None for a request pi would send, else the refusal the
real API gives: its status and its error body.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CLAUDE_CODE_IDENTITY",
    "COPILOT_HEADERS",
    "Check",
    "Refusal",
    "anthropic_key",
    "anthropic_oauth",
    "cloudflare_anthropic",
    "copilot",
    "google_key",
    "local_openai",
    "openai_key",
    "openrouter",
]

CLAUDE_CODE_IDENTITY = "You are Claude Code, Anthropic's official CLI for Claude."
COPILOT_HEADERS = {
    "user-agent": "GitHubCopilotChat/0.35.0",
    "editor-version": "vscode/1.107.0",
    "editor-plugin-version": "copilot-chat/0.35.0",
    "copilot-integration-id": "vscode-chat",
}
_ANTHROPIC_FIELDS = frozenset(
    {"model", "messages", "max_tokens", "stream", "system", "thinking", "output_config", "temperature"}
    | {"tools", "tool_choice", "metadata"}
)
_RESPONSES_FIELDS = frozenset(
    {"model", "input", "instructions", "stream", "store", "max_output_tokens", "reasoning", "include", "text"}
    | {"tools", "tool_choice", "prompt_cache_key", "prompt_cache_retention", "temperature", "service_tier"}
)
_COMPLETIONS_FIELDS = frozenset(
    {"model", "messages", "stream", "stream_options", "store", "max_completion_tokens", "max_tokens"}
    | {"temperature", "tools", "tool_choice", "response_format", "reasoning_effort", "reasoning"}
    | {"prompt_cache_key", "prompt_cache_retention", "provider"}
)
_GOOGLE_FIELDS = frozenset({"contents", "systemInstruction", "generationConfig", "tools", "toolConfig"})


@dataclass(frozen=True)
class Refusal:
    """The real API's answer to a request it does not take."""

    status: int
    body: Mapping[str, Any]
    reason: str  # for the test's own report: which rule the request broke


Check = Callable[[str, Mapping[str, str], Mapping[str, Any]], Refusal | None]


def _anthropic_error(status: int, kind: str, message: str) -> Refusal:
    return Refusal(status, {"type": "error", "error": {"type": kind, "message": message}}, message)


def _openai_error(
    status: int, message: str, code: str | None, kind: str = "invalid_request_error"
) -> Refusal:
    return Refusal(
        status, {"error": {"message": message, "type": kind, "param": None, "code": code}}, message
    )


def _betas(headers: Mapping[str, str]) -> set[str]:
    return {b.strip() for b in headers.get("anthropic-beta", "").split(",") if b.strip()}


def _anthropic_body(body: Mapping[str, Any], model: str) -> Refusal | None:
    extra = sorted(set(body) - _ANTHROPIC_FIELDS)
    if extra:
        return _anthropic_error(400, "invalid_request_error", f"{extra[0]}: Extra inputs are not permitted")
    if body.get("model") != model or not isinstance(body.get("max_tokens"), int) or not body.get("messages"):
        return _anthropic_error(400, "invalid_request_error", "model, max_tokens and messages are required")
    if body.get("stream") is not True:
        return _anthropic_error(400, "invalid_request_error", "pi-ai always streams")
    return None


def _anthropic_common(path: str, headers: Mapping[str, str], prefix: str) -> Refusal | None:
    if path != f"{prefix}/v1/messages":
        return _anthropic_error(404, "not_found_error", f"Not found: {path}")
    if headers.get("anthropic-version") != "2023-06-01":
        return _anthropic_error(400, "invalid_request_error", "anthropic-version: header is required")
    return None


def anthropic_key(prefix: str, key: str, model: str) -> Check:
    """pi-ai's API-key client: ``x-api-key``, no Authorization, the interleaved-thinking beta."""

    def check(path: str, headers: Mapping[str, str], body: Mapping[str, Any]) -> Refusal | None:
        refused = _anthropic_common(path, headers, prefix)
        if refused is not None:
            return refused
        if headers.get("x-api-key") != key or "authorization" in headers:
            return _anthropic_error(401, "authentication_error", "invalid x-api-key")
        if "interleaved-thinking-2025-05-14" not in _betas(headers):
            return _anthropic_error(400, "invalid_request_error", "pi-ai sends the interleaved-thinking beta")
        return _anthropic_body(body, model)

    return check


def anthropic_oauth(prefix: str, token: str, model: str) -> Check:
    """pi-ai's OAuth client, and what Anthropic answers a subscription token sent any other way."""

    def check(path: str, headers: Mapping[str, str], body: Mapping[str, Any]) -> Refusal | None:
        refused = _anthropic_common(path, headers, prefix)
        if refused is not None:
            return refused
        if "x-api-key" in headers:
            return _anthropic_error(401, "authentication_error", "invalid x-api-key")
        if headers.get("authorization") != f"Bearer {token}":
            return _anthropic_error(401, "authentication_error", "x-api-key header is required")
        if "oauth-2025-04-20" not in _betas(headers):
            return _anthropic_error(
                401, "authentication_error", "OAuth authentication is currently not supported."
            )
        system = body.get("system")
        first = (
            system[0].get("text")
            if isinstance(system, list) and system and isinstance(system[0], dict)
            else None
        )
        identity = (
            "claude-code-20250219" in _betas(headers)
            and headers.get("user-agent", "").startswith("claude-cli/")
            and headers.get("x-app") == "cli"
            and first == CLAUDE_CODE_IDENTITY
        )
        if not identity:
            message = (
                "This credential is only authorized for use with Claude Code and cannot be used for other "
                "API requests."
            )
            return _anthropic_error(400, "invalid_request_error", message)
        return _anthropic_body(body, model)

    return check


def cloudflare_anthropic(prefix: str, key: str, model: str) -> Check:
    """pi-ai's Cloudflare client: ``cf-aig-authorization``, and neither ``x-api-key`` nor Authorization."""

    def check(path: str, headers: Mapping[str, str], body: Mapping[str, Any]) -> Refusal | None:
        refused = _anthropic_common(path, headers, prefix)
        if refused is not None:
            return refused
        if headers.get("cf-aig-authorization") != f"Bearer {key}" or {"x-api-key", "authorization"} & set(
            headers
        ):
            error = {"code": 2009, "message": "Unauthorized"}
            return Refusal(
                401, {"success": False, "result": [], "messages": [], "error": [error]}, "gateway auth"
            )
        return _anthropic_body(body, model)

    return check


def copilot(prefix: str, token: str, model: str, api: str) -> Check:
    """GitHub Copilot on any of its three APIs: a Bearer token and Copilot's editor and intent headers."""
    paths = {
        "anthropic-messages": "/v1/messages",
        "openai-completions": "/chat/completions",
        "openai-responses": "/responses",
    }

    def check(path: str, headers: Mapping[str, str], body: Mapping[str, Any]) -> Refusal | None:
        if path != prefix + paths[api]:
            return _openai_error(404, f"Not found: {path}", "not_found")
        if headers.get("authorization") != f"Bearer {token}" or "x-api-key" in headers:
            return _openai_error(401, "unauthorized: token expired", "unauthorized")
        missing = [name for name, value in COPILOT_HEADERS.items() if headers.get(name) != value]
        if missing:
            return _openai_error(400, f"bad request: missing {missing[0]} header for IDE auth", "bad_request")
        if (
            headers.get("x-initiator") not in ("user", "agent")
            or headers.get("openai-intent") != "conversation-edits"
        ):
            return _openai_error(400, "bad request: missing intent headers", "bad_request")
        if body.get("model") != model or body.get("stream") is not True:
            return _openai_error(400, "model and streaming as pi-ai sends them", "bad_request")
        if api == "anthropic-messages":
            return _anthropic_body(body, model)
        if api == "openai-completions" and ("store" in body or "reasoning_effort" in body):
            return _openai_error(
                400, "pi-ai's Copilot compat sends no store and no reasoning_effort", "bad_request"
            )
        return None

    return check


def _openai_compatible(path: str, expected_path: str, headers: Mapping[str, str], key: str) -> Refusal | None:
    if path != expected_path:
        return _openai_error(404, f"Invalid URL (POST {path})", "not_found")
    if headers.get("authorization") != f"Bearer {key}":
        return _openai_error(401, "Incorrect API key provided.", "invalid_api_key")
    return None


def _unknown(body: Mapping[str, Any], allowed: frozenset[str]) -> Refusal | None:
    extra = sorted(set(body) - allowed)
    if extra:
        return _openai_error(400, f"Unrecognized request argument supplied: {extra[0]}", "unknown_parameter")
    return None


def openai_key(prefix: str, key: str, model: str) -> Check:
    """OpenAI's Responses API as pi-ai calls it: a Bearer key, ``store: false``, streamed."""

    def check(path: str, headers: Mapping[str, str], body: Mapping[str, Any]) -> Refusal | None:
        refused = _openai_compatible(path, f"{prefix}/responses", headers, key) or _unknown(
            body, _RESPONSES_FIELDS
        )
        if refused is not None:
            return refused
        if body.get("model") != model or body.get("store") is not False or body.get("stream") is not True:
            return _openai_error(
                400, "model, store: false and streaming as pi-ai sends them", "invalid_value"
            )
        return None

    return check


def openrouter(prefix: str, key: str, model: str) -> Check:
    """OpenRouter's Chat Completions as pi-ai calls it: reasoning as OpenRouter's object, never the effort."""

    def check(path: str, headers: Mapping[str, str], body: Mapping[str, Any]) -> Refusal | None:
        refused = _openai_compatible(path, f"{prefix}/chat/completions", headers, key)
        refused = refused or _unknown(body, _COMPLETIONS_FIELDS)
        if refused is not None:
            return refused
        if "reasoning_effort" in body or body.get("model") != model or body.get("stream") is not True:
            return _openai_error(
                400, "pi-ai sends OpenRouter a reasoning object and streams", "invalid_value"
            )
        return None

    return check


def local_openai(prefix: str, key: str, model: str) -> Check:
    """A local OpenAI-compatible server (llama.cpp, Ollama) from models.json: a Bearer key, chat path."""

    def check(path: str, headers: Mapping[str, str], body: Mapping[str, Any]) -> Refusal | None:
        refused = _openai_compatible(path, f"{prefix}/chat/completions", headers, key)
        refused = refused or _unknown(body, _COMPLETIONS_FIELDS)
        if refused is not None:
            return refused
        if body.get("model") != model or body.get("stream") is not True or body.get("store") is not False:
            return _openai_error(
                400, "model, store: false and streaming as pi-ai sends them", "invalid_value"
            )
        return None

    return check


def google_key(prefix: str, key: str, model: str) -> Check:
    """Gemini as pi-ai's @google/genai client calls it: ``x-goog-api-key`` on streamGenerateContent."""
    expected = f"{prefix}/models/{model}:streamGenerateContent?alt=sse"

    def check(path: str, headers: Mapping[str, str], body: Mapping[str, Any]) -> Refusal | None:
        def error(status: int, message: str, code: str) -> Refusal:
            return Refusal(status, {"error": {"code": status, "message": message, "status": code}}, message)

        if path != expected:
            return error(404, f"models/{model} is not found for API version v1beta", "NOT_FOUND")
        if headers.get("x-goog-api-key") != key or "authorization" in headers:
            return error(400, "API key not valid. Please pass a valid API key.", "INVALID_ARGUMENT")
        extra = sorted(set(body) - _GOOGLE_FIELDS)
        if extra or not body.get("contents"):
            return error(
                400, f'Invalid JSON payload received. Unknown name "{extra[:1]}"', "INVALID_ARGUMENT"
            )
        return None

    return check
