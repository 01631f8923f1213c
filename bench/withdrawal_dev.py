"""A development set for reading withdrawals: 12 rules in two wordings each, 7 withdrawals of each, and 5
look-alikes of each that withdraw nothing (restatements, tasks, questions, exceptions for this once, news).

Written by a helper that had never read the reversal vocabulary (passes/answers/reversal_words.py), to
tune that vocabulary on: unlike the held-out banks, reading it is allowed. bench/withdrawal_readings.py
counts how code reads it.
"""

from __future__ import annotations

RULES: dict[str, tuple[str, ...]] = {
    "tests": (
        "Run the full test suite before every commit.",
        "Don't hand anything back to me until all the tests pass, no exceptions.",
    ),
    "deps": (
        "Never add new dependencies without asking me first.",
        "Keep us on the standard library only, no third-party packages.",
    ),
    "format": (
        "Always run black on any file you touch.",
        "Don't reformat code you aren't otherwise changing, it makes the diffs unreadable.",
    ),
    "commits": (
        "Don't commit anything; leave all changes unstaged so I can review them.",
        "Ask me before every git commit.",
    ),
    "branch": (
        "Never push to main, always work on a feature branch.",
        "All work goes on a separate branch, main is protected for a reason.",
    ),
    "docs": (
        "Update the docstrings whenever you change a function signature.",
        "Every public function needs a docstring.",
    ),
    "logging": (
        "Use the logging module, never print statements.",
        "No print() calls in library code, everything goes through the logger so we can ship it to Datadog.",
    ),
    "typing": (
        "Add type hints to every new function.",
        "All new code must pass mypy --strict before you show it to me.",
    ),
    "freeze": (
        "We're in a code freeze on the payments module, don't touch it.",
        "Leave payments/ alone until the release is out.",
    ),
    "changelog": (
        "Add a CHANGELOG entry for every user-facing change.",
        "Every PR needs a line in CHANGELOG.md.",
    ),
    "migrations": (
        "Don't create any database migrations, I'll write them by hand.",
        "Never run alembic or touch the migrations folder.",
    ),
    "compat": (
        "Keep everything compatible with Python 3.8, we still have customers on it.",
        "No walrus operators or match statements, we support 3.8.",
    ),
}

