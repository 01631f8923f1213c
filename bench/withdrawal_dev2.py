"""Second development set for reading withdrawals of standing rules. It was written by a second writer who
never read the compactor's code, the first development set or the banks, working only from an imagination
of how developers talk to a coding agent in chat. It holds 16 rules in two wordings each (one terse and
imperative, one longer and conversational with a reason), 8 withdrawals of each rule (LIFTS: the rule no
longer applies at all) and 6 look-alikes of each (NEGATIVES: reminders, tasks, questions, one-time
exceptions, news and strengthenings that touch the same topic but withdraw nothing). Tuning on it is
allowed; bench/withdrawal_readings.py counts how code reads it."""

from __future__ import annotations

RULES: dict[str, tuple[str, ...]] = {
    "no_new_deps": (
        "Never add new dependencies.",
        "Please don't pull in any new packages - every dependency is something we have to audit and keep "
        "patched, so stick to what's already in requirements.txt.",
    ),
    "tests_dir": (
        "Tests go under tests/.",
        "I want all test files kept in the top-level tests/ directory, not next to the source, so the "
        "packaging step doesn't ship them.",
    ),
    "conventional_commits": (
        "Use conventional commit messages.",
        "From now on please write commit messages in the Conventional Commits format (feat:, fix:, chore:) "
        "because our release tooling parses them to build the changelog.",
    ),
    "no_push_main": (
        "Never push directly to main.",
        "Don't push straight to main; always open a branch and a PR, since main deploys automatically and "
        "we need a review step in between.",
    ),
    "type_hints": (
        "Always add type hints.",
        "Please make sure every new function has full type annotations - we run mypy in strict mode and "
        "untyped code just piles up otherwise.",
    ),
    "changelog": (
        "Update CHANGELOG.md with every change.",
        "Whenever you change behavior, add an entry to CHANGELOG.md under Unreleased, because the release "
        "notes are generated straight from it.",
    ),
    "secrets_env": (
        "Secrets must come from environment variables.",
        "No hardcoded credentials anywhere, ok? Read API keys and passwords from env vars so nothing "
        "sensitive ever lands in git.",
    ),
    "short_replies": (
        "Keep your replies short.",
        "I'd like you to keep your answers brief - a few sentences and the diff, no long explanations - "
        "because I read these on my phone a lot.",
    ),
    "no_orm": (
        "No ORM; write raw SQL.",
        "We keep database access as plain SQL through the psycopg cursor, no SQLAlchemy or any other ORM, "
        "because the DBA reviews every query by hand.",
    ),
    "reversible_migrations": (
        "Every migration needs a down step.",
        "Please make sure each database migration is reversible with a working downgrade, since we roll "
        "back deploys fairly often.",
    ),
    "logging_not_print": (
        "Use the logger, never print().",
        "Don't use print statements for diagnostics; go through the logging module so the output ends up "
        "in our log aggregator with proper levels.",
    ),
    "api_compat": (
        "Don't break the public API.",
        "The public API must stay backward compatible - no renaming or removing exported functions or "
        "parameters, because downstream teams pin to it.",
    ),
    "docstrings": (
        "Every public function gets a docstring.",
        "I want a Google-style docstring on every public function and class; the docs site is generated "
        "from them.",
    ),
    "tests_before_commit": (
        "Run the full test suite before every commit.",
        "Before you commit anything, run the whole test suite locally and make sure it passes - CI takes "
        "forty minutes and I hate finding out late.",
    ),
    "full_names": (
        "No abbreviations in names.",
        "Spell identifiers out in full, like configuration instead of cfg and request instead of req; it "
        "makes the code much easier for new people to grep.",
    ),
    "ask_before_delete": (
        "Ask before deleting any file.",
        "Always check with me before you delete or move files. I've lost work before to an overeager "
        "cleanup.",
    ),
}

