"""An OpenAI-compatible chat-completions server for one local GGUF model, on loopback, for tests and benches.

    <model venv>/bin/python realmodel/server.py --model FILE.gguf [--port 0] [--alias smollm2] [--ctx 8192]
        [--threads 1] [--max-tokens 512] [--temperature 0] [--seed 0] [--log requests.jsonl]

It runs under the model's own venv (``realmodel/build_model.py`` builds it), with llama-cpp-python for tokens,
sampling and the JSON-schema-to-grammar conversion; everything on the HTTP side is here. Once the model is
loaded it prints one line, ``listening on http://127.0.0.1:PORT/v1 model=ALIAS``, with the real port when
``--port 0`` let the system pick one.

Routes: ``GET /v1/models``, ``GET /health``, ``POST /v1/chat/completions`` (also without ``/v1``). What a
chat request may hold, and what becomes of it:

- ``messages``: ``content`` as a string or a list of parts (text parts are joined; other parts become a
  placeholder); ``developer`` is read as ``system``; a ``tool`` message becomes a user turn that says it is a
  tool's output; an assistant's ``tool_calls`` are written out as text. The prompt is the GGUF's own chat
  template.
- ``tools`` and ``tool_choice``: ignored. The answer is always text, so a model never calls a tool.
- ``response_format``: ``text``; ``json_object`` (any JSON object, or the one its ``schema`` describes);
  ``json_schema`` (its ``json_schema.schema``). The schema becomes a llama.cpp grammar, so every sampled token
  keeps the output inside it.
- ``max_completion_tokens`` / ``max_tokens``: honoured up to ``--max-tokens`` and the room left in the
  context.
- ``temperature``, ``top_p``, ``seed``, ``frequency_penalty``, ``presence_penalty``, ``stop``: as OpenAI's.
  ``--temperature`` and ``--seed`` apply when a request sends none (pi sends neither).
- ``stream``: server-sent events, OpenAI's chunk shapes, ``data: [DONE]`` last; with
  ``stream_options.include_usage`` a last chunk with ``choices: []`` and ``usage`` comes before it.

Every request is evaluated from an empty KV cache, so a request gives the same answer every time at
temperature 0, or at any temperature with a fixed seed, across restarts too. One request generates at a time;
the others wait their turn. A prompt that does not fit the context is refused the way OpenAI refuses it: HTTP
400, ``code: "context_length_exceeded"``, "This model's maximum context length is N tokens...". A client that
goes away mid-answer (a reader that stops at the first complete JSON object) ends the generation within a
token or two, and the next request is served as usual.

Two switches trade that purity for speed in agent turns only, which a request marks by carrying ``tools``
(pi's summary call and Longhaul's calls carry none): ``--agent-max-tokens N`` caps such a turn's answer below
``--max-tokens``, and ``--agent-prefix-reuse`` keeps the KV cache from one agent turn to the next, so a turn
reads only what is new since the previous one. Its wording can then differ from a fresh read's (the sums run
in another order), but the same turns in the same order answer the same way on every run. A request without
``tools`` still starts from an empty cache. ``bench/model_bench.py`` turns both on: what it measures is the
compaction, not the agent's words, and a session of real agent turns otherwise costs most of an hour on two
busy cores.

``--log FILE`` appends one JSON line per chat request: the request body, the answer's text, the HTTP
status, the prompt and completion token counts, the finish reason, the seconds taken and whether the client
left early. The e2e test and ``bench/model_bench.py`` read it to count calls and tokens.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import json
import select
import socket
import sys
import threading
import time
import uuid
from collections.abc import Generator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import llama_cpp
from llama_cpp import Llama, LlamaGrammar
from llama_cpp.llama_chat_format import Jinja2ChatFormatter
from llama_cpp.llama_grammar import JSON_GBNF, json_schema_to_gbnf

CHAT_ROUTES = frozenset({"/v1/chat/completions", "/chat/completions"})
MODEL_ROUTES = frozenset({"/v1/models", "/models"})


class RequestError(Exception):
    """A request the server refuses, answered as OpenAI answers it: ``{"error": {...}}`` with a status."""

    def __init__(
        self, status: int, message: str, *, code: str | None = None, param: str | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.param = param

    def body(self) -> dict[str, Any]:
        kind = "invalid_request_error" if self.status < 500 else "server_error"
        return {"error": {"message": str(self), "type": kind, "param": self.param, "code": self.code}}


class ClientGone(Exception):
    """The client closed its connection while the answer was being generated."""


# ---- turning a chat request into a prompt ------------------------------------------------------------------


def flatten_content(content: object) -> str:
    """A message's ``content`` as one string: text parts joined, other parts named rather than dropped."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise RequestError(400, "message content must be a string or a list of parts", param="messages")
    pieces: list[str] = []
    for part in content:
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            pieces.append(part["text"])
        elif isinstance(part, dict):
            pieces.append(f"[{part.get('type', 'part')} omitted: this model reads text only]")
    return "".join(pieces)


