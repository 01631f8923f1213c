"""Verified Diff events enter the State only here, at Close, each with its own sequence number (PASS-5).

:func:`pending_rules` gives a later chunk the rules earlier chunks accepted, named by ``u<n>`` (DIFF-3,
LABEL-16). :func:`apply_events` numbers every chunk's events into a new State: labels in message order, each
rule before its own lifts, then decisions, dead ends and values. Decisions (proposals unless said otherwise):

- A rule given and lifted in one span gets its ``R<n>`` and its lift (LABEL-15); a lifted rule keeps
  ``liftedBy``, ``liftSeq`` and, for a replacement, ``replacedBy`` (LIFT-9, LABEL-14).
- FAIL-18: a repeat of a held rule or lift is dropped silently and takes no number.
- Ours: a decision or dead end repeating a held one (case, spacing, final stop ignored) only adds evidence.
- VALUE-8 merges values; the last chunk giving ``objective`` or ``now`` wins.
- A verified ``fixed`` claim closes its error, and a possible withdrawal flags its rule once every lift is
  applied; neither takes a number, since neither changes a rule's standing.
- Model text is cleaned (:mod:`longhaul_daemon.state.clean`) before it is compared, so a restatement
  differing only in a control character adds nothing; with nothing printable left it is not accepted.
"""

from __future__ import annotations

from collections.abc import Sequence

from longhaul_daemon.passes.answers.events import ChunkEvents, LiftEvent, PossibleWithdrawal
from longhaul_daemon.passes.answers.schema import BOUNDS
from longhaul_daemon.passes.answers.values import merge_values
from longhaul_daemon.state.clean import clean_item, clean_line, prose
from longhaul_daemon.state.model import Item, Rule, State, Value
from longhaul_daemon.state.sanitize import sanitize

__all__ = ["apply_events", "pending_rules"]


def _find(rules: Sequence[Rule], target: str) -> Rule | None:
    """The rule a target names: by id (``R<n>``, or a pending ``u<n>``), else the first its message gave."""
    by_id = next((r for r in rules if r.id == target), None)
    if by_id is not None or not target.startswith("u"):
        return by_id
    return next((r for r in rules if r.message == target), None)


def _held(rules: Sequence[Rule]) -> set[tuple[str, str]]:
    """The rules already held, by message and words: a new rule that repeats one adds nothing, and a set
    keeps a span of many rules from costing rules times rules."""
    return {(r.message, r.words) for r in rules}


def _lift(rules: Sequence[Rule], lift: LiftEvent, *, seq: int | None, replaced_by: str | None) -> bool:
    """Mark the target lifted; False when it names no rule or was lifted already (FAIL-18)."""
    rule = _find(rules, lift.target)
    if rule is None or rule.lifted:
        return False
    rule.lifted = True
    rule.liftedBy = lift.by
    rule.replacedBy = replaced_by
    rule.liftSeq = seq
    return True


def _flag(rules: Sequence[Rule], flag: PossibleWithdrawal) -> None:
    """A rule code reads as withdrawn but no lift confirmed stays in force, flagged with the user's words."""
    rule = _find(rules, flag.target)
    words = clean_line(flag.words)
    if rule is not None and not rule.lifted and words.strip():
        rule.possiblyWithdrawnBy = flag.by
        rule.withdrawalWords = words


def pending_rules(rules: Sequence[Rule], chunks: Sequence[ChunkEvents]) -> tuple[Rule, ...]:
    """DIFF-3: the state's rules plus the rules earlier chunks accepted, with those chunks' lifts applied.

    A pending rule's ``id`` is its message's ``u<n>`` until Close numbers it (LABEL-16); its ``seq`` and
    ``span`` are 0, for nothing from the pass has a number before Close (PASS-5). ``rules`` is not changed.
    """
    out = [rule.model_copy(deep=True) for rule in rules]
    held = _held(out)
    for chunk in chunks:
        for label in chunk.labels:
            if label.rule is not None and (label.rule.message, label.rule.words) not in held:
                held.add((label.rule.message, label.rule.words))
                out.append(
                    Rule(
                        id=label.rule.message,
                        words=label.rule.words,
                        message=label.rule.message,
                        seq=0,
                        span=0,
                        doubt=label.rule.doubt,
                    )
                )
            for lift in label.lifts:
                _lift(out, lift, seq=None, replaced_by=lift.replacing)  # pending: named by its u<n>
    return tuple(out)


