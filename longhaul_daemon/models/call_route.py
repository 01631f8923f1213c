"""Which way a model call goes, directly or through pi, and how large its request is on the wire.

The route table (:mod:`.route_table`) says what pi would do for a provider, api and credential; this module
adds what the daemon knows at call time: whether a shim is connected, the apis it was told to send through pi
(``serve --via-pi``) and the direct routes a provider refused before.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from longhaul_daemon import jsoncodec
from longhaul_daemon.models.call_errors import ModelCallError, UnsupportedApi
from longhaul_daemon.models.providers import PROVIDERS, Provider
from longhaul_daemon.models.request import ModelRequest, ModelTarget
from longhaul_daemon.models.route_table import DirectRefusals, RouteChoice, choose_route
from longhaul_daemon.models.via_pi import PiPeer, pi_call

__all__ = ["goes_through_pi", "provider_for", "route_for", "wire_chars"]


def provider_for(api: str | None) -> Provider:
    """The wire format for pi's ``api`` name; ``UnsupportedApi`` when the daemon does not speak it."""
    provider = PROVIDERS.get(api or "")
    if provider is None:
        raise UnsupportedApi(api)
    return provider


# Routes whose credential the daemon must never send itself, shim or not: pi sends it another way.
_NEVER_DIRECT = frozenset({"oauth", "copilot", "cloudflare", "pi-only-api"})


def route_for(
    target: ModelTarget,
    *,
    peer: PiPeer | None,
    via_pi_apis: Collection[str] = (),
    refusals: DirectRefusals | None = None,
) -> RouteChoice:
    """Where a call on ``target`` goes: the route table's answer (:mod:`.route_table`), unless the daemon
    was told to send the api through pi (``forced``) or the provider refused a direct call on this route
    before (``refused-<status>``). Without a shim (a pass run in-process, as tests do) only the table's
    direct routes and routes pi does not treat specially are called directly."""
    spoken = (target.api or "") in PROVIDERS
    table = choose_route(
        provider=target.provider,
        api=target.api,
        base_url=target.base_url,
        api_key=target.secret(),
        oauth_login=target.oauth_login,
        compat=target.pi_compat,
        spoken=spoken,
    )
    if peer is None:
        if table.via == "pi" and table.why in _NEVER_DIRECT:
            return table
        return table if table.via == "daemon" else RouteChoice("daemon", "no-shim")
    if target.api in via_pi_apis:
        return RouteChoice("pi", "forced")
    refused = refusals.status(target.provider, target.api, target.base_url) if refusals else None
    if table.via == "daemon" and refused is not None:
        return RouteChoice("pi", f"refused-{refused}")
    return table


def goes_through_pi(
    target: ModelTarget,
    *,
    peer: PiPeer | None,
    via_pi_apis: Collection[str] = (),
    refusals: DirectRefusals | None = None,
) -> bool:
    """Whether a call on ``target`` goes to the shim (see :func:`route_for`)."""
    choice = route_for(target, peer=peer, via_pi_apis=via_pi_apis, refusals=refusals)
    return peer is not None and choice.via == "pi"


def wire_chars(
    request: ModelRequest,
    *,
    peer: PiPeer | None,
    via_pi_apis: Collection[str] = (),
    refusals: DirectRefusals | None = None,
) -> int:
    """The characters ``request`` puts on the wire: the JSON body its provider sends (or the
    ``model.complete`` params through pi), framing, escapes, tools and schema included. Only the body: the
    headers carry the key, and no model reads them."""
    target = request.target
    body: Any
    if goes_through_pi(target, peer=peer, via_pi_apis=via_pi_apis, refusals=refusals):
        body = pi_call(request).params
    else:
        try:
            body = provider_for(target.api).prepare(request)[0].body
        except ModelCallError:  # an api nobody can call: what pi would be sent is the closest measure
            body = pi_call(request).params
    return len(jsoncodec.dumps(body).decode("utf-8", "surrogatepass"))