def chat_turns(messages: object) -> list[dict[str, str]]:
    """OpenAI messages as plain ``{role, content}`` turns the chat template understands."""
    if not isinstance(messages, list) or not messages:
        raise RequestError(400, "messages must be a non-empty list", param="messages")
    turns: list[dict[str, str]] = []
    for message in messages:
        if not isinstance(message, dict):
            raise RequestError(400, "every message must be an object", param="messages")
        role = str(message.get("role") or "user")
        text = flatten_content(message.get("content"))
        if role == "developer":
            role = "system"
        elif role == "tool":
            role, text = "user", f"(output of tool call {message.get('tool_call_id', '?')})\n{text}"
        elif role == "assistant":
            for call in message.get("tool_calls") or []:
                function = call.get("function", {}) if isinstance(call, dict) else {}
                text += f"\n(called tool {function.get('name')} with {function.get('arguments')})"
        turns.append({"role": role, "content": text})
    return turns


def grammar_for(request: dict[str, Any]) -> tuple[LlamaGrammar | None, str | None]:
    """The grammar ``response_format`` asks for, and a name for the log (None, None for plain text)."""
    shape = request.get("response_format")
    if shape is None:
        return None, None
    if not isinstance(shape, dict):
        raise RequestError(400, "response_format must be an object", param="response_format")
    kind = shape.get("type")
    schema: object = None
    if kind == "text":
        return None, None
    if kind == "json_object":
        schema = shape.get("schema")
        if schema is None:
            return LlamaGrammar.from_string(JSON_GBNF, verbose=False), "json_object"
    elif kind == "json_schema":
        spec = shape.get("json_schema")
        schema = spec.get("schema") if isinstance(spec, dict) else None
        if schema is None:
            raise RequestError(400, "response_format.json_schema.schema is missing", param="response_format")
    else:
        raise RequestError(400, f"response_format.type {kind!r} is not supported", param="response_format")
    if not isinstance(schema, dict):
        raise RequestError(400, "the response_format schema must be an object", param="response_format")
    try:
        gbnf = json_schema_to_gbnf(json.dumps(schema))
    except Exception as exc:  # the converter raises plain exceptions for what it cannot express
        raise RequestError(
            400, f"the response_format schema cannot be turned into a grammar: {exc}", param="response_format"
        ) from exc
    return LlamaGrammar.from_string(gbnf, verbose=False), f"{kind}+schema"


def number(request: dict[str, Any], name: str, default: float) -> float:
    value = request.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RequestError(400, f"{name} must be a number", param=name)
    return float(value)


def stop_strings(request: dict[str, Any]) -> list[str]:
    stop = request.get("stop")
    if stop is None:
        return []
    if isinstance(stop, str):
        return [stop] if stop else []
    if isinstance(stop, list) and all(isinstance(s, str) for s in stop):
        return [s for s in stop if s]
    raise RequestError(400, "stop must be a string or a list of strings", param="stop")


# ---- generation -------------------------------------------------------------------------------------------


@dataclass
class Job:
    """One completion to run, and, once it ran, what it produced."""

    prompt: list[int]
    max_tokens: int
    stops: list[str]
    grammar: LlamaGrammar | None
    temperature: float
    top_p: float
    seed: int
    frequency_penalty: float
    presence_penalty: float
    reuse_prefix: bool = False  # an agent turn under --agent-prefix-reuse: keep the previous turn's KV cache
    completion_tokens: int = 0
    finish_reason: str = "length"
    text: list[str] = field(default_factory=list)


