"""Turns mode against a hostile model, bounded, in the normal test run; ``make fuzz-turns`` runs it longer.

One real daemon process holds one conversation of each kind in ``fuzz_turns.CASES`` (crafted calls, ``show``
loops, key echoes across the two routes, a 5 MB argument, 300 calls, a 429 asking for an hour, streams that
hang or never end, errors, garbage; spans with a 430 KB and with four 48 KB tool outputs). Every case gets the
budget check and the ``status`` probe; what must hold is listed in ``fuzz_turns`` and asserted here from the
report, and the figures are printed (``-s``) for docs/reliability.md.
"""

from __future__ import annotations

from pathlib import Path

from fuzz_turns import CASES, TurnsConfig, run_turns_fuzz, summary


def test_every_hostile_conversation_closes_on_time_with_its_record_and_no_key_crosses(
    short_tmp: Path,
) -> None:
    report = run_turns_fuzz(short_tmp, TurnsConfig(rounds=1, budget_s=4.0))
    print(summary(report))
    assert not report.crashed
    assert report.violations == []
    assert report.conversations == len(CASES)
    assert report.status_probes > 0 and report.status_unanswered == 0
