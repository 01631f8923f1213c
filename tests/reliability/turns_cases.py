"""The hostile turns-mode conversations the reliability runs hold: the spans, the model's parts, the cases.

Each :class:`Case` is a span (one tool output of 437 KB in 16,000 numbered lines, four of 47 KB, or a small
span) and a :data:`~turns_model.Behaviour` the model plays, with how the span must close. The model plays
straight with ``show`` calls, or crafts calls of every kind, loops on ``show``, echoes the key it was sent
(then, as a summarizer, refuses with a 401), sends a 5 MB argument or 300 calls, answers 429 asking for an
hour, hangs or never ends a stream, fails, or writes garbage. :mod:`fuzz_turns` runs them.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from passes.pi_branch import Session
from turns_model import Ask, Behaviour, Reply, good_answer

__all__ = ["CASES", "SESSION_KEY", "SUMMARIZER_KEY", "Case", "span_of"]

SESSION_KEY = "sk-turns-Q7w2Er9Ty4Ui8Op3As6Dk"
SUMMARIZER_KEY = "sk-turns-Hh3Jj8Gg2Ff6Dd1SaX0z"
BIG_LINES = 16_000  # about 430 KB of output


def big_output(lines: int) -> str:
    """Numbered log lines, about 27 characters each."""
    return "".join(f"{n:05d} GET /api/{n} 0.{n % 1000:03d}s\n" for n in range(1, lines + 1))


def span_of(root: Path, shape: str) -> Session:
    """The span of a case's ``shape``: ``big``, ``four`` or ``small``."""
    s = Session(root)
    s.user("Never add new dependencies without asking me first.")
    if shape == "big":
        s.bash("cat access.log", big_output(BIG_LINES))
        s.user("Line 12000 took 0.000s; look at 00042 too.")
    elif shape == "four":
        for part in range(4):
            s.bash(f"cat part{part}.log", big_output(1_800))
            s.user(f"Part {part}: 0.0{part}5s is slow.")
    s.bash("pytest -q", "1 failed", code=1)
    s.user("Keep going.")
    return s


# --- behaviours: what the model does, given what a request asks ---------------------------------------------


def _calls(*calls: tuple[str, str, Any]) -> tuple[tuple[str, str, str], ...]:
    """Calls with their arguments as sent: JSON text for an object, the text itself for a string."""
    return tuple((i, n, a if isinstance(a, str) else json.dumps(a)) for i, n, a in calls)


def straight(ask: Ask, _rng: random.Random) -> Reply:
    return good_answer(ask)


def shows_big_call(ask: Ask, _rng: random.Random) -> Reply:
    """Played straight, but the first four sections each open with four ``show`` calls of the big call:
    sixteen in all."""
    if (
        ask.tools_allowed
        and not ask.after_tools
        and ask.section in ("narrative", "objective", "labels", "decisions")
    ):
        return Reply(calls=_calls(*((f"c{ask.number}{n}", "show", {"ref": "call_1"}) for n in range(4))))
    return good_answer(ask)


CRAFTED_REFS = ("u1", "C1", "E1", "call_1", "../../etc/passwd", "\u0421" + "1", "u1\u202e", "x" * 5000, "")


def crafted(ask: Ask, rng: random.Random) -> Reply:
    """Calls of every odd kind before each answer: refs that do and do not exist, arguments that are not an
    object or not JSON, tools that do not exist, ids empty or long."""
    if not ask.tools_allowed or ask.after_tools:
        return good_answer(ask)
    odd = [
        (rng.choice(("", "id\u202e", "i" * 300)), "show", {"ref": rng.choice(CRAFTED_REFS)}),
        (f"b{ask.number}", rng.choice(("bash", "rm -rf /", "show\u200b", "")), {"command": "ls"}),
        (f"c{ask.number}", "show", rng.choice(("[1, 2]", "{", "null", '{"ref": 7}'))),
    ]
    return Reply(text=rng.choice(("", "Let me look.", "{")), calls=_calls(*odd))