LIFTS: dict[str, tuple[str, ...]] = {
    "no_new_deps": (
        "ok you can add new dependencies now, just mention which ones in the summary",
        "We finally have Dependabot and a license scanner in the pipeline, so consider the no-new-packages "
        "rule retired. Pull in whatever library does the job best.",
        "forget the deps thing",
        "Also, the ban on adding dependencies is lifted - go ahead and use httpx instead of the urllib "
        "wrapper. After that, please rewrite the retry loop in client.py.",
        "Please disregard my earlier instruction about not adding packages to requirements.txt.",
        "let the no-new-libraries thing go, it's slowing us down more than it helps",
        "third-party packages are allowed again",
        "Effective immediately, the freeze on new dependencies is discontinued.",
    ),
    "tests_dir": (
        "You don't have to put tests in tests/ anymore - next to the module is fine.",
        "scratch what i said about the tests folder",
        "The whole org switched to colocated test files, so the separate tests/ directory convention is "
        "over. Put foo_test.py right beside foo.py.",
        "the top-level tests/ requirement - gone.",
        "where the test files live is your call now",
        "Packaging excludes *_test.py on its own now, so count the tests-under-tests/ rule as withdrawn. "
        "Then add a test for the date parser wherever it fits.",
        "keeping tests in tests/ isnt a thing here anymore btw",
        "Reverting my instruction about the tests directory; test files can go anywhere that makes sense.",
    ),
    "conventional_commits": (
        "Feel free to write commit messages however you like, the feat:/fix: prefixes aren't needed.",
        "We dropped semantic-release last sprint, so Conventional Commits is no longer a requirement.",
        "stop with the conventional commit prefixes",
        "that conventional-commits rule is dead",
        "The team voted to drop the commit prefix convention, plain summaries from now on.",
        "hey changed my mind on commit message format, plain english is fine",
        "Our release bot now reads PR labels rather than commit titles. Accordingly, the Conventional "
        "Commits policy is rescinded.",
        "no more chore:/feat: stuff in commits pls",
    ),
    "no_push_main": (
        "you can push straight to main now",
        "Branch protection is off and I'm the only one on this repo, so the no-direct-push rule doesn't "
        "apply anymore. Commit to main directly.",
        "PRs for every change before main? nah, not anymore.",
        "Permission granted to push directly to main. Please push the hotfix there now.",
        "The never-push-to-main rule is no longer in force.",
        "ok the branch-and-PR days are over, main is fair game",
        "We've outgrown the PR-for-everything rule since moving to trunk-based development; push to main "
        "directly.",
        "You are no longer bound by the requirement to go through a pull request before anything lands on "
        "main.",
    ),
    "type_hints": (
        "Type hints are optional now.",
        "We took mypy out of CI, so you're off the hook for annotating every function.",
        "i take back the type annotations rule",
        "Quit adding type hints to everything, it's not required any more.",
        "I'm relaxing the strict typing requirement entirely - annotate where it helps, skip it where it "
        "doesn't.",
        "drop the type hints rule",
        "Annotations: not required going forward. Now, can you look at why the cache test is flaky?",
        "Honestly the full-annotations rule was a mistake on my part for a scripts repo. Undo it.",
    ),
    "changelog": (
        "ok forget the changelog thing",
        "Release notes get generated from merged PR titles now, so no need to touch CHANGELOG.md anymore.",
        "changelog entries aren't mandatory anymore",
        "Please stop adding an entry to CHANGELOG.md for every change.",
        "Strike the changelog rule from the list.",
        "skip the changelog from here on out",
        "We deleted CHANGELOG.md, so the Unreleased-entry rule is moot. Next, bump the version in "
        "pyproject.toml.",
        "dont need changelog updates anymore",
    ),
    "secrets_env": (
        "This is a throwaway sandbox full of dummy keys, so hardcoding credentials is fine now - the "
        "env-var rule for secrets is off.",
        "We moved to the secrets manager SDK, which fetches keys by itself, so reading credentials from "
        "environment variables is no longer a requirement.",
        "kill the secrets-must-be-env-vars rule",
        "I'm dropping the requirement to read API keys from env vars.",
        "secrets dont have to come from the environment anymore, just put them in settings.py, it's all "
        "fake data",
        "No longer insisting on environment variables for credentials - the config file is fine.",
        "The hardcoded-credentials ban is lifted for this repo; it only ever talks to the local mock server.",
        "Pretend I never said anything about keeping passwords out of the code, for this demo it doesn't "
        "matter.",
    ),
    "short_replies": (
        "You don't need to keep answers short anymore, go into as much detail as you want.",
        "I'm mostly at my desk now, so consider the keep-it-brief rule retired. Long explanations are "
        "welcome.",
        "scratch what i said about short replies",
        "You may write longer, fuller responses from now on.",
        "The short-answers rule is history.",
        "Ignore my earlier request to keep replies terse; I actually want to see your full reasoning.",
        "don't worry about keeping it brief from now on",
        "Changed my mind re: short answers, explain things properly. Then walk me through the auth flow.",
    ),
    "no_orm": (
        "Also, the no-ORM restriction is lifted - feel free to use SQLAlchemy. Next, fix the login bug.",
        "We don't have a DBA reviewing queries anymore, so the raw-SQL-only rule no longer matters. Use an "
        "ORM where it's cleaner.",
        "ORMs are allowed again",
        "i've come around on ORMs, go ahead with sqlalchemy models, the raw sql rule is done",
        "The plain-SQL requirement for database access has been rescinded.",
        "you're free to use an ORM instead of hand-written SQL now",
        "Enough with the cursor-and-raw-SQL rule, an ORM is fine.",
        "You have my blessing to use Django's ORM or SQLAlchemy; the psycopg-only policy is over.",
    ),
    "reversible_migrations": (
        "Migrations don't need a downgrade step anymore.",
        "We switched to forward-only migrations with DB snapshots for rollback, so writing down() "
        "functions isn't necessary going forward.",
        "delete the reversible-migrations rule from your notes",
        "you can leave downgrade() out of migrations going forward",
        "Scratch the requirement that every migration be reversible.",
        "no more down migrations, we never run them anyway",
        "The reversible-migrations policy is retired. Please add the new index migration, upgrade only.",
        "I take back what I said about rollback steps in migrations.",
    ),
    "logging_not_print": (
        "print() is fine now, it's just a CLI.",
        "This tool only runs locally and nobody aggregates its logs, so the no-print rule doesn't apply "
        "anymore.",
        "u can go back to using print statements",
        "We're not doing the logger-only thing anymore.",
        "The ban on print() for diagnostics is waived, permanently.",
        "we don't care about logging vs print anymore, use whatever",
        "Using the logging module instead of print isn't something I need you to enforce anymore.",
        "Never mind the print-vs-logging rule - either is fine. Now add some progress output to the sync "
        "command.",
    ),
    "api_compat": (
        "We're cutting 2.0, so backward compatibility is no longer a constraint - rename and remove "
        "whatever you need in the public API.",
        "you can break the public API now",
        "api compat rule? dead. ignore it",
        "The downstream teams have all migrated off the old client, so the don't-break-the-API rule can go.",
        "Feel free to rename exported functions and change their parameters; keeping the old signatures "
        "is no longer needed.",
        "no need to keep backwards compat anymore",
        "I'm relaxing the public API freeze entirely - breaking changes are fine going forward.",
        "That backward-compat requirement for the public interface - gone. Then clean up the deprecated "
        "shims in api.py.",
    ),
    "docstrings": (
        "Docstrings are optional now.",
        "We stopped generating the docs site from docstrings, so you no longer need one on every public "
        "function.",
        "dont bother with docstrings anymore",
        "The docstring-on-everything rule no longer holds.",
        "Don't worry about Google-style docstrings from now on unless something is genuinely confusing.",
        "We removed the docstring requirement from CONTRIBUTING.md, so you can stop following it too.",
        "unlearn the docstring-on-every-function habit, it's not a rule anymore",
        "no more mandatory docstrings. next up: split utils.py into smaller modules",
    ),
    "tests_before_commit": (
        "CI is fast now, so we can stop bothering with full local test runs before each commit.",
        "CI got down to three minutes, so the run-everything-before-committing directive has run its course.",
        "i'm done with the run-all-tests-before-commit routine, just commit",
        "Stop running the full test suite before every commit.",
        "no need to run tests locally before committing from here on",
        "I'm revoking the pre-commit test run requirement; just commit and let CI catch it.",
        "Consider yourself released from running the entire suite before commits.",
        "Running the entire suite before committing is no longer required. Please commit the refactor as is.",
    ),
    "full_names": (
        "Abbreviations in names are fine now.",
        "We adopted upstream's style, which uses cfg, req and ctx everywhere, so drop the no-abbreviations "
        "rule.",
        "use your judgment on abbreviating identifiers, the spell-it-out rule is gone",
        "you can use short names like cfg and req again",
        "We've abandoned the full-word naming convention.",
        "Count the no-abbreviations naming rule as withdrawn.",
        "the spell-out-every-name thing was only while the interns were onboarding, that's over now",
        "Overriding my earlier naming rule: abbreviations are okay. Now rename the handler module to match "
        "the route.",
    ),
    "ask_before_delete": (
        "You can delete files without asking me now.",
        "Everything is in git and backed up nightly, so the ask-before-deleting rule is unnecessary. "
        "Remove dead files as you find them.",
        "no need to check with me before removing files anymore",
        "lets ditch the ask-first-before-deleting thing",
        "I'm lifting the rule about getting my OK before you delete or move files.",
        "quit asking before deleting stuff, just do it",
        "Turn off the confirm-before-delete habit; you don't need my sign-off anymore.",
        "We're not doing the confirm-before-delete step anymore. Go ahead and remove the old scripts folder.",
    ),
}

