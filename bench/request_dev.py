"""Dev set of user requests (tasks, one-offs, standing rules), written blind; tuning on it is allowed.

A development set of messages a user might type to a coding agent, for tuning the
classifier that decides which messages are standing rules. It was written blind to
the project's readings: the writer never read longhaul_daemon/ (nor tests/) and never
saw the bench banks, so it is independent of the rules it is used to tune. Tuning on
it is allowed; it is not a held-out test set.

Classes:

TASKS
    Asks for a piece of work now, or asks a question. About a third use words that
    often appear in rules (always, never, every, must, should, don't, only, make sure,
    keep), but only about the work in hand. None holds as an order for the session.
ONE_OFFS
    Bounded to this occasion: an exception to the usual practice or a temporary
    arrangement (this PR, this hotfix, until Friday's demo, while we debug this).
    Must never be turned into a standing rule.
RULES
    Standing instructions that hold for the rest of the session: always/never
    imperatives, "from now on", house conventions, preferences stated as facts about
    the project, rules that read like tasks, and about thirty rules embedded in a
    message that also asks for a task.

Messages vary in domain (web backends, CLIs, data pipelines, ML, infra, mobile,
games, embedded), voice, spelling (British and American), length and care.
"""

from __future__ import annotations

TASKS: tuple[str, ...] = (
    "Add a --json flag to the export command so the output can be piped into jq.",
    "We need the CSV importer to skip blank rows instead of blowing up on them.",
    "It'd be great if the retry logic in http_client.py backed off exponentially, capped at 30 seconds.",
    (
        "The login page should show an error when the password is wrong. Right now it just reloads with an "
        "empty form."
    ),
    "Next up: the pagination bug on /api/orders where page 2 repeats the last item from page 1.",
    (
        "Time to wire the cache into the API layer. Start with the product lookup endpoint, it's the hottest "
        "path."
    ),
    "How about we split utils.py into two modules, one for string helpers and one for date helpers?",
    (
        "Any idea why the build is red? The last green commit was a3f9c1e and nothing since then looks "
        "suspicious to me."
    ),
    "Can we get a benchmark for the parser? I'd like numbers for 1 KB, 1 MB and 100 MB inputs.",
    (
        "I need a script that walks logs/ and prints the ten slowest requests from yesterday, with their "
        "paths and durations."
    ),
    "Write a migration that adds a nullable `archived_at` timestamp to the projects table.",
    "pls fix the typo in the README install section, it says `pip isntall`",
    "What does the `--strict` flag in the config loader actually do? I can't find where it's read.",
    (
        "CI is failing with `ModuleNotFoundError: No module named 'yaml'` in test_config.py. Can you sort it "
        "out?"
    ),
    "The Docker image is 1.4 GB. Can you slim it down with a multi-stage build?",
    "Port scripts/deploy.sh to Python, keeping the same flags and exit codes.",
    (
        "The Android app crashes on rotate in SettingsActivity; the stack trace points at "
        "onSaveInstanceState. Have a look?"
    ),
    "The player clips through the floor when jumping off the moving platform in level 3. Figure out why.",
    "Add type hints to everything in billing/invoice.py.",
    (
        "Could you explain how the scheduler picks which job runs next? I'm reading scheduler.py and getting "
        "lost around line 240."
    ),
    "Refactor the giant if/elif chain in dispatch() into a dict of handlers.",
    "Let's add a health check endpoint at /healthz that returns 200 and the git sha.",
    "Terraform plan wants to destroy and recreate the RDS instance and I only changed a tag. Why?",
    "Bump the S3 upload timeout to 120s, big files are failing halfway.",
    (
        "Validation loss plateaus at 0.42 after epoch 3. Try a cosine LR schedule with warmup and report "
        "back what happens."
    ),
    "Write a unit test for the leap-year edge case in date_utils.is_valid().",
    "we're leaking file handles in the thumbnail worker somewhere, can u track it down",
    "Set up a GitHub Actions workflow that runs pytest on 3.10, 3.11 and 3.12.",
    "Add a 300 ms debounce to the search box so we're not firing a request on every keystroke.",
    "Why is `make docs` suddenly taking four minutes?",
    "Add rate limiting to /login: five attempts per minute per IP.",
    (
        "Password reset links expire immediately. I think the TTL is in seconds but we're passing minutes. "
        "Can you check auth/tokens.py?"
    ),
    "Add an index on orders.customer_id, the dashboard query is doing a seq scan over 30M rows.",
    "Swap the hand-rolled JSON validation in api/handlers.py for pydantic models.",
    "Can you add a `created_by` field to the audit log entries?",
    "The GraphQL resolver for user.posts is doing N+1 queries. Batch it with a dataloader.",
    "Our CORS config rejects requests from the staging frontend. Allow https://staging.example.app please.",
    "Add a --dry-run option to the cleanup command that prints what would be deleted without deleting it.",
    (
        "`mytool sync` prints a traceback when the config file is missing. Make it print a friendly message "
        "and exit with 2."
    ),
    "Shell completion for zsh would be nice. Can click generate that for us?",
    "The progress bar flickers on Windows terminals. Any ideas?",
    "Add a `version` subcommand that prints the package version and the Python version.",
    (
        "The nightly Airflow DAG failed at load_to_warehouse with `psycopg2.errors.UniqueViolation: "
        'duplicate key value violates unique constraint "events_pkey"`. It\'s the first failure in weeks. '
        "Can you figure out where the duplicates are coming from? I suspect Tuesday's late-arriving events "
        "backfill."
    ),
    "Write a dbt model that rolls daily_sessions up to weekly, with weeks starting on Monday.",
    (
        "The ingest job writes thousands of ~40 KB Parquet files. Coalesce them to roughly 128 MB before "
        "writing."
    ),
    "Dedupe the customers table on lower(email), keeping the most recently updated row.",
    "Can the Spark job take the date partition as an argument instead of the hardcoded 2023-01-01?",
    "Add early stopping to train.py with a patience of 5 on val loss.",
    "Plot the confusion matrix for the latest checkpoint and save it under reports/.",
    "The tokenizer is splitting emoji into garbage bytes. Look at preprocess.py?",
    "Why does eval.py give a slightly different accuracy every run? I did set the seed.",
    "Try mixed precision and tell me how much faster an epoch gets on the 4090.",
    "Write a Helm chart for the worker service.",
    "The ingest pod keeps getting OOMKilled at 512Mi. Bump the limit to 1Gi and set the request to 768Mi.",
    "nginx is throwing intermittent 502s behind the ALB. could it be the keepalive settings?",
    "Add a Prometheus counter for failed jobs, labelled by job type.",
    "The iOS build fails with 'Signing for \"App\" requires a development team'. What do I need to set?",
    "Add pull-to-refresh on the feed screen.",
    "In dark mode the onboarding text is black on near-black. Fix the colours.",
    "The Flutter app janks when scrolling the photo grid. Can you profile it and tell me what's slow?",
    "Add about 100 ms of coyote time to the jump.",
    "Enemy pathfinding gets stuck on diagonal corners. Is the A* heuristic off?",
    "Save files from 1.2 won't load in 1.3. Write a loader for the old format.",
    "Make the camera shake on explosions. Subtle, maybe 0.2 s.",
    "The watchdog resets the board roughly every 40 minutes. Can you work out which task is starving it?",
    "Add a CRC16 check to the packet parser in comms/packet.c.",
    "We're at 98% flash on the ATmega328. Find what we can trim.",
    "The BME280 returns all 0xFF over I2C after a warm reset. Ideas?",
    "What's the difference between our Config and Settings classes? Do we really need both?",
    "Is there a reason the tests use a real Redis instead of fakeredis?",
    "how many places still call legacy_auth()? want to know before i rip it out",
    "Explain this regex to me: ^(?=.*\\d)(?=.*[a-z]).{8,}$",
    (
        "Okay so the nightly export to the partner SFTP failed three nights running. The log just says "
        "`paramiko.ssh_exception.SSHException: Error reading SSH protocol banner`. Nothing changed on our "
        "side that I know of, but they might have rotated their host key. Can you check exporters/sftp.py, "
        "add proper error handling and make the log line say what actually went wrong?"
    ),
    (
        "I've been staring at this for an hour. SignupForm.tsx submits twice when you press Enter in the "
        "email field, once from the onKeyDown handler and once from the form's onSubmit, I think. Can you "
        "confirm that's what's happening and fix it?"
    ),
    (
        "hey so the training run on the a100 box died at step 18k with CUDA OOM. batch 64, seq len 2048. i'd "
        "rather not drop the batch size, can you add gradient accumulation and activation checkpointing to "
        "train.py and see if it fits?"
    ),
    (
        'Context: we moved image storage from local disk to S3 last sprint. The admin "download all" '
        "button still zips files from /var/data/images, which is empty now, so people get an empty zip. Can "
        "you rewrite that view to stream from S3? The bucket name is in settings.MEDIA_BUCKET."
    ),
    (
        "Quick one before lunch: pyproject.toml still pins `requests<2.30` but I don't think anything needs "
        "that. Can you check whether dropping the upper bound breaks anything, and drop it if not?"
    ),
    (
        "The CAN logger on the test rig writes frames to the SD card, but after about two hours the file "
        "gets corrupted: the last few hundred frames are zeros. I suspect we aren't flushing before the "
        "card's buffer fills. The write path is in logger/sd_write.c. Can you take a look and propose a fix?"
    ),
    (
        'Customer ticket #4821: "When I export my timesheet for March, the hours for the 31st are '
        'missing." Probably an off-by-one in the month range. Reproduce it in a test, then fix it.'
    ),
    (
        "the webgl build is 90mb and takes forever on phones. can you go through the asset bundles and "
        "texture compression settings and tell me what's bloating it?"
    ),
    (
        "Hi! Hope you're well. Would you mind adding a short section to CONTRIBUTING.md on running the "
        "integration tests locally? Thanks so much."
    ),
    "sorry, one more: the favicon is missing on the docs site",
    "can u make the warning banner colour less aggresive, its basically neon",
    "fix teh broken link in docs/setup.md pls",
    "hmm, the flamegraph says 60% of the time is in json.dumps. could we use orjson there?",
    "Add a `--since 2h` style duration filter to the `logs` subcommand.",
    "The Go service panics with `assignment to entry in nil map` at handlers/session.go:88. Fix?",
    "Add OpenTelemetry tracing to the checkout flow, at least around the three downstream calls.",
    "Generate a CSV of all users who signed up in Q3 but never created a project. Just the query is fine.",
    "Write a small Rust CLI that reads a pcap and prints per-host byte counts.",
    "The SQLAlchemy session isn't being closed in the Celery tasks. Wrap them properly.",
    "Upgrade Django from 4.2 to 5.0 and fix whatever breaks.",
    "Can you add a sound effect when the player picks up a coin? There's coin.wav in assets/sfx.",
    "Implement the BLE characteristic for battery level on the nRF52.",
    "The ADC readings are noisy. Add a simple moving average filter with a window of 8.",
    "Add a linker script section so the bootloader config lives at 0x0800F800.",
    "Why is the Next.js page doing a full reload when I navigate between tabs?",
    "Our Lighthouse score dropped to 61 after the hero video went in. Lazy-load it?",
    "Deep links to /invite/:code don't open the app on Android 13. Check the intent filters.",
    "Add a confirm dialog before the user leaves the editor with unsaved changes.",
    "Write an Ansible role to install and configure node_exporter.",
    "Move the cron jobs from the old VM into Kubernetes CronJobs.",
    "The Kafka consumer falls behind every afternoon around 3pm. What's going on?",
    "Add a schema check to the ingest step that rejects files missing the `event_ts` column.",
    "Backfill the `country` column from the IP lookup table for rows before June.",
    "Write a quick notebook comparing the old and new ranking model on last week's clicks.",
    "Quantise the model to int8 and measure the accuracy drop on the holdout set.",
    (
        "The data loader is the bottleneck, the GPU sits idle half the time. Can you add prefetching and "
        "more workers?"
    ),
    "What would it take to support Postgres as well as MySQL in the repository layer?",
    "Can you summarise what changed between v2.3.0 and v2.4.0 from the git log?",
    "Give me a one-liner to find every blob over 100 MB in this repo's history.",
    "Profile the startup of the CLI, it takes 1.8 s just to print --help.",
    "There's a race in the download manager when two tabs request the same file. Add a lock.",
    "Turn the error strings scattered through errors.py into a lookup table keyed by error code.",
    "Draft a PR description for the changes on this branch.",
    "Write the docstring for `reconcile_ledgers`; it's the only undocumented function in that module.",
    "Clean up the unused imports in the reports package.",
    (
        "So the mobile team says `/v2/feed` is slow: p95 is about 1.9 s, while `/v1/feed` was around 400 ms. "
        "The difference is that v2 joins against the reactions table and serialises the full user object for "
        "every reaction. I'd like you to profile it locally with the seed data and suggest where to cut. "
        "Maybe just return reaction counts plus the viewer's own reaction?"
    ),
    (
        "Weird one: `pytest -k test_export` passes on its own, but when I run the whole suite, test_export "
        "fails with `AssertionError: assert 'Europe/London' == 'UTC'`. Feels like some other test is "
        "changing the TZ env var and not resetting it. Can you find the culprit?"
    ),
    (
        "We're getting complaints that offline mode in the field app loses data. Repro: go offline, create "
        "two inspections, kill the app, come back online. Only the second one syncs. The local queue is in "
        "sync/OfflineQueue.kt and my guess is we overwrite the queue file instead of appending to it. Can "
        "you check?"
    ),
    (
        "The robot arm controller overshoots by about 4 degrees on fast moves. PID gains are in "
        "config/arm.yaml (kp=2.1, ki=0.05, kd=0.3). Could you add a derivative filter and a simple "
        "feedforward term in control/pid.c, then run the sim with the step-response script and show me the "
        "plots?"
    ),
    "Add a leaderboard screen that pulls the top 50 scores from the backend.",
    "The particle system eats 6 ms a frame on the Steam Deck. Pool the particles?",
    "Implement wall-jumping. Same feel as Celeste if you can manage it.",
    "Find out why the nightly build of the Unreal project takes 3 hours now; it was 70 minutes in March.",
    "Write tests for the token bucket in ratelimit.py, there are none right now.",
    "The `search` endpoint is case-sensitive. Make it case-insensitive.",
    "There's still a print() in the middle of sync.py from your last change. Remove it.",
    (
        "load_profile() assumes the file exists and dies with FileNotFoundError when it doesn't. Add a check "
        "and a clear error message."
    ),
    "The summary table on the finance dashboard shows 14 decimal places. Format them to two.",
    "Make sure the new endpoint returns 404 for unknown ids, not a 500.",
    (
        "The function should never return None here, fix that. normalize_path('') comes back as None and the "
        "caller explodes."
    ),
    (
        "Keep the public signature of parse_args() exactly as it is while you refactor its internals; three "
        "scripts call it."
    ),
    "Every test in test_importer.py started failing after the merge. Can you see what broke?",
    "This read loop must terminate if the socket closes mid-read; right now it spins forever. Please fix it.",
    "Don't let the retry loop hammer the server. Add a delay between attempts in fetch_all().",
    (
        "The cart total should always include tax by the checkout page, but for Canadian addresses it "
        "doesn't. Fix it."
    ),
    (
        "Only admins should see the Delete button on the project page. Editors can see it right now, which "
        "is a bug."
    ),
    "The scraper must respect robots.txt. Add that check to crawler.fetch().",
    "Make sure the migration is reversible; write the down() as well.",
    "Never mind the caching idea. Can you try precompiling the regex instead and measure the difference?",
    "The cleanup cron should run at 02:00 UTC, not 02:00 local. Change the schedule.",
    "Every time I click Save the modal closes without saving anything. Can you reproduce it?",
    (
        "I always get a segfault when I run the simulator with --threads 8. Backtrace: `#0 "
        "0x0000555555559a3c in grid_update (g=0x0) at grid.c:142`. Any idea?"
    ),
    "Keep an eye on memory while you run the big import and tell me the peak RSS.",
    "The leaderboard sort must be stable. Swap the quicksort in rank.c for a merge sort.",
    "You should be able to reproduce the crash with `./run.sh --level 7`. Can you dig in?",
    "Don't forget to update the OpenAPI spec when you add the `discount_code` field.",
    "This reporting query should only hit the read replica. Route it there.",
    "Make sure the CSV export escapes commas inside quoted fields; a customer got shifted columns.",
    "The uploader never retries on 503, which is why half of last night's batch got dropped. Add retries.",
    (
        "We must ship the targetSdk 34 bump before the Play Store deadline. Can you do the bump and fix what "
        "breaks?"
    ),
    "Check that every route in routes/admin.py has @require_admin. I think one is missing it.",
    "Keep the old /v1/user route alive as a redirect when you rename it to /v1/users.",
    "Why does test_schedule_next_run only ever fail on Tuesdays??",
    (
        "The heater loop should never drive the PWM above 80% duty, but it hit 100% in yesterday's log. Find "
        "out why."
    ),
    "Make sure the shader compiles on Metal as well before you call this one done.",
    "Always-on-top isn't working for the overlay window on Linux. Can you fix it?",
    'The "never expire" option on API keys doesn\'t persist after saving. Check the settings form.',
    "Should we use a queue here instead of polling? Give me your honest take.",
    "Make sure the fix covers the empty-list case, since that's what actually crashed prod.",
    (
        "The config loader must fail loudly if DATABASE_URL is missing. Right now it silently falls back to "
        "SQLite. Change that."
    ),
    (
        "Each worker should get its own connection pool; at the moment they share one and deadlock. Fix it "
        "in worker/pool.py."
    ),
    (
        "Ensure the dedup step runs before the join in the pipeline. It's after it at the moment, so we "
        "double count."
    ),
    (
        "Only refresh the token when it's within 60 seconds of expiry; we currently refresh on every "
        "request. Change that in authClient.ts."
    ),
    (
        "Never seen this before: `RuntimeError: dictionary changed size during iteration` in cache.evict(). "
        "What's happening?"
    ),
    "Every so often the websocket drops and the client never reconnects. Add reconnection with backoff.",
    (
        "The invoice PDF should always show our VAT number in the header; EU customers keep asking. Please "
        "add it."
    ),
    "Make sure thumbnails keep their aspect ratio when you add the resize step.",
    "The spawner should never place an enemy within 5 units of the player. Add that check.",
    "The import must be idempotent. Running it twice currently doubles the rows. Fix it.",
    (
        "Every API response should carry the X-Request-Id header, and the orders service is the only one "
        "that doesn't. Add it there."
    ),
    (
        "Make sure the backup script exits non-zero when pg_dump fails. It swallowed an error last week and "
        "we went three days without a backup before anyone noticed. The script is ops/backup.sh; the failing "
        "bit is the pipe into gzip, which hides pg_dump's exit status."
    ),
    (
        "The firmware should only write to EEPROM when the value changes. It writes every loop right now and "
        "we're wearing the cells out."
    ),
    "Should the retry count be configurable? If you think so, add it to settings.toml.",
    (
        "The list view must show the newest items first. It flipped to oldest-first after the API change. "
        "Fix the sort."
    ),
    (
        'Always seeing "connection refused" from the test database in docker compose. Is the healthcheck '
        "wrong?"
    ),
    "The leaderboard should only count runs finished on Normal difficulty or harder. Filter the query.",
    (
        "Make sure we don't log full card numbers in the payment debug logs; I spotted one in staging today. "
        "Mask everything but the last four digits in payments/logging.py and add a test that feeds it a "
        "realistic-looking PAN to prove it."
    ),
    "Keep going with the refactor from where you left off. The storage layer is next.",
    "`await client.close()` never returns in test_shutdown, it just hangs. Why?",
    "The date picker shouldn't allow dates before today. Add a min.",
    (
        "Each invoice must have a unique number per tenant. Add a unique constraint on (tenant_id, number) "
        "and a migration for it."
    ),
    "Make sure the Lambda handles partial SQS batch failures; it should return batchItemFailures.",
    (
        "Search results should always be deduplicated by URL. I'm getting the same page three times for "
        '"pricing". Fix it.'
    ),
    "Only the first 100 rows show up in the export. Is there a hard limit somewhere?",
    "Don't let the progress bar go past 100%. It shows 104% on large uploads. Clamp it.",
    "Make sure the unit conversion handles negative temperatures; -40 currently comes out as 40.",
    "test_checkout is hitting the real payments API, which it shouldn't. Mock the client in that test.",
    "Make sure the new Terraform module pins the AWS provider to 5.x.",
    (
        "Keep the existing column order in the CSV when you add the new fields. Finance has Excel macros "
        "that depend on it."
    ),
    "Every pod in the staging namespace is stuck in ImagePullBackOff. Can you find out why?",
    "test_timezone_roundtrip always fails on macOS and never on Linux. Look into it?",
    (
        "The retry decorator should only retry on network errors, but it's retrying on ValueError too. "
        "Narrow it down."
    ),
    (
        "Make sure the bulk delete asks for confirmation before running. Someone wiped 400 rows by accident "
        "yesterday."
    ),
    "The forest level must hold 60 fps on the Switch. It's dropping to 40. Profile it.",
    (
        "The sensor readings should be averaged over 10 samples before we transmit them. Implement that in "
        "sensor_task()."
    ),
    "Don't just bump the timeout. Find out why the query takes 40 seconds in the first place.",
    "The modal should close when you press Escape. It doesn't. Fix?",
    "Make sure the password field isn't autocompleted on the admin login form.",
    (
        "Users should only be able to upload PNG and JPEG avatars; right now any file goes through. Add the "
        "check."
    ),
    "The sync job must not run twice at once. Add a lock file or an advisory lock, whichever is simplest.",
    (
        "The map tiles should keep loading when the user pans quickly, but they stop after a few seconds. "
        "Investigate."
    ),
    "Make sure the new dropdown works with keyboard navigation before we hand it to QA.",
    "Every chart on the dashboard shows NaN after midnight UTC. What's going on?",
    (
        "The bootloader should never jump to the app if the CRC check fails. Right now it does. Fix that in "
        "boot.c."
    ),
    (
        "get_recent_orders() always returns an empty list for customers with more than 1000 orders. Can you "
        "see why?"
    ),
    "The batch job should finish before 6am, but today it ran until 9. Find the slow stage.",
    (
        "Make sure the retry reuses the idempotency key from the original request. We double-charged someone "
        "on Monday."
    ),
    (
        "You must be missing a null check somewhere in the order mapper: orders without a shipping address "
        "crash it. Find and fix."
    ),
    (
        "Make sure the pricing page doesn't break on small phones; the comparison table overflows on an "
        "iPhone SE."
    ),
    (
        "The texture atlas should only be rebuilt when an asset changes, not on every play in the editor. "
        "Fix the build hook."
    ),
    (
        "I'm seeing `error[E0502]: cannot borrow `self.buf` as mutable because it is also borrowed as "
        "immutable` in src/frame.rs line 77. Can you restructure that function so it compiles? I tried "
        "cloning but it got ugly fast."
    ),
    (
        "The recommendation endpoint must answer within 150 ms at p99 for the launch, and it's at 380 ms on "
        "the load test. Where is the time going?"
    ),
    (
        "Can you keep the tooltip from clipping off the right edge of the screen? It happens on the last "
        "column of the grid."
    ),
    "Make sure the exported GeoJSON uses lon/lat order. QGIS is drawing everything in the Indian Ocean.",
    (
        "Only the checksum byte is wrong in the frames we send to the motor controller, everything else "
        "matches the spec. Compare our crc8() with the datasheet's reference code?"
    ),
    (
        "The ETL should never drop rows silently. Today 312 rows vanished between staging and mart. Trace "
        "where they went."
    ),
    "Every new user gets the welcome email twice. Find out why the signal fires twice.",
    "Make the cooldown on the dash ability 1.5 seconds instead of 2, and make sure the UI indicator matches.",
)

