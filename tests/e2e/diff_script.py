"""Scripted answers to the daemon's Diff calls, written against the prompt the daemon really sent.

The daemon asks the session model (the e2e model server) to label the span's user messages. A test installs a
:class:`DiffScript` on the server; each Diff request is parsed into a :class:`DiffCall` (the ``u<n>`` ids and
texts the prompt offers, the ids it asks labels for, the rules in force it shows, the call's kind and output
budget) and answered by the next scripted responder:

* :func:`answer` builds a JSON answer: labels for messages picked by a fragment of their text (``Lab``), every
  other asked message ``not a rule``; decisions, dead ends, values (``Val``, the turn picked by a fragment of
  the message that opened it), narrative, Now, objective; :data:`NULL` sends an explicit ``null``.
* :func:`answer_questions` replies to a question call (LIFT-12), taking the first or the last form each
  question offers.
* :func:`raw` sends any text (truncated JSON, prose), :func:`cut_at_limit` a reply stopped with
  ``finish_reason: "length"``, :func:`status` an HTTP error, :func:`slow` delays another responder.

A call's kind is ``first`` (also a raised-budget repeat: same messages, bigger ``max_tokens``), ``retry`` (its
last user message is the retry note), ``question`` (text after the prompt's "Label exactly these messages"
line), ``label`` (the label call, asking for the ``diff_label_reply`` schema) or ``words`` (the words call,
``diff_words_reply``; :func:`answer` replies to it with its labels' words). Every call the daemon makes
itself asks for its schema as structured output (issue 11): the answer's, the label call's or the question
call's. :attr:`DiffCall.schema` reads it from ``response_format``, and :meth:`DiffScript.unstructured` lists
the calls that did not carry one. Matching is on each message's whole text, read from the conversation block,
not the 240-character listing. Tests then read what a user sees (``standing_rules``, ``rule_line``,
``section``) and what the model was sent (``DiffScript.calls``). ``set_model_max_tokens``, ``add_model`` and
``write_longhaul_settings`` adjust the sandbox before pi starts.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from longhaul_daemon.evaluation.harness.callers import content_text
from longhaul_daemon.evaluation.harness.model_server import ModelServer
from longhaul_daemon.evaluation.harness.pi_rpc import PiRpc
from longhaul_daemon.evaluation.harness.replies import Reply, cut_off, delayed, http_error, text
from longhaul_daemon.evaluation.harness.sandbox import Sandbox
from longhaul_daemon.passes.prompting.message_text import LISTED_WHOLE

__all__ = [
    "NULL",
    "RETRY_NOTE_MARKER",
    "WORDS_NOTE_MARKER",
    "CallKind",
    "DiffCall",
    "DiffScript",
    "Lab",
    "Offered",
    "Responder",
    "ShownRule",
    "Val",
    "add_model",
    "answer",
    "answer_object",
    "answer_questions",
    "cut_at_limit",
    "lifts",
    "model_of",
    "notices",
    "question_answers",
    "raw",
    "rule_line",
    "rules_by_id",
    "section",
    "set_model_max_tokens",
    "slow",
    "standing_rules",
    "status",
    "write_longhaul_settings",
]

RETRY_NOTE_MARKER = "Your previous answer had these problems"
WORDS_NOTE_MARKER = "What was wrong:"  # opens the words call's note (FAIL-1, ours)
QUESTION_HEADER = "A few labels of your answer need one more look."  # opens the question call's questions
ANSWER_SCHEMA = "diff_answer"  # the response_format name of the Diff's answer
LABEL_SCHEMA = "diff_label_reply"  # and of the label call's (FAIL-1, ours)
QUESTION_SCHEMA = "diff_question_reply"  # and of the question call's (LIFT-14)
WORDS_SCHEMA = "diff_words_reply"  # and of the words call's (FAIL-1, QUOTE-4, ours)
_LABEL_LIST = re.compile(r"^Label exactly these messages: (.*)\.$", re.M)
_HEADER = re.compile(r"^--- (u\d+) \((\d+) characters[^)\n]*\) [0-9a-f]+ ---$", re.M)
_USER_BLOCK = re.compile(r"^\[User (u\d+)\]: ", re.M)
_QUESTION = re.compile(r"^- (u\d+) is labeled `")
_STATE_RULE = re.compile(r"^- ([Ru]\d+) \(given by (u\d+)\): (.*)$", re.M)  # u<n>: new in an earlier chunk

CallKind = Literal["first", "retry", "question", "label", "words"]


class _Null:
    """Marker for an explicit JSON ``null`` in a scripted answer (DIFF-15)."""

    def __repr__(self) -> str:
        return "NULL"


NULL = _Null()


@dataclass(frozen=True)
class Offered:
    """A user message the prompt lists for labeling: id, the length it states, the text as listed (maybe cut
    with "…"), and its whole text (from the conversation block, or the listing when carried)."""

    id: str
    length: int
    shown: str
    carried: bool
    text: str


@dataclass(frozen=True)
class ShownRule:
    """A rule in force as the prompt's state block shows it."""

    id: str
    message: str
    words: str


