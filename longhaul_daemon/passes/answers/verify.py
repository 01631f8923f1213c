"""The model only proposes: code checks every label, quote, lift and value of a parsed answer before Close.

:func:`evaluate` turns a :class:`~longhaul_daemon.passes.answers.schema.ParsedAnswer` into an
:class:`~longhaul_daemon.passes.answers.events.Evaluation`: the events for the State, the defects worth a
retry, the questions for the one extra call, and the messages still unlabeled. Pure (DIFF-13). Decisions:

- Rule words are resolved for every label before lifts are judged, so a ``u<n>`` target finds the first rule
  its message gave in this answer (LABEL-16, QUOTE-7). No holder gets a rule it already has (FAIL-18).
- A lift is judged on the whole message, or on the recorded range for ``rule and lifts`` when the rule stayed
  with that message (QUOTE-15); a target lifted earlier in the answer is dropped, or raises a LIFT-7 question
  when that lift was a replacement; a LIFT-10 question is raised only for a new rule on its own message.
- Code's second look (:mod:`~longhaul_daemon.passes.answers.doubts`) runs around the lifts.
- Only the final answer counts every accepted label as judged (QUOTE-4), but for one kind: ours, a long
  message labeled ``rule`` whose words still do not verify is not judged, so the span closes ``partial`` and
  carries it with its words (FAIL-4, ours) instead of dropping the rule it states; one held so by an earlier
  pass that this answer labels otherwise is reported ``disputed``, and Close keeps its words. ``fixed``
  claims go to :mod:`~longhaul_daemon.passes.answers.fixes`; rule words are cleaned where cut
  (``clean_span``), so they stay verbatim in the cleaned message.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from types import MappingProxyType

from longhaul_daemon.passes.answers.answer_parts import answer_parts, merged_flags
from longhaul_daemon.passes.answers.call_schemas import untied_messages
from longhaul_daemon.passes.answers.defects import lift_defect, quote_defect
from longhaul_daemon.passes.answers.doubts import doubted_reading, rule_doubts, withdrawal_look
from longhaul_daemon.passes.answers.events import (
    ChunkContext,
    ChunkEvents,
    Evaluation,
    LabelEvents,
    LiftEvent,
    NewRule,
    PossibleWithdrawal,
    Question,
)
from longhaul_daemon.passes.answers.fixes import claimed_fixes
from longhaul_daemon.passes.answers.judged import judged_text
from longhaul_daemon.passes.answers.labels import Label, id_number
from longhaul_daemon.passes.answers.lifts import check_lift, may_withdraw, passes_question_check
from longhaul_daemon.passes.answers.one_offs import bounded_to_once, one_off_labels
from longhaul_daemon.passes.answers.questions import question_text, replaced_question_text
from longhaul_daemon.passes.answers.quotes import (
    OfferedMessage,
    quotable_text,
    resolve_rule_words,
)
from longhaul_daemon.passes.answers.rule_reading import read_possible_rule
from longhaul_daemon.passes.answers.schema import (
    Defect,
    LabeledMessage,
    ParsedAnswer,
)
from longhaul_daemon.passes.answers.values import check_values
from longhaul_daemon.passes.answers.withdrawal_reading import StandingRule, withdrawing_sentence
from longhaul_daemon.state.clean import clean_span, clean_text
from longhaul_daemon.state.model import Rule

__all__ = ["evaluate", "question_text", "replaced_question_text"]


@dataclass(frozen=True)
class _Target:
    """A rule a lift may name: ``key`` identifies it within one answer, ``name`` is how the model knows it."""

    key: str
    name: str
    message: str
    words: str
    lifted_by: str | None = None  # the context's record: the u<n> that already withdrew it


def _order(offered: Sequence[OfferedMessage]) -> dict[str, int]:
    return {m.id: at for at, m in enumerate(offered)}


class _Run:
    """The working tallies of one evaluation; only :func:`evaluate` builds and reads it."""

    def __init__(self, parsed: ParsedAnswer, ctx: ChunkContext, final: bool) -> None:
        self.ctx = ctx
        self.final = final
        self.offered = {m.id: m for m in ctx.offered}
        self.order = _order(ctx.offered)
        self.defects: list[Defect] = []
        self.questions: list[Question] = []
        self.dropped: Counter[str] = Counter()
        self.rejected: list[tuple[str, str]] = []  # (msg, words) refused, for LOG-14's excerpts
        self.flags: list[PossibleWithdrawal] = []  # lifts the check refused on a message that withdraws
        self._untied: frozenset[str] | None = None
        self.judged: set[str] = set()
        self.rules: dict[str, NewRule] = {}  # label msg -> the rule that label gave
        self.held: list[NewRule] = []  # every new rule, in label order
        self.lifts: dict[str, list[LiftEvent]] = {}
        self.lifted_here: dict[str, str | None] = {}  # target key -> replacing message (None: plain)
        self.replaced = set(parsed.replaced)
        self.unconfirmed: set[str] = set()  # long messages labeled `rule` whose words never verified

    # --- rules (QUOTE-*) ---

    def record_rule(self, label: LabeledMessage) -> None:
        verdict = resolve_rule_words(label.msg, label.words, self.ctx.offered, final=self.final)
        if verdict.outcome == "defect":
            self.defects.append(quote_defect(verdict, self.offered.get(label.msg)))
            self.judged.discard(label.msg)
            return
        if verdict.rejected_quote:
            self.dropped["rejected-quotes"] += 1
            if label.words:
                self.rejected.append((label.msg, label.words))
        if verdict.outcome == "dropped" and verdict.reason in _UNQUOTED and verdict.cited == label.msg:
            read = self._read_words(label.msg)
            if read is not None:
                self.keep_rule(label.msg, read)
                return
            # QUOTE-4, ours: a long message labeled `rule` whose words never verified, and in which code's
            # own readings pick no rule, is held back, not dropped: it is carried with its words and offered
            # again, so the rule it states is not lost
            self.judged.discard(label.msg)
            self.unconfirmed.add(label.msg)
            self.dropped["rules-held-unquoted"] += 1
            return
        if verdict.outcome == "dropped" or verdict.message is None or verdict.text is None:
            self.dropped["rules"] += 1
            return
        holder = quotable_text(self.offered[verdict.message].text) if verdict.message in self.offered else ""
        cut_here = holder[verdict.start : verdict.end] == verdict.text
        words = clean_span(holder, verdict.start, verdict.end) if cut_here else clean_text(verdict.text)
        self.keep_rule(label.msg, NewRule(verdict.message, words, verdict.start, verdict.end))

    def _read_words(self, msg: str) -> NewRule | None:
        """QUOTE-4, ours: the words code's own readings pick in a long message the model labeled `rule` but
        quoted wrongly, after its retry (the standing-rule reading, else the wider one; at most 600
        characters, the user's own words): a weak model seldom copies a sentence exactly, and holding the
        message back left every pass of such a span partial."""
        message = self.offered.get(msg)
        if message is None:
            return None
        found = doubted_reading(message.text) or doubted_reading(message.text, read_possible_rule)
        if found is None:
            return None
        start, end = found
        return NewRule(msg, clean_span(quotable_text(message.text), start, end), start, end)

    def keep_rule(self, msg: str, rule: NewRule) -> None:
        """FAIL-18, QUOTE-7: ``msg``'s label gave ``rule``, unless its holder already has those very words."""
        if not rule.words.strip():
            self.dropped["rules"] += 1
            return
        held = [(r.message, r.words) for r in self.ctx.rules] + [(r.message, r.words) for r in self.held]
        if (rule.message, rule.words) in held:
            return
        self.rules[msg] = rule
        self.held.append(rule)

    def disputed(self, labels: Sequence[LabeledMessage]) -> frozenset[str]:
        """QUOTE-4, ours: carried messages an earlier pass held as rules whose words never verified, that
        this answer judged without recording a rule from them: the two labels disagree, and neither the
        model's words nor code's readings give the rule, so Close keeps the user's words verbatim instead."""
        return frozenset(
            label.msg
            for label in labels
            if label.msg in self.ctx.unconfirmed_rules
            and label.msg in self.judged
            and label.msg not in self.rules
        )

    def refuse_one_off(self, msg: str) -> None:
        """``msg`` is labeled ``rule`` but reads as a one-off request (:mod:`.doubts`): no rule recorded."""
        rule = self.rules.get(msg)
        if rule is None or rule.message != msg:
            return
        del self.rules[msg]
        self.held = [held for held in self.held if held is not rule]
        self.dropped["one-off-rules"] += 1

    def keep_doubted(self, msg: str, rule: NewRule) -> None:
        """A disputed label's rule (:mod:`.doubts`): the labeled one marked, or new."""
        if msg not in self.rules:
            return self.keep_rule(msg, rule)
        self.held = [rule if held is self.rules[msg] else held for held in self.held]
        self.rules[msg] = rule

    def standing(self) -> list[StandingRule]:
        """The rules in force a later message may withdraw: the context's and this answer's, less lifts."""
        known = [_Target(r.id, r.id, r.message, r.words) for r in self.ctx.rules if not r.lifted]
        known += [_Target(f"new:{r.message}", r.message, r.message, r.words) for r in self.held]
        return [
            StandingRule(t.name, t.message, t.words, tuple(self.replaced_words(t)))
            for t in known
            if t.key not in self.lifted_here
        ]

    def record_picked(self, msg: str) -> None:
        """TAKEOVER-20, TAKEOVER-22: a picked earlier message left unlabeled becomes a rule by code."""
        start, end = self.ctx.picked[msg]
        text = self.offered[msg].text
        if not 0 <= start < end <= len(text):
            self.dropped["rules"] += 1
            return
        self.keep_rule(msg, NewRule(msg, clean_span(text, start, end), start, end))

    # --- lifts (LIFT-*) ---

    def _context_target(self, name: str) -> Rule | None:
        by_id = next((r for r in self.ctx.rules if r.id == name), None)
        if by_id is not None or name.startswith("R"):
            return by_id  # a pending rule's id is its u<n> (DIFF-3), so ids are tried first for both
        return next((r for r in self.ctx.rules if r.message == name), None)

    def target(self, name: str) -> _Target | None:
        """The rule a target names: the context's rule, else one new in this answer (LABEL-16)."""
        found = self._context_target(name)
        if found is not None:
            return _Target(
                found.id, name, found.message, found.words, found.liftedBy if found.lifted else None
            )
        held = next((r for r in self.held if r.message == name), None)
        if held is None:
            return None
        return _Target(f"new:{held.message}", name, held.message, held.words)

    def replaced_words(self, target: _Target) -> list[str]:
        """LIFT-8: the words of the rules ``target`` replaced, in the context and in this answer."""
        words = [r.words for r in self.ctx.rules if r.lifted and r.liftedBy == target.message]
        for events in self.lifts.values():
            for lift in events:
                if lift.replacing == target.message:
                    older = self.target(lift.target)
                    if older is not None:
                        words.append(older.words)
        return words

    def _narrowing(self, target: _Target) -> _Target | None:
        """The rule that replaced ``target``: by the context's record, or by a lift earlier in this answer."""
        replacing = self.lifted_here.get(target.key)
        if replacing is None:
            replacing = target.lifted_by
        if replacing is None:
            return None
        holder = self._context_target(replacing)
        if holder is not None:
            return _Target(holder.id, holder.id, holder.message, holder.words)
        return self.target(replacing)

    def ask_replaced(self, label: LabeledMessage, target: _Target) -> None:
        narrowing = self._narrowing(target)
        if narrowing is None:
            self.dropped["lifts"] += 1
            return
        if narrowing.name in label.label.targets or narrowing.message in label.label.targets:
            return  # the label already names the narrowing: nothing left to ask
        spelled = "rule and lifts" if label.label.kind == "rule-and-lifts" else "lifts"
        text = replaced_question_text(label.msg, spelled, target.name, narrowing.name, narrowing.words)
        answer = f"{spelled} {narrowing.name}"
        self.questions.append(Question(label.msg, narrowing.name, "replaced", text, answer_label=answer))

    def judge_lift(self, label: LabeledMessage, name: str) -> None:
        msg = label.msg
        target = self.target(name)
        if target is None:
            self.dropped["lifts"] += 1  # its rule never verified: nothing to lift
            return
        earlier = target.key in self.lifted_here
        if (msg, name) in self.replaced or (earlier and self.lifted_here[target.key] is not None):
            self.ask_replaced(label, target)  # LIFT-7, FAIL-5: a question, never a defect
            return
        if earlier or target.lifted_by is not None:
            return  # already lifted plainly (LABEL-8, FAIL-18): dropped silently
        own = self.rules.get(msg)
        kept = (
            own if label.label.kind == "rule-and-lifts" and own is not None and own.message == msg else None
        )
        text = self.offered[msg].text
        if bounded_to_once(text):
            # ours, as LIFT-5 and LIFT-6 read a permission: an exception for this once lifts nothing. Sent
            # back while it can be; settled, the rule stays, shown with the user's sentence under it, so the
            # agent sees the exception and how far it goes
            if self.final:
                self.dropped["lifts"] += 1
                self.flags.append(
                    PossibleWithdrawal(target.name, msg, withdrawing_sentence(judged_text(text)))
                )
            else:
                self.defects.append(lift_defect(msg, target.name, target.words))
            return
        verdict = check_lift(
            text,
            target.words,
            start=kept.start if kept else None,
            end=kept.end if kept else None,
            replaced_rule_words=self.replaced_words(target),
        )
        if not verdict.passed:
            judged = judged_text(text)
            untied = msg in self.untied()
            if self.final or untied:
                self.dropped["lifts"] += 1
                if may_withdraw(judged):
                    # ours: the user withdrew something and the model names this rule in words the check
                    # cannot tie to it; no lift (LIFT-4), but the rule shows the user's sentence under it
                    self.flags.append(PossibleWithdrawal(target.name, msg, withdrawing_sentence(judged)))
            else:
                self.defects.append(lift_defect(msg, target.name, target.words))
            return
        replacing = kept.message if kept is not None else None
        self.lifts.setdefault(msg, []).append(LiftEvent(name, msg, replacing))
        self.lifted_here[target.key] = replacing

    def untied(self) -> frozenset[str]:
        """The messages whose lifts the schema offered though code ties their withdrawal to no rule
        (``call_schemas.untied_messages``): a refused lift there was offered, so it is flagged, never sent
        back. Read once, when a lift is first refused."""
        if self._untied is None:
            self._untied = untied_messages(self.ctx.offered, self.ctx.rules)
        return self._untied

    # --- questions (LIFT-10, LIFT-11) ---

    def rule_questions(self, labels: Sequence[LabeledMessage]) -> None:
        for label in labels:
            own = self.rules.get(label.msg)
            if label.label.kind != "rule" or own is None or own.message != label.msg:
                continue
            if not may_withdraw(judged_text(self.offered[label.msg].text, own.start, own.end)):
                continue  # LIFT-10 needs a withdrawal in the recorded words: none, so no older rule is asked
            here = id_number(label.msg, "u") or 0
            older = [
                _Target(r.id, r.message, r.message, r.words)
                for r in self.ctx.rules
                if not r.lifted and (id_number(r.message, "u") or 0) < here
            ]
            older += [
                _Target(f"new:{r.message}", r.message, r.message, r.words)
                for r in self.held
                if (id_number(r.message, "u") or 0) < here
            ]
            asked: set[str] = set()
            for target in older:
                if target.key in self.lifted_here or target.message in asked:
                    continue
                verdict = passes_question_check(
                    self.offered[label.msg].text,
                    target.words,
                    start=own.start,
                    end=own.end,
                    replaced_rule_words=self.replaced_words(target),
                )
                if verdict.passed:
                    asked.add(target.message)
                    text = question_text(label.msg, target.message, target.words)
                    self.questions.append(Question(label.msg, target.message, "rule-lift", text))


_UNQUOTED = frozenset({"words-missing", "words-not-found", "starts-inside-word", "ends-inside-word"})


def evaluate(parsed: ParsedAnswer, ctx: ChunkContext, *, final: bool) -> Evaluation:
    """Verify one parsed answer against the chunk (QUOTE-*, LABEL-*, LIFT-*, VALUE-2..4, DIFF-13).

    ``final`` says this is the chunk's settled answer: nothing can be sent back, so defective items are
    dropped and counted instead of becoming defects.
    """
    labels, decisions, dead_ends, candidates, prose, dropped = answer_parts(parsed, final)
    run = _Run(parsed, ctx, final)
    run.dropped.update(dropped)
    ordered = sorted(
        (label for label in labels if label.msg in run.offered), key=lambda label: run.order[label.msg]
    )
    labeled = {label.msg for label in ordered}
    unlabeled_picks = [
        LabeledMessage(msg, Label("rule", ()), None)
        for msg in ctx.picked
        if msg in run.offered and msg not in labeled
    ]
    for label in ordered:
        run.judged.add(label.msg)
        if label.label.records_rule:
            run.record_rule(label)
    for pick in unlabeled_picks:
        run.record_picked(pick.msg)
    decided_alone = set(ctx.picked) | ctx.unpicked_earlier  # TAKEOVER-4: the model's word stands there
    in_force = [r.words for r in ctx.rules if not r.lifted] + [r.words for r in run.held]
    label_pairs = [(x.msg, x.label) for x in ordered]
    for msg in one_off_labels(label_pairs, run.rules, decided_alone):
        run.refuse_one_off(msg)
    for msg, rule in rule_doubts(label_pairs, run.offered, run.rules, decided_alone, in_force):
        run.keep_doubted(msg, rule)
    ordered = sorted([*ordered, *unlabeled_picks], key=lambda label: run.order[label.msg])
    for label in ordered:
        for name in label.label.targets:
            run.judge_lift(label, name)
    run.rule_questions(ordered)  # LIFT-10: an unlabeled pick may replace an older rule too (TAKEOVER-20)
    asked = {(q.msg, q.target) for q in run.questions}
    asked_now, flagged = withdrawal_look(ctx.offered, dict(label_pairs), run.standing(), asked)
    run.questions += asked_now  # code's own look for withdrawals the labels missed (diff/doubts.py)

    checked = check_values(candidates, ctx.turns)
    if checked.dropped:
        run.dropped["values"] += checked.dropped
    fixes, refused = claimed_fixes(parsed, ctx.commands, ctx.errors, final=final)  # never in a retry note
    run.dropped["fixed"] += refused
    events = ChunkEvents(
        labels=tuple(
            LabelEvents(label.msg, run.rules.get(label.msg), tuple(run.lifts.get(label.msg, ())))
            for label in ordered
            if label.msg in run.rules or label.msg in run.lifts
        ),
        judged=frozenset(run.judged),
        decisions=tuple(decisions),
        dead_ends=tuple(dead_ends),
        values=checked.kept,
        narrative=prose[0],
        now=prose[1],
        objective=prose[2],
        fixed=fixes,
        dropped=MappingProxyType({k: v for k, v in sorted(run.dropped.items()) if v}),
        rejected_quotes=tuple(run.rejected),
        possibly_withdrawn=merged_flags(flagged, run.flags),
        unconfirmed=frozenset(run.unconfirmed),
        disputed=run.disputed(ordered),
    )
    excused = ctx.label_optional | (ctx.unpicked_earlier if final else frozenset())  # FAIL-4
    unlabeled = tuple(m.id for m in ctx.offered if m.id not in run.judged and m.id not in excused)
    return Evaluation(
        events=events,
        defects=() if final else (*parsed.defects, *run.defects),
        questions=tuple(sorted(run.questions, key=lambda q: run.order.get(q.msg, 0))),
        unlabeled=tuple(dict.fromkeys(unlabeled)),
    )