def show_loop(ask: Ask, _rng: random.Random) -> Reply:
    return Reply(calls=_calls((f"c{ask.number}", "show", {"ref": "u1"})))


def key_echo(ask: Ask, _rng: random.Random) -> Reply:
    """Whichever route is asked echoes the key it was sent with into ids, names and arguments; the
    summarizer then refuses with a 401 quoting it, so the pass moves to the session model."""
    if ask.key == SUMMARIZER_KEY and ask.after_tools:
        body = json.dumps(
            {"error": {"message": f"Incorrect API key provided: {ask.key}", "code": "invalid_key"}}
        )
        return Reply(status=401, error_body=body)
    if ask.tools_allowed and not ask.after_tools:
        return Reply(
            text=ask.key, calls=_calls((ask.key, "show", {"ref": ask.key}), (f"x{ask.key}", ask.key, {}))
        )
    return good_answer(ask)


def huge_argument(ask: Ask, _rng: random.Random) -> Reply:
    if ask.number == 1:
        return Reply(
            calls=_calls(("big", "show", {"ref": "u1", "pad": "\u202e" * 1_000_000 + "x" * 4_000_000}))
        )
    return good_answer(ask)


def many_calls(ask: Ask, _rng: random.Random) -> Reply:
    if ask.number == 1:
        return Reply(calls=_calls(*((f"c{n}", "show", {"ref": f"u{n % 4 + 1}"}) for n in range(300))))
    return good_answer(ask)


def rate_limited(ask: Ask, _rng: random.Random) -> Reply:
    body = json.dumps({"error": {"type": "rate_limit_error", "message": "come back later"}})
    return Reply(status=429, error_body=body, headers=(("retry-after", "3600"),))


def hangs(ask: Ask, _rng: random.Random) -> Reply:
    return Reply(hang=True)


def endless(ask: Ask, _rng: random.Random) -> Reply:
    return Reply(endless=True)


def errors(ask: Ask, rng: random.Random) -> Reply:
    if rng.random() < 0.5:
        return Reply(status=rng.choice((400, 404, 422)), error_body='{"error": {"message": "no"}}')
    return good_answer(ask)


def garbage(ask: Ask, rng: random.Random) -> Reply:
    return Reply(text=rng.choice(("not json \u202e", "{" * 500, '{"narrative": 5}', "```json\n[]\n```")))


@dataclass(frozen=True)
class Case:
    """One conversation: the span's shape, the model's behaviour, and how the span must close (a close
    kind and the reasons it may give, None for a whole close; None: any close)."""

    name: str
    shape: str
    behaviour: Behaviour
    closes: tuple[str, frozenset[str | None]] | None
    summarizer: bool = False


WHOLE: tuple[str, frozenset[str | None]] = ("whole", frozenset({None}))


def narrative_less(*reasons: str) -> tuple[str, frozenset[str | None]]:
    return "narrative-less", frozenset(reasons)


CASES: tuple[Case, ...] = (
    Case("straight-big", "big", shows_big_call, WHOLE),
    Case("straight-four", "four", straight, WHOLE),
    Case("crafted-calls", "small", crafted, WHOLE),
    Case("show-loop", "small", show_loop, narrative_less("tool-loop")),
    Case("key-echo", "small", key_echo, WHOLE, summarizer=True),
    Case("huge-argument", "small", huge_argument, WHOLE),
    Case("many-calls", "small", many_calls, WHOLE),
    Case("rate-limited", "small", rate_limited, narrative_less("rate-limited")),
    Case("hanging-stream", "small", hangs, narrative_less("turn-timeout")),
    # cut at the output cap (model-error), or, on a loaded machine, by the turn's time before the cap: both
    # end the pass on time with its record, which is what the fuzz asserts
    Case("endless-stream", "small", endless, narrative_less("model-error", "turn-timeout")),
    Case("errors", "small", errors, None),
    Case("garbage", "small", garbage, narrative_less("unparsable-answer", "nothing-kept")),
)
