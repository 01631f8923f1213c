"""The model bench's measures and tables: pure functions over the rows a run records, so tests can check them.

One :class:`Row` per compaction. :func:`checks` reads a summary the way the bench judges it: a standing rule
counts when its words appear anywhere; a withdrawn rule or a one-off request counts as shown standing when its
words appear in the summary's "Standing rules" section (Longhaul's rendered state) or, for a summary without
that structure (pi's own, or a pass that fell back to pi), anywhere. A withdrawn rule shown with code's
``possibly withdrawn by`` flag under it is not plainly standing and does not count; a one-off request counts
even when marked in doubt, and how many of those carry code's ``in doubt`` line is counted beside it
(:func:`in_doubt`). :func:`half_table` turns a half's rows into the Markdown table of measures, one column
per compactor; :func:`table` is the per-compaction table.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from longhaul_daemon.state.render import SECTIONS

# longhaul: the Diff, the daemon calling the model; longhaul-via-pi: the Diff with every call made by pi;
# turns: narrativeMode "turns"; pi: pi's own compaction
Compactor = Literal["longhaul", "longhaul-via-pi", "turns", "pi"]
COMPACTORS: tuple[Compactor, ...] = ("longhaul", "longhaul-via-pi", "turns", "pi")
MODE_NAMES: dict[Compactor, str] = {
    "pi": "pi's own",
    "longhaul": "the Diff",
    "longhaul-via-pi": "the Diff through pi",
    "turns": "turns mode",
}
COLUMNS: tuple[Compactor, ...] = ("pi", "longhaul", "longhaul-via-pi", "turns")
STANDING_TITLE = "Standing rules"

Seen = list[tuple[str, bool]]  # (what was looked for, whether the summary shows it)


@dataclass
class Row:
    """One compaction."""

    session: str
    half: str
    chain: bool
    nth: int
    compactor: Compactor
    wall_s: float
    calls: int
    input_tokens: int
    output_tokens: int
    closed: str
    rules: Seen  # (rule key, its words in the summary)
    withdrawn: Seen  # (rule key, its words shown as standing)
    one_offs: Seen  # (the request's words, shown as standing)
    values: Seen  # (the value, in the summary)
    invented: int | None  # Longhaul only: rules in the state that are not the user's words
    summary_chars: int
    one_offs_in_doubt: tuple[str, ...] = ()  # the one-offs shown standing with code's "in doubt" line
    tasks: Seen = field(default_factory=list)  # (a work request's words, shown as standing)

    @property
    def closed_whole(self) -> bool:
        return self.closed.startswith("whole")

    @property
    def closed_partial(self) -> bool:
        """The answer verified but left messages unlabeled; those were carried (FAIL-4, ours)."""
        return self.closed.startswith("partial")


def normal(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def standing_section(summary: str) -> str | None:
    """The body of the summary's "Standing rules" section, or None when it has no rendered sections."""
    headings = list(re.finditer(r"^## (.+)$", summary, flags=re.M))
    if not any(h.group(1).strip() in SECTIONS for h in headings):
        return None
    for i, heading in enumerate(headings):
        if heading.group(1).strip() == STANDING_TITLE:
            after = [h for h in headings[i + 1 :] if h.group(1).strip() in SECTIONS]
            end = after[0].start() if after else len(summary)
            body = summary[heading.end() : end]
            return body.split("\n<read-files>")[0].split("\n<modified-files>")[0]
    return ""


def _entries(section: str) -> list[str]:
    return re.split(r"\n(?=- )", section)


def in_doubt(summary: str, one_offs: Sequence[str]) -> tuple[str, ...]:
    """The one-offs whose entry in the "Standing rules" section carries code's ``in doubt`` line."""
    section = standing_section(summary)
    if not section:
        return ()
    doubted = [normal(e) for e in _entries(section) if "\n  in doubt: " in e]
    return tuple(words for words in one_offs if any(normal(words) in e for e in doubted))


def shown_standing(summary: str, texts: Sequence[str]) -> Seen:
    """Each of ``texts`` (a work request, say) and whether the summary shows it as a standing rule: in the
    "Standing rules" section, in doubt or not; anywhere in a summary without that structure."""
    section = standing_section(summary)
    standing = normal(summary) if section is None else normal(section)
    return [(text, normal(text) in standing) for text in texts]


def _unflagged(section: str) -> str:
    """The standing-rules section without the entries code flagged ``possibly withdrawn by``: a flagged rule
    is shown with the user's withdrawing words under it, not as plainly standing."""
    return "\n".join(e for e in _entries(section) if "\n  possibly withdrawn by " not in e)