LIFTS: dict[str, tuple[str, ...]] = {
    "tests": (
        "You can drop the rule about running the full test suite before commits.",
        "CI runs everything on each push now, so no need to run the tests yourself anymore.",
        "tests: don't bother anymore, the pipeline covers it.",
        "Running the suite before handing stuff back is too slow, forget it, just give me the code.",
        "meh, the whole green-before-handoff thing was overkill, scrap it.",
        "From here on it's fine to hand me changes without verifying them first, I'll do that part.",
        "We've got a dedicated QA person now, so that pre-commit verification step of "
        "yours is no longer required.",
    ),
    "deps": (
        "Ignore what I said earlier about asking before adding dependencies.",
        "deps: go ahead, add whatever you need.",
        "We're not stuck on the standard library anymore, pull in third-party packages if they help.",
        "pip install whatever makes the job easier, no need to check with me going forward.",
        "Legal finally signed off on open-source licenses, so the no-external-libraries restriction is gone.",
        "honestly the stdlib-only thing is slowing us down, consider it dropped.",
        "Bringing in outside libraries is fine now, you don't have to clear them with me.",
    ),
    "format": (
        "CI handles formatting now, so don't worry about running black.",
        "No need to run black on files anymore, the pre-commit hook does it.",
        "The no-reformatting rule is lifted, tidy up untouched code if you see fit.",
        "Reformat whatever you like from now on, diff noise isn't an issue for us anymore.",
        "scrap the code style stuff I mentioned, not important.",
        "We're switching to ruff with autofix on save, so disregard my earlier formatter instructions.",
        "Code layout is your call from here on, my earlier instructions about it no longer apply.",
    ),
    "commits": (
        "You can commit on your own now, no need to leave changes unstaged for me.",
        "No need to ask before committing anymore.",
        "commits: go ahead and make them yourself.",
        "I trust your work at this point, just commit as you go with sensible messages.",
        "Feel free to git commit whenever a step is done, I'll read the log later.",
        "Okay, the hands-off-the-history thing is over, save your work to version control yourself.",
        "Since I review everything in the PR view now, there's no reason to hold changes "
        "back, check them in yourself.",
    ),
    "branch": (
        "Feel free to push straight to main from now on.",
        "The feature branch rule is gone, just work on main.",
        "We've moved to trunk-based development, so forget about separate branches.",
        "main isn't protected anymore and it's only me on this repo, so push to it directly.",
        "honestly the branching ceremony is pointless for a solo project, drop it.",
        "You're cleared to land changes directly on the default branch, no more PR-per-change.",
        "This repo is just a scratch fork now, so keeping work off trunk doesn't apply anymore.",
    ),
    "docs": (
        "Stop writing docstrings for every public function, it's not required anymore.",
        "Don't bother updating docstrings anymore, we generate the API docs from type hints now.",
        "docstrings: not needed going forward.",
        "The documentation requirement is off, the code is throwaway anyway.",
        "meh, forget the doc comments thing.",
        "We're dropping the autodoc site, so keeping function docs in sync is no longer your job.",
        "It's fine to leave functions undocumented from now on.",
    ),
    "logging": (
        "Prints are fine now, you don't have to route everything through the logger.",
        "The no print() rule is over, this is just a CLI script now.",
        "Use print for output whenever you like from here on.",
        "logging: relax, use whatever.",
        "We ripped out the Datadog pipeline, so that restriction on console output is gone.",
        "scrap what I said about writing to stdout, it doesn't matter anymore.",
        "Dump debug output to the terminal however you like, the old rule about that no longer stands.",
    ),
    "typing": (
        "You can skip type hints from now on.",
        "mypy --strict is gone from our requirements, don't worry about it.",
        "We're dropping static typing for this prototype, so annotations are optional now.",
        "types: not needed anymore.",
        "Honestly the annotation rule was slowing us down, forget it.",
        "The type checker's no longer part of our workflow, so stop worrying about keeping it happy.",
        "Untyped Python is totally fine going forward.",
    ),
    "freeze": (
        "The freeze is over.",
        "Release shipped, you can work on payments/ again.",
        "You're allowed to edit the payments module now.",
        "payments: go ahead and change whatever's needed.",
        "Okay, the lockdown on billing code is lifted.",
        "v3.2 is out the door, so that hands-off period is done.",
        "Management pushed the release to next quarter and unfroze everything, so touch any module you need.",
    ),
    "changelog": (
        "meh, scrap the changelog thing.",
        "No more CHANGELOG entries needed, release-please writes it from commit messages now.",
        "You don't have to add a line to CHANGELOG.md for each PR anymore.",
        "We're generating release notes automatically, so stop hand-editing the history file.",
        "Forget the release notes rule, nobody reads them.",
        "That thing about recording every user-visible change in a file, not needed going forward.",
        "changelog's retired, leave it be.",
    ),
    "migrations": (
        "Generate the migrations yourself from now on.",
        "Go ahead and run alembic when you need to, the migrations folder is yours.",
        "I'm done writing migrations by hand, so that rule is off.",
        "We reset the dev database anyway, so schema changes are fair game for you from now on.",
        "DB schema stuff: do it yourself going forward.",
        "Autogenerate whatever schema revisions you need, I no longer want to do them myself.",
        "Since we switched to create_all for this project, that restriction on the DB "
        "scripts no longer applies.",
    ),
    "compat": (
        "We dropped 3.8 support, use whatever modern syntax you like.",
        "Go ahead with match statements and walrus operators, that constraint is gone.",
        "The last customer on old Python upgraded, so the compatibility restriction is done.",
        "min Python is 3.11 now, feel free to use the new stuff.",
        "Stop worrying about supporting ancient interpreters.",
        "python 3.8 compat: no longer a concern.",
        "Target the latest Python only from here on, the legacy support rule's been retired.",
    ),
}

