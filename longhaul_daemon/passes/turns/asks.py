"""What turns mode says to the model: the system prompt, each section's ask, and the repair turns' notes.

The labeling instructions are the Diff's own
(:data:`~longhaul_daemon.passes.prompting.instructions.INSTRUCTIONS`), so a model hears the same rules the
shared verifiers apply. They come with the labels turn rather than in the system prompt (and the evidence
rules with the decisions turn), since every call resends the system prompt and a small model reads best what
it was just told. Two changes: the label grammar is the one the labels turn offers (TURNS-4: ``rule``, ``lifts
R<n>``, ``not a rule``; ``rule and lifts`` still reads, for a new rule that replaces one), and nothing asks
for values (VALUE-7: the model names none in turns mode). Each ask names the object's keys and what goes in
each, the ids it may use and the checks the gate will run, and how to excuse an expectation check. Only the
labels turn shows an item, since a label's spelling is the part a small model gets wrong; no ask shows a
filled-in answer, because a small model copies an example's placeholders (``"..."``) as its own. A repair note
lists the gate's problems, whole lines only, within ``retryNoteChars`` (FAIL-3). Ids and file names in asks
come from the ledger and the transcript: they are cleaned before they are shown.
"""

from __future__ import annotations

from collections.abc import Sequence

from longhaul_daemon.passes.answers.schema import BOUNDS, Defect
from longhaul_daemon.passes.prompting.instructions import INSTRUCTIONS, LONG_MESSAGE
from longhaul_daemon.passes.prompting.message_text import clean
from longhaul_daemon.passes.prompting.retry_prompts import retry_note
from longhaul_daemon.passes.turns.gate import EXCUSE_CHARS, Problem
from longhaul_daemon.passes.turns.sections import SECTIONS, Section
from longhaul_daemon.passes.turns.show import SHOW_CAP

__all__ = [
    "DECISION_INSTRUCTIONS",
    "LABEL_INSTRUCTIONS",
    "SYSTEM_PROMPT",
    "TURNS_INSTRUCTIONS",
    "ask",
    "repair_note",
]

_LABEL_IDS = frozenset(
    {"LABEL-2", "LABEL-11", "LABEL-12", "LABEL-13", "LABEL-6", "LABEL-10", "LABEL-9", "LIFT-7", "LIFT-8"}
    | {"DIFF-11-user-words", "QUOTE-4"}
)
_DECISION_IDS = frozenset({"DIFF-14", "LEDGER-8-fixed"})
# LABEL-1 gives way to the labels turn's own grammar (TURNS-4); VALUE-1 is left out: no values in turns mode.
_DIFF = {rid: text for rid, text in INSTRUCTIONS if rid not in ("LABEL-1", "VALUE-1")}

# In the system prompt: what every turn needs.
TURNS_INSTRUCTIONS: tuple[tuple[str, str], ...] = (
    (
        "TURNS-2",
        "The conversation asks for one section of the state per turn, in this order: the narrative, the "
        "objective, a label for every listed user message, decisions and dead ends, and Now. Answer each "
        "turn with the one JSON object it asks for and nothing else.",
    ),
    (
        "TURNS-7",
        f"Before answering you may call the read-only tool show(ref), at most {SHOW_CAP} times a turn, to "
        "read a user message (u<n>), a command (C<n>), an error (E<n>) or a tool call by its id whole.",
    ),
    ("DIFF-9", _DIFF["DIFF-9"]),
    (
        "TURNS-9",
        "Code checks every answer. An answer that fails a check is asked for again, with the problems "
        "listed. A check the work cannot meet may be excused in `excuses` with one sentence of at most "
        f"{EXCUSE_CHARS} characters saying why.",
    ),
)
# With the labels turn: the Diff's labeling rules, under the turn's own grammar.
LABEL_INSTRUCTIONS: tuple[tuple[str, str], ...] = (
    (
        "TURNS-4",
        "A label is `rule`, `lifts R<n>` or `not a rule`. Several targets are written `lifts R1, u20`; a new "
        "rule that replaces one in force is `rule and lifts R<n>`. A u<n> target names a rule an earlier "
        "message of this list gave.",
    ),
    *((rid, text) for rid, text in _DIFF.items() if rid in _LABEL_IDS),
)
DECISION_INSTRUCTIONS: tuple[tuple[str, str], ...] = tuple(
    (rid, text) for rid, text in _DIFF.items() if rid in _DECISION_IDS
)

