"""The second held-out bank, written blind to the compactor's heuristics: prompt and heuristic work must never
read it (the first held-out bank has been partly seen while tuning).

A backup-retention CLI (``prune.py`` decides which nightly snapshots to keep and which to drop) with
recorded listings under ``fixtures/`` the user wants left alone, a ``retention.toml`` and a ``VERSION`` whose
values the user needs later, and a RUNBOOK of operator habits nobody gave as standing rules.
:mod:`bench_bank_tuning` and :mod:`bench_bank_heldout` hold the other halves in other words; no sentence here
appears there (``tests/evaluation/test_model_bench_corpus.py`` checks it against their source text).
"""

from __future__ import annotations

from bench_corpus import Bank

_PRUNE = '''"""Decide which snapshots to keep: the newest N dailies and the newest M weeklies (Sundays)."""
import argparse
import datetime

parser = argparse.ArgumentParser()
parser.add_argument("listing")
parser.add_argument("--daily", type=int, default=7)
parser.add_argument("--weekly", type=int, default=4)
parser.add_argument("--dry-run", action="store_true")
args = parser.parse_args()
with open(args.listing) as handle:
    names = sorted(line.strip() for line in handle if line.strip())
stamps = {n: datetime.date.fromisoformat(n.split("_")[1]) for n in names}
newest = sorted(names, key=stamps.__getitem__, reverse=True)
keep = set(newest[: args.daily])
keep |= set([n for n in newest if stamps[n].weekday() == 6][: args.weekly])
for name in newest:
    print("keep " if name in keep else "drop ", name)
print("dry run, nothing removed" if args.dry_run else f"would remove {len(names) - len(keep)}")
'''

_SNAPSHOTS = "".join(f"nightly_2026-09-{day:02d}\n" for day in range(1, 29))

_RETENTION = """# retention policy for the photo archive
[remote]
host = vault-b12.internal
port = 6613
[policy]
daily = 7
weekly = 4
grace_hours = 36
repo_id = 4f0d9e2b
"""

_CHECKSUMS = """nightly_2026-09-26  3b7f0c55e19a
nightly_2026-09-27  9c0e4a71d2f8
nightly_2026-09-28  d41f62ab0c37
"""

_RUNBOOK = """# Operator runbook
Every prune must be preceded by a listing of what it would remove.
Operators must never delete the newest snapshot by hand.
Do not start a prune while the upload window (01:00-03:00) is open.
"""