@dataclass(frozen=True)
class DiffCall:
    """One Diff request of the daemon, as the model reads it."""

    n: int  # 1-based among the daemon's calls in this test
    body: dict[str, Any]
    kind: CallKind
    prompt: str  # the first user message: state, messages, conversation
    last_user: str  # the last user message (the retry note, or the prompt with a question block)
    offered: tuple[Offered, ...]
    asked: tuple[str, ...]  # from "Label exactly these messages: ..."
    rules: tuple[ShownRule, ...]

    @property
    def schema(self) -> dict[str, Any] | None:
        """The JSON Schema ``response_format`` asks the reply to follow, when it is one of the Diff's own: the
        answer's, the label call's or the question call's."""
        spec = _schema_spec(self.body)
        if (
            spec.get("name") not in (ANSWER_SCHEMA, LABEL_SCHEMA, QUESTION_SCHEMA)
            or spec.get("strict") is not True
        ):
            return None
        schema = spec.get("schema")
        return schema if isinstance(schema, dict) else None

    @property
    def max_tokens(self) -> int | None:
        for key in ("max_completion_tokens", "max_tokens"):
            value = self.body.get(key)
            if isinstance(value, int):
                return value
        return None

    def ids_with(self, fragment: str) -> list[str]:
        """Ids of offered messages whose whole text holds ``fragment``, oldest first."""
        return [m.id for m in self.offered if fragment in m.text]

    def id_of(self, fragment: str) -> str | None:
        """The newest offered message holding ``fragment`` (None when this call does not offer one)."""
        found = self.ids_with(fragment)
        return found[-1] if found else None

    def message(self, user_id: str) -> Offered:
        for m in self.offered:
            if m.id == user_id:
                return m
        raise KeyError(user_id)

    def rule_ref(self, fragment: str) -> str | None:
        """How a model names the rule holding ``fragment``: its ``R<n>`` when in force, else the ``u<n>`` of
        the offered message that states it (a rule new in this span, LABEL-16)."""
        for rule in self.rules:
            if fragment in rule.words:
                return rule.id
        return self.id_of(fragment)


def _data_block(prompt: str, name: str) -> str | None:
    match = re.search(
        rf"^=== BEGIN DATA {name} (\w+) ===\n(.*?)\n=== END DATA {name} \1 ===$", prompt, re.S | re.M
    )
    return match.group(2) if match else None


def _conversation_users(body: str | None) -> dict[str, str]:
    """``u<n>`` -> whole text of each ``[User u<n>]: ...`` block of the conversation."""
    if body is None:
        return {}
    found: dict[str, str] = {}
    for match in _USER_BLOCK.finditer(body):
        end = body.find("\n\n[", match.end())
        shown = body[match.end() : end if end >= 0 else len(body)]
        if shown != LISTED_WHOLE:  # named only: the label listing shows this one whole
            found[match.group(1)] = shown
    return found


def _offered_in(body: str | None, *, carried: bool, whole: dict[str, str]) -> list[Offered]:
    if body is None:
        return []
    headers = list(_HEADER.finditer(body))
    found: list[Offered] = []
    for at, header in enumerate(headers):
        end = headers[at + 1].start() - 1 if at + 1 < len(headers) else len(body)
        shown = body[header.end() + 1 : max(header.end() + 1, end)]
        uid = header.group(1)
        full = shown if carried else whole.get(uid, shown)
        found.append(Offered(uid, int(header.group(2)), shown, carried, full))
    return found


