"""Everything a turns-mode pass needs, prepared once from the Diff's inputs: pure, so it may run in a thread.

Turns mode and the Diff read the same pass (:class:`~longhaul_daemon.passes.prompting.planning.DiffInputs`):
the folded state, the span, the ledger after it, carried messages, remembered notes, the takeover. Turns mode
adds what the Digest shows (the file lists, the World) and what its gate checks (this span's modified files
and its errors still open). The whole span is one chunk for the labels turn (there is no chunking in turns
mode: a span whose Digest does not fit the model's window is the Diff's to cut).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from longhaul_daemon.offload import THREADS, Offload
from longhaul_daemon.passes.answers.events import ChunkContext
from longhaul_daemon.passes.prompting.planning import DiffInputs, offered_messages
from longhaul_daemon.passes.turns.digest import DigestInputs
from longhaul_daemon.passes.turns.gate import GateContext
from longhaul_daemon.passes.turns.label_gate import LabelsContext
from longhaul_daemon.passes.turns.show import ShowIndex
from longhaul_daemon.passes.turns.span_view import SpanView, span_view
from longhaul_daemon.state.model import World
from longhaul_daemon.transcript.messages import SpanMessage

__all__ = ["TurnsInputs", "prepare_turns"]


@dataclass(frozen=True)
class TurnsInputs:
    """The Digest's inputs, the span's view and ``show`` index, the gates' contexts, and the settings."""

    digest: DigestInputs
    view: SpanView
    show: ShowIndex
    labels: LabelsContext
    gate: GateContext
    span: tuple[SpanMessage, ...]
    retry_note_chars: int = 2000
    offload: Offload = THREADS


def prepare_turns(
    inputs: DiffInputs,
    *,
    world: World | None,
    read_files: Sequence[str],
    modified_files: Sequence[str],
    span_modified: Sequence[str],
) -> TurnsInputs:
    """Turns mode's view of one pass; ``read_files``/``modified_files`` are the lists after this span."""
    span = tuple(inputs.span)
    takeover = inputs.takeover
    earlier = takeover.earlier if takeover is not None else ()
    picked = dict(takeover.picked) if takeover is not None else {}
    offered = offered_messages(inputs.carried, span, earlier)
    commands, errors = tuple(inputs.commands), tuple(inputs.errors)
    ledger_ids = frozenset([c.id for c in commands] + [e.id for e in errors])
    chunk = ChunkContext(
        offered=offered,
        rules=tuple(inputs.state.rules),
        ledger_ids=ledger_ids,
        label_optional=frozenset(picked),
        retry_note_chars=inputs.retry_note_chars,
        picked=picked,
        unpicked_earlier=frozenset(m.user_id for m in earlier if m.user_id not in picked),  # FAIL-4
        commands=commands,
        errors=errors,
    )
    carried_ids = {m.user_id for m in inputs.carried}
    span_messages = [
        (m.user_id, m.text)
        for m in span
        if m.role == "user" and m.user_id is not None and m.user_id not in carried_ids
    ]
    this_span = inputs.state.span + 1
    span_errors = tuple(e.id for e in errors if e.open and e.span == this_span)
    view = span_view(span, commands, errors)
    return TurnsInputs(
        digest=DigestInputs(
            state=inputs.state,
            commands=commands,
            errors=errors,
            span_messages=span_messages,
            carried=tuple(inputs.carried),
            earlier=tuple(earlier),
            foreign_summary=takeover.summary if takeover is not None else None,
            remembered=tuple(inputs.remembered),
            focus=inputs.focus,
            read_files=tuple(read_files),
            modified_files=tuple(modified_files),
            span_modified=tuple(span_modified),
            world=world,
        ),
        view=view,
        show=ShowIndex.build({m.id: m.text for m in offered}, commands, errors, view),
        labels=LabelsContext(chunk, tuple(m.id for m in offered if m.id not in picked)),
        gate=GateContext(
            ledger_ids=ledger_ids,
            commands=commands,
            errors=errors,
            span_modified=tuple(span_modified),
            span_errors=span_errors,
        ),
        span=span,
        retry_note_chars=inputs.retry_note_chars,
        offload=inputs.offload,
    )