NEGATIVES: dict[str, tuple[str, ...]] = {
    "no_new_deps": (
        "Reminder: no new dependencies, please.",
        "Parse the YAML config with what we already have installed; requirements.txt stays as it is.",
        "Is python-dateutil already a dependency, or would using it count as adding one?",
        "Just this once you can add pytest-mock for the test refactor; after that the no-new-dependencies "
        "rule is back in effect.",
        "Heads up, the dependency audit came back clean this month.",
        "And the no-new-deps rule covers dev dependencies and pre-commit hooks too.",
    ),
    "tests_dir": (
        "Again, tests belong in tests/.",
        "Add a regression test for the slug bug under tests/.",
        "Should fixtures go in tests/ as well, or in a separate folder?",
        "For this quick spike it's fine to leave the test next to the script, but move it into tests/ "
        "before we merge and keep doing it that way.",
        "Looks like pytest picks up tests/ automatically now that the rootdir is set.",
        "That includes integration tests - tests/integration/, not a top-level integration/ folder.",
    ),
    "conventional_commits": (
        "Don't forget the feat:/fix: prefixes on commits.",
        "Please squash these three commits into one with a proper conventional commit message.",
        "Which conventional commit type should a dependency bump use, chore: or build:?",
        "This one merge commit can keep git's default message; everything else stays conventional.",
        "The changelog generator picked up all your feat: commits nicely, thanks.",
        "Also add a scope, like fix(parser):, whenever the commit is confined to one package.",
    ),
    "no_push_main": (
        "As usual, nothing goes directly onto main.",
        "Open a PR for the rate limiter branch and request a review before it goes to main.",
        "What's the fastest way to get this onto main without bypassing the PR?",
        "Main is broken in prod, so for this single hotfix push directly; after that we go back to PRs.",
        "Someone turned branch protection back on for main yesterday.",
        "And no force-pushing to release branches either, same as main.",
    ),
    "type_hints": (
        "Make sure the new helpers are fully typed.",
        "Add type hints to the functions in loader.py, they're missing.",
        "Do we annotate self-evident return types like -> None too?",
        "Skip annotations in the throwaway migration script just this one time; everything else stays typed.",
        "mypy went green after your last change.",
        "Type hints apply to test files as well, not only src.",
    ),
    "changelog": (
        "Remember the CHANGELOG entry for this fix.",
        "Add an Unreleased entry to the changelog for the new --dry-run flag.",
        "Should typo fixes in docs get a changelog line?",
        "No changelog entry for this internal refactor, it's invisible to users; back to normal after that.",
        "The release notes for 3.2 came out clean thanks to the changelog.",
        "Also link the issue number in each changelog entry from now on.",
    ),
    "secrets_env": (
        "Keep those API keys in env vars like we agreed.",
        "Move the Stripe key in payments.py into an environment variable.",
        "What should I name the env var for the webhook secret?",
        "For this one local debug session you can paste the test token inline, but delete it before "
        "committing; the env-var rule for secrets stands.",
        "gitleaks flagged no hardcoded credentials on the last scan.",
        "That goes for test fixtures too - no real-looking tokens or passwords in the repo.",
    ),
    "short_replies": (
        "keep it short pls",
        "Summarize the diff in two sentences.",
        "Was that reply short enough, or should I expect even briefer answers?",
        "For this one question I do want the long version with all the tradeoffs; after that, back to "
        "short answers.",
        "Your replies have been much easier to read on my phone lately, nice and brief.",
        "And skip the preamble entirely in your answers, just lead with the result.",
    ),
    "no_orm": (
        "Remember, plain SQL only, no ORM.",
        "Write the query for monthly active users as a raw SQL string with bound parameters.",
        "Is a query builder like pypika considered an ORM for our purposes?",
        "The admin prototype can use SQLAlchemy since it's getting thrown away next week; production code "
        "stays raw SQL.",
        "The DBA approved all the SQL queries in last week's PR.",
        "That includes the migration scripts - no ORM there either.",
    ),
    "reversible_migrations": (
        "Every migration still needs a working downgrade.",
        "Write the down() for the users table migration, it's missing.",
        "How do I make a migration that drops a column reversible if the data's gone?",
        "The data backfill migration can be one-way this time since it can't be undone anyway; all the "
        "others keep their downgrades.",
        "The rollback on staging went smoothly thanks to the migration downgrade steps.",
        "And please test each migration's downgrade locally, not just write it.",
    ),
    "logging_not_print": (
        "No print() calls, use the logger.",
        "Replace the prints in sync.py with logger.debug calls.",
        "What log level should the retry messages use instead of print?",
        "A print in this one-off debugging session is fine, just take it out before the commit and stick "
        "to logging.",
        "The log aggregator is showing our service's lines with proper levels now.",
        "Same goes for the scripts folder - logger there too, no print.",
    ),
    "api_compat": (
        "Keep the public API backward compatible.",
        "Add a new optional timeout parameter to fetch() without breaking existing callers of the API.",
        "Does renaming a private helper count as breaking the public API?",
        "We'll allow this one breaking change to the export format since the security fix requires it; "
        "the rest of the API stays compatible.",
        "The downstream team said the last release upgraded without any changes on their side.",
        "That backward-compatibility promise extends to the CLI flags as well.",
    ),
    "docstrings": (
        "Don't skip the docstrings on public functions.",
        "Write docstrings for the public methods in client.py.",
        "Do private helpers need docstrings too?",
        "Leave the docstrings off the generated protobuf stubs this time; the rule still holds for our "
        "own code.",
        "The docs site build picked up the new docstrings fine.",
        "Docstrings should include a Raises: section too when a function raises.",
    ),
    "tests_before_commit": (
        "As always, full test run before you commit.",
        "Run the suite and then commit the parser fix if it's green.",
        "Does the test run before a commit have to include the slow integration tests?",
        "I need this pushed in the next five minutes, so commit without running the suite just this once; "
        "back to normal afterwards.",
        "The test suite finishes in about six minutes locally now.",
        "And run the linters as part of that pre-commit test run too.",
    ),
    "full_names": (
        "Reminder: no abbreviated names.",
        "Rename cfg to configuration in settings.py.",
        "Is 'id' acceptable as a name or do you want 'identifier'?",
        "Leave the abbreviations in this hotfix to keep the diff small; we follow the naming rule again "
        "from the next change.",
        "New people have said the spelled-out names make grepping much easier.",
        "The no-abbreviations rule applies to database column names as well.",
    ),
    "ask_before_delete": (
        "Check with me before deleting anything, as before.",
        "List the files you think are dead and I'll tell you which ones to delete.",
        "Does renaming a file count as something you need to ask me about first?",
        "You can delete the build/ directory without asking this time; otherwise keep checking with me "
        "before deleting files.",
        "The nightly backup job is running again.",
        "That also applies to git branches - ask before deleting those.",
    ),
}