def checks(
    summary: str,
    *,
    in_force: Sequence[tuple[str, str]],
    withdrawn: Sequence[tuple[str, str]],
    one_offs: Sequence[str],
    values: Sequence[str],
) -> tuple[Seen, Seen, Seen, Seen]:
    """What a summary shows: standing rules' words (key, words), withdrawn rules and one-offs as standing,
    values. Words match ignoring case and spacing."""
    shown = normal(summary)
    section = standing_section(summary)
    standing = shown if section is None else normal(section)
    plainly = standing if section is None else normal(_unflagged(section))
    return (
        [(key, normal(words) in shown) for key, words in in_force],
        [(key, normal(words) in plainly) for key, words in withdrawn],
        [(words, normal(words) in standing) for words in one_offs],
        [(value, normal(value) in shown) for value in values],
    )


# ---- the table of measures ---------------------------------------------------------------------------------


def _count(rows: Sequence[Row], field: str, want: bool) -> tuple[int, int]:
    found = [seen for r in rows for _, seen in getattr(r, field)]
    return sum(1 for seen in found if seen is want), len(found)


def _share(part: int, whole: int) -> str:
    return f"{part} of {whole}" if whole else "–"


def _paired(rows: Sequence[Row], compactor: Compactor) -> list[tuple[Row, Row]]:
    theirs = {(r.session, r.nth): r for r in rows if r.compactor == "pi"}
    return [
        (r, theirs[(r.session, r.nth)])
        for r in rows
        if r.compactor == compactor and (r.session, r.nth) in theirs
    ]


def _spread(values: Sequence[float], fmt: str) -> str:
    if not values:
        return "–"
    return f"{statistics.median(values):{fmt}} ({min(values):{fmt}}–{max(values):{fmt}})"


def _against_pi(rows: Sequence[Row], compactor: Compactor, attr: str, unit: str, fmt: str) -> str:
    own = [float(getattr(r, attr)) for r in rows if r.compactor == compactor]
    cell = _spread(own, fmt) + unit if own else "–"
    if compactor == "pi" or not own:
        return cell
    ratios = [
        float(getattr(a, attr)) / float(getattr(b, attr))
        for a, b in _paired(rows, compactor)
        if getattr(b, attr)
    ]
    return f"{cell}; {_spread(ratios, '.2f')}× pi's" if ratios else cell


def measures(rows: Sequence[Row], compactor: Compactor) -> dict[str, str]:
    """One column of the half's table: each measure for one compactor, as the cell shows it."""
    mine = [r for r in rows if r.compactor == compactor]
    if not mine:
        return {}
    whole = sum(1 for r in mine if r.closed_whole)
    partial = sum(1 for r in mine if r.closed_partial)
    return {
        "passes closed whole": "–" if compactor == "pi" else _share(whole, len(mine)),
        "passes closed partial (answer kept, unlabeled messages carried)": (
            "–" if compactor == "pi" else _share(partial, len(mine))
        ),
        "standing rules' words in the summary, single": _share(
            *_count([r for r in mine if not r.chain], "rules", True)
        ),
        "standing rules' words in the summary, 5-compaction chain": _share(
            *_count([r for r in mine if r.chain], "rules", True)
        ),
        "withdrawn rules still shown as standing": _share(*_count(mine, "withdrawn", True)),
        "one-off requests shown as standing rules": _one_offs_cell(mine),
        "tasks shown as standing rules": _share(*_count(mine, "tasks", True)),
        "values from tool output in the summary": _share(*_count(mine, "values", True)),
        "wall time per compaction, median (range)": _against_pi(rows, compactor, "wall_s", " s", ".1f"),
        "output tokens per compaction, median (range)": _against_pi(
            rows, compactor, "output_tokens", "", ".0f"
        ),
    }


def _one_offs_cell(rows: Sequence[Row]) -> str:
    shown, total = _count(rows, "one_offs", True)
    doubted = sum(len(r.one_offs_in_doubt) for r in rows)
    return _share(shown, total) + (f" ({doubted} marked in doubt)" if doubted else "")


def half_table(rows: Sequence[Row]) -> list[str]:
    """The Markdown table of one half: a row per measure, a column per compactor that ran."""
    columns = [c for c in COLUMNS if any(r.compactor == c for r in rows)]
    cells = {c: measures(rows, c) for c in columns}
    names = list(cells[columns[0]]) if columns else []
    lines = [
        "| | " + " | ".join(MODE_NAMES[c] for c in columns) + " |",
        "|---|" + "---:|" * len(columns),
    ]
    lines += [f"| {name} | " + " | ".join(cells[c][name] for c in columns) + " |" for name in names]
    return lines


# ---- the per-compaction table ------------------------------------------------------------------------------


def _seen_cell(seen: Seen, *, good: bool = True, doubted: Sequence[str] = ()) -> str:
    if not seen:
        return "none"
    return ", ".join(
        f"{what} {'yes' if hit else 'no'}"
        if hit is good
        else f"{what} **{'yes' if hit else 'NO'}{DOUBTED if what in doubted else ''}**"
        for what, hit in seen
    )