class Engine:
    """The loaded model: renders prompts, and generates one job at a time from an empty KV cache."""

    def __init__(self, model: Path, *, ctx: int, threads: int, alias: str | None) -> None:
        self.llm = Llama(
            model_path=str(model), n_ctx=ctx, n_threads=threads, n_threads_batch=threads, verbose=False
        )
        self.ctx = ctx
        self.alias = alias or str(self.llm.metadata.get("general.name") or model.stem)
        self.lock = threading.Lock()
        template = self.llm.metadata.get("tokenizer.chat_template")
        if not template:
            raise SystemExit(f"{model} carries no tokenizer.chat_template: not a chat model")
        self.bos = self._special_text(self.llm.token_bos())
        eos = self._special_text(self.llm.token_eos())
        self.formatter = Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=self.bos)
        # Where an answer ends: every end-of-generation token the vocabulary marks (SmolLM2 has three:
        # <|endoftext|>, <|im_end|> and <reponame>), as llama.cpp's own server ends, and any template stop
        # that is one token of its own. Once a grammar is complete it allows end-of-generation tokens only;
        # one the server did not take for an end printed nothing and was sampled again up to the output cap.
        vocab = llama_cpp.llama_model_get_vocab(self.llm.model)
        self.end_tokens = {self.llm.token_eos()}
        self.end_tokens.update(t for t in range(self.llm.n_vocab()) if llama_cpp.llama_vocab_is_eog(vocab, t))
        for text in (eos, "<|im_end|>", "<|eot_id|>", "<end_of_turn>"):
            ids = self.llm.tokenize(text.encode(), add_bos=False, special=True) if text else []
            if len(ids) == 1:
                self.end_tokens.add(ids[0])

    def _special_text(self, token: int) -> str:
        if token < 0:
            return ""
        return bytes(self.llm.detokenize([token], special=True)).decode("utf-8", errors="ignore")

    def prompt_tokens(self, turns: list[dict[str, str]]) -> list[int]:
        try:
            prompt = str(self.formatter(messages=turns).prompt)
        except Exception as exc:  # a template that rejects this conversation (e.g. roles out of order)
            raise RequestError(
                400, f"the chat template refused these messages: {exc}", param="messages"
            ) from exc
        add_bos = not (self.bos and prompt.startswith(self.bos))
        return list(self.llm.tokenize(prompt.encode(), add_bos=add_bos, special=True))

    def run(self, job: Job) -> Generator[str, None, None]:
        """Text pieces as they are decoded; ``job`` holds the token count and finish reason at the end.

        The caller holds :attr:`lock`. Closing the iterator early stops generating at once."""
        if not job.reuse_prefix:
            self.llm.reset()  # an empty KV cache: nothing of the previous request shapes this answer
        # else llama.cpp evaluates only what follows the longest prefix it still holds
        self.llm.set_seed(job.seed)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        longest_stop = max((len(s) for s in job.stops), default=0)
        held = ""  # decoded text not sent yet: it may be the start of a stop string
        tokens = self.llm.generate(
            job.prompt,
            temp=job.temperature,
            top_p=job.top_p,
            frequency_penalty=job.frequency_penalty,
            presence_penalty=job.presence_penalty,
            grammar=job.grammar,
            reset=True,
        )
        try:
            for token in tokens:
                if token in self.end_tokens:
                    job.finish_reason = "stop"
                    break
                job.completion_tokens += 1
                held += decoder.decode(bytes(self.llm.detokenize([token])))
                cut = min((at for at in (held.find(s) for s in job.stops) if at >= 0), default=-1)
                if cut >= 0:
                    held = held[:cut]
                    job.finish_reason = "stop"
                    break
                ready = len(held) - (longest_stop - 1 if longest_stop else 0)
                if ready > 0:
                    job.text.append(held[:ready])
                    yield held[:ready]
                    held = held[ready:]
                if job.completion_tokens >= job.max_tokens:
                    job.finish_reason = "length"
                    break
        finally:
            tokens.close()
        held += decoder.decode(b"", final=True)
        if held:
            job.text.append(held)
            yield held


# ---- HTTP -------------------------------------------------------------------------------------------------