SYSTEM_PROMPT = (
    "You update the carried state of a coding session that is being compacted. The first turn carries a "
    "Digest of the span; read it, then answer the turns.\n\n"
    + "\n".join(f"- {text}" for _, text in TURNS_INSTRUCTIONS)
)


def _rules(instructions: Sequence[tuple[str, str]]) -> str:
    return "\n".join(f"- {text}" for _, text in instructions)


_LISTED = 40  # ids or files an ask names before counting the rest


def _listed(items: Sequence[str]) -> str:
    shown = [clean(item) for item in items[:_LISTED]]
    more = f" and {len(items) - _LISTED} more" if len(items) > _LISTED else ""
    return ", ".join(shown) + more


def _header(section: Section) -> str:
    return f"Turn {SECTIONS.index(section) + 1} of {len(SECTIONS)}, {section}:"


def ask(
    section: Section,
    *,
    span_modified: Sequence[str] = (),
    label_ids: Sequence[str] = (),
    picked: Sequence[str] = (),
    span_errors: Sequence[str] = (),
) -> str:
    """The user turn that asks for ``section``; the ids and files it names are the gate's."""
    head = _header(section)
    if section == "narrative":
        files = (
            f" Name every file this span modified ({_listed(span_modified)}) by its path or file name."
            if span_modified
            else ""
        )
        return (
            f"{head} one line, at most {BOUNDS['narrative']} characters, on what this span did.{files} "
            'Answer with one JSON object: "narrative", your line, and "excuses", a list that stays empty '
            'unless a check cannot be met; an excuse is {"check": "modified-files-named", "reason": ...} '
            "with a one-sentence reason."
        )
    if section == "objective":
        return (
            f"{head} the session's overall goal in at most {BOUNDS['objective']} characters. Answer with one "
            'JSON object: "objective", the goal as you would state it, or null when the objective in the '
            "state still holds."
        )
    if section == "labels":
        picks = (
            f" The picked earlier messages ({_listed(picked)}) take no label: code records them as rules."
            if picked
            else ""
        )
        return (
            f"{head} one label for each of these messages: {_listed(label_ids)}.{picks} For a message over "
            f"{LONG_MESSAGE} characters labeled rule, give `words`: the rule's exact words from it. Answer "
            'with one JSON object: "labels", a list with one item for each message, such as '
            '{"msg": "u1", "label": "rule", "words": null}. How to label:\n' + _rules(LABEL_INSTRUCTIONS)
        )
    if section == "decisions":
        errors = (
            f" These errors of the span are still open: {_listed(span_errors)}. Place each as a dead end's "
            "evidence or in openErrors, or name it in fixed when a later command shown with exit 0 fixed it."
            if span_errors
            else ""
        )
        return (
            f"{head} the decisions this span made (text, why, evidence) and its dead ends (what failed, "
            "with evidence), each evidence id a C<n> or E<n> of the ledger; at most "
            f"{BOUNDS['decisions']} of each.{errors} Answer with one JSON object of five lists, each empty "
            'when there is nothing for it: "decisions" ({"text", "why", "evidence"} each), "deadEnds" '
            '({"text", "evidence"} each), "openErrors" (E<n> ids), "fixed" ({"error": <E<n>>, "by": <C<n>>} '
            'each) and "excuses".\n' + _rules(DECISION_INSTRUCTIONS)
        )
    return (
        f"{head} Now: where the work stands and the next step, at most {BOUNDS['now']} characters. Answer "
        'with one JSON object: "now", your text, and "excuses", a list that stays empty unless a check '
        "cannot be met."
    )


def repair_note(section: Section, problems: Sequence[Problem], limit_chars: int) -> str:
    """A repair turn: the problems of the last answer, whole lines, within ``limit_chars`` (FAIL-3)."""
    excusable = any(p.kind == "expectation" for p in problems)
    excuse = ", or excuse a check you cannot meet in `excuses` with one sentence" if excusable else ""
    header = (
        f"Your {section} answer fails these checks. Send the whole {section} object again with them "
        f"fixed{excuse}:"
    )
    return retry_note([Defect(p.code, None, p.text) for p in problems], limit_chars, header)