def _replacing_id(rules: Sequence[Rule], made: dict[str, str], replacing: str | None) -> str | None:
    """The R<n> of the replacing rule: the one its message gave in this Close, else the first held."""
    if replacing is None:
        return None
    if replacing in made:
        return made[replacing]
    found = next((r for r in rules if r.message == replacing), None)
    return found.id if found is not None else None


def _text_key(text: str) -> str:
    """Two items say the same thing when they differ only in case, spacing or a final full stop."""
    return " ".join(text.casefold().split()).rstrip(".!")


def _add_item(items: list[Item], item: Item) -> bool:
    """Append ``item``, or fold it into the item it restates (their evidence joins; no new event).

    A model that restates last span's decision would otherwise grow the state by one item per compaction;
    growth must come from distinct content only. Returns whether ``item`` was added as a new event.
    """
    if not item.text:
        return False
    key = _text_key(item.text)
    held = next((old for old in items if _text_key(old.text) == key), None)
    if held is None:
        items.append(item)
        return True
    held.evidence = list(dict.fromkeys([*held.evidence, *item.evidence]))[: BOUNDS["evidence"]]
    return False


def apply_events(state: State, chunks: Sequence[ChunkEvents], *, span: int) -> State:
    """PASS-5: a new State holding ``chunks``' accepted events, numbered after ``state.seq``.

    ``span`` is the number of the span being closed, given to every new rule, item and value. ``state``
    is left untouched: only what this function changes is copied (the rules, which a lift marks, and the
    items, whose evidence a restatement joins), never the ledger, which a long session makes large.
    """
    new = state.model_copy(
        update={
            "rules": [rule.model_copy() for rule in state.rules],
            "decisions": [item.model_copy() for item in state.decisions],
            "deadEnds": [item.model_copy() for item in state.deadEnds],
        }
    )
    seq = new.seq
    made: dict[str, str] = {}  # message -> the R<n> its first new rule got in this Close
    held = _held(new.rules)
    for chunk in chunks:
        for label in chunk.labels:
            rule = label.rule
            if rule is not None and (rule.message, rule.words) not in held:
                held.add((rule.message, rule.words))
                seq += 1
                rule_id = f"R{new.nextRule}"
                new.nextRule += 1
                new.rules.append(
                    Rule(
                        id=rule_id,
                        words=rule.words,
                        message=rule.message,
                        seq=seq,
                        span=span,
                        doubt=rule.doubt,
                    )
                )
                made.setdefault(rule.message, rule_id)
            for lift in label.lifts:
                replaced_by = _replacing_id(new.rules, made, lift.replacing)
                if _lift(new.rules, lift, seq=seq + 1, replaced_by=replaced_by):
                    seq += 1
    for chunk in chunks:
        for flag in chunk.possibly_withdrawn:
            _flag(new.rules, flag)
    for chunk in chunks:
        for decision in chunk.decisions:
            item = clean_item(
                Item(
                    text=decision.text,
                    why=decision.why,
                    evidence=list(decision.evidence),
                    seq=seq + 1,
                    span=span,
                )
            )
            if _add_item(new.decisions, item):
                seq += 1
    for chunk in chunks:
        for dead_end in chunk.dead_ends:
            item = clean_item(
                Item(text=dead_end.text, evidence=list(dead_end.evidence), seq=seq + 1, span=span)
            )
            if _add_item(new.deadEnds, item):
                seq += 1
    values: list[Value] = []
    for chunk in chunks:
        for value in chunk.values:
            exact, what = clean_line(value.value), sanitize(value.name)
            if exact.strip() and what:
                seq += 1
                values.append(Value(value=exact, what=what, turn=value.turn, seq=seq, span=span))
    if values:
        new.values, _ = merge_values(new.values, values)
    for chunk in chunks:
        new.objective = prose(chunk.objective) or new.objective
        new.now = prose(chunk.now) or new.now
    fixed = {fix.error for chunk in chunks for fix in chunk.fixed}
    if fixed:  # a new list: the folded state's errors are shared, never changed in place
        new.errors = [e.model_copy(update={"open": False}) if e.id in fixed else e for e in new.errors]
    new.seq = seq
    return new
