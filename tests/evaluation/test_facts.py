"""``facts`` counts, per compaction, the values first seen in its span's tool output, used again, and kept.

FACTS-1..4 on branches built by hand, where every count is known: which token counts as a value, where it was
first seen, whether a later message used it, whether the summary shows it with VALUE-4's boundaries; totals
per compactor; the answer key's values; input from the agent dir; and output that names no path.
"""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path

from longhaul_daemon.evaluation.common import path_hash
from longhaul_daemon.evaluation.facts import branch_facts, run_facts
from longhaul_daemon.evaluation.key import AnswerKey, KeyCompaction, dump_key

from .branches import BranchBuilder, write_transcript


def _one_span(summary: str, *, compactor: str = "pi") -> BranchBuilder:
    b = BranchBuilder()
    b.user("Start the dev server; the release is v2.0.1.")
    b.tool("bash", {"command": "npm run dev"}, "Local: http://localhost:5173/\nbuild 8f3a2c1 ready in 412 ms")
    b.assistant("It is up.")
    kept = b.user("Wrap-up: carry on.")
    b.assistant("ok")
    b.compaction(kept, summary, compactor=compactor)
    b.user("Open port 5173 again and tag 8f3a2c1.")
    return b


def test_a_value_counts_when_first_seen_in_the_spans_tool_output_and_used_after_the_compaction() -> None:
    [facts] = branch_facts(_one_span("Server on 5173.").entries)
    # 5173, 8f3a2c1 and 412 come first from the tool; v2.0.1 came from the user, so it is no discovery.
    assert (facts.first_seen, facts.used_again, facts.kept) == (3, 2, 1)
    assert facts.compactor == "pi"


def test_the_summary_keeps_a_value_only_where_no_letter_or_digit_flanks_it() -> None:
    [flanked] = branch_facts(_one_span("Ports 51730 and x8f3a2c1 seen.").entries)
    assert flanked.kept == 0
    [both] = branch_facts(_one_span("port=5173; build (8f3a2c1).").entries)
    assert both.kept == 2


def test_a_value_seen_in_the_kept_window_belongs_to_the_next_compactions_span() -> None:
    b = BranchBuilder()
    b.user("first")
    b.assistant("ok")
    kept = b.user("Wrap-up one")
    b.tool("bash", {"command": "cat VERSION"}, "version 7.4.2")  # kept verbatim by compaction 1
    b.compaction(kept, "summary one", compactor="longhaul")
    b.user("Wrap-up two")
    kept2 = b.user("keep me")
    b.compaction(kept2, "summary two keeps 7.4.2", compactor="other")
    b.user("bump 7.4.2")
    first, second = branch_facts(b.entries)
    assert (first.compactor, first.first_seen, first.used_again) == ("longhaul", 0, 0)
    assert (second.compactor, second.first_seen, second.used_again, second.kept) == ("other", 1, 1, 1)


def test_a_value_used_only_inside_the_kept_window_is_not_used_again() -> None:
    b = BranchBuilder()
    b.user("go")
    b.tool("bash", {"command": "make"}, "artifact 99821")
    kept = b.user("note 99821 for later")
    b.compaction(kept, "nothing")
    [facts] = branch_facts(b.entries)
    assert (facts.first_seen, facts.used_again) == (1, 0)


def test_user_command_output_is_tool_output_but_its_command_is_not() -> None:
    b = BranchBuilder()
    b.user("check")
    b.user_bash("echo 31337", "31337\nuptime 4096s", 0)
    kept = b.user("wrap")
    b.compaction(kept, "uptime 4096s")
    b.user("31337 and 4096s")
    [facts] = branch_facts(b.entries)
    assert (facts.first_seen, facts.used_again, facts.kept) == (1, 1, 1)  # only 4096s: 31337 was typed first


def test_the_answer_key_adds_its_own_values() -> None:
    key = AnswerKey(compactions=(KeyCompaction(n=1, values=("5173", "8f3a2c1")),))
    [facts] = branch_facts(_one_span("Server on 5173.").entries, key)
    assert (facts.key_values, facts.key_kept) == (2, 1)