ONE_OFFS: tuple[str, ...] = (
    "Skip the linter on this PR, it's only a docs change.",
    "Don't bother with the changelog for the hotfix.",
    "Until the demo on Friday, leave the feature flag on.",
    "For the next hour or so, ignore the flaky test_upload_retry.",
    "No need to write tests for this spike, it's getting thrown away.",
    "Let the coverage drop for this branch, we'll fix it later.",
    "We can skip the usual review pass on this one; I'll look it over tomorrow.",
    "Just for the benchmark run, turn off logging.",
    "While we debug this, print the raw payloads.",
    "Just this once, push straight to main. The release is blocked and I've cleared it with the team.",
    (
        "For today only, point the import tests at the staging database; the prod mirror is down for "
        "maintenance."
    ),
    "You can leave the TODOs in for now.",
    "Temporarily disable the pre-commit hook so we can get this WIP commit in.",
    "This commit can have a scrappy message, it's getting squashed anyway.",
    "For the hackathon prototype, don't worry about type hints.",
    "Skip the docker build this time, just run the unit tests.",
    "On this particular migration it's OK to lock the table; we're inside the maintenance window.",
    "Until the vendor fixes their cert, set verify=False on that one client and leave a FIXME next to it.",
    "For this release only, bump the version by hand instead of using the release script.",
    "Leave the debug endpoint enabled until QA finishes testing tomorrow, then we'll pull it.",
    "Don't run the full e2e suite for this change, the smoke tests are enough.",
    "You can skip the Windows CI job on this branch, the runner's broken today.",
    "Ignore the type errors in legacy/ for the moment. We'll deal with them next sprint.",
    "this time don't squash, keep the commits separate so I can bisect",
    "just for now, pin numpy to 1.26 so the build goes green",
    "Since it's a one-line fix, no PR description needed this time.",
    "For the load test tonight, raise the rate limit to 10k/min.",
    "while I'm on call this week, route the alerts to my personal channel instead of #ops",
    (
        "Skip formatting this file for now. It's being rewritten next week and reformatting would wreck the "
        "diff."
    ),
    "For this one experiment, train on the full dataset without holding out a validation split.",
    "The tests can hit the real API on this branch only. It's a spike to see what the responses look like.",
    "You don't need to document this internal flag, it's going away next release.",
    "Leave the console.logs in until I've tested on the device, then strip them.",
    "For the demo build, make the splash screen skip after 1 second.",
    "OK to commit with --no-verify this once; the hook is broken on my machine.",
    "Just this time, go ahead and edit the generated client by hand. I'll regenerate it properly on Monday.",
    "We're in a code freeze apart from this fix, so leave any refactoring out of it.",
    "For this hotfix, target the release/2.3 branch instead of main.",
    (
        "Keep the old and new implementations side by side until the migration is finished, then we'll "
        "delete the old one."
    ),
    "Turn off the GPU for this test run, I want to see CPU timings.",
    "While the staging cluster is down, point the integration tests at the local minikube.",
    "It's fine if this PR goes over the 400-line limit, it's mostly generated fixtures.",
    "No need to bump the version for this doc fix.",
    "Until the flaky network test is fixed, mark it xfail so it stops blocking merges.",
    "You can ignore the style guide in the scratch notebook today, it's purely exploratory.",
    "For tonight's release, skip the canary stage and go straight to 100%.",
    "Don't write a migration for this column change yet; we're still iterating on the schema in this branch.",
    "For this patch only, accept the dependency on the beta SDK.",
    "Hold off on deleting the old S3 bucket until finance confirms the export, probably next Tuesday.",
    "This PR doesn't need a screenshot, it's backend only.",
    "For the conference talk repo, commit the notebooks with their outputs included.",
    "Just for the benchmark, compile with -O3 -march=native. Normal builds stay as they are.",
    "Let's not worry about i18n for the prototype screen.",
    "You can leave the lint warning in bar.py for this commit; I'll deal with it in the follow-up.",
    "skip the changelog entry, this is a revert",
    (
        "For the next couple of edits, don't rerun the integration suite after each change. I'm iterating "
        "fast and will run it at the end."
    ),
    "Ignore the deprecation warnings in this run, I know about them.",
    "For this emergency fix it's OK to skip the design doc.",
    "Leave the flag defaulted to true until the beta ends on the 15th.",
    "This once, you can reformat the whole file. Nobody else has branches touching it right now.",
    "The sandbox resets tonight, so don't bother cleaning up the test resources you create today.",
    "Just while we chase this, set the log level to TRACE.",
    "For the investor demo build, hide the beta badge.",
    "We can skip writing an ADR for this one, it's a trivial decision.",
    "go ahead and merge without the second approval, Priya's on leave and this is blocking the release",
    "Disable the cache while we chase this stale-data bug, then turn it back on.",
    "For this delivery, don't normalise the column names. The client wants them exactly as they sent them.",
    (
        "This time round put the new test next to the module rather than under tests/; the reviewer asked "
        "for it on this PR."
    ),
    "For the spike, a global variable is fine.",
    "You can leave the commented-out code in this commit, I want to see it in the diff review.",
    "for this run only use 2 workers, the box is shared today",
    "Use the mock payment provider until Stripe approves our account.",
    "For the hotfix build, skip the asset minification step. It's what keeps timing out.",
    "Leave the PR as a draft for now.",
    "Keep the maintenance banner up until the migration finishes tonight.",
    "Let's allow `any` in this adapter for now, the upstream types are a mess. We'll tighten it later.",
    "For the upcoming audit, export 90 days of logs instead of the usual 30.",
    "Until the new runner is provisioned, run the GPU tests manually on my box.",
    "For just this branch, let the build use the internal mirror instead of PyPI.",
    (
        "During tonight's migration window, writes may be rejected with 503. That's expected, so don't try "
        "to fix it."
    ),
    "Don't bother rebasing this branch; merge main into it this time.",
    "As an exception, let's vendor this one library. Upstream is unmaintained and we need a patch.",
    "ok for this quick test just put the credentials in .env.local, and don't commit that file",
    "Don't write docstrings for the throwaway helpers in this notebook.",
    "It's fine to break the public API in this release, it's a major version bump.",
    (
        "For the next few commits, don't bother with conventional-commit prefixes. I'll squash them before "
        "merging."
    ),
    (
        "Turn off the retry logic while we reproduce the duplicate-charge bug, otherwise we can't see the "
        "first failure."
    ),
    "Let the job run past its 10-minute limit this once; it's the backfill.",
    "Go ahead and use the deprecated endpoint for now. The new one doesn't support bulk yet.",
    "Skip the accessibility audit for the internal admin tool this sprint.",
    "You can leave that test skipped until the upstream fix lands in 4.2.",
    "For this throwaway script, no argparse, just hardcode the paths.",
    "Just for the screenshot, fill the dashboard with fake data.",
    "Comment out the telemetry call while we're on the plane wifi, it keeps timing out.",
    "for the moment don't touch the tests, let me see the implementation first",
    (
        "This one file has to run on the old build server until it's retired in March, so use Python 3.9 "
        "syntax in it."
    ),
    "This hotfix can go in without a ticket number in the commit.",
    "Fine to leave the warnings as they are in this PR; there's a cleanup PR queued up behind it.",
    "Don't bother with mobile breakpoints on this landing page, it's only for the trade-show kiosk.",
    "Bypass the approval gate for this deploy. I have sign-off from the CTO in Slack.",
    "For the next run, skip the data validation step. We already checked this file by hand.",
    "While the feature sits behind a flag it's okay that it has no analytics events.",
    "just this one time commit the lockfile change on its own",
    "Ignore the 80-column limit in this SQL file; the queries are unreadable when wrapped.",
    "Freeze the model at v3 until the A/B test wraps up at the end of the month.",
    "Leave the noisy log line in until we've caught the bug in prod, then drop it to debug level.",
    "Don't update the snapshots this time. I want to see which ones fail.",
    "We'll live with the slower query for this release; the proper index needs a DBA window.",
    "Skip signing the APK for this internal test build.",
    "As a one-off, run the cleanup job against prod by hand.",
    "Don't add this to the changelog yet. The feature stays hidden until launch and we'll announce it then.",
    "Until the redesign ships, keep using the old colour tokens on the settings page.",
    (
        "The 2-space indent in this YAML is fine for this file. It's copied from upstream and I want it to "
        "stay diffable."
    ),
    "For this backfill it's okay to bypass the ORM and run raw SQL.",
    "You can skip waiting for CI before showing me the diff this time, I just want a quick look.",
    "I'll be offline on the flight, so for the next few hours just commit locally and don't push anything.",
    (
        "Temporarily widen the allowed origins to * on the dev server so the contractor can test from their "
        "machine. Revert it tomorrow."
    ),
    "this round, don't refactor anything you touch, just make the bug go away. we ship in an hour",
    "For tomorrow's workshop repo, keep the solutions in a separate branch rather than deleting them.",
    "Use the old API key for tonight's batch; the new one isn't provisioned until tomorrow.",
    "Leave the breakpoint() call in while I step through it, I'll pull it out before the commit.",
    "For this data pull, include the test accounts. Marketing wants the raw numbers this time.",
    "No deprecation warning needed for this removal; the function was only in the beta for two days.",
    "On the load-test branch, turn off the auth middleware so the generator doesn't need tokens.",
    "Just for today's bug bash, set the session timeout to 8 hours.",
    "Normally I'd want a test first, but for this typo in the error message just fix it directly.",
    (
        "Right now, while the incident is open, you can restart the workers without asking me each time. "
        "Once it's closed, we're back to normal."
    ),
    "For this week's internal build, leave the verbose network logging on in the Android app.",
    (
        "Ship it without the French translation this time; the translator is back next week and we'll add it "
        "in a patch."
    ),
    "Since this branch will never be merged, feel free to hack on the vendored code directly.",
)