def _schema_spec(body: dict[str, Any]) -> dict[str, Any]:
    """The request's ``response_format.json_schema`` ({} when it asks for none)."""
    form = body.get("response_format")
    spec = form.get("json_schema") if isinstance(form, dict) and form.get("type") == "json_schema" else None
    return spec if isinstance(spec, dict) else {}


def parse_call(body: dict[str, Any], n: int) -> DiffCall:
    """Read a Diff request as a model would (the layout of ``longhaul_daemon.passes.prompting.prompt``)."""
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    users = [content_text(m.get("content")) for m in messages if m.get("role") == "user"]
    prompt = users[0] if users else ""
    last_user = users[-1] if users else ""
    kind: CallKind = "first"
    if _schema_spec(body).get("name") == LABEL_SCHEMA:
        kind = "label"  # FAIL-1, ours: the retry of an answer whose only defects were missing labels
    elif _schema_spec(body).get("name") == WORDS_SCHEMA:
        kind = "words"  # FAIL-1, ours: the retry of an answer whose only defects were a rule's words
    elif len(users) > 1 and RETRY_NOTE_MARKER in last_user:
        kind = "retry"
    elif QUESTION_HEADER in prompt:
        kind = "question"  # the question call: the asked messages whole, then the questions
    asked_match = list(_LABEL_LIST.finditer(prompt))
    asked: tuple[str, ...] = ()
    if asked_match:
        asked = tuple(re.findall(r"u\d+", asked_match[-1].group(1)))
    elif kind == "words":  # the words call lists only the messages whose words it asks for
        asked = tuple(o.id for o in _offered_in(_data_block(prompt, "messages"), carried=True, whole={}))
    state = _data_block(prompt, "state") or ""
    rules = tuple(ShownRule(m.group(1), m.group(2), m.group(3)) for m in _STATE_RULE.finditer(state))
    whole = _conversation_users(_data_block(prompt, "conversation"))
    offered = _offered_in(_data_block(prompt, "carried"), carried=True, whole=whole)
    offered += _offered_in(_data_block(prompt, "messages"), carried=False, whole=whole)
    return DiffCall(
        n=n,
        body=body,
        kind=kind,
        prompt=prompt,
        last_user=last_user,
        offered=tuple(offered),
        asked=asked,
        rules=rules,
    )


LabelFn = Callable[[DiffCall], str | None]
Responder = Callable[[DiffCall], Reply]


@dataclass(frozen=True)
class Lab:
    """A label for the offered message(s) whose shown text holds ``match``.

    ``label`` may be computed from the call (e.g. :func:`lifts`); returning None leaves the message to the
    default. ``words`` may be :data:`NULL`. ``newest_only`` labels only the newest holder."""

    match: str
    label: str | LabelFn = "rule"
    words: str | _Null | None = None
    newest_only: bool = True


@dataclass(frozen=True)
class Val:
    """A value for ``values``; ``turn``: a ``u<n>``, or a fragment of the message that opened the turn."""

    name: str
    value: str
    turn: str


def lifts(fragment: str, *, with_rule: bool = False) -> LabelFn:
    """``lifts <ref>`` (or ``rule and lifts <ref>``) naming the rule whose words hold ``fragment``."""

    def label(call: DiffCall) -> str | None:
        ref = call.rule_ref(fragment)
        if ref is None:
            return "rule" if with_rule else None
        return f"rule and lifts {ref}" if with_rule else f"lifts {ref}"

    return label


def _value_json(value: object) -> object:
    return None if isinstance(value, _Null) else value