def _args(*files: Path, as_json: bool = False) -> argparse.Namespace:
    return argparse.Namespace(files=[str(f) for f in files], json=as_json)


def test_the_command_totals_per_compactor_and_prints_no_path(tmp_path: Path) -> None:
    longhaul = write_transcript(tmp_path / "secret-client-a.jsonl", _one_span("5173", compactor="longhaul"))
    pi = write_transcript(tmp_path / "secret-client-b.jsonl", _one_span("nothing kept"))
    out, err = io.StringIO(), io.StringIO()
    assert run_facts(_args(longhaul, pi, as_json=True), out=out, err=err) == 0
    document = json.loads(out.getvalue())
    assert document["totals"]["longhaul"] == {"compactions": 1, "first_seen": 3, "used_again": 2, "kept": 1}
    assert document["totals"]["pi"] == {"compactions": 1, "first_seen": 3, "used_again": 2, "kept": 0}
    assert document["totals"]["other"]["compactions"] == 0
    assert [t["name"] for t in document["transcripts"]] == [path_hash(longhaul), path_hash(pi)]

    out = io.StringIO()
    assert run_facts(_args(longhaul, pi), out=out, err=err) == 0
    text = out.getvalue()
    assert "secret-client" not in text and str(tmp_path) not in text and err.getvalue() == ""
    assert path_hash(longhaul) in text
    assert "longhaul   1            2           1     50%" in text


def test_a_key_beside_the_file_is_read(tmp_path: Path) -> None:
    path = write_transcript(tmp_path / "s.jsonl", _one_span("8f3a2c1"))
    key = AnswerKey(compactions=(KeyCompaction(n=1, values=("5173",)),))
    (tmp_path / "s.key.json").write_text(json.dumps(dump_key(key)))
    out = io.StringIO()
    assert run_facts(_args(path, as_json=True), out=out, err=io.StringIO()) == 0
    document = json.loads(out.getvalue())
    assert document["transcripts"][0]["key"] == "present"
    assert document["totals"]["pi"]["key_values"] == 1 and document["totals"]["pi"]["key_kept"] == 0
    (tmp_path / "s.key.json").write_text('{"version": 99}')
    out = io.StringIO()
    assert run_facts(_args(path, as_json=True), out=out, err=io.StringIO()) == 0
    assert json.loads(out.getvalue())["transcripts"][0]["key"] == "unusable"


def test_an_unreadable_file_is_listed_by_hash_in_the_report_and_named_on_stderr_and_exits_1(
    tmp_path: Path,
) -> None:
    good = write_transcript(tmp_path / "good.jsonl", _one_span("x"))
    bad = tmp_path / "private-name.jsonl"
    bad.write_text("not a session\n")
    out, err = io.StringIO(), io.StringIO()
    assert run_facts(_args(good, bad), out=out, err=err) == 1
    assert f"{path_hash(bad)}  -           (not-a-session)" in out.getvalue()
    assert "private-name" not in out.getvalue()  # the report, which may be shared, holds hashes only
    assert err.getvalue() == (
        f'longhaul-daemon facts: {bad}: not a pi session file (the first line is not a {{"type": "session"}} '
        f"header) (listed as {path_hash(bad)})\n"
    )


def test_without_files_every_transcript_of_the_agent_dir_is_read(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    (agent / "sessions" / "--p--").mkdir(parents=True)
    write_transcript(agent / "sessions" / "--p--" / "a.jsonl", _one_span("5173"))
    write_transcript(agent / "sessions" / "--p--" / "b.jsonl", _one_span("none"))
    out = io.StringIO()
    code = run_facts(_args(as_json=True), out=out, err=io.StringIO(), env={"PI_CODING_AGENT_DIR": str(agent)})
    assert code == 0
    assert json.loads(out.getvalue())["totals"]["pi"]["compactions"] == 2

    err = io.StringIO()
    empty = {"PI_CODING_AGENT_DIR": str(tmp_path / "none")}
    assert run_facts(_args(), out=io.StringIO(), err=err, env=empty) == 1
    assert "no pi transcript found" in err.getvalue() and str(tmp_path) not in err.getvalue()
