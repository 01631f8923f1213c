"""Close a span: the one pure function that turns a pass's results into the next State (PASS-5, PASS-6).

Close runs only after Ledger, World, Fold (and later the Diff) have finished (PASS-2). It numbers the span
along the branch (PASS-16), hands out sequence numbers to what the pass accepted (PASS-5), appends exactly one
work-log line (PASS-6), takes in the ledger, the World and the file lists (LEDGER-9, LEDGER-11), and decides
which user messages the next pass must be offered again (FAIL-4, FAIL-10, FAIL-11, FAIL-12, PASS-17).

Two decisions live here. The carried messages' words are kept in the State
(``carriedMessages``, each cleaned and cut at :data:`MAX_CARRIED_CHARS`, at most :data:`MAX_CARRIED` of them),
because the summary is only ever the rendered State (PASS-7) and a narrative-less summary must still show the
user what they said; a message a verified chunk labeled is marked so and shows nothing, and all leave with
their ids once a pass closes whole. And the closed State is cleaned as a whole
(:func:`~longhaul_daemon.state.clean.clean_state`), so ``details.state`` never holds a control or
format character, whatever the ledger, git or the model handed in.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

from longhaul_daemon.defaults import MAX_CLOSED_ERRORS, MAX_STATE_COMMANDS
from longhaul_daemon.passes.answers.doubts import flag_carried_withdrawals, flag_withdrawn_carried
from longhaul_daemon.passes.answers.events import ChunkEvents
from longhaul_daemon.passes.answers.values import ValueCandidate
from longhaul_daemon.passes.close_events import apply_events
from longhaul_daemon.passes.ledger import LedgerResult
from longhaul_daemon.passes.prompting.prompt import OfferedMessage
from longhaul_daemon.state.clean import clean_state, clean_text
from longhaul_daemon.state.model import (
    STATE_FORMAT,
    CarriedMessage,
    ClosedAs,
    Command,
    ErrorEntry,
    Note,
    State,
    WorkLogLine,
    World,
)
from longhaul_daemon.state.sanitize import sanitize
from longhaul_daemon.transcript.messages import SpanMessage, user_text

__all__ = [
    "MAX_CARRIED",
    "MAX_CARRIED_CHARS",
    "MAX_CLOSED_ERRORS",
    "MAX_STATE_COMMANDS",
    "bounded_ledger",
    "close_span",
    "merge_file_lists",
    "user_texts",
]

MAX_CARRIED = 30  # FAIL-11: at most 30 user messages offered again, the newest ones
MAX_CARRIED_CHARS = 2000  # the summary shows this much of each carried message; recall has the rest

_U_ID = re.compile(r"u([1-9][0-9]*)")


def merge_file_lists(
    state: State, *, read: Iterable[str], written: Iterable[str], edited: Iterable[str]
) -> tuple[list[str], list[str]]:
    """LEDGER-11: modified = written ∪ edited over all spans; read = read minus modified; both sorted."""
    modified = set(state.modifiedFiles) | set(written) | set(edited)
    read_only = (set(state.readFiles) | set(read)) - modified
    return sorted(read_only), sorted(modified)


def bounded_ledger(
    commands: Sequence[Command], errors: Sequence[ErrorEntry]
) -> tuple[list[Command], list[ErrorEntry]]:
    """LEDGER-12 (our choice): what of the ledger the State carries from span to span.

    Every open error, the newest :data:`MAX_CLOSED_ERRORS` closed ones, the newest :data:`MAX_STATE_COMMANDS`
    commands and every command an error kept here names. The rest stays in the span record of the span that
    ran it (``longhaul_recall`` reads them there), and the counters keep ids unique (LEDGER-5). A State that
    kept the whole ledger grew with the session, and so did every pass's work and every compaction entry.
    """
    closed = [e for e in errors if not e.open]
    kept_closed = {id(e) for e in closed[-MAX_CLOSED_ERRORS:]}
    kept_errors = [e for e in errors if e.open or id(e) in kept_closed]
    named = {e.command for e in kept_errors if e.command is not None}
    newest = {id(c) for c in commands[-MAX_STATE_COMMANDS:]}
    return [c for c in commands if id(c) in newest or c.id in named], kept_errors


def _u_number(uid: str) -> int:
    match = _U_ID.fullmatch(uid)
    return int(match.group(1)) if match else 0


def _carry(previous: Sequence[str], span_ids: Sequence[str]) -> list[str]:
    """FAIL-11: the span's user messages join those already carried; the newest 30 by message order stay."""
    ids = sorted(set(previous) | set(span_ids), key=lambda uid: (_u_number(uid), uid))
    return ids[-MAX_CARRIED:]