def answer_object(
    call: DiffCall,
    labels: Sequence[Lab] = (),
    *,
    default: str | None = "not a rule",
    decisions: Sequence[dict[str, Any]] = (),
    dead_ends: Sequence[dict[str, Any]] = (),
    values: Sequence[Val] = (),
    narrative: str | _Null | None = "Scripted narrative line for this span.",
    now: str | _Null | None = "Scripted Now: carry on with the next step.",
    objective: str | _Null | None = None,
    null_lists: bool = False,
) -> dict[str, Any]:
    """The Diff answer object for ``call``. Messages no ``Lab`` picks get ``default`` (None: no label)."""
    chosen: dict[str, dict[str, Any]] = {}
    for lab in labels:
        ids = call.ids_with(lab.match)
        for user_id in ids[-1:] if lab.newest_only else ids:
            label = lab.label(call) if callable(lab.label) else lab.label
            if label is None:
                continue
            item: dict[str, Any] = {"msg": user_id, "label": label}
            if lab.words is not None:
                item["words"] = _value_json(lab.words)
            chosen[user_id] = item
    items: list[dict[str, Any]] = []
    for user_id in call.asked:
        if user_id in chosen:
            items.append(chosen.pop(user_id))
        elif default is not None:
            items.append({"msg": user_id, "label": default})
    items.extend(chosen.values())  # labels for ids not asked (LABEL-3), if a test wants them
    obj: dict[str, Any] = {"labels": items}
    obj["decisions"] = list(decisions) if decisions or not null_lists else None
    obj["deadEnds"] = list(dead_ends) if dead_ends or not null_lists else None
    if values:
        # A value whose turn this call does not offer is left out, as a model would not name it.
        turns = [(v, v.turn if re.fullmatch(r"u\d+", v.turn) else call.id_of(v.turn)) for v in values]
        obj["values"] = [{"name": v.name, "value": v.value, "turn": t} for v, t in turns if t is not None]
    elif null_lists:
        obj["values"] = None
    for key, value in (("narrative", narrative), ("now", now), ("objective", objective)):
        if value is not None:
            obj[key] = _value_json(value)
    return obj


def words_object(call: DiffCall, labels: Sequence[Lab] = ()) -> dict[str, Any]:
    """The words call's reply: each asked message's words from the ``Lab`` that picks it as a rule with
    words; ``null`` (no rule after all) for an asked message no such ``Lab`` picks, as :func:`answer`'s
    default `not a rule` would say."""
    found: dict[str, str | None] = dict.fromkeys(call.asked)
    for lab in labels:
        if isinstance(lab.words, str):
            for user_id in call.ids_with(lab.match):
                if user_id in found:
                    found[user_id] = lab.words
    return {"words": found}


def answer(labels: Sequence[Lab] = (), **options: Any) -> Responder:
    """A responder sending :func:`answer_object` as the reply text; to the words call, the words its
    ``Lab`` items give (:func:`words_object`), as a model asked only for them would send."""

    def respond(call: DiffCall) -> Reply:
        if call.kind == "words":
            return text(json.dumps(words_object(call, labels)))
        return text(json.dumps(answer_object(call, labels, **options)))

    return respond


def question_answers(call: DiffCall, *, accept: bool = True) -> dict[str, str]:
    """``u<n>`` -> the label a model gives to each question of a question call (LIFT-12): the first form the
    question offers when ``accept``, else the last one."""
    at = call.last_user.find(QUESTION_HEADER)
    block = call.last_user[at:] if at >= 0 else ""
    chosen: dict[str, str] = {}
    for line in block.splitlines():
        match = _QUESTION.match(line)
        if match is None:
            continue
        at = line.find("answer `")
        forms = re.findall(r"`([^`]+)`", line[at:]) if at >= 0 else []
        if forms:
            chosen[match.group(1)] = forms[0] if accept else forms[-1]
    return chosen


def answer_questions(*, accept: bool = True) -> Responder:
    """A reply to a question call: ``{"labels": [...]}`` with one label per question asked."""

    def respond(call: DiffCall) -> Reply:
        labels = [{"msg": m, "label": label} for m, label in question_answers(call, accept=accept).items()]
        return text(json.dumps({"labels": labels}))

    return respond


def raw(content: str) -> Responder:
    """A responder sending ``content`` as it is (e.g. truncated JSON)."""
    return lambda call: text(content)


def cut_at_limit(content: str = "") -> Responder:
    """A reply that stops with ``finish_reason: "length"`` holding ``content`` (nothing usable by default)."""
    return lambda call: cut_off(content)


def status(code: int, *, retry_after_ms: int | None = None, error_code: str | None = None) -> Responder:
    """An HTTP error status for the call (500, 429 with ``retry-after-ms``, ...)."""
    headers = {"retry-after-ms": str(retry_after_ms)} if retry_after_ms is not None else {}
    return lambda call: http_error(code, code=error_code, headers=headers)


def slow(seconds: float, then: Responder) -> Responder:
    """``then``'s reply, sent only after ``seconds``."""
    return lambda call: delayed(seconds, then(call))


