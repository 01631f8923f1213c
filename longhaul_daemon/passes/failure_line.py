"""Pick the line of a failing command's output that states the failure: the ledger's error text (LEDGER-7).

The first line of a failing run is rarely the failure (pytest's progress dots, go test's ``ok`` lines, npm's
banner). Tools state a failure in a few recognisable forms near the end, so this reads a bounded tail and
ranks the lines it recognises: rank 0 a specific failure (pytest ``FAILED``/``ERROR`` lines, ``--- FAIL:``,
TAP ``not ok``, a compiler diagnostic with its location, ``error:`` at a line's start, ``panic:``, a
traceback's last line); rank 1 a general failure (``Error: …``, ``fatal:``, ``npm ERR!``, ``make: ***`` but
not make's exit summary); rank 2 a summary (``Error N``, ``FAIL pkg``, ``1 failed``). The best rank wins,
and within it the earliest line, since tools list the root cause first. A line merely holding "error"
(``0 errors``) matches no form. With nothing recognised the first non-blank line is used. Pure and
deterministic; it never scans more than ``TAIL_CHARS`` from the end and ``HEAD_CHARS`` from the start.
"""

from __future__ import annotations

import re

__all__ = ["HEAD_CHARS", "SCAN_LINE_CHARS", "TAIL_CHARS", "failure_line"]

TAIL_CHARS = 32_768  # where tools state a failure; pi's bash tool already keeps only the last 50 KB
HEAD_CHARS = 32_768  # how far the fallback looks for a first non-blank line
SCAN_LINE_CHARS = 2_000  # a longer line is matched on its start, so one huge line cannot slow the scan

_SPECIFIC, _GENERAL, _SUMMARY = 0, 1, 2

# Terminal escape sequences (colour, cursor, window titles): tsc --pretty, cargo and npm colour their output
# when they think they write to a terminal. They are removed before matching, and from the line kept; the
# sanitizer still cleans every field before it is rendered (PASS-10).
_ESCAPE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[ -/]*[0-~]|\x1b")

# pi's bash tool ends the text of a command it stopped with a status line: that line is the failure.
_PI_STOPPED = re.compile(r"(?:\A|\n)(Command timed out after \d{1,10} seconds|Command aborted)\s*\Z")

_TRACEBACK = re.compile(r"Traceback \(most recent call last\):\s*\Z")

# Matched against the visible line, leading spaces kept: most forms must start at column 0, where the tools
# write them, so that an indented quote of the same words (TAP's `  error: |-`, a test's log) is not taken.
# The first form that matches gives the line's rank (None: not a failure line), so the summaries come before
# the forms they resemble.
_FORMS: tuple[tuple[re.Pattern[str], int | None], ...] = (
    # summaries
    (re.compile(r"make(?:\[\d+\])?: \*\*\* .*\bError -?\d+"), _SUMMARY),
    (re.compile(r"error: (?:could not compile|test failed|aborting due to|build failed)\b"), _SUMMARY),
    (re.compile(r"FAIL(?:\s+\S.*)?\Z"), _SUMMARY),  # go test: "FAIL", "FAIL\tpkg\t0.01s", "[build failed]"
    (re.compile(r"test result: FAILED\b"), _SUMMARY),
    (re.compile(r"FAILED(?: \(.*)?\s*\Z"), _SUMMARY),  # unittest: "FAILED (failures=1)"; a bare "FAILED"
    (re.compile(r"npm (?:ERR!|error) (?:code|errno|syscall|path|command|signal|cwd|location) "), _SUMMARY),
    (re.compile(r"npm (?:ERR!|error) A complete log of this run"), None),  # says where, not what
    # specific failures
    (re.compile(r"(?:FAILED|ERROR) [^\s(]"), _SPECIFIC),  # pytest's short summary
    (re.compile(r"\S+::\S+ (?:FAILED|ERROR)\b"), _SPECIFIC),  # pytest -v
    (re.compile(r"(?:FAIL|ERROR): \S"), _SPECIFIC),  # unittest
    (re.compile(r"\S.* \.\.\. (?:FAILED|FAIL|ERROR)\s*\Z"), _SPECIFIC),  # cargo test, unittest -v
    (re.compile(r"\s*--- FAIL: \S"), _SPECIFIC),  # go test, subtests indented
    (re.compile(r"\s*not ok \d+\b"), _SPECIFIC),  # TAP, node --test
    (re.compile(r"[^\s:(][^:(]*(?:\(\d+,\d+\): |:\d+:\d+ - )error TS\d+:"), _SPECIFIC),  # tsc, tsc --pretty
    (re.compile(r"[^\s:][^:]*:\d+(?::\d+)?:\s+(?:fatal\s+)?[Ee]rror\b"), _SPECIFIC),  # gcc, clang, as
    (re.compile(r"(?:vet: )?[^\s:]+\.go:\d+(?::\d+)?: \S"), _SPECIFIC),  # go build, go vet
    (re.compile(r"(?:fatal )?error(?:\[[A-Z]?\d+\])?: \S"), _SPECIFIC),  # rustc, cargo, git, ld
    (re.compile(r"\S[^:]*:\S*: undefined reference to "), _SPECIFIC),  # ld, before collect2's summary
    (re.compile(r"panic: \S"), _SPECIFIC),  # go
    (re.compile(r"thread '[^']*'.* panicked at\b"), _SPECIFIC),  # rust
    # general failures
    (re.compile(r"(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception)(?: \[\w+\])?: \S"), _GENERAL),
    (re.compile(r"(?:fatal|FATAL|Error):\s*\S|ERROR(?::|\s)\s*\S"), _GENERAL),  # not "Error handling …"
    (re.compile(r"[\w./+-]+: (?:fatal )?error: \S"), _GENERAL),  # collect2, cc1, clang, ld
    (re.compile(r"npm (?:ERR!|error) \S"), _GENERAL),
    (re.compile(r"make(?:\[\d+\])?: \*\*\* \S"), _GENERAL),
    # counts that close a failing run; "0 errors" has no leading non-zero digit and never matches
    (re.compile(r".*?(?<![\w.])[1-9]\d* (?:failed|failures?|errors?|failing)\b"), _SUMMARY),
    (re.compile(r"(?:#|ℹ) fail [1-9]\d*\s*\Z"), _SUMMARY),  # TAP and node's spec reporter
)