class RequestLog:
    """One JSON line per chat request, appended under a lock (``--log``)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.lock = threading.Lock()

    def write(self, record: dict[str, Any]) -> None:
        if self.path is None:
            return
        line = json.dumps(record, ensure_ascii=False) + "\n"
        with self.lock, self.path.open("a", encoding="utf-8") as out:
            out.write(line)


@dataclass(frozen=True)
class Settings:
    max_tokens: int
    temperature: float
    seed: int
    agent_max_tokens: int | None = None  # the cap of a request carrying ``tools`` (an agent's turn)
    agent_prefix_reuse: bool = False


class ChatServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], engine: Engine, settings: Settings, log: RequestLog) -> None:
        super().__init__(address, Handler)
        self.engine = engine
        self.settings = settings
        self.log = log
        self.started = int(time.time())


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ChatServer

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the request log (``--log``) is the record."""

    # -- plumbing --
    def _send_json(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _event(self, body: dict[str, Any] | str) -> None:
        text = body if isinstance(body, str) else json.dumps(body)
        try:
            self.wfile.write(f"data: {text}\n\n".encode())
            self.wfile.flush()
        except OSError as exc:  # BrokenPipeError, ConnectionResetError
            raise ClientGone from exc

    def _client_gone(self) -> bool:
        """True when the peer closed its side: readable with nothing left to read (requests are never
        pipelined here, so a readable socket mid-answer means EOF or a reset)."""
        conn = self.connection
        try:
            readable, _, _ = select.select([conn], [], [], 0)
            return bool(readable) and conn.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    # -- routes --
    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        if path in MODEL_ROUTES:
            engine = self.server.engine
            model = {
                "id": engine.alias,
                "object": "model",
                "created": self.server.started,
                "owned_by": "local",
            }
            self._send_json(200, {"object": "list", "data": [model]})
        elif path == "/health":
            self._send_json(200, {"status": "ok", "model": self.server.engine.alias})
        else:
            self._send_json(404, RequestError(404, f"no route GET {path}").body())

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        started = time.monotonic()
        record: dict[str, Any] = {"at": round(time.time(), 3), "path": path}
        try:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if path not in CHAT_ROUTES:
                raise RequestError(404, f"no route POST {path}")
            try:
                parsed = json.loads(raw or b"{}")
            except ValueError as exc:
                raise RequestError(400, f"the body is not JSON: {exc}") from exc
            if not isinstance(parsed, dict):
                raise RequestError(400, "the body must be a JSON object")
            record["request"] = parsed
            self._complete(parsed, record)
        except RequestError as exc:
            record.update(status=exc.status, error=str(exc), code=exc.code)
            self._send_json(exc.status, exc.body())
        except ClientGone:
            record.update(status=200, clientGone=True)
            self.close_connection = True
        except Exception as exc:  # a failure inside llama.cpp: a 500 when no stream has begun
            failure = RequestError(500, f"{type(exc).__name__}: {exc}")
            record.update(status=500, error=str(failure))
            self.close_connection = True
            if not record.get("stream"):
                with contextlib.suppress(OSError):  # the client may be gone too
                    self._send_json(500, failure.body())
        finally:
            record["seconds"] = round(time.monotonic() - started, 3)
            self.server.log.write(record)

    def _complete(self, request: dict[str, Any], record: dict[str, Any]) -> None:
        engine, settings = self.server.engine, self.server.settings
        if request.get("n") not in (None, 1):
            raise RequestError(400, "only n=1 is supported", param="n")
        prompt = engine.prompt_tokens(chat_turns(request.get("messages")))
        grammar, shape = grammar_for(request)
        record["responseFormat"] = shape
        room = engine.ctx - len(prompt)
        if room <= 0:
            raise RequestError(
                400,
                f"This model's maximum context length is {engine.ctx} tokens. However, your messages "
                f"resulted in {len(prompt)} tokens. Please reduce the length of the messages.",
                code="context_length_exceeded",
                param="messages",
            )
        asked = request.get("max_completion_tokens") or request.get("max_tokens") or settings.max_tokens
        if isinstance(asked, bool) or not isinstance(asked, int) or asked < 1:
            raise RequestError(400, "max_tokens must be a positive integer", param="max_tokens")
        seed = request.get("seed", settings.seed)
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise RequestError(400, "seed must be an integer", param="seed")
        agent_turn = bool(request.get("tools"))
        cap = (
            min(settings.max_tokens, settings.agent_max_tokens or settings.max_tokens) if agent_turn else None
        )
        job = Job(
            prompt=prompt,
            max_tokens=min(asked, cap or settings.max_tokens, room),
            reuse_prefix=agent_turn and settings.agent_prefix_reuse,
            stops=stop_strings(request),
            grammar=grammar,
            temperature=number(request, "temperature", settings.temperature),
            top_p=number(request, "top_p", 1.0),
            seed=seed & 0xFFFFFFFF,
            frequency_penalty=number(request, "frequency_penalty", 0.0),
            presence_penalty=number(request, "presence_penalty", 0.0),
        )
        options = request.get("stream_options")
        with_usage = isinstance(options, dict) and bool(options.get("include_usage"))
        ident, created = f"chatcmpl-{uuid.uuid4().hex[:24]}", int(time.time())
        waiting = time.monotonic()
        with engine.lock:
            record["queuedSeconds"] = round(time.monotonic() - waiting, 3)
            if request.get("stream"):
                self._stream(job, ident, created, with_usage, record)
            else:
                self._whole(job, ident, created, record)

    def _usage(self, job: Job) -> dict[str, int]:
        prompt = len(job.prompt)
        return {
            "prompt_tokens": prompt,
            "completion_tokens": job.completion_tokens,
            "total_tokens": prompt + job.completion_tokens,
        }

    def _finish(self, job: Job, record: dict[str, Any]) -> None:
        record.update(status=200, finish=job.finish_reason, usage=self._usage(job), reply="".join(job.text))

    def _whole(self, job: Job, ident: str, created: int, record: dict[str, Any]) -> None:
        with contextlib.closing(self.server.engine.run(job)) as pieces:
            for n, _ in enumerate(pieces):
                if n % 16 == 15 and self._client_gone():
                    record.update(usage=self._usage(job), reply="".join(job.text))
                    raise ClientGone
        self._finish(job, record)
        message = {"role": "assistant", "content": "".join(job.text)}
        choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": job.finish_reason}
        body = {
            "id": ident,
            "object": "chat.completion",
            "created": created,
            "model": self.server.engine.alias,
            "choices": [choice],
            "usage": self._usage(job),
        }
        self._send_json(200, body)

    def _stream(self, job: Job, ident: str, created: int, with_usage: bool, record: dict[str, Any]) -> None:
        alias = self.server.engine.alias

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            return {"id": ident, "object": "chat.completion.chunk", "created": created, "model": alias,
                    "choices": [choice]}  # fmt: skip

        record["stream"] = True  # from here on an error can only cut the stream short
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")  # the body ends when the connection does
        self.end_headers()
        self.close_connection = True
        try:
            self._event(chunk({"role": "assistant", "content": ""}))
            with contextlib.closing(self.server.engine.run(job)) as pieces:
                for piece in pieces:
                    self._event(chunk({"content": piece}))
                    if self._client_gone():
                        raise ClientGone
            self._event(chunk({}, job.finish_reason))
            if with_usage:
                tail = {"id": ident, "object": "chat.completion.chunk", "created": created, "model": alias,
                        "choices": [], "usage": self._usage(job)}  # fmt: skip
                self._event(tail)
            self._event("[DONE]")
        except ClientGone:
            record.update(usage=self._usage(job), reply="".join(job.text))
            raise
        self._finish(job, record)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", type=Path, required=True, help="the GGUF file")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0: any free port (the ready line names it)")
    parser.add_argument("--alias", default=None, help="the model id to serve (default: the GGUF's name)")
    parser.add_argument("--ctx", type=int, default=8192, help="context window in tokens")
    parser.add_argument("--threads", type=int, default=1, help="CPU threads (1 is fastest on a busy machine)")
    parser.add_argument(
        "--max-tokens", type=int, default=512, help="cap on the completion tokens of a request"
    )
    parser.add_argument(
        "--agent-max-tokens", type=int, default=None, help="cap on a request carrying tools (an agent turn)"
    )
    parser.add_argument(
        "--agent-prefix-reuse", action="store_true", help="keep the KV cache from one agent turn to the next"
    )
    parser.add_argument("--temperature", type=float, default=0.0, help="for requests that send none")
    parser.add_argument("--seed", type=int, default=0, help="for requests that send none")
    parser.add_argument("--log", type=Path, default=None, help="append one JSON line per chat request")
    args = parser.parse_args(argv)
    started = time.monotonic()
    engine = Engine(args.model, ctx=args.ctx, threads=args.threads, alias=args.alias)
    if args.agent_max_tokens is not None and args.agent_max_tokens < 1:
        parser.error("--agent-max-tokens must be a positive integer")
    settings = Settings(
        max_tokens=args.max_tokens,
        temperature=args.temperature,
        seed=args.seed,
        agent_max_tokens=args.agent_max_tokens,
        agent_prefix_reuse=args.agent_prefix_reuse,
    )
    server = ChatServer((args.host, args.port), engine, settings, RequestLog(args.log))
    port = server.server_address[1]
    loaded = time.monotonic() - started
    sys.stdout.write(f"listening on http://{args.host}:{port}/v1 model={engine.alias} load_s={loaded:.2f}\n")
    sys.stdout.flush()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