HELD_OUT_2 = Bank(
    name="retain",
    seed=72913,
    files={
        "prune.py": _PRUNE,
        "snapshots.txt": _SNAPSHOTS,
        "retention.toml": _RETENTION,
        "fixtures/checksums.txt": _CHECKSUMS,
        "fixtures/short.txt": "nightly_2026-08-30\nnightly_2026-08-31\n",
        "VERSION": "prune 0.8.3-rc1\n",
        "RUNBOOK.md": _RUNBOOK,
    },
    tasks=(
        "prune.py needs a --monthly option that keeps the first snapshot of each month, can you add it?",
        "The weekly bucket picks Sundays; make the weekday configurable with --week-start.",
        "Teach prune.py to skip blank lines and comments starting with # in the listing.",
        "When the listing has a name without a date, prune.py dies with an IndexError. Fix that gracefully.",
        "Could you add a --json switch so the keep/drop decision comes out machine-readable?",
        "Write a tiny test module for prune.py covering the daily and weekly buckets.",
        "I want a summary line at the end: how many kept, how many dropped, per bucket.",
    ),
    chatter=(
        "hm, what went wrong there?",
        "Where do we stand? Keep it short.",
        "Is that output what you expected?",
        "ok go on",
        "Any edge case in the dates we haven't thought about?",
        "Which part of prune.py would you refactor first, if any?",
        "Right. Anything still open from the earlier request?",
        "Can you give me the gist of that traceback in plain words?",
        "Does the snapshot listing look sane to you?",
    ),
    long_context=(
        (
            "Quick bit of context, since you're new to this repo: prune.py runs from a systemd timer on the"
            " archive host at four every morning, and the photo team restores from those snapshots more"
            " often than you'd think, so a bad retention decision costs us real pictures, not just disk.",
            "Okay, with that out of the way, what I actually want today is to get the weekly selection"
            " right, because last month it kept two snapshots from the same week and dropped a Sunday.",
        ),
        (
            "So, I had a long call with Priya about last week's incident, where somebody ran the script"
            " against the live listing while the upload was still going and we lost three nights of"
            " backups before anyone noticed; we agreed on a few working habits for this code.",
            "That's the process side. Back to the code now: let's look at how the dates are parsed, since"
            " I suspect the ISO parsing is what trips over the odd names in the listing.",
        ),
        (
            "Before you dive in, a note about how I like to work with you here. I review everything on my"
            " phone in the evening, the CI box is slow and shared with two other teams, and the archive"
            " machine itself is old enough that I'd rather not surprise it with anything clever.",
            "Right, enough about that. Please start by reading prune.py top to bottom and tell me where"
            " the keep set is built, then we'll decide together how to reshape it.",
        ),
    ),
    rules={
        "dryrun": (
            (
                "Please keep --dry-run on every time you call prune.py, I don't want anything actually"
                " removed.",
                "keep --dry-run on every time you call prune.py",
            ),
            (
                "From here on, prune.py only ever runs with --dry-run.",
                "prune.py only ever runs with --dry-run",
            ),
            (
                "Make sure every invocation of prune.py carries the --dry-run flag.",
                "every invocation of prune.py carries the --dry-run flag",
            ),
        ),
        "fixtures": (
            (
                "Leave the files in fixtures/ exactly as they are; they were recorded on the real host.",
                "Leave the files in fixtures/ exactly as they are",
            ),
            (
                "Rule of thumb: nothing under fixtures/ gets edited, we regenerate those from production.",
                "nothing under fixtures/ gets edited",
            ),
        ),
        "typing": (
            (
                "I'd like all new functions to carry full type annotations.",
                "all new functions to carry full type annotations",
            ),
            (
                "Going forward, every def you write gets type hints on its parameters and its return.",
                "every def you write gets type hints",
            ),
        ),
        "dates": (
            (
                "Handle every timestamp as UTC with timezone-aware datetimes, no naive ones.",
                "timezone-aware datetimes, no naive ones",
            ),
            (
                "Stick to aware datetimes in UTC for anything involving time.",
                "Stick to aware datetimes in UTC",
            ),
        ),
        "branch": (
            (
                "Do your commits on a feature branch; main stays untouched until I review.",
                "commits on a feature branch",
            ),
            (
                "Please don't commit to main directly; open a topic branch for each change.",
                "open a topic branch for each change",
            ),
        ),
        "changelog": (
            (
                "Each time the behaviour changes, add a line to CHANGELOG.md describing it.",
                "add a line to CHANGELOG.md",
            ),
            (
                "See to it that CHANGELOG.md gets an entry for every user-visible change.",
                "CHANGELOG.md gets an entry",
            ),
        ),
        "shell": (
            (
                "No shell=True in subprocess calls, pass argument lists instead.",
                "No shell=True in subprocess calls",
            ),
            (
                "When you shell out, hand subprocess a list of arguments; shell=True is banned here.",
                "shell=True is banned here",
            ),
        ),
    },
    lifts={
        "dryrun": (
            "You can let prune.py delete for real now, no need for --dry-run on the scratch box.",
            "Changed my mind about the dry-run requirement, go ahead and run it without the flag.",
            "That --dry-run restriction is off; the test host gets wiped tonight anyway.",
        ),
        "fixtures": (
            "Feel free to edit the fixtures again, I stopped syncing them from production.",
            "Ignore my earlier note on fixtures/, they're ours to change now.",
            "We're done with the fixtures freeze, touch them as needed.",
        ),
        "typing": (
            "Scrap that type-hint requirement, it's slowing us down on throwaway helpers.",
            "You don't have to annotate everything any more; type hints are optional.",
            "Let's relax on the annotations: only add a type where it genuinely helps.",
        ),
        "dates": (
            "Naive datetimes are fine again, the servers all run in UTC anyway.",
            "You can go back to plain datetime.now(); forget the aware-datetimes business.",
            "No more need to fuss over timezone-aware datetimes.",
        ),
        "branch": (
            "Committing straight to main is fine again, skip the branch dance.",
            "We're done with feature branches for this repo; just commit on main.",
            "Forget the topic-branch policy, I'll review on main after the fact.",
        ),
        "changelog": (
            "No more need for CHANGELOG.md entries, release notes get generated now.",
            "You can stop touching the changelog; the release bot writes it these days.",
            "The changelog chore is gone, skip it from now on.",
        ),
        "shell": (
            "shell=True is allowed again where it keeps the code simpler.",
            "Okay, I've reconsidered the subprocess thing: use the shell if you need pipes.",
            "Lift the shell=True ban, some of these calls really need globbing.",
        ),
    },
    one_offs=(
        (
            "Just for this run, point prune.py at fixtures/short.txt instead of snapshots.txt.",
            "point prune.py at fixtures/short.txt instead",
        ),
        (
            "Only this time, commit without running the checks, I need the hash before my meeting.",
            "commit without running the checks",
        ),
        (
            "For the moment, dump the debug output to stdout so I can eyeball it.",
            "dump the debug output to stdout",
        ),
        (
            "Right now, can you bump VERSION to 0.8.3 and tag it? Just that release.",
            "bump VERSION to 0.8.3 and tag it",
        ),
        (
            "Can you quickly turn off the weekly bucket for this one check?",
            "turn off the weekly bucket for this one check",
        ),
    ),
    commands=(
        "cat prune.py",
        "python3 prune.py --dry-run snapshots.txt",
        "ls fixtures",
        "head -n 4 snapshots.txt",
        "git log --oneline -2",
        "grep -c nightly snapshots.txt",
        "python3 prune.py --daily 3 --weekly 1 --dry-run fixtures/short.txt",
    ),
    failing=(
        "python3 prune.py --keep-hourly 3 snapshots.txt",
        "python3 prune.py fixtures/absent.txt",
        "cat retention.yaml",
        "git show v0.9.0",
        "python3 prune.py --daily seven snapshots.txt",
    ),
    value_runs=(
        ("grep -n host retention.toml", "vault-b12.internal"),
        ("grep -n port retention.toml", "6613"),
        ("grep -n 09-27 fixtures/checksums.txt", "9c0e4a71d2f8"),
        ("cat VERSION", "0.8.3-rc1"),
        ("grep -n repo_id retention.toml", "4f0d9e2b"),
    ),
    rule_like_runs=("cat RUNBOOK.md", "grep -n -i must RUNBOOK.md", "sed -n 2,3p RUNBOOK.md"),
    promises=(
        "I'll never remove a snapshot without listing it first.",
        "From now on I always sort the snapshot names before comparing dates.",
    ),
    log_name="nightly-{n}.log",
    log_line="[nightly {run}] batch {n}: listed 28, kept 11, dropped 17, freed 3.1 GiB, verify ok",
)
