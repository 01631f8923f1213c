"""longhaul_recall's answers from span records: refs, queries, unavailable spans, bounds (TOOLS-5..7)."""

from __future__ import annotations

from typing import Any

from tools_branch import Branch

from longhaul_daemon.state.model import Command, ErrorEntry, Item, Note, Rule, State
from longhaul_daemon.tools.recall import MAX_RECALL_CHARS, recall, unavailable


def cmd(cid: str, text: str, code: int | str, span: int) -> Command:
    return Command(id=cid, text=text, exit=code, span=span)  # type: ignore[arg-type]


def two_spans(*, second_v: Any = 1) -> Branch:
    """Span 1 (whole, a rule, a lift, a decision, a note), span 2 (narrative-less) with its own record."""
    b = Branch()
    b.user("u1 words")
    s1 = State(
        span=1,
        seq=3,
        rules=[
            Rule(id="R1", words="never push", message="u1", seq=1, span=1, lifted=True, liftedBy="u2"),
            Rule(id="R2", words="use pnpm", message="u2", seq=2, span=1),
        ],
        decisions=[Item(text="keep the retry loop", evidence=["C1"], seq=3, span=1)],
        notes=[Note(text="AGENT-NOTE-ONE", seq=4)],
        commands=[cmd("C1", "echo alpha", 0, 1), cmd("C2", "ls /nope", 2, 1)],
        errors=[ErrorEntry(id="E1", tool="bash", text="ls: cannot access", command="C2", span=1)],
    )
    c1 = b.longhaul(s1)
    b.span_record(
        c1,
        closedAs="whole",
        messages=["u1", "u2", "u3"],
        events=[1, 2, 3, 4],
        commands=[c.model_dump(mode="json") for c in s1.commands],
        errors=[e.model_dump(mode="json") for e in s1.errors],
        narrative="Span one narrative \x1b[31mred\x1b[0m",
        now="next: run tests",
        world={"status": "repository", "branch": "main", "head": {"hash": "abc1234", "subject": "init"}},
    )
    b.user("u4 words")
    s2 = s1.model_copy(deep=True)
    s2.span = 2
    s2.commands.append(cmd("C3", "echo gamma", 0, 2))
    c2 = b.longhaul(s2)
    b.span_record(
        c2,
        v=second_v,
        closedAs="narrative-less",
        reason="no-model-call",
        messages=["u4"],
        commands=[s2.commands[-1].model_dump(mode="json")],
        narrative=None,
    )
    return b


def test_span_ref_returns_commands_errors_decisions_labels_and_notes() -> None:
    """TOOLS-5: "span:<n>" returns the span's stored detail, sanitized (TOOLS-7)."""
    out = recall(two_spans().entries, ref="span:1")
    assert out.ok and out.spans == [1]
    text = out.text
    for needle in (
        "Span 1: closed whole",
        "C1 `echo alpha` exit 0",
        "C2 `ls /nope` exit 2",
        "E1 (bash from C2): ls: cannot access",
        "keep the retry loop [C1]",
        "u1: rule R1",
        "u2: rule R2 and lifts R1",
        "u3: not a rule",
        "Agent's note (not the user's words): AGENT-NOTE-ONE",
        "Now: next: run tests",
        'World: branch main, HEAD abc1234 "init"',
    ):
        assert needle in text, (needle, text)
    assert "\x1b" not in text and "Narrative: Span one narrative red" in text
    assert "echo gamma" not in text


def test_id_refs_find_the_span_that_holds_them() -> None:
    """TOOLS-5: a ref returns the span holding it: C<n>, E<n> from records, R<n> from the state, u<n>."""
    entries = two_spans().entries
    assert recall(entries, ref="C3").spans == [2]
    assert recall(entries, ref="c1").spans == [1]
    assert recall(entries, ref="E1").spans == [1]
    assert recall(entries, ref="R2").spans == [1]
    assert recall(entries, ref="u4").spans == [2]
    assert "no label recorded (carried)" in recall(entries, ref="u4").text


def test_unknown_and_malformed_refs_are_error_results() -> None:
    entries = two_spans().entries
    for ref, words in (
        ("span:9", "no span 9"),
        ("C99", "C99 is not"),
        ("u42", "u42 is in no span"),
        ("x", "ref must"),
    ):
        out = recall(entries, ref=ref)
        assert not out.ok and words in out.text and out.text.startswith("longhaul_recall: ")