RULES: tuple[str, ...] = (
    "Never add new dependencies without asking me first.",
    "Tests go under tests/, mirroring the package layout.",
    "Always run the full test suite before telling me something is done.",
    "From now on, use pathlib instead of os.path.",
    "Going forward, every public function needs a docstring.",
    "Whenever you touch a SQL migration, write the down migration too.",
    "As a rule, no print statements in library code. Use the logger.",
    "Please make it a habit to show me the diff before committing.",
    "I don't want to see a bare `except:` ever again.",
    "We use tabs, not spaces.",
    "Commit messages are in the imperative mood.",
    "This codebase doesn't use exceptions for control flow.",
    "Nothing in src/ may import from scripts/.",
    "Keep every function under 50 lines.",
    "Run the linter before you show me anything.",
    "Don't ever push to main directly; always go through a PR.",
    "All timestamps are stored in UTC. Convert to local time only at the edges.",
    "UI strings go through the i18n helper, never hardcoded.",
    "We don't use an ORM in this service. Raw SQL with parameterised queries only.",
    "Use British spelling in anything user-facing: colour, organisation, licence.",
    "No force-pushes to shared branches, ever.",
    "Prefer composition over inheritance in this codebase.",
    "Every new endpoint needs an integration test, no exceptions.",
    "Don't touch anything under vendor/. It's synced from upstream and your edits would be overwritten.",
    "From here on out, answer in short bullet points unless I ask for detail.",
    "Keep line length at 100.",
    "Secrets live in the vault, never in the repo and never in committed env files.",
    "Always use `uv run` to run things, not pip or bare python.",
    "whenever you add a config option, document it in docs/config.md",
    "The frontend uses named exports only. No default exports.",
    "Money is always integer cents. Never floats.",
    "Feature flags are read through flags.is_enabled(), never straight from env vars.",
    "Async all the way down in the api/ package: no blocking calls inside handlers.",
    "We target Python 3.10, so no 3.11-only syntax.",
    "Every PR should be under 400 lines of diff. Split it if it isn't.",
    "Use Result for errors in the Rust crates. No unwrap() outside tests.",
    "Ask before deleting any file.",
    "Never run migrations against production from your session.",
    "All log messages are structured key=value pairs, not f-string sentences.",
    "Every shell script starts with set -euo pipefail.",
    "Don't mock things we own. Use the real implementation with a fake backend instead.",
    "Fixtures go in the nearest shared conftest.py, not inside test files.",
    "Please always tell me which files you changed at the end of each response.",
    "In this repo, CSS classes follow BEM.",
    "I prefer early returns over nested ifs, so write code that way.",
    "No magic numbers. Give constants a name.",
    "Don't use `git add -A`; stage files explicitly.",
    "All new modules get `from __future__ import annotations` at the top.",
    "In the firmware: no dynamic allocation after init. Ever.",
    "Interrupt handlers stay short. Set a flag and get out.",
    "Gameplay code runs on the fixed timestep. Never put gameplay logic in Update().",
    "All new Android code is Kotlin, not Java.",
    "New screens are SwiftUI only; UIKit is just for the legacy screens we haven't migrated yet.",
    "Pipeline steps must be idempotent. Design everything for reruns.",
    "Never write to the raw/ bucket. It's append-only and owned by the ingest service.",
    "Every training run logs to MLflow with the git sha attached.",
    "Random seeds are set through utils.seed_everything() and nowhere else.",
    "Notebooks are for exploration. Anything that gets reused moves into the package.",
    "Terraform goes through plan first. Show me the plan before any apply.",
    "Docker base images are pinned by digest, not by tag.",
    "Don't use sudo in any script you write for this project.",
    "Keep the README in sync with the CLI flags whenever you change them.",
    "JSON keys in API responses are snake_case.",
    "Error messages shown to users must never include stack traces or internal ids.",
    "Never log PII. That includes emails and IP addresses.",
    "Don't reformat code you aren't otherwise changing.",
    "When you're unsure about a requirement, ask me instead of guessing.",
    "Be terse. No preamble, no recap at the end.",
    "We use conventional commits: feat:, fix:, chore: and so on.",
    "Dates in filenames are always YYYY-MM-DD.",
    "Nothing merges with red CI, however trivial the change.",
    "Any new env var has to go into .env.example with a comment explaining it.",
    "We don't do relative imports in this project.",
    "The domain layer must not know about HTTP. Keep framework imports out of core/.",
    "When you add a translation key, add it to all five locale files, not just en.",
    "Don't parse HTML with regex around here. Use the parser.",
    "Always write the failing test first, then the fix.",
    "Public API changes need a deprecation period of at least one minor release.",
    "Don't use lodash. We're trying to get rid of it.",
    "Prefer httpx over requests in new code.",
    "Numbers in user-facing text always get thousands separators.",
    "No TODO without a ticket number next to it.",
    "Never disable TLS verification, not even in tests.",
    "Every background job needs a timeout.",
    "Keep CHANGELOG.md updated with every user-visible change.",
    "Identifiers and code comments are in American English.",
    "Shaders live in assets/shaders/ and are named after their pass, e.g. shadow_depth.hlsl.",
    "Every register write in the HAL goes through reg_write() so we can trace it.",
    "Flaky tests get quarantined with a ticket, never deleted.",
    "Always check the return value of malloc. Yes, even in the host-side tools.",
    "From now on, run mypy after every change and fix what it reports before moving on.",
    "Add a regression test for every bug you fix, one that fails without the fix.",
    "Update the lockfile any time you touch pyproject.toml.",
    "Never call datetime.now() without a timezone. We had a DST incident last year because of exactly that.",
    "no abbreviations in identifiers please (usr, cfg, mgr). spell them out, in everything you write here",
    "Going forward, end each response with the command I can run to verify the change.",
    "Don't open PRs on my behalf. Push the branch and I'll open the PR myself.",
    "I never want to see `any` in our TypeScript again. Use unknown and narrow it.",
    "We squash-merge here, so PR titles should read like commit messages.",
    "Whenever a function needs more than four parameters, bundle the options into a dataclass.",
    "Stop using wildcard imports. For good.",
    "Migrations are append-only: never edit one that has already been merged.",
    "Breaking API changes go under a new /vN prefix, never into an existing version.",
    "Every Kubernetes manifest gets the team and cost-centre labels.",
    "In SQL, uppercase the keywords and put each clause on its own line.",
    "Be careful with the kubeconfig: for this whole session, only ever use the staging context.",
    "Docs are Markdown with one sentence per line.",
    (
        "Make it a habit to check the bundle size after frontend changes, and tell me if it grew by more "
        "than 5 KB."
    ),
    "In the game code, never allocate inside the update loop; we're fighting GC spikes.",
    "Asset filenames are lowercase with underscores. No spaces, no capitals.",
    "Errors in the C code are handled with explicit return checks. No setjmp/longjmp anywhere.",
    "Anything shared with an ISR is declared volatile, always.",
    "Every experiment config lives in configs/ as YAML. No hyperparameters in code.",
    "Keep eval data out of training: no training script may ever read from data/holdout/.",
    "We don't use Redux. State goes in React Query or in local component state.",
    "Pin every GitHub Action to a full commit SHA.",
    "Until I say otherwise, don't run anything that costs money in the cloud account.",
    "Once I've approved a dependency, pin it to an exact version. That applies every time.",
    "Machine-readable CLI output goes to stdout; everything meant for humans goes to stderr.",
    "Exit codes are 0 for success, 1 for user error, 2 for internal error. Stick to that for every command.",
    "Don't reach for threads in this service. We're asyncio-only.",
    "As a rule of thumb for this project: if it isn't tested, it isn't done.",
    "Remember that main deploys automatically, so never merge anything half-finished into it.",
    "Never store tokens in localStorage. HttpOnly cookies, always.",
    "Going forward, no new code goes into the legacy/ package. Only deletions and bug fixes.",
    "The test suite has to stay under two minutes. If you add something slow, mark it @slow.",
    "All public Python functions have type hints here. That's non-negotiable.",
    "Each commit should build and pass tests on its own, so bisect keeps working.",
    "No new warnings. If a change of yours introduces a compiler warning, fix it before handing it over.",
    "Fix the date parsing in report.py. And from here on, never touch the vendored code under third_party/.",
    (
        "Can you add the retry flag to the sync command? Also, going forward, put every new CLI option into "
        "the --help examples."
    ),
    "The login test is flaky, have a look. And in general: no sleep() in tests, wait on a condition instead.",
    (
        "Add a dark theme toggle to the settings page. From now on, all colours come from the tokens in "
        "theme.ts; no hex literals in components."
    ),
    "Bump React Native to 0.74. Whenever you upgrade a dependency, note it in UPGRADING.md with the reason.",
    (
        "Please write the migration for the new tags table. As a rule, our migrations never drop a column in "
        "the same release that stops using it."
    ),
    (
        "Look into why GPU utilisation is only 30%. Also, for every experiment from now on, save the config "
        "as a YAML artifact next to the checkpoint."
    ),
    (
        "Can you wire up the new sensor on I2C bus 2? And remember, every peripheral driver gets a self-test "
        "that runs at boot. That applies to everything you write here."
    ),
    "Fix the score overflow in the HUD. Going forward, use int64 for anything that counts points.",
    (
        "Add the `--since` filter to the logs command. And please stop putting emoji in commit messages. "
        "Plain text from now on."
    ),
    (
        "Set up the staging Helm values. Moving forward, every container needs requests and limits; I'll "
        "reject charts without them."
    ),
    (
        "Write a test for the refund path. Standing rule while you're at it: tests never talk to the "
        "network. Use the recorded cassettes."
    ),
    (
        "Could you split billing into its own package? For the rest of this project, keep packages free of "
        "circular imports, and check with import-linter after each change."
    ),
    (
        "The export button is broken on Safari, fix it please. And whenever you fix a browser-specific bug, "
        "leave a comment linking the upstream bug report."
    ),
    "Add pagination to /api/events. From now on, all list endpoints use cursor pagination, not offset.",
    (
        "Can you look at the flaky Kafka consumer test? Oh, and as a general rule, commit consumer offsets "
        "manually. Never enable auto-commit."
    ),
    (
        "Add a Makefile target for the docs. I'd also like you to always go through the Makefile targets "
        "rather than calling tools directly, so CI and local stay identical."
    ),
    (
        "Fix the jitter in the camera follow. In this project all camera code lives in CameraRig, so never "
        "add camera logic to the player scripts."
    ),
    (
        'Add a "resend code" button to the 2FA screen. And for everything in the mobile app going forward, '
        "every tappable element needs an accessibility label."
    ),
    (
        "Get the Spark job running on the new cluster. Cluster-specific settings belong in conf/, never "
        "hardcoded in a job, and that goes for every job we have."
    ),
    "Sort out the merge conflict in models.py. And in future, rebase onto main rather than merging main in.",
    (
        "Can you speed up the image resize? Also, and this applies from now on: measure before and after for "
        "any performance change and put the numbers in the PR."
    ),
    (
        "Add a unit test for parse_duration. For every test you write here: one behaviour per test, named "
        "test_<unit>_<behaviour>."
    ),
    (
        "Write the alert rule for disk usage. Every alert we add needs a runbook link in its annotations; "
        "please stick to that."
    ),
    (
        "Update the copy on the welcome screen. Reminder for this whole project: the product name is always "
        'written "FlowDesk", never "Flowdesk" or "flow desk".'
    ),
    (
        "Tidy up the Dockerfile. And from now on, base images are the -slim variants unless there's a "
        "reason, in which case tell me the reason."
    ),
    (
        "Hook the new endpoint into the router. One thing for the rest of the session: don't run anything "
        "that writes to the shared dev database without asking."
    ),
    (
        "Port the fixed-point math helpers to the new board. Going forward, no floating point in the control "
        "loop; the M0 has no FPU."
    ),
    (
        "Make the error toast dismissable. Also, a standing preference: small, focused commits, one logical "
        "change each."
    ),
    (
        "Fix the off-by-one in the playlist shuffle. By the way, I never want you to use Math.random() for "
        "anything security-related in this codebase. Use crypto.getRandomValues()."
    ),
    (
        "Bump the request timeout in the gateway to 10 s. And generally speaking, timeouts are "
        "configuration, not constants. Put them in settings every time."
    ),
)


if __name__ == "__main__":
    import sys

    sys.stdout.write(f"TASKS: {len(TASKS)}\nONE_OFFS: {len(ONE_OFFS)}\nRULES: {len(RULES)}\n")
