"""The proof behind every direct route: for each model the route table lets the daemon call itself, pi-ai
0.73.1 (node, ``streamSimple``) and the daemon's own client build the same request.

pi-ai sends to a capturing loopback server; the daemon prepares its request for the same model, key and
prompt. They must agree on the URL path, the header carrying the key and its scheme, every header pi-ai adds
beyond its HTTP library's own (betas, model headers), the key in no other header, and the body fields that
matter: model, output limit, streaming, the system prompt's text and place, the messages, reasoning, storage
and usage options. pi-ai is asked at the reasoning level the daemon chose (DIFF-18), so the reasoning fields
are compared like any other. The structured-output payload is checked the same way: pi-ai with the shim's
``onPayload`` merge carries exactly the fields the daemon's own client sends.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from pydantic import SecretStr

from longhaul_daemon.models.http import PreparedCall
from longhaul_daemon.models.providers import PROVIDERS
from longhaul_daemon.models.request import Message, ModelRequest
from longhaul_daemon.models.route_table import choose_route
from longhaul_daemon.models.routing import target_for
from longhaul_daemon.models.via_pi import pi_call
from longhaul_daemon.passes.answers.schema import ANSWER_SCHEMA
from longhaul_daemon.protocol import ModelCredentials, ModelFacts

from .pi_probe import Captured, capture, pi_models, pi_requests

KEY = "sk-parity-key-5e2b9c1d7a"  # no provider prefix: what the table decides by is the provider and api
SYSTEM = "SYSTEM PROMPT of the parity check"
TEXT = "Summarise the span: the parser fails on empty lines."
MAX_TOKENS = 512
# Headers an HTTP library adds on its own (the SDKs' telemetry, transport), not what the API requires.
_LIBRARY_HEADERS = frozenset(
    {
        "user-agent",
        "accept",
        "accept-encoding",
        "accept-language",
        "content-length",
        "content-type",
        "host",
        "connection",
        "sec-fetch-mode",
        "anthropic-dangerous-direct-browser-access",
        "x-goog-api-client",
    }
)


def local_model(**changes: Any) -> dict[str, Any]:
    """A models.json provider of the user's own: a local llama.cpp/Ollama-style server."""
    model = {
        "id": "local-model",
        "name": "Local",
        "api": "openai-completions",
        "provider": "local-llm",
        "baseUrl": "http://localhost:8080/v1",
        "reasoning": False,
        "input": ["text"],
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 32000,
        "maxTokens": 4096,
    }
    return {**model, **changes}


LOCAL_VARIANTS = [
    local_model(),
    local_model(reasoning=True),
    local_model(compat={"supportsDeveloperRole": False, "supportsReasoningEffort": False}, reasoning=True),
    local_model(
        compat={"maxTokensField": "max_tokens", "supportsUsageInStreaming": False, "supportsStore": False}
    ),
    local_model(reasoning=True, thinkingLevelMap={"off": "none", "minimal": None}),
]


def direct_models() -> list[dict[str, Any]]:
    """Every built-in model the table sends directly with an API key, and the local-server variants."""
    _, models = pi_models()
    chosen = [
        m
        for m in models
        if choose_route(
            provider=m["provider"],
            api=m["api"],
            base_url=m["baseUrl"],
            api_key=KEY,
            oauth_login=False,
            compat=m.get("compat") or {},
            spoken=m["api"] in PROVIDERS,
        ).via
        == "daemon"
    ]
    return chosen + LOCAL_VARIANTS


def at(model: Mapping[str, Any], origin: str) -> dict[str, Any]:
    """The model with its base URL moved to the capturing server, path kept."""
    base = str(model["baseUrl"])
    path = base.split("://", 1)[1].partition("/")[2]
    return {**model, "baseUrl": f"{origin}/{path}".rstrip("/")}


def daemon_call(
    model: Mapping[str, Any], *, schema: bool = False
) -> tuple[PreparedCall, str | None, ModelRequest]:
    facts = ModelFacts.model_validate(model)
    target = target_for(facts, ModelCredentials(apiKey=SecretStr(KEY)))
    request = ModelRequest(
        target=target,
        system=SYSTEM,
        messages=(Message("user", TEXT),),
        max_output_tokens=MAX_TOKENS,
        reasoning="off",
        stream=True,
        output_schema=ANSWER_SCHEMA if schema else None,
    )
    prepared, recorded = PROVIDERS[str(model["api"])].prepare(request)
    return prepared, recorded, request