def user_texts(span: Sequence[SpanMessage], carried: Sequence[OfferedMessage]) -> dict[str, str]:
    """The text of each user message Close may carry, by ``u<n>``: the span's and those carried into it."""
    texts = {m.user_id: m.text for m in carried}
    texts.update(
        {m.user_id: user_text(m.message) for m in span if m.user_id is not None and m.role == "user"}
    )
    return texts


def _carried_messages(
    held: Sequence[CarriedMessage],
    carried: Sequence[str],
    texts: Mapping[str, str],
    labeled: frozenset[str],
    unconfirmed: frozenset[str],
) -> list[CarriedMessage]:
    """The words of each carried message, in ``carried``'s order. A message labeled by a verified
    chunk, now or in an earlier pass, keeps no words (FAIL-12 carries it only for the next pass to see); one
    whose text Close was not given and the State does not hold has none to show either. ``unconfirmed``:
    the messages this pass held as rules whose words never verified (QUOTE-4, ours); a mark once given stays
    while the message is carried unlabeled."""
    known = {m.id: m for m in held}
    out: list[CarriedMessage] = []
    for uid in carried:
        was = known.get(uid)
        if uid in labeled or (was is not None and was.labeled):
            out.append(CarriedMessage(id=uid, text="", chars=0, labeled=True))
            continue
        marked = uid in unconfirmed or (was is not None and was.readAsRule == "unconfirmed")
        read_as: Literal["unconfirmed"] | None = "unconfirmed" if marked else None
        if uid in texts:
            clean = clean_text(texts[uid])
            out.append(
                CarriedMessage(id=uid, text=clean[:MAX_CARRIED_CHARS], chars=len(clean), readAsRule=read_as)
            )
        elif was is not None:
            out.append(was.model_copy(update={"readAsRule": read_as}))
    return out


def _disputed_messages(
    held: Sequence[CarriedMessage], events: Sequence[ChunkEvents], texts: Mapping[str, str]
) -> list[CarriedMessage]:
    """QUOTE-4, ours: the messages kept verbatim because one pass labeled them `rule` (their words never
    verified) and a later one labeled them otherwise: those kept before and those this pass's answers
    disputed, oldest first, the newest :data:`MAX_CARRIED`. One leaves when a later answer records a rule
    from it. Such a message is judged, so it is not offered again; only the summary shows it."""
    ruled = {label.rule.message for chunk in events for label in chunk.labels if label.rule is not None}
    kept = {m.id: m for m in held if m.readAsRule == "disputed" and m.id not in ruled}
    copies = {m.id: m for m in held if m.readAsRule != "disputed" and m.text}
    for uid in (uid for chunk in events for uid in sorted(chunk.disputed)):
        if uid in kept or uid in ruled:
            continue
        if uid in texts:
            clean = clean_text(texts[uid])
            kept[uid] = CarriedMessage(
                id=uid, text=clean[:MAX_CARRIED_CHARS], chars=len(clean), readAsRule="disputed"
            )
        elif uid in copies:
            kept[uid] = copies[uid].model_copy(update={"readAsRule": "disputed", "labeled": False})
    return sorted(kept.values(), key=lambda m: (_u_number(m.id), m.id))[-MAX_CARRIED:]


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _line_text(
    closed_as: ClosedAs, reason: str | None, narrative: str | None, ledger: LedgerResult, carried: int
) -> str:
    recorded = (
        f"{_plural(len(ledger.new_commands), 'command')} and {_plural(len(ledger.new_errors), 'error')}"
    )
    if closed_as == "empty":
        return f"The span was empty: no messages to summarize; {recorded} recorded, World updated."
    if closed_as == "narrative-less":
        return (
            f"Closed narrative-less ({reason or 'unknown'}): {recorded} recorded and the World updated; "
            f"{_plural(carried, 'user message')} carried to the next pass."
        )
    text = sanitize(narrative or "") or "(the narrative held no printable text)"
    if closed_as == "partial":
        text = f"{text} ({_plural(carried, 'user message')} got no usable label; carried to the next pass)"
    if closed_as == "chunk-missing":
        text = f"{text} (a chunk never verified; {_plural(carried, 'user message')} carried to the next pass)"
    return text.strip()