def test_record_of_another_version_is_reported_unavailable() -> None:
    """TOOLS-6, FORMAT-5, EX-15: a v2 record is not read; the answer says the detail is not available."""
    entries = two_spans(second_v=2).entries
    out = recall(entries, ref="span:2")
    assert out.ok
    assert out.text == unavailable(2)
    assert "the detail of span 2 is not available" in out.text
    assert "echo gamma" not in out.text
    missing = [e for e in two_spans().entries if e.get("customType") != "compaction-state.span"]
    assert "the detail of span 1 is not available" in recall(missing, ref="span:1").text


def test_query_is_case_insensitive_over_span_details() -> None:
    """TOOLS-5: a query keeps the matching detail lines, with the span they come from."""
    entries = two_spans().entries
    out = recall(entries, query="ECHO")
    assert out.spans == [1, 2]
    assert "C1 `echo alpha`" in out.text and "C3 `echo gamma`" in out.text and "ls /nope" not in out.text
    assert recall(entries, ref="span:2", query="echo").spans == [2]
    none = recall(entries, query="zebra")
    assert none.ok and none.spans == [] and "zebra" in none.text


def test_no_ref_no_query_gives_an_overview_and_no_spans_says_so() -> None:
    out = recall(two_spans(second_v=3).entries)
    assert (
        out.ok and "2 Longhaul spans" in out.text and "Span 1: closed whole, 2 commands, 1 errors" in out.text
    )
    assert "the detail of span 2 is not available" in out.text
    b = Branch()
    b.user("q")
    assert "No Longhaul compaction" in recall(b.entries, ref="span:1").text


def test_answer_is_bounded_to_8000_characters() -> None:
    """TOOLS-7: at most 8,000 characters per call, cut at a line with a note saying so."""
    b = Branch()
    b.user("q")
    commands = [cmd(f"C{i}", f"echo {'x' * 400} {i}", 0, 1) for i in range(1, 80)]
    state = State(span=1, commands=commands)
    comp = b.longhaul(state)
    b.span_record(comp, commands=[c.model_dump(mode="json") for c in commands])
    out = recall(b.entries, ref="span:1")
    assert len(out.text) <= MAX_RECALL_CHARS
    assert out.text.endswith("ask for one span, or narrow with a query)")
    assert all(len(line) <= 340 for line in out.text.splitlines())  # each field cut to 300


def test_recall_never_raises_on_junk() -> None:
    b = two_spans()
    b.custom("compaction-state.span", {"v": 1, "compactionId": 5, "commands": "no"})
    b.custom("compaction-state.span", "not a dict")
    c3 = b.longhaul(State(span=3))
    b.span_record(c3, messages=7, events="x", commands=5, errors=None, world=[], closedAs=None)
    entries: list[Any] = [*b.entries, None, 7, {"type": "compaction"}]
    assert recall(entries, query="echo").ok
    for ref in ("span:3", "u9", "C9", None):
        assert recall(entries, ref=ref).text
    assert "Span 3: closed unknown" in recall(entries, ref="span:3").text


def test_issue11_a_u_ref_shows_the_users_own_words_from_the_branch() -> None:
    """The summary cuts a carried message and points here by its u<n>; recall shows the message itself."""
    b = two_spans()
    long = "Never deploy on Fridays.\n" + "detail " * 600 + "\x1b[31mend\x1b[0m"
    b.entries[-3]["message"]["content"][0]["text"] = long  # the branch's second user message: u2
    out = recall(b.entries, ref="u2")
    assert out.ok and out.spans == [1]
    lines = out.text.splitlines()
    assert lines[:2] == ["u2, the user's own words:", "  Never deploy on Fridays."]
    assert lines[2].startswith("  detail detail") and len(lines[2]) <= 1002  # long lines come in pieces
    assert "end" in out.text and "\x1b" not in out.text and len(out.text) <= MAX_RECALL_CHARS
    assert "u2: rule R2" in out.text
    narrowed = recall(b.entries, ref="u2", query="fridays")
    assert narrowed.text.splitlines() == ["u2, the user's own words:", "  Never deploy on Fridays."]


def test_recall_shows_the_span_record_the_fold_reads() -> None:
    """FOLD-5, TOOLS-5: of two v1 records naming one compaction, the fold reads the first usable one (a record
    with an unknown closedAs is malformed); recall answers from that same record."""
    entries = two_spans().entries
    at, record = next(
        (i, e) for i, e in enumerate(entries) if e.get("customType") == "compaction-state.span" and i > 3
    )
    broken = dict(record["data"], closedAs="bogus", commands=[cmd("C3", "echo WRONG", 0, 2).model_dump()])
    entries.insert(at, {**record, "id": "e9999", "data": broken})
    out = recall(entries, ref="span:2")
    assert out.ok and "echo gamma" in out.text and "echo WRONG" not in out.text