def pi_case(
    model: Mapping[str, Any], recorded: str | None, payload: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    level = recorded if recorded not in (None, "default", "unknown") else None
    case = {
        "model": model,
        "apiKey": KEY,
        "system": SYSTEM,
        "text": TEXT,
        "maxTokens": MAX_TOKENS,
        "reasoning": level,
    }
    if payload is not None:
        case["payload"] = payload
    return case


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    if isinstance(content, dict):
        return _text(content.get("parts") or content.get("text"))
    return ""


def normalized(api: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of a body that matter for the call, in one form for pi-ai's and the daemon's spelling."""
    rest = dict(body)
    out: dict[str, Any] = {}
    if api == "anthropic-messages":
        out["system"] = _text(rest.pop("system", ""))
        out["messages"] = [(m["role"], _text(m["content"])) for m in rest.pop("messages")]
    elif api == "openai-responses":
        items = rest.pop("input")
        system = [i for i in items if i.get("role") in ("system", "developer")]
        out["system"] = _text(rest.pop("instructions", None) or (system[0]["content"] if system else ""))
        out["messages"] = [(i["role"], _text(i["content"])) for i in items if i not in system]
    elif api == "openai-completions":
        messages = rest.pop("messages")
        out["messages"] = [(m["role"], _text(m["content"])) for m in messages]
    elif api == "google-generative-ai":
        out["system"] = _text(rest.pop("systemInstruction", ""))
        out["messages"] = [(c.get("role"), _text(c)) for c in rest.pop("contents")]
    out.update(rest)  # every other field as sent: model, limits, stream, store, reasoning, thinking, …
    return out


def header_view(headers: Mapping[str, str]) -> dict[str, str]:
    return {
        k.lower(): v
        for k, v in headers.items()
        if k.lower() not in _LIBRARY_HEADERS and not k.lower().startswith("x-stainless")
    }


def differences(api: str, sent: Captured, prepared: PreparedCall, origin: str) -> list[str]:
    problems: list[str] = []
    ours = prepared.url.removeprefix(origin)
    if ours != sent.path:
        problems.append(f"path: pi {sent.path} daemon {ours}")
    pi_headers, our_headers = header_view(sent.headers), header_view(prepared.headers)
    if pi_headers != our_headers:
        problems.append(f"headers: pi {sorted(pi_headers.items())} daemon {sorted(our_headers.items())}")
    for name, value in {**sent.headers, **{k.lower(): v for k, v in prepared.headers.items()}}.items():
        if KEY in value and name not in ("x-api-key", "authorization", "x-goog-api-key"):
            problems.append(f"the key rides in {name}")
    pi_body, our_body = normalized(api, sent.body), normalized(api, prepared.body)
    problems += [
        f"body {field}: pi {pi_body.get(field)!r} daemon {our_body.get(field)!r}"
        for field in sorted(set(pi_body) | set(our_body))
        if pi_body.get(field) != our_body.get(field)
    ]
    return problems


def test_every_direct_route_builds_the_request_pi_ai_builds() -> None:
    models = direct_models()
    providers = {m["provider"] for m in models}
    assert {"anthropic", "openai", "google", "local-llm"} <= providers, providers
    with capture() as server:
        placed = [at(m, server.origin) for m in models]
        prepared = [daemon_call(m) for m in placed]
        sent = pi_requests(
            server, [pi_case(m, recorded) for m, (_, recorded, _) in zip(placed, prepared, strict=True)]
        )
        problems = {
            f"{m['provider']}/{m['id']}": d
            for m, (call, _, _), s in zip(placed, prepared, sent, strict=True)
            if (d := differences(str(m["api"]), s, call, server.origin))
        }
    assert problems == {}


@pytest.mark.parametrize(
    "api", ["anthropic-messages", "openai-responses", "google-generative-ai", "openai-completions"]
)
def test_through_pi_the_payload_carries_the_schema_exactly_as_the_daemon_sends_it(api: str) -> None:
    model = next(m for m in direct_models() if m["api"] == api)
    with capture() as server:
        placed = at(model, server.origin)
        call, recorded, request = daemon_call(placed, schema=True)
        payload = pi_call(request).params["payload"]
        [sent] = pi_requests(server, [pi_case(placed, recorded, payload)])
    body = sent.body
    if api == "google-generative-ai":
        config = call.body["generationConfig"]
        assert body["generationConfig"]["responseSchema"] == config["responseSchema"]
        assert body["generationConfig"]["responseMimeType"] == "application/json"
    else:
        for field in payload:
            assert body[field] == call.body[field], field
    assert differences(api, sent, call, server.origin) == []