@dataclass
class DiffScript:
    """Answers the daemon's calls in order: the n-th call gets ``steps[n-1]``, later ones ``then``.

    ``install`` hooks it into the model server; ``calls`` records every parsed call."""

    steps: Sequence[Responder] = ()
    then: Responder = field(default_factory=answer)
    calls: list[DiffCall] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def install(self, server: ModelServer) -> DiffScript:
        server.on_daemon_call(self)
        return self

    def __call__(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            call = parse_call(body, len(self.calls) + 1)
            self.calls.append(call)
            responder = self.steps[call.n - 1] if call.n <= len(self.steps) else self.then
        return responder(call)

    def kinds(self) -> list[CallKind]:
        with self._lock:
            return [c.kind for c in self.calls]

    def unstructured(self) -> list[DiffCall]:
        """Calls that did not ask for the answer schema (issue 11: the daemon's own calls always do)."""
        with self._lock:
            return [c for c in self.calls if c.schema is None or "labels" not in c.schema.get("required", ())]

    def since(self, start: int) -> list[DiffCall]:
        with self._lock:
            return list(self.calls[start:])


# ---- reading results --------------------------------------------------------------------------------------


def rules_by_id(state: dict[str, Any]) -> dict[str, dict[str, Any]]:
    rules = state.get("rules")
    assert isinstance(rules, list), f"details.state.rules is not a list: {rules!r}"
    return {str(r["id"]): r for r in rules if isinstance(r, dict)}


def standing_rules(state: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The rules in force (not lifted) in a compaction's ``details.state``, by id."""
    return {rid: r for rid, r in rules_by_id(state).items() if not r.get("lifted")}


def section(summary: str, title: str) -> str:
    """The body of ``## title`` in a summary ("" when the section is left out)."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=\n\n## |\n\n<|\Z)", summary, re.S | re.M)
    return match.group(1) if match else ""


def is_flagged(state: Mapping[str, Any], rule_id: str) -> bool:
    """Whether the state's rule ``rule_id`` is flagged possibly withdrawn (its summary line says so)."""
    return any(r.get("id") == rule_id and r.get("possiblyWithdrawnBy") for r in state.get("rules", []))


def rule_line(rule_id: str, words: str, message: str, *, flagged: bool = False) -> str:
    """How the summary lists a rule in force under ``## Standing rules`` (PASS-8 layout); a rule flagged
    possibly withdrawn says so on its own line too."""
    return f'- {rule_id} "{words}" ({message}{"; may be withdrawn, see below" if flagged else ""})'


def notices(pi: PiRpc, start: int = 0) -> list[str]:
    """The UI notices (``ctx.ui.notify``) pi reported over RPC since ``start``.

    The shim shows a compaction's notices after the compaction has ended, just before it appends the
    compaction's line; a ``get_state`` round trip first makes sure every line pi wrote before its answer has
    been read."""
    pi.get_state()
    return [
        str(e.get("message"))
        for e in pi.events(start)
        if e.get("type") == "extension_ui_request" and e.get("method") == "notify"
    ]


def set_model_max_tokens(sandbox: Sandbox, max_tokens: int) -> None:
    """Change the fake model's ``maxTokens`` in the sandbox's ``models.json`` (before pi starts)."""
    path: Path = sandbox.agent_dir / "models.json"
    config = json.loads(path.read_text())
    for provider in config["providers"].values():
        for model in provider["models"]:
            model["maxTokens"] = max_tokens
    path.write_text(json.dumps(config, indent=2))


def add_model(sandbox: Sandbox, model_id: str, *, max_tokens: int = 4096) -> str:
    """Add a second model to the sandbox's ``fake`` provider (same server); returns its ``provider/id``."""
    path: Path = sandbox.agent_dir / "models.json"
    config = json.loads(path.read_text())
    models = config["providers"]["fake"]["models"]
    models.append({**models[0], "id": model_id, "name": model_id, "maxTokens": max_tokens})
    path.write_text(json.dumps(config, indent=2))
    return f"fake/{model_id}"


def write_longhaul_settings(sandbox: Sandbox, **settings: Any) -> None:
    """Write ``longhaul.json`` in the sandbox's agent directory (CONFIG-5), e.g. ``summarizer="fake/x"``."""
    (sandbox.agent_dir / "longhaul.json").write_text(json.dumps(settings))


def model_of(call: DiffCall) -> str:
    """The model id a Diff request was sent to."""
    return str(call.body.get("model"))
