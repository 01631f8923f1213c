"""What crosses between the daemon and a model, with the pass's credentials taken out in both directions.

A pass holds the credentials of two routes, the summarizer's and the session model's. A model (or a hostile
server behind it) can echo one into anything it writes: the answer, a tool call's id, its tool name, its
arguments, Gemini's signature. What the daemon sends next is built from those replies, from the transcript
and from error texts made of them, and after a route fails it goes to the other route's provider. So a reply
is scrubbed as it arrives (:func:`scrubbed_reply`) and a request as it leaves (:func:`scrubbed_request`),
each with the pass's redactor (both routes) joined with the called model's own credentials: nothing a
provider receives or the daemon keeps carries a credential, whichever route it came from. Pure; an
unchanged value comes back as the same object, so the usual clean call costs one scan of its text.
"""

from __future__ import annotations

from dataclasses import replace

from longhaul_daemon.models.completion import CompletionResult
from longhaul_daemon.models.request import Message, ModelRequest
from longhaul_daemon.models.tool_calls import ToolCall, ToolResult
from longhaul_daemon.secrets.redaction import Redactor

__all__ = ["scrubbed_call", "scrubbed_reply", "scrubbed_request"]


def scrubbed_call(call: ToolCall, redactor: Redactor) -> ToolCall:
    """``call`` with its id, name and arguments redacted; a signature that held a credential is dropped
    (an opaque token cannot be cut without breaking it, and one that hides a key is not worth keeping)."""
    call_id, name = redactor.text(call.id), redactor.text(call.name)
    arguments = redactor.value(dict(call.arguments))
    signature = call.signature
    if signature is not None and redactor.finds(signature):
        signature = None
    if (
        call_id is call.id
        and name is call.name
        and signature is call.signature
        and arguments == dict(call.arguments)
    ):
        return call
    return ToolCall(call_id, name, arguments, signature)


def _scrubbed_result(result: ToolResult, redactor: Redactor) -> ToolResult:
    call_id, name = redactor.text(result.call_id), redactor.text(result.name)
    text = redactor.text(result.text)
    if call_id is result.call_id and name is result.name and text is result.text:
        return result
    return replace(result, call_id=call_id, name=name, text=text)


def _scrubbed_message(message: Message, redactor: Redactor) -> Message:
    text = redactor.text(message.text)
    calls = tuple(scrubbed_call(call, redactor) for call in message.tool_calls)
    results = tuple(_scrubbed_result(result, redactor) for result in message.tool_results)
    same_calls = all(new is old for new, old in zip(calls, message.tool_calls, strict=True))
    same_results = all(new is old for new, old in zip(results, message.tool_results, strict=True))
    if text is message.text and same_calls and same_results:
        return message
    return Message(message.role, text, tool_calls=calls, tool_results=results)


def scrubbed_request(request: ModelRequest, redactor: Redactor) -> ModelRequest:
    """``request`` with every text it carries redacted: the system prompt, each message's text, each tool
    call's id, name and arguments, each tool result's id, name and text."""
    if not redactor:
        return request
    system = redactor.text(request.system)
    messages = tuple(_scrubbed_message(message, redactor) for message in request.messages)
    same = all(new is old for new, old in zip(messages, request.messages, strict=True))
    if system is request.system and same:
        return request
    return replace(request, system=system, messages=messages)


def scrubbed_reply(result: CompletionResult, redactor: Redactor) -> CompletionResult:
    """``result`` with its text and calls redacted, and a request id that held a credential replaced."""
    if not redactor:
        return result
    request_id = result.request_id
    if request_id is not None and redactor.finds(request_id):
        request_id = "redacted"
    calls = tuple(scrubbed_call(call, redactor) for call in result.tool_calls)
    return replace(result, text=redactor.text(result.text), tool_calls=calls, request_id=request_id)