def close_span(
    state: State,
    *,
    ledger: LedgerResult,
    world: World,
    user_ids: Sequence[str],
    read_files: Sequence[str],
    modified_files: Sequence[str],
    closed_as: ClosedAs,
    reason: str | None,
    pass_id: str,
    remembered: Sequence[Note] = (),
    narrative: str | None = None,
    events: Sequence[ChunkEvents] = (),
    texts: Mapping[str, str] | None = None,
    held: Sequence[str] = (),
    lookups: Sequence[ValueCandidate] = (),
) -> State:
    """The State after this span closed; ``state`` (the folded one) is left untouched.

    ``user_ids`` are the span's user-message ids (``u<n>``) in message order; ``read_files`` and
    ``modified_files`` are already merged with :func:`merge_file_lists`. A ``whole`` or ``chunk-missing``
    close needs the Diff's ``narrative``; a ``narrative-less`` one needs a ``reason`` code (FAIL-10).
    ``events`` are the verified chunks' accepted events (:mod:`longhaul_daemon.passes.close_events`), numbered
    after the remembered notes; a narrative-less or empty close takes none, since no chunk verified (FAIL-10).
    ``texts`` maps ``u<n>`` to the message's text (:func:`user_texts`), for the carried messages' words.
    ``held``: a ``partial`` close's messages that no verified answer labeled (FAIL-4, ours), the only ones it
    carries: every other message up to here was judged.
    ``lookups``: the values the user's own short commands printed (ours,
    :mod:`~longhaul_daemon.passes.answers.lookups`), found and checked by code like the ledger, so recorded
    in every close, a narrative-less one included: no model call stands behind them.
    """
    if closed_as in ("whole", "partial", "chunk-missing") and not narrative:
        raise ValueError(f"a {closed_as} close needs a narrative line")
    if closed_as == "narrative-less" and not reason:
        raise ValueError("a narrative-less close needs a reason code")
    if (closed_as == "partial") != bool(held):
        raise ValueError("a partial close, and only a partial one, holds back unlabeled messages")
    if closed_as in ("narrative-less", "empty") and events:
        raise ValueError(f"a {closed_as} close takes no Diff events")
    # A shallow copy: every list below is replaced, never changed in place, and the models in it are shared,
    # not copied (nothing changes a model once it is in a State), so a long ledger costs nothing to carry.
    new = state.model_copy(update={"notes": list(state.notes), "workLog": list(state.workLog)})
    new.stateFormat = STATE_FORMAT
    new.span = state.span + 1  # PASS-16: one number per Longhaul compaction along the branch

    # LEDGER-5, LEDGER-6, LEDGER-9: the ledger's merged lists replace the carried ones, whatever the Diff did;
    # LEDGER-12: bounded, so a long session's State does not grow with it.
    new.commands, new.errors = bounded_ledger(ledger.commands, ledger.errors)
    new.nextCommand = max(state.nextCommand, ledger.next_command)
    new.nextError = max(state.nextError, ledger.next_error)
    new.readFiles = sorted(set(read_files) - set(modified_files))
    new.modifiedFiles = sorted(set(modified_files))
    new.world = world  # PASS-6, WORLD-8: the newest World, also kept in the span record

    # PASS-5: what this pass accepted is numbered after the highest number already held, in a fixed order.
    for note in remembered:
        new.seq += 1
        new.notes.append(Note(text=note.text, seq=new.seq, entryId=note.entryId, kind=note.kind))
    found = (ChunkEvents(values=tuple(lookups)),) if lookups else ()
    new = apply_events(new, (*events, *found), span=new.span)

    if closed_as == "whole":
        new.carried = []  # every message up to here was judged (FAIL-11: no further back than a whole span)
        new.lastWholeSpan = new.span
    elif closed_as == "partial":
        new.carried = _carry((), held)  # FAIL-4, ours: a carried message labeled now is judged and leaves
    elif closed_as in ("narrative-less", "chunk-missing"):
        new.carried = _carry(state.carried, user_ids)  # FAIL-11, FAIL-12
    # an empty span has no messages to carry and judged nothing: carried stays as it was (PASS-17)
    labeled = frozenset(uid for chunk in events for uid in chunk.judged)
    unconfirmed = frozenset(uid for chunk in events for uid in chunk.unconfirmed)
    disputed = _disputed_messages(state.carriedMessages, events, texts or {})
    kept_ids = {m.id for m in disputed}
    carried = _carried_messages(
        [m for m in state.carriedMessages if m.readAsRule != "disputed"],
        new.carried,
        texts or {},
        labeled,
        unconfirmed,
    )
    new.carriedMessages = [*disputed, *(m for m in carried if m.id not in kept_ids)]
    if closed_as in ("partial", "narrative-less", "chunk-missing"):  # no question asked about a carried one
        unjudged = {
            uid: (texts or {})[uid] for uid in new.carried if uid in (texts or {}) and uid not in labeled
        }
        new.rules = flag_carried_withdrawals(new.rules, unjudged)
    # ours: a carried or kept message a later one withdraws shows the user's withdrawing words under it
    new.carriedMessages = flag_withdrawn_carried(new.carriedMessages, texts or {})

    new.workLog.append(
        WorkLogLine(
            span=new.span,
            closedAs=closed_as,
            text=_line_text(closed_as, reason, narrative, ledger, len(new.carried)),
            reason=reason,
            passId=pass_id,
        )
    )
    return clean_state(new)