NEGATIVES: dict[str, tuple[str, ...]] = {
    "tests": (
        "Reminder: full test suite before every commit, still.",
        "Add a test for the empty-input case in parse_header and make sure the suite still passes.",
        "Do the tests still pass after the refactor?",
        "Skip the test run just this once, I need this hotfix out in five minutes; back to normal after.",
        "The flaky test in test_sync.py doesn't fail anymore, someone fixed the race.",
    ),
    "deps": (
        "Remember, still no new packages, if you need HTTP use urllib.",
        "Replace the hand-rolled retry loop with something from the standard library if you can.",
        "Is requests already in our dependencies, or did someone vendor it?",
        "Just this once you can add pytest-xdist for the benchmark script, but ask me before any others.",
        "FYI the lockfile got regenerated this morning, nothing new was added.",
    ),
    "format": (
        "Still run black on everything you touch please, the last PR had a couple of files missed.",
        "Fix the indentation in config_loader.py, only on the lines you changed.",
        "Which black version are we pinned to?",
        "Don't run black on generated_pb2.py this one time, it mangles the protobuf output.",
        "The formatter config moved from setup.cfg into pyproject.toml.",
    ),
    "commits": (
        "Remember, don't commit, just leave it in the working tree.",
        "Write me a commit message for these changes but don't actually commit.",
        "Did you accidentally commit anything in the last step?",
        "Go ahead and commit this one fix yourself, just this time; after that it's back to asking me.",
        "I squashed yesterday's commits into one, so the history looks different now.",
    ),
    "branch": (
        "Same as before: don't push to main, use a branch.",
        "Create a branch called fix/login-timeout and put the auth changes there.",
        "Which branch are you on right now?",
        "Push the version bump directly to main just this once, it's a one-liner; "
        "everything else still goes on branches.",
        "main is green again after the revert.",
    ),
    "docs": (
        "Don't forget the docstrings, a couple of the new helpers are missing them.",
        "Write a docstring for retry_with_backoff explaining the jitter parameter.",
        "Do we use Google-style or NumPy-style docstrings here?",
        "Skip the docstrings on these test fixtures just this once, they're getting deleted next week.",
        "The docs site built fine last night, no warnings for the first time.",
    ),
    "logging": (
        "Still no print statements in the library, use logger.debug.",
        "Add a log line at INFO level when the cache is rebuilt.",
        "What log level does the worker default to?",
        "Drop a print in there temporarily so we can see the payload, this once only, "
        "and take it out before committing.",
        "The log files are rotating properly now.",
    ),
    "typing": (
        "Keep adding type hints, mypy still runs in CI.",
        "Add proper annotations to parse_args, it's returning Any right now.",
        "Does mypy --strict still pass on the whole package?",
        "Skip the type hints for this throwaway one-off script only, everything else stays typed.",
        "We bumped mypy to 1.10 this morning.",
    ),
    "freeze": (
        "Reminder, payments is still frozen until Friday.",
        "Read through payments/refunds.py and tell me what it does, but don't change it.",
        "When does the code freeze end again?",
        "You can fix the typo in payments/README just this once, nothing else in there though.",
        "The release candidate passed QA this morning.",
    ),
    "changelog": (
        "And don't forget the CHANGELOG entry for the new --dry-run flag.",
        "Move the two entries under Unreleased into a new 2.4.0 section.",
        "Did you add the changelog line for the timeout fix?",
        "Skip the changelog for this one PR, it's just a CI tweak; the rule still stands otherwise.",
        "Someone fixed the broken links in the changelog.",
    ),
    "migrations": (
        "Still hands off the migrations folder, I'll write the one for the new column.",
        "Add the nullable email_verified column to the User model and tell me what migration I'll need.",
        "Is the latest alembic revision applied on staging?",
        "Run alembic upgrade head on your local db just this once so the tests pass, but "
        "don't create any new migrations.",
        "I merged the migration for the orders table last night.",
    ),
    "compat": (
        "Reminder: this still has to run on 3.8, so no match statements.",
        "Rewrite that dict merge with {**a, **b} instead of |, it needs to work on 3.8.",
        "Does tox still test against 3.8?",
        "The internal release script can use 3.12 features just this once since it never "
        "ships; the package stays 3.8.",
        "3.8 hit end of life upstream a while ago.",
    ),
}