def table(rows: Sequence[Row]) -> list[str]:
    lines = [
        "| session | # | compactor | wall | model calls | input tok | output tok | closed "
        "| rules in force: words in summary | withdrawn shown standing | one-offs shown standing | values "
        "| invented | summary chars | tasks shown standing |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        invented = "–" if r.invented is None else str(r.invented)
        lines.append(
            f"| {r.session} | {r.nth} | {r.compactor} | {r.wall_s:.1f} s | {r.calls} | {r.input_tokens:,} "
            f"| {r.output_tokens:,} | {r.closed} | {_seen_cell(r.rules)} "
            f"| {_seen_cell(r.withdrawn, good=False)} "
            f"| {_seen_cell(r.one_offs, good=False, doubted=r.one_offs_in_doubt)} "
            f"| {_seen_cell(r.values)} | {invented} | {r.summary_chars:,} "
            f"| {_count_cell(r.tasks)} |"
        )
    return lines


def _count_cell(seen: Seen) -> str:
    """How many of ``seen`` are shown, of how many: work requests are many and long, so counted, not named."""
    return f"{sum(1 for _, hit in seen if hit)} of {len(seen)}"


DOUBTED = " in doubt"  # after a one-off's **yes**: shown standing with code's "in doubt" line
_ITEM = re.compile(r"(.+?) (\*\*yes(?: in doubt)?\*\*|\*\*NO\*\*|yes|no)(?:, |$)")


def _number(text: str) -> int:
    return int(text.replace(",", ""))  # as the table writes it: "1,234"


def _seen_from(cell: str) -> Seen:
    if cell == "none":
        return []
    return [
        (what, hit.strip("*").removesuffix(DOUBTED).lower() == "yes") for what, hit in _ITEM.findall(cell)
    ]


def _doubted_from(cell: str) -> tuple[str, ...]:
    return tuple(what for what, hit in _ITEM.findall(cell) if hit.strip("*").endswith(DOUBTED))


def _counted_from(cell: str) -> Seen:
    """A count cell read back as that many shown and not shown (the texts are not in the table)."""
    shown, _, total = cell.partition(" of ")
    hits = int(shown)
    return [("", n < hits) for n in range(int(total))]


def rows_from_table(lines: Sequence[str], half: str) -> list[Row]:
    """The rows :func:`table` wrote (one per compaction, as the bench logs them while it runs), read back,
    so a run cut short still gets its tables. Lines that are not such a row are skipped."""
    out: list[Row] = []
    for line in lines:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) not in (14, 15) or not cells[1].isdigit() or cells[2] not in COMPACTORS:
            continue
        out.append(
            Row(
                session=cells[0],
                half=half,
                chain=cells[0].endswith("-chain"),
                nth=int(cells[1]),
                compactor=cells[2],  # checked against COMPACTORS above
                wall_s=float(cells[3].removesuffix(" s")),
                calls=_number(cells[4]),
                input_tokens=_number(cells[5]),
                output_tokens=_number(cells[6]),
                closed=cells[7],
                rules=_seen_from(cells[8]),
                withdrawn=_seen_from(cells[9]),
                one_offs=_seen_from(cells[10]),
                values=_seen_from(cells[11]),
                invented=None if cells[12] == "–" else int(cells[12]),
                summary_chars=_number(cells[13]),
                one_offs_in_doubt=_doubted_from(cells[10]),
                tasks=_counted_from(cells[14]) if len(cells) == 15 else [],
            )
        )
    return out


def targets(rows: Sequence[Row], mode: Compactor = "longhaul") -> list[str]:
    """The issue's targets for one of Longhaul's modes against pi, each met or not, with the numbers."""
    pairs = _paired(rows, mode)
    if not pairs:
        return []
    ours = [a for a, _ in pairs]

    def verdict(ok: bool) -> str:
        return "met" if ok else "NOT met"

    wall = [(a.wall_s, b.wall_s) for a, b in pairs]
    out = [(float(a.output_tokens), float(b.output_tokens)) for a, b in pairs]

    def within(sides: list[tuple[float, float]]) -> bool:
        mine, theirs = [x for x, _ in sides], [y for _, y in sides]
        return sum(mine) <= sum(theirs) and statistics.median(mine) <= statistics.median(theirs)

    invented = sum(r.invented or 0 for r in ours)
    lost = [f"{r.session} #{r.nth} {key}" for r in ours for key, seen in r.rules if not seen]
    return [
        f"- wall time no more than pi's, in total and at the median: {verdict(within(wall))}",
        f"- output tokens no more than pi's, in total and at the median: {verdict(within(out))}",
        f"- 0 rules invented: {verdict(invented == 0)} ({invented} invented)",
        f"- every standing rule's words visible after every compaction: {verdict(not lost)}"
        f"{' (missing: ' + ', '.join(lost) + ')' if lost else ''}",
    ]


def write_doc(path: Path, block: Sequence[str], start: str, end: str) -> None:
    text = path.read_text(encoding="utf-8")
    head, tail = text.index(start) + len(start), text.index(end)
    path.write_text(text[:head] + "\n" + "\n".join(block) + "\n" + text[tail:], encoding="utf-8")