def _visible(raw: str) -> str:
    """The text a terminal would show for one line: no escapes, and what the last carriage return left."""
    text = _ESCAPE.sub("", raw[:SCAN_LINE_CHARS]) if "\x1b" in raw else raw[:SCAN_LINE_CHARS]
    if "\r" in text:
        parts = [part for part in text.split("\r") if part.strip()]
        text = parts[-1] if parts else ""
    return text.rstrip()


def _rank(line: str) -> int | None:
    for form, rank in _FORMS:
        if form.match(line):
            return rank
    return None


def _tail_lines(output: str) -> list[str]:
    """The complete lines of the last ``TAIL_CHARS``; a line cut by the bound is left out, not misread."""
    if len(output) <= TAIL_CHARS:
        return output.split("\n")
    tail = output[-TAIL_CHARS:]
    return tail.split("\n")[1:]


def _first_line(output: str) -> str:
    for raw in output[:HEAD_CHARS].split("\n"):
        line = _visible(raw).strip()
        if line:
            return line
    return ""


def _best(lines: list[str]) -> str | None:
    """The earliest line of the best rank; the exception line that ends a Python traceback is rank 0."""
    best: tuple[int, str] | None = None
    in_traceback = False
    for raw in lines:
        line = _visible(raw)
        if not line.strip():
            continue
        if _TRACEBACK.match(line):
            in_traceback = True
            continue
        if in_traceback and not line[0].isspace():
            in_traceback = False  # the first unindented line after the frames names the exception
            rank: int | None = _SPECIFIC
        else:
            rank = _rank(line)
        if rank is not None and (best is None or rank < best[0]):
            best = (rank, line.strip())
            if rank == _SPECIFIC:
                break  # nothing can beat it, and an earlier line wins a tie
    return best[1] if best is not None else None


def failure_line(output: str) -> str:
    """The line of ``output`` that states why the command failed: stripped, escapes removed, at most
    ``SCAN_LINE_CHARS`` code points; "" when the output has no non-blank line.

    ``output`` is what a failing command printed, as pi stores it (for the bash tool, with pi's trailing
    "Command exited with code N" status line, which states only the code and is never picked).
    """
    stopped = _PI_STOPPED.search(output, max(0, len(output) - 200))
    if stopped:
        return stopped.group(1)
    return _best(_tail_lines(output)) or _first_line(output)
